/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Synthetic event generator with ground truth (tests/fixtures/README.md).
 *
 * A small deterministic simulation of an inference server at the syscall
 * and scheduler level (an acceptor, one handler thread per connection, a
 * tokenizer, an engine loop, untraced CPU hogs on two CPUs). It writes the
 * records BPF would emit, in a realistic arrival order with honest
 * watermarks, to an .rtrace file, and the true span values of every request
 * to a JSON Lines file. It uses no correlator code: it is the independent
 * truth the correlator is tested against.
 */
#ifndef RT_GEN_H
#define RT_GEN_H

#include <stddef.h>
#include <stdint.h>

enum rt_gen_mode {
	RT_GEN_ZERO = 0, /* probes only */
	RT_GEN_MARKERS = 1, /* plus marker records (rt_mark_*) */
	RT_GEN_PACK = 2, /* probes plus an engine pack's uprobes (llama_decode & co), no markers */
};

/* Fixed header fields, so that a seed always gives the same bytes. */
#define RT_GEN_HOST "rt-gen"
#define RT_GEN_BOOT_ID "5eed5eed-0000-4000-8000-000000000001"
#define RT_GEN_MONO_START 5000000000000ULL /* 5000 s after boot */
#define RT_GEN_REALTIME_START 1735689600000000000ULL /* 2025-01-01T00:00:00Z */

struct rt_gen_opts {
	const char *scenario; /* rt_gen_scenario_name() */
	enum rt_gen_mode mode;
	uint64_t seed;
	const char *rtrace_path; /* the recording */
	const char *truth_path; /* the truth, JSON Lines */
};

/* Number of scenarios. */
size_t rt_gen_scenario_count(void);

/* Name and one-line description of scenario i (< rt_gen_scenario_count()), NULL beyond. */
const char *rt_gen_scenario_name(size_t i);
const char *rt_gen_scenario_desc(size_t i);

/* "zero", "markers" or "pack". */
const char *rt_gen_mode_name(enum rt_gen_mode mode);

/* Parses "zero"/"markers"/"pack"; 0 or -EINVAL. */
int rt_gen_mode_parse(const char *s, enum rt_gen_mode *mode);

/*
 * Simulates the scenario and writes both files. Returns 0, -ENOENT for an
 * unknown scenario, -EINVAL for bad options, or another -errno (I/O,
 * memory, an internal inconsistency of the simulation).
 */
int rt_gen_run(const struct rt_gen_opts *opts);

#endif /* RT_GEN_H */
