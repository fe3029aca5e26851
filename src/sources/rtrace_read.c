/* SPDX-License-Identifier: BSD-2-Clause */
#include "sources/rtrace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/event_check.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".rtrace files are little-endian");

struct rt_trace_reader {
	int fd; /* -1: memory */
	bool own_fd;
	bool eof; /* no more bytes beyond data[len] */
	bool header_ok;
	bool ended; /* TRACE_END returned */
	bool done; /* clean end reported */
	int err; /* sticky */
	const unsigned char *data; /* buf, or the caller's memory */
	unsigned char *buf;
	size_t cap;
	size_t pos, len; /* next record at data[pos]; data[len] is the end of what we have */
	__u64 base; /* file offset of data[0] */
	__u64 err_off;
	__u64 lower_ns; /* no record older than this */
	__u64 clock_mono; /* newest clock pair */
	__u64 records;
	struct rt_trace_header hdr;
	char msg[192];
	/* memory input may be unaligned: records are copied here first */
	_Alignas(RT_EVENT_ALIGN) unsigned char scratch[RT_EVENT_MAX];
};

__attribute__((format(printf, 4, 5))) static int fail(struct rt_trace_reader *r, int err, __u64 off,
						      const char *fmt, ...)
{
	va_list ap;
	int n;

	r->err = err;
	r->err_off = off;
	n = snprintf(r->msg, sizeof(r->msg), "offset %llu: ", (unsigned long long)off);
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
	va_end(ap);
	return err;
}

static int read_fail(struct rt_trace_reader *r, int err)
{
	return fail(r, err, r->base + r->len, "read error: %s", strerror(-err));
}

/*
 * Makes at least `need` bytes (<= cap) available at data[pos]. Returns 0,
 * 1 when the input ends first, or -errno. Unread bytes move to the start of
 * the buffer; pos is always a record start, so records stay 8-byte aligned.
 */
static int fill(struct rt_trace_reader *r, size_t need)
{
	ssize_t n;

	if (r->len - r->pos >= need)
		return 0;
	if (r->eof)
		return 1;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->base += r->pos;
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < need) {
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			r->eof = true;
			return 1;
		}
		r->len += n;
	}
	return 0;
}

