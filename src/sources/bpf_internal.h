/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the BPF source shared by its files: bpf_source.c (lifetime,
 * targets, draining, stats), bpf_env.c (kernel prerequisites, libbpf log),
 * bpf_attach.c (tracepoints and marker uprobes), bpf_gpu.c (libcuda/libnccl
 * uprobes).
 */
#ifndef RT_SOURCES_BPF_INTERNAL_H
#define RT_SOURCES_BPF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sources/bpf_source.h"

struct bpf_link;
struct ring_buffer;
struct sched_bpf;
struct sock_bpf;
struct marker_bpf;
struct rt_bpf_gpu; /* bpf_gpu.c: gpu.bpf.c and the libcuda/libnccl files it is attached to */
struct rt_bpf_zmq; /* bpf_zmq.c: zmq.bpf.c and the libzmq files it is attached to */
struct rt_bpf_pack; /* bpf_pack.c: pack.bpf.c and the files engine packs attached to */

#define RT_BPF_LINKS_MAX                                                                           \
	56 /* 5 scheduler + 12 interrupt + 13 entry + 13 exit + 2 arrival tracepoints */
#define RT_BPF_MARK_FUNCS 6 /* the last, rt_mark_step_begin_tokens, is optional (ABI 2) */

struct rt_marker_lib {
	dev_t dev;
	ino_t ino;
	struct bpf_link *links[RT_BPF_MARK_FUNCS];
};

struct rt_bpf_source {
	struct rt_bpf_source_opts opts;
	struct sched_bpf *sched;
	struct sock_bpf *sock;
	struct marker_bpf *marker;
	struct bpf_link *links[RT_BPF_LINKS_MAX];
	int n_links;
	struct rt_marker_lib libs[RT_BPF_MARKER_LIBS_MAX];
	int n_libs;
	struct rt_bpf_gpu *gpu; /* NULL until the first rt_bpf_source__attach_gpu() */
	struct rt_bpf_zmq *zmq; /* NULL until the first rt_bpf_source__attach_zmq() */
	struct rt_bpf_pack *pack; /* NULL until the first rt_bpf_source__attach_packs() */
	bool arrival_on; /* both arrival tracepoints attached (bpf_attach.c) */
	bool sock_btf; /* sock.bpf.c's BTF-walking programs loaded, not the _c ones */
	/* links[0, n_pinned) pinned in pin_dir (bpf_pin.c); "" none */
	char pin_root[192], pin_dir[256];
	int n_pinned;
	int n_pinned_lib; /* uprobe links pinned there too (rt_bpf_pin_fd) */
	unsigned pin_seq; /* names those pins */

	struct ring_buffer *rb;
	int ring_fd, targets_fd, counters_fd;
	/* read-only views of the ring's consumer and producer positions */
	const volatile unsigned long *cons_pos, *prod_pos;
	size_t page_size;

	int n_cpus;
	__u64 *percpu; /* n_cpus values, for counter lookups */

	/* drain state */
	rt_event_fn fn;
	void *fn_ctx;
	int fn_err;
	__u64 events[RT_EV__MAX];
	__u64 invalid, invalid_reported;
	__u64 lost_seen[RT_EV__MAX], lost_all_seen;
	__u64 loss_check_ns; /* when the counters were last compared */
	__u64 watermark;
	__u64 avail_max; /* seen by drains */
};

/* bpf_pin.c: links[] pinned under opts.pin_root so a killed daemon exits at
 * once (docs/deploy.md, "Restart"). Pinning failures are logged, not fatal. */
int rt_bpf_pin_links(struct rt_bpf_source *s);
/* Pins one more link (its fd) beside them, if s pins; failures are only logged. */
void rt_bpf_pin_fd(struct rt_bpf_source *s, int fd);
/* Pins the uprobe links of marker library s->libs[k] beside them. */
void rt_bpf_pin_marker_lib(struct rt_bpf_source *s, int k);
/* Removes s's pins (a clean exit, before the links are destroyed). */
void rt_bpf_unpin_links(struct rt_bpf_source *s);
/* On a detached thread: removes the pins of daemons that are gone. */
void rt_bpf_sweep_pins(const struct rt_bpf_source *s);

/* bpf_env.c */
void rt_bpf_env_set_print(bool verbose);
/* 0 or -errno, with one log line naming what is missing. */
int rt_bpf_env_check(void);
/* Logs why loading failed, in words an operator can act on. */
void rt_bpf_env_explain(const char *what, int err);
/* Whether the running kernel's BTF has this function (a kfunc programs may call). */
bool rt_bpf_env_has_kfunc(const char *name);

/* bpf_attach.c */
void rt_bpf_sock_pick(struct rt_bpf_source *s); /* between open and load of sock.bpf.o */
int rt_bpf_attach_tracepoints(struct rt_bpf_source *s);
void rt_bpf_detach_all(struct rt_bpf_source *s);

__u64 rt_bpf_now_ns(void);

/* bpf_gpu.c */
void rt_bpf_gpu_stats(const struct rt_bpf_source *s, struct rt_bpf_stats *st);
void rt_bpf_gpu_free(struct rt_bpf_source *s);

/* bpf_zmq.c */
void rt_bpf_zmq_free(struct rt_bpf_source *s);
/* bpf_pack.c */
void rt_bpf_pack_free(struct rt_bpf_source *s);

/*
 * bpf_source.c: sets an opened object's rodata and its shared maps (the
 * first object sizes them, the later ones reuse their fds), so that every
 * program writes the one ring and honours the one target map.
 */
int rt_bpf_configure(struct rt_bpf_source *s, struct bpf_map *targets, struct bpf_map *ring,
		     struct bpf_map *counters, volatile __u32 *source_id,
		     volatile __u64 *wake_bytes);

#endif /* RT_SOURCES_BPF_INTERNAL_H */
