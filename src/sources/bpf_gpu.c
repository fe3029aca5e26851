// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU uprobes (bpf/gpu.bpf.c) on libcuda and libnccl files, attached on
 * demand: the object is loaded at the first library, reusing the source's
 * ring, target map and counters like the other objects.
 *
 * A library is read once (its .dynsym, through gpu_elf.c) and every probe
 * table function it exports gets one uprobe per ADDRESS: NCCL's ncclX is a
 * weak alias of pncclX, and two uprobes at one address would report every
 * call twice. When a name and its alias sit at different addresses (a
 * wrapper), the strong (global) symbol is the one probed, since the
 * wrapper calls through it. Timed functions (sync, blocking copies) also
 * get a uretprobe. The api id travels as the BPF cookie.
 *
 * Where the kernel has uprobe.multi links (6.6+), a library takes two links
 * (entries, returns) instead of one perf event per function: detaching a
 * uprobe waits for an SRCU grace period (~70 ms measured on our VMs), so
 * 180 perf-event uprobes take over ten seconds to detach at shutdown, two
 * links a fraction of a second. libbpf 1.1 predates these links: they are
 * created with the bpf() syscall directly. Older kernels get the per-function
 * uprobes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"
#include "sources/gpu_elf.h"
#include "probes/gpu_probes.h"

#include "rt_bpf_shared.h"

#include "gpu.skel.h"

/* uprobe.multi, kernel 6.6 uapi; Debian 12's linux/bpf.h predates it */
#define RT_BPF_TRACE_UPROBE_MULTI 48
#define RT_BPF_F_UPROBE_MULTI_RETURN 1u

/* union bpf_attr as BPF_LINK_CREATE reads it for a uprobe.multi link */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 _pad;
};

struct gpu_lib {
	dev_t dev;
	ino_t ino;
	int err; /* outcome of the attach, returned again for this file */
	int multi_fd[2]; /* uprobe.multi links: entries, returns (-1: none) */
	uint32_t n_links;
	struct bpf_link **links; /* per-function uprobes, without uprobe.multi */
};

struct rt_bpf_gpu {
	struct gpu_bpf *skel;
	int load_err; /* a failed load is not retried */
	bool multi; /* uprobe.multi programs loaded, and not refused yet */
	struct gpu_lib libs[RT_BPF_GPU_LIBS_MAX];
	int n_libs;
	bool full_warned;
	__u64 probes, aliases, failed;
};

/* One chosen symbol per api id. */
struct pick {
	uint64_t addr, offset;
	bool set, weak;
};

struct scan {
	struct pick picks[RT_GPU_API_MAX];
	uint32_t n_found;
	uint64_t aliases;
	/* for uprobe.multi: [0] entries, [1] returns */
	__u64 offsets[2][RT_GPU_API_MAX];
	__u64 cookies[2][RT_GPU_API_MAX];
	__u32 n[2];
};

static int on_sym(const struct rt_elf_sym *sym, void *ctx)
{
	struct scan *sc = ctx;
	struct pick *p;
	int api = rt_gpu_probe_find(sym->name);

	if (api < 0 || !sym->offset)
		return 0;
	p = &sc->picks[api];
	if (!p->set) {
		p->set = true;
		p->addr = sym->addr;
		p->offset = sym->offset;
		p->weak = sym->weak;
		sc->n_found++;
		return 0;
	}
	/* a second name for this entry (pncclX for ncclX) */
	sc->aliases++;
	if (p->addr != sym->addr && p->weak && !sym->weak) {
		p->addr = sym->addr;
		p->offset = sym->offset;
		p->weak = false;
	}
	return 0;
}

static void spec_of(const struct rt_gpu_probe *p, struct rt_gpu_spec *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->rec = p->rec;
	sp->api_class = p->api_class;
	sp->copy_kind = p->copy_kind;
	sp->stream_how = p->stream_how;
	sp->stream_arg = p->stream_arg;
	sp->bytes_how = p->bytes_how;
	sp->bytes_arg = p->bytes_arg;
	sp->bytes_arg2 = p->bytes_arg2;
	sp->elem = p->elem;
	sp->count_arg = p->count_arg;
	sp->dtype_arg = p->dtype_arg;
	sp->comm_arg = p->comm_arg;
	sp->peer_arg = p->peer_arg;
}

