// SPDX-License-Identifier: BSD-2-Clause
/*
 * The scenarios behind tests/fixtures/ (tests/fixtures/README.md describes
 * each). Small on purpose: a few requests of a few tokens each.
 */
#include "model.h"

#include <string.h>

#define US 1000ULL
#define MS 1000000ULL

static const struct gen_scenario scenarios[] = {
	{
		.name = "basic",
		.desc = "one keep-alive connection, 5 sequential streamed requests",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 5,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 6, .prompt_len = 120,
			  .stream = true, .auth = true, .empty_first = true },
			{ .conn = 0, .think_ns = 2 * MS, .n_tokens = 5, .prompt_len = 80,
			  .stream = true },
			{ .conn = 0, .think_ns = 3 * MS, .n_tokens = 7, .prompt_len = 200,
			  .stream = true, .with_id = true, .split_head_body = true,
			  .hdr_with_first = true },
			{ .conn = 0, .think_ns = 2 * MS, .n_tokens = 5, .prompt_len = 60,
			  .stream = true, .with_id = true, .empty_first = true },
			{ .conn = 0, .think_ns = 4 * MS, .n_tokens = 6, .prompt_len = 100,
			  .stream = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITEV,
		.noise = 2,
	},
	{
		.name = "two-conn-shared",
		.desc = "two connections, overlapping requests batched together by the engine",
		.n_conns = 2,
		.conn_at = { 1 * MS, 5 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 100 * US, .n_tokens = 10, .prompt_len = 150,
			  .fmt = GEN_FMT_CHAT, .stream = true, .with_id = true,
			  .empty_first = true, .coalesce = true, .spec_every = 3 },
			{ .conn = 1, .at_ns = 100 * US, .n_tokens = 8, .prompt_len = 90,
			  .fmt = GEN_FMT_CHAT, .stream = true, .with_id = true,
			  .empty_first = true, .spec_every = 4 },
		},
		.recv_sys = RT_SYS_RECVFROM,
		.send_sys = RT_SYS_SENDTO,
		.final_sys = RT_SYS_SENDMSG,
		.noise = 1,
	},
	{
		.name = "aborted",
		.desc = "the client hangs up mid-stream: read returns 0, then a write fails with EPIPE",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 5, .prompt_len = 80,
			  .stream = true, .with_id = true },
			{ .conn = 0, .think_ns = 2 * MS, .n_tokens = 12, .prompt_len = 100,
			  .stream = true, .with_id = true, .empty_first = true,
			  .abort_after = 3 },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITE,
		.noise = 2,
	},
	{
		.name = "nonstream",
		.desc = "non-streamed JSON responses with Content-Length and usage",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 6, .prompt_len = 100 },
			{ .conn = 0, .think_ns = 2 * MS, .n_tokens = 8, .prompt_len = 140,
			  .with_id = true, .two_writes = true },
		},
		.recv_sys = RT_SYS_RECVFROM,
		.send_sys = RT_SYS_SENDTO,
		.final_sys = RT_SYS_SENDTO,
		.noise = 2,
	},
	{
		.name = "pipelined",
		.desc = "two requests in one read on one connection, answered in order",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 5, .prompt_len = 80,
			  .stream = true, .with_id = true, .pipelined_next = true },
			{ .conn = 0, .n_tokens = 4, .prompt_len = 60, .stream = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITEV,
		.noise = 2,
	},
	{
		.name = "large-final-event",
		.desc = "llama.cpp-style stream whose ~3 KiB final event ends with timings",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 1,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 8, .prompt_len = 160,
			  .fmt = GEN_FMT_LLAMA, .stream = true, .with_id = true,
			  .large_final = true },
		},
		.recv_sys = RT_SYS_RECVFROM,
		.send_sys = RT_SYS_SENDTO,
		.final_sys = RT_SYS_SENDTO,
		.noise = 1,
	},
	{
		.name = "comm",
		.desc = "engine exchanges with a peer rank every step (comm wait)",
		.n_conns = 2,
		.conn_at = { 1 * MS, 4 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 8, .prompt_len = 100,
			  .stream = true, .with_id = true },
			{ .conn = 1, .at_ns = 200 * US, .n_tokens = 6, .prompt_len = 60,
			  .fmt = GEN_FMT_CHAT, .stream = true, .empty_first = true },
		},
		.comm = true,
		.comm_lo = 1000 * US,
		.comm_hi = 2500 * US,
		.recv_sys = RT_SYS_RECVFROM,
		.send_sys = RT_SYS_SENDTO,
		.final_sys = RT_SYS_WRITEV,
		.noise = 1,
	},
	{
		.name = "split-reads",
		.desc = "requests arriving in many small reads at awkward offsets, one chunked",
		.n_conns = 1,
		.conn_at = { 1 * MS },
		.n_reqs = 2,
		.reqs = {
			{ .conn = 0, .at_ns = 200 * US, .n_tokens = 5, .prompt_len = 90,
			  .stream = true, .with_id = true, .awkward_split = true,
			  .chunked_body = true },
			{ .conn = 0, .think_ns = 2 * MS, .n_tokens = 4, .prompt_len = 70,
			  .stream = true, .awkward_split = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITEV,
		.noise = 1,
	},
	{
		.name = "backlog",
		.desc = "three requests at once: the tokenizer works through them without sleeping",
		.n_conns = 3,
		.conn_at = { 1 * MS, 1 * MS + 20 * US, 1 * MS + 40 * US },
		.n_reqs = 3,
		.reqs = {
			{ .conn = 0, .at_ns = 100 * US, .n_tokens = 4, .prompt_len = 2000,
			  .stream = true, .with_id = true },
			{ .conn = 1, .at_ns = 100 * US, .n_tokens = 4, .prompt_len = 1500,
			  .stream = true, .with_id = true },
			{ .conn = 2, .at_ns = 100 * US, .n_tokens = 4, .prompt_len = 1800,
			  .stream = true, .with_id = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITE,
		.noise = 0,
	},
	{
		.name = "accept-queue",
		.desc = "four clients at once, two handler threads: requests wait unread in the kernel",
		.n_conns = 4,
		.conn_at = { 1 * MS, 1 * MS + 30 * US, 1 * MS + 60 * US, 1 * MS + 90 * US },
		.n_reqs = 5,
		.reqs = {
			{ .conn = 0, .at_ns = 100 * US, .n_tokens = 5, .prompt_len = 120,
			  .stream = true, .with_id = true },
			{ .conn = 1, .at_ns = 100 * US, .n_tokens = 4, .prompt_len = 80,
			  .stream = true, .with_id = true },
			{ .conn = 2, .at_ns = 100 * US, .n_tokens = 4, .prompt_len = 100,
			  .fmt = GEN_FMT_CHAT, .stream = true, .empty_first = true },
			{ .conn = 3, .at_ns = 150 * US, .n_tokens = 3, .prompt_len = 60,
			  .with_id = true },
			{ .conn = 3, .think_ns = 1 * MS, .n_tokens = 4, .prompt_len = 90,
			  .stream = true, .with_id = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITEV,
		.noise = 1,
		.arrival = true,
		.n_handlers = 2,
	},
	{
		.name = "pool",
		.desc = "compute pools: a sleeping and a spinning worker, and a runtime thread",
		.n_conns = 2,
		.conn_at = { 1 * MS, 3 * MS },
		.n_reqs = 3,
		.reqs = {
			{ .conn = 0, .at_ns = 100 * US, .n_tokens = 8, .prompt_len = 120,
			  .stream = true, .with_id = true },
			{ .conn = 0, .think_ns = 4 * MS, .n_tokens = 5, .prompt_len = 60,
			  .stream = true, .with_id = true },
			{ .conn = 1, .at_ns = 100 * US, .n_tokens = 6, .prompt_len = 80,
			  .fmt = GEN_FMT_CHAT, .stream = true, .with_id = true },
		},
		.recv_sys = RT_SYS_READ,
		.send_sys = RT_SYS_WRITE,
		.final_sys = RT_SYS_WRITEV,
		.noise = 0,
		.pool = true,
	},
};

#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

size_t gen_scenario_n(void)
{
	return N_SCENARIOS;
}

const struct gen_scenario *gen_scenario_at(size_t i)
{
	return i < N_SCENARIOS ? &scenarios[i] : NULL;
}

const struct gen_scenario *gen_scenario_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < N_SCENARIOS; i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	return NULL;
}
