/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device-like stages of the testbed engine (prefill and decode steps) run
 * through this interface. The default "sleep" backend sleeps for the step's
 * cost; a GPU backend implements the same three operations by launching work
 * sized to the cost on a real device (see docs/testbed.md, "GPU backend").
 *
 * Threading: init and fini run on the thread that creates and destroys the
 * engine; step runs only on the engine's step worker thread, one call at a
 * time, so a backend needs no locking of its own (a CUDA backend makes its
 * context current in the first step call).
 */
#ifndef TB_BACKEND_H
#define TB_BACKEND_H

#include <stdint.h>

#include "knobs.h"

enum tb_step_kind {
	TB_STEP_PREFILL = 0, /* prompt processing of newly admitted requests */
	TB_STEP_DECODE = 1, /* one token for every running request */
};

struct tb_step {
	uint64_t step_id; /* unique per engine, increasing */
	enum tb_step_kind kind;
	uint32_t batch; /* requests in the step, >= 1 */
	uint64_t tokens; /* prefill: prompt tokens in the step; decode: == batch */
	uint64_t cost_ns; /* what the step should take, from the knobs */
	/* the members: request ids and each one's tokens in the step ([batch]) */
	const char *const *ids;
	const uint64_t *member_tokens;
};

struct tb_backend_ops {
	const char *name;
	/*
	 * Prepares the backend for the given knobs. Returns 0 or a negative
	 * errno; *ctx is handed back to step and fini.
	 */
	int (*init)(void **ctx, const struct tb_knobs *knobs);
	/*
	 * Runs one step and returns when its work is complete (as an engine
	 * does after synchronising with the device). Returns 0 or a negative
	 * errno; an error is counted and the step's tokens are still produced.
	 */
	int (*step)(void *ctx, const struct tb_step *step);
	/* Releases what init set up; ctx may be NULL. */
	void (*fini)(void *ctx);
};

/* The default backend: each step sleeps for its cost_ns. */
extern const struct tb_backend_ops tb_backend_sleep;

/* Steps on a GPU through the CUDA driver API (backend_cuda.c, docs/gpu.md). */
extern const struct tb_backend_ops tb_backend_cuda;

/* Steps as CPU work over a libgomp OpenMP pool (backend_omp.c, docs/testbed.md). */
extern const struct tb_backend_ops tb_backend_omp;

/* Returns the backend called `name`, or NULL (errno = ENOENT). */
const struct tb_backend_ops *tb_backend_find(const char *name);

#endif /* TB_BACKEND_H */
