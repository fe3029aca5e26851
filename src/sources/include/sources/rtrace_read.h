/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Validating .rtrace reader (format: include/reqtrace/rtrace.h). The input
 * is untrusted: every record is checked (event_check.h) before it is handed
 * out, and the first problem stops the reader with a one-line message that
 * names the byte offset of the first bad byte:
 *
 *   a bad field          the field's first byte ("offset 1234: record size 3
 *                        below header size 24", "offset 0: bad magic")
 *   a record cut short   the start of that record ("offset 98765: truncated:
 *                        file ends inside a record")
 *   no TRACE_END         the end of the file ("offset N: truncated: no end record")
 *
 * Timestamps: every record's ts_ns lies in [header.monotonic_ns -
 * RT_TRACE_SLACK_NS, newest CLOCK + RT_TRACE_SLACK_NS] (the header's pair is
 * the first CLOCK); CLOCK records never go back and are only bounded below
 * (a recording may be idle for longer than the slack). TRACE_END counts the
 * records before it, and nothing may follow it.
 *
 * Files are streamed through a bounded buffer (never read whole); memory
 * buffers are read in place. Records are returned 8-byte aligned.
 */
#ifndef RT_RTRACE_READ_H
#define RT_RTRACE_READ_H

#include <stddef.h>

#include <reqtrace/event.h>
#include <reqtrace/rtrace.h>

/*
 * Small enough that what read() copies is still in the cache when the
 * records are parsed: with a merge and correlator holding tens of MB, a
 * 256 KiB buffer was cold again by then (docs/benchmarks.md, "Fourth
 * pass"); at least 2 * RT_EVENT_MAX.
 */
#define RT_TRACE_READER_BUF_DEFAULT (64 * 1024)
/* a header may grow (header_size), up to this */
#define RT_TRACE_HEADER_MAX 4096

struct rt_trace_reader_opts {
	size_t buf_size; /* file read buffer; 0: default; at least 2 * RT_EVENT_MAX */
};

struct rt_trace_reader;

/*
 * Opens path and checks its header. Returns NULL with errno set only when
 * the file cannot be opened or memory is short; a bad header yields a
 * reader whose header() is NULL and whose next() returns the error.
 * opts may be NULL.
 */
struct rt_trace_reader *rt_trace_reader__open(const char *path,
					      const struct rt_trace_reader_opts *opts);

/* As rt_trace_reader__open() on an open fd (a pipe works), which the caller keeps and closes. */
struct rt_trace_reader *rt_trace_reader__fd_open(int fd, const struct rt_trace_reader_opts *opts);

/* As rt_trace_reader__open() on len bytes at data, which must outlive the reader. */
struct rt_trace_reader *rt_trace_reader__open_mem(const void *data, size_t len);

/* The validated header, or NULL when it was bad. */
const struct rt_trace_header *rt_trace_reader__header(const struct rt_trace_reader *r);

/*
 * Next record: returns 1 and sets *ev (8-byte aligned, valid until the next
 * call), 0 at a clean end (TRACE_END was returned and nothing follows), or
 * a negative errno: -EBADMSG (invalid data), -ENODATA (truncated), -EIO or
 * another read error. Errors are sticky.
 */
int rt_trace_reader__next(struct rt_trace_reader *r, const struct rt_event_hdr **ev);

/* One line naming the offset of the first bad byte ("offset N: ..."), or "" when none. */
const char *rt_trace_reader__error(const struct rt_trace_reader *r);

/* Offset of the next record to read, or of the first bad byte after an error. */
__u64 rt_trace_reader__offset(const struct rt_trace_reader *r);

/* Records returned so far. */
__u64 rt_trace_reader__records(const struct rt_trace_reader *r);

void rt_trace_reader__free(struct rt_trace_reader *r);

#endif /* RT_RTRACE_READ_H */
