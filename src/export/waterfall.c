// SPDX-License-Identifier: BSD-2-Clause
#include "export/waterfall.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* label column: "%-16s %10s  %-9s    " for phases, the same width for threads */
#define LABEL_W 42
#define LINE_MAX_BYTES 1024
#define ITEM_MAX 160

struct wf {
	FILE *f;
	int width;
	int bar_w; /* cells between the two '|' */
	bool color;
	int64_t dur_ns;
};

struct seg {
	int from, to; /* cells [from, to) */
	char ch; /* plain mode */
	const char *bg; /* colour mode: an SGR background */
};

/* Colours per phase, lifecycle order; plain mode draws '#' except comm wait. */
static const char *const phase_bg[RT_PHASE__COUNT] = {
	[RT_PHASE_RECEIVE] = "\033[46m",	 [RT_PHASE_QUEUE] = "\033[43m",
	[RT_PHASE_TOKENIZE] = "\033[45m",	 [RT_PHASE_PREFILL] = "\033[44m",
	[RT_PHASE_PRE_FIRST_TOKEN] = "\033[44m", [RT_PHASE_DECODE] = "\033[42m",
	[RT_PHASE_COMM_WAIT] = "\033[41m",	 [RT_PHASE_POSTPROCESS] = "\033[46m",
	[RT_PHASE_OTHER] = "\033[47m",		 [RT_PHASE_BACKLOG] = "\033[41m",
};

/* Lifecycle order: the wait in the kernel before the server read comes first. */
static const enum rt_phase phase_order[RT_PHASE__COUNT] = {
	RT_PHASE_BACKLOG,     RT_PHASE_RECEIVE,		RT_PHASE_QUEUE,	 RT_PHASE_TOKENIZE,
	RT_PHASE_PREFILL,     RT_PHASE_PRE_FIRST_TOKEN, RT_PHASE_DECODE, RT_PHASE_COMM_WAIT,
	RT_PHASE_POSTPROCESS, RT_PHASE_OTHER,
};

#define BG_ONCPU "\033[42m"
#define BG_RUNQ "\033[43m"
#define BG_GPU "\033[44m"

static double ms(int64_t ns)
{
	return ns / 1e6;
}

/*
 * Span strings come from traced traffic and the daemon: a control byte in a
 * request id must not drive the operator's terminal. Printable ASCII only.
 */
static void sanitize(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || (unsigned char)src[i] >= 0x7f ? '?' :
											 src[i];
	if (len)
		dst[i] = '\0';
}

/* Keep the end of long names (what tells ids apart), marked with '~'. */
static void clip_end(char *dst, size_t len, const char *src, int maxw)
{
	size_t n = strlen(src);

	if (maxw < 2)
		maxw = 2;
	if (n <= (size_t)maxw) {
		sanitize(dst, len, src);
	} else if (len > 1) {
		dst[0] = '~';
		sanitize(dst + 1, len - 1, src + n - (size_t)(maxw - 1));
	}
}

/* Milliseconds in at most width characters, whatever the value. */
static const char *cell(char *buf, size_t len, int width, int64_t ns)
{
	if (ns == RT_NULL_NS)
		return "-";
	snprintf(buf, len, "%.1f", ns / 1e6);
	if ((int)strlen(buf) > width)
		snprintf(buf, len, "%.*g", width - 5 > 1 ? width - 5 : 1, ns / 1e6);
	return buf;
}

/* A text line, cut at the width. */
static void put_line(struct wf *w, const char *text)
{
	char safe[LINE_MAX_BYTES];

	sanitize(safe, sizeof(safe), text);
	fprintf(w->f, "%.*s\n", w->width, safe);
}

static void put_title(struct wf *w, const char *text)
{
	char safe[LINE_MAX_BYTES];

	sanitize(safe, sizeof(safe), text);
	if (w->color)
		fprintf(w->f, "\033[1m%.*s\033[0m\n", w->width, safe);
	else
		fprintf(w->f, "%.*s\n", w->width, safe);
}

static int col(const struct wf *w, int64_t ns)
{
	long c;

	if (w->dur_ns <= 0 || ns <= 0)
		return 0;
	c = lround((double)ns * w->bar_w / (double)w->dur_ns);
	if (c > w->bar_w)
		c = w->bar_w;
	return (int)c;
}

