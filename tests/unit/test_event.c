// SPDX-License-Identifier: BSD-2-Clause
/*
 * The wire format is shared by BPF, the daemon and the injection library:
 * a size or offset change silently breaks the other side, so pin them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <reqtrace/event.h>
#include <reqtrace/rtrace.h>

#define SIZE_IS(type, n)                                                                           \
	do {                                                                                       \
		assert_int_equal(sizeof(type), n);                                                 \
		assert_int_equal(sizeof(type) % RT_EVENT_ALIGN, 0);                                \
	} while (0)

static void test_header_layout(void **state)
{
	(void)state;
	SIZE_IS(struct rt_event_hdr, 24);
	assert_int_equal(offsetof(struct rt_event_hdr, kind), 0);
	assert_int_equal(offsetof(struct rt_event_hdr, size), 2);
	assert_int_equal(offsetof(struct rt_event_hdr, source), 4);
	assert_int_equal(offsetof(struct rt_event_hdr, ts_ns), 8);
	assert_int_equal(offsetof(struct rt_event_hdr, pid), 16);
	assert_int_equal(offsetof(struct rt_event_hdr, tid), 20);
}

static void test_body_sizes(void **state)
{
	(void)state;
	SIZE_IS(struct rt_ev_sched_switch, 96);
	SIZE_IS(struct rt_ev_sched_waking, 40);
	SIZE_IS(struct rt_ev_task_new, 56);
	SIZE_IS(struct rt_ev_proc_exec, 48);
	SIZE_IS(struct rt_ev_proc_exit, 48);
	SIZE_IS(struct rt_sock_addr, 24);
	SIZE_IS(struct rt_ev_sock_conn, 96);
	SIZE_IS(struct rt_ev_sock_io, 104);
	assert_int_equal(offsetof(struct rt_ev_sock_io, data), 104);
	SIZE_IS(struct rt_ev_sock_close, 48);
	SIZE_IS(struct rt_ev_sock_arrival, 48);
	SIZE_IS(struct rt_ev_mark, 96);
	SIZE_IS(struct rt_ev_mark_step, 104);
	SIZE_IS(struct rt_ev_mark_bind, 152);
	SIZE_IS(struct rt_ev_mark_step_tokens, 40);
	SIZE_IS(struct rt_ev_cuda_api, 72);
	SIZE_IS(struct rt_ev_nccl, 72);
	SIZE_IS(struct rt_ev_gpu_kernel, 152);
	SIZE_IS(struct rt_ev_gpu_memcpy, 72);
	SIZE_IS(struct rt_ev_gpu_memset, 56);
	SIZE_IS(struct rt_ev_gpu_sync, 56);
	SIZE_IS(struct rt_ev_gpu_ext_corr, 48);
	SIZE_IS(struct rt_ev_link_sample, 56);
	SIZE_IS(struct rt_ev_loss, 48);
	SIZE_IS(struct rt_ev_watermark, 24);
	SIZE_IS(struct rt_ev_clock, 32);
	SIZE_IS(struct rt_ev_source_info, 64);
	SIZE_IS(struct rt_ev_target, 80);
	SIZE_IS(struct rt_ev_trace_end, 32);
	SIZE_IS(struct rt_trace_header, 176);
}

static void test_bounds(void **state)
{
	(void)state;
	/* the largest socket record must fit a record and a __u16 size */
	assert_true(sizeof(struct rt_ev_sock_io) + RT_SOCK_HEAD_MAX + RT_SOCK_TAIL_MAX <=
		    RT_EVENT_MAX);
	assert_true(RT_EVENT_MAX <= 65535);
	assert_true(RT_EV__MAX <= 64);
	assert_int_equal(RT_EVENT_SIZE_ALIGN(1), 8);
	assert_int_equal(RT_EVENT_SIZE_ALIGN(104), 104);
	assert_int_equal(RT_EVENT_SIZE_ALIGN(105), 112);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_body_sizes),
		cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
