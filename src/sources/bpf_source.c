// SPDX-License-Identifier: BSD-2-Clause
/*
 * The BPF source: lifetime, traced set, draining, loss reporting, stats.
 *
 * The three BPF objects share one traced_tgids map, one ring and one
 * counter array: the sched object creates them and the others reuse its fds
 * (bpf_map__reuse_fd), so records from every program land in one ring, in
 * one watermark domain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <reqtrace/marker.h>

#include "common/log.h"
#include "bpf_internal.h"

#include "rt_bpf_shared.h"

#include "marker.skel.h"
#include "sched.skel.h"
#include "sock.skel.h"

_Static_assert(RT_BPF_MARK_STEP_MAX == RT_MARK_STEP_MAX, "bpf and marker.h disagree");
_Static_assert(RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX + sizeof(struct rt_ev_sock_io) <= RT_EVENT_MAX,
	       "a socket record must fit RT_EVENT_MAX");

__u64 rt_bpf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Smallest body a record of each kind the BPF programs emit must have. */
static size_t min_size(unsigned int kind)
{
	switch (kind) {
	case RT_EV_SCHED_SWITCH:
		return sizeof(struct rt_ev_sched_switch);
	case RT_EV_SCHED_WAKING:
		return sizeof(struct rt_ev_sched_waking);
	case RT_EV_TASK_NEW:
		return sizeof(struct rt_ev_task_new);
	case RT_EV_PROC_EXEC:
		return sizeof(struct rt_ev_proc_exec);
	case RT_EV_PROC_EXIT:
		return sizeof(struct rt_ev_proc_exit);
	case RT_EV_SOCK_ACCEPT:
	case RT_EV_SOCK_CONNECT:
		return sizeof(struct rt_ev_sock_conn);
	case RT_EV_SOCK_RECV:
	case RT_EV_SOCK_SEND:
		return sizeof(struct rt_ev_sock_io);
	case RT_EV_SOCK_CLOSE:
	case RT_EV_SOCK_SHUTDOWN:
		return sizeof(struct rt_ev_sock_close);
	case RT_EV_SOCK_ARRIVAL:
		return sizeof(struct rt_ev_sock_arrival);
	case RT_EV_MARK_BEGIN:
	case RT_EV_MARK_END:
		return sizeof(struct rt_ev_mark);
	case RT_EV_MARK_STEP_BEGIN:
	case RT_EV_MARK_STEP_MEMBER:
	case RT_EV_MARK_STEP_END:
		return sizeof(struct rt_ev_mark_step);
	case RT_EV_MARK_BIND:
		return sizeof(struct rt_ev_mark_bind);
	case RT_EV_MARK_STEP_TOKENS:
		return sizeof(struct rt_ev_mark_step_tokens);
	case RT_EV_CUDA_API_ENTER:
	case RT_EV_CUDA_API_EXIT:
		return sizeof(struct rt_ev_cuda_api);
	case RT_EV_NCCL_ENTER:
		return sizeof(struct rt_ev_nccl);
	case RT_EV_ZMQ_MSG:
		return sizeof(struct rt_ev_zmq_msg);
	case RT_EV_PACK_CALL:
		return sizeof(struct rt_ev_pack_call);
	case RT_EV_PACK_BATCH:
		return sizeof(struct rt_ev_pack_batch);
	case RT_EV_LOSS:
		return sizeof(struct rt_ev_loss);
	default:
		return 0; /* not ours: rejected */
	}
}

static bool valid_record(const struct rt_event_hdr *h, size_t size)
{
	const struct rt_ev_sock_io *io = (const void *)h;
	size_t need;

	if (size < sizeof(*h) || h->size < sizeof(*h) || h->size > size || h->size > RT_EVENT_MAX ||
	    h->size % RT_EVENT_ALIGN)
		return false;
	need = min_size(h->kind);
	if (!need || h->size < need)
		return false;
	if (h->kind == RT_EV_SOCK_RECV || h->kind == RT_EV_SOCK_SEND)
		return sizeof(*io) + (size_t)io->head_len + io->tail_len <= h->size;
	if (h->kind == RT_EV_ZMQ_MSG)
		return sizeof(struct rt_ev_zmq_msg) +
			       (size_t)((const struct rt_ev_zmq_msg *)h)->len <=
		       h->size;
	return true;
}

