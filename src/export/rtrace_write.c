/* SPDX-License-Identifier: BSD-2-Clause */
#include "export/rtrace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/event_check.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".rtrace files are little-endian");

struct rt_trace_writer {
	int fd;
	bool own_fd;
	bool fsync;
	int err; /* sticky -errno */
	__u32 source;
	rt_trace_clock_fn clock_fn;
	void *clock_ctx;
	__s64 fixed_offset; /* realtime - monotonic of the header pair */
	__u64 lower_ns; /* records must not be older than this */
	__u64 clock_mono; /* newest clock pair's monotonic time */
	__u64 max_ts;
	struct rt_trace_writer_stats st;
	size_t len, cap;
	char *buf;
};

static __u64 now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Realtime is read between two monotonic reads; their midpoint pairs with it. */
static void read_clock_pair(__u64 *real, __u64 *mono)
{
	__u64 m1 = now_ns(CLOCK_MONOTONIC);

	*real = now_ns(CLOCK_REALTIME);
	*mono = m1 + (now_ns(CLOCK_MONOTONIC) - m1) / 2;
}

static __u64 current_offset_clock(__u64 mono_ns, void *ctx)
{
	__u64 real, mono;

	(void)ctx;
	read_clock_pair(&real, &mono);
	return mono_ns + (real - mono);
}

static void read_boot_id(char *out, size_t len)
{
	ssize_t n;
	int fd;

	out[0] = '\0';
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0) {
		out[0] = '\0';
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t r;

	while (n) {
		r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		p += r;
		n -= r;
	}
	return 0;
}

int rt_trace_writer__flush(struct rt_trace_writer *w)
{
	int err;

	if (w->err)
		return w->err;
	err = write_all(w->fd, w->buf, w->len);
	w->len = 0;
	if (err)
		w->err = err;
	return err;
}

/* Copies a record into the buffer, flushing first when it does not fit. */
static int append(struct rt_trace_writer *w, const void *rec, size_t n)
{
	int err;

	if (w->len + n > w->cap) {
		err = rt_trace_writer__flush(w);
		if (err)
			return err;
	}
	memcpy(w->buf + w->len, rec, n);
	w->len += n;
	w->st.bytes += n;
	return 0;
}

static int append_record(struct rt_trace_writer *w, const struct rt_event_hdr *ev)
{
	int err = append(w, ev, ev->size);

	if (err)
		return err;
	w->st.records++;
	if (ev->ts_ns > w->max_ts)
		w->max_ts = ev->ts_ns;
	return 0;
}

static int write_header(struct rt_trace_writer *w, const struct rt_trace_writer_opts *o)
{
	struct rt_trace_header h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, RT_TRACE_MAGIC, RT_TRACE_MAGIC_LEN);
	h.version = RT_TRACE_VERSION;
	h.header_size = sizeof(h);
	h.event_version = RT_EVENT_VERSION;
	h.flags = o->flags;
	if (o->monotonic_ns) {
		h.realtime_ns = o->realtime_ns;
		h.monotonic_ns = o->monotonic_ns;
	} else {
		read_clock_pair(&h.realtime_ns, &h.monotonic_ns);
	}
	if (o->host)
		snprintf(h.host, sizeof(h.host), "%s", o->host);
	else if (gethostname(h.host, sizeof(h.host) - 1))
		h.host[0] = '\0';
	if (o->boot_id)
		snprintf(h.boot_id, sizeof(h.boot_id), "%s", o->boot_id);
	else
		read_boot_id(h.boot_id, sizeof(h.boot_id));

	w->fixed_offset = (__s64)(h.realtime_ns - h.monotonic_ns);
	w->lower_ns = h.monotonic_ns > RT_TRACE_SLACK_NS ? h.monotonic_ns - RT_TRACE_SLACK_NS : 0;
	w->clock_mono = h.monotonic_ns;
	w->max_ts = h.monotonic_ns;
	return append(w, &h, sizeof(h));
}

static __u64 fixed_offset_clock(__u64 mono_ns, void *ctx)
{
	const struct rt_trace_writer *w = ctx;

	return mono_ns + (__u64)w->fixed_offset;
}

