// SPDX-License-Identifier: BSD-2-Clause
/*
 * Marker records written straight into a reserved slot: the same event.h
 * records, field for field, that bpf/marker.bpf.c writes (zeroed, then
 * filled), so the correlator cannot tell the two paths apart. The
 * timestamp is taken after the reservation (include/reqtrace/mark_ring.h
 * says why the watermark needs that order).
 *
 * Strings are copied with strnlen/memcpy: a caller's bad pointer faults
 * here, where the probe's read would have failed quietly. marker.h asks for
 * valid strings or NULL, as any C API does.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mlib.h"

/* initial-exec: one %fs-relative load, no __tls_get_addr; 4 bytes of static TLS */
static __thread __u32 my_tid __attribute__((tls_model("initial-exec")));

void rt_mark_w_forget_tid(void)
{
	my_tid = 0;
}

static __u32 tid(void)
{
	if (__builtin_expect(!my_tid, 0))
		my_tid = (__u32)syscall(SYS_gettid);
	return my_tid;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static void fill_hdr(const struct rt_mring *r, struct rt_event_hdr *h, __u16 kind, __u16 size,
		     __u64 ts, __u32 t)
{
	h->kind = kind;
	h->size = size;
	h->source = r->source_id;
	h->ts_ns = ts;
	h->pid = r->pid;
	h->tid = t;
}

/* What bpf_probe_read_user_str leaves: at most RT_ID_LEN - 1 bytes, then NULs. */
static __u32 copy_id(char *dst, const char *src)
{
	size_t n = src ? strnlen(src, RT_ID_LEN - 1) : 0;

	memcpy(dst, src ? src : "", n);
	memset(dst + n, 0, RT_ID_LEN - n);
	return (__u32)n;
}

static int reserve(struct rt_mring *r, __u32 len, __u32 records, struct rt_mring_slot *s)
{
	int err = rt_mring_reserve(r, len, records, s);

	return err == -EPIPE ? err : err ? 1 : 0;
}

int rt_mark_w_mark(struct rt_mring *r, __u16 kind, const char *id, enum rt_phase phase)
{
	const __u32 len = sizeof(struct rt_mark_slot) + sizeof(struct rt_ev_mark);
	struct rt_mring_slot s;
	struct rt_ev_mark *e;
	int err;

	if (!id) /* marker.h: a NULL id is ignored */
		return 0;
	err = reserve(r, len, 1, &s);
	if (err)
		return err < 0 ? err : 0;
	e = (struct rt_ev_mark *)s.body;
	fill_hdr(r, &e->hdr, kind, sizeof(*e), now_ns(), tid());
	e->phase = phase;
	e->id_len = copy_id(e->request_id, id);
	rt_mring_commit(r, &s, len, 1);
	return 0;
}

int rt_mark_w_step_begin_tokens(struct rt_mring *r, uint64_t step, uint32_t n,
				const char *const *ids, const uint32_t *tokens)
{
	__u32 members = n < RT_MARK_STEP_MAX ? n : RT_MARK_STEP_MAX, i, len, recs;
	struct rt_ev_mark_step *e;
	struct rt_ev_mark_step_tokens *tk;
	struct rt_ev_loss *l;
	struct rt_mring_slot s;
	unsigned char *p;
	__u64 ts;
	__u32 t;
	int err;

	if (!ids)
		members = 0;
	if (!members)
		tokens = NULL;
	recs = 1 + members * (tokens ? 2 : 1) + (n > RT_MARK_STEP_MAX);
	len = sizeof(struct rt_mark_slot) + (1 + members) * sizeof(*e) +
	      (tokens ? members * sizeof(*tk) : 0) + (n > RT_MARK_STEP_MAX ? sizeof(*l) : 0);
	err = reserve(r, len, recs, &s);
	if (err)
		return err < 0 ? err : 0;
	ts = now_ns();
	t = tid();
	p = s.body;
	e = (struct rt_ev_mark_step *)p;
	memset(e, 0, sizeof(*e));
	fill_hdr(r, &e->hdr, RT_EV_MARK_STEP_BEGIN, sizeof(*e), ts, t);
	e->step_id = step;
	e->n_requests = n;
	p += sizeof(*e);
	for (i = 0; i < members; i++) {
		e = (struct rt_ev_mark_step *)p;
		memset(e, 0, sizeof(*e));
		fill_hdr(r, &e->hdr, RT_EV_MARK_STEP_MEMBER, sizeof(*e), ts, t);
		e->step_id = step;
		e->n_requests = n;
		e->index = i;
		/* a NULL entry still gets its member record, with an empty id */
		copy_id(e->request_id, ids[i]);
		p += sizeof(*e);
		if (!tokens)
			continue;
		/* after its member, as the BPF program writes it */
		tk = (struct rt_ev_mark_step_tokens *)p;
		memset(tk, 0, sizeof(*tk));
		fill_hdr(r, &tk->hdr, RT_EV_MARK_STEP_TOKENS, sizeof(*tk), ts, t);
		tk->step_id = step;
		tk->index = i;
		tk->tokens = tokens[i];
		p += sizeof(*tk);
	}
	if (n > RT_MARK_STEP_MAX) {
		l = (struct rt_ev_loss *)p;
		memset(l, 0, sizeof(*l));
		fill_hdr(r, &l->hdr, RT_EV_LOSS, sizeof(*l), ts, t);
		l->since_ns = ts;
		l->count = n - RT_MARK_STEP_MAX;
		l->reason = RT_LOSS_STEP_TRUNC;
		l->lost_kind = RT_EV_MARK_STEP_MEMBER;
	}
	rt_mring_commit(r, &s, len, recs);
	return 0;
}

int rt_mark_w_step_begin(struct rt_mring *r, uint64_t step, uint32_t n, const char *const *ids)
{
	return rt_mark_w_step_begin_tokens(r, step, n, ids, NULL);
}

int rt_mark_w_step_end(struct rt_mring *r, uint64_t step)
{
	const __u32 len = sizeof(struct rt_mark_slot) + sizeof(struct rt_ev_mark_step);
	struct rt_ev_mark_step *e;
	struct rt_mring_slot s;
	int err;

	err = reserve(r, len, 1, &s);
	if (err)
		return err < 0 ? err : 0;
	e = (struct rt_ev_mark_step *)s.body;
	memset(e, 0, sizeof(*e));
	fill_hdr(r, &e->hdr, RT_EV_MARK_STEP_END, sizeof(*e), now_ns(), tid());
	e->step_id = step;
	rt_mring_commit(r, &s, len, 1);
	return 0;
}

int rt_mark_w_bind(struct rt_mring *r, const char *engine_id, const char *request_id)
{
	const __u32 len = sizeof(struct rt_mark_slot) + sizeof(struct rt_ev_mark_bind);
	struct rt_ev_mark_bind *e;
	struct rt_mring_slot s;
	int err;

	if (!engine_id || !request_id)
		return 0;
	err = reserve(r, len, 1, &s);
	if (err)
		return err < 0 ? err : 0;
	e = (struct rt_ev_mark_bind *)s.body;
	fill_hdr(r, &e->hdr, RT_EV_MARK_BIND, sizeof(*e), now_ns(), tid());
	copy_id(e->engine_id, engine_id);
	copy_id(e->request_id, request_id);
	rt_mring_commit(r, &s, len, 1);
	return 0;
}