static int on_sample(void *ctx, void *data, size_t size)
{
	struct rt_bpf_source *s = ctx;
	const struct rt_event_hdr *h = data;
	int err;

	if (!valid_record(h, size)) {
		s->invalid++;
		return 0;
	}
	s->events[h->kind]++;
	err = s->fn(h, s->fn_ctx);
	if (err < 0) {
		s->fn_err = err;
		return err;
	}
	return 0;
}

/* Sum of a per-CPU counter slot; *per_cpu (n_cpus values) is left in s->percpu. */
static int read_counter(const struct rt_bpf_source *s, __u32 slot, __u64 *sum, __u64 *max)
{
	int i;

	if (bpf_map_lookup_elem(s->counters_fd, &slot, s->percpu))
		return -errno;
	*sum = 0;
	if (max)
		*max = 0;
	for (i = 0; i < s->n_cpus; i++) {
		*sum += s->percpu[i];
		if (max && s->percpu[i] > *max)
			*max = s->percpu[i];
	}
	return 0;
}

static int emit_loss(struct rt_bpf_source *s, __u64 now, __u64 count, __u32 reason, __u32 kind)
{
	struct rt_ev_loss l = {
		.hdr = { .kind = RT_EV_LOSS,
			 .size = sizeof(l),
			 .source = s->opts.source_id,
			 .ts_ns = now },
		/* a lost record was stamped up to the margin before its failed reservation */
		.since_ns = s->loss_check_ns > RT_BPF_WATERMARK_MARGIN_NS ?
				    s->loss_check_ns - RT_BPF_WATERMARK_MARGIN_NS :
				    0,
		.count = count,
		.reason = reason,
		.lost_kind = kind,
	};

	s->events[RT_EV_LOSS]++;
	return s->fn(&l.hdr, s->fn_ctx);
}

/* Turns counter increases since the last call into LOSS records. */
static int report_losses(struct rt_bpf_source *s)
{
	__u64 now = rt_bpf_now_ns(), all, n;
	__u32 k;
	int err;

	err = read_counter(s, RT_CNT_LOST_ALL, &all, NULL);
	if (err)
		return err;
	if (all != s->lost_all_seen) {
		for (k = 0; k < RT_EV__MAX; k++) {
			err = read_counter(s, k, &n, NULL);
			if (err)
				return err;
			if (n == s->lost_seen[k])
				continue;
			err = emit_loss(s, now, n - s->lost_seen[k], RT_LOSS_RING_FULL, k);
			s->lost_seen[k] = n;
			if (err < 0)
				return err;
		}
		s->lost_all_seen = all;
	}
	if (s->invalid != s->invalid_reported) {
		n = s->invalid - s->invalid_reported;
		s->invalid_reported = s->invalid;
		err = emit_loss(s, now, n, RT_LOSS_INVALID, 0);
		if (err < 0)
			return err;
	}
	s->loss_check_ns = now;
	return 0;
}

static __u64 ring_avail(const struct rt_bpf_source *s)
{
	unsigned long cons, prod;

	if (!s->cons_pos || !s->prod_pos)
		return 0;
	cons = __atomic_load_n(s->cons_pos, __ATOMIC_ACQUIRE);
	prod = __atomic_load_n(s->prod_pos, __ATOMIC_ACQUIRE);
	return prod - cons;
}

int rt_bpf_source__consume(struct rt_bpf_source *s, rt_event_fn fn, void *ctx)
{
	__u64 start, avail;
	int n, err;

	if (!s || !fn)
		return -EINVAL;
	start = rt_bpf_now_ns();
	avail = ring_avail(s);
	if (avail > s->avail_max)
		s->avail_max = avail;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->fn_err = 0;
	n = ring_buffer__consume(s->rb);
	if (n < 0) {
		err = s->fn_err ? s->fn_err : n;
		goto out;
	}
	err = report_losses(s);
	if (err)
		goto out;
	if (start > s->watermark + RT_BPF_WATERMARK_MARGIN_NS)
		s->watermark = start - RT_BPF_WATERMARK_MARGIN_NS;
	err = n;
out:
	s->fn = NULL;
	s->fn_ctx = NULL;
	return err;
}

