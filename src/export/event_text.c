// SPDX-License-Identifier: BSD-2-Clause
#include "export/event_text.h"

#include "common/event_check.h"
#include "probes/gpu_probes.h"

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

/* enum rt_pack_role as pack files name it (docs/packs.md) */
static const char *pack_role_name(unsigned int role)
{
	static const char *const names[] = { "?",    "tokenize", "detokenize", "decode",
					     "sync", "seq_rm",	 "region" };

	return role < sizeof(names) / sizeof(names[0]) ? names[role] : "?";
}

void rt_event_print(FILE *f, const struct rt_event_hdr *ev)
{
	fprintf(f, "%" PRIu64 " src=%u %-12s pid=%u tid=%u", (uint64_t)ev->ts_ns, ev->source,
		rt_event_kind_name(ev->kind), ev->pid, ev->tid);
	switch (ev->kind) {
	case RT_EV_SCHED_SWITCH: {
		const struct rt_ev_sched_switch *e = (const void *)ev;

		fprintf(f, " %u/%u(%.16s) state=%u -> %u/%u(%.16s) cpu=%u runtime=%llu/%llu",
			e->prev_pid, e->prev_tid, e->prev_comm, e->prev_state, e->next_pid,
			e->next_tid, e->next_comm, e->cpu, (unsigned long long)e->prev_runtime_ns,
			(unsigned long long)e->next_runtime_ns);
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
	case RT_EV_SOCK_ARRIVAL: {
		const struct rt_ev_sock_arrival *e = (const void *)ev;

		fprintf(f, " fd=%d data=%" PRIu64 " established=%" PRIu64 " flags=%#x%s", e->fd,
			(uint64_t)e->data_ns, (uint64_t)e->established_ns, e->flags,
			e->flags & RT_ARR_LEFT_UNREAD ? "(left_unread)" : "");
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
	case RT_EV_MARK_STEP_TOKENS: {
		const struct rt_ev_mark_step_tokens *e = (const void *)ev;

		fprintf(f, " step=%" PRIu64 " idx=%u tokens=%u", (uint64_t)e->step_id, e->index,
			e->tokens);
		break;
	}
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT: {
		const struct rt_ev_cuda_api *e = (const void *)ev;
		const struct rt_gpu_probe *pr = e->corr_id ? NULL : rt_gpu_probe_get(e->api);

		fprintf(f,
			" api=%u(%s) class=%s enter=%" PRIu64 " stream=%#" PRIx64 " bytes=%" PRIu64
			" copy=%s corr=%" PRIu64 " ret=%d",
			e->api, pr ? pr->name : "-", rt_gpu_class_name(e->api_class),
			(uint64_t)e->enter_ns, (uint64_t)e->stream, (uint64_t)e->bytes,
			rt_gpu_copy_kind_name(e->copy_kind), (uint64_t)e->corr_id, e->ret);
		break;
	}
	case RT_EV_NCCL_ENTER:
	case RT_EV_NCCL_EXIT: {
		const struct rt_ev_nccl *e = (const void *)ev;

		fprintf(f, " op=%s comm=%#" PRIx64 " stream=%#" PRIx64 " count=%" PRIu64 " peer=%d",
			rt_gpu_nccl_op_name(e->op), (uint64_t)e->comm, (uint64_t)e->stream,
			(uint64_t)e->count, e->peer);
		break;
	}
	case RT_EV_GPU_KERNEL: {
		const struct rt_ev_gpu_kernel *e = (const void *)ev;

		fprintf(f,
			" end=%" PRIu64 " dur_ns=%" PRIu64 " corr=%" PRIu64
			" dev=%u stream=%u name=%.64s",
			(uint64_t)e->end_ns, (uint64_t)(e->end_ns - ev->ts_ns),
			(uint64_t)e->corr_id, e->device, e->stream, e->name);
		break;
	}
	case RT_EV_GPU_MEMCPY: {
		const struct rt_ev_gpu_memcpy *e = (const void *)ev;

		fprintf(f,
			" end=%" PRIu64 " dur_ns=%" PRIu64 " corr=%" PRIu64 " bytes=%" PRIu64
			" copy=%s",
			(uint64_t)e->end_ns, (uint64_t)(e->end_ns - ev->ts_ns),
			(uint64_t)e->corr_id, (uint64_t)e->bytes,
			rt_gpu_copy_kind_name(e->copy_kind));
		break;
	}
	case RT_EV_GPU_SYNC: {
		const struct rt_ev_gpu_sync *e = (const void *)ev;

		fprintf(f, " end=%" PRIu64 " corr=%" PRIu64 " type=%u stream=%u",
			(uint64_t)e->end_ns, (uint64_t)e->corr_id, e->sync_type, e->stream);
		break;
	}
	case RT_EV_PACK_CALL: {
		const struct rt_ev_pack_call *e = (const void *)ev;

		fprintf(f, " pack=%u role=%s %s args=%lld,%lld,%lld,%lld", e->pack,
			pack_role_name(e->role), e->ret ? "return" : "entry", (long long)e->args[0],
			(long long)e->args[1], (long long)e->args[2], (long long)e->args[3]);
		if (e->ret)
			fprintf(f, " retval=%lld", (long long)e->retval);
		break;
	}
	case RT_EV_PACK_BATCH: {
		const struct rt_ev_pack_batch *e = (const void *)ev;
		__u32 i;

		fprintf(f, " pack=%u n_tokens=%u n_read=%u flags=%#x seqs=%u dropped=%u", e->pack,
			e->n_tokens, e->n_read, e->flags, e->n_seqs, e->seqs_dropped);
		/* seq:tokens:pos_min-pos_max:outputs */
		for (i = 0; i < e->n_seqs && i < RT_PACK_BATCH_SEQS; i++)
			fprintf(f, " %d:%u:%d-%d:%u", e->seqs[i].seq_id, e->seqs[i].n_tokens,
				e->seqs[i].pos_min, e->seqs[i].pos_max, e->seqs[i].n_logits);
		break;
	}
	case RT_EV_LINK_SAMPLE: {
		const struct rt_ev_link_sample *e = (const void *)ev;

		fprintf(f, " device=%u link=%s type=%s tx=%" PRIu64 " rx=%" PRIu64 " max_mbps=%u",
			e->device, e->link == RT_LINK_ALL ? "all" : "one",
			e->link_type == RT_LINK_PCIE   ? "pcie" :
			e->link_type == RT_LINK_NVLINK ? "nvlink" :
							 "unknown",
			(uint64_t)e->tx_bytes, (uint64_t)e->rx_bytes, e->max_mbps);
		break;
	}
	case RT_EV_ZMQ_MSG: {
		const struct rt_ev_zmq_msg *e = (const void *)ev;

		fprintf(f,
			" %s sock=%#" PRIx64 " msg=%#" PRIx64 " frame=%u off=%u len=%u flags=%#x"
			" enter=%" PRIu64 " ",
			e->dir == RT_ZMQ_SEND ? "send" :
			e->dir == RT_ZMQ_RECV ? "recv" :
						"?",
			(uint64_t)e->socket, (uint64_t)e->msg, e->frame_len, e->offset, e->len,
			e->flags, (uint64_t)e->enter_ns);
		if (sizeof(*e) + (size_t)e->len <= ev->size)
			bytes(f, e->data, e->len, 120);
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