static struct rt_trace_writer *writer_new(int fd, bool own_fd,
					  const struct rt_trace_writer_opts *opts)
{
	static const struct rt_trace_writer_opts defaults;
	const struct rt_trace_writer_opts *o = opts ? opts : &defaults;
	struct rt_trace_writer *w;
	int err;

	if (o->buf_size && o->buf_size < 2 * RT_EVENT_MAX) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fd = fd;
	w->own_fd = own_fd;
	w->fsync = o->fsync;
	w->source = o->source;
	w->cap = o->buf_size ? o->buf_size : RT_TRACE_WRITER_BUF_DEFAULT;
	w->buf = malloc(w->cap);
	if (!w->buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (o->clock_fn) {
		w->clock_fn = o->clock_fn;
		w->clock_ctx = o->clock_ctx;
	} else if (o->monotonic_ns) {
		w->clock_fn = fixed_offset_clock;
		w->clock_ctx = w;
	} else {
		w->clock_fn = current_offset_clock;
	}
	err = write_header(w, o);
	if (err)
		goto cleanup;
	/* a header on disk right away: an empty recording reads as truncated, not as garbage */
	err = rt_trace_writer__flush(w);
	if (err)
		goto cleanup;
	return w;

cleanup:
	free(w->buf);
	free(w);
	errno = -err;
	return NULL;
}

struct rt_trace_writer *rt_trace_writer__fd_open(int fd, const struct rt_trace_writer_opts *opts)
{
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	return writer_new(fd, false, opts);
}

struct rt_trace_writer *rt_trace_writer__open(const char *path,
					      const struct rt_trace_writer_opts *opts)
{
	struct rt_trace_writer *w;
	struct stat sb;
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	/* an existing file keeps its mode through O_TRUNC: recordings are private */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 077) && fchmod(fd, 0600)) {
		err = -errno;
		goto cleanup;
	}
	w = writer_new(fd, true, opts);
	if (!w) {
		err = -errno;
		goto cleanup;
	}
	return w;

cleanup:
	close(fd);
	errno = -err;
	return NULL;
}

static int insert_clock(struct rt_trace_writer *w, __u64 mono)
{
	struct rt_ev_clock c;
	int err;

	memset(&c, 0, sizeof(c));
	c.hdr.kind = RT_EV_CLOCK;
	c.hdr.size = sizeof(c);
	c.hdr.source = w->source;
	c.hdr.ts_ns = mono;
	c.realtime_ns = w->clock_fn(mono, w->clock_ctx);
	err = append_record(w, &c.hdr);
	if (err)
		return err;
	w->clock_mono = mono;
	w->st.clock_records++;
	return 0;
}

static int reject(struct rt_trace_writer *w, int err)
{
	w->st.rejected++;
	return err;
}

int rt_trace_writer__write(struct rt_trace_writer *w, const struct rt_event_hdr *ev)
{
	int err;

	if (w->err)
		return w->err;
	if ((uintptr_t)ev % RT_EVENT_ALIGN || rt_event_check(ev, ev->size, NULL))
		return reject(w, -EINVAL);
	if (ev->ts_ns < w->lower_ns)
		return reject(w, -ERANGE);
	if (ev->kind == RT_EV_TRACE_END)
		return reject(w, -EINVAL);
	if (ev->kind == RT_EV_CLOCK) {
		/* the reader requires clock pairs in order */
		if (ev->ts_ns < w->clock_mono)
			return reject(w, -EINVAL);
		err = append_record(w, ev);
		if (!err)
			w->clock_mono = ev->ts_ns;
		return err;
	}
	/*
	 * The reader bounds a record's ts_ns by the newest clock pair plus
	 * RT_TRACE_SLACK_NS; a pair at least every period keeps every record
	 * well inside that bound and gives consumers a fresh realtime offset.
	 */
	if (ev->ts_ns > w->clock_mono && ev->ts_ns - w->clock_mono >= RT_TRACE_CLOCK_PERIOD_NS) {
		err = insert_clock(w, ev->ts_ns);
		if (err)
			return err;
	}
	return append_record(w, ev);
}

int rt_trace_writer__close(struct rt_trace_writer *w)
{
	struct rt_ev_trace_end end;
	int err, err2;

	if (!w)
		return 0;
	memset(&end, 0, sizeof(end));
	end.hdr.kind = RT_EV_TRACE_END;
	end.hdr.size = sizeof(end);
	end.hdr.source = w->source;
	end.hdr.ts_ns = w->max_ts > w->clock_mono ? w->max_ts : w->clock_mono;
	end.records = w->st.records;
	err = w->err;
	if (!err)
		err = append_record(w, &end.hdr);
	if (!err)
		err = rt_trace_writer__flush(w);
	if (!err && w->fsync && fsync(w->fd))
		err = -errno;
	if (w->own_fd && close(w->fd) && !err) {
		err2 = -errno;
		/* EINTR from close(): the fd is gone anyway, and the data was written */
		if (err2 != -EINTR)
			err = err2;
	}
	free(w->buf);
	free(w);
	return err;
}

void rt_trace_writer__stats(const struct rt_trace_writer *w, struct rt_trace_writer_stats *st)
{
	*st = w->st;
}
