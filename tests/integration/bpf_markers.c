// SPDX-License-Identifier: BSD-2-Clause
/*
 * Marker uprobes on the real libreqtrace_marker.so (RT_MARKER_LIB): a traced
 * child dlopens it and calls every function; the untraced parent calls them
 * too and must not show up.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <reqtrace/marker.h>

#include "bpf_test_util.h"

#define BIG_STEP (RT_MARK_STEP_MAX + 44)

struct marker_api {
	void (*begin)(const char *, enum rt_phase);
	void (*end)(const char *, enum rt_phase);
	void (*step_begin)(uint64_t, uint32_t, const char *const *);
	void (*step_begin_tokens)(uint64_t, uint32_t, const char *const *, const uint32_t *);
	void (*step_end)(uint64_t);
	void (*bind)(const char *, const char *);
};

static struct rt_bpf_source *src;
static char big_ids[BIG_STEP][16];

static int load_api(struct marker_api *m)
{
	void *h = dlopen(RT_MARKER_LIB, RTLD_NOW);

	if (!h)
		return -1;
	m->begin = (void (*)(const char *, enum rt_phase))dlsym(h, "rt_mark_begin");
	m->end = (void (*)(const char *, enum rt_phase))dlsym(h, "rt_mark_end");
	m->step_begin =
		(void (*)(uint64_t, uint32_t, const char *const *))dlsym(h, "rt_mark_step_begin");
	m->step_begin_tokens = (void (*)(uint64_t, uint32_t, const char *const *,
					 const uint32_t *))dlsym(h, "rt_mark_step_begin_tokens");
	m->step_end = (void (*)(uint64_t))dlsym(h, "rt_mark_step_end");
	m->bind = (void (*)(const char *, const char *))dlsym(h, "rt_mark_bind");
	return m->begin && m->end && m->step_begin && m->step_begin_tokens && m->step_end &&
			       m->bind ?
		       0 :
		       -1;
}

static int engine(struct rt_test_child *ch, void *arg)
{
	const char *ids[3] = { "req-a", NULL,
			       "req-ccccccccccccccccccccccccccccccccccccccccccccccc"
			       "ccccccccccccccccccccccc-too-long" };
	const char *many[BIG_STEP];
	const char *tok_ids[2] = { "req-p", "req-d" };
	const uint32_t toks[2] = { 300, 1 };
	struct marker_api m;
	pid_t tid = gettid();
	int i;

	(void)arg;
	if (load_api(&m))
		return 10;
	for (i = 0; i < BIG_STEP; i++)
		many[i] = big_ids[i];
	m.begin(NULL, RT_PHASE_QUEUE); /* ignored */
	m.begin("req-a", RT_PHASE_QUEUE);
	m.end("req-a", RT_PHASE_QUEUE);
	m.step_begin(42, 3, ids);
	m.step_end(42);
	m.bind("engine-7", "req-a");
	/* continuous batching: a 300-token prefill beside a 1-token decode */
	m.step_begin_tokens(44, 2, tok_ids, toks);
	m.step_end(44);
	m.step_begin(43, BIG_STEP, many);
	m.step_end(43);
	return write(ch->child_out_fd, &tid, sizeof(tid)) == sizeof(tid) ? 0 : 11;
}

static bool step_end_43(const struct rt_collect *c, const void *arg)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_mark_step *e = (const void *)c->recs[i];

		if (e->hdr.kind == RT_EV_MARK_STEP_END && e->hdr.pid == *(const __u32 *)arg &&
		    e->step_id == 43)
			return true;
	}
	return false;
}

