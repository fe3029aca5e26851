/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF source: loads bpf/sched.bpf.c, sock.bpf.c and marker.bpf.c (and
 * gpu.bpf.c at the first rt_bpf_source__attach_gpu()), attaches them,
 * keeps the in-kernel set of traced processes and drains the one ring they
 * all write to. The daemon owns it inside its libuv loop:
 * rt_bpf_source__epoll_fd() goes into a uv_poll_t, and
 * rt_bpf_source__consume() runs on its readiness and on a timer (wakeups are
 * batched: the kernel side wakes the reader only once the ring is 1/8 full).
 *
 * Not thread-safe: one thread calls everything.
 */
#ifndef RT_SOURCES_BPF_SOURCE_H
#define RT_SOURCES_BPF_SOURCE_H

#include <stdbool.h>

#include <reqtrace/event.h>

#include "sources/source.h"

#define RT_BPF_RING_DEFAULT (8u << 20)
#define RT_BPF_RING_MIN 4096u
#define RT_BPF_RING_MAX (1u << 30)
#define RT_BPF_TARGETS_MAX_DEFAULT 4096u
#define RT_BPF_MARKER_LIBS_MAX 64 /* distinct marker library files */
#define RT_BPF_GPU_LIBS_MAX 32 /* distinct libcuda/libnccl files */
#define RT_BPF_STATS_CPUS 256 /* lost_per_cpu entries; higher CPUs fold into the last */

/*
 * How far the watermark trails the start of the last complete drain. A BPF
 * program stamps ts_ns first and commits its record last; the record stays
 * invisible in between, and it also hides every record reserved after it
 * (the consumer stops at the first uncommitted record). So a record missed
 * by a drain that started at T was stamped after T - 2 * D, D being the
 * longest a program runs from stamp to commit. Programs run with preemption
 * off, never fault (user reads that would fault fail instead) and are
 * bounded by the verifier, so D is microseconds plus interrupt handling;
 * 10 ms leaves a wide margin (a vCPU stalled longer by its hypervisor can
 * still produce a late record, which the merge counts).
 */
#define RT_BPF_WATERMARK_MARGIN_NS 10000000ULL

struct rt_bpf_source_opts {
	__u32 source_id; /* hdr.source of every record */
	__u32 ring_bytes; /* 0: RT_BPF_RING_DEFAULT; rounded up to a power of two */
	__u32 max_targets; /* traced tgids at once; 0: RT_BPF_TARGETS_MAX_DEFAULT */
	__u16 head_bytes, tail_bytes; /* payload capture; 0 and 0: 512 and 1024 */
	bool verbose; /* forward libbpf's debug output (at debug level) */
	bool gpu_per_function; /* GPU uprobes as one perf event each, even where uprobe.multi works */
	/* a directory in bpffs where the tracepoint links are pinned while the
	 * daemon runs (docs/deploy.md, "Restart"); NULL or "": not pinned */
	const char *pin_root;
};

struct rt_bpf_source;

/*
 * Mounts tracefs at /sys/kernel/tracing if needed, opens, configures, loads
 * and attaches the scheduler and socket programs (the marker programs are
 * loaded; rt_bpf_source__attach_markers() attaches them). Logs one clear
 * line naming what is missing (privileges, tracefs, kernel BTF, a
 * tracepoint). Returns NULL with errno set: EPERM without CAP_BPF and
 * CAP_PERFMON, EINVAL for bad options, ENOENT/EOPNOTSUPP for a missing
 * kernel feature.
 */
struct rt_bpf_source *rt_bpf_source__new(const struct rt_bpf_source_opts *opts);

/*
 * Traces process `tgid` (all its threads) as part of target group
 * `group_id`. Processes it creates from now on are added by the kernel side
 * with the same group; children that exist already must be added too.
 * 0, -EINVAL (tgid 0), -E2BIG (max_targets reached) or another -errno.
 */
int rt_bpf_source__add_pid(struct rt_bpf_source *s, __u32 tgid, __u32 group_id);

/*
 * Stops tracing `tgid` (not the processes it created, which the kernel side
 * added with their own tgid: TASK_NEW records name them). 0, or -ENOENT
 * when it was not traced (an exited process leaves the set by itself).
 */
int rt_bpf_source__remove_pid(struct rt_bpf_source *s, __u32 tgid);

/*
 * Attaches the marker uprobes to the library file at `lib_path` (use
 * /proc/PID/root/... for a library inside a container). A uprobe belongs to
 * the file, so one call covers every process that maps it; calling again for
 * the same file (same device and inode, under any path) returns 0 at once.
 * -ENOENT (no such file), -ESRCH (a marker symbol is missing), -ENOSPC
 * (RT_BPF_MARKER_LIBS_MAX files), or another -errno.
 */
int rt_bpf_source__attach_markers(struct rt_bpf_source *s, const char *lib_path);

/*
 * Attaches the GPU uprobes (bpf/gpu.bpf.c, docs/gpu.md) to the libcuda or
 * libnccl file at `lib_path` (/proc/PID/root/... for a container): one
 * uprobe per address of every function of the probe table
 * (src/probes/gpu_probes.c) the file exports, a uretprobe too for the
 * timed ones. The GPU programs are loaded at the first call. Like the
 * markers, a uprobe belongs to the file: one call covers every process that
 * maps it, and calling again for the same file (device and inode) returns
 * the first call's result at once. 0 (some probes may have failed: see the
 * stats), -ENOENT (no such file), -ESRCH (no probed symbol), -ENOEXEC (not
 * an ELF library), -ENOSPC (RT_BPF_GPU_LIBS_MAX files), or another -errno.
 */
