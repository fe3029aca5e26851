/* SPDX-License-Identifier: BSD-2-Clause */
/* Durations on the command line and in config files: "250ms", "10s", "5m". */
#ifndef RT_DUR_H
#define RT_DUR_H

#include <stdint.h>

/*
 * Parse "<integer or decimal><unit>" with unit ns, us, ms, s, m, h into
 * nanoseconds. A bare number is rejected: units are mandatory so that
 * "10" never silently means 10 ns. Returns 0 or -EINVAL/-ERANGE.
 */
int rt_dur_parse(const char *s, uint64_t *out_ns);

/* Format ns as a short human string ("1.25s", "340ms", "12us"). */
void rt_dur_format(uint64_t ns, char *buf, unsigned long len);

#endif /* RT_DUR_H */
