// SPDX-License-Identifier: BSD-2-Clause
/*
 * Load against capacity: requests arrive faster than they complete and the
 * number in the system climbs (queue_growth), or the engine serves one
 * request per step while others wait (batching). Thresholds: docs/verdict.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "find_int.h"

/* queue_growth: at least this many requests to see a trend */
#define QG_MIN_REQUESTS 8
/* the last quarter of the arrival window holds this many more requests in
 * the system than the first (and half as many again) */
#define QG_MIN_GROWTH 3.0
#define QG_MIN_REL_GROWTH 0.5
/* arrivals outpace completions over the arrival window by a tenth */
#define QG_RATE_RATIO 1.1
#define QG_SAMPLES 64

/* batching: an engine thread does this many bursts per request it serves */
#define BATCH_BURSTS_PER_REQUEST 3.0
#define BATCH_MIN_STEPS 10
/* steps hold at most 1.5 requests on average ... */
#define BATCH_MAX_MEAN_STEP 1.5
/* ... while most of the requests waiting for the engine are left out */
#define BATCH_MIN_SCORE 0.4
/* ... over steps spread across at least half the window */
#define BATCH_MIN_COVER 0.5

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Requests in the system at t: arrived at or before t, not ended by t. */
static size_t in_system(const uint64_t *arr, const uint64_t *end, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n, a, e;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;

		if (arr[m] <= t)
			lo = m + 1;
		else
			hi = m;
	}
	a = lo;
	for (lo = 0, hi = n; lo < hi;) {
		size_t m = (lo + hi) / 2;

		if (end[m] <= t)
			lo = m + 1;
		else
			hi = m;
	}
	e = lo;
	return a > e ? a - e : 0;
}

static double wait_ns(const struct rt_span *s)
{
	/* the time before the engine: queue with markers, else pre_first_token */
	if (s->phase_ns[RT_PHASE_QUEUE] != RT_NULL_NS)
		return (double)s->phase_ns[RT_PHASE_QUEUE];
	if (s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN] != RT_NULL_NS)
		return (double)s->phase_ns[RT_PHASE_PRE_FIRST_TOKEN];
	return 0;
}

struct by_arrival {
	uint64_t t;
	double wait;
};

