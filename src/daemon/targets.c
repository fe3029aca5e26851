// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/targets.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon/procfs.h"

/* New --comm members whose existing children are looked up in one scan (a /proc walk each). */
#define DESC_LOOKUPS_PER_SCAN 16
#define DESC_MAX 1024

struct traced {
	pid_t pid;
	uint32_t target; /* index + 1 */
	bool seen; /* found by this scan */
};

/* What a target needs that status has no use for. */
struct target_priv {
	bool warned; /* a problem was logged: don't repeat it every 250 ms */
};

struct rt_targets {
	struct rt_targets_cb cb;
	struct rt_target t[RT_TARGETS_MAX];
	struct target_priv priv[RT_TARGETS_MAX];
	uint32_t n;
	struct traced pids[RT_TRACED_PIDS_MAX];
	uint32_t n_pids;
	struct rt_targets_stats st;
	pid_t found[RT_TRACED_PIDS_MAX]; /* scratch for one member scan */
	pid_t kids[DESC_MAX];
	int desc_lookups; /* this scan */
};

struct rt_targets *rt_targets__new(const struct rt_targets_cb *cb)
{
	struct rt_targets *ts = calloc(1, sizeof(*ts));

	if (!ts) {
		errno = ENOMEM;
		return NULL;
	}
	ts->cb = *cb;
	return ts;
}

void rt_targets__free(struct rt_targets *ts)
{
	free(ts);
}

const char *rt_target_kind_name(enum rt_target_kind kind)
{
	switch (kind) {
	case RT_TARGET_PID:
		return "pid";
	case RT_TARGET_PORT:
		return "port";
	case RT_TARGET_COMM:
		return "comm";
	case RT_TARGET_CGROUP:
		return "cgroup";
	}
	return "?";
}

static uint32_t idx_of(const struct rt_targets *ts, const struct rt_target *t)
{
	return (uint32_t)(t - ts->t) + 1;
}

static struct rt_target *new_target(struct rt_targets *ts, enum rt_target_kind kind)
{
	struct rt_target *t;

	if (ts->n >= RT_TARGETS_MAX)
		return NULL;
	t = &ts->t[ts->n++];
	memset(t, 0, sizeof(*t));
	memset(&ts->priv[ts->n - 1], 0, sizeof(ts->priv[0]));
	t->kind = kind;
	t->group_id = ts->n;
	return t;
}

int rt_targets__add_pid(struct rt_targets *ts, pid_t pid)
{
	struct rt_target *t;

	if (pid <= 0)
		return -EINVAL;
	t = new_target(ts, RT_TARGET_PID);
	if (!t)
		return -ENOSPC;
	t->root = pid;
	snprintf(t->group, sizeof(t->group), "pid:%d", pid);
	return 0;
}

int rt_targets__add_port(struct rt_targets *ts, uint16_t port)
{
	struct rt_target *t;

	if (!port)
		return -EINVAL;
	t = new_target(ts, RT_TARGET_PORT);
	if (!t)
		return -ENOSPC;
	t->port = port;
	snprintf(t->group, sizeof(t->group), "port:%u", port);
	return 0;
}

int rt_targets__add_comm(struct rt_targets *ts, const char *comm)
{
	struct rt_target *t;

	if (!*comm || strlen(comm) >= RT_COMM_LEN)
		return -EINVAL;
	t = new_target(ts, RT_TARGET_COMM);
	if (!t)
		return -ENOSPC;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	snprintf(t->group, sizeof(t->group), "comm:%.15s", comm);
	return 0;
}

int rt_targets__add_cgroup(struct rt_targets *ts, const char *path)
{
	char dir[RT_TARGET_CGROUP_LEN];
	const char *rel, *base;
	struct rt_target *t;
	int err;

	err = rt_procfs_cgroup_path(path, dir, sizeof(dir));
	if (err)
		return err;
	t = new_target(ts, RT_TARGET_CGROUP);
	if (!t)
		return -ENOSPC;
	memcpy(t->cgroup, dir, sizeof(dir));
	/* the name operators know: the path inside the hierarchy, or its last part */
	rel = dir;
	if (!strncmp(rel, "/sys/fs/cgroup/", 15))
		rel += 15;
	if (!strncmp(rel, "unified/", 8))
		rel += 8;
	base = strrchr(dir, '/');
	base = base && base[1] ? base + 1 : dir;
	if (strlen("cgroup:") + strlen(rel) < sizeof(t->group))
		snprintf(t->group, sizeof(t->group), "cgroup:%.24s", rel);
	else
		snprintf(t->group, sizeof(t->group), "cgroup:%.24s", base);
	return 0;
}

static struct traced *find(struct rt_targets *ts, pid_t pid)
{
	uint32_t i;

	for (i = 0; i < ts->n_pids; i++)
		if (ts->pids[i].pid == pid)
			return &ts->pids[i];
	return NULL;
}