__u64 rt_bpf_source__watermark(const struct rt_bpf_source *s)
{
	return s ? s->watermark : 0;
}

int rt_bpf_source__epoll_fd(const struct rt_bpf_source *s)
{
	if (!s)
		return -EINVAL;
	return ring_buffer__epoll_fd(s->rb);
}

int rt_bpf_source__add_pid(struct rt_bpf_source *s, __u32 tgid, __u32 group_id)
{
	if (!s || !tgid)
		return -EINVAL;
	if (bpf_map_update_elem(s->targets_fd, &tgid, &group_id, BPF_ANY))
		return -errno;
	return 0;
}

int rt_bpf_source__remove_pid(struct rt_bpf_source *s, __u32 tgid)
{
	if (!s || !tgid)
		return -EINVAL;
	if (bpf_map_delete_elem(s->targets_fd, &tgid))
		return -errno;
	return 0;
}

int rt_bpf_source__watch_port(struct rt_bpf_source *s, __u16 port)
{
	if (!s || !port)
		return -EINVAL;
	if (!s->arrival_on)
		return -EOPNOTSUPP;
	/* the mmapped .bss: the programs see it at their next run, no syscall */
	__atomic_store_n(&s->sock->bss->rt_watch_ports[port], 1, __ATOMIC_RELAXED);
	return 0;
}

int rt_bpf_source__stats(const struct rt_bpf_source *s, struct rt_bpf_stats *st)
{
	__u64 sum, max;
	__u32 k;
	int i, err;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	memcpy(st->events, s->events, sizeof(st->events));
	for (k = 0; k < RT_EV__MAX; k++) {
		err = read_counter(s, k, &st->lost[k], NULL);
		if (err)
			return err;
	}
	err = read_counter(s, RT_CNT_LOST_ALL, &st->lost_total, NULL);
	if (err)
		return err;
	for (i = 0; i < s->n_cpus; i++)
		st->lost_per_cpu[i < RT_BPF_STATS_CPUS ? i : RT_BPF_STATS_CPUS - 1] += s->percpu[i];
	if ((err = read_counter(s, RT_CNT_TARGETS_FULL, &st->targets_full, NULL)) ||
	    (err = read_counter(s, RT_CNT_ARGS_FULL, &st->args_full, NULL)) ||
	    (err = read_counter(s, RT_CNT_STEP_TRUNC, &st->step_trunc, NULL)) ||
	    (err = read_counter(s, RT_CNT_ARRIVALS_FULL, &st->arrivals_full, NULL)) ||
	    (err = read_counter(s, RT_CNT_RING_PEAK, &sum, &max)))
		return err;
	st->invalid = s->invalid;
	st->ring_bytes = s->opts.ring_bytes;
	st->ring_avail = ring_avail(s);
	st->ring_avail_max = max > s->avail_max ? max : s->avail_max;
	if (st->ring_avail > st->ring_avail_max)
		st->ring_avail_max = st->ring_avail;
	st->watermark_ns = s->watermark;
	st->n_cpus = s->n_cpus;
	st->n_marker_libs = s->n_libs;
	st->arrival_on = s->arrival_on;
	st->links_pinned = (__u32)(s->n_pinned + s->n_pinned_lib);
	rt_bpf_gpu_stats(s, st);
	return 0;
}

/* A BPF ring is a power of two and a multiple of the page size. */
static __u32 round_pow2(__u32 v)
{
	long page = sysconf(_SC_PAGESIZE);
	__u32 p = page > RT_BPF_RING_MIN ? (__u32)page : RT_BPF_RING_MIN;

	while (p < v && p < RT_BPF_RING_MAX)
		p <<= 1;
	return p;
}

