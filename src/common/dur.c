// SPDX-License-Identifier: BSD-2-Clause
#include "common/dur.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *unit;
	double ns;
} units[] = {
	{ "ns", 1.0 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 },
};

int rt_dur_parse(const char *s, uint64_t *out_ns)
{
	char *end;
	double v;
	size_t i;

	if (!s || !*s || !out_ns)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			double ns = v * units[i].ns;

			if (ns >= 1.8e19)
				return -ERANGE;
			*out_ns = (uint64_t)llround(ns);
			return 0;
		}
	}
	return -EINVAL;
}

void rt_dur_format(uint64_t ns, char *buf, unsigned long len)
{
	if (ns >= 10000000000ULL)
		snprintf(buf, len, "%.0fs", ns / 1e9);
	else if (ns >= 1000000000ULL)
		snprintf(buf, len, "%.2fs", ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, len, "%.0fus", ns / 1e3);
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}
