// SPDX-License-Identifier: BSD-2-Clause
/*
 * The true span values of every simulated request (tests/fixtures/README.md
 * defines each one). Instants come from the simulation's own bookkeeping;
 * phases follow docs/spans.md (zero-code and marker rules); CPU attribution
 * is truth_cpu.c's.
 */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUL INT64_MIN /* a null phase */
#define MAX_IV 256

static const char *const phase_keys[RT_PHASE__COUNT] = {
	"receive", "queue",	"tokenize",    "prefill", "pre_first_token",
	"decode",  "comm_wait", "postprocess", "other",	  "backlog",
};

/* The JSON's order: lifecycle, the wait in the kernel first (docs/spans.md). */
static const int phase_order[RT_PHASE__COUNT] = {
	RT_PHASE_BACKLOG,     RT_PHASE_RECEIVE,		RT_PHASE_QUEUE,	 RT_PHASE_TOKENIZE,
	RT_PHASE_PREFILL,     RT_PHASE_PRE_FIRST_TOKEN, RT_PHASE_DECODE, RT_PHASE_COMM_WAIT,
	RT_PHASE_POSTPROCESS, RT_PHASE_OTHER,
};

/* Where the span's time counts from: the arrival when the contract gives one. */
static uint64_t origin(const struct gen_req *r)
{
	return r->arrival ? r->arrival : r->start;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static int64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? (int64_t)(hi - lo) : 0;
}

static void put_ms(struct gen_str *g, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;

	if (ns == NUL) {
		gs_printf(g, "null");
		return;
	}
	gs_printf(g, "%s%llu.%06llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000000),
		  (unsigned long long)(a % 1000000));
}

static void put_ns(struct gen_str *g, uint64_t ns)
{
	if (ns)
		gs_printf(g, "%llu", (unsigned long long)ns);
	else
		gs_printf(g, "null");
}

/* ---- phases ------------------------------------------------------------------------------------ */

static int64_t comm_in(const struct gen_req *r, uint64_t lo, uint64_t hi)
{
	int64_t sum = 0;
	int i;

	for (i = 0; i < r->n_comm; i++)
		sum += overlap(r->comm[i].t0, r->comm[i].t1, lo, hi);
	return sum;
}

struct mark_iv {
	uint64_t t0, t1;
};

struct phases {
	int64_t v[RT_PHASE__COUNT];
	bool marker[RT_PHASE__COUNT];
	bool pack[RT_PHASE__COUNT];
};

/* What an engine pack shows of a request (pack mode; docs/packs.md ("Phases: the correlator's rules")). */
struct pk_truth {
	bool present; /* a pack record was charged to it */
	int tok_calls, prefill_steps, decode_steps, prompt_tokens;
	uint64_t tok0, tok1; /* first tokenize entry, last return */
	uint64_t first; /* its first step's decode entry */
	uint64_t prefill_end, last_end; /* returns of its prompt's step and of its last step */
};

/*
 * Its llama_tokenize calls, and the steps whose batch listed it that
 * returned while it was live (a step returning after end_ns, the engine
 * not yet aware that the client left, advances nobody's span). The
 * simulation feeds a prompt in one chunk: the first step is its prefill.
 */
static void pack_truth(const struct gen_world *w, const struct gen_req *r, struct pk_truth *k)
{
	const struct sim *s = &w->sim;
	size_t i, j;

	memset(k, 0, sizeof(*k));
	if (w->mode != RT_GEN_PACK)
		return;
	for (i = 0; i < s->n_marks; i++) {
		const struct sim_mark_log *m = &s->marks[i];

		if (m->kind == RT_EV_PACK_CALL && m->role == RT_PACK_TOKENIZE && m->req == r->idx) {
			if (!m->phase && !k->tok0)
				k->tok0 = m->ts;
			if (m->phase) {
				k->tok1 = m->ts;
				k->tok_calls++;
			}
			continue;
		}
		if (m->kind != RT_EV_MARK_STEP_BEGIN || !(m->mask & (1u << r->idx)))
			continue;
		for (j = i + 1; j < s->n_marks; j++) {
			const struct sim_mark_log *e = &s->marks[j];

			if (e->kind == RT_EV_MARK_STEP_END && e->step_id == m->step_id)
				break;
		}
		if (j == s->n_marks || s->marks[j].ts >= r->end)
			continue;
		if (!k->first) {
			k->first = m->ts;
			k->prefill_end = s->marks[j].ts;
			k->prefill_steps = 1;
			k->prompt_tokens = r->prompt_tokens;
		} else {
			k->decode_steps++;
		}
		k->last_end = s->marks[j].ts;
	}
	k->present = k->tok_calls || k->first;
}

