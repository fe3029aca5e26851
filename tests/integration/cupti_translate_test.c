// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI activity records (CUDA 13 layouts) -> event.h records, one kind at
 * a time, and the driver call table. src/cupti/translate.c and cbid.c are
 * built into this test; no libcupti is involved.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <cupti.h>

#include "common/event_check.h"
#include "cbid.h"
#include "translate.h"

#define MAXOUT 16

static union {
	struct rt_event_hdr hdr;
	struct rt_ev_gpu_kernel k;
	struct rt_ev_gpu_memcpy c;
	struct rt_ev_gpu_memset m;
	struct rt_ev_gpu_sync s;
	struct rt_ev_gpu_ext_corr x;
	struct rt_ev_cuda_api a;
} out[MAXOUT];
static int nout;
static struct rt_cupti_calltrack calls;

static int emit(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ctx;
	assert_true(nout < MAXOUT);
	/* everything the library sends must pass the daemon's generic check */
	assert_int_equal(rt_event_check(ev, ev->size, NULL), 0);
	memcpy(&out[nout++], ev, ev->size);
	return 0;
}

static struct rt_cupti_xlate x;

static int setup(void **state)
{
	(void)state;
	memset(&x, 0, sizeof(x));
	memset(&calls, 0, sizeof(calls));
	x.source = 7;
	x.pid = 4242;
	x.calls = &calls;
	x.emit = emit;
	x.now_ns = 5555;
	nout = 0;
	rt_cupti_xlate_begin(&x);
	return 0;
}

static void test_kernel(void **state)
{
	CUpti_ActivityKernel10 k;
	char longname[200];

	(void)state;
	memset(longname, 'k', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 3000;
	k.deviceId = 1;
	k.contextId = 2;
	k.streamId = 3;
	k.gridX = 4;
	k.gridY = 5;
	k.gridZ = 6;
	k.blockX = 128;
	k.blockY = 1;
	k.blockZ = 1;
	k.correlationId = 99;
	k.name = longname;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), 0);
	assert_int_equal(nout, 1);
	assert_int_equal(out[0].hdr.kind, RT_EV_GPU_KERNEL);
	assert_int_equal(out[0].hdr.size, sizeof(struct rt_ev_gpu_kernel));
	assert_int_equal(out[0].hdr.source, 7);
	assert_int_equal(out[0].hdr.pid, 4242);
	assert_int_equal(out[0].hdr.tid, 0);
	assert_int_equal(out[0].hdr.ts_ns, 1000);
	assert_int_equal(out[0].k.end_ns, 3000);
	assert_int_equal(out[0].k.corr_id, 99);
	assert_int_equal(out[0].k.device, 1);
	assert_int_equal(out[0].k.context, 2);
	assert_int_equal(out[0].k.stream, 3);
	assert_int_equal(out[0].k.grid[2], 6);
	assert_int_equal(out[0].k.block[0], 128);
	/* truncated and terminated; the hash covers the full name */
	assert_int_equal(strlen(out[0].k.name), RT_KERNEL_NAME_LEN - 1);
	assert_memory_equal(out[0].k.name, longname, RT_KERNEL_NAME_LEN - 1);
	assert_int_equal(out[0].k.name_hash, rt_cupti_fnv1a(longname, SIZE_MAX));
	assert_int_not_equal(out[0].k.name_hash, rt_cupti_fnv1a(out[0].k.name, SIZE_MAX));
	/* no name at all */
	k.name = NULL;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), 0);
	assert_int_equal(out[1].k.name[0], '\0');
	assert_int_equal(out[1].k.name_hash, 0xcbf29ce484222325ULL);
	assert_int_equal(x.records, 2);
}

static void test_fnv(void **state)
{
	(void)state;
	/* FNV-1a 64 reference values */
	assert_int_equal(rt_cupti_fnv1a("", 100), 0xcbf29ce484222325ULL);
	assert_int_equal(rt_cupti_fnv1a("a", 100), 0xaf63dc4c8601ec8cULL);
	assert_int_equal(rt_cupti_fnv1a("foobar", 100), 0x85944171f73967e8ULL);
	assert_int_equal(rt_cupti_fnv1a("foobar", 1), rt_cupti_fnv1a("f", 100));
}

static void test_untimed_and_backwards(void **state)
{
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemset4 m;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; /* start = end = 0: untimed */
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), -EINVAL);
	k.start = 10;
	k.end = 5;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), -EINVAL);
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.start = 9;
	m.end = 8;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&m), -EINVAL);
	assert_int_equal(x.invalid, 3);
	assert_int_equal(nout, 0);
}

