/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Leveled logging. Foreground programs log to stderr; the daemon under
 * systemd logs to stderr too (the journal takes it) with syslog-style
 * "<N>" prefixes when JOURNAL_STREAM is set.
 */
#ifndef RT_LOG_H
#define RT_LOG_H

#include <stdarg.h>

enum rt_log_level {
	RT_LOG_ERROR = 0,
	RT_LOG_WARN = 1,
	RT_LOG_INFO = 2,
	RT_LOG_DEBUG = 3,
};

void rt_log_set_level(enum rt_log_level level);
enum rt_log_level rt_log_get_level(void);
/* Program name printed before each line ("reqtraced: ..."). */
void rt_log_set_ident(const char *ident);

__attribute__((format(printf, 2, 3))) void rt_log(enum rt_log_level level, const char *fmt, ...);
void rt_vlog(enum rt_log_level level, const char *fmt, va_list ap);

#define elog(...) rt_log(RT_LOG_ERROR, __VA_ARGS__)
#define wlog(...) rt_log(RT_LOG_WARN, __VA_ARGS__)
#define ilog(...) rt_log(RT_LOG_INFO, __VA_ARGS__)
#define dlog(...) rt_log(RT_LOG_DEBUG, __VA_ARGS__)

#endif /* RT_LOG_H */