#define HDR_FAIL(field, fmt, ...)                                                                  \
	fail(r, -EBADMSG, offsetof(struct rt_trace_header, field), fmt, ##__VA_ARGS__)

static int check_header(struct rt_trace_reader *r)
{
	const struct rt_trace_header *h = &r->hdr;
	size_t avail, i;
	int ret;

	ret = fill(r, sizeof(*h));
	if (ret < 0)
		return read_fail(r, ret);
	avail = r->len - r->pos;
	for (i = 0; i < RT_TRACE_MAGIC_LEN && i < avail; i++) {
		if (r->data[i] != (unsigned char)RT_TRACE_MAGIC[i])
			return fail(r, -EBADMSG, i, "bad magic: not an .rtrace file");
	}
	if (ret)
		return fail(r, -ENODATA, 0,
			    "truncated: file ends inside the header (%zu of %zu bytes)", avail,
			    sizeof(*h));
	memcpy(&r->hdr, r->data, sizeof(r->hdr));
	if (h->version != RT_TRACE_VERSION)
		return HDR_FAIL(version, "format version %u, this reader reads %d", h->version,
				RT_TRACE_VERSION);
	if (h->header_size < sizeof(*h) || h->header_size > RT_TRACE_HEADER_MAX ||
	    h->header_size % RT_EVENT_ALIGN)
		return HDR_FAIL(header_size, "header size %u invalid", h->header_size);
	if (h->event_version != RT_EVENT_VERSION)
		return HDR_FAIL(event_version, "event version %u, this reader reads %d",
				h->event_version, RT_EVENT_VERSION);
	if (!memchr(h->host, 0, sizeof(h->host)))
		return HDR_FAIL(host, "host name not NUL-terminated");
	if (!memchr(h->boot_id, 0, sizeof(h->boot_id)))
		return HDR_FAIL(boot_id, "boot id not NUL-terminated");
	/* a longer header from a newer writer: skip what we do not know */
	ret = fill(r, h->header_size);
	if (ret < 0)
		return read_fail(r, ret);
	if (ret)
		return fail(r, -ENODATA, 0,
			    "truncated: file ends inside the header (%zu of %u bytes)",
			    r->len - r->pos, h->header_size);
	r->pos += h->header_size;
	r->lower_ns = h->monotonic_ns > RT_TRACE_SLACK_NS ? h->monotonic_ns - RT_TRACE_SLACK_NS : 0;
	r->clock_mono = h->monotonic_ns;
	r->header_ok = true;
	return 0;
}

static struct rt_trace_reader *reader_new(int fd, bool own_fd, const void *data, size_t len,
					  const struct rt_trace_reader_opts *opts)
{
	struct rt_trace_reader *r;
	size_t cap = opts && opts->buf_size ? opts->buf_size : RT_TRACE_READER_BUF_DEFAULT;

	if (cap < 2 * RT_EVENT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = fd;
	r->own_fd = own_fd;
	if (fd < 0) {
		r->data = data;
		r->len = len;
		r->eof = true;
	} else {
		r->buf = malloc(cap);
		if (!r->buf) {
			free(r);
			errno = ENOMEM;
			return NULL;
		}
		r->cap = cap;
		r->data = r->buf;
	}
	check_header(r);
	return r;
}

struct rt_trace_reader *rt_trace_reader__open(const char *path,
					      const struct rt_trace_reader_opts *opts)
{
	struct rt_trace_reader *r;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	r = reader_new(fd, true, NULL, 0, opts);
	if (!r) {
		err = errno;
		close(fd);
		errno = err;
	}
	return r;
}

struct rt_trace_reader *rt_trace_reader__fd_open(int fd, const struct rt_trace_reader_opts *opts)
{
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	return reader_new(fd, false, NULL, 0, opts);
}

struct rt_trace_reader *rt_trace_reader__open_mem(const void *data, size_t len)
{
	if (!data && len) {
		errno = EINVAL;
		return NULL;
	}
	return reader_new(-1, false, data, len, NULL);
}

const struct rt_trace_header *rt_trace_reader__header(const struct rt_trace_reader *r)
{
	return r->header_ok ? &r->hdr : NULL;
}

static int check_time(struct rt_trace_reader *r, const struct rt_event_hdr *ev, __u64 off)
{
	__u64 upper = r->clock_mono + RT_TRACE_SLACK_NS;
	const struct rt_ev_trace_end *end;

	if (upper < r->clock_mono)
		upper = UINT64_MAX;
	if (ev->kind == RT_EV_CLOCK) {
		/* only bounded below: a recording may idle for longer than the slack */
		if (ev->ts_ns < r->clock_mono)
			return fail(r, -EBADMSG, off + offsetof(struct rt_event_hdr, ts_ns),
				    "clock record %llu before previous clock %llu",
				    (unsigned long long)ev->ts_ns,
				    (unsigned long long)r->clock_mono);
		return 0;
	}
	if (ev->ts_ns < r->lower_ns || ev->ts_ns > upper)
		return fail(r, -EBADMSG, off + offsetof(struct rt_event_hdr, ts_ns),
			    "timestamp %llu outside recording bounds [%llu, %llu]",
			    (unsigned long long)ev->ts_ns, (unsigned long long)r->lower_ns,
			    (unsigned long long)upper);
	if (ev->kind == RT_EV_TRACE_END) {
		end = (const void *)ev;
		if (end->records != r->records)
			return fail(r, -EBADMSG, off + offsetof(struct rt_ev_trace_end, records),
				    "end record counts %llu records, %llu precede it",
				    (unsigned long long)end->records,
				    (unsigned long long)r->records);
	}
	return 0;
}

int rt_trace_reader__next(struct rt_trace_reader *r, const struct rt_event_hdr **ev)
{
	const struct rt_event_hdr *rec;
	struct rt_event_fault f;
	struct rt_event_hdr h;
	size_t avail;
	__u64 off;
	int ret;

	*ev = NULL;
	if (r->err)
		return r->err;
	if (r->done)
		return 0;
	off = r->base + r->pos;
	ret = fill(r, r->ended ? 1 : sizeof(h));
	if (ret < 0)
		return read_fail(r, ret);
	avail = r->len - r->pos;
	if (r->ended) {
		if (!ret)
			return fail(r, -EBADMSG, off, "data after end record");
		r->done = true;
		return 0;
	}
	if (ret) {
		if (!avail)
			return fail(r, -ENODATA, off, "truncated: no end record");
		return fail(r, -ENODATA, off, "truncated: file ends inside a record (%zu bytes)",
			    avail);
	}
	memcpy(&h, r->data + r->pos, sizeof(h));
	if (rt_event_check_hdr(&h, &f))
		return fail(r, -EBADMSG, off + f.offset, "%s", f.msg);
	ret = fill(r, h.size);
	if (ret < 0)
		return read_fail(r, ret);
	if (ret)
		return fail(r, -ENODATA, off,
			    "truncated: file ends inside a record (%zu of %u bytes)",
			    r->len - r->pos, h.size);
	rec = (const void *)(r->data + r->pos);
	if ((uintptr_t)rec % RT_EVENT_ALIGN) {
		memcpy(r->scratch, rec, h.size);
		rec = (const void *)r->scratch;
	}
	if (rt_event_check_body(rec, &f))
		return fail(r, -EBADMSG, off + f.offset, "%s", f.msg);
	ret = check_time(r, rec, off);
	if (ret)
		return ret;
	if (rec->kind == RT_EV_CLOCK)
		r->clock_mono = rec->ts_ns;
	else if (rec->kind == RT_EV_TRACE_END)
		r->ended = true;
	r->pos += h.size;
	r->records++;
	*ev = rec;
	return 1;
}

const char *rt_trace_reader__error(const struct rt_trace_reader *r)
{
	return r->err ? r->msg : "";
}

__u64 rt_trace_reader__offset(const struct rt_trace_reader *r)
{
	return r->err ? r->err_off : r->base + r->pos;
}

__u64 rt_trace_reader__records(const struct rt_trace_reader *r)
{
	return r->records;
}

void rt_trace_reader__free(struct rt_trace_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	free(r->buf);
	free(r);
}
