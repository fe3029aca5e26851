// SPDX-License-Identifier: BSD-2-Clause
/*
 * A request's observations → the span's derived fields: phases (which
 * partition [arrival_ns or start_ns, end_ns]), their timeline (intervals),
 * TTFT, inter-token gap percentiles. docs/spans.md defines every value
 * computed here.
 */
#include <stdlib.h>
#include <string.h>

#include "common/select.h"
#include "internal.h"
#include "pack.h"
#include "vllm.h"

void rt_span_add_gap(struct rt_req *r, int64_t gap)
{
	if (gap < 0)
		gap = 0;
	if (gap > r->gap_max)
		r->gap_max = gap;
	if (r->n_gaps >= RT_REQ_GAPS_MAX) {
		r->n_gaps++; /* counted; percentiles use the first RT_REQ_GAPS_MAX */
		return;
	}
	if (r->n_gaps == r->gaps_cap) {
		uint32_t cap = r->gaps_cap ? r->gaps_cap * 2 : 64;
		int64_t *g = realloc(r->gaps, cap * sizeof(*g));

		if (!g) {
			r->span.flags |= RT_SPAN_INCOMPLETE;
			return;
		}
		r->gaps = g;
		r->gaps_cap = cap;
	}
	r->gaps[r->n_gaps++] = gap;
}

/* nearest rank: the ceil(p * n)-th smallest (1-based), as tests/fixtures does */
static uint32_t rank(uint32_t n, uint32_t pct)
{
	uint64_t r = ((uint64_t)pct * n + 99) / 100;

	return r < 1 ? 1 : (uint32_t)r;
}

/*
 * The r-th smallest (1-based) of v[0..n), r <= n, left at v[r - 1] with
 * what is smaller before it. The largest, as the 99th of up to 100 gaps
 * is, by one pass.
 */
static int64_t kth(int64_t *v, uint32_t n, uint32_t r)
{
	if (r == n) {
		uint32_t m = 0, i;
		int64_t t;

		for (i = 1; i < n; i++)
			if (v[i] > v[m])
				m = i;
		t = v[m], v[m] = v[n - 1], v[n - 1] = t;
		return v[n - 1];
	}
	/*
	 * Two ranks, not a sorted list: sorting a reply's gaps (in random
	 * order, each compare a coin toss for the branch predictor) was most
	 * of a span's finalisation.
	 */
	rt_select_k_i64(v, n, r - 1);
	return v[r - 1];
}

static void itl(struct rt_req *r)
{
	uint32_t n = r->n_gaps < RT_REQ_GAPS_MAX ? r->n_gaps : RT_REQ_GAPS_MAX;

	if (!n || !r->gaps)
		return;
	r->span.itl_present = true;
	r->span.itl_p99_ns = kth(r->gaps, n, rank(n, 99));
	/* what lies below the 99th's place holds the 50th's, which is not above it */
	r->span.itl_p50_ns = kth(r->gaps, rank(n, 99), rank(n, 50));
	r->span.itl_max_ns = r->gap_max;
}

void rt_req_comm_piece(struct rt_req *r, uint64_t from, uint64_t to)
{
	if (to <= from)
		return;
	struct rt_req_iv *iv;

	if (r->n_comm_iv >= RT_SPAN_INTERVALS_MAX || !(iv = rt_req_iv_get(r))) {
		r->comm_iv_dropped++;
		return;
	}
	iv->comm_iv[r->n_comm_iv].from = from;
	iv->comm_iv[r->n_comm_iv].to = to;
	r->n_comm_iv++;
}

/* where each probe phase lies: its total is this extent less the comm wait taken out */
struct extents {
	struct rt_iv iv[RT_PHASE__COUNT];
};

static void extent(struct extents *x, enum rt_phase p, uint64_t from, uint64_t to)
{
	x->iv[p].from = from;
	x->iv[p].to = to;
}

static void set(struct rt_span *s, enum rt_phase p, int64_t v, enum rt_phase_source src)
{
	s->phase_ns[p] = v < 0 ? 0 : v;
	s->phase_source[p] = src;
}

