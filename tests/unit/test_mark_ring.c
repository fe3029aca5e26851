// SPDX-License-Identifier: BSD-2-Clause
/*
 * The marker ring (include/reqtrace/mark_ring.h): the library's producer
 * and record writers against the daemon's consumer, on plain memory. Many
 * threads at once, a producer stopped between reservation and commit,
 * wraparound with variable-length slots, the watermark, and a hostile
 * producer's framing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <reqtrace/mark_ring.h>

#include "mlib.h"
#include "sources/mark_ring.h"

#define RING_SIZE (64U * 1024)
#define SRC 77
#define PID 4242
#define HORIZON 200000000ULL

struct fx {
	void *map;
	struct rt_mring p;
	struct rt_mark_cons *c;
	/* what the consumer handed out */
	int n;
	/* records as handed out; REC(f, i): aligned as the structs they hold */
	__u8 raw[4096][256] __attribute__((aligned(8)));
};

#define REC(f, i) ((struct rt_ev_mark_step *)(f)->raw[i])

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static struct fx *fx_new(__u64 size)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct rt_inject_ring *shm;

	assert_non_null(f);
	f->map = aligned_alloc(4096, RT_INJECT_RING_HDR_SIZE + size);
	assert_non_null(f->map);
	memset(f->map, 0, RT_INJECT_RING_HDR_SIZE + size);
	shm = f->map;
	shm->magic = RT_MARK_RING_MAGIC;
	shm->version = RT_INJECT_VERSION;
	shm->hdr_size = RT_INJECT_RING_HDR_SIZE;
	shm->data_size = size;
	shm->source_id = SRC;
	shm->pid = PID;
	shm->cons_state = RT_INJECT_CONS_ACTIVE;
	assert_int_equal(rt_mring_init(&f->p, f->map, RT_INJECT_RING_HDR_SIZE, size), 0);
	f->c = malloc(sizeof(*f->c));
	assert_non_null(f->c);
	rt_mark_cons__init(f->c, shm, size);
	return f;
}

static void fx_free(struct fx *f)
{
	free(f->c);
	free(f->map);
	free(f);
}

static int keep(const struct rt_event_hdr *ev, void *ctx)
{
	struct fx *f = ctx;

	assert_true(ev->size <= sizeof(f->raw[0]));
	if (f->n < (int)(sizeof(f->raw) / sizeof(f->raw[0])))
		memcpy(f->raw[f->n], ev, ev->size);
	f->n++;
	return 0;
}

static int drain(struct fx *f, __u64 now)
{
	return rt_mark_cons__drain(f->c, now, HORIZON, 1U << 30, keep, f);
}

static void test_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct rt_mark_slot), 16);
	/* the largest step (every member and a truncation LOSS) fits one slot */
	assert_true(sizeof(struct rt_mark_slot) +
			    (1 + RT_MARK_STEP_MAX) * sizeof(struct rt_ev_mark_step) +
			    sizeof(struct rt_ev_loss) <=
		    RT_MARK_SLOT_MAX);
	assert_true(RT_MARK_SLOT_MAX <= RT_INJECT_RING_MIN);
}

