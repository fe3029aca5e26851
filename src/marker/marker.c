// SPDX-License-Identifier: BSD-2-Clause
/*
 * The marker functions are attach points, not code: the daemon puts uprobes
 * on their first instruction and reads the arguments from registers. So each
 * one must exist as its own out-of-line function with a stable symbol:
 * noinline keeps callers from folding it away, `used` keeps it in the binary,
 * and the asm statement both "uses" the arguments (so they must be in their
 * argument registers at the call) and carries a distinct string per function
 * (so identical-code folding cannot give two markers the same address, which
 * would make a probe on one fire for the other).
 */
#include <stdint.h>

#include <reqtrace/marker.h>

#define RT_MARKER_API __attribute__((noinline, used, visibility("default")))

RT_MARKER_API void rt_mark_begin(const char *request_id, enum rt_phase phase)
{
	__asm__ volatile("# rt_mark_begin" : : "r"(request_id), "r"(phase) : "memory");
}

RT_MARKER_API void rt_mark_end(const char *request_id, enum rt_phase phase)
{
	__asm__ volatile("# rt_mark_end" : : "r"(request_id), "r"(phase) : "memory");
}

RT_MARKER_API void rt_mark_step_begin(uint64_t step_id, uint32_t n, const char *const *request_ids)
{
	__asm__ volatile("# rt_mark_step_begin"
			 :
			 : "r"(step_id), "r"(n), "r"(request_ids)
			 : "memory");
}

RT_MARKER_API void rt_mark_step_begin_tokens(uint64_t step_id, uint32_t n,
					     const char *const *request_ids, const uint32_t *tokens)
{
	__asm__ volatile("# rt_mark_step_begin_tokens"
			 :
			 : "r"(step_id), "r"(n), "r"(request_ids), "r"(tokens)
			 : "memory");
}

RT_MARKER_API void rt_mark_step_end(uint64_t step_id)
{
	__asm__ volatile("# rt_mark_step_end" : : "r"(step_id) : "memory");
}

RT_MARKER_API void rt_mark_bind(const char *engine_id, const char *request_id)
{
	__asm__ volatile("# rt_mark_bind" : : "r"(engine_id), "r"(request_id) : "memory");
}

RT_MARKER_API uint32_t rt_mark_abi_version(void)
{
	return RT_MARKER_ABI_VERSION;
}
