// SPDX-License-Identifier: BSD-2-Clause
#include "export/jsonl_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "export/span_json.h"

/* room for ".1000" after the path */
#define PATH_LEN 4096
#define SUFFIX_LEN 8
/* a span with full timelines is far below this; more is a bug, not a span */
#define LINE_MAX_BYTES (4u << 20)
#define RETRY_NS 1000000000ULL

struct rt_jsonl {
	int fd; /* -1: not open (the open failed; retried before later lines) */
	bool regular; /* only a regular file is measured and rotated */
	char path[PATH_LEN];
	uint64_t max_bytes;
	uint32_t keep;
	uint64_t retry_ns; /* earliest next open attempt while fd < 0 */
	struct rt_jsonl_stats st;
	struct rt_jsonw w;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * O_APPEND: each line is one write at the end, whoever else appends.
 * O_NONBLOCK: a FIFO or a device without a reader must not stall the loop.
 */
static int open_fd(const char *path, bool *regular, uint64_t *size)
{
	const int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat sb;
	int fd = -1, tries;

	for (tries = 0; tries < 2; tries++) {
		fd = open(path, flags);
		if (fd >= 0 || errno != ENOENT)
			break;
		/*
		 * Ours to create: 0640 whatever the umask (the unit's UMask=0077
		 * would leave 0600), so a shipper in the directory's group reads
		 * it. An existing file keeps the mode its owner gave it.
		 */
		fd = open(path, flags | O_CREAT | O_EXCL, 0640);
		if (fd >= 0) {
			if (fchmod(fd, 0640)) {
				int err = -errno;

				close(fd);
				return err;
			}
			break;
		}
		if (errno != EEXIST) /* EEXIST: created meanwhile: open it as it is */
			break;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*regular = S_ISREG(sb.st_mode);
	*size = *regular ? (uint64_t)sb.st_size : 0;
	return fd;
}

static int drop(struct rt_jsonl *j, int err)
{
	switch (-err) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		j->st.dropped_nospace++;
		break;
	case EIO:
		j->st.dropped_io++;
		break;
	case EMSGSIZE:
		j->st.dropped_toolarge++;
		break;
	default:
		j->st.dropped_other++;
		break;
	}
	j->st.dropped++;
	j->st.last_errno = -err;
	return err;
}

static int set_path(char *dst, const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (!n)
		return -EINVAL;
	if (n >= PATH_LEN - SUFFIX_LEN)
		return -ENAMETOOLONG;
	memcpy(dst, path, n + 1);
	return 0;
}

struct rt_jsonl *rt_jsonl__open(const struct rt_jsonl_opts *o)
{
	struct rt_jsonl *j;
	int err;

