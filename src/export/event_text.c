// SPDX-License-Identifier: BSD-2-Clause
#include "export/event_text.h"

#include "common/event_check.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

/* Payload bytes, printable and bounded: this is for eyes, not for parsing. */
static void bytes(FILE *f, const __u8 *p, unsigned int n, unsigned int max)
{
	unsigned int i;

	fputc('"', f);
	for (i = 0; i < n && i < max; i++) {
		if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\r')
			fputs("\\r", f);
		else if (isprint(p[i]))
			fputc(p[i], f);
		else
			fprintf(f, "\\x%02x", p[i]);
	}
	fputc('"', f);
	if (n > max)
		fputs("...", f);
}

void rt_event_print(FILE *f, const struct rt_event_hdr *ev)
{
	fprintf(f, "%" PRIu64 " src=%u %-12s pid=%u tid=%u", (uint64_t)ev->ts_ns, ev->source,
		rt_event_kind_name(ev->kind), ev->pid, ev->tid);
	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH: {
		const struct rt_ev_sched_switch *e = (const void *)ev;

		fprintf(f, " %u/%u(%.16s) state=%u -> %u/%u(%.16s) cpu=%u", e->prev_pid,
			e->prev_tid, e->prev_comm, e->prev_state, e->next_pid, e->next_tid,
			e->next_comm, e->cpu);
		break;
	}
	case RT_EV_SCHED_WAKING: {
		const struct rt_ev_sched_waking *e = (const void *)ev;

		fprintf(f, " target=%u/%u", e->target_pid, e->target_tid);
		break;
	}
	case RT_EV_TASK_NEW: {
		const struct rt_ev_task_new *e = (const void *)ev;

		fprintf(f, " child=%u/%u flags=%#" PRIx64, e->child_pid, e->child_tid,
			(uint64_t)e->clone_flags);
		break;
	}
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND: {
		const struct rt_ev_sock_io *e = (const void *)ev;

		fprintf(f, " fd=%d ret=%" PRId64 " enter=%" PRIu64 " sys=%u head=%u tail=%u ",
			e->fd, (int64_t)e->ret, (uint64_t)e->enter_ns, e->syscall, e->head_len,
			e->tail_len);
		if (sizeof(*e) + (size_t)e->head_len + e->tail_len <= ev->size)
			bytes(f, e->data, (unsigned)e->head_len + e->tail_len, 120);
		break;
	}
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT: {
		const struct rt_ev_sock_conn *e = (const void *)ev;

		fprintf(f, " fd=%d ret=%" PRId64 " lport=%u rport=%u", e->fd, (int64_t)e->ret,
			e->local.port, e->peer.port);
		break;
	}
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN: {
		const struct rt_ev_sock_close *e = (const void *)ev;

		fprintf(f, " fd=%d ret=%" PRId64, e->fd, (int64_t)e->ret);
		break;
	}
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END: {
		const struct rt_ev_mark *e = (const void *)ev;

		fprintf(f, " phase=%u id=%.64s", e->phase, e->request_id);
		break;
	}
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_END: {
		const struct rt_ev_mark_step *e = (const void *)ev;

		fprintf(f, " step=%" PRIu64 " n=%u idx=%u id=%.64s", (uint64_t)e->step_id,
			e->n_requests, e->index, e->request_id);
		break;
	}
	case RT_EV_LOSS: {
		const struct rt_ev_loss *e = (const void *)ev;

		fprintf(f, " count=%" PRIu64 " reason=%u since=%" PRIu64, (uint64_t)e->count,
			e->reason, (uint64_t)e->since_ns);
		break;
	}
	case RT_EV_TARGET: {
		const struct rt_ev_target *e = (const void *)ev;

		fprintf(f, " group=%u:%.32s leave=%u", e->group_id, e->group, e->leave);
		break;
	}
	default:
		break;
	}
	fputc('\n', f);
}
