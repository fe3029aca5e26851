// SPDX-License-Identifier: BSD-2-Clause
/*
 * The marker API. A call writes its record into the ring the daemon handed
 * over (mconn.c) when there is one: one acquire load of a global pointer
 * (a plain load on x86 and a load-acquire on arm64), then a reservation in
 * shared memory. Without a ring it calls the uprobe attach point, so a
 * daemon that probes the library (an older one, or one with no injection
 * socket) still sees every call.
 *
 * The attach points are where uprobes go, not code: the daemon puts uprobes
 * on their first instruction and reads the arguments from registers. So each
 * one must exist as its own out-of-line function with a stable symbol:
 * noinline keeps callers from folding it away, `used` keeps it in the binary,
 * and the asm statement both "uses" the arguments (so they must be in their
 * argument registers at the call) and carries a distinct string per function
 * (so identical-code folding cannot give two markers the same address, which
 * would make a probe on one fire for the other). The API functions are no
 * longer attach points: a probe on them would fire for calls the ring
 * already carried. The attach points are local symbols (.symtab, not
 * exported: the ABI stays the documented symbols): the daemon finds them by
 * name in the file, as it finds any function.
 */
#include <errno.h>
#include <stdint.h>

#include "mlib.h"

#define RT_MARKER_API __attribute__((visibility("default")))
#define RT_PROBE_POINT __attribute__((noinline, used))
#define likely(x) __builtin_expect(!!(x), 1)

RT_PROBE_POINT void rt_mark_probe_begin(const char *request_id, enum rt_phase phase)
{
	__asm__ volatile("# rt_mark_probe_begin" : : "r"(request_id), "r"(phase) : "memory");
}

RT_PROBE_POINT void rt_mark_probe_end(const char *request_id, enum rt_phase phase)
{
	__asm__ volatile("# rt_mark_probe_end" : : "r"(request_id), "r"(phase) : "memory");
}

RT_PROBE_POINT void rt_mark_probe_step_begin(uint64_t step_id, uint32_t n,
					     const char *const *request_ids)
{
	__asm__ volatile("# rt_mark_probe_step_begin"
			 :
			 : "r"(step_id), "r"(n), "r"(request_ids)
			 : "memory");
}

RT_PROBE_POINT void rt_mark_probe_step_begin_tokens(uint64_t step_id, uint32_t n,
						    const char *const *request_ids,
						    const uint32_t *tokens)
{
	__asm__ volatile("# rt_mark_probe_step_begin_tokens"
			 :
			 : "r"(step_id), "r"(n), "r"(request_ids), "r"(tokens)
			 : "memory");
}

RT_PROBE_POINT void rt_mark_probe_step_end(uint64_t step_id)
{
	__asm__ volatile("# rt_mark_probe_step_end" : : "r"(step_id) : "memory");
}

RT_PROBE_POINT void rt_mark_probe_bind(const char *engine_id, const char *request_id)
{
	__asm__ volatile("# rt_mark_probe_bind" : : "r"(engine_id), "r"(request_id) : "memory");
}

static inline struct rt_mring *ring(void)
{
	return __atomic_load_n(&rt_mark_ring, __ATOMIC_ACQUIRE);
}

/* No ring and not simply FALLBACK: 1 when the call goes to the attach point. */
static __attribute__((noinline)) int fallback_slow(void)
{
	int st = __atomic_load_n(&rt_mark_state, __ATOMIC_RELAXED);

	if (st == RT_MARK_UNSTARTED) {
		rt_mark_start();
		st = __atomic_load_n(&rt_mark_state, __ATOMIC_RELAXED);
	}
	return st != RT_MARK_SHM_ONLY;
}

static inline int fallback(void)
{
	return likely(__atomic_load_n(&rt_mark_state, __ATOMIC_RELAXED) == RT_MARK_FALLBACK) ||
	       fallback_slow();
}

