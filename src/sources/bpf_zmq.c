// SPDX-License-Identifier: BSD-2-Clause
/*
 * ZeroMQ frame uprobes (bpf/zmq.bpf.c) on libzmq files, attached on demand
 * like the GPU ones: the object is loaded at the first library, reusing the
 * source's ring, target map and counters. Four links per file: entry and
 * return of zmq_msg_send and zmq_msg_recv, found by name (libbpf reads the
 * file's symbols).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"
#include "sources/bpf_zmq.h"

#include "rt_bpf_shared.h"
#include "zmq_shared.h"

#include "zmq.skel.h"

#define ZMQ_PROGS 4

struct zmq_lib {
	dev_t dev;
	ino_t ino;
	int err; /* outcome of the attach, returned again for this file */
	struct bpf_link *links[ZMQ_PROGS];
};

struct rt_bpf_zmq {
	struct zmq_bpf *skel;
	int load_err; /* a failed load is not retried */
	struct zmq_lib libs[RT_BPF_ZMQ_LIBS_MAX];
	int n_libs;
	bool full_warned;
};

static int load(struct rt_bpf_source *s, struct rt_bpf_zmq *z)
{
	struct zmq_bpf *k = zmq_bpf__open();
	int err;

	if (!k)
		return -errno;
	if ((err = rt_bpf_configure(s, k->maps.traced_tgids, k->maps.rt_ring, k->maps.rt_counters,
				    &k->rodata->rt_source_id, &k->rodata->rt_wake_bytes)) ||
	    (err = zmq_bpf__load(k))) {
		zmq_bpf__destroy(k);
		rt_bpf_env_explain("loading zmq.bpf.o", err);
		return err;
	}
	z->skel = k;
	return 0;
}

static void lib_detach(struct zmq_lib *lib)
{
	int i;

	for (i = 0; i < ZMQ_PROGS; i++) {
		bpf_link__destroy(lib->links[i]);
		lib->links[i] = NULL;
	}
}

static int attach_lib(struct rt_bpf_zmq *z, struct zmq_lib *lib, const char *path)
{
	struct bpf_program *progs[ZMQ_PROGS] = {
		z->skel->progs.rt_zmq_send_enter,
		z->skel->progs.rt_zmq_send_ret,
		z->skel->progs.rt_zmq_recv_enter,
		z->skel->progs.rt_zmq_recv_ret,
	};
	static const char *const funcs[ZMQ_PROGS] = { "zmq_msg_send", "zmq_msg_send",
						      "zmq_msg_recv", "zmq_msg_recv" };
	int i, err;

	for (i = 0; i < ZMQ_PROGS; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = funcs[i], .retprobe = i % 2 == 1);

		lib->links[i] = bpf_program__attach_uprobe_opts(progs[i], -1, path, 0, &uo);
		if (!lib->links[i]) {
			err = -errno;
			/* libbpf says ENOENT both for a missing file and a missing symbol */
			if (err == -ENOENT)
				err = -ESRCH;
			elog("zmq uprobe %s in %s: %s", funcs[i], path,
			     err == -ESRCH ? "symbol not found" : strerror(-err));
			lib_detach(lib);
			return err;
		}
	}
	ilog("zmq uprobes: zmq_msg_send and zmq_msg_recv in %s", path);
	return 0;
}

int rt_bpf_source__attach_zmq(struct rt_bpf_source *s, const char *lib_path)
{
	struct rt_bpf_zmq *z;
	struct zmq_lib *lib;
	struct stat st;
	int i;

	if (!s || !lib_path)
		return -EINVAL;
	if (stat(lib_path, &st))
		return -errno;
	if (!s->zmq && !(s->zmq = calloc(1, sizeof(*s->zmq))))
		return -ENOMEM;
	z = s->zmq;
	for (i = 0; i < z->n_libs; i++)
		if (z->libs[i].dev == st.st_dev && z->libs[i].ino == st.st_ino)
			return z->libs[i].err;
	if (z->n_libs >= RT_BPF_ZMQ_LIBS_MAX) {
		if (!z->full_warned)
			wlog("libzmq %s not traced: %d libraries already", lib_path,
			     RT_BPF_ZMQ_LIBS_MAX);
		z->full_warned = true;
		return -ENOSPC;
	}
	if (!z->skel && !z->load_err)
		z->load_err = load(s, z);
	if (z->load_err)
		return z->load_err;
	lib = &z->libs[z->n_libs++];
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	lib->err = attach_lib(z, lib, lib_path);
	/* all four or none (attach_lib): pinned like the tracepoints (bpf_pin.c) */
	for (i = 0; !lib->err && i < ZMQ_PROGS; i++)
		rt_bpf_pin_fd(s, bpf_link__fd(lib->links[i]));
	return lib->err;
}

int rt_bpf_source__zmq_stats(const struct rt_bpf_source *s, struct rt_bpf_zmq_stats *st)
{
	const struct rt_bpf_zmq *z;
	__u64 vals[RT_ZMQ_CNT__MAX] = { 0 };
	__u32 slot;
	int fd, i;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	z = s->zmq;
	if (!z)
		return 0;
	st->n_libs = z->n_libs;
	if (!z->skel)
		return 0;
	fd = bpf_map__fd(z->skel->maps.zmq_counters);
	for (slot = 0; slot < RT_ZMQ_CNT__MAX; slot++) {
		if (bpf_map_lookup_elem(fd, &slot, s->percpu))
			return -errno;
		for (i = 0; i < s->n_cpus; i++)
			vals[slot] += s->percpu[i];
	}
	st->frames = vals[RT_ZMQ_CNT_FRAMES];
	st->cut = vals[RT_ZMQ_CNT_CUT];
	st->cut_bytes = vals[RT_ZMQ_CNT_CUT_BYTES];
	st->calls_full = vals[RT_ZMQ_CNT_CALLS_FULL];
	st->unmatched = vals[RT_ZMQ_CNT_UNMATCHED];
	st->layout = vals[RT_ZMQ_CNT_LAYOUT];
	st->fault = vals[RT_ZMQ_CNT_FAULT];
	return 0;
}

void rt_bpf_zmq_free(struct rt_bpf_source *s)
{
	struct rt_bpf_zmq *z = s->zmq;
	int i;

	if (!z)
		return;
	for (i = 0; i < z->n_libs; i++)
		lib_detach(&z->libs[i]);
	zmq_bpf__destroy(z->skel);
	free(z);
	s->zmq = NULL;
}
