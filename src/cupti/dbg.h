/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Debug output of the injection library. The library is a guest in someone
 * else's process: it never writes to the host's stdout, and to stderr only
 * when REQTRACE_CUPTI_DEBUG is set (to anything but "" or "0").
 */
#ifndef RT_CUPTI_DBG_H
#define RT_CUPTI_DBG_H

/* Reads REQTRACE_CUPTI_DEBUG; called once from InitializeInjection. */
void rt_cupti_dbg_init(void);

/* 1 when debug output is on. */
int rt_cupti_dbg_on(void);

/* One line to stderr ("reqtrace-cupti[pid]: ..."), with write(2): no stdio locks. */
__attribute__((format(printf, 1, 2))) void rt_cupti_dbg(const char *fmt, ...);

#endif /* RT_CUPTI_DBG_H */
