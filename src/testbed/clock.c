// SPDX-License-Identifier: BSD-2-Clause
#include "clock.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

uint64_t tb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tb_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tb_ms_to_ns(double ms)
{
	if (!(ms > 0))
		return 0;
	return (uint64_t)(ms * 1e6 + 0.5);
}

void tb_burn_ns(uint64_t ns, const atomic_bool *stop)
{
	uint64_t start = tb_thread_cpu_ns();
	volatile uint64_t x = 1;
	int i;

	while (tb_thread_cpu_ns() - start < ns) {
		if (stop && atomic_load_explicit(stop, memory_order_relaxed))
			return;
		/*
		 * Reading the thread CPU clock is a system call (the vDSO does not
		 * serve it): spin in user space between reads so most of the burn
		 * is user time, as a tokenizer's would be.
		 */
		for (i = 0; i < 4096; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
}

void tb_burn_ms(double ms, const atomic_bool *stop)
{
	tb_burn_ns(tb_ms_to_ns(ms), stop);
}

void tb_sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ull),
		.tv_nsec = (long)(deadline_ns % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void tb_sleep_ms(double ms)
{
	uint64_t ns = tb_ms_to_ns(ms);

	if (ns)
		tb_sleep_until(tb_now_ns() + ns);
}

int tb_gettid(void)
{
	return (int)syscall(SYS_gettid);
}
