/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RT_TEST_RND_H
#define RT_TEST_RND_H

#include <stdint.h>

/*
 * xorshift64: the seeded stream randomized tests draw from, so that a
 * failure repeats. Each test file has its own state (its seed).
 */
static inline uint64_t rt_rnd(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

#endif