int rt_bpf_source__attach_gpu(struct rt_bpf_source *s, const char *lib_path);

struct rt_packs;
struct rt_pack_stats;

/*
 * Engine packs (docs/packs.md, bpf/pack.bpf.c): examines every ELF file
 * process `pid` maps executable (/proc/PID/maps: its program and libraries,
 * through /proc/PID/root), each file once for the source's life (device and
 * inode), and attaches the uprobes of the pack it matches
 * (rt_pack_match_file). Idempotent and cheap on files already seen: call it
 * when a process becomes a target and again later (a library dlopen()ed
 * after start, an exec). `packs` must outlive the source and be the same
 * set at every call (its indexes are the records' pack ids; -EBUSY
 * otherwise). The pack object is loaded at the first file that matches.
 * Returns 0 (see rt_bpf_source__pack_stats for what matched and failed),
 * -ENOENT when the process is gone, or the first attach error.
 */
int rt_bpf_source__attach_packs(struct rt_bpf_source *s, const struct rt_packs *packs, __u32 pid);

/* Per-pack outcomes and the probe's counters; zeroes before the first attach call. */
void rt_bpf_source__pack_stats(const struct rt_bpf_source *s, struct rt_pack_stats *st);

/*
 * Watches TCP port `port` (host order, a target's listener) for arrival
 * records (RT_EV_SOCK_ARRIVAL, docs/events.md "Arrival"): connections
 * established on it from now on get their handshake and data arrival
 * times; connections already open get data arrival times from their next
 * read by a traced process on. The kernel side also learns the port of
 * every connection a traced process accepts, so calling this is needed only
 * for connections that arrive before the target's first accept. A port is
 * never unwatched. Idempotent; no syscall (a store into mapped BPF memory).
 * 0, -EINVAL (port 0), or -EOPNOTSUPP when the kernel lacks the arrival
 * tracepoints (the source then runs without arrival records).
 */
int rt_bpf_source__watch_port(struct rt_bpf_source *s, __u16 port);

/* An fd that polls readable when the ring has records to drain. */
int rt_bpf_source__epoll_fd(const struct rt_bpf_source *s);

/*
 * Drains the ring, calling fn for every record, then emits RT_EV_LOSS
 * records (pid 0: unknown) for reservations the BPF programs failed since
 * the last call, one per lost kind, with since_ns..ts_ns covering the
 * failures, and one RT_LOSS_INVALID record for records that failed
 * validation (size below the header, not a multiple of 8, beyond the sample
 * or RT_EVENT_MAX, unknown kind, or smaller than its kind's body: those are
 * skipped). Returns the number of records delivered, or the first negative
 * value fn returned (the record fn failed on is consumed, not redelivered),
 * or another -errno. Advances the watermark only when the drain completes.
 */
int rt_bpf_source__consume(struct rt_bpf_source *s, rt_event_fn fn, void *ctx);

/*
 * CLOCK_MONOTONIC ns before which this source delivers no more records: the
 * time taken just before the last complete drain minus
 * RT_BPF_WATERMARK_MARGIN_NS (see there why that is safe); before the first
 * drain, the time just before the programs were attached.
 */
__u64 rt_bpf_source__watermark(const struct rt_bpf_source *s);

struct rt_bpf_stats {
	/* records delivered per kind, the LOSS records consume() makes included */
	__u64 events[RT_EV__MAX];
	__u64 lost[RT_EV__MAX]; /* failed ring reservations per kind */
	__u64 lost_total;
	__u64 invalid; /* records that failed validation */
	__u64 targets_full; /* children the kernel could not add to the traced set */
	__u64 args_full; /* socket syscalls not followed: per-thread argument map full */
	__u64 step_trunc; /* marker step members beyond RT_MARK_STEP_MAX */
	__u64 ring_bytes; /* ring size */
	__u64 ring_avail; /* unread bytes now */
	__u64 ring_avail_max; /* most unread bytes seen (by a program at a submit, or a drain) */
	__u64 watermark_ns;
	__u32 n_cpus; /* possible CPUs; lost_per_cpu holds min(n_cpus, RT_BPF_STATS_CPUS) */
	__u32 n_marker_libs;
	__u64 lost_per_cpu[RT_BPF_STATS_CPUS];
	/* GPU uprobes (rt_bpf_source__attach_gpu) */
	__u32 n_gpu_libs; /* library files attached (or tried) */
	__u64 gpu_probes; /* uprobes and uretprobes attached */
	__u64 gpu_aliases; /* probed names sharing an entry with another name (pncclX) */
	__u64 gpu_attach_failed; /* functions whose uprobe could not be attached */
	__u64 gpu_calls_full; /* timed calls not followed: per-thread call map full */
	__u64 gpu_unmatched_ret; /* returns whose entry was overwritten by a nested timed call */
	__u64 gpu_bad_cookie; /* hits naming no known api (cannot happen unless maps disagree) */
	/* arrival records (bpf/arrival.bpf.h) */
	__u64 arrivals_full; /* connections not followed: the arrivals map was full */
	__u32 arrival_on; /* 1: the arrival tracepoints are attached */
	__u32 links_pinned; /* tracepoint and marker links pinned in bpffs (docs/deploy.md, "Restart") */
};

/* Fills *st (reads the kernel's per-CPU counters: a few dozen syscalls). 0 or -errno. */
int rt_bpf_source__stats(const struct rt_bpf_source *s, struct rt_bpf_stats *st);

/* Detaches everything and frees s. NULL is fine. */
void rt_bpf_source__free(struct rt_bpf_source *s);

#endif /* RT_SOURCES_BPF_SOURCE_H */