/* Trace pid as a member of t (call: tell the daemon; else the kernel already does). */
static int trace_pid(struct rt_targets *ts, struct rt_target *t, pid_t pid, bool call)
{
	int err;

	if (find(ts, pid))
		return -EEXIST;
	if (ts->n_pids >= RT_TRACED_PIDS_MAX) {
		ts->st.pids_dropped++;
		return -ENOSPC;
	}
	if (call) {
		err = ts->cb.add(ts->cb.ctx, t, pid);
		if (err)
			return err;
	}
	ts->pids[ts->n_pids].pid = pid;
	ts->pids[ts->n_pids].target = idx_of(ts, t);
	ts->pids[ts->n_pids].seen = true;
	ts->n_pids++;
	return 0;
}

static void untrace(struct rt_targets *ts, pid_t pid, bool call, bool left)
{
	uint32_t i;

	for (i = 0; i < ts->n_pids; i++) {
		if (ts->pids[i].pid != pid)
			continue;
		if (call)
			ts->cb.remove(ts->cb.ctx, &ts->t[ts->pids[i].target - 1], pid, left);
		ts->pids[i] = ts->pids[--ts->n_pids];
		return;
	}
}

static pid_t first_member(const struct rt_targets *ts, uint32_t idx)
{
	uint32_t i;

	for (i = 0; i < ts->n_pids; i++)
		if (ts->pids[i].target == idx)
			return ts->pids[i].pid;
	return 0;
}

/* Existing children of a new member; later ones the kernel adds itself. */
static void trace_descendants(struct rt_targets *ts, struct rt_target *t, pid_t root)
{
	int n, i;

	n = rt_procfs_descendants(root, ts->kids, DESC_MAX);
	for (i = 0; i < n; i++)
		trace_pid(ts, t, ts->kids[i], true);
}

static void activate(struct rt_targets *ts, struct rt_target *t, pid_t root, uint64_t netns)
{
	int err;

	err = trace_pid(ts, t, root, true);
	if (err && err != -EEXIST) {
		wlog("target %s: cannot trace pid %d: %s", t->group, root, strerror(-err));
		return;
	}
	t->root = root;
	t->active = true;
	t->activations++;
	t->netns = netns;
	if (!netns)
		rt_procfs_netns(root, &t->netns);
	ilog("target %s: tracing pid %d (network namespace %llu)", t->group, root,
	     (unsigned long long)t->netns);
	trace_descendants(ts, t, root);
}

static void deactivate(struct rt_targets *ts, struct rt_target *t)
{
	uint32_t i, idx = idx_of(ts, t);

	ilog("target %s: pid %d is gone%s", t->group, t->root,
	     t->kind == RT_TARGET_PORT ? ", waiting for a new listener" : "");
	for (i = 0; i < ts->n_pids;) {
		if (ts->pids[i].target == idx)
			untrace(ts, ts->pids[i].pid, true, false);
		else
			i++;
	}
	t->active = false;
	if (t->kind != RT_TARGET_PID) {
		t->root = 0;
		t->netns = 0;
	}
}

/*
 * Multi-member targets (comm, cgroup) stay active while any member is
 * traced; root is one of them, for status. A member leaving never takes
 * the others with it.
 */
static void refresh(struct rt_targets *ts, struct rt_target *t)
{
	uint32_t idx = idx_of(ts, t);
	struct traced *p = t->root ? find(ts, t->root) : NULL;

	if (p && p->target == idx)
		return;
	t->root = first_member(ts, idx);
	t->netns = 0;
	if (t->root) {
		rt_procfs_netns(t->root, &t->netns);
		if (!t->active)
			t->activations++;
		t->active = true;
	} else if (t->active) {
		t->active = false;
		ilog("target %s: no process left, waiting for one", t->group);
	}
}

/*
 * Bring t's members in line with found[]: trace new ones; a member not found
 * again leaves (exact: a cgroup's members are exactly its cgroup.procs) or,
 * for --comm, whose descendants keep other names, only once it is dead.
 */
static void sync_members(struct rt_targets *ts, struct rt_target *t, int n, bool exact)
{
	uint32_t i, idx = idx_of(ts, t);
	int k, err;

	for (i = 0; i < ts->n_pids; i++)
		if (ts->pids[i].target == idx)
			ts->pids[i].seen = false;
	for (k = 0; k < n; k++) {
		pid_t pid = ts->found[k];
		struct traced *p = find(ts, pid);

		if (p) { /* already traced (by another target: it stays there) */
			if (p->target == idx)
				p->seen = true;
			continue;
		}
		err = trace_pid(ts, t, pid, true);
		if (err) {
			if (!ts->priv[idx - 1].warned)
				wlog("target %s: cannot trace pid %d: %s", t->group, pid,
				     strerror(-err));
			ts->priv[idx - 1].warned = true;
			continue;
		}
		ilog("target %s: tracing pid %d", t->group, pid);
		if (!exact && ts->desc_lookups < DESC_LOOKUPS_PER_SCAN) {
			ts->desc_lookups++;
			trace_descendants(ts, t, pid);
		}
	}
	for (i = 0; i < ts->n_pids;) {
		struct traced *p = &ts->pids[i];
		bool alive;

		if (p->target != idx || p->seen) {
			i++;
			continue;
		}
		alive = rt_procfs_alive(p->pid);
		if (exact && alive) {
			ilog("target %s: pid %d left the cgroup", t->group, p->pid);
			untrace(ts, p->pid, true, true);
		} else if (!alive) {
			untrace(ts, p->pid, true, false);
		} else {
			i++;
		}
	}
	refresh(ts, t);
}