/* "|" + bar_w cells + "|" + newline; later segments win where they overlap. */
static void draw(struct wf *w, const struct seg *segs, int n)
{
	int c, i;

	fputc('|', w->f);
	for (c = 0; c < w->bar_w; c++) {
		const struct seg *hit = NULL;

		for (i = 0; i < n; i++)
			if (c >= segs[i].from && c < segs[i].to)
				hit = &segs[i];
		if (!hit)
			fputc(' ', w->f);
		else if (w->color)
			fprintf(w->f, "%s \033[0m", hit->bg);
		else
			fputc(hit->ch, w->f);
	}
	fputs("|\n", w->f);
}

/* A non-zero interval gets at least one cell, so a short phase stays visible. */
static struct seg interval(const struct wf *w, int64_t off_ns, int64_t len_ns, char ch,
			   const char *bg)
{
	struct seg s = { .from = col(w, off_ns), .ch = ch, .bg = bg };

	s.to = col(w, off_ns + (len_ns > 0 ? len_ns : 0));
	if (len_ns > 0 && s.to == s.from) {
		if (s.to < w->bar_w)
			s.to++;
		else if (s.from > 0)
			s.from--;
	}
	return s;
}

/* The smallest 1, 2 or 5 times a power of ten that is at least x. */
static double nice_step(double x)
{
	double p = pow(10, floor(log10(x)));

	if (p >= x)
		return p;
	if (2 * p >= x)
		return 2 * p;
	if (5 * p >= x)
		return 5 * p;
	return 10 * p;
}

static void axis(struct wf *w)
{
	char labels[RT_WATERFALL_WIDTH_MAX + 1], rule[RT_WATERFALL_WIDTH_MAX + 1], t[32];
	int n = w->bar_w + 2, end_at, c, i, next_free = 0;
	double total = ms(w->dur_ns), step = 0, v;

	memset(labels, ' ', (size_t)n);
	labels[n] = '\0';
	memset(rule, '-', (size_t)n);
	rule[0] = rule[n - 1] = '|';
	rule[n] = '\0';
	snprintf(t, sizeof(t), "%.*f ms", total < 10 ? 1 : 0, total > 0 ? total : 0);
	end_at = n - (int)strlen(t);
	if (end_at < 0)
		end_at = 0;
	memcpy(labels + end_at, t, strlen(t) > (size_t)n ? (size_t)n : strlen(t));
	if (w->dur_ns > 0 && w->bar_w >= 10)
		step = nice_step(total / (w->bar_w / 10));
	for (i = 0, v = 0; i <= 1000; i++, v = i * step) {
		size_t len;

		if (v > total || (i > 0 && step <= 0))
			break;
		c = i ? col(w, (int64_t)llround(v * 1e6)) + 1 : 0;
		if (i && c < n - 1)
			rule[c] = '+';
		snprintf(t, sizeof(t), "%g", v);
		len = strlen(t);
		if (c < next_free || c + (int)len >= end_at)
			continue;
		memcpy(labels + c, t, len);
		next_free = c + (int)len + 1;
	}
	fprintf(w->f, "%-16s %10s  %-9s    %s\n", "PHASE", "MS", "SOURCE", labels);
	fprintf(w->f, "%*s%s\n", LABEL_W, "", rule);
}

/* Items three spaces apart, wrapped at the width (an item alone is clipped). */
static void put_items(struct wf *w, char (*items)[ITEM_MAX], int n)
{
	char line[LINE_MAX_BYTES];
	size_t o = 0;
	int i;

	for (i = 0; i < n; i++) {
		size_t len = strlen(items[i]);

		if (o && o + 3 + len > (size_t)w->width) {
			put_line(w, line);
			o = 0;
		}
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s", o ? "   " : "", items[i]);
	}
	if (o)
		put_line(w, line);
}

