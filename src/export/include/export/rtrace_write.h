/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * .rtrace writer (format: include/reqtrace/rtrace.h). Records go through a
 * fixed buffer to the file; every record is validated first (event_check.h),
 * so that whatever this writer produces, the reader accepts.
 *
 * The writer adds two kinds of records on its own:
 *   - RT_EV_CLOCK before any record whose ts_ns is RT_TRACE_CLOCK_PERIOD_NS
 *     or more past the previous clock pair (the header's pair counts as the
 *     first), stamped with that record's ts_ns;
 *   - RT_EV_TRACE_END at close, counting every record before it.
 * Writing RT_EV_SOURCE_INFO before a source's first record is the caller's job.
 *
 * Errors are returned as -errno and are sticky: after a failed write (disk
 * full, EIO) every later call returns the same error and close() still
 * frees everything. The file then ends inside or after some record and
 * reads back as truncated.
 */
#ifndef RT_RTRACE_WRITE_H
#define RT_RTRACE_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include <reqtrace/event.h>
#include <reqtrace/rtrace.h>

#define RT_TRACE_WRITER_BUF_DEFAULT (256 * 1024)

/* CLOCK_REALTIME ns that corresponds to CLOCK_MONOTONIC mono_ns. */
typedef __u64 (*rt_trace_clock_fn)(__u64 mono_ns, void *ctx);

struct rt_trace_writer_opts {
	/* header fields; NULL: gethostname() and /proc/sys/kernel/random/boot_id */
	const char *host;
	const char *boot_id;
	/*
	 * The header's clock pair. Both 0: read CLOCK_REALTIME and
	 * CLOCK_MONOTONIC back to back. Non-zero monotonic_ns: use these
	 * (deterministic fixtures).
	 */
	__u64 realtime_ns;
	__u64 monotonic_ns;
	/*
	 * Realtime for the periodic CLOCK records. NULL: the current offset
	 * between the two clocks when the header pair was read live, the
	 * header's offset when it was given.
	 */
	rt_trace_clock_fn clock_fn;
	void *clock_ctx;
	__u32 source; /* hdr.source of the CLOCK and TRACE_END records (0: the daemon) */
	__u32 flags; /* rt_trace_header.flags */
	size_t buf_size; /* 0: RT_TRACE_WRITER_BUF_DEFAULT; at least 2 * RT_EVENT_MAX */
	bool fsync; /* fsync() at close */
};

struct rt_trace_writer_stats {
	__u64 records; /* written, CLOCK and TRACE_END included */
	__u64 bytes; /* header included */
	__u64 clock_records; /* inserted by the writer */
	__u64 rejected; /* records refused by rt_trace_writer__write() */
};

struct rt_trace_writer;

/*
 * Creates (or truncates) path with mode 0600 and writes the header. opts
 * may be NULL. Returns NULL with errno set on failure.
 */
struct rt_trace_writer *rt_trace_writer__open(const char *path,
					      const struct rt_trace_writer_opts *opts);

/* As rt_trace_writer__open() on an open fd, which the caller keeps and closes. */
struct rt_trace_writer *rt_trace_writer__fd_open(int fd, const struct rt_trace_writer_opts *opts);

/*
 * Appends one record. ev must be 8-byte aligned with ev->size bytes. Returns
 * 0, -EINVAL (invalid record, a TRACE_END, or a CLOCK record older than the
 * previous one), -ERANGE (ts_ns more than RT_TRACE_SLACK_NS before the
 * header's monotonic time), or a sticky I/O error (-ENOSPC, -EIO, ...).
 * Refused records are counted in stats.rejected and leave the file valid.
 */
int rt_trace_writer__write(struct rt_trace_writer *w, const struct rt_event_hdr *ev);

/* Writes the buffered records to the file. Returns 0 or a sticky -errno. */
int rt_trace_writer__flush(struct rt_trace_writer *w);

/*
 * Appends TRACE_END, flushes, fsyncs if asked, closes the file when the
 * writer opened it, and frees w (also on error). Returns 0 or the first
 * error met, as -errno. NULL is fine.
 */
int rt_trace_writer__close(struct rt_trace_writer *w);

void rt_trace_writer__stats(const struct rt_trace_writer *w, struct rt_trace_writer_stats *st);

#endif /* RT_RTRACE_WRITE_H */
