// SPDX-License-Identifier: BSD-2-Clause
#include "dbg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dbg_on;

void rt_cupti_dbg_init(void)
{
	const char *v = getenv("REQTRACE_CUPTI_DEBUG");

	__atomic_store_n(&dbg_on, v && *v && strcmp(v, "0") != 0, __ATOMIC_RELAXED);
}

int rt_cupti_dbg_on(void)
{
	return __atomic_load_n(&dbg_on, __ATOMIC_RELAXED);
}

void rt_cupti_dbg(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, m;

	if (!rt_cupti_dbg_on())
		return;
	n = snprintf(line, sizeof(line), "reqtrace-cupti[%d]: ", (int)getpid());
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* best effort: a failed debug write must not disturb the host */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
