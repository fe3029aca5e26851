// SPDX-License-Identifier: BSD-2-Clause
/*
 * A recording stand-in for libreqtrace_marker.so, for tests only: LD_PRELOAD
 * it and every marker call is appended to the file named by
 * REQTRACE_MARKER_RECORD as one line
 *   <CLOCK_MONOTONIC ns> <tid> <function> <arguments...>
 * so a test can check where a program places its markers without BPF.
 * At most RECORD_MAX lines are written; later calls are counted only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <reqtrace/marker.h>

#define RECORD_MAX 1000000
#define API __attribute__((visibility("default")))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static unsigned long lines;

static void open_out(void)
{
	const char *path = getenv("REQTRACE_MARKER_RECORD");

	if (path)
		out = fopen(path, "we");
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Starts a line under the lock; returns 0 when the call is not recorded. */
static int begin_line(const char *fn)
{
	unsigned long long ts = now_ns();

	pthread_once(&once, open_out);
	if (!out)
		return 0;
	pthread_mutex_lock(&lock);
	if (lines >= RECORD_MAX) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	lines++;
	fprintf(out, "%llu %ld %s", ts, (long)syscall(SYS_gettid), fn);
	return 1;
}

static void end_line(void)
{
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&lock);
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

API void rt_mark_begin(const char *request_id, enum rt_phase phase)
{
	if (!begin_line("begin"))
		return;
	fprintf(out, " %s %d", str(request_id), (int)phase);
	end_line();
}

API void rt_mark_end(const char *request_id, enum rt_phase phase)
{
	if (!begin_line("end"))
		return;
	fprintf(out, " %s %d", str(request_id), (int)phase);
	end_line();
}

API void rt_mark_step_begin(uint64_t step_id, uint32_t n, const char *const *request_ids)
{
	uint32_t i;

	if (!begin_line("step_begin"))
		return;
	fprintf(out, " %llu %u", (unsigned long long)step_id, n);
	for (i = 0; i < n && i < RT_MARK_STEP_MAX && request_ids; i++)
		fprintf(out, " %s", str(request_ids[i]));
	end_line();
}

API void rt_mark_step_begin_tokens(uint64_t step_id, uint32_t n, const char *const *request_ids,
				   const uint32_t *tokens)
{
	uint32_t i;

	if (!begin_line("step_begin_tokens"))
		return;
	fprintf(out, " %llu %u", (unsigned long long)step_id, n);
	for (i = 0; i < n && i < RT_MARK_STEP_MAX && request_ids; i++)
		fprintf(out, " %s:%u", str(request_ids[i]), tokens ? tokens[i] : 0);
	end_line();
}

API void rt_mark_step_end(uint64_t step_id)
{
	if (!begin_line("step_end"))
		return;
	fprintf(out, " %llu", (unsigned long long)step_id);
	end_line();
}

API void rt_mark_bind(const char *engine_id, const char *request_id)
{
	if (!begin_line("bind"))
		return;
	fprintf(out, " %s %s", str(engine_id), str(request_id));
	end_line();
}

API uint32_t rt_mark_abi_version(void)
{
	return RT_MARKER_ABI_VERSION;
}