static void clear(struct rt_span *s, enum rt_phase p)
{
	s->phase_ns[p] = RT_NULL_NS;
	s->phase_source[p] = RT_PSRC_NONE;
}

/* Where a non-streamed response's output begins: its first write, else the end. */
static uint64_t output_start(const struct rt_req *r)
{
	const struct rt_span *s = &r->span;
	uint64_t out = r->resp_first_enter && r->resp_first_enter <= s->end_ns ?
			       r->resp_first_enter :
			       s->end_ns;

	return out < s->received_ns ? s->received_ns : out;
}

static int64_t comm_in(const struct rt_req *r, uint64_t from, uint64_t to)
{
	int64_t sum = 0;
	uint32_t i;

	for (i = 0; i < r->n_comm_iv; i++) {
		uint64_t a = r->iv->comm_iv[i].from > from ? r->iv->comm_iv[i].from : from;
		uint64_t b = r->iv->comm_iv[i].to < to ? r->iv->comm_iv[i].to : to;

		if (b > a)
			sum += (int64_t)(b - a);
	}
	return sum;
}

/*
 * Probe comm wait reaches a request when the waiting thread next serves it,
 * so its split at the first token is when it was handed over. With all its
 * pieces known, where they lie decides instead: the part inside [received,
 * first token) comes out of what precedes the first token, the part inside
 * [first token, last token) out of decode, a part outside [received,
 * output) is not this request's wait, and overlapping waits count once
 * (docs/spans.md, "Timeline").
 */
static int cmp_iv(const void *a, const void *b)
{
	const struct rt_iv *x = a, *y = b;

	return (x->from > y->from) - (x->from < y->from);
}

/* Two threads may wait at once (a peer read, a GPU sync): the request waited once. */
static void merge_comm(struct rt_req *r)
{
	uint32_t i, n = 0;

	if (r->n_comm_iv > 1)
		qsort(r->iv->comm_iv, r->n_comm_iv, sizeof(r->iv->comm_iv[0]), cmp_iv);
	for (i = 0; i < r->n_comm_iv; i++) {
		if (n && r->iv->comm_iv[i].from <= r->iv->comm_iv[n - 1].to) {
			if (r->iv->comm_iv[i].to > r->iv->comm_iv[n - 1].to)
				r->iv->comm_iv[n - 1].to = r->iv->comm_iv[i].to;
			continue;
		}
		r->iv->comm_iv[n++] = r->iv->comm_iv[i];
	}
	r->n_comm_iv = n;
}

static void comm_split(struct rt_req *r, struct extents *x)
{
	struct rt_span *s = &r->span;
	uint64_t hi;

	merge_comm(r);
	if (!r->comm_seen || !r->n_comm_iv || r->comm_iv_dropped || !s->received_ns)
		return;
	if (s->streamed && s->first_token_ns) {
		hi = s->last_token_ns > s->first_token_ns ? s->last_token_ns : s->first_token_ns;
		r->comm_before_ft = comm_in(r, s->received_ns, s->first_token_ns);
		r->comm_after_ft = comm_in(r, s->first_token_ns, hi);
	} else {
		hi = output_start(r);
		r->comm_before_ft = comm_in(r, s->received_ns, hi);
		r->comm_after_ft = 0;
	}
	r->comm_seen = r->comm_before_ft + r->comm_after_ft > 0;
	extent(x, RT_PHASE_COMM_WAIT, s->received_ns, hi);
}