static void test_memcpy_kinds(void **state)
{
	static const struct {
		__u8 cupti, rt;
	} map[] = {
		{ CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, RT_COPY_UNKNOWN },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, RT_COPY_H2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, RT_COPY_D2H },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, RT_COPY_H2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, RT_COPY_D2H },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, RT_COPY_D2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, RT_COPY_D2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, RT_COPY_D2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, RT_COPY_D2D },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, RT_COPY_H2H },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, RT_COPY_P2P },
		{ 200, RT_COPY_UNKNOWN },
	};
	CUpti_ActivityMemcpy6 c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		c.copyKind = map[i].cupti;
		c.bytes = 1 << 20;
		c.start = 100;
		c.end = 200;
		c.deviceId = 3;
		c.streamId = 14;
		c.correlationId = 5;
		nout = 0;
		assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&c), 0);
		assert_int_equal(out[0].hdr.kind, RT_EV_GPU_MEMCPY);
		assert_int_equal(out[0].c.copy_kind, map[i].rt);
		assert_int_equal(out[0].c.bytes, 1 << 20);
		assert_int_equal(out[0].c.device, 3);
		assert_int_equal(out[0].c.src_device, 3);
		assert_int_equal(out[0].c.dst_device, 3);
		assert_int_equal(out[0].c.stream, 14);
		assert_int_equal(out[0].c.corr_id, 5);
		assert_int_equal(out[0].c.end_ns, 200);
	}
}

static void test_memcpy2_p2p(void **state)
{
	CUpti_ActivityMemcpyPtoP4 c;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
	c.bytes = 4096;
	c.start = 10;
	c.end = 20;
	c.deviceId = 0;
	c.srcDeviceId = 0;
	c.dstDeviceId = 1;
	c.correlationId = 77;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&c), 0);
	assert_int_equal(out[0].c.copy_kind, RT_COPY_P2P);
	assert_int_equal(out[0].c.src_device, 0);
	assert_int_equal(out[0].c.dst_device, 1);
	c.dstDeviceId = 0; /* same device: what CUPTI says */
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&c), 0);
	assert_int_equal(out[1].c.copy_kind, RT_COPY_D2D);
	c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&c), 0);
	assert_int_equal(out[2].c.copy_kind, RT_COPY_P2P);
}

static void test_memset(void **state)
{
	CUpti_ActivityMemset4 m;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.bytes = 512;
	m.start = 30;
	m.end = 31;
	m.deviceId = 2;
	m.streamId = 9;
	m.correlationId = 12;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&m), 0);
	assert_int_equal(out[0].hdr.kind, RT_EV_GPU_MEMSET);
	assert_int_equal(out[0].m.bytes, 512);
	assert_int_equal(out[0].m.device, 2);
	assert_int_equal(out[0].m.stream, 9);
	assert_int_equal(out[0].m.corr_id, 12);
	assert_int_equal(out[0].m.end_ns, 31);
}

static void test_sync_tid(void **state)
{
	CUpti_ActivitySynchronization2 s;

	(void)state;
	rt_cupti_calltrack_note_tid(&calls, 300, 31337);
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = 50;
	s.end = 5050;
	s.correlationId = 300;
	s.contextId = 1;
	s.streamId = 7;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&s), 0);
	assert_int_equal(out[0].hdr.kind, RT_EV_GPU_SYNC);
	assert_int_equal(out[0].hdr.tid, 31337); /* SYNCHRONIZATION records carry none */
	assert_int_equal(out[0].s.sync_type, RT_SYNC_STREAM);
	assert_int_equal(out[0].s.stream, 7);
	assert_int_equal(out[0].s.context, 1);
	assert_int_equal(out[0].s.end_ns, 5050);
	s.correlationId = 301; /* unknown call: tid 0, joinable by corr_id */
	s.type = (CUpti_ActivitySynchronizationType)99;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&s), 0);
	assert_int_equal(out[1].hdr.tid, 0);
	assert_int_equal(out[1].s.sync_type, RT_SYNC_UNKNOWN);
}

static void api(CUpti_ActivityAPI *a, CUpti_CallbackId cbid, __u32 corr)
{
	memset(a, 0, sizeof(*a));
	a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a->cbid = cbid;
	a->start = 700;
	a->end = 900;
	a->processId = 4242;
	a->threadId = 4243;
	a->correlationId = corr;
	a->returnValue = 0;
}

