// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kernel prerequisites of the BPF source, checked before loading so that a
 * failure names what is missing instead of surfacing as a verifier or
 * perf_event_open errno.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"

#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACING "/sys/kernel/debug/tracing"
#define BTF_VMLINUX "/sys/kernel/btf/vmlinux"

static bool print_debug;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !print_debug)
		return 0;
	rt_vlog(RT_LOG_DEBUG, fmt, ap);
	return 0;
}

void rt_bpf_env_set_print(bool verbose)
{
	print_debug = verbose;
	libbpf_set_print(libbpf_print);
}

/* libbpf resolves tracepoint ids under DEBUGFS_TRACING if present, else TRACEFS. */
static int ensure_tracefs(void)
{
	if (access(DEBUGFS_TRACING "/events", F_OK) == 0 || access(TRACEFS "/events", F_OK) == 0)
		return 0;
	if (errno == EACCES) {
		elog("%s is not accessible: tracing needs root, or CAP_BPF and CAP_PERFMON with "
		     "access to tracefs",
		     TRACEFS);
		return -EPERM;
	}
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY) {
		int err = -errno;

		elog("tracefs is not mounted and mounting it at %s failed: %s (mount it, or run "
		     "with CAP_SYS_ADMIN)",
		     TRACEFS, strerror(-err));
		return err;
	}
	if (access(TRACEFS "/events", F_OK)) {
		elog("tracefs mounted at %s has no events/: kernel without tracepoints?", TRACEFS);
		return -ENOENT;
	}
	ilog("mounted tracefs at %s", TRACEFS);
	return 0;
}

int rt_bpf_env_check(void)
{
	if (access(BTF_VMLINUX, R_OK)) {
		int err = -errno;

		elog("kernel BTF (%s) is missing or unreadable: %s; CO-RE programs need a kernel "
		     "built with CONFIG_DEBUG_INFO_BTF=y",
		     BTF_VMLINUX, strerror(-err));
		return err == -EACCES ? -EPERM : -EOPNOTSUPP;
	}
	return ensure_tracefs();
}

void rt_bpf_env_explain(const char *what, int err)
{
	if (err == -EPERM || err == -EACCES)
		elog("%s: %s; loading BPF needs root, or CAP_BPF and CAP_PERFMON (and "
		     "CAP_SYS_ADMIN on kernels before 5.8)",
		     what, strerror(-err));
	else if (err == -ENOENT)
		elog("%s: %s; the kernel lacks this tracepoint or probe point", what,
		     strerror(-err));
	else if (err == -E2BIG || err == -ENOMEM)
		elog("%s: %s; ring or map too large for the memory cgroup limit", what,
		     strerror(-err));
	else
		elog("%s: %s (run with -v for libbpf's log)", what, strerror(-err));
}

bool rt_bpf_env_has_kfunc(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool has;

	if (!btf)
		return false;
	has = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return has;
}