static void scan_port(struct rt_targets *ts, struct rt_target *t)
{
	struct rt_procfs_listener l;
	int err;

	err = rt_procfs_find_listener(t->port, &l);
	ts->st.netns_skipped = l.netns_skipped;
	if (err > 0)
		activate(ts, t, l.pid, l.netns);
}

static void scan_cgroup(struct rt_targets *ts, struct rt_target *t)
{
	struct target_priv *pv = &ts->priv[idx_of(ts, t) - 1];
	bool truncated;
	int n;

	n = rt_procfs_cgroup_pids(t->cgroup, ts->found, RT_TRACED_PIDS_MAX, &truncated);
	if (truncated)
		ts->st.cgroup_truncated++;
	if (n < 0) {
		if (!pv->warned)
			wlog("target %s: %s: %s; waiting for it", t->group, t->cgroup,
			     strerror(-n));
		pv->warned = true;
		n = 0; /* the cgroup went away: so did its members */
	} else {
		pv->warned = false;
	}
	sync_members(ts, t, n, true);
}

void rt_targets__scan(struct rt_targets *ts)
{
	uint32_t i;
	int n;

	ts->desc_lookups = 0;
	for (i = 0; i < ts->n; i++) {
		struct rt_target *t = &ts->t[i];

		switch (t->kind) {
		case RT_TARGET_PID:
			if (t->active && !rt_procfs_alive(t->root))
				deactivate(ts, t);
			else if (!t->active && !t->activations && rt_procfs_alive(t->root))
				activate(ts, t, t->root, 0);
			break;
		case RT_TARGET_PORT:
			if (t->active && !rt_procfs_alive(t->root))
				deactivate(ts, t);
			if (!t->active)
				scan_port(ts, t);
			break;
		case RT_TARGET_COMM:
			n = rt_procfs_by_comm(t->comm, ts->found, RT_TRACED_PIDS_MAX);
			sync_members(ts, t, n > 0 ? n : 0, false);
			break;
		case RT_TARGET_CGROUP:
			scan_cgroup(ts, t);
			break;
		}
	}
}

void rt_targets__observe(struct rt_targets *ts, const struct rt_event_hdr *ev)
{
	struct traced *p;

	switch (ev->kind) {
	case RT_EV_TASK_NEW: {
		const struct rt_ev_task_new *tn = (const void *)ev;

		if (ev->size < sizeof(*tn) || (tn->clone_flags & CLONE_THREAD))
			return;
		p = find(ts, (pid_t)ev->pid);
		/* the kernel already traces the child: only record it */
		if (p)
			trace_pid(ts, &ts->t[p->target - 1], (pid_t)tn->child_pid, false);
		break;
	}
	case RT_EV_PROC_EXIT: {
		const struct rt_ev_proc_exit *x = (const void *)ev;
		struct rt_target *t;

		if (ev->size < sizeof(*x) || !x->group_dead || !(p = find(ts, (pid_t)ev->pid)))
			return;
		t = &ts->t[p->target - 1];
		if (t->kind == RT_TARGET_COMM || t->kind == RT_TARGET_CGROUP) {
			untrace(ts, (pid_t)ev->pid, true, false);
			refresh(ts, t);
		} else if (t->active && t->root == (pid_t)ev->pid) {
			deactivate(ts, t);
		} else {
			untrace(ts, (pid_t)ev->pid, true, false);
		}
		break;
	}
	default:
		break;
	}
}

uint32_t rt_targets__count(const struct rt_targets *ts)
{
	return ts->n;
}

const struct rt_target *rt_targets__get(const struct rt_targets *ts, uint32_t i)
{
	return i < ts->n ? &ts->t[i] : NULL;
}

int rt_targets__pids(const struct rt_targets *ts, uint32_t group_id, pid_t *out, int max)
{
	uint32_t i;
	int n = 0;

	for (i = 0; i < ts->n_pids && n < max; i++)
		if (!group_id || ts->t[ts->pids[i].target - 1].group_id == group_id)
			out[n++] = ts->pids[i].pid;
	return n;
}

uint32_t rt_targets__group_of(const struct rt_targets *ts, pid_t pid)
{
	uint32_t i;

	for (i = 0; i < ts->n_pids; i++)
		if (ts->pids[i].pid == pid)
			return ts->t[ts->pids[i].target - 1].group_id;
	return 0;
}

void rt_targets__stats(const struct rt_targets *ts, struct rt_targets_stats *st)
{
	*st = ts->st;
}