static int check_opts(const struct rt_bpf_source_opts *in, struct rt_bpf_source_opts *out)
{
	*out = *in;
	if (in->ring_bytes > RT_BPF_RING_MAX || in->head_bytes > RT_SOCK_HEAD_MAX ||
	    in->tail_bytes > RT_SOCK_TAIL_MAX) {
		elog("bpf source: ring_bytes <= %u, head_bytes <= %u, tail_bytes <= %u",
		     RT_BPF_RING_MAX, RT_SOCK_HEAD_MAX, RT_SOCK_TAIL_MAX);
		return -EINVAL;
	}
	out->ring_bytes = round_pow2(in->ring_bytes ? in->ring_bytes : RT_BPF_RING_DEFAULT);
	if (!out->max_targets)
		out->max_targets = RT_BPF_TARGETS_MAX_DEFAULT;
	if (!in->head_bytes && !in->tail_bytes) {
		out->head_bytes = RT_SOCK_HEAD_DEFAULT;
		out->tail_bytes = RT_SOCK_TAIL_DEFAULT;
	}
	return 0;
}

/*
 * Sets an opened object's rodata and shared maps: the first object (sched)
 * sizes them, the later ones reuse its fds.
 */
int rt_bpf_configure(struct rt_bpf_source *s, struct bpf_map *targets, struct bpf_map *ring,
		     struct bpf_map *counters, volatile __u32 *source_id,
		     volatile __u64 *wake_bytes)
{
	int err;

	*source_id = s->opts.source_id;
	*wake_bytes = s->opts.ring_bytes / 8;
	if (s->ring_fd < 0) {
		if ((err = bpf_map__set_max_entries(targets, s->opts.max_targets)) ||
		    (err = bpf_map__set_max_entries(ring, s->opts.ring_bytes)))
			return err;
		return 0;
	}
	if ((err = bpf_map__reuse_fd(targets, s->targets_fd)) ||
	    (err = bpf_map__reuse_fd(ring, s->ring_fd)) ||
	    (err = bpf_map__reuse_fd(counters, s->counters_fd)))
		return err;
	return 0;
}

static int load_objects(struct rt_bpf_source *s)
{
	const char *what;
	int err;

	what = "opening sched.bpf.o";
	s->sched = sched_bpf__open();
	if (!s->sched)
		goto fail_errno;
	what = "loading sched.bpf.o";
	err = rt_bpf_configure(s, s->sched->maps.traced_tgids, s->sched->maps.rt_ring,
			       s->sched->maps.rt_counters, &s->sched->rodata->rt_source_id,
			       &s->sched->rodata->rt_wake_bytes);
	if (err || (err = sched_bpf__load(s->sched)))
		goto fail;
	s->targets_fd = bpf_map__fd(s->sched->maps.traced_tgids);
	s->ring_fd = bpf_map__fd(s->sched->maps.rt_ring);
	s->counters_fd = bpf_map__fd(s->sched->maps.rt_counters);

	what = "opening sock.bpf.o";
	s->sock = sock_bpf__open();
	if (!s->sock)
		goto fail_errno;
	what = "loading sock.bpf.o";
	rt_bpf_sock_pick(s);
	s->sock->rodata->rt_head_bytes = s->opts.head_bytes;
	s->sock->rodata->rt_tail_bytes = s->opts.tail_bytes;
	err = rt_bpf_configure(s, s->sock->maps.traced_tgids, s->sock->maps.rt_ring,
			       s->sock->maps.rt_counters, &s->sock->rodata->rt_source_id,
			       &s->sock->rodata->rt_wake_bytes);
	if (err || (err = sock_bpf__load(s->sock)))
		goto fail;

	what = "opening marker.bpf.o";
	s->marker = marker_bpf__open();
	if (!s->marker)
		goto fail_errno;
	what = "loading marker.bpf.o";
	err = rt_bpf_configure(s, s->marker->maps.traced_tgids, s->marker->maps.rt_ring,
			       s->marker->maps.rt_counters, &s->marker->rodata->rt_source_id,
			       &s->marker->rodata->rt_wake_bytes);
	if (err || (err = marker_bpf__load(s->marker)))
		goto fail;
	return 0;

fail_errno:
	err = -errno;
fail:
	rt_bpf_env_explain(what, err);
	return err;
}

