/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The JSONL exporter: one span JSON object (export/span_json.h) per line,
 * appended to a file that log shippers (Vector, Fluent Bit, Filebeat) follow.
 *
 * Size-based rotation, numbered as logrotate numbers: when the next line
 * would take PATH over max_bytes, PATH.(keep-1) → PATH.keep, …, PATH →
 * PATH.1, and a fresh PATH is created. A shipper that follows by inode
 * sees a rename and finishes the old file first. A line never straddles
 * two files; a line longer than max_bytes goes alone into a fresh file.
 *
 * Errors never stop the caller: a line that cannot be written whole
 * (ENOSPC, EIO, ...) is counted as dropped by its errno class, and a
 * partial write is cut back off so the file stays whole lines. Files it
 * creates are mode 0640 whatever the umask; an existing file keeps its mode.
 */
#ifndef RT_EXPORT_JSONL_FILE_H
#define RT_EXPORT_JSONL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <reqtrace/span.h>

#define RT_JSONL_KEEP_MAX 1000

struct rt_jsonl_opts {
	const char *path;
	uint64_t max_bytes; /* 0: never rotate (an external logrotate plus reopen) */
	uint32_t keep; /* rotated files kept, PATH.1 … PATH.keep; 0: none */
};

struct rt_jsonl_stats {
	uint64_t lines; /* written whole */
	uint64_t bytes; /* newlines included */
	uint64_t rotations;
	uint64_t reopens; /* rt_jsonl__reopen() and path changes */
	/* lines lost, by the class of the error that lost them */
	uint64_t dropped; /* the sum of the four below */
	uint64_t dropped_nospace; /* ENOSPC, EDQUOT, EFBIG */
	uint64_t dropped_io; /* EIO */
	uint64_t dropped_toolarge; /* the span's JSON over the writer's bound */
	uint64_t dropped_other; /* anything else (EACCES on open, ENOENT dir, ...) */
	int last_errno; /* of the last drop or failed rotation; 0: none */
	uint64_t size; /* of the current file, as this writer knows it */
};

struct rt_jsonl;

/*
 * Open (create) opts->path for appending. NULL with errno set when the file
 * cannot be opened: the caller decides whether that stops it.
 */
struct rt_jsonl *rt_jsonl__open(const struct rt_jsonl_opts *opts);
void rt_jsonl__close(struct rt_jsonl *j);

/* One span as one line. 0, or the -errno that dropped it (counted). */
int rt_jsonl__write_span(struct rt_jsonl *j, const struct rt_span *s);
/* One line (without its newline; it must not hold one). */
int rt_jsonl__write_line(struct rt_jsonl *j, const char *line, size_t len);

/*
 * Close and open the path again: after an external logrotate moved the
 * file away. On failure the writer retries before later lines (at most
 * once a second) and drops them until it succeeds.
 */
int rt_jsonl__reopen(struct rt_jsonl *j);

/*
 * New settings. A new path is opened before the old file is let go: on
 * failure (-errno) the writer keeps its old path and settings.
 */
int rt_jsonl__configure(struct rt_jsonl *j, const struct rt_jsonl_opts *opts);

const char *rt_jsonl__path(const struct rt_jsonl *j);
void rt_jsonl__get_opts(const struct rt_jsonl *j, struct rt_jsonl_opts *out);
void rt_jsonl__stats(const struct rt_jsonl *j, struct rt_jsonl_stats *out);

#endif /* RT_EXPORT_JSONL_FILE_H */
