/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ground-truth log: one JSON object per completion request, written when
 * the request ends. Keys and their exact instants: docs/testbed.md,
 * "Ground truth".
 */
#ifndef TB_TRUTH_H
#define TB_TRUTH_H

#include "buf.h"
#include "req.h"

struct tb_truth;

/* Opens (truncates) path, mode 0600. Returns NULL with errno set. */
struct tb_truth *tb_truth__open(const char *path);

/*
 * Formats r into line (reset first) as one JSON object and its newline.
 * Returns 0 or -ENOBUFS.
 */
int tb_truth_format(const struct tb_req *r, struct tb_buf *line);

/*
 * Writes r's line and flushes it (thread safe). `line` is the caller's
 * scratch buffer. Returns 0 or a negative errno. t may be NULL (no log).
 */
int tb_truth__write(struct tb_truth *t, const struct tb_req *r, struct tb_buf *line);

/* Flushes and closes; t may be NULL. */
void tb_truth__free(struct tb_truth *t);

#endif /* TB_TRUTH_H */