static void probe_phases(struct rt_req *r, struct extents *x)
{
	struct rt_span *s = &r->span;
	uint64_t out_start; /* first token, or the response's first write */

	if (!s->received_ns) { /* ended while the request was still arriving */
		set(s, RT_PHASE_RECEIVE, (int64_t)(s->end_ns - s->start_ns), RT_PSRC_PROBE);
		extent(x, RT_PHASE_RECEIVE, s->start_ns, s->end_ns);
		return;
	}
	set(s, RT_PHASE_RECEIVE, (int64_t)(s->received_ns - s->start_ns), RT_PSRC_PROBE);
	extent(x, RT_PHASE_RECEIVE, s->start_ns, s->received_ns);
	if (r->comm_seen)
		set(s, RT_PHASE_COMM_WAIT, r->comm_before_ft + r->comm_after_ft, RT_PSRC_PROBE);
	if (s->streamed && s->first_token_ns) {
		set(s, RT_PHASE_PRE_FIRST_TOKEN,
		    (int64_t)(s->first_token_ns - s->received_ns) - r->comm_before_ft,
		    RT_PSRC_PROBE);
		extent(x, RT_PHASE_PRE_FIRST_TOKEN, s->received_ns, s->first_token_ns);
		set(s, RT_PHASE_DECODE,
		    (int64_t)(s->last_token_ns - s->first_token_ns) - r->comm_after_ft,
		    RT_PSRC_PROBE);
		extent(x, RT_PHASE_DECODE, s->first_token_ns, s->last_token_ns);
		set(s, RT_PHASE_POSTPROCESS, (int64_t)(s->end_ns - s->last_token_ns),
		    RT_PSRC_PROBE);
		extent(x, RT_PHASE_POSTPROCESS, s->last_token_ns, s->end_ns);
		return;
	}
	out_start = output_start(r);
	set(s, RT_PHASE_PRE_FIRST_TOKEN,
	    (int64_t)(out_start - s->received_ns) - r->comm_before_ft - r->comm_after_ft,
	    RT_PSRC_PROBE);
	extent(x, RT_PHASE_PRE_FIRST_TOKEN, s->received_ns, out_start);
	if (r->resp_first_enter) {
		set(s, RT_PHASE_POSTPROCESS, (int64_t)(s->end_ns - out_start), RT_PSRC_PROBE);
		extent(x, RT_PHASE_POSTPROCESS, out_start, s->end_ns);
	}
}

static bool overlaps_markers(const struct rt_req *r, uint64_t from, uint64_t to)
{
	uint32_t i;

	if (to <= from)
		return false;
	for (i = 0; i < r->n_mark_iv; i++)
		if (from < r->iv->mark_iv[i].to && r->iv->mark_iv[i].from < to)
			return true;
	return r->mark_iv_max && from < r->mark_iv_max && r->mark_iv_min < to;
}

/*
 * Markers replace the phases they name; a probe phase stays only where it
 * overlaps no marker interval (docs/spans.md, "Markers").
 */