/* The records are the BPF programs' records, field for field. */
static void test_records(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	const char *ids[3] = { "req-a", NULL, "req-c" };
	char long_id[100];
	const struct rt_ev_mark *m;
	const struct rt_ev_mark_bind *b;
	__u64 t0 = now_ns();

	(void)state;
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(rt_mark_w_mark(&f->p, RT_EV_MARK_BEGIN, "req-a", RT_PHASE_PREFILL), 0);
	assert_int_equal(rt_mark_w_mark(&f->p, RT_EV_MARK_END, NULL, RT_PHASE_PREFILL), 0);
	assert_int_equal(rt_mark_w_mark(&f->p, RT_EV_MARK_END, long_id, RT_PHASE_DECODE), 0);
	assert_int_equal(rt_mark_w_step_begin(&f->p, 9, 3, ids), 0);
	assert_int_equal(rt_mark_w_step_end(&f->p, 9), 0);
	assert_int_equal(rt_mark_w_bind(&f->p, "eng-1", "req-a"), 0);
	assert_int_equal(rt_mark_w_bind(&f->p, NULL, "req-a"), 0);
	assert_int_equal(drain(f, now_ns()), 8);

	m = (const void *)REC(f, 0);
	assert_int_equal(m->hdr.kind, RT_EV_MARK_BEGIN);
	assert_int_equal(m->hdr.size, sizeof(struct rt_ev_mark));
	assert_int_equal(m->hdr.source, SRC);
	assert_int_equal(m->hdr.pid, PID);
	assert_true(m->hdr.tid != 0);
	assert_true(m->hdr.ts_ns >= t0);
	assert_int_equal(m->phase, RT_PHASE_PREFILL);
	assert_int_equal(m->id_len, 5);
	assert_string_equal(m->request_id, "req-a");
	/* the NULL id was ignored; a long id is cut at RT_ID_LEN - 1 */
	m = (const void *)REC(f, 1);
	assert_int_equal(m->hdr.kind, RT_EV_MARK_END);
	assert_int_equal(m->id_len, RT_ID_LEN - 1);
	assert_int_equal(m->request_id[RT_ID_LEN - 1], '\0');
	/* step: BEGIN then one member per listed id, the NULL one empty */
	assert_int_equal(REC(f, 2)->hdr.kind, RT_EV_MARK_STEP_BEGIN);
	assert_int_equal(REC(f, 2)->step_id, 9);
	assert_int_equal(REC(f, 2)->n_requests, 3);
	assert_int_equal(REC(f, 3)->hdr.kind, RT_EV_MARK_STEP_MEMBER);
	assert_string_equal(REC(f, 3)->request_id, "req-a");
	assert_int_equal(REC(f, 4)->index, 1);
	assert_string_equal(REC(f, 4)->request_id, "");
	assert_int_equal(REC(f, 5)->index, 2);
	assert_string_equal(REC(f, 5)->request_id, "req-c");
	assert_int_equal(REC(f, 5)->hdr.ts_ns, REC(f, 2)->hdr.ts_ns);
	assert_int_equal(REC(f, 6)->hdr.kind, RT_EV_MARK_STEP_END);
	b = (const void *)REC(f, 7);
	assert_int_equal(b->hdr.kind, RT_EV_MARK_BIND);
	assert_string_equal(b->engine_id, "eng-1");
	assert_string_equal(b->request_id, "req-a");
	fx_free(f);
}

/* More than RT_MARK_STEP_MAX ids: the members stop there, a LOSS says how many. */
static void test_step_trunc(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	const char *ids[RT_MARK_STEP_MAX + 5];
	const struct rt_ev_loss *l;
	int i;

	(void)state;
	for (i = 0; i < RT_MARK_STEP_MAX + 5; i++)
		ids[i] = "r";
	assert_int_equal(rt_mark_w_step_begin(&f->p, 1, RT_MARK_STEP_MAX + 5, ids), 0);
	assert_int_equal(drain(f, now_ns()), 1 + RT_MARK_STEP_MAX + 1);
	l = (const void *)REC(f, 1 + RT_MARK_STEP_MAX);
	assert_int_equal(l->hdr.kind, RT_EV_LOSS);
	assert_int_equal(l->reason, RT_LOSS_STEP_TRUNC);
	assert_int_equal(l->count, 5);
	assert_int_equal(l->lost_kind, RT_EV_MARK_STEP_MEMBER);
	fx_free(f);
}

