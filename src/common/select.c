// SPDX-License-Identifier: BSD-2-Clause
#include "common/select.h"

void rt_select_k_i64(int64_t *v, uint32_t n, uint32_t k)
{
	int64_t lo = 0, hi = (int64_t)n - 1, key = k;

	while (lo < hi) {
		int64_t i = lo, j = hi, mid = lo + (hi - lo) / 2, t;
		int64_t a = v[lo], b = v[mid], c = v[hi], p;

		/* a value of the range (the scans below stop at it), the median of three */
		p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
		do {
			while (v[i] < p)
				i++;
			while (p < v[j])
				j--;
			if (i <= j) {
				t = v[i], v[i] = v[j], v[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		/* v[lo..j] <= p <= v[i..hi]; between them, if anything, equals p */
		if (j < key)
			lo = i;
		if (key < i)
			hi = j;
	}
}
