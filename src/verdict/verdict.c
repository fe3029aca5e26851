// SPDX-License-Identifier: BSD-2-Clause
#include "verdict/verdict.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct tentry {
	uint32_t tid;
	bool shared;
	int64_t on_cpu_ns, runq_ns;
	const char *comm;
};

static int cmp_tid(const void *a, const void *b)
{
	const struct tentry *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int64_t nn(int64_t v)
{
	return v == RT_NULL_NS || v < 0 ? 0 : v;
}

/* A comm is whatever the process set (prctl): printable ASCII only. */
static void copy_comm(char *dst, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < RT_SPAN_COMM_MAX && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || (unsigned char)src[i] >= 0x7f ? '?' :
											 src[i];
	dst[i] = '\0';
}

/* Sum each thread's charges over the spans (a thread id is one thread system-wide). */
static int hot_thread(const struct rt_span *spans, size_t n, struct rt_verdict *v)
{
	struct tentry *e;
	size_t i, k = 0, j;

	e = calloc(n * RT_SPAN_THREADS_MAX + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct rt_span_cpu *c = &spans[i].cpu;
		uint32_t t,
			m = c->n_threads < RT_SPAN_THREADS_MAX ? c->n_threads : RT_SPAN_THREADS_MAX;

		v->total_on_cpu_ns += nn(c->on_cpu_ns);
		v->total_runq_ns += nn(c->runq_ns);
		for (t = 0; t < m; t++) {
			e[k].tid = c->threads[t].tid;
			e[k].shared = c->threads[t].shared;
			e[k].on_cpu_ns = nn(c->threads[t].on_cpu_ns);
			e[k].runq_ns = nn(c->threads[t].runq_ns);
			e[k].comm = c->threads[t].comm;
			k++;
		}
	}
	qsort(e, k, sizeof(*e), cmp_tid);
	for (i = 0; i < k; i = j) {
		struct rt_verdict_thread t = { .tid = e[i].tid };

		copy_comm(t.comm, e[i].comm);
		for (j = i; j < k && e[j].tid == e[i].tid; j++) {
			t.on_cpu_ns += e[j].on_cpu_ns;
			t.runq_ns += e[j].runq_ns;
			t.shared |= e[j].shared;
			t.spans++;
		}
		v->threads++;
		if (!v->have_hot || t.on_cpu_ns > v->hot.on_cpu_ns) {
			v->hot = t;
			v->have_hot = true;
		}
	}
	if (v->have_hot && v->hot.on_cpu_ns == 0)
		v->have_hot = false;
	if (v->have_hot && v->total_on_cpu_ns > 0)
		v->hot_share = (double)v->hot.on_cpu_ns / (double)v->total_on_cpu_ns;
	free(e);
	return 0;
}

/* The phase with the largest percentile; ties go to the earlier phase. */
static int dominant(const struct rt_span_stats *st, bool p99)
{
	int p, best = -1;
	int64_t bv = 0;

	for (p = 0; p < RT_PHASE__COUNT; p++) {
		const struct rt_pct *q = &st->phase[p];
		int64_t x = p99 ? q->p99_ns : q->p50_ns;

		if (!q->n)
			continue;
		if (best < 0 || x > bv) {
			best = p;
			bv = x;
		}
	}
	return best;
}

__attribute__((format(printf, 2, 3))) static void line(struct rt_verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->n_lines >= RT_VERDICT_LINES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(v->lines[v->n_lines++], RT_VERDICT_LINE_MAX, fmt, ap);
	va_end(ap);
}

static double ms(int64_t ns)
{
	return ns / 1e6;
}

static const char *pname(int p)
{
	return rt_phase_name((enum rt_phase)p);
}

/*
 * One exclusive thread in (nearly) every span: it worked for one request at
 * a time (its bursts had one owner), so the requests took turns on it.
 */
static bool serial_thread(const struct rt_verdict *v)
{
	const struct rt_verdict_thread *h = &v->hot;

	return v->have_hot && !h->shared && v->stats.n_spans > 1 &&
	       (uint64_t)h->spans * 10 >= (uint64_t)v->stats.n_spans * 9;
}

/* Its CPU per request is about a tokenize phase: on CPU at least half of it. */
static bool tokenizer_like(const struct rt_verdict *v)
{
	const struct rt_pct *t = &v->stats.phase[RT_PHASE_TOKENIZE];
	int64_t each = v->hot.spans ? v->hot.on_cpu_ns / v->hot.spans : 0;

	return t->n && t->p50_ns > 0 && each * 2 >= t->p50_ns;
}

/* What the dominant phase suggests; only where the spans back it. */
static void advice(struct rt_verdict *v, int dom)
{
	const struct rt_span_stats *st = &v->stats;
	const struct rt_verdict_thread *h = &v->hot;
	double each = h->spans ? ms(h->on_cpu_ns / h->spans) : 0;

	switch (dom) {
	case RT_PHASE_PRE_FIRST_TOKEN:
		line(v, "pre_first_token dominates and cannot be split without markers: add "
			"rt_mark_* calls or a probe pack to see queue, tokenize and prefill");
		break;
	case RT_PHASE_TOKENIZE:
		if (serial_thread(v) && tokenizer_like(v))
			line(v,
			     "thread %u did the tokenize work of %u of %u requests (%.0f ms on CPU "
			     "each, tokenize p50 %.0f ms), one request at a time: parallelise the "
			     "tokenizer (more threads) or make it cheaper",
			     h->tid, h->spans, st->n_spans, each, ms(st->phase[dom].p50_ns));
		else
			line(v, "tokenize dominates: the tokenizer's CPU cost or its thread count "
				"sets the latency");
		break;
	case RT_PHASE_BACKLOG:
		line(v,
		     "requests wait %.0f ms (p50; p99 %.0f ms) in the kernel before the server "
		     "reads them: the server's HTTP threads are all busy (e.g. streaming other "
		     "responses); add handler threads or use async I/O. This is not the engine's "
		     "queue (queue_ms): a bigger batch or faster engine will not shorten it",
		     ms(st->phase[dom].p50_ns), ms(st->phase[dom].p99_ns));
		break;
	case RT_PHASE_QUEUE:
		if (serial_thread(v) && tokenizer_like(v))
			line(v,
			     "requests queue behind one thread: thread %u did the tokenize work of "
			     "%u of %u requests (%.0f ms on CPU each), one at a time, so the queue "
			     "is most likely the tokenizer's: parallelise the tokenizer",
			     h->tid, h->spans, st->n_spans, each);
		else if (serial_thread(v))
			line(v,
			     "requests queue while thread %u does %.0f ms of CPU work for each of "
			     "%u "
			     "of %u requests, one at a time: the queue is most likely in front of "
			     "it",
			     h->tid, each, h->spans, st->n_spans);
		else
			line(v,
			     "requests wait in a queue longer than any stage works on them: the "
			     "stage after the queue (tokenizer or engine admission) is saturated; "
			     "the server has already read them, so more HTTP threads will not "
			     "help");
		break;
	case RT_PHASE_OTHER:
		line(v, "most time is in no known phase (other): markers around the server's "
			"stages would name it");
		break;
	case RT_PHASE_COMM_WAIT:
		line(v, "the engine waits on its peers (collectives, transfers, other ranks) "
			"more than it computes");
		break;
	case RT_PHASE_PREFILL:
	case RT_PHASE_DECODE:
		line(v,
		     "the engine's own work (%s) dominates: batch size and step cost set the "
		     "latency",
		     pname(dom));
		break;
	default:
		break;
	}
}

/*
 * Backlog that does not dominate but still weighs (a tenth of p99 latency
 * or more): requests waited in the kernel for an HTTP thread, a fix apart
 * from anything the dominant phase suggests.
 */
static void backlog_finding(struct rt_verdict *v)
{
	const struct rt_span_stats *st = &v->stats;
	const struct rt_pct *b = &st->phase[RT_PHASE_BACKLOG];

	if (!b->n || v->dominant_p50 == RT_PHASE_BACKLOG || v->dominant_p99 == RT_PHASE_BACKLOG)
		return;
	if (st->duration.p99_ns <= 0 || b->p99_ns * 10 < st->duration.p99_ns)
		return;
	line(v,
	     "requests also wait up to %.0f ms (p99; p50 %.0f ms) in the kernel before the "
	     "server reads them: its HTTP threads are all busy; add handler threads or use "
	     "async I/O (the engine's queue is queue_ms, apart from this)",
	     ms(b->p99_ns), ms(b->p50_ns));
}

static void evidence(struct rt_verdict *v)
{
	const struct rt_span_stats *st = &v->stats;
	const struct rt_verdict_thread *h = &v->hot;
	int d50 = v->dominant_p50, d99 = v->dominant_p99, p;
	char nulls[256] = "";
	size_t o = 0;
	uint32_t bad;

	if (d50 >= 0)
		line(v, "%s is %.0f%% of p50 latency (%.0f ms of %.0f ms)", pname(d50),
		     v->share_p50 * 100, ms(st->phase[d50].p50_ns), ms(st->duration.p50_ns));
	if (d99 >= 0 && d99 == d50)
		snprintf(v->lines[v->n_lines - 1] + strlen(v->lines[v->n_lines - 1]),
			 RT_VERDICT_LINE_MAX - strlen(v->lines[v->n_lines - 1]),
			 ", and %.0f%% of p99 latency (%.0f ms of %.0f ms)", v->share_p99 * 100,
			 ms(st->phase[d99].p99_ns), ms(st->duration.p99_ns));
	else if (d99 >= 0)
		line(v, "%s is %.0f%% of p99 latency (%.0f ms of %.0f ms)", pname(d99),
		     v->share_p99 * 100, ms(st->phase[d99].p99_ns), ms(st->duration.p99_ns));
	if (v->have_hot)
		line(v,
		     "hottest thread: %u '%s', %.0f ms on CPU over %u request(s), %.0f%% of "
		     "their on-CPU time%s; on CPU %.0f%% of the time it was runnable for them "
		     "(%.0f ms in the runqueue)",
		     h->tid, h->comm, ms(h->on_cpu_ns), h->spans, v->hot_share * 100,
		     h->shared ? " (shared: its time is split among the requests it served)" : "",
		     h->on_cpu_ns + h->runq_ns ?
			     100.0 * (double)h->on_cpu_ns / (double)(h->on_cpu_ns + h->runq_ns) :
			     0,
		     ms(h->runq_ns));
	else
		line(v, "no thread was charged CPU time for these requests");
	if (d50 >= 0)
		advice(v, d50);
	if (d99 >= 0 && d99 != d50)
		advice(v, d99);
	backlog_finding(v);
	/* runnable but not running: the machine, not the server, is short */
	if (v->total_runq_ns > v->total_on_cpu_ns / 2 && v->total_runq_ns > 0)
		line(v,
		     "their threads waited %.0f ms in the runqueue against %.0f ms on CPU: the "
		     "CPUs are oversubscribed (other load, or more busy threads than cores)",
		     ms(v->total_runq_ns), ms(v->total_on_cpu_ns));
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		/* most ports are not watched for arrival: a null backlog is no news */
		if (p == RT_PHASE_BACKLOG && st->phase[p].n == 0)
			continue;
		if (st->phase[p].n == 0)
			o += (size_t)snprintf(nulls + o, sizeof(nulls) - o, "%s%s", o ? ", " : "",
					      pname(p));
		else if (st->phase[p].n < st->n_spans)
			line(v,
			     "%s is null in %u of %u spans: its percentiles are over the other %u",
			     pname(p), st->n_spans - st->phase[p].n, st->n_spans, st->phase[p].n);
	}
	if (o)
		line(v, "null in every span (not observed): %s", nulls);
	bad = st->n_spans - st->outcomes[RT_OUTCOME_OK];
	if (bad)
		line(v,
		     "%u of %u requests did not end ok (aborted %u, error %u, server_exit %u, "
		     "timeout %u)",
		     bad, st->n_spans, st->outcomes[RT_OUTCOME_ABORTED],
		     st->outcomes[RT_OUTCOME_ERROR], st->outcomes[RT_OUTCOME_SERVER_EXIT],
		     st->outcomes[RT_OUTCOME_TIMEOUT]);
	if (st->incomplete)
		line(v, "%u span(s) are incomplete (events were lost): their numbers may be low",
		     st->incomplete);
}