	if (!o || o->keep > RT_JSONL_KEEP_MAX) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->fd = -1;
	err = set_path(j->path, o->path);
	if (err)
		goto fail;
	j->max_bytes = o->max_bytes;
	j->keep = o->keep;
	err = open_fd(j->path, &j->regular, &j->st.size);
	if (err < 0)
		goto fail;
	j->fd = err;
	rt_jsonw_init(&j->w, LINE_MAX_BYTES);
	return j;
fail:
	free(j);
	errno = -err;
	return NULL;
}

void rt_jsonl__close(struct rt_jsonl *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	rt_jsonw_fini(&j->w);
	free(j);
}

/* set_path() left room for the suffix: this cannot truncate */
static void numbered(char *out, const char *path, uint32_t i)
{
	size_t n = strlen(path);

	memcpy(out, path, n);
	if (snprintf(out + n, SUFFIX_LEN, ".%u", i) >= SUFFIX_LEN)
		out[n] = '\0';
}

/*
 * PATH.(keep-1) → PATH.keep … PATH → PATH.1, then a fresh PATH. The old
 * file is renamed while still open, so nothing written to it is lost, and
 * the new one is opened before the old descriptor is let go.
 */
static int rotate(struct rt_jsonl *j)
{
	char from[PATH_LEN], to[PATH_LEN];
	bool regular;
	uint64_t size;
	uint32_t i;
	int fd;

	if (!j->keep) {
		if (unlink(j->path) && errno != ENOENT)
			return -errno;
	} else {
		for (i = j->keep - 1; i >= 1; i--) {
			numbered(from, j->path, i);
			numbered(to, j->path, i + 1);
			/* a gap (ENOENT) is normal until keep files exist */
			if (rename(from, to) && errno != ENOENT)
				j->st.last_errno = errno;
		}
		numbered(to, j->path, 1);
		if (rename(j->path, to) && errno != ENOENT)
			return -errno;
	}
	fd = open_fd(j->path, &regular, &size);
	if (fd < 0) {
		/* the old file is gone from PATH: writing on would grow it unseen */
		close(j->fd);
		j->fd = -1;
		j->retry_ns = mono_ns() + RETRY_NS;
		return fd;
	}
	close(j->fd);
	j->fd = fd;
	j->regular = regular;
	j->st.size = size;
	j->st.rotations++;
	return 0;
}

static ssize_t writev_all(int fd, struct iovec *iov, int n)
{
	ssize_t r;

	do
		r = writev(fd, iov, n);
	while (r < 0 && errno == EINTR);
	return r;
}

/* A write that stopped part way: take the fragment back off the end. */
static void cut_back(struct rt_jsonl *j, size_t written)
{
	struct stat sb;

	if (!j->regular || !written || fstat(j->fd, &sb) || (uint64_t)sb.st_size < written)
		return;
	if (ftruncate(j->fd, sb.st_size - (off_t)written) == 0)
		j->st.size = (uint64_t)sb.st_size - written;
}

int rt_jsonl__write_line(struct rt_jsonl *j, const char *line, size_t len)
{
	struct iovec iov[2];
	uint64_t total = (uint64_t)len + 1;
	ssize_t r;
	size_t done;
	int err;

	if (memchr(line, '\n', len))
		return drop(j, -EINVAL);
	if (j->fd < 0) {
		uint64_t now = mono_ns();

		if (now < j->retry_ns)
			return drop(j, -(j->st.last_errno ? j->st.last_errno : EBADF));
		err = open_fd(j->path, &j->regular, &j->st.size);
		if (err < 0) {
			j->retry_ns = now + RETRY_NS;
			return drop(j, err);
		}
		j->fd = err;
	}
	/* size > 0: a line larger than max_bytes still goes in, alone */
	if (j->regular && j->max_bytes && j->st.size > 0 && j->st.size + total > j->max_bytes) {
		err = rotate(j);
		if (err)
			return drop(j, err);
	}
	iov[0] = (struct iovec){ .iov_base = (void *)line, .iov_len = len };
	iov[1] = (struct iovec){ .iov_base = (void *)"\n", .iov_len = 1 };
	r = writev_all(j->fd, iov, 2);
	if (r == (ssize_t)total)
		goto ok;
	if (r < 0)
		return drop(j, -errno);
	/* short: the rest once more, which either completes or says why not */
	done = (size_t)r;
	if (done < len) {
		iov[0].iov_base = (char *)line + done;
		iov[0].iov_len = len - done;
		r = writev_all(j->fd, iov, 2);
	} else {
		r = writev_all(j->fd, &iov[1], 1);
	}
	if (r >= 0 && done + (size_t)r == total)
		goto ok;
	err = r < 0 ? -errno : -ENOSPC;
	cut_back(j, done + (r > 0 ? (size_t)r : 0));
	return drop(j, err);
ok:
	j->st.lines++;
	j->st.bytes += total;
	j->st.size += total;
	return 0;
}

int rt_jsonl__write_span(struct rt_jsonl *j, const struct rt_span *s)
{
	rt_jsonw_reset(&j->w);
	rt_span_to_json(&j->w, s);
	if (!rt_jsonw_ok(&j->w))
		return drop(j, -EMSGSIZE);
	return rt_jsonl__write_line(j, rt_jsonw_str(&j->w), j->w.len);
}

int rt_jsonl__reopen(struct rt_jsonl *j)
{
	bool regular;
	uint64_t size;
	int fd = open_fd(j->path, &regular, &size);

	j->st.reopens++;
	if (fd < 0) {
		if (j->fd >= 0)
			close(j->fd);
		j->fd = -1;
		j->st.last_errno = -fd;
		j->retry_ns = mono_ns() + RETRY_NS;
		return fd;
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = fd;
	j->regular = regular;
	j->st.size = size;
	return 0;
}

int rt_jsonl__configure(struct rt_jsonl *j, const struct rt_jsonl_opts *o)
{
	char path[PATH_LEN];
	bool regular;
	uint64_t size;
	int err, fd;

	if (o->keep > RT_JSONL_KEEP_MAX)
		return -EINVAL;
	err = set_path(path, o->path);
	if (err)
		return err;
	if (strcmp(path, j->path)) {
		fd = open_fd(path, &regular, &size);
		if (fd < 0)
			return fd;
		if (j->fd >= 0)
			close(j->fd);
		j->fd = fd;
		j->regular = regular;
		j->st.size = size;
		j->st.reopens++;
		memcpy(j->path, path, sizeof(path));
	}
	j->max_bytes = o->max_bytes;
	j->keep = o->keep;
	return 0;
}

const char *rt_jsonl__path(const struct rt_jsonl *j)
{
	return j->path;
}

void rt_jsonl__get_opts(const struct rt_jsonl *j, struct rt_jsonl_opts *out)
{
	out->path = j->path;
	out->max_bytes = j->max_bytes;
	out->keep = j->keep;
}

void rt_jsonl__stats(const struct rt_jsonl *j, struct rt_jsonl_stats *out)
{
	*out = j->st;
}
