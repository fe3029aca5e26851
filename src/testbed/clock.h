/* SPDX-License-Identifier: BSD-2-Clause */
/* Time stamps and the two ways a stage costs time: burning CPU or sleeping. */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns (what bpf_ktime_get_ns() returns). */
uint64_t tb_now_ns(void);

/* CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t tb_thread_cpu_ns(void);

/*
 * Runs on the CPU until the calling thread's CPU clock has advanced by ns,
 * so the kernel accounts real on-CPU time to this thread (time spent
 * preempted does not count). Returns early when *stop becomes true (stop
 * may be NULL).
 */
void tb_burn_ns(uint64_t ns, const atomic_bool *stop);

/* tb_burn_ns for a cost given in ms. */
void tb_burn_ms(double ms, const atomic_bool *stop);

/* Sleeps until CLOCK_MONOTONIC reaches deadline_ns (restarts on EINTR). */
void tb_sleep_until(uint64_t deadline_ns);

/* Sleeps for a cost given in ms. */
void tb_sleep_ms(double ms);

/* Converts ms (decimal) to ns, 0 for negative input. */
uint64_t tb_ms_to_ns(double ms);

/* The calling thread's kernel tid. */
int tb_gettid(void);

#endif /* TB_CLOCK_H */