static void marker_phases(struct rt_req *r)
{
	struct rt_span *s = &r->span;
	const uint32_t pre =
		(1u << RT_PHASE_QUEUE) | (1u << RT_PHASE_TOKENIZE) | (1u << RT_PHASE_PREFILL);
	uint64_t ft = s->first_token_ns ? s->first_token_ns : r->resp_first_enter;
	uint64_t lt = s->first_token_ns ? s->last_token_ns : r->resp_first_enter;
	uint32_t p;

	if (!r->mark_seen)
		return;
	if (s->phase_source[RT_PHASE_RECEIVE] == RT_PSRC_PROBE &&
	    overlaps_markers(r, s->start_ns, s->received_ns ? s->received_ns : s->end_ns))
		clear(s, RT_PHASE_RECEIVE);
	if (s->phase_source[RT_PHASE_PRE_FIRST_TOKEN] == RT_PSRC_PROBE &&
	    ((r->mark_seen & pre) || overlaps_markers(r, s->received_ns, ft ? ft : s->end_ns)))
		clear(s, RT_PHASE_PRE_FIRST_TOKEN);
	if (s->phase_source[RT_PHASE_DECODE] == RT_PSRC_PROBE && overlaps_markers(r, ft, lt))
		clear(s, RT_PHASE_DECODE);
	if (s->phase_source[RT_PHASE_POSTPROCESS] == RT_PSRC_PROBE &&
	    overlaps_markers(r, lt ? lt : s->end_ns, s->end_ns))
		clear(s, RT_PHASE_POSTPROCESS);
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		if (!(r->mark_seen & (1u << p)) || p == RT_PHASE_OTHER)
			continue;
		set(s, p, r->mark_total[p] - r->mark_comm_in[p], RT_PSRC_MARKER);
	}
	/*
	 * Comm wait seen by probes (peer reads, GPU syncs after collectives)
	 * lies inside prefill/decode. With COMM_WAIT markers the markers say
	 * it; without, the probe value stays and is taken out of the marked
	 * prefill (before the first token) and decode (after it).
	 */
	if (s->phase_source[RT_PHASE_COMM_WAIT] != RT_PSRC_PROBE)
		return;
	if (s->phase_source[RT_PHASE_PREFILL] == RT_PSRC_MARKER)
		s->phase_ns[RT_PHASE_PREFILL] -= r->comm_before_ft;
	if (s->phase_source[RT_PHASE_DECODE] == RT_PSRC_MARKER)
		s->phase_ns[RT_PHASE_DECODE] -= r->comm_after_ft;
	for (p = RT_PHASE_PREFILL; p <= RT_PHASE_DECODE; p += RT_PHASE_DECODE - RT_PHASE_PREFILL)
		if (s->phase_ns[p] != RT_NULL_NS && s->phase_ns[p] < 0)
			s->phase_ns[p] = 0;
}

static uint64_t clip(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * An engine pack's phases (docs/spans.md, "Packs") on a span without
 * marker phases: they replace pre_first_token and the probe decode, and a
 * probe phase that overlaps them goes, as with markers. Probe comm wait
 * comes out of prefill (before the first token) and decode (after).
 */
static void pack_phases(struct rt_req *r, struct rt_pack_iv *iv, uint32_t n)
{
	struct rt_span *s = &r->span;
	uint64_t lo = 0, hi = 0;
	uint32_t i;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		iv[i].from = clip(iv[i].from, s->start_ns, s->end_ns);
		iv[i].to = clip(iv[i].to, iv[i].from, s->end_ns);
		if (!lo || iv[i].from < lo)
			lo = iv[i].from;
		if (iv[i].to > hi)
			hi = iv[i].to;
	}
	if (s->phase_source[RT_PHASE_PRE_FIRST_TOKEN] == RT_PSRC_PROBE)
		clear(s, RT_PHASE_PRE_FIRST_TOKEN);
	if (s->phase_source[RT_PHASE_DECODE] == RT_PSRC_PROBE)
		clear(s, RT_PHASE_DECODE);
	if (s->phase_source[RT_PHASE_RECEIVE] == RT_PSRC_PROBE && s->received_ns > lo)
		clear(s, RT_PHASE_RECEIVE);
	if (s->phase_source[RT_PHASE_POSTPROCESS] == RT_PSRC_PROBE) {
		uint64_t from = s->first_token_ns ? s->last_token_ns : output_start(r);

		if (from < hi)
			clear(s, RT_PHASE_POSTPROCESS);
	}
	for (i = 0; i < n; i++)
		set(s, iv[i].phase, (int64_t)(iv[i].to - iv[i].from), RT_PSRC_PACK);
	if (s->phase_source[RT_PHASE_COMM_WAIT] != RT_PSRC_PROBE)
		return;
	if (s->phase_source[RT_PHASE_PREFILL] == RT_PSRC_PACK)
		s->phase_ns[RT_PHASE_PREFILL] -= r->comm_before_ft;
	if (s->phase_source[RT_PHASE_DECODE] == RT_PSRC_PACK)
		s->phase_ns[RT_PHASE_DECODE] -= r->comm_after_ft;
	for (i = RT_PHASE_PREFILL; i <= RT_PHASE_DECODE; i += RT_PHASE_DECODE - RT_PHASE_PREFILL)
		if (s->phase_ns[i] != RT_NULL_NS && s->phase_ns[i] < 0)
			s->phase_ns[i] = 0;
}

