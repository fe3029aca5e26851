/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RT_COMMON_SELECT_H
#define RT_COMMON_SELECT_H

#include <stdint.h>

/*
 * The k-th smallest (0-based, k < n) of v[0..n) moved to v[k], with no
 * larger one before it and no smaller one after (Hoare's selection,
 * median-of-three pivots): a percentile without sorting, O(n) expected.
 */
void rt_select_k_i64(int64_t *v, uint32_t n, uint32_t k);

#endif