/* Token counts: a STEP_TOKENS after each member, as bpf/marker.bpf.c writes them. */
static void test_step_tokens(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	static const char *ids[RT_MARK_STEP_MAX + 1];
	static uint32_t tok[RT_MARK_STEP_MAX + 1];
	const struct rt_ev_mark_step_tokens *t;
	int i;

	(void)state;
	ids[0] = "prefill";
	ids[1] = "decode";
	tok[0] = 300;
	tok[1] = 1;
	assert_int_equal(rt_mark_w_step_begin_tokens(&f->p, 5, 2, ids, tok), 0);
	assert_int_equal(drain(f, now_ns()), 5);
	assert_int_equal(REC(f, 0)->hdr.kind, RT_EV_MARK_STEP_BEGIN);
	assert_int_equal(REC(f, 1)->hdr.kind, RT_EV_MARK_STEP_MEMBER);
	assert_string_equal(REC(f, 1)->request_id, "prefill");
	t = (const void *)REC(f, 2);
	assert_int_equal(t->hdr.kind, RT_EV_MARK_STEP_TOKENS);
	assert_int_equal(t->hdr.size, sizeof(*t));
	assert_int_equal(t->step_id, 5);
	assert_int_equal(t->index, 0);
	assert_int_equal(t->tokens, 300);
	assert_int_equal(t->hdr.ts_ns, REC(f, 0)->hdr.ts_ns);
	assert_string_equal(REC(f, 3)->request_id, "decode");
	t = (const void *)REC(f, 4);
	assert_int_equal(t->hdr.kind, RT_EV_MARK_STEP_TOKENS);
	assert_int_equal(t->index, 1);
	assert_int_equal(t->tokens, 1);
	fx_free(f);

	/* the largest step still fits one slot: every member, its count, the LOSS */
	f = fx_new(RING_SIZE * 4);
	for (i = 0; i < RT_MARK_STEP_MAX + 1; i++) {
		ids[i] = "r";
		tok[i] = (uint32_t)i;
	}
	assert_int_equal(rt_mark_w_step_begin_tokens(&f->p, 6, RT_MARK_STEP_MAX + 1, ids, tok), 0);
	assert_int_equal(drain(f, now_ns()), 1 + 2 * RT_MARK_STEP_MAX + 1);
	t = (const void *)REC(f, 2 * RT_MARK_STEP_MAX);
	assert_int_equal(t->tokens, RT_MARK_STEP_MAX - 1);
	assert_int_equal(REC(f, 1 + 2 * RT_MARK_STEP_MAX)->hdr.kind, RT_EV_LOSS);
	fx_free(f);
}

/* Many laps of slots of varying length: every record once, in order, pads skipped. */
static void test_wraparound(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	const char *ids[40];
	__u64 step = 0, seen = 0;
	int i, k, n;

	(void)state;
	for (i = 0; i < 40; i++)
		ids[i] = "member";
	for (k = 0; k < 400; k++) {
		/* 1 to 40 members: slots of 120 B to 4.3 KiB, never a multiple of the ring */
		n = (int)(k * 7 % 40) + 1;
		assert_int_equal(rt_mark_w_step_begin(&f->p, step++, (uint32_t)n, ids), 0);
		f->n = 0;
		assert_int_equal(drain(f, now_ns()), n + 1);
		assert_int_equal(REC(f, 0)->hdr.kind, RT_EV_MARK_STEP_BEGIN);
		assert_int_equal(REC(f, 0)->step_id, seen++);
		assert_int_equal(REC(f, n)->index, n - 1);
	}
	/* laps: the producer went round several times */
	assert_true(__atomic_load_n(&f->c->shm->prod_pos, __ATOMIC_RELAXED) > 10 * RING_SIZE);
	assert_int_equal(f->c->cons, f->c->shm->prod_pos);
	fx_free(f);
}

/* Full: the producer drops and counts, never overwrites unconsumed slots. */
static void test_full(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	int i, written = 0;

	(void)state;
	for (i = 0; i < 2000; i++)
		rt_mark_w_mark(&f->p, RT_EV_MARK_BEGIN, "r", RT_PHASE_QUEUE);
	written = (int)(RING_SIZE / (sizeof(struct rt_mark_slot) + sizeof(struct rt_ev_mark)));
	assert_int_equal(drain(f, now_ns()), written);
	assert_int_equal(rt_mark_cons__new_drops(f->c), 2000 - written);
	assert_int_equal(rt_mark_cons__new_drops(f->c), 0);
	fx_free(f);
}

/*
 * A producer stopped between its reservation and its commit: the slots
 * after it wait, and so does the watermark, but only for the horizon.
 */