static void add_interval(struct rt_span *s, uint32_t p, uint64_t from, uint64_t to)
{
	uint64_t origin = rt_span_origin_ns(s);
	struct rt_span_interval *iv;

	/* the timeline is the span's: nothing drawn before it began or after it ended */
	if (from < origin)
		from = origin;
	if (to > s->end_ns)
		to = s->end_ns;
	if (to <= from)
		return; /* an empty piece draws nothing */
	if (s->n_intervals >= RT_SPAN_INTERVALS_MAX) {
		s->intervals_dropped++;
		return;
	}
	iv = &s->intervals[s->n_intervals++];
	iv->start_ns = from;
	iv->end_ns = to;
	iv->phase = (uint8_t)p;
	iv->source = s->phase_source[p];
}

static int cmp_interval(const void *a, const void *b)
{
	const struct rt_span_interval *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
	if (x->end_ns != y->end_ns)
		return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
	return (x->phase > y->phase) - (x->phase < y->phase);
}

/*
 * A stable insertion sort: at most RT_SPAN_INTERVALS_MAX, mostly in order
 * already, where qsort's indirect compares cost ~700 instructions a span.
 * Stable, as glibc's qsort (a merge sort) is: equal ones keep their order.
 */
static void sort_intervals(struct rt_span_interval *v, uint32_t n)
{
	uint32_t i, j;

	for (i = 1; i < n; i++) {
		struct rt_span_interval x = v[i];

		for (j = i; j > 0 && cmp_interval(&v[j - 1], &x) > 0; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/*
 * Every non-null phase's measured pieces (docs/spans.md, "Timeline"). When
 * the bound is reached, the probe phases (one piece each) come first, then
 * marker intervals, then comm wait pieces; the rest is counted.
 */
static void timeline(struct rt_req *r, const struct extents *x, const struct rt_pack_iv *piv,
		     uint32_t npiv)
{
	struct rt_span *s = &r->span;
	uint32_t p, i;

	s->n_intervals = 0;
	s->intervals_dropped = 0;
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (s->phase_source[p] == RT_PSRC_PROBE && p != RT_PHASE_COMM_WAIT)
			add_interval(s, p, x->iv[p].from, x->iv[p].to);
	for (i = 0; i < r->n_mark_iv; i++) {
		p = r->iv->mark_iv_phase[i];
		if (p < RT_PHASE__COUNT && p != RT_PHASE_OTHER &&
		    s->phase_source[p] == RT_PSRC_MARKER)
			add_interval(s, p, r->iv->mark_iv[i].from, r->iv->mark_iv[i].to);
	}
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (p != RT_PHASE_OTHER && s->phase_source[p] == RT_PSRC_MARKER)
			s->intervals_dropped += r->mark_iv_dropped[p];
	for (i = 0; i < npiv; i++)
		if (s->phase_source[piv[i].phase] == RT_PSRC_PACK)
			add_interval(s, piv[i].phase, piv[i].from, piv[i].to);
	if (s->phase_source[RT_PHASE_COMM_WAIT] == RT_PSRC_PROBE) {
		const struct rt_iv *in = &x->iv[RT_PHASE_COMM_WAIT]; /* set: what comm_split kept */

		for (i = 0; i < r->n_comm_iv; i++)
			add_interval(s, RT_PHASE_COMM_WAIT,
				     in->to && r->iv->comm_iv[i].from < in->from ?
					     in->from :
					     r->iv->comm_iv[i].from,
				     in->to && r->iv->comm_iv[i].to > in->to ?
					     in->to :
					     r->iv->comm_iv[i].to);
		s->intervals_dropped += r->comm_iv_dropped;
	}
	sort_intervals(s->intervals, s->n_intervals);
}

static int cmp_slice(const void *a, const void *b)
{
	const struct rt_span_slice *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * Slices are drawn in the span's window: a burst charged to the request
 * may have begun before its first byte arrived (a handler woken for it runs
 * up to its read); that time stays in on_cpu_ns, the slice starts at origin.
 */
static void clip_slices(struct rt_span *s)
{
	uint64_t origin = rt_span_origin_ns(s);
	struct rt_span_cpu *cpu = &s->cpu;
	uint32_t i, n = 0;

	for (i = 0; i < cpu->n_slices; i++) {
		struct rt_span_slice sl = cpu->slices[i];

		if (sl.start_ns < origin)
			sl.start_ns = origin;
		if (sl.end_ns > s->end_ns)
			sl.end_ns = s->end_ns;
		if (sl.end_ns > sl.start_ns)
			cpu->slices[n++] = sl;
	}
	cpu->n_slices = n;
	/* as sort_intervals: stable, n <= RT_SPAN_SLICES_MAX */
	for (i = 1; i < n; i++) {
		struct rt_span_slice x = cpu->slices[i];
		uint32_t j;

		for (j = i; j > 0 && cmp_slice(&cpu->slices[j - 1], &x) > 0; j--)
			cpu->slices[j] = cpu->slices[j - 1];
		cpu->slices[j] = x;
	}
}

static int64_t sum_phases(const struct rt_span *s)
{
	int64_t sum = 0;
	uint32_t p;

	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (p != RT_PHASE_OTHER && s->phase_ns[p] != RT_NULL_NS)
			sum += s->phase_ns[p];
	return sum;
}

/*
 * Started before the trace (docs/spans.md, "started_before_trace"): the
 * phases partition a span from its start, which was not seen, so none is
 * known, "other" included, and nothing is drawn.
 */
static void unseen_start(struct rt_span *s)
{
	uint32_t p;

	for (p = 0; p < RT_PHASE__COUNT; p++)
		clear(s, (enum rt_phase)p);
	s->n_intervals = 0;
	s->intervals_dropped = 0;
}

void rt_span_finalize(struct rt_req *r)
{
	struct rt_span *s = &r->span;
	struct rt_pack_iv piv[RT_PACK_IV_MAX];
	uint32_t npiv;
	struct extents x;
	int64_t dur, other;

	if (s->end_ns < s->start_ns)
		s->end_ns = s->start_ns;
	if (s->arrival_ns > s->start_ns) { /* conn.c refuses these; never a negative wait */
		s->arrival_ns = 0;
		s->flags &= ~(uint32_t)RT_SPAN_BACKLOG_LOWER_BOUND;
	}
	memset(&x, 0, sizeof(x));
	/* in the kernel, before any server thread had it: probes only, never marked */
	if (s->arrival_ns) {
		set(s, RT_PHASE_BACKLOG, (int64_t)(s->start_ns - s->arrival_ns), RT_PSRC_PROBE);
		extent(&x, RT_PHASE_BACKLOG, s->arrival_ns, s->start_ns);
	} else {
		clear(s, RT_PHASE_BACKLOG);
	}
	dur = rt_span_duration_ns(s);
	if (s->last_token_ns > s->end_ns)
		s->last_token_ns = s->end_ns;
	if (s->first_token_ns > s->end_ns)
		s->first_token_ns = 0;
	comm_split(r, &x);
	probe_phases(r, &x);
	marker_phases(r);
	npiv = rt_pack_finish(r, piv);
	if (!npiv)
		npiv = rt_vllm_finish(r, piv);
	pack_phases(r, piv, npiv);
	timeline(r, &x, piv, npiv);
	/* other is the remainder: never measured, so it has no phase_source */
	other = dur == RT_NULL_NS ? 0 : dur - sum_phases(s);
	s->phase_ns[RT_PHASE_OTHER] = other > 0 ? other : 0;
	s->phase_source[RT_PHASE_OTHER] = RT_PSRC_NONE;
	if (!s->streamed || !s->first_token_ns)
		s->first_token_ns = 0;
	if (!s->start_ns)
		unseen_start(s);
	itl(r);
	rt_cpu_sort_threads(&s->cpu);
	clip_slices(s);
}
