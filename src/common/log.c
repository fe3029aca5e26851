// SPDX-License-Identifier: BSD-2-Clause
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum rt_log_level cur_level = RT_LOG_INFO;
static const char *ident = "reqtrace";

void rt_log_set_level(enum rt_log_level level)
{
	cur_level = level;
}

enum rt_log_level rt_log_get_level(void)
{
	return cur_level;
}

void rt_log_set_ident(const char *name)
{
	ident = name ? name : "reqtrace";
}

void rt_vlog(enum rt_log_level level, const char *fmt, va_list ap)
{
	/* syslog priorities, understood by journald on stderr */
	static const int prio[] = { 3, 4, 6, 7 };
	char line[1024];
	size_t n;

	if (level > cur_level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	if (getenv("JOURNAL_STREAM"))
		fprintf(stderr, "<%d>%s\n", prio[level], line);
	else
		fprintf(stderr, "%s: %s\n", ident, line);
}

void rt_log(enum rt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rt_vlog(level, fmt, ap);
	va_end(ap);
}
