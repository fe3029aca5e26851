// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/targets.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon/procfs.h"

struct traced {
	pid_t pid;
	uint32_t target; /* index + 1 */
};

struct rt_targets {
	struct rt_targets_cb cb;
	struct rt_target t[RT_TARGETS_MAX];
	uint32_t n;
	struct traced pids[RT_TRACED_PIDS_MAX];
	uint32_t n_pids;
	uint64_t pids_dropped;
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

static struct rt_target *new_target(struct rt_targets *ts, enum rt_target_kind kind)
{
	struct rt_target *t;

	if (ts->n >= RT_TARGETS_MAX)
		return NULL;
	t = &ts->t[ts->n++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->group_id = ts->n;
	return t;
}

int rt_targets__add_pid(struct rt_targets *ts, pid_t pid)
{
	struct rt_target *t = new_target(ts, RT_TARGET_PID);

	if (!t)
		return -ENOSPC;
	t->root = pid;
	snprintf(t->group, sizeof(t->group), "pid:%d", pid);
	return 0;
}

int rt_targets__add_port(struct rt_targets *ts, uint16_t port)
{
	struct rt_target *t = new_target(ts, RT_TARGET_PORT);

	if (!t)
		return -ENOSPC;
	t->port = port;
	snprintf(t->group, sizeof(t->group), "port:%u", port);
	return 0;
}

int rt_targets__add_comm(struct rt_targets *ts, const char *comm)
{
	struct rt_target *t = new_target(ts, RT_TARGET_COMM);

	if (!t)
		return -ENOSPC;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	snprintf(t->group, sizeof(t->group), "comm:%.15s", comm);
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

static int trace_pid(struct rt_targets *ts, struct rt_target *t, pid_t pid, bool call)
{
	int err;

	if (find(ts, pid))
		return 0;
	if (ts->n_pids >= RT_TRACED_PIDS_MAX) {
		ts->pids_dropped++;
		return -ENOSPC;
	}
	if (call) {
		err = ts->cb.add(ts->cb.ctx, t, pid);
		if (err)
			return err;
	}
	ts->pids[ts->n_pids].pid = pid;
	ts->pids[ts->n_pids].target = (uint32_t)(t - ts->t) + 1;
	ts->n_pids++;
	return 0;
}

static void untrace(struct rt_targets *ts, pid_t pid, bool call)
{
	uint32_t i;

	for (i = 0; i < ts->n_pids; i++) {
		if (ts->pids[i].pid != pid)
			continue;
		if (call)
			ts->cb.remove(ts->cb.ctx, &ts->t[ts->pids[i].target - 1], pid);
		ts->pids[i] = ts->pids[--ts->n_pids];
		return;
	}
}

static void activate(struct rt_targets *ts, struct rt_target *t, pid_t root)
{
	pid_t kids[1024];
	int n, i, err;

	err = trace_pid(ts, t, root, true);
	if (err) {
		wlog("target %s: cannot trace pid %d: %s", t->group, root, strerror(-err));
		return;
	}
	t->root = root;
	t->active = true;
	t->activations++;
	ilog("target %s: tracing pid %d", t->group, root);
	/* descendants that exist now; later ones the kernel adds itself */
	n = rt_procfs_descendants(root, kids, 1024);
	for (i = 0; i < n; i++)
		trace_pid(ts, t, kids[i], true);
}

static void deactivate(struct rt_targets *ts, struct rt_target *t)
{
	uint32_t i, idx = (uint32_t)(t - ts->t) + 1;

	ilog("target %s: pid %d is gone%s", t->group, t->root,
	     t->kind == RT_TARGET_PORT ? ", waiting for a new listener" : "");
	for (i = 0; i < ts->n_pids;) {
		if (ts->pids[i].target == idx)
			untrace(ts, ts->pids[i].pid, true);
		else
			i++;
	}
	t->active = false;
	if (t->kind != RT_TARGET_PID)
		t->root = 0;
}

void rt_targets__scan(struct rt_targets *ts)
{
	uint32_t i;

	for (i = 0; i < ts->n; i++) {
		struct rt_target *t = &ts->t[i];
		pid_t pid = 0, found[64];
		int n;

		if (t->active) {
			if (!rt_procfs_alive(t->root))
				deactivate(ts, t);
			else if (t->kind != RT_TARGET_COMM)
				continue;
		}
		switch (t->kind) {
		case RT_TARGET_PID:
			if (!t->activations && rt_procfs_alive(t->root))
				pid = t->root;
			break;
		case RT_TARGET_PORT:
			n = rt_procfs_listener(t->port, 0);
			pid = n > 0 ? n : 0;
			break;
		case RT_TARGET_COMM:
			/* every process of that name is a member, found as they appear */
			n = rt_procfs_by_comm(t->comm, found, 64);
			for (int k = 0; k < n; k++) {
				if (!t->active) {
					activate(ts, t, found[k]);
					continue;
				}
				if (!find(ts, found[k]) && trace_pid(ts, t, found[k], true) == 0)
					ilog("target %s: tracing pid %d", t->group, found[k]);
			}
			continue;
		}
		if (pid > 0)
			activate(ts, t, pid);
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
		if (t->active && t->root == (pid_t)ev->pid)
			deactivate(ts, t);
		else
			untrace(ts, (pid_t)ev->pid, true);
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