static void test_uncommitted(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	const __u32 len = sizeof(struct rt_mark_slot) + sizeof(struct rt_ev_mark);
	struct rt_mring_slot s;
	struct rt_ev_mark *e;
	__u64 t0, t1, ts_a;

	(void)state;
	t0 = now_ns();
	assert_int_equal(drain(f, t0), 0);
	assert_int_equal(f->c->wm, t0); /* empty: nothing older than t0 can come */

	/* A reserves (and stamps) but is "preempted" before committing */
	assert_int_equal(rt_mring_reserve(&f->p, len, 1, &s), 0);
	e = (struct rt_ev_mark *)s.body;
	memset(e, 0, sizeof(*e));
	e->hdr.kind = RT_EV_MARK_BEGIN;
	e->hdr.size = sizeof(*e);
	e->hdr.ts_ns = ts_a = now_ns();
	/* B writes and commits after it */
	assert_int_equal(rt_mark_w_mark(&f->p, RT_EV_MARK_END, "b", RT_PHASE_QUEUE), 0);
	t1 = now_ns();
	assert_int_equal(drain(f, t1), 0); /* B waits behind A */
	assert_int_equal(f->c->wm, t0); /* and A's stamp may be anything after t0 */
	assert_true(rt_mark_cons__stalled_ns(f->c, t1 + 5) == 5);
	/* still within the horizon: held */
	assert_int_equal(drain(f, t1 + HORIZON), 0);
	assert_int_equal(f->c->wm, t0);
	/* past it: the watermark moves on without A */
	assert_int_equal(drain(f, t1 + HORIZON + 1000), 0);
	assert_int_equal(f->c->wm, t1 + 1000);
	assert_true(ts_a < f->c->wm); /* so A, when it comes, is late */

	rt_mring_commit(&f->p, &s, len, 1);
	assert_int_equal(drain(f, t1 + HORIZON + 2000), 2);
	assert_int_equal(REC(f, 0)->hdr.kind, RT_EV_MARK_BEGIN);
	assert_int_equal(REC(f, 1)->hdr.kind, RT_EV_MARK_END);
	assert_int_equal(rt_mark_cons__stalled_ns(f->c, t1 + HORIZON + 3000), 0);
	fx_free(f);
}

/* The watermark never passes a record still to come, slot by slot. */
static void test_watermark_order(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	__u64 t[4], wm;
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		t[i] = now_ns();
		/* notes (prod_pos, t) without handing anything out */
		assert_int_equal(rt_mark_cons__drain(f->c, t[i], HORIZON, 0, keep, f), 0);
		rt_mark_w_mark(&f->p, RT_EV_MARK_BEGIN, "r", RT_PHASE_QUEUE);
	}
	/* one record out: the watermark moves to the look that preceded the next slot */
	f->n = 0;
	assert_int_equal(rt_mark_cons__drain(f->c, now_ns(), HORIZON, 1, keep, f), 1);
	wm = f->c->wm;
	assert_int_equal(wm, t[1]);
	/* and no record still to come is older than it */
	f->n = 0;
	assert_int_equal(rt_mark_cons__drain(f->c, now_ns(), HORIZON, 0, keep, f), 0);
	assert_int_equal(rt_mark_cons__drain(f->c, now_ns(), HORIZON, 100, keep, f), 3);
	for (i = 0; i < 3; i++)
		assert_true(REC(f, i)->hdr.ts_ns >= wm);
	fx_free(f);
}

/* The consumer refuses what a hostile producer frames badly. */
static void test_hostile(void **state)
{
	struct fx *f = fx_new(RING_SIZE);
	struct rt_mark_slot *sl = (void *)f->c->data;

	(void)state;
	/* prod_pos beyond a lap, or unaligned */
	f->c->shm->prod_pos = RING_SIZE + 8;
	assert_int_equal(drain(f, now_ns()), -EPROTO);
	f->c->shm->prod_pos = 12;
	assert_int_equal(drain(f, now_ns()), -EPROTO);
	/* a committed slot whose length runs past prod_pos */
	f->c->shm->prod_pos = 64;
	sl->len = 128;
	sl->commit = 1;
	assert_int_equal(drain(f, now_ns()), -EPROTO);
	/* a record inside whose size runs past its slot */
	sl->len = 64;
	((struct rt_event_hdr *)(sl + 1))->size = 56;
	assert_int_equal(drain(f, now_ns()), -EPROTO);
	/* a commit word from another lap is not a commit */
	sl->commit = 1 + RING_SIZE;
	assert_int_equal(drain(f, now_ns()), 0);
	/* a pad that claims the rest but prod_pos stops short of it */
	sl->commit = 1 | RT_MARK_SLOT_PAD;
	assert_int_equal(drain(f, now_ns()), -EPROTO);
	fx_free(f);
}

