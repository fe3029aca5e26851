/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The testbed's I/O modes: which system calls read the request and write the
 * response, so the tracer is exercised against what different real servers do
 * (docs/testbed.md, "I/O modes").
 */
#ifndef TB_IO_H
#define TB_IO_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "buf.h"

enum tb_io_mode {
	TB_IO_READWRITE, /* read / write; a response unit in one write */
	TB_IO_VECTOR, /* readv / writev; a unit's pieces as iovecs */
	TB_IO_SOCKET, /* recvfrom / sendto; a unit in one sendto */
	TB_IO_MSG, /* recvmsg / sendmsg; a unit's pieces as iovecs */
	TB_IO_SPLIT, /* read / write; every piece its own write */
};

#define TB_IO_PIECES_MAX 8

/* Parses a mode name. Returns 0 or -EINVAL. */
int tb_io_mode_parse(const char *name, enum tb_io_mode *mode);

/* The mode's name. */
const char *tb_io_mode_name(enum tb_io_mode mode);

/*
 * One read-family system call of the mode into buf (EINTR retried).
 * Returns the bytes read, 0 at end of stream, or a negative errno.
 */
ssize_t tb_io_read(enum tb_io_mode mode, int fd, void *buf, size_t len);

/*
 * A response unit: pieces the mode writes together (one system call unless
 * the socket takes less; split writes each piece separately).
 */
struct tb_io_unit {
	struct iovec iov[TB_IO_PIECES_MAX];
	int iovcnt;
	/*
	 * The piece whose first system call is "the" write an observer sees
	 * (the content-bearing one), or -1: hook(hook_arg) runs, then
	 * mark_ns is taken, immediately before that system call.
	 */
	int mark_piece;
	void (*hook)(void *arg);
	void *hook_arg;
	uint64_t mark_ns; /* out */
	uint64_t end_ns; /* out: right after the call that wrote the last byte */
};

/* Adds a piece to the unit. Returns 0 or -E2BIG. */
int tb_io_unit_add(struct tb_io_unit *u, const void *data, size_t len);

/*
 * Writes the unit with the mode's write call, looping over short writes.
 * `scratch` holds the coalesced bytes of the single-buffer modes. Returns 0
 * or a negative errno (-EPIPE, -ECONNRESET when the client went away).
 */
int tb_io_write(enum tb_io_mode mode, int fd, struct tb_io_unit *u, struct tb_buf *scratch);

#endif /* TB_IO_H */