static int cmp_arr(const void *a, const void *b)
{
	const struct by_arrival *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

static int queue_growth(struct rt_fctx *c)
{
	uint64_t *arr = NULL, *end = NULL, a0, a1;
	struct by_arrival *ba = NULL;
	double q1 = 0, q4 = 0, growth, lam, mu, w1 = 0, w4 = 0, sh, span_ns;
	size_t i, n = c->n, m = 0, done = 0, k1 = 0, k4 = 0, maxq = 0;
	struct rt_jsonw w;
	int err = 0, k;

	if (n < QG_MIN_REQUESTS)
		return 0;
	arr = malloc(n * sizeof(*arr));
	end = malloc(n * sizeof(*end));
	ba = malloc(n * sizeof(*ba));
	if (!arr || !end || !ba) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		/* a request that started before the trace has no arrival to place */
		if (!rt_span_origin_ns(&c->spans[i]))
			continue;
		arr[m] = rt_span_origin_ns(&c->spans[i]);
		end[m] = c->spans[i].end_ns;
		ba[m].t = arr[m];
		ba[m].wait = wait_ns(&c->spans[i]);
		m++;
	}
	n = m;
	if (n < QG_MIN_REQUESTS)
		goto cleanup;
	qsort(arr, n, sizeof(*arr), cmp_u64);
	qsort(end, n, sizeof(*end), cmp_u64);
	qsort(ba, n, sizeof(*ba), cmp_arr);
	a0 = arr[0];
	a1 = arr[n - 1];
	if (a1 <= a0)
		goto cleanup;
	span_ns = (double)(a1 - a0);
	for (k = 0; k < QG_SAMPLES; k++) {
		uint64_t t = a0 + (uint64_t)(span_ns * (k + 0.5) / QG_SAMPLES);
		size_t q = in_system(arr, end, n, t);

		if (q > maxq)
			maxq = q;
		if (k < QG_SAMPLES / 4)
			q1 += (double)q;
		else if (k >= QG_SAMPLES * 3 / 4)
			q4 += (double)q;
	}
	q1 /= QG_SAMPLES / 4;
	q4 /= QG_SAMPLES / 4;
	growth = q4 - q1;
	for (i = 0; i < n; i++)
		done += end[i] <= a1;
	lam = (double)(n - 1) / (span_ns / 1e9);
	mu = (double)done / (span_ns / 1e9);
	if (growth < QG_MIN_GROWTH || growth < QG_MIN_REL_GROWTH * q1 || lam < QG_RATE_RATIO * mu)
		goto cleanup;
	for (i = 0; i < n; i++) {
		if (i < n / 4) {
			w1 += ba[i].wait;
			k1++;
		} else if (i >= n - n / 4) {
			w4 += ba[i].wait;
			k4++;
		}
	}
	w1 = k1 ? w1 / (double)k1 : 0;
	w4 = k4 ? w4 / (double)k4 : 0;
	sh = c->markers && c->phase_sum_ns[RT_PHASE_QUEUE] > 0 ?
		     rt_find_share(c, RT_PHASE_QUEUE) :
		     rt_find_share(c, RT_PHASE_PRE_FIRST_TOKEN);
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "arrival_rate_per_s");
	rt_jsonw_num(&w, lam, 2);
	rt_jsonw_key(&w, "completion_rate_per_s");
	rt_jsonw_num(&w, mu, 2);
	rt_jsonw_key(&w, "in_system_first_quarter");
	rt_jsonw_num(&w, q1, 2);
	rt_jsonw_key(&w, "in_system_last_quarter");
	rt_jsonw_num(&w, q4, 2);
	rt_jsonw_key(&w, "in_system_max");
	rt_jsonw_uint(&w, maxq);
	/* the queue over time: requests in the system at 8 instants */
	rt_jsonw_key(&w, "in_system");
	rt_jsonw_arr_open(&w);
	for (k = 0; k <= 8; k++) {
		uint64_t t = a0 + (uint64_t)(span_ns * k / 8);

		rt_jsonw_arr_open(&w);
		rt_jsonw_ms(&w, (int64_t)(t - a0));
		rt_jsonw_uint(&w, in_system(arr, end, n, t));
		rt_jsonw_arr_close(&w);
	}
	rt_jsonw_arr_close(&w);
	rt_jsonw_key(&w, "wait_phase");
	rt_jsonw_str_val(&w, c->markers && c->phase_sum_ns[RT_PHASE_QUEUE] > 0 ? "queue" :
										 "pre_first_token");
	rt_jsonw_key(&w, "wait_first_quarter_ms");
	rt_jsonw_num(&w, rt_find_ms(w1), 3);
	rt_jsonw_key(&w, "wait_last_quarter_ms");
	rt_jsonw_num(&w, rt_find_ms(w4), 3);
	rt_jsonw_key(&w, "wait_share");
	rt_jsonw_num(&w, sh, 3);
	rt_jsonw_key(&w, "threshold_growth");
	rt_jsonw_num(&w, QG_MIN_GROWTH, 1);
	rt_jsonw_key(&w, "threshold_rate_ratio");
	rt_jsonw_num(&w, QG_RATE_RATIO, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	/* the queue is the cause of the waiting phase: rank it above that phase */
	err = rt_find_add(
		c, RT_FIND_QUEUE_GROWTH, 0, sh > 0.1 ? sh : 0.1, &w,
		"requests arrive at %.1f/s and complete at %.1f/s: the number in the "
		"system grows from %.1f to %.1f (max %zu) over %.1f s and the wait before "
		"the engine from %.0f ms to %.0f ms; the server is past its capacity",
		lam, mu, q1, q4, maxq, span_ns / 1e9, rt_find_ms(w1), rt_find_ms(w4));
	rt_jsonw_fini(&w);
cleanup:
	free(arr);
	free(end);
	free(ba);
	return err;
}

/* One on-CPU slice as the spans list it; a burst shared by k requests appears k times. */
struct sl {
	uint32_t tid;
	uint64_t s, e;
};

static int cmp_sl(const void *a, const void *b)
{
	const struct sl *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	if (x->s != y->s)
		return (x->s > y->s) - (x->s < y->s);
	return (x->e > y->e) - (x->e < y->e);
}

/* Is t inside one of span s's CPU-work intervals (read, tokenize, postprocess)? */
static bool in_cpu_phase(const struct rt_span *s, uint64_t t)
{
	uint32_t b;

	for (b = 0; b < s->n_intervals && b < RT_SPAN_INTERVALS_MAX; b++) {
		const struct rt_span_interval *iv = &s->intervals[b];

		if ((iv->phase == RT_PHASE_RECEIVE || iv->phase == RT_PHASE_TOKENIZE ||
		     iv->phase == RT_PHASE_POSTPROCESS || iv->phase == RT_PHASE_BACKLOG) &&
		    iv->start_ns <= t && t < iv->end_ns)
			return true;
	}
	return false;
}

/* The last instant a span's slices cover when some were dropped; UINT64_MAX: none dropped. */
/*
 * Up to which length a span's slice list may lack a piece: a span whose
 * list was full kept the longest pieces (docs/spans.md, "Slices"), so a
 * piece no longer than its shortest kept one may have been dropped from
 * it. 0: nothing dropped, the list is whole.
 */
