/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ZeroMQ frame capture (bpf/zmq.bpf.c, docs/events.md "ZeroMQ"): uprobes and
 * uretprobes on libzmq's zmq_msg_send and zmq_msg_recv, the two calls
 * pyzmq makes for every frame (docs/engines/vllm-v1.md "Capture"). Records
 * are RT_EV_ZMQ_MSG in the BPF source's one ring. Self-contained: the object
 * is loaded at the first attach and freed with the source.
 */
#ifndef RT_SOURCES_BPF_ZMQ_H
#define RT_SOURCES_BPF_ZMQ_H

#include <linux/types.h>

#include "sources/bpf_source.h"

#define RT_BPF_ZMQ_LIBS_MAX 16 /* distinct libzmq files */
#define RT_ZMQ_LIB_NAME "libzmq.so" /* what to look for in /proc/PID/maps */

/*
 * Attaches the four probes to the libzmq file at `lib_path`
 * (/proc/PID/root/... for a container). A uprobe belongs to the file: one
 * call covers every process mapping it; calling again for the same file
 * (device and inode) returns the first call's result at once. 0, -ENOENT
 * (no such file), -ESRCH (zmq_msg_send or zmq_msg_recv not exported),
 * -ENOSPC (RT_BPF_ZMQ_LIBS_MAX files), or another -errno.
 */
int rt_bpf_source__attach_zmq(struct rt_bpf_source *s, const char *lib_path);

struct rt_bpf_zmq_stats {
	__u32 n_libs; /* libzmq files attached (or tried) */
	__u64 frames; /* frames emitted */
	__u64 cut; /* frames longer than the capture bound (RT_ZMQ_CUT) */
	__u64 cut_bytes; /* their bytes not read */
	__u64 calls_full; /* calls not followed: per-thread call map full */
	__u64 unmatched; /* returns without their entry */
	__u64 layout; /* messages of an unknown zmq_msg_t type: no bytes */
	__u64 fault; /* chunks whose user-memory read failed */
};

/* Zeroes `st` when nothing was attached. 0 or -errno. */
int rt_bpf_source__zmq_stats(const struct rt_bpf_source *s, struct rt_bpf_zmq_stats *st);

#endif /* RT_SOURCES_BPF_ZMQ_H */