static void header(struct wf *w, const struct rt_span *s)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} flag_names[] = {
		{ RT_SPAN_INCOMPLETE, "incomplete" },
		{ RT_SPAN_STARTED_BEFORE_TRACE, "started_before_trace" },
		{ RT_SPAN_LATE_AMENDED, "late_amended" },
		{ RT_SPAN_PIPELINED, "pipelined" },
	};
	char line[LINE_MAX_BYTES], id[RT_SPAN_ID_MAX + 2], flags[96] = "", st[16] = "-";
	char items[5][ITEM_MAX];
	size_t i, o = 0;
	int n;

	clip_end(id, sizeof(id), s->request_id[0] ? s->request_id : "-", w->width - 9);
	snprintf(line, sizeof(line), "request  %s", id);
	put_title(w, line);
	for (i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (s->flags & flag_names[i].bit)
			o += (size_t)snprintf(flags + o, sizeof(flags) - o, "%s%s", o ? "," : "",
					      flag_names[i].name);
	if (s->status)
		snprintf(st, sizeof(st), "%d", s->status);
	n = snprintf(line, sizeof(line), "         %s %s -> %s %s   flags %s",
		     s->method[0] ? s->method : "-", s->path[0] ? s->path : "-", st,
		     rt_outcome_name(s->outcome), o ? flags : "none");
	if (s->revision && n > 0 && (size_t)n < sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, "   revision %u", s->revision);
	put_line(w, line);

	n = 0;
	if (w->dur_ns == RT_NULL_NS)
		snprintf(items[n++], ITEM_MAX, "duration - (started before the trace)");
	else
		snprintf(items[n++], ITEM_MAX, "duration %.1f ms", ms(w->dur_ns));
	if (rt_span_ttft_ns(s) != RT_NULL_NS)
		snprintf(items[n++], ITEM_MAX, "TTFT %.1f ms", ms(rt_span_ttft_ns(s)));
	else
		snprintf(items[n++], ITEM_MAX, "TTFT - (not streamed)");
	snprintf(items[n++], ITEM_MAX, "events %u", s->events_out);
	if (s->tokens_out >= 0)
		snprintf(items[n++], ITEM_MAX, "tokens %" PRId64, s->tokens_out);
	else
		snprintf(items[n++], ITEM_MAX, "tokens -");
	if (s->itl_present)
		snprintf(items[n++], ITEM_MAX, "ITL p50 %.1f p99 %.1f max %.1f ms",
			 ms(s->itl_p50_ns), ms(s->itl_p99_ns), ms(s->itl_max_ns));
	else
		snprintf(items[n++], ITEM_MAX, "ITL -");
	put_items(w, items, n);
	n = 0;
	snprintf(items[n++], ITEM_MAX, "process %u %.*s", s->pid, RT_SPAN_COMM_MAX,
		 s->comm[0] ? s->comm : "-");
	snprintf(items[n++], ITEM_MAX, "group %.*s", RT_SPAN_GROUP_MAX,
		 s->group[0] ? s->group : "-");
	snprintf(items[n++], ITEM_MAX, "conn %.*s", RT_SPAN_CONN_MAX, s->conn[0] ? s->conn : "-");
	put_items(w, items, n);
}

/* A phase's intervals, where they lie in the span. */
static void draw_intervals(struct wf *w, const struct rt_span *s, enum rt_phase p)
{
	struct seg sg[RT_SPAN_INTERVALS_MAX];
	uint64_t origin = rt_span_origin_ns(s);
	uint32_t i;
	int n = 0;

	for (i = 0; i < s->n_intervals && i < RT_SPAN_INTERVALS_MAX; i++) {
		const struct rt_span_interval *iv = &s->intervals[i];

		if (iv->phase != p || iv->end_ns <= iv->start_ns || iv->start_ns < origin)
			continue;
		sg[n++] = interval(w, (int64_t)(iv->start_ns - origin),
				   (int64_t)(iv->end_ns - iv->start_ns),
				   p == RT_PHASE_COMM_WAIT ? '~' : '#', phase_bg[p]);
	}
	draw(w, sg, n);
}

/*
 * other is what no phase explains: drawn where no interval lies (the
 * intervals are in start order). With intervals dropped those gaps are not
 * known to be unexplained: nothing is drawn.
 */