/* ---- many threads ----------------------------------------------------- */

#define THREADS 4
#define PER_THREAD 20000
/* records per thread: a step every 10th call (BEGIN and 3 members) */
#define RECS_PER_THREAD (PER_THREAD / 10 * 9 + PER_THREAD / 10 * 4)

struct mp {
	struct fx *f;
	int done;
	__u64 next[THREADS]; /* per thread, the next sequence number expected */
	__u32 tids[THREADS];
	int ntids;
	__u64 got, bad_order, bad_wm;
	__u64 last_wm;
};

static struct mp MP;

static void *producer(void *arg)
{
	long t = (long)arg;
	const char *ids[3] = { "a", "b", "c" };
	char id[32];
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		snprintf(id, sizeof(id), "%ld-%d", t, i);
		if (i % 10 == 9)
			rt_mark_w_step_begin(&MP.f->p, (uint64_t)t << 32 | (uint64_t)i, 3, ids);
		else
			rt_mark_w_mark(&MP.f->p, RT_EV_MARK_BEGIN, id, RT_PHASE_DECODE);
	}
	return NULL;
}

static int check_mp(const struct rt_event_hdr *ev, void *ctx)
{
	const struct rt_ev_mark *m = (const void *)ev;
	const struct rt_ev_mark_step *st = (const void *)ev;
	long t;
	int i;

	(void)ctx;
	/* nothing handed out is older than a watermark already published */
	if (ev->ts_ns < MP.last_wm)
		MP.bad_wm++;
	MP.got++;
	if (ev->kind == RT_EV_MARK_STEP_MEMBER)
		return 0;
	if (ev->kind == RT_EV_MARK_STEP_BEGIN) {
		t = (long)(st->step_id >> 32);
		i = (int)(st->step_id & 0xffffffff);
	} else if (sscanf(m->request_id, "%ld-%d", &t, &i) != 2) {
		MP.bad_order++;
		return 0;
	}
	/* one thread's records come in its own order: later or dropped */
	if (t < 0 || t >= THREADS || (__u64)i < MP.next[t])
		MP.bad_order++;
	else
		MP.next[t] = (__u64)i + 1;
	return 0;
}

static void test_many_threads(void **state)
{
	pthread_t th[THREADS];
	__u64 drops = 0, now;
	long t;
	int done;

	(void)state;
	memset(&MP, 0, sizeof(MP));
	MP.f = fx_new(256 * 1024);
	for (t = 0; t < THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, producer, (void *)t), 0);
	do {
		done = MP.got + drops >= (__u64)THREADS * RECS_PER_THREAD;
		now = now_ns();
		assert_true(rt_mark_cons__drain(MP.f->c, now, HORIZON, 1000, check_mp, NULL) >= 0);
		MP.last_wm = MP.f->c->wm;
		drops += rt_mark_cons__new_drops(MP.f->c);
	} while (!done);
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	assert_int_equal(MP.bad_order, 0);
	assert_int_equal(MP.bad_wm, 0);
	/* every record either arrived or was counted as dropped, none twice */
	assert_int_equal(MP.got + drops, (__u64)THREADS * RECS_PER_THREAD);
	assert_true(MP.got > 0);
	assert_int_equal(MP.f->c->cons, MP.f->c->shm->prod_pos);
	fx_free(MP.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),	    cmocka_unit_test(test_records),
		cmocka_unit_test(test_step_trunc),  cmocka_unit_test(test_step_tokens),
		cmocka_unit_test(test_wraparound),  cmocka_unit_test(test_full),
		cmocka_unit_test(test_uncommitted), cmocka_unit_test(test_watermark_order),
		cmocka_unit_test(test_hostile),	    cmocka_unit_test(test_many_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