static uint64_t clip(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Pack phases replace pre_first_token and the probe decode; receive and
 * postprocess stay unless their interval overlaps a pack interval; probe
 * comm wait comes out of prefill and decode (docs/spans.md, "Packs").
 */
static void pack_phases(const struct gen_req *r, const struct pk_truth *k, struct phases *ph,
			uint64_t piv[][2])
{
	uint64_t iv[4][3], tok_end = r->received;
	int n = 0, i, p;

	if (!k->first)
		return;
	if (k->tok_calls && k->tok1 <= k->first) {
		iv[n][0] = k->tok0, iv[n][1] = k->tok1, iv[n++][2] = RT_PHASE_TOKENIZE;
		tok_end = k->tok1;
	}
	iv[n][0] = tok_end, iv[n][1] = k->first, iv[n++][2] = RT_PHASE_QUEUE;
	iv[n][0] = k->first, iv[n][1] = k->prefill_end, iv[n++][2] = RT_PHASE_PREFILL;
	iv[n][0] = k->prefill_end, iv[n][1] = k->decode_steps ? k->last_end : k->prefill_end;
	iv[n++][2] = RT_PHASE_DECODE;
	for (i = 0; i < n; i++) {
		iv[i][0] = clip(iv[i][0], r->start, r->end);
		iv[i][1] = clip(iv[i][1], iv[i][0], r->end);
	}
	ph->v[RT_PHASE_PRE_FIRST_TOKEN] = NUL;
	for (p = RT_PHASE_RECEIVE; p <= RT_PHASE_POSTPROCESS; p += RT_PHASE_POSTPROCESS) {
		for (i = 0; i < n && ph->v[p] != NUL; i++)
			if (overlap(piv[p][0], piv[p][1], iv[i][0], iv[i][1]))
				ph->v[p] = NUL;
	}
	for (i = 0; i < n; i++) {
		p = (int)iv[i][2];
		ph->v[p] = (int64_t)(iv[i][1] - iv[i][0]);
		ph->pack[p] = true;
	}
	if (ph->v[RT_PHASE_COMM_WAIT] != NUL) {
		ph->v[RT_PHASE_PREFILL] -= comm_in(r, r->received, r->first_tok);
		ph->v[RT_PHASE_DECODE] -= comm_in(r, r->first_tok, r->last_tok);
		for (p = RT_PHASE_PREFILL; p <= RT_PHASE_DECODE;
		     p += RT_PHASE_DECODE - RT_PHASE_PREFILL)
			if (ph->v[p] < 0)
				ph->v[p] = 0;
	}
}

/* Zero-code values (docs/spans.md), with the interval each one covers. */
static void probe_phases(const struct gen_req *r, int64_t *v, uint64_t iv[][2])
{
	uint64_t hi;
	int p;

	for (p = 0; p < RT_PHASE__COUNT; p++) {
		v[p] = NUL;
		iv[p][0] = iv[p][1] = 0;
	}
	if (r->arrival) {
		v[RT_PHASE_BACKLOG] = (int64_t)(r->start - r->arrival);
		iv[RT_PHASE_BACKLOG][0] = r->arrival;
		iv[RT_PHASE_BACKLOG][1] = r->start;
	}
	v[RT_PHASE_RECEIVE] = (int64_t)(r->received - r->start);
	iv[RT_PHASE_RECEIVE][0] = r->start;
	iv[RT_PHASE_RECEIVE][1] = r->received;
	if (r->cfg->stream && r->n_tok_writes) {
		hi = r->last_tok;
		v[RT_PHASE_PRE_FIRST_TOKEN] = (int64_t)(r->first_tok - r->received) -
					      comm_in(r, r->received, r->first_tok);
		iv[RT_PHASE_PRE_FIRST_TOKEN][0] = r->received;
		iv[RT_PHASE_PRE_FIRST_TOKEN][1] = r->first_tok;
		v[RT_PHASE_DECODE] = (int64_t)(r->last_tok - r->first_tok) -
				     comm_in(r, r->first_tok, r->last_tok);
		iv[RT_PHASE_DECODE][0] = r->first_tok;
		iv[RT_PHASE_DECODE][1] = r->last_tok;
		v[RT_PHASE_POSTPROCESS] = (int64_t)(r->end - r->last_tok);
		iv[RT_PHASE_POSTPROCESS][0] = r->last_tok;
		iv[RT_PHASE_POSTPROCESS][1] = r->end;
	} else if (r->first_write) {
		/* non-streamed: the first write carries the whole completion */
		hi = r->first_write;
		v[RT_PHASE_PRE_FIRST_TOKEN] = (int64_t)(r->first_write - r->received) -
					      comm_in(r, r->received, r->first_write);
		iv[RT_PHASE_PRE_FIRST_TOKEN][0] = r->received;
		iv[RT_PHASE_PRE_FIRST_TOKEN][1] = r->first_write;
		v[RT_PHASE_POSTPROCESS] = (int64_t)(r->end - r->first_write);
		iv[RT_PHASE_POSTPROCESS][0] = r->first_write;
		iv[RT_PHASE_POSTPROCESS][1] = r->end;
	} else {
		hi = r->end;
		v[RT_PHASE_PRE_FIRST_TOKEN] =
			(int64_t)(r->end - r->received) - comm_in(r, r->received, r->end);
		iv[RT_PHASE_PRE_FIRST_TOKEN][0] = r->received;
		iv[RT_PHASE_PRE_FIRST_TOKEN][1] = r->end;
	}
	if (r->n_comm && comm_in(r, r->received, hi) > 0) {
		v[RT_PHASE_COMM_WAIT] = comm_in(r, r->received, hi);
		iv[RT_PHASE_COMM_WAIT][0] = r->received;
		iv[RT_PHASE_COMM_WAIT][1] = hi;
	}
}

/* Marker intervals of r (any thread), clipped to the span; returns how many. */
static int req_marks(const struct gen_world *w, const struct gen_req *r, struct mark_iv *out,
		     uint8_t *phase)
{
	const struct sim *s = &w->sim;
	size_t i, j;
	int n = 0;

	for (i = 0; i < s->n_marks && n < MAX_IV; i++) {
		const struct sim_mark_log *m = &s->marks[i];
		uint64_t t1 = r->end;

		if (m->kind != RT_EV_MARK_BEGIN || m->req != r->idx)
			continue;
		for (j = i + 1; j < s->n_marks; j++) {
			const struct sim_mark_log *e = &s->marks[j];

			if (e->kind == RT_EV_MARK_END && e->req == m->req && e->phase == m->phase) {
				t1 = e->ts;
				break;
			}
		}
		out[n].t0 = m->ts < r->start ? r->start : m->ts;
		out[n].t1 = t1 > r->end ? r->end : t1;
		if (out[n].t1 < out[n].t0)
			out[n].t1 = out[n].t0;
		phase[n++] = (uint8_t)m->phase;
	}
	return n;
}

static void phases_of(const struct gen_world *w, const struct gen_req *r, const struct pk_truth *k,
		      struct phases *ph)
{
	struct mark_iv iv[MAX_IV];
	uint8_t phase[MAX_IV];
	uint64_t piv[RT_PHASE__COUNT][2];
	int64_t probe[RT_PHASE__COUNT], sum = 0;
	bool clash;
	int n, i, p;

	memset(ph, 0, sizeof(*ph));
	probe_phases(r, probe, piv);
	n = req_marks(w, r, iv, phase);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		ph->v[p] = NUL;
	for (i = 0; i < n; i++) {
		p = phase[i];
		if (!ph->marker[p])
			ph->v[p] = 0;
		ph->marker[p] = true;
		ph->v[p] += (int64_t)(iv[i].t1 - iv[i].t0);
	}
	for (p = 0; p < RT_PHASE__COUNT; p++) {
		if (ph->marker[p] || probe[p] == NUL || p == RT_PHASE_OTHER)
			continue;
		if (p == RT_PHASE_PRE_FIRST_TOKEN &&
		    (ph->marker[RT_PHASE_QUEUE] || ph->marker[RT_PHASE_TOKENIZE] ||
		     ph->marker[RT_PHASE_PREFILL]))
			continue;
		/* comm wait lies inside prefill/decode by nature: it stays (and is
		 * taken out of marked prefill/decode below); any other probe
		 * value stands only where no marker interval overlaps it */
		clash = false;
		for (i = 0; i < n && !clash && p != RT_PHASE_COMM_WAIT; i++)
			if (overlap(piv[p][0], piv[p][1], iv[i].t0, iv[i].t1))
				clash = true;
		if (!clash)
			ph->v[p] = probe[p];
	}
	if (!ph->marker[RT_PHASE_COMM_WAIT] && ph->v[RT_PHASE_COMM_WAIT] != NUL) {
		if (ph->marker[RT_PHASE_PREFILL])
			ph->v[RT_PHASE_PREFILL] -= comm_in(r, r->received, r->first_tok);
		if (ph->marker[RT_PHASE_DECODE])
			ph->v[RT_PHASE_DECODE] -= comm_in(r, r->first_tok, r->last_tok);
	}
	pack_phases(r, k, ph, piv);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (p != RT_PHASE_OTHER && ph->v[p] != NUL)
			sum += ph->v[p];
	ph->v[RT_PHASE_OTHER] = (int64_t)(r->end - origin(r)) - sum;
}

/* ---- output ------------------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the ceil(q * n)-th smallest gap (1-based). */
static uint64_t rank(const uint64_t *sorted, int n, int q_percent)
{
	int k = (q_percent * n + 99) / 100;

	return sorted[(k < 1 ? 1 : k) - 1];
}

static void put_itl(struct gen_str *g, const struct gen_req *r)
{
	uint64_t gaps[GEN_MAX_TOKENS];
	int n = r->n_tok_writes - 1, i;

	if (!r->cfg->stream || n < 1) {
		gs_printf(g, "null");
		return;
	}
	for (i = 0; i < n; i++)
		gaps[i] = r->tok_writes[i + 1] - r->tok_writes[i];
	qsort(gaps, (size_t)n, sizeof(gaps[0]), cmp_u64);
	gs_printf(g, "{\"p50\":");
	put_ms(g, (int64_t)rank(gaps, n, 50));
	gs_printf(g, ",\"p99\":");
	put_ms(g, (int64_t)rank(gaps, n, 99));
	gs_printf(g, ",\"max\":");
	put_ms(g, (int64_t)gaps[n - 1]);
	gs_printf(g, "}");
}

static void put_addr(struct gen_str *g, const struct rt_sock_addr *a)
{
	gs_printf(g, "%u.%u.%u.%u:%u", a->addr[0], a->addr[1], a->addr[2], a->addr[3], a->port);
}

static void put_cpu(struct gen_str *g, const struct gen_world *w, const struct gen_cpu_truth *ct,
		    int ri)
{
	int64_t on = 0, rq = 0;
	int th;
	bool first = true;

	for (th = 0; th < w->sim.n_threads; th++) {
		on += ct->on[ri][th];
		rq += ct->runq[ri][th];
	}
	gs_printf(g, "{\"on_cpu_ms\":");
	put_ms(g, on);
	gs_printf(g, ",\"runq_ms\":");
	put_ms(g, rq);
	gs_printf(g, ",\"off_cpu_ms\":");
	put_ms(g, ct->off[ri]);
	if (w->sc->pool) {
		/* only where pools are simulated: the other scenarios' truth stays as it was */
		gs_printf(g, ",\"pool_ms\":");
		if (ct->pool_on[ri])
			put_ms(g, ct->pool_on[ri]);
		else
			gs_printf(g, "null");
	}
	gs_printf(g, ",\"threads\":[");
	/* threads are created in tid order */
	for (th = 0; th < w->sim.n_threads; th++) {
		const struct sim_thread *t = w->sim.threads[th];

		if (!ct->charged[ri][th])
			continue;
		gs_printf(g, "%s{\"tid\":%u,\"comm\":\"%s\",\"on_cpu_ms\":", first ? "" : ",",
			  t->tid, t->comm);
		put_ms(g, ct->on[ri][th]);
		gs_printf(g, ",\"runq_ms\":");
		put_ms(g, ct->runq[ri][th]);
		gs_printf(g, ",\"shared\":%s", ct->shared[ri][th] ? "true" : "false");
		gs_printf(g, "%s}", ct->pool[ri][th] ? ",\"pool\":true" : "");
		first = false;
	}
	gs_printf(g, "]}");
}

static void put_phases(struct gen_str *g, const struct phases *ph)
{
	bool first = true;
	int i, p;

	gs_printf(g, "\"phases\":{");
	for (i = 0; i < RT_PHASE__COUNT; i++) {
		p = phase_order[i];
		gs_printf(g, "%s\"%s_ms\":", i ? "," : "", phase_keys[p]);
		put_ms(g, ph->v[p]);
	}
	gs_printf(g, "},\"phase_source\":{");
	for (i = 0; i < RT_PHASE__COUNT; i++) {
		p = phase_order[i];
		if (ph->v[p] == NUL || p == RT_PHASE_OTHER)
			continue;
		gs_printf(g, "%s\"%s\":\"%s\"", first ? "" : ",", phase_keys[p],
			  ph->marker[p] ? "marker" :
			  ph->pack[p]	? "pack" :
					  "probe");
		first = false;
	}
	gs_printf(g, "}");
}

/* The span's pack object (null when no pack record was charged to it) and steps_source. */
static void put_pack(struct gen_str *g, const struct gen_req *r, const struct pk_truth *k)
{
	gs_printf(g, ",\"steps_source\":%s", k->first ? "\"pack\"" : "null");
	if (!k->present) {
		gs_printf(g, ",\"pack\":null");
		return;
	}
	gs_printf(g, ",\"pack\":{\"seq\":");
	if (k->first)
		/* the final event's id_slot is the sequence (http_bytes.c): an exact join */
		gs_printf(g, "%d,\"join\":\"%s\"", r->pk_seq,
			  r->cfg->large_final ? "id_slot" : "hand-off");
	else
		gs_printf(g, "null,\"join\":null");
	gs_printf(g,
		  ",\"tokenize_calls\":%d,\"prefill_steps\":%d,\"decode_steps\":%d,"
		  "\"prompt_tokens\":%d}",
		  k->tok_calls, k->prefill_steps, k->decode_steps, k->prompt_tokens);
}

static void put_req(struct gen_str *g, const struct gen_world *w, const struct gen_req *r,
		    const struct gen_cpu_truth *ct)
{
	const struct sim_sock *so = sim_sock_get((struct sim *)&w->sim, w->conns[r->conn].fd);
	struct pk_truth k;
	struct phases ph;
	int i;

	if (!so) {
		g->err = -EPROTO;
		return;
	}
	pack_truth(w, r, &k);
	phases_of(w, r, &k, &ph);
	gs_printf(g,
		  "{\"request_id\":\"%s\",\"group\":\"testsrv\",\"pid\":%u,\"comm\":\"testsrv\","
		  "\"conn\":\"",
		  r->id, GEN_PID);
	put_addr(g, &so->peer);
	gs_printf(g, "->");
	put_addr(g, &so->local);
	gs_printf(g, "\",\"method\":\"%s\",\"path\":\"%s\",\"status\":", r->method, r->path);
	if (r->status)
		gs_printf(g, "%d", r->status);
	else
		gs_printf(g, "null");
	gs_printf(g, ",\"arrival_ns\":");
	put_ns(g, r->arrival);
	gs_printf(g, ",\"start_ns\":");
	put_ns(g, r->start);
	gs_printf(g, ",\"received_ns\":");
	put_ns(g, r->received);
	gs_printf(g, ",\"first_token_ns\":");
	put_ns(g, r->cfg->stream ? r->first_tok : 0);
	gs_printf(g, ",\"last_token_ns\":");
	put_ns(g, r->cfg->stream ? r->last_tok : 0);
	gs_printf(g, ",\"end_ns\":");
	put_ns(g, r->end);
	gs_printf(g, ",\"duration_ms\":");
	put_ms(g, (int64_t)(r->end - origin(r)));
	gs_printf(g, ",\"ttft_ms\":");
	put_ms(g, r->cfg->stream && r->first_tok ? (int64_t)(r->first_tok - origin(r)) : NUL);
	gs_printf(g, ",\"events_out\":%d,\"tokens_out\":", r->cfg->stream ? r->n_tok_writes : 0);
	if (r->tokens_out >= 0)
		gs_printf(g, "%lld", (long long)r->tokens_out);
	else
		gs_printf(g, "null");
	gs_printf(g, ",\"itl_ms\":");
	put_itl(g, r);
	gs_printf(g, ",");
	put_phases(g, &ph);
	gs_printf(g, ",\"cpu\":");
	put_cpu(g, w, ct, r->idx);
	gs_printf(g, ",\"server_reported\":{");
	for (i = 0; i < r->n_reported; i++)
		gs_printf(g, "%s\"%s\":%s", i ? "," : "", r->reported[i].name,
			  r->reported[i].value);
	/* no GPU records in these recordings; nothing is amended late */
	gs_printf(g, "},\"gpu\":null,\"outcome\":\"%s\",\"flags\":[%s%s%s],\"revision\":0",
		  r->aborted ? "aborted" : "ok", r->pipelined ? "\"pipelined\"" : "",
		  r->pipelined && r->arrival_bound ? "," : "",
		  r->arrival_bound ? "\"backlog_lower_bound\"" : "");
	if (w->mode == RT_GEN_PACK)
		put_pack(g, r, &k);
	gs_printf(g, ",\"token_writes_ns\":[");
	for (i = 0; i < r->n_tok_writes; i++)
		gs_printf(g, "%s%llu", i ? "," : "", (unsigned long long)r->tok_writes[i]);
	gs_printf(g, "],\"scenario\":\"%s\",\"mode\":\"%s\"}\n", w->sc->name,
		  rt_gen_mode_name(w->mode));
}

int gen_truth_write(struct gen_world *w, const char *path)
{
	struct gen_cpu_truth *ct;
	struct gen_str g = { 0 };
	FILE *f = NULL;
	int err, i;

	for (i = 0; i < w->n_reqs; i++)
		if (!w->reqs[i].start || !w->reqs[i].received || !w->reqs[i].end)
			return -EPROTO; /* the simulation did not finish a request */
	ct = calloc(1, sizeof(*ct));
	if (!ct)
		return -ENOMEM;
	err = gen_cpu_truth(w, ct);
	for (i = 0; i < w->n_reqs && !err; i++)
		put_req(&g, w, &w->reqs[i], ct);
	if (!err && g.err)
		err = g.err;
	if (!err) {
		f = fopen(path, "w");
		if (!f)
			err = -errno;
	}
	if (!err && g.len && fwrite(g.p, 1, g.len, f) != g.len)
		err = -EIO;
	if (f && fclose(f) && !err)
		err = -errno;
	gs_free(&g);
	free(ct);
	return err;
}