static void draw_other(struct wf *w, const struct rt_span *s)
{
	struct seg sg[RT_SPAN_INTERVALS_MAX + 1];
	uint64_t origin = rt_span_origin_ns(s), at = origin;
	uint32_t i;
	int n = 0;

	for (i = 0; !s->intervals_dropped && i <= s->n_intervals && i <= RT_SPAN_INTERVALS_MAX;
	     i++) {
		bool last = i == s->n_intervals || i == RT_SPAN_INTERVALS_MAX;
		uint64_t from = last ? s->end_ns : s->intervals[i].start_ns;

		/* no cell of its own for a sliver: other is many of them between phases */
		if (from > at && from <= s->end_ns) {
			sg[n] = interval(w, (int64_t)(at - origin), (int64_t)(from - at), '#',
					 phase_bg[RT_PHASE_OTHER]);
			sg[n].from = col(w, (int64_t)(at - origin));
			sg[n].to = col(w, (int64_t)(from - origin));
			n++;
		}
		if (!last && s->intervals[i].end_ns > at)
			at = s->intervals[i].end_ns;
	}
	draw(w, sg, n);
}

static void phases(struct wf *w, const struct rt_span *s)
{
	char nulls[256] = "", num[32];
	size_t o = 0;
	int64_t off = 0;
	bool tl = s->n_intervals > 0;
	int i, p;

	fputc('\n', w->f);
	axis(w);
	/*
	 * With a timeline each phase is drawn where its intervals lie; a span
	 * without one (an older daemon's JSON) has totals only, which
	 * partition [arrival or start, end]: laid end to end in lifecycle order.
	 */
	for (i = 0; i < RT_PHASE__COUNT; i++) {
		int64_t v;
		const char *src;
		struct seg sg;

		p = phase_order[i];
		v = s->phase_ns[p];
		/* most ports are not watched for arrival: naming it each time is noise */
		if (v == RT_NULL_NS && p == RT_PHASE_BACKLOG)
			continue;
		if (v == RT_NULL_NS) {
			o += (size_t)snprintf(nulls + o, sizeof(nulls) - o, "%s%s", o ? ", " : "",
					      rt_phase_name((enum rt_phase)p));
			continue;
		}
		src = rt_phase_source_name((enum rt_phase_source)s->phase_source[p]);
		fprintf(w->f, "%-16s %10s  %-9s    ", rt_phase_name((enum rt_phase)p),
			cell(num, sizeof(num), 10, v), src ? src : "-");
		if (tl && p == RT_PHASE_OTHER) {
			draw_other(w, s);
			continue;
		}
		if (tl) {
			draw_intervals(w, s, (enum rt_phase)p);
			continue;
		}
		sg = interval(w, off, v, p == RT_PHASE_COMM_WAIT ? '~' : '#', phase_bg[p]);
		draw(w, &sg, 1);
		off += v > 0 ? v : 0;
	}
	if (s->phase_ns[RT_PHASE_COMM_WAIT] != RT_NULL_NS)
		put_line(w, tl ? "comm_wait: waits inside prefill/decode, drawn where they were" :
				 "comm_wait: summed waits inside prefill/decode");
	if (s->phase_ns[RT_PHASE_OTHER] != RT_NULL_NS && w->dur_ns > 0 &&
	    s->phase_ns[RT_PHASE_OTHER] * 100 >= w->dur_ns)
		put_line(w, tl ? "other: time no phase explains, where no phase was measured" :
				 "other: time no phase explains, wherever it fell");
	if (s->intervals_dropped) {
		char line[LINE_MAX_BYTES];

		snprintf(line, sizeof(line), "timeline: %u more intervals, not drawn",
			 s->intervals_dropped);
		put_line(w, line);
	}
	if (o) {
		char line[LINE_MAX_BYTES];

		snprintf(line, sizeof(line), "no value (not observed): %s", nulls);
		put_line(w, line);
	}
	if (s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN] != RT_NULL_NS &&
	    s->phase_ns[RT_PHASE_TOKENIZE] == RT_NULL_NS)
		put_line(w, "pre_first_token = queue+tokenize+prefill; markers split it");
}

/* When a thread ran for the request: its slices, where they lie in the span. */
static void draw_slices(struct wf *w, const struct rt_span *s, uint32_t tid)
{
	struct seg sg[RT_SPAN_SLICES_MAX];
	uint64_t origin = rt_span_origin_ns(s);
	uint32_t i;
	int n = 0;

	for (i = 0; i < s->cpu.n_slices && i < RT_SPAN_SLICES_MAX; i++) {
		const struct rt_span_slice *sl = &s->cpu.slices[i];

		if (sl->tid != tid || sl->end_ns <= sl->start_ns || sl->start_ns < origin)
			continue;
		sg[n++] = interval(w, (int64_t)(sl->start_ns - origin),
				   (int64_t)(sl->end_ns - sl->start_ns), '#', BG_ONCPU);
	}
	draw(w, sg, n);
}

