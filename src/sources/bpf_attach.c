// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attaching the BPF source: scheduler and socket tracepoints at start (the
 * arrival ones if the kernel has them), marker uprobes per library file on
 * demand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"

#include "marker.skel.h"
#include "sched.skel.h"
#include "sock.skel.h"

/* sock.bpf.c has one exit program for all of them (the entry stashed the kind). */
static const char *const sock_syscalls[] = {
	"read",	   "readv",  "recvfrom", "recvmsg", "write", "writev",	 "sendto",
	"sendmsg", "accept", "accept4",	 "connect", "close", "shutdown",
};

static int keep_link(struct rt_bpf_source *s, struct bpf_link *link, const char *what)
{
	int err;

	if (!link) {
		err = -errno;
		rt_bpf_env_explain(what, err);
		return err;
	}
	if (s->n_links >= RT_BPF_LINKS_MAX) {
		bpf_link__destroy(link);
		elog("%s: more links than RT_BPF_LINKS_MAX", what);
		return -ENOSPC;
	}
	s->links[s->n_links++] = link;
	return 0;
}

/* Attaches every auto-attachable program of obj except those in skip[n_skip]. */
static int attach_object(struct rt_bpf_source *s, struct bpf_object *obj,
			 const struct bpf_program *const *skip, size_t n_skip)
{
	struct bpf_program *prog;
	char what[128];
	size_t i;
	int err;

	bpf_object__for_each_program(prog, obj) {
		for (i = 0; i < n_skip && prog != skip[i]; i++)
			;
		if (i < n_skip || !bpf_program__autoload(prog))
			continue;
		snprintf(what, sizeof(what), "attaching %s (%s)", bpf_program__name(prog),
			 bpf_program__section_name(prog));
		err = keep_link(s, bpf_program__attach(prog), what);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The arrival programs (bpf/arrival.bpf.h) are optional: without either
 * tracepoint the daemon runs with no SOCK_ARRIVAL records (spans then start
 * at the first read, as before) instead of failing.
 */
static void attach_arrival(struct rt_bpf_source *s)
{
	struct {
		struct bpf_program *prog;
		const char *tp;
	} progs[] = {
		{ s->sock->progs.rt_arr_state, "sock:inet_sock_set_state" },
		{ s->sock->progs.rt_arr_probe, "tcp:tcp_probe" },
	};
	struct bpf_link *links[2] = { NULL, NULL };
	size_t i;
	int err;

	if (!s->sock->bss) {
		wlog("arrival records off: the sock object's .bss is not mmapped (kernel < 5.5)");
		return;
	}
	for (i = 0; i < 2; i++) {
		links[i] = bpf_program__attach(progs[i].prog);
		if (links[i])
			continue;
		err = -errno;
		wlog("arrival records off: raw tracepoint %s: %s (docs/events.md, \"Arrival\")",
		     progs[i].tp, strerror(-err));
		goto fail;
	}
	if (s->n_links + 2 > RT_BPF_LINKS_MAX) {
		elog("arrival: more links than RT_BPF_LINKS_MAX");
		goto fail;
	}
	s->links[s->n_links++] = links[0];
	s->links[s->n_links++] = links[1];
	s->sock->bss->rt_arrival_on = 1;
	s->arrival_on = true;
	return;
fail:
	bpf_link__destroy(links[0]);
	bpf_link__destroy(links[1]);
}

/*
 * sock.bpf.c has each syscall program twice: NAME walks kernel structs
 * through BTF pointers (bpf_rdonly_cast, Linux 6.2+), NAME_c reads each
 * field with bpf_probe_read_kernel(). Only one set is loaded.
 */
void rt_bpf_sock_pick(struct rt_bpf_source *s)
{
	/* RT_BPF_SOCK_COMPAT=1: the probe-read set even here, so that tests cover it */
	const char *force = getenv("RT_BPF_SOCK_COMPAT");
	struct bpf_program *prog;
	const char *name;
	size_t n;
	bool compat;

	s->sock_btf = rt_bpf_env_has_kfunc("bpf_rdonly_cast") && !(force && !strcmp(force, "1"));
	bpf_object__for_each_program(prog, s->sock->obj) {
		name = bpf_program__name(prog);
		if (strncmp(name, "rt_enter_", 9) && strncmp(name, "rt_sys_exit", 11))
			continue;
		n = strlen(name);
		compat = n > 2 && !strcmp(name + n - 2, "_c");
		bpf_program__set_autoload(prog, compat != s->sock_btf);
	}
	ilog("socket programs: %s", s->sock_btf ? "BTF pointer walks" :
				    force && !strcmp(force, "1") ?
						  "probe reads (RT_BPF_SOCK_COMPAT=1)" :
						  "probe reads (kernel without bpf_rdonly_cast)");
}

int rt_bpf_attach_tracepoints(struct rt_bpf_source *s)
{
	struct bpf_program *sys_exit =
		s->sock_btf ? s->sock->progs.rt_sys_exit : s->sock->progs.rt_sys_exit_c;
	const struct bpf_program *sock_skip[] = {
		s->sock->progs.rt_sys_exit,
		s->sock->progs.rt_sys_exit_c,
		s->sock->progs.rt_arr_state,
		s->sock->progs.rt_arr_probe,
	};
	char tp[64], what[128];
	size_t i;
	int err;

	err = attach_object(s, s->sched->obj, NULL, 0);
	if (err)
		return err;
	/* before the syscall programs: an accept's exit may then insert right away */
	attach_arrival(s);
	err = attach_object(s, s->sock->obj, sock_skip, sizeof(sock_skip) / sizeof(sock_skip[0]));
	if (err)
		return err;
	for (i = 0; i < sizeof(sock_syscalls) / sizeof(sock_syscalls[0]); i++) {
		snprintf(tp, sizeof(tp), "sys_exit_%s", sock_syscalls[i]);
		snprintf(what, sizeof(what), "attaching tracepoint syscalls/%s", tp);
		err = keep_link(s, bpf_program__attach_tracepoint(sys_exit, "syscalls", tp), what);
		if (err)
			return err;
	}
	return 0;
}

static void lib_detach(struct rt_marker_lib *lib)
{
	int i;

	for (i = 0; i < RT_BPF_MARK_FUNCS; i++) {
		bpf_link__destroy(lib->links[i]);
		lib->links[i] = NULL;
	}
}

void rt_bpf_detach_all(struct rt_bpf_source *s)
{
	int i;

	for (i = 0; i < s->n_libs; i++)
		lib_detach(&s->libs[i]);
	s->n_libs = 0;
	for (i = 0; i < s->n_links; i++)
		bpf_link__destroy(s->links[i]);
	s->n_links = 0;
}

/*
 * Attaches one uprobe per marker function. Since markers can go through
 * shared memory (docs/markers.md), a library's API functions only call the
 * attach points rt_mark_probe_* when no ring is attached: probe those. A
 * library without them (ABI 1 before shared memory) is probed on the API
 * functions themselves.
 */
static int attach_lib(struct rt_bpf_source *s, struct rt_marker_lib *lib, const char *lib_path,
		      const char *const *funcs)
{
	struct bpf_program *progs[RT_BPF_MARK_FUNCS];
	int i, err;

	progs[0] = s->marker->progs.rt_mark_begin;
	progs[1] = s->marker->progs.rt_mark_end;
	progs[2] = s->marker->progs.rt_mark_step_begin;
	progs[3] = s->marker->progs.rt_mark_step_end;
	progs[4] = s->marker->progs.rt_mark_bind;
	progs[5] = s->marker->progs.rt_mark_step_begin_tokens;
	for (i = 0; i < RT_BPF_MARK_FUNCS; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = funcs[i]);

		lib->links[i] = bpf_program__attach_uprobe_opts(progs[i], -1, lib_path, 0, &uo);
		if (!lib->links[i]) {
			err = -errno;
			/* libbpf says ENOENT both for a missing file and a missing symbol */
			if (err == -ENOENT)
				err = -ESRCH;
			/* a library of marker ABI 1 has no token steps: its callers make none */
			if (err == -ESRCH && i == RT_BPF_MARK_FUNCS - 1) {
				dlog("%s has no %s (marker ABI 1)", lib_path, funcs[i]);
				continue;
			}
			lib_detach(lib);
			return err;
		}
	}
	return 0;
}

int rt_bpf_source__attach_markers(struct rt_bpf_source *s, const char *lib_path)
{
	static const char *const probe_funcs[RT_BPF_MARK_FUNCS] = {
		"rt_mark_probe_begin",	  "rt_mark_probe_end",	"rt_mark_probe_step_begin",
		"rt_mark_probe_step_end", "rt_mark_probe_bind", "rt_mark_probe_step_begin_tokens",
	};
	static const char *const api_funcs[RT_BPF_MARK_FUNCS] = {
		"rt_mark_begin",    "rt_mark_end",  "rt_mark_step_begin",
		"rt_mark_step_end", "rt_mark_bind", "rt_mark_step_begin_tokens",
	};
	struct rt_marker_lib lib = { 0 };
	struct stat st;
	int i, err;

	if (!s || !lib_path)
		return -EINVAL;
	if (stat(lib_path, &st))
		return -errno;
	for (i = 0; i < s->n_libs; i++)
		if (s->libs[i].dev == st.st_dev && s->libs[i].ino == st.st_ino)
			return 0;
	if (s->n_libs >= RT_BPF_MARKER_LIBS_MAX) {
		wlog("marker library %s not traced: %d libraries already", lib_path,
		     RT_BPF_MARKER_LIBS_MAX);
		return -ENOSPC;
	}
	lib.dev = st.st_dev;
	lib.ino = st.st_ino;
	err = attach_lib(s, &lib, lib_path, probe_funcs);
	if (err == -ESRCH)
		err = attach_lib(s, &lib, lib_path, api_funcs);
	if (err) {
		elog("marker uprobes in %s: %s", lib_path,
		     err == -ESRCH ? "symbol not found" : strerror(-err));
		return err;
	}
	s->libs[s->n_libs++] = lib;
	rt_bpf_pin_marker_lib(s, s->n_libs - 1);
	dlog("marker uprobes attached to %s", lib_path);
	return 0;
}