static uint64_t slices_unknown_upto(const struct rt_span *s)
{
	uint64_t m = UINT64_MAX;
	uint32_t a;

	if (!s->cpu.slices_dropped)
		return 0;
	for (a = 0; a < s->cpu.n_slices && a < RT_SPAN_SLICES_MAX; a++)
		if (s->cpu.slices[a].end_ns - s->cpu.slices[a].start_ns < m)
			m = s->cpu.slices[a].end_ns - s->cpu.slices[a].start_ns;
	return m;
}

struct steps {
	uint32_t tid;
	const char *comm;
	uint32_t n; /* steps counted */
	uint64_t first_ns, last_ns; /* the first and the last counted step's start */
	uint32_t hist[9]; /* sizes 1..8, 9+ in [8] */
	double sum_size, sum_waiting;
	uint64_t step_ns_sum;
};

static const char *comm_of(const struct rt_fctx *c, uint32_t tid)
{
	size_t i;
	uint32_t t;

	for (i = 0; i < c->n; i++)
		for (t = 0; t < c->spans[i].cpu.n_threads && t < RT_SPAN_THREADS_MAX; t++)
			if (c->spans[i].cpu.threads[t].tid == tid)
				return c->spans[i].cpu.threads[t].comm;
	return "";
}

/*
 * The engine's steps, zero-code: the thread that does several bursts for
 * each request it serves (a tokenizer does one) and reads none of them (a
 * handler reads its request, then writes its tokens) is the engine loop; a burst of it appears in the spans
 * of every request it worked for (docs/spans.md, rules 1 and 4: a step
 * marker's list, or the handlers one burst wakes), so the number of spans
 * listing one burst is that step's size. A burst that a request in flight
 * may have dropped from its full list (RT_SPAN_SLICES_MAX: one no longer
 * than the shortest it kept) is not counted: its size is not known (seen:
 * a healthy max_batch 4 run under CPU load, its short engine pieces kept by
 * one member and dropped by the other, judged "batching" on steps of 1).
 */
static int find_steps(const struct rt_fctx *c, struct steps *st)
{
	struct sl *v;
	uint64_t *known;
	size_t i, k = 0, j, r;
	uint32_t a;
	double best_bpr = 0;
	uint32_t best_tid = 0;
	int err = 0;

	memset(st, 0, sizeof(*st));
	v = malloc((c->n * RT_SPAN_SLICES_MAX + 1) * sizeof(*v));
	known = malloc((c->n + 1) * sizeof(*known));
	if (!v || !known) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < c->n; i++) {
		const struct rt_span *s = &c->spans[i];

		known[i] = slices_unknown_upto(s);
		for (a = 0; a < s->cpu.n_slices && a < RT_SPAN_SLICES_MAX; a++) {
			v[k].tid = s->cpu.slices[a].tid;
			v[k].s = s->cpu.slices[a].start_ns;
			v[k].e = s->cpu.slices[a].end_ns;
			k++;
		}
	}
	qsort(v, k, sizeof(*v), cmp_sl);
	/* per thread: distinct bursts against the spans they appear in */
	for (i = 0; i < k; i = j) {
		size_t bursts = 0, listings = 0;
		uint32_t spans = 0, readers = 0;
		size_t x;

		for (j = i; j < k && v[j].tid == v[i].tid; j++)
			;
		for (x = i; x < j; x++) {
			listings++;
			if (x == i || v[x].s != v[x - 1].s || v[x].e != v[x - 1].e)
				bursts++;
		}
		for (r = 0; r < c->n; r++) {
			const struct rt_span *s = &c->spans[r];
			uint64_t rcv = s->received_ns > s->start_ns ? s->received_ns : s->start_ns;
			bool listed = false, read = false;

			for (a = 0; a < s->cpu.n_slices && a < RT_SPAN_SLICES_MAX; a++) {
				const struct rt_span_slice *x = &s->cpu.slices[a];

				if (x->tid != v[i].tid)
					continue;
				listed = true;
				read |= x->start_ns <= rcv && x->end_ns >= s->start_ns;
			}
			spans += listed;
			readers += read;
		}
		/*
		 * An engine serves most requests, in several bursts each, and
		 * reads none of them: a handler that reads its request and writes
		 * each token (one request at a time, kept alive for the next)
		 * looks the same otherwise.
		 */
		if (spans * 2 >= c->n && spans && readers * 2 <= spans &&
		    (double)listings / spans >= BATCH_BURSTS_PER_REQUEST &&
		    (double)listings / spans > best_bpr) {
			best_bpr = (double)listings / spans;
			best_tid = v[i].tid;
		}
		(void)bursts;
	}
	if (!best_tid)
		goto cleanup;
	st->tid = best_tid;
	st->comm = comm_of(c, best_tid);
	for (i = 0; i < k; i = j) {
		uint64_t t;
		uint32_t size, waiting = 0;
		bool known_all = true;

		for (j = i; j < k && v[j].tid == v[i].tid && v[j].s == v[i].s && v[j].e == v[i].e;
		     j++)
			;
		if (v[i].tid != best_tid)
			continue;
		size = (uint32_t)(j - i);
		t = v[i].s;
		for (r = 0; r < c->n; r++) {
			const struct rt_span *s = &c->spans[r];

			if (rt_span_origin_ns(s) > t || s->end_ns <= t)
				continue;
			if (known[r] && v[i].e - v[i].s <= known[r])
				known_all = false;
			/* waiting for the engine: in flight, not in a CPU stage of its own */
			if (!in_cpu_phase(s, t))
				waiting++;
		}
		if (!known_all)
			continue;
		if (waiting < size)
			waiting = size;
		if (!st->n++)
			st->first_ns = t;
		st->last_ns = t;
		st->hist[size > 8 ? 8 : size - 1]++;
		st->sum_size += size;
		st->sum_waiting += waiting;
		st->step_ns_sum += v[i].e - v[i].s;
	}