static void threads(struct wf *w, const struct rt_span *s)
{
	const struct rt_span_cpu *c = &s->cpu;
	char line[LINE_MAX_BYTES], comm[RT_SPAN_COMM_MAX], a[32], b[32], tid[16];
	uint32_t i, n = c->n_threads < RT_SPAN_THREADS_MAX ? c->n_threads : RT_SPAN_THREADS_MAX;

	fputc('\n', w->f);
	if (!n) {
		put_line(w, "threads: none charged to this request");
		return;
	}
	fprintf(w->f, "%-7s %-15s%8s%8s %-1s %.*s\n", "TID", "COMM", "ON_CPU", "RUNQ", "S",
		w->bar_w + 2,
		c->n_slices ? (w->color ? "green: on CPU, when (S: shared)" :
					  "# on CPU, when (S: shared)") :
		w->color    ? "green: on CPU, yellow: runqueue (S: shared)" :
			      "# on CPU, - runqueue (S: shared)");
	for (i = 0; i < n; i++) {
		const struct rt_span_thread *t = &c->threads[i];
		int64_t on = t->on_cpu_ns > 0 ? t->on_cpu_ns : 0;
		int64_t rq = t->runq_ns > 0 ? t->runq_ns : 0;
		struct seg sg[2];

		clip_end(comm, sizeof(comm), t->comm, 15);
		snprintf(tid, sizeof(tid), "%u", t->tid);
		fprintf(w->f, "%7.7s %-15s%8s%8s %-1s ", tid, comm, cell(a, sizeof(a), 7, on),
			cell(b, sizeof(b), 7, rq), t->shared ? "S" : "");
		if (c->n_slices) {
			draw_slices(w, s, t->tid);
			continue;
		}
		/* when it ran is not in the span: bars show amounts, from the left */
		sg[0] = interval(w, 0, on, '#', BG_ONCPU);
		sg[1] = interval(w, on, rq, '-', BG_RUNQ);
		/* the runqueue part follows the on-CPU cells, even when those were rounded up */
		if (sg[1].from < sg[0].to) {
			sg[1].to += sg[0].to - sg[1].from;
			sg[1].from = sg[0].to;
			if (sg[1].to > w->bar_w)
				sg[1].to = w->bar_w;
		}
		draw(w, sg, 2);
	}
	snprintf(line, sizeof(line), "cpu: on %.1f ms, runqueue %.1f ms, off-CPU %.1f ms%s",
		 c->on_cpu_ns == RT_NULL_NS ? 0 : ms(c->on_cpu_ns),
		 c->runq_ns == RT_NULL_NS ? 0 : ms(c->runq_ns),
		 c->off_cpu_ns == RT_NULL_NS ? 0 : ms(c->off_cpu_ns),
		 c->threads_dropped ? " (more threads summed in, not listed)" : "");
	put_line(w, line);
	if (c->slices_dropped) {
		snprintf(line, sizeof(line), "cpu: %u more on-CPU slices, not drawn",
			 c->slices_dropped);
		put_line(w, line);
	}
}

static void bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= 1ull << 20)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1ull << 10)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
}

static void gpu_row(struct wf *w, const char *name, int64_t v)
{
	char num[32];
	struct seg sg;

	if (v == RT_NULL_NS) {
		fprintf(w->f, "%-16s %10s\n", name, "-");
		return;
	}
	fprintf(w->f, "%-16s %10s  %-9s    ", name, cell(num, sizeof(num), 10, v), "");
	sg = interval(w, 0, v, '#', BG_GPU);
	draw(w, &sg, 1);
}

