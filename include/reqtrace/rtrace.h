/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * .rtrace recording format: a header, then rt_event records (event.h) laid
 * end to end in arrival order, little-endian, each 8-byte aligned in size.
 *
 * The daemon (the writer's caller) writes RT_EV_SOURCE_INFO before a
 * source's first record; the writer itself inserts an RT_EV_CLOCK record at
 * least every RT_TRACE_CLOCK_PERIOD_NS of event time and RT_EV_TRACE_END
 * last. A file without the end record is truncated.
 *
 * Validation (src/sources/rtrace_read.c): every record's size is within
 * bounds and covers its kind's body, its kind is known, and its timestamp
 * lies within [header.monotonic_ns - RT_TRACE_SLACK_NS,
 * newest clock record + RT_TRACE_SLACK_NS]. CLOCK records themselves are
 * only bounded below (never before the previous one): a recording may sit
 * idle longer than the slack.
 */
#ifndef REQTRACE_RTRACE_H
#define REQTRACE_RTRACE_H

#include <linux/types.h>

#define RT_TRACE_MAGIC "RTRACE\r\n" /* 8 bytes; CRLF catches text-mode damage */
#define RT_TRACE_MAGIC_LEN 8
#define RT_TRACE_VERSION 1
#define RT_TRACE_CLOCK_PERIOD_NS 1000000000ULL
#define RT_TRACE_SLACK_NS 30000000000ULL

struct rt_trace_header {
	char magic[RT_TRACE_MAGIC_LEN];
	__u32 version; /* RT_TRACE_VERSION */
	__u32 header_size; /* sizeof(struct rt_trace_header) */
	__u32 event_version; /* RT_EVENT_VERSION of the records */
	__u32 flags;
	__u64 realtime_ns; /* CLOCK_REALTIME and CLOCK_MONOTONIC read together */
	__u64 monotonic_ns;
	char host[64];
	char boot_id[40]; /* /proc/sys/kernel/random/boot_id */
	__u64 _reserved[4];
};

#endif /* REQTRACE_RTRACE_H */
