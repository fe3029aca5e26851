/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Testbed knobs: the stage costs and sizes of the emulated inference server.
 * A scenario file holds one `knob = value` per line (`#` starts a comment);
 * `--set knob=value` overrides it. docs/testbed.md lists every knob.
 */
#ifndef TB_KNOBS_H
#define TB_KNOBS_H

#include <stddef.h>
#include <stdint.h>

struct tb_knobs {
	double read_ms; /* CPU on the handler after the request is read */
	double tokenize_base_ms; /* CPU per request on a tokenizer thread */
	double tokenize_ms_per_kchar; /* plus this per 1000 prompt characters */
	uint32_t tokenizer_threads;
	uint32_t max_batch; /* running requests per step */
	double max_wait_ms; /* an idle batcher waits this long to fill a batch */
	double prefill_base_ms; /* prefill step: base + per_ktok * prompt tokens / 1000 */
	double prefill_ms_per_ktok;
	double decode_base_ms; /* decode step: base + per_seq * batch size */
	double decode_ms_per_seq;
	double detokenize_ms; /* CPU on the handler before each token write */
	double postprocess_ms; /* CPU on the handler after the last token write */
	double comm_delay_ms; /* peer mode: reply delay */
	uint32_t max_tokens_default;
	uint32_t max_tokens_limit; /* larger max_tokens is a 400 */
	uint64_t max_body; /* bytes; a larger body is a 413 */
	uint32_t handler_threads; /* connections served at once */
	/*
	 * 0: a handler serves its connection to its end. 1: idle keep-alive
	 * connections wait in one epoll set shared by the handlers, which serve
	 * one request per wakeup (a thread-pool server's shape).
	 */
	uint32_t park_idle;
	/* the "omp" backend (docs/testbed.md, "OpenMP backend"); others ignore them */
	uint32_t omp_threads; /* threads in each step's parallel region */
	uint32_t omp_wait_policy; /* 0: the environment's, 1: passive, 2: active */
	double omp_gc_ms; /* CPU a runtime thread burns every 20 ms, never for a request */
};

/* Fills k with the defaults (the `healthy` scenario). */
void tb_knobs_default(struct tb_knobs *k);

/*
 * Sets one knob from text. Returns 0, -ENOENT for an unknown knob or -EINVAL
 * for a bad or out-of-range value, with a message naming the knob in err.
 */
int tb_knobs_set(struct tb_knobs *k, const char *key, const char *value, char *err, size_t errlen);

/*
 * Applies "knob=value" (spaces allowed around '='). Same returns as
 * tb_knobs_set.
 */
int tb_knobs_set_arg(struct tb_knobs *k, const char *arg, char *err, size_t errlen);

/*
 * Parses one scenario line (comments and blank lines are fine). Returns as
 * tb_knobs_set; the message does not include the line number.
 */
int tb_knobs_parse_line(struct tb_knobs *k, const char *line, char *err, size_t errlen);

/*
 * Loads a scenario file on top of k. Returns 0 or a negative errno with
 * "FILE:LINE: message" in err.
 */
int tb_knobs_load(struct tb_knobs *k, const char *path, char *err, size_t errlen);

/*
 * Checks relations between knobs (max_tokens_default <= max_tokens_limit).
 * Returns 0 or -EINVAL with a message.
 */
int tb_knobs_check(const struct tb_knobs *k, char *err, size_t errlen);

/* Cost in ms of a prefill step over `tokens` prompt tokens. */
double tb_knobs_prefill_ms(const struct tb_knobs *k, uint64_t tokens);

/* Cost in ms of a decode step of `batch` requests. */
double tb_knobs_decode_ms(const struct tb_knobs *k, uint32_t batch);

/* Tokenizer CPU in ms for a prompt of `chars` characters. */
double tb_knobs_tokenize_ms(const struct tb_knobs *k, uint64_t chars);

/* Prompt tokens the testbed charges for `chars` characters (4 chars a token). */
uint64_t tb_prompt_tokens(uint64_t chars);

#endif /* TB_KNOBS_H */