static int load_variant(struct rt_bpf_source *s, struct rt_bpf_gpu *g, bool multi)
{
	struct gpu_bpf *k;
	struct rt_gpu_spec sp;
	uint32_t i;
	int err, fd;

	k = gpu_bpf__open();
	if (!k)
		return -errno;
	if (multi) {
		bpf_program__set_expected_attach_type(k->progs.rt_gpu_enter_multi,
						      RT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(k->progs.rt_gpu_ret_multi,
						      RT_BPF_TRACE_UPROBE_MULTI);
	} else {
		bpf_program__set_autoload(k->progs.rt_gpu_enter_multi, false);
		bpf_program__set_autoload(k->progs.rt_gpu_ret_multi, false);
	}
	if ((err = rt_bpf_configure(s, k->maps.traced_tgids, k->maps.rt_ring, k->maps.rt_counters,
				    &k->rodata->rt_source_id, &k->rodata->rt_wake_bytes)) ||
	    (err = gpu_bpf__load(k))) {
		gpu_bpf__destroy(k);
		return err;
	}
	fd = bpf_map__fd(k->maps.gpu_specs);
	for (i = 0; i < rt_gpu_n_probes; i++) {
		spec_of(&rt_gpu_probes[i], &sp);
		if (bpf_map_update_elem(fd, &i, &sp, BPF_ANY)) {
			err = -errno;
			elog("gpu probe specs: %s", strerror(-err));
			gpu_bpf__destroy(k);
			return err;
		}
	}
	g->skel = k;
	g->multi = multi;
	return 0;
}

static int load(struct rt_bpf_source *s, struct rt_bpf_gpu *g)
{
	int err = s->opts.gpu_per_function ? -ECANCELED : load_variant(s, g, true);

	if (!err)
		return 0;
	if (err != -ECANCELED)
		dlog("gpu.bpf.o with uprobe.multi programs: %s; per-function uprobes",
		     strerror(-err));
	err = load_variant(s, g, false);
	if (err)
		rt_bpf_env_explain("loading gpu.bpf.o", err);
	return err;
}

static int multi_link(const struct bpf_program *prog, const char *path, const __u64 *offsets,
		      const __u64 *cookies, __u32 cnt, bool ret)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)bpf_program__fd(prog);
	a.attach_type = RT_BPF_TRACE_UPROBE_MULTI;
	a.path = (__u64)(uintptr_t)path;
	a.offsets = (__u64)(uintptr_t)offsets;
	a.cookies = (__u64)(uintptr_t)cookies;
	a.cnt = cnt;
	a.multi_flags = ret ? RT_BPF_F_UPROBE_MULTI_RETURN : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

/* Both links for the library, or neither. */
static int attach_multi(struct rt_bpf_gpu *g, struct gpu_lib *lib, const char *path,
			const struct scan *sc)
{
	int fd;

	fd = multi_link(g->skel->progs.rt_gpu_enter_multi, path, sc->offsets[0], sc->cookies[0],
			sc->n[0], false);
	if (fd < 0)
		return fd;
	lib->multi_fd[0] = fd;
	if (!sc->n[1])
		return 0;
	fd = multi_link(g->skel->progs.rt_gpu_ret_multi, path, sc->offsets[1], sc->cookies[1],
			sc->n[1], true);
	if (fd < 0) {
		close(lib->multi_fd[0]);
		lib->multi_fd[0] = -1;
		return fd;
	}
	lib->multi_fd[1] = fd;
	return 0;
}

/*
 * Every uprobe is a perf event fd: a full libcuda takes about 200. The soft
 * RLIMIT_NOFILE (often 1024) is raised to the hard one, which needs no
 * privilege; if that is not enough, attaching fails with EMFILE and says so.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int attach_one(struct rt_bpf_gpu *g, struct gpu_lib *lib, const char *path, uint32_t api,
		      uint64_t offset, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = api, .retprobe = ret);
	struct bpf_program *prog = ret ? g->skel->progs.rt_gpu_ret : g->skel->progs.rt_gpu_enter;
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, -1, path, offset, &uo);
	if (!link)
		return -errno;
	lib->links[lib->n_links++] = link;
	return 0;
}

static void lib_detach(struct gpu_lib *lib)
{
	uint32_t i;

	for (i = 0; i < 2; i++)
		if (lib->multi_fd[i] >= 0)
			close(lib->multi_fd[i]);
	for (i = 0; i < lib->n_links; i++)
		bpf_link__destroy(lib->links[i]);
	free(lib->links);
	lib->links = NULL;
	lib->n_links = 0;
}

/* One perf-event uprobe (and uretprobe) per function: the fallback. */
static int attach_each(struct rt_bpf_gpu *g, struct gpu_lib *lib, const char *path,
		       const struct scan *sc, uint32_t *failed)
{
	int err = 0, first_err = 0;
	uint32_t api;

	lib->links = calloc(sc->n[0] + sc->n[1], sizeof(*lib->links));
	if (!lib->links)
		return -ENOMEM;
	raise_nofile();
	for (api = 0; api < rt_gpu_n_probes; api++) {
		const struct pick *p = &sc->picks[api];
		bool timed = rt_gpu_probes[api].rec == RT_GPU_REC_EXIT;

		if (!p->set)
			continue;
		err = attach_one(g, lib, path, api, p->offset, false);
		if (!err && timed)
			err = attach_one(g, lib, path, api, p->offset, true);
		if (err) {
			(*failed)++;
			if (!first_err) {
				first_err = err;
				elog("gpu uprobe %s in %s: %s%s", rt_gpu_probes[api].name, path,
				     strerror(-err),
				     err == -EMFILE ? " (raise the open files limit)" : "");
			}
		}
	}
	/* what attached stays attached: a partial view beats none */
	return lib->n_links ? 0 : first_err;
}