static int map_ring(struct rt_bpf_source *s)
{
	void *p;

	s->page_size = sysconf(_SC_PAGESIZE);
	/* read-only views; libbpf's own mapping does the consuming */
	p = mmap(NULL, s->page_size, PROT_READ, MAP_SHARED, s->ring_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	s->cons_pos = p;
	p = mmap(NULL, s->page_size, PROT_READ, MAP_SHARED, s->ring_fd, s->page_size);
	if (p == MAP_FAILED)
		return -errno;
	s->prod_pos = p;
	return 0;
}

struct rt_bpf_source *rt_bpf_source__new(const struct rt_bpf_source_opts *opts)
{
	struct rt_bpf_source *s;
	int err;

	if (!opts) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->ring_fd = s->targets_fd = s->counters_fd = -1;
	err = check_opts(opts, &s->opts);
	if (err)
		goto cleanup;
	/* ours to keep: the caller's string need not outlive this call */
	if (opts->pin_root && opts->pin_root[0]) {
		if ((size_t)snprintf(s->pin_root, sizeof(s->pin_root), "%s", opts->pin_root) >=
		    sizeof(s->pin_root)) {
			elog("bpf source: pin directory longer than %zu bytes",
			     sizeof(s->pin_root) - 1);
			err = -ENAMETOOLONG;
			goto cleanup;
		}
		s->opts.pin_root = s->pin_root;
	}
	rt_bpf_env_set_print(opts->verbose);
	err = rt_bpf_env_check();
	if (err)
		goto cleanup;

	err = load_objects(s);
	if (err)
		goto cleanup;

	s->n_cpus = libbpf_num_possible_cpus();
	if (s->n_cpus <= 0) {
		err = s->n_cpus ? s->n_cpus : -EINVAL;
		goto cleanup;
	}
	s->percpu = calloc(s->n_cpus, sizeof(*s->percpu));
	if (!s->percpu) {
		err = -ENOMEM;
		goto cleanup;
	}
	s->rb = ring_buffer__new(s->ring_fd, on_sample, s, NULL);
	if (!s->rb) {
		err = -errno;
		elog("bpf ring buffer: %s", strerror(-err));
		goto cleanup;
	}
	err = map_ring(s);
	if (err) {
		elog("mapping the ring's positions: %s", strerror(-err));
		goto cleanup;
	}

	/* no program can stamp a record before this */
	s->watermark = rt_bpf_now_ns();
	s->loss_check_ns = s->watermark;
	err = rt_bpf_attach_tracepoints(s);
	if (err)
		goto cleanup;
	/* ours first, then the pins a killed daemon left: removing them lets the
	 * kernel detach its links, which would delay attaching our own */
	if (!rt_bpf_pin_links(s))
		rt_bpf_sweep_pins(s);
	dlog("bpf source %u: ring %u B, head %u B, tail %u B, %u targets max, %d CPUs",
	     s->opts.source_id, s->opts.ring_bytes, s->opts.head_bytes, s->opts.tail_bytes,
	     s->opts.max_targets, s->n_cpus);
	return s;

cleanup:
	rt_bpf_source__free(s);
	errno = -err;
	return NULL;
}

void rt_bpf_source__free(struct rt_bpf_source *s)
{
	if (!s)
		return;
	rt_bpf_unpin_links(s);
	rt_bpf_detach_all(s);
	rt_bpf_gpu_free(s);
	rt_bpf_zmq_free(s);
	rt_bpf_pack_free(s);
	ring_buffer__free(s->rb);
	if (s->cons_pos)
		munmap((void *)s->cons_pos, s->page_size);
	if (s->prod_pos)
		munmap((void *)s->prod_pos, s->page_size);
	marker_bpf__destroy(s->marker);
	sock_bpf__destroy(s->sock);
	sched_bpf__destroy(s->sched);
	free(s->percpu);
	free(s);
}