cleanup:
	free(v);
	free(known);
	return err;
}

static int batching(struct rt_fctx *c)
{
	struct steps st;
	double mean, waiting, score, rps;
	struct rt_jsonw w;
	int err, b;

	err = find_steps(c, &st);
	if (err || st.n < BATCH_MIN_STEPS)
		return err;
	/*
	 * Steps whose size is known only early in the window (long requests
	 * dropped slices later) are the ramp-up, when requests arrive one by
	 * one: a sample of less than half the window says nothing of its batches
	 * (seen: a healthy max_batch 4 run judged on its first 45 steps).
	 */
	if (c->window_ns > 0 && (double)(st.last_ns - st.first_ns) < BATCH_MIN_COVER * c->window_ns)
		return 0;
	mean = st.sum_size / st.n;
	waiting = st.sum_waiting / st.n;
	score = 1 - mean / waiting;
	/* a saturated thread before the engine starves it: bigger steps cannot help */
	if (mean > BATCH_MAX_MEAN_STEP || score < BATCH_MIN_SCORE || c->hot_fired)
		return 0;
	rps = c->window_ns > 0 ? (double)c->n / (c->window_ns / 1e9) : 0;
	rt_jsonw_init(&w, 0);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "observable");
	rt_jsonw_str_val(&w, c->markers ?
				     "requests per engine step (step markers, or the "
				     "requests one engine burst works for)" :
				     "requests one engine burst works for (wakes or writes for)");
	rt_jsonw_key(&w, "engine_thread");
	rt_find_ev_thread(&w, st.tid, st.comm);
	rt_jsonw_key(&w, "steps");
	rt_jsonw_uint(&w, st.n);
	rt_jsonw_key(&w, "step_sizes");
	rt_jsonw_obj_open(&w);
	for (b = 0; b < 9; b++) {
		char key[8];

		if (!st.hist[b])
			continue;
		snprintf(key, sizeof(key), b == 8 ? "9+" : "%d", b + 1);
		rt_jsonw_key(&w, key);
		rt_jsonw_uint(&w, st.hist[b]);
	}
	rt_jsonw_obj_close(&w);
	rt_jsonw_key(&w, "mean_step_size");
	rt_jsonw_num(&w, mean, 2);
	rt_jsonw_key(&w, "mean_waiting_for_engine");
	rt_jsonw_num(&w, waiting, 2);
	rt_jsonw_key(&w, "mean_in_flight");
	rt_jsonw_num(&w, c->mean_inflight, 2);
	rt_jsonw_key(&w, "throughput_rps");
	rt_jsonw_num(&w, rps, 2);
	/* if a step's cost did not grow with its size: an upper bound */
	rt_jsonw_key(&w, "max_throughput_gain");
	rt_jsonw_num(&w, waiting / mean, 2);
	rt_jsonw_key(&w, "threshold_mean_step_size");
	rt_jsonw_num(&w, BATCH_MAX_MEAN_STEP, 2);
	rt_find_ev_paths(&w, c);
	rt_jsonw_obj_close(&w);
	err = rt_find_add(
		c, RT_FIND_BATCHING, 0, score, &w,
		"engine thread %u '%s' serves %.2f request(s) per step over %u steps "
		"while %.1f wait for it: steps of size 1 leave up to %.1fx the throughput "
		"(%.1f req/s now) on the table; raise the batch size",
		st.tid, st.comm, mean, st.n, waiting, waiting / mean, rps);
	rt_jsonw_fini(&w);
	return err;
}

int rt_find_load(struct rt_fctx *c)
{
	int err = queue_growth(c);

	if (!err)
		err = batching(c);
	return err;
}