static int attach_lib(struct rt_bpf_gpu *g, struct gpu_lib *lib, const char *path)
{
	struct scan *sc = calloc(1, sizeof(*sc));
	uint32_t api, failed = 0, attached;
	int err;

	if (!sc)
		return -ENOMEM;
	err = rt_elf_dynsyms(path, on_sym, sc);
	if (err) {
		elog("gpu probes: reading the symbols of %s: %s", path, strerror(-err));
		goto out;
	}
	if (!sc->n_found) {
		err = -ESRCH;
		wlog("gpu probes: %s exports none of the probed functions", path);
		goto out;
	}
	for (api = 0; api < rt_gpu_n_probes; api++) {
		const struct pick *p = &sc->picks[api];
		int w;

		if (!p->set)
			continue;
		for (w = 0; w < (rt_gpu_probes[api].rec == RT_GPU_REC_EXIT ? 2 : 1); w++) {
			sc->offsets[w][sc->n[w]] = p->offset;
			sc->cookies[w][sc->n[w]] = api;
			sc->n[w]++;
		}
	}
	err = -EOPNOTSUPP;
	if (g->multi) {
		err = attach_multi(g, lib, path, sc);
		if (err) {
			/* a kernel that loads the programs but refuses the links: not again */
			dlog("gpu uprobe.multi on %s: %s; per-function uprobes", path,
			     strerror(-err));
			g->multi = false;
		}
	}
	if (err)
		err = attach_each(g, lib, path, sc, &failed);
	attached = lib->multi_fd[0] >= 0 ? sc->n[0] + sc->n[1] : lib->n_links;
	g->probes += attached;
	g->aliases += sc->aliases;
	g->failed += failed;
	ilog("gpu uprobes: %u on %s (%u functions, %llu aliases skipped, %u failed%s)", attached,
	     path, sc->n_found, (unsigned long long)sc->aliases, failed,
	     lib->multi_fd[0] >= 0 ? ", uprobe.multi" : "");
out:
	free(sc);
	return err;
}

int rt_bpf_source__attach_gpu(struct rt_bpf_source *s, const char *lib_path)
{
	struct rt_bpf_gpu *g;
	struct gpu_lib *lib;
	struct stat st;
	int i;

	if (!s || !lib_path)
		return -EINVAL;
	if (stat(lib_path, &st))
		return -errno;
	if (!s->gpu && !(s->gpu = calloc(1, sizeof(*s->gpu))))
		return -ENOMEM;
	g = s->gpu;
	for (i = 0; i < g->n_libs; i++)
		if (g->libs[i].dev == st.st_dev && g->libs[i].ino == st.st_ino)
			return g->libs[i].err;
	if (g->n_libs >= RT_BPF_GPU_LIBS_MAX) {
		if (!g->full_warned)
			wlog("gpu library %s not traced: %d libraries already", lib_path,
			     RT_BPF_GPU_LIBS_MAX);
		g->full_warned = true;
		return -ENOSPC;
	}
	if (!g->skel && !g->load_err)
		g->load_err = load(s, g);
	if (g->load_err)
		return g->load_err;
	lib = &g->libs[g->n_libs++];
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	lib->multi_fd[0] = lib->multi_fd[1] = -1;
	lib->err = attach_lib(g, lib, lib_path);
	/* what attached stays attached until the end: pinned like the
	 * tracepoints (bpf_pin.c) */
	for (i = 0; i < 2; i++)
		rt_bpf_pin_fd(s, lib->multi_fd[i]);
	for (i = 0; (uint32_t)i < lib->n_links; i++)
		rt_bpf_pin_fd(s, bpf_link__fd(lib->links[i]));
	return lib->err;
}

void rt_bpf_gpu_stats(const struct rt_bpf_source *s, struct rt_bpf_stats *st)
{
	const struct rt_bpf_gpu *g = s->gpu;
	__u32 slot;
	int fd, i;

	if (!g)
		return;
	st->n_gpu_libs = g->n_libs;
	st->gpu_probes = g->probes;
	st->gpu_aliases = g->aliases;
	st->gpu_attach_failed = g->failed;
	if (!g->skel)
		return;
	fd = bpf_map__fd(g->skel->maps.gpu_counters);
	for (slot = 0; slot < RT_GPU_CNT__MAX; slot++) {
		__u64 sum = 0;

		if (bpf_map_lookup_elem(fd, &slot, s->percpu))
			continue;
		for (i = 0; i < s->n_cpus; i++)
			sum += s->percpu[i];
		if (slot == RT_GPU_CNT_CALLS_FULL)
			st->gpu_calls_full = sum;
		else if (slot == RT_GPU_CNT_UNMATCHED_RET)
			st->gpu_unmatched_ret = sum;
		else if (slot == RT_GPU_CNT_BAD_COOKIE)
			st->gpu_bad_cookie = sum;
	}
}

void rt_bpf_gpu_free(struct rt_bpf_source *s)
{
	struct rt_bpf_gpu *g = s->gpu;
	int i;

	if (!g)
		return;
	for (i = 0; i < g->n_libs; i++)
		lib_detach(&g->libs[i]);
	gpu_bpf__destroy(g->skel);
	free(g);
	s->gpu = NULL;
}
