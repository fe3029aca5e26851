/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the BPF source integration tests: a source, a record collector,
 * drain helpers, a traced child process started on a signal, and the skip
 * rule (skip with 77 only when not root or BPF is not permitted and CI is
 * not "true").
 */
#ifndef RT_TESTS_BPF_TEST_UTIL_H
#define RT_TESTS_BPF_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <reqtrace/event.h>

#include "sources/bpf_source.h"

#define RT_TEST_SKIP 77

struct rt_collect {
	struct rt_event_hdr **recs;
	size_t n, cap;
	size_t max; /* bound: records beyond it are counted, not kept */
	size_t dropped;
	__u64 wm_before; /* watermark published before the current drain */
	size_t wm_violations; /* records older than an already published watermark */
	__u64 first_wm_violation_ts;
};

/* Returns the source, or exits the process with 77 (skip) or 1 (CI). */
struct rt_bpf_source *rt_test_source(const struct rt_bpf_source_opts *opts);

void rt_collect_init(struct rt_collect *c, size_t max);
void rt_collect_free(struct rt_collect *c);
/* One consume() into c; checks records against the previous watermark. */
int rt_collect_drain(struct rt_bpf_source *s, struct rt_collect *c);
/* Drains (polling the ring's fd) until pred(c, arg) or timeout_ms; returns pred's last value. */
bool rt_collect_until(struct rt_bpf_source *s, struct rt_collect *c,
		      bool (*pred)(const struct rt_collect *c, const void *arg), const void *arg,
		      int timeout_ms);

/* Records of `kind` from `pid` (0: any pid), in delivery order, into out (at most n). */
size_t rt_collect_find(const struct rt_collect *c, unsigned int kind, __u32 pid,
		       const struct rt_event_hdr **out, size_t n);

/*
 * A child process that runs fn(arg) once released, so the parent can add its
 * pid to the source first. fn's return value is the child's exit status.
 */
struct rt_test_child {
	pid_t pid;
	int go_fd; /* parent writes one byte to release the child */
	int out_fd; /* child's result pipe (read end) */
	int child_out_fd; /* in the child: the write end */
	int child_go_fd; /* in the child: read end of go, for rt_test_child_step() */
};

int rt_test_child_start(struct rt_test_child *ch, int (*fn)(struct rt_test_child *, void *),
			void *arg);
int rt_test_child_go(struct rt_test_child *ch);
/* In the child: waits for the parent's next rt_test_child_go(). */
int rt_test_child_step(struct rt_test_child *ch);
/* waitpid; returns the wait status or -1 */
int rt_test_child_wait(struct rt_test_child *ch);

__u64 rt_test_now_ns(void);

#endif /* RT_TESTS_BPF_TEST_UTIL_H */
