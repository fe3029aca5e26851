// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tracepoint links pinned in bpffs, so that a daemon killed without
 * a clean exit goes away at once and its successor is tracing within
 * its own start time (docs/deploy.md, "Restart").
 *
 * A process that dies holding the only reference to a perf-event link
 * detaches it in its own exit: the kernel waits for RCU grace periods
 * per tracepoint, 1-2.5 s for the ~30 links here, and a supervisor that
 * restarts on exit waits with it. A pinned link outlives its process;
 * the next daemon, once its own links are attached, removes the pins of
 * daemons that are gone, and the kernel detaches those links in the
 * background. A clean exit removes its own pins before it detaches.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "bpf_internal.h"
#include "pin_sweep.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

#define BPFFS_DEFAULT "/sys/fs/bpf"

/*
 * Systemd mounts bpffs at /sys/fs/bpf at boot; a machine without it (a
 * container's init, a minimal VM) has only the empty sysfs directory.
 * As for tracefs (bpf_env.c), the daemon mounts it there itself when the
 * pin root lies directly under it; anywhere else it must be a bpffs
 * already, and the check below says so.
 */
static void ensure_bpffs(const char *root)
{
	size_t l = strlen(BPFFS_DEFAULT);
	struct statfs fs;

	if (strncmp(root, BPFFS_DEFAULT "/", l + 1) || strchr(root + l + 1, '/'))
		return;
	if (!statfs(BPFFS_DEFAULT, &fs) && (unsigned long)fs.f_type == BPF_FS_MAGIC)
		return;
	if (mount("bpf", BPFFS_DEFAULT, "bpf", 0, "mode=0700") && errno != EBUSY) {
		dlog("mounting bpffs at %s: %s", BPFFS_DEFAULT, strerror(errno));
		return;
	}
	ilog("mounted bpffs at %s (for pinned links)", BPFFS_DEFAULT);
}

int rt_bpf_pin_links(struct rt_bpf_source *s)
{
	const char *root = s->opts.pin_root;
	char path[sizeof(s->pin_dir) + 16];
	struct statfs fs;
	int i, err, n;

	if (!root || !root[0])
		return 0;
	ensure_bpffs(root);
	/* inside a bpffs mount; the directory itself is ours to make */
	if (mkdir(root, 0700) && errno != EEXIST) {
		err = -errno;
		goto fail;
	}
	if (statfs(root, &fs)) {
		err = -errno;
		goto fail;
	}
	if ((unsigned long)fs.f_type != BPF_FS_MAGIC) {
		err = -ENOTSUP;
		goto fail;
	}
	n = snprintf(s->pin_dir, sizeof(s->pin_dir), "%s/%ld-%llu-%u", root, (long)getpid(),
		     rt_pin_start_time((long)getpid()), s->opts.source_id);
	if (n <= 0 || (size_t)n >= sizeof(s->pin_dir)) {
		err = -ENAMETOOLONG;
		s->pin_dir[0] = '\0';
		goto fail;
	}
	if (mkdir(s->pin_dir, 0700) && errno != EEXIST) {
		err = -errno;
		s->pin_dir[0] = '\0';
		goto fail;
	}
	for (i = 0; i < s->n_links; i++) {
		snprintf(path, sizeof(path), "%s/l%d", s->pin_dir, i);
		err = bpf_link__pin(s->links[i], path);
		if (err)
			goto fail;
		s->n_pinned++;
	}
	return 0;
fail:
	/* not fatal: a restart after a crash then waits for the detach */
	wlog("BPF links not pinned under %s (%s): a daemon killed without a clean exit takes "
	     "1-3 s to detach them before a restart (docs/deploy.md, \"Restart\")",
	     root, strerror(-err));
	rt_bpf_unpin_links(s);
	return err;
}

void rt_bpf_pin_fd(struct rt_bpf_source *s, int fd)
{
	char path[sizeof(s->pin_dir) + 16];

	if (!s->pin_dir[0] || fd < 0)
		return;
	snprintf(path, sizeof(path), "%s/x%u", s->pin_dir, s->pin_seq++);
	/* one left unpinned only costs the exit time its detach takes */
	if (bpf_obj_pin(fd, path))
		dlog("BPF link not pinned: %s: %s", path, strerror(errno));
	else
		s->n_pinned_lib++;
}

void rt_bpf_pin_marker_lib(struct rt_bpf_source *s, int k)
{
	int i;

	for (i = 0; i < RT_BPF_MARK_FUNCS; i++)
		if (s->libs[k].links[i])
			rt_bpf_pin_fd(s, bpf_link__fd(s->libs[k].links[i]));
}

void rt_bpf_unpin_links(struct rt_bpf_source *s)
{
	/* every pin in the directory, whoever made it: the links stay ours
	 * through their fds until they are destroyed */
	if (s->pin_dir[0])
		rt_pin_remove_dir(s->pin_dir);
	s->n_pinned = s->n_pinned_lib = 0;
	s->pin_dir[0] = '\0';
}

struct sweep {
	char root[PATH_MAX];
	char own[PATH_MAX];
};

static void *sweep_main(void *arg)
{
	struct sweep *w = arg;

	rt_pin_sweep(w->root, w->own);
	free(w);
	return NULL;
}

void rt_bpf_sweep_pins(const struct rt_bpf_source *s)
{
	const char *root = s->opts.pin_root;
	pthread_attr_t attr;
	struct sweep *w;
	pthread_t t;

	if (!root || !root[0])
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	snprintf(w->root, sizeof(w->root), "%s", root);
	snprintf(w->own, sizeof(w->own), "%s", s->pin_dir);
	/* on a thread of its own: the unlinks may wait on the kernel's detach */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, sweep_main, w))
		free(w);
	pthread_attr_destroy(&attr);
}
