// SPDX-License-Identifier: GPL-2.0
/*
 * Uprobes on the marker API (include/reqtrace/marker.h, docs/events.md
 * "Markers"). The loader attaches them per library file with
 * bpf_program__attach_uprobe_opts(pid = -1): a uprobe lives on the inode, so
 * one attachment covers every process mapping the file, and the tgid filter
 * here keeps untraced processes out.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include <reqtrace/event.h>
#include "rt_bpf_shared.h"
#include "rt_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Copy a caller's id (at most RT_ID_LEN - 1 bytes, NUL-terminated); returns its length. */
static __always_inline __u32 read_id(char *dst, const char *src)
{
	long n;

	if (!src)
		return 0;
	n = bpf_probe_read_user_str(dst, RT_ID_LEN, src);
	return n > 0 ? n - 1 : 0;
}

static __always_inline int mark(__u16 kind, const char *id, int phase)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct rt_ev_mark *e;
	__u64 ts;

	/* marker.h: a NULL id is ignored */
	if (!id || !rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_mark, kind);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, kind, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->phase = phase;
	e->id_len = read_id(e->request_id, id);
	RT_SUBMIT(e);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_mark_begin, const char *id, int phase)
{
	return mark(RT_EV_MARK_BEGIN, id, phase);
}

SEC("uprobe")
int BPF_KPROBE(rt_mark_end, const char *id, int phase)
{
	return mark(RT_EV_MARK_END, id, phase);
}

struct step_ctx {
	__u64 ts;
	__u64 pid_tgid;
	__u64 step;
	__u64 ids; /* const char *const * in the caller */
	__u64 tokens; /* const __u32 * in the caller; 0: rt_mark_step_begin */
	__u32 n;
};

static long step_member(__u32 i, struct step_ctx *c)
{
	struct rt_ev_mark_step *e;
	const char *id = NULL;

	e = RT_RESERVE(struct rt_ev_mark_step, RT_EV_MARK_STEP_MEMBER);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_MARK_STEP_MEMBER, sizeof(*e), c->ts, c->pid_tgid >> 32,
	       (__u32)c->pid_tgid);
	e->step_id = c->step;
	e->n_requests = c->n;
	e->index = i;
	/* a NULL or unreadable entry still gets its member record, with an empty id */
	bpf_probe_read_user(&id, sizeof(id), (void *)(c->ids + (__u64)i * sizeof(id)));
	read_id(e->request_id, id);
	RT_SUBMIT(e);
	if (c->tokens) {
		struct rt_ev_mark_step_tokens *t;
		__u32 tok = 0;

		/* an unreadable count is left out: the step is then split equally */
		if (bpf_probe_read_user(&tok, sizeof(tok), (void *)(c->tokens + (__u64)i * 4)))
			return 0;
		t = RT_RESERVE(struct rt_ev_mark_step_tokens, RT_EV_MARK_STEP_TOKENS);
		if (!t)
			return 0;
		rt_hdr(&t->hdr, RT_EV_MARK_STEP_TOKENS, sizeof(*t), c->ts, c->pid_tgid >> 32,
		       (__u32)c->pid_tgid);
		t->step_id = c->step;
		t->index = i;
		t->tokens = tok;
		RT_SUBMIT(t);
	}
	return 0;
}

static __always_inline int step_begin(struct step_ctx c)
{
	struct rt_ev_mark_step *e;
	struct rt_ev_loss *l;
	__u32 members, n = c.n;

	c.pid_tgid = bpf_get_current_pid_tgid();
	if (!rt_traced(c.pid_tgid >> 32))
		return 0;
	c.ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_mark_step, RT_EV_MARK_STEP_BEGIN);
	if (e) {
		rt_hdr(&e->hdr, RT_EV_MARK_STEP_BEGIN, sizeof(*e), c.ts, c.pid_tgid >> 32,
		       (__u32)c.pid_tgid);
		e->step_id = c.step;
		e->n_requests = n;
		RT_SUBMIT(e);
	}
	members = n < RT_BPF_MARK_STEP_MAX ? n : RT_BPF_MARK_STEP_MAX;
	if (c.ids && members)
		bpf_loop(members, step_member, &c, 0);
	if (n <= RT_BPF_MARK_STEP_MAX)
		return 0;

	rt_count(RT_CNT_STEP_TRUNC);
	l = RT_RESERVE(struct rt_ev_loss, RT_EV_LOSS);
	if (!l)
		return 0;
	rt_hdr(&l->hdr, RT_EV_LOSS, sizeof(*l), c.ts, c.pid_tgid >> 32, (__u32)c.pid_tgid);
	l->since_ns = c.ts;
	l->count = n - RT_BPF_MARK_STEP_MAX;
	l->reason = RT_LOSS_STEP_TRUNC;
	l->lost_kind = RT_EV_MARK_STEP_MEMBER;
	RT_SUBMIT(l);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_mark_step_begin, __u64 step, __u32 n, const char *const *ids)
{
	struct step_ctx c = { .step = step, .ids = (__u64)ids, .n = n };

	return step_begin(c);
}

/* The same with token counts: a STEP_TOKENS record after each member. */
SEC("uprobe")
int BPF_KPROBE(rt_mark_step_begin_tokens, __u64 step, __u32 n, const char *const *ids,
	       const __u32 *tokens)
{
	struct step_ctx c = { .step = step, .ids = (__u64)ids, .tokens = (__u64)tokens, .n = n };

	return step_begin(c);
}

SEC("uprobe")
int BPF_KPROBE(rt_mark_step_end, __u64 step)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct rt_ev_mark_step *e;
	__u64 ts;

	if (!rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_mark_step, RT_EV_MARK_STEP_END);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_MARK_STEP_END, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	e->step_id = step;
	RT_SUBMIT(e);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rt_mark_bind, const char *engine_id, const char *request_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct rt_ev_mark_bind *e;
	__u64 ts;

	if (!engine_id || !request_id || !rt_traced(pid_tgid >> 32))
		return 0;
	ts = bpf_ktime_get_ns();
	e = RT_RESERVE(struct rt_ev_mark_bind, RT_EV_MARK_BIND);
	if (!e)
		return 0;
	rt_hdr(&e->hdr, RT_EV_MARK_BIND, sizeof(*e), ts, pid_tgid >> 32, (__u32)pid_tgid);
	read_id(e->engine_id, engine_id);
	read_id(e->request_id, request_id);
	RT_SUBMIT(e);
	return 0;
}
