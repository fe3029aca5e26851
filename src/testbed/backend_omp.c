// SPDX-License-Identifier: BSD-2-Clause
/*
 * The "omp" backend: each engine step is real CPU work split over a libgomp
 * OpenMP parallel region, so that a traced testbed has a compute pool as
 * llama.cpp's CPU builds do: the engine thread is the region's thread 0, the
 * others are libgomp's workers ("tb-omp"), which between regions spin
 * (OMP_WAIT_POLICY=active) or sleep on a futex (passive). The region's CPU is
 * the step's cost: prefill_base_ms + prefill_ms_per_ktok * tokens / 1000, or
 * decode_base_ms + decode_ms_per_seq * batch, in thread CPU summed over the
 * pool (each thread's share is timed by its own CPU clock).
 *
 * Knobs: omp_threads, omp_wait_policy, omp_gc_ms (a "tb-gc" thread that burns
 * CPU every 20 ms and never works for a request: a runtime's own thread).
 * Environment:
 *   REQTRACE_TB_OMP_TRUTH  JSON Lines file: per step its members and each
 *                          pool thread's CPU in the region
 *   REQTRACE_TB_OMP_LIB    the pool object (default: reqtrace-testbed-omp.so
 *                          beside the executable)
 */
#include "backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "omp_pool.h"

#define GC_PERIOD_NS 20000000ull
#define LIB_NAME "reqtrace-testbed-omp.so"

struct omp_ctx {
	uint32_t threads;
	tb_omp_region_fn region;
	void *lib;
	FILE *truth;
	struct tb_buf line;
	struct tb_omp_thread out[TB_OMP_THREADS_MAX];
	int engine_tid;
	/*
	 * The pool's workers as the last region had them (out[1..]), and their
	 * whole CPU clocks when the step began and ended: what a worker ran
	 * between steps (a spinning pool's spin) is then known to the step.
	 */
	int n_workers;
	int worker[TB_OMP_THREADS_MAX];
	uint64_t worker_begin[TB_OMP_THREADS_MAX];

	double gc_ms;
	pthread_t gc;
	bool gc_started;
	atomic_bool stop;
};

static const char *const policies[] = { NULL, "passive", "active" };

static void *gc_main(void *arg)
{
	struct omp_ctx *x = arg;
	uint64_t next = tb_now_ns();

	pthread_setname_np(pthread_self(), "tb-gc");
	while (!atomic_load(&x->stop)) {
		tb_burn_ms(x->gc_ms, &x->stop);
		next += GC_PERIOD_NS;
		/* a late period is skipped, not caught up: the rate stays gc_ms per period */
		if (next < tb_now_ns())
			next = tb_now_ns() + GC_PERIOD_NS;
		tb_sleep_until(next);
	}
	return NULL;
}