static void gpu(struct wf *w, const struct rt_span *s)
{
	const struct rt_span_gpu *g = &s->gpu;
	char line[LINE_MAX_BYTES], h2d[32], d2h[32], p2p[32];

	if (!g->present)
		return;
	fputc('\n', w->f);
	put_title(w, "GPU (amounts, not positions)");
	gpu_row(w, "kernel", g->kernel_ns);
	gpu_row(w, "memcpy", g->memcpy_ns);
	gpu_row(w, "sync_wait", g->sync_wait_ns);
	bytes(h2d, sizeof(h2d), g->h2d_bytes);
	bytes(d2h, sizeof(d2h), g->d2h_bytes);
	bytes(p2p, sizeof(p2p), g->p2p_bytes);
	snprintf(line, sizeof(line), "launches %" PRIu64 "   h2d %s   d2h %s   p2p %s", g->launches,
		 h2d, d2h, p2p);
	put_line(w, line);
}

static void reported(struct wf *w, const struct rt_span *s)
{
	char line[LINE_MAX_BYTES], item[RT_SPAN_REPORTED_NAME_MAX + 40];
	uint32_t i, n = s->n_reported < RT_SPAN_REPORTED_MAX ? s->n_reported : RT_SPAN_REPORTED_MAX;
	size_t o;

	if (!n)
		return;
	fputc('\n', w->f);
	put_title(w, "server reported");
	o = (size_t)snprintf(line, sizeof(line), " ");
	for (i = 0; i < n; i++) {
		size_t len;

		snprintf(item, sizeof(item), " %.*s %g", RT_SPAN_REPORTED_NAME_MAX,
			 s->reported[i].name, s->reported[i].value);
		len = strlen(item);
		/* wrap: a new line when this item would pass the width */
		if (o > 1 && o + len > (size_t)w->width) {
			put_line(w, line);
			o = (size_t)snprintf(line, sizeof(line), " ");
		}
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s", item);
	}
	put_line(w, line);
}

static void cmp_item(char *out, size_t n, const char *what, int64_t server, const char *phase,
		     int64_t seen, int64_t diff)
{
	if (server == RT_NULL_NS) {
		snprintf(out, n, "  %s: not reported", what);
		return;
	}
	if (seen == RT_NULL_NS || diff == RT_NULL_NS) {
		snprintf(out, n, "  %s %.3f ms, %s not observed", what, (double)server / 1e6,
			 phase);
		return;
	}
	snprintf(out, n, "  %s %.3f ms, %s %.3f ms, diff %+.3f ms", what, (double)server / 1e6,
		 phase, (double)seen / 1e6, (double)diff / 1e6);
}

/* The server's own prompt/generation times beside the observed phases (docs/spans.md). */
static void server_cmp(struct wf *w, const struct rt_span *s)
{
	struct rt_span_server_cmp x;
	char line[LINE_MAX_BYTES];

	if (rt_span_server_cmp(s, &x)) {
		fputc('\n', w->f);
		put_title(w, "server vs observed");
		cmp_item(line, sizeof(line), "prompt_ms", x.prompt_ns,
			 rt_phase_name(x.prefill_phase), x.prefill_ns, x.prefill_diff_ns);
		put_line(w, line);
		cmp_item(line, sizeof(line), "predicted_ms", x.predicted_ns, "decode", x.decode_ns,
			 x.decode_diff_ns);
		put_line(w, line);
	}
	if (s->pack.present) {
		snprintf(line, sizeof(line), "  engine steps (pack): prefill %u, decode %u, seq %d",
			 s->pack.prefill_steps, s->pack.decode_steps, (int)s->pack.seq);
		put_line(w, line);
	}
}

int rt_waterfall_print(FILE *f, const struct rt_span *s, const struct rt_waterfall_opts *opts)
{
	struct wf w = { .f = f, .width = RT_WATERFALL_WIDTH_DEFAULT };

	if (!f || !s)
		return -EINVAL;
	if (opts) {
		w.color = opts->color;
		if (opts->width)
			w.width = opts->width;
	}
	if (w.width < RT_WATERFALL_WIDTH_MIN)
		w.width = RT_WATERFALL_WIDTH_MIN;
	if (w.width > RT_WATERFALL_WIDTH_MAX)
		w.width = RT_WATERFALL_WIDTH_MAX;
	w.bar_w = w.width - LABEL_W - 2;
	/* an untrusted record may end before it starts: draw it as zero length */
	w.dur_ns = rt_span_duration_ns(s);
	header(&w, s);
	if (w.dur_ns != RT_NULL_NS) { /* else no start to lay the bars from */
		phases(&w, s);
		threads(&w, s);
	}
	gpu(&w, s);
	reported(&w, s);
	server_cmp(&w, s);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