static void test_driver_api(void **state)
{
	static const struct {
		CUpti_CallbackId cbid;
		__u8 cls, dir;
	} calls_[] = {
		{ CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, RT_CUDA_LAUNCH, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, RT_CUDA_LAUNCH, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, RT_CUDA_GRAPH_LAUNCH,
		  RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, RT_CUDA_MEMCPY, RT_COPY_H2D },
		{ CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, RT_CUDA_MEMCPY_ASYNC,
		  RT_COPY_D2H },
		{ CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, RT_CUDA_MEMCPY_ASYNC, RT_COPY_P2P },
		{ CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, RT_CUDA_MEMCPY_ASYNC,
		  RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, RT_CUDA_MEMSET, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2, RT_CUDA_SYNC, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz, RT_CUDA_SYNC, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, RT_CUDA_SYNC, RT_COPY_UNKNOWN },
		{ CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz, RT_CUDA_WAIT_EVENT,
		  RT_COPY_UNKNOWN },
	};
	CUpti_ActivityAPI a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(calls_) / sizeof(calls_[0]); i++) {
		api(&a, calls_[i].cbid, 10 + i);
		nout = 0;
		assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&a), 0);
		assert_int_equal(out[0].hdr.kind, RT_EV_CUDA_API_EXIT);
		assert_int_equal(out[0].hdr.ts_ns, 900); /* return */
		assert_int_equal(out[0].a.enter_ns, 700);
		assert_int_equal(out[0].hdr.tid, 4243);
		assert_int_equal(out[0].hdr.pid, 4242);
		assert_int_equal(out[0].a.corr_id, 10 + i);
		assert_int_equal(out[0].a.api, calls_[i].cbid);
		assert_int_equal(out[0].a.api_class, calls_[i].cls);
		assert_int_equal(out[0].a.copy_kind, calls_[i].dir);
	}
	/* calls outside the table are filtered, not sent */
	api(&a, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 1);
	nout = 0;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&a), -ENOENT);
	api(&a, 100000, 1);
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&a), -ENOENT);
	assert_int_equal(nout, 0);
	assert_int_equal(x.filtered, 2);
}

static void test_ext_corr(void **state)
{
	CUpti_ActivityExternalCorrelation e;
	CUpti_ActivityAPI a;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	e.externalId = 0xfeedULL;
	e.correlationId = 42;
	/* CUPTI writes it right before the API record it belongs to */
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&e), 0);
	assert_int_equal(nout, 0);
	api(&a, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 42);
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&a), 0);
	assert_int_equal(nout, 2);
	assert_int_equal(out[0].hdr.kind, RT_EV_GPU_EXT_CORR);
	assert_int_equal(out[0].hdr.ts_ns, 700); /* the call's entry */
	assert_int_equal(out[0].x.corr_id, 42);
	assert_int_equal(out[0].x.external_id, 0xfeed);
	assert_int_equal(out[0].x.external_kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
	assert_int_equal(out[1].hdr.kind, RT_EV_CUDA_API_EXIT);
	/* one with no API record after it goes out at the end of the buffer */
	e.correlationId = 43;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&e), 0);
	assert_int_equal(nout, 2);
	rt_cupti_xlate_end(&x);
	assert_int_equal(nout, 3);
	assert_int_equal(out[2].x.corr_id, 43);
	assert_int_equal(out[2].hdr.ts_ns, 900); /* newest time seen in the buffer */
	/* alone in a buffer: now_ns */
	rt_cupti_xlate_begin(&x);
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&e), 0);
	rt_cupti_xlate_end(&x);
	assert_int_equal(out[3].hdr.ts_ns, 5555);
}

static void test_unknown_kind(void **state)
{
	CUpti_ActivityKernel10 k;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_MARKER;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), -ENOTSUP);
	k.kind = (CUpti_ActivityKind)0x7000;
	assert_int_equal(rt_cupti_xlate_record(&x, (CUpti_Activity *)&k), -ENOTSUP);
	assert_int_equal(x.unknown, 2);
	assert_int_equal(nout, 0);
}

static void test_cbid_table(void **state)
{
	__u32 cbid, n = 0, blocking = 0, cb = 0;
	__u8 cls, dir;

	(void)state;
	for (cbid = 0; cbid < rt_cupti_cbid_limit() + 10; cbid++) {
		if (!rt_cupti_cbid_info(cbid, &cls, &dir))
			continue;
		assert_true(cbid < rt_cupti_cbid_limit());
		assert_true(cls <= RT_CUDA_WAIT_EVENT);
		assert_true(dir <= RT_COPY_H2H);
		n++;
		blocking += rt_cupti_cbid_blocking(cbid);
		cb += rt_cupti_cbid_callback(cbid);
	}
	assert_int_equal(n, 124);
	assert_int_equal(blocking, 45); /* 40 synchronous copies, 5 syncs */
	assert_int_equal(cb, 47); /* and the 2 stream waits */
	assert_true(rt_cupti_cbid_blocking(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize));
	assert_true(rt_cupti_cbid_blocking(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds));
	assert_false(rt_cupti_cbid_blocking(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2));
	assert_false(rt_cupti_cbid_blocking(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	assert_false(rt_cupti_cbid_blocking(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent));
	assert_true(rt_cupti_cbid_callback(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent));
	assert_false(rt_cupti_cbid_info(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &cls, &dir));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_kernel, setup),
		cmocka_unit_test_setup(test_fnv, setup),
		cmocka_unit_test_setup(test_untimed_and_backwards, setup),
		cmocka_unit_test_setup(test_memcpy_kinds, setup),
		cmocka_unit_test_setup(test_memcpy2_p2p, setup),
		cmocka_unit_test_setup(test_memset, setup),
		cmocka_unit_test_setup(test_sync_tid, setup),
		cmocka_unit_test_setup(test_driver_api, setup),
		cmocka_unit_test_setup(test_ext_corr, setup),
		cmocka_unit_test_setup(test_unknown_kind, setup),
		cmocka_unit_test_setup(test_cbid_table, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