int rt_verdict_compute(const struct rt_span *spans, size_t n, struct rt_verdict *out)
{
	int err;

	if (!out || (n && !spans))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->dominant_p50 = out->dominant_p99 = -1;
	err = rt_span_stats_compute(spans, n, &out->stats);
	if (err)
		return err;
	if (!n) {
		line(out, "no finished requests to judge");
		return 0;
	}
	err = hot_thread(spans, n, out);
	if (err)
		return err;
	out->dominant_p50 = dominant(&out->stats, false);
	out->dominant_p99 = dominant(&out->stats, true);
	if (out->dominant_p50 >= 0 && out->stats.duration.p50_ns > 0)
		out->share_p50 = (double)out->stats.phase[out->dominant_p50].p50_ns /
				 (double)out->stats.duration.p50_ns;
	if (out->dominant_p99 >= 0 && out->stats.duration.p99_ns > 0)
		out->share_p99 = (double)out->stats.phase[out->dominant_p99].p99_ns /
				 (double)out->stats.duration.p99_ns;
	evidence(out);
	return 0;
}

static void pct_cell(FILE *f, int64_t ns)
{
	if (ns == RT_NULL_NS)
		fprintf(f, " %10s", "-");
	else
		fprintf(f, " %10.1f", ns / 1e6);
}