static void test_markers(void **state)
{
	const struct rt_event_hdr *hs[BIG_STEP + 8];
	char path[PATH_MAX];
	struct marker_api m;
	struct rt_test_child ch;
	struct rt_bpf_stats st;
	struct rt_collect c;
	__u64 step_ts = 0, tok_ts = 0;
	pid_t tid = 0;
	__u32 pid;
	size_t i, n;
	int status;

	(void)state;
	rt_collect_init(&c, 1 << 20);
	assert_int_equal(rt_bpf_source__attach_markers(src, RT_MARKER_LIB), 0);
	/* same file under another path: deduplicated by device and inode */
	snprintf(path, sizeof(path), "/proc/self/root%s", RT_MARKER_LIB);
	assert_int_equal(rt_bpf_source__attach_markers(src, path), 0);
	assert_int_equal(rt_bpf_source__attach_markers(src, "/nonexistent/lib.so"), -ENOENT);
	/* a library without the symbols */
	assert_true(rt_bpf_source__attach_markers(src, "/bin/true") < 0);

	/* the untraced parent calls the same probed functions */
	assert_int_equal(load_api(&m), 0);
	m.begin("untraced", RT_PHASE_DECODE);

	assert_int_equal(rt_test_child_start(&ch, engine, NULL), 0);
	pid = ch.pid;
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read(ch.out_fd, &tid, sizeof(tid)), sizeof(tid));
	status = rt_test_child_wait(&ch);
	assert_int_equal(status, 0);
	m.end("untraced", RT_PHASE_DECODE);
	assert_true(rt_collect_until(src, &c, step_end_43, &pid, 5000));

	for (i = 0; i < c.n; i++) {
		const struct rt_event_hdr *h = c.recs[i];

		if (h->kind >= RT_EV_MARK_BEGIN && h->kind <= RT_EV_MARK_STEP_TOKENS) {
			assert_int_equal(h->pid, pid);
			assert_int_equal(h->tid, tid);
		}
	}

	n = rt_collect_find(&c, RT_EV_MARK_BEGIN, pid, hs, 4);
	assert_int_equal(n, 1); /* the NULL id was ignored */
	{
		const struct rt_ev_mark *e = (const void *)hs[0];

		assert_int_equal(e->phase, RT_PHASE_QUEUE);
		assert_int_equal(e->id_len, 5);
		assert_string_equal(e->request_id, "req-a");
	}
	n = rt_collect_find(&c, RT_EV_MARK_END, pid, hs, 4);
	assert_int_equal(n, 1);
	assert_string_equal(((const struct rt_ev_mark *)hs[0])->request_id, "req-a");
	assert_true(hs[0]->ts_ns > 0);

	n = rt_collect_find(&c, RT_EV_MARK_STEP_BEGIN, pid, hs, 4);
	assert_int_equal(n, 3);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[0])->step_id, 42);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[0])->n_requests, 3);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[1])->step_id, 44);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[1])->n_requests, 2);
	tok_ts = hs[1]->ts_ns;
	assert_int_equal(((const struct rt_ev_mark_step *)hs[2])->step_id, 43);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[2])->n_requests, BIG_STEP);
	step_ts = hs[0]->ts_ns;

	/* rt_mark_step_begin_tokens: each member, then its count, at the step's time */
	n = rt_collect_find(&c, RT_EV_MARK_STEP_TOKENS, pid, hs, 4);
	assert_int_equal(n, 2);
	for (i = 0; i < 2; i++) {
		const struct rt_ev_mark_step_tokens *e = (const void *)hs[i];

		assert_int_equal(e->step_id, 44);
		assert_int_equal(e->index, i);
		assert_int_equal(e->tokens, i ? 1 : 300);
		assert_int_equal(e->hdr.ts_ns, tok_ts);
		assert_int_equal(e->hdr.tid, tid);
	}

	n = rt_collect_find(&c, RT_EV_MARK_STEP_MEMBER, pid, hs, BIG_STEP + 8);
	assert_int_equal(n, 3 + 2 + RT_MARK_STEP_MAX);
	assert_string_equal(((const struct rt_ev_mark_step *)hs[3])->request_id, "req-p");
	assert_string_equal(((const struct rt_ev_mark_step *)hs[4])->request_id, "req-d");
	for (i = 0; i < 3; i++) {
		const struct rt_ev_mark_step *e = (const void *)hs[i];

		assert_int_equal(e->step_id, 42);
		assert_int_equal(e->index, i);
		assert_int_equal(e->hdr.ts_ns, step_ts);
	}
	assert_string_equal(((const struct rt_ev_mark_step *)hs[0])->request_id, "req-a");
	assert_string_equal(((const struct rt_ev_mark_step *)hs[1])->request_id, "");
	/* truncated to RT_ID_LEN - 1 bytes */
	assert_int_equal(strlen(((const struct rt_ev_mark_step *)hs[2])->request_id),
			 RT_ID_LEN - 1);
	for (i = 0; i < RT_MARK_STEP_MAX; i++) {
		const struct rt_ev_mark_step *e = (const void *)hs[5 + i];

		assert_int_equal(e->step_id, 43);
		assert_int_equal(e->index, i);
		assert_string_equal(e->request_id, big_ids[i]);
	}

	n = rt_collect_find(&c, RT_EV_LOSS, pid, hs, 4);
	assert_int_equal(n, 1);
	{
		const struct rt_ev_loss *e = (const void *)hs[0];

		assert_int_equal(e->count, BIG_STEP - RT_MARK_STEP_MAX);
		assert_int_equal(e->reason, RT_LOSS_STEP_TRUNC);
		assert_int_equal(e->lost_kind, RT_EV_MARK_STEP_MEMBER);
	}

	n = rt_collect_find(&c, RT_EV_MARK_STEP_END, pid, hs, 4);
	assert_int_equal(n, 3);
	assert_int_equal(((const struct rt_ev_mark_step *)hs[0])->step_id, 42);

	n = rt_collect_find(&c, RT_EV_MARK_BIND, pid, hs, 4);
	assert_int_equal(n, 1);
	assert_string_equal(((const struct rt_ev_mark_bind *)hs[0])->engine_id, "engine-7");
	assert_string_equal(((const struct rt_ev_mark_bind *)hs[0])->request_id, "req-a");

	assert_int_equal(rt_bpf_source__stats(src, &st), 0);
	assert_int_equal(st.n_marker_libs, 1);
	assert_int_equal(st.step_trunc, 1);
	assert_int_equal(st.lost_total, 0);
	assert_int_equal(c.wm_violations, 0);
	rt_collect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_markers),
	};
	struct rt_bpf_source_opts opts = { .source_id = 2 };
	int i, rc;

	for (i = 0; i < BIG_STEP; i++)
		snprintf(big_ids[i], sizeof(big_ids[i]), "big-%d", i);
	src = rt_test_source(&opts);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rt_bpf_source__free(src);
	return rc;
}