static int lib_path(char *path, size_t len)
{
	const char *env = getenv("REQTRACE_TB_OMP_LIB");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		if ((size_t)snprintf(path, len, "%s", env) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	if ((size_t)snprintf(path, len, "%s/%s", dirname(exe), LIB_NAME) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void omp_fini(void *ctx);

static int omp_init(void **ctx, const struct tb_knobs *k)
{
	const char *truth = getenv("REQTRACE_TB_OMP_TRUTH");
	char path[PATH_MAX];
	struct omp_ctx *x;
	void *gomp;
	int err;

	*ctx = NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->threads = k->omp_threads;
	x->gc_ms = k->omp_gc_ms;
	atomic_init(&x->stop, false);
	tb_buf_init(&x->line, 1 << 20);

	if (k->omp_wait_policy) {
		/* libgomp reads these once, when it is loaded: too late afterwards */
		gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (gomp) {
			dlclose(gomp);
			fprintf(stderr, "omp backend: libgomp is already loaded; omp_wait_policy "
					"cannot take effect\n");
			err = -EALREADY;
			goto cleanup;
		}
		setenv("OMP_WAIT_POLICY", policies[k->omp_wait_policy], 1);
		/* a spin count set by hand would override the policy's */
		unsetenv("GOMP_SPINCOUNT");
	}
	err = lib_path(path, sizeof(path));
	if (err)
		goto cleanup;
	x->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!x->lib) {
		fprintf(stderr, "omp backend: %s\n", dlerror());
		err = -ENOENT;
		goto cleanup;
	}
	*(void **)&x->region = dlsym(x->lib, TB_OMP_REGION_SYM);
	if (!x->region) {
		fprintf(stderr, "omp backend: %s: no %s\n", path, TB_OMP_REGION_SYM);
		err = -ENOENT;
		goto cleanup;
	}
	if (truth && *truth) {
		x->truth = fopen(truth, "we");
		if (!x->truth) {
			err = -errno;
			fprintf(stderr, "omp backend: %s: %s\n", truth, strerror(-err));
			goto cleanup;
		}
	}
	if (x->gc_ms > 0) {
		err = -pthread_create(&x->gc, NULL, gc_main, x);
		if (err)
			goto cleanup;
		x->gc_started = true;
	}
	*ctx = x;
	return 0;
cleanup:
	omp_fini(x);
	return err;
}

/*
 * Thread tid's (of this process) whole CPU time, in ns, or 0: the clock id
 * the kernel derives from a tid (what pthread_getcpuclockid() makes: the
 * tid negated, CPUCLOCK_SCHED, per thread), for threads made by libgomp
 * whose pthread_t we never see.
 */
static uint64_t tid_cpu_ns(int tid)
{
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6);
	struct timespec ts;

	if (tid <= 0 || clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t worker_begin_of(const struct omp_ctx *x, int tid)
{
	int i;

	for (i = 0; i < x->n_workers; i++)
		if (x->worker[i] == tid)
			return x->worker_begin[i];
	return 0; /* born in this step: all its CPU is the step's */
}

static void write_truth(struct omp_ctx *x, const struct tb_step *st, uint64_t begin, uint64_t end,
			int got)
{
	struct tb_buf *b = &x->line;
	uint32_t i;
	int t;

	tb_buf_reset(b);
	tb_buf_printf(b,
		      "{\"step_id\":%" PRIu64 ",\"kind\":\"%s\",\"tokens\":%" PRIu64
		      ",\"cost_ns\":%" PRIu64 ",\"tid\":%d,\"begin_ns\":%" PRIu64
		      ",\"end_ns\":%" PRIu64 ",\"members\":[",
		      st->step_id, st->kind == TB_STEP_PREFILL ? "prefill" : "decode", st->tokens,
		      st->cost_ns, x->engine_tid, begin, end);
	for (i = 0; i < st->batch; i++) {
		tb_buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
		tb_buf_json_str(b, st->ids[i]);
		tb_buf_printf(b, ",\"tokens\":%" PRIu64 "}", st->member_tokens[i]);
	}
	tb_buf_puts(b, "],\"threads\":[");
	for (t = 0; t < got; t++)
		tb_buf_printf(
			b, "%s{\"n\":%d,\"tid\":%d,\"cpu_ns\":%" PRIu64 ",\"units\":%" PRIu64 "}",
			t ? "," : "", t, x->out[t].tid, x->out[t].cpu_ns, x->out[t].units);
	tb_buf_puts(b, "],\"workers\":[");
	for (t = 1; t < got; t++)
		tb_buf_printf(
			b, "%s{\"tid\":%d,\"cpu_begin_ns\":%" PRIu64 ",\"cpu_end_ns\":%" PRIu64 "}",
			t > 1 ? "," : "", x->out[t].tid, worker_begin_of(x, x->out[t].tid),
			tid_cpu_ns(x->out[t].tid));
	tb_buf_puts(b, "]}\n");
	if (b->overflow)
		return;
	fwrite(b->p, 1, b->len, x->truth);
	fflush(x->truth);
}

static int omp_step(void *ctx, const struct tb_step *st)
{
	struct omp_ctx *x = ctx;
	uint64_t begin, end;
	int got;

	if (!x->engine_tid)
		x->engine_tid = tb_gettid();
	if (x->truth)
		for (got = 0; got < x->n_workers; got++)
			x->worker_begin[got] = tid_cpu_ns(x->worker[got]);
	memset(x->out, 0, sizeof(x->out));
	begin = tb_now_ns();
	/* units of equal CPU, threads of them per token: every thread gets a share */
	got = x->region((int)x->threads, (st->tokens ? st->tokens : 1) * x->threads, st->cost_ns,
			x->out);
	end = tb_now_ns();
	if (x->truth)
		write_truth(x, st, begin, end, got);
	x->n_workers = 0;
	for (int t = 1; t < got; t++)
		x->worker[x->n_workers++] = x->out[t].tid;
	return 0;
}

static void omp_fini(void *ctx)
{
	struct omp_ctx *x = ctx;

	if (!x)
		return;
	atomic_store(&x->stop, true);
	if (x->gc_started)
		pthread_join(x->gc, NULL);
	if (x->truth)
		fclose(x->truth);
	/* the pool object stays loaded: libgomp's threads may still be parked in it */
	tb_buf_free(&x->line);
	free(x);
}

const struct tb_backend_ops tb_backend_omp = {
	.name = "omp",
	.init = omp_init,
	.step = omp_step,
	.fini = omp_fini,
};