void rt_verdict_print(FILE *f, const struct rt_verdict *v)
{
	const struct rt_span_stats *st = &v->stats;
	uint32_t i;
	int p;

	fprintf(f, "verdict over %u request(s)", st->n_spans);
	if (st->n_spans) {
		fprintf(f, ": latency p50 %.1f ms, p99 %.1f ms", ms(st->duration.p50_ns),
			ms(st->duration.p99_ns));
		if (st->ttft.n)
			fprintf(f, "; TTFT p50 %.1f ms, p99 %.1f ms", ms(st->ttft.p50_ns),
				ms(st->ttft.p99_ns));
	}
	fputc('\n', f);
	if (st->n_spans) {
		fprintf(f, "\n%-16s %10s %10s %6s %6s  %s\n", "PHASE", "P50_MS", "P99_MS", "%P50",
			"%P99", "SPANS");
		for (i = 0; i < RT_PHASE__COUNT; i++) {
			/* lifecycle order: the wait in the kernel first */
			const struct rt_pct *q;
			const char *mark;

			p = i ? (int)i - 1 : RT_PHASE_BACKLOG;
			q = &st->phase[p];
			fprintf(f, "%-16s", pname(p));
			pct_cell(f, q->p50_ns);
			pct_cell(f, q->p99_ns);
			if (q->n && st->duration.p50_ns > 0 && st->duration.p99_ns > 0)
				fprintf(f, " %5.0f%% %5.0f%%",
					100.0 * q->p50_ns / st->duration.p50_ns,
					100.0 * q->p99_ns / st->duration.p99_ns);
			else
				fprintf(f, " %6s %6s", "-", "-");
			if (p == v->dominant_p50 && p == v->dominant_p99)
				mark = "  <- dominates p50 and p99";
			else if (p == v->dominant_p50)
				mark = "  <- dominates p50";
			else if (p == v->dominant_p99)
				mark = "  <- dominates p99";
			else
				mark = "";
			fprintf(f, "  %u%s\n", q->n, mark);
		}
		fputc('\n', f);
	}
	for (i = 0; i < v->n_lines; i++)
		fprintf(f, "- %s\n", v->lines[i]);
}