/*
 * The traced paths live out of line, so that the API functions stay a load,
 * a test and a tail call: the untraced cost is what every engine pays.
 * Each falls back to the attach point when the daemon closed the ring.
 */
static __attribute__((noinline)) void traced_mark(struct rt_mring *r, __u16 kind, const char *id,
						  enum rt_phase phase)
{
	if (rt_mark_w_mark(r, kind, id, phase) != -EPIPE || !fallback())
		return;
	if (kind == RT_EV_MARK_BEGIN)
		rt_mark_probe_begin(id, phase);
	else
		rt_mark_probe_end(id, phase);
}

static __attribute__((noinline)) void traced_step_begin(struct rt_mring *r, uint64_t step_id,
							uint32_t n, const char *const *ids)
{
	if (rt_mark_w_step_begin(r, step_id, n, ids) == -EPIPE && fallback())
		rt_mark_probe_step_begin(step_id, n, ids);
}

static __attribute__((noinline)) void traced_step_begin_tokens(struct rt_mring *r, uint64_t step_id,
							       uint32_t n, const char *const *ids,
							       const uint32_t *tokens)
{
	if (rt_mark_w_step_begin_tokens(r, step_id, n, ids, tokens) == -EPIPE && fallback())
		rt_mark_probe_step_begin_tokens(step_id, n, ids, tokens);
}

static __attribute__((noinline)) void traced_step_end(struct rt_mring *r, uint64_t step_id)
{
	if (rt_mark_w_step_end(r, step_id) == -EPIPE && fallback())
		rt_mark_probe_step_end(step_id);
}

static __attribute__((noinline)) void traced_bind(struct rt_mring *r, const char *engine_id,
						  const char *request_id)
{
	if (rt_mark_w_bind(r, engine_id, request_id) == -EPIPE && fallback())
		rt_mark_probe_bind(engine_id, request_id);
}

RT_MARKER_API void rt_mark_begin(const char *request_id, enum rt_phase phase)
{
	struct rt_mring *r = ring();

	if (r)
		traced_mark(r, RT_EV_MARK_BEGIN, request_id, phase);
	else if (fallback())
		rt_mark_probe_begin(request_id, phase);
}

RT_MARKER_API void rt_mark_end(const char *request_id, enum rt_phase phase)
{
	struct rt_mring *r = ring();

	if (r)
		traced_mark(r, RT_EV_MARK_END, request_id, phase);
	else if (fallback())
		rt_mark_probe_end(request_id, phase);
}

RT_MARKER_API void rt_mark_step_begin(uint64_t step_id, uint32_t n, const char *const *request_ids)
{
	struct rt_mring *r = ring();

	if (r)
		traced_step_begin(r, step_id, n, request_ids);
	else if (fallback())
		rt_mark_probe_step_begin(step_id, n, request_ids);
}

RT_MARKER_API void rt_mark_step_begin_tokens(uint64_t step_id, uint32_t n,
					     const char *const *request_ids, const uint32_t *tokens)
{
	struct rt_mring *r = ring();

	if (r)
		traced_step_begin_tokens(r, step_id, n, request_ids, tokens);
	else if (fallback())
		rt_mark_probe_step_begin_tokens(step_id, n, request_ids, tokens);
}

RT_MARKER_API void rt_mark_step_end(uint64_t step_id)
{
	struct rt_mring *r = ring();

	if (r)
		traced_step_end(r, step_id);
	else if (fallback())
		rt_mark_probe_step_end(step_id);
}

RT_MARKER_API void rt_mark_bind(const char *engine_id, const char *request_id)
{
	struct rt_mring *r = ring();

	if (r)
		traced_bind(r, engine_id, request_id);
	else if (fallback())
		rt_mark_probe_bind(engine_id, request_id);
}

RT_MARKER_API uint32_t rt_mark_abi_version(void)
{
	return RT_MARKER_ABI_VERSION;
}
