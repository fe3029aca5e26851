// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU uprobes (bpf/gpu.bpf.c, rt_bpf_source__attach_gpu) on the fake
 * libcuda.so.1 and libnccl.so.2: a traced child runs a fixed script of
 * driver and NCCL calls, and the records must be exactly that script, in
 * order, each with its api, stream, bytes, direction, return value and (for
 * timed calls) a duration no shorter than the fake's configured work. The
 * NCCL calls, made through ncclX and through pncclX, appear once each.
 * The untraced parent's calls do not appear. Attaching is once per file
 * (a second path to the same inode adds nothing) and once per address.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <nccl.h>

#include "bpf_test_util.h"
#include "probes/gpu_probes.h"

#define MS 1000000ULL

static const char ptx[] = ".version 7.5\n.target sm_75\n.address_size 64\n"
			  ".visible .entry rt_spin(.param .u64 spin_ns)\n{\n\tret;\n}\n";

struct expect {
	const char *fn; /* probe table name; NULL: end */
	uint16_t kind;
	uint64_t bytes;
	uint8_t copy_kind;
	bool on_stream; /* stream is the script's stream (else 0) */
	uint64_t min_ns; /* timed calls: at least this long */
	int32_t ret;
};

/* What the child does, in order (NCCL's own launches included). */
static const struct expect script[] = {
	{ "cuMemcpyHtoDAsync_v2", RT_EV_CUDA_API_ENTER, 4096, RT_COPY_H2D, true, 0, 0 },
	{ "cuLaunchKernel", RT_EV_CUDA_API_ENTER, 0, 0, true, 0, 0 },
	{ "cuStreamSynchronize", RT_EV_CUDA_API_EXIT, 0, 0, true, 20 * MS, 0 },
	{ "cuMemcpyDtoH_v2", RT_EV_CUDA_API_EXIT, 8192, RT_COPY_D2H, false, 2 * MS, 0 },
	{ "cuMemcpy", RT_EV_CUDA_API_EXIT, 100, RT_COPY_UNKNOWN, false, 2 * MS, 0 },
	{ "cuMemsetD32Async", RT_EV_CUDA_API_ENTER, 1024, 0, true, 0, 0 },
	{ "cuLaunchKernelEx", RT_EV_CUDA_API_ENTER, 0, 0, true, 0, 0 },
	/* a stub of the fake: not supported, yet probed, descriptor read */
	{ "cuMemcpy2D_v2", RT_EV_CUDA_API_EXIT, 256, RT_COPY_H2D, false, 0,
	  CUDA_ERROR_NOT_SUPPORTED },
	{ "ncclAllReduce", RT_EV_NCCL_ENTER, 0, 0, true, 0, 0 },
	{ "cuLaunchKernelEx", RT_EV_CUDA_API_ENTER, 0, 0, true, 0, 0 },
	{ "ncclAllReduce", RT_EV_NCCL_ENTER, 0, 0, true, 0, 0 }, /* called as pncclAllReduce */
	{ "cuLaunchKernelEx", RT_EV_CUDA_API_ENTER, 0, 0, true, 0, 0 },
	{ "ncclGroupStart", RT_EV_NCCL_ENTER, 0, 0, false, 0, 0 },
	{ "ncclSend", RT_EV_NCCL_ENTER, 0, 0, true, 0, 0 },
	{ "ncclGroupEnd", RT_EV_NCCL_ENTER, 0, 0, false, 0, 0 },
	{ "cuLaunchKernelEx", RT_EV_CUDA_API_ENTER, 0, 0, true, 0, 0 },
	{ "cuStreamSynchronize", RT_EV_CUDA_API_EXIT, 0, 0, true, 15 * MS, 0 },
	{ "cuCtxSynchronize", RT_EV_CUDA_API_EXIT, 0, 0, false, 0, 0 },
	{ NULL, 0, 0, 0, false, 0, 0 },
};

struct result {
	pid_t tid;
	uint64_t stream;
	int err; /* the script's first failure, as a line number */
};

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if ((x) && !res.err)                                                               \
			res.err = __LINE__;                                                        \
	} while (0)

static int child(struct rt_test_child *ch, void *arg)
{
	static char host[1 << 16];
	struct result res = { .tid = gettid() };
	CUDA_MEMCPY2D desc = { 0 };
	CUlaunchConfig cfg = { 0 };
	__typeof__(cuMemcpy2D_v2) *copy2d;
	__typeof__(ncclAllReduce) *ar, *par;
	__typeof__(ncclGetUniqueId) *get_id;
	__typeof__(ncclCommInitRank) *init_rank;
	__typeof__(ncclGroupStart) *gstart, *gend;
	__typeof__(ncclSend) *send;
	ncclUniqueId id;
	ncclComm_t comm = NULL;
	uint64_t ns = 20 * MS, short_ns = MS;
	void *params[] = { &ns }, *params2[] = { &short_ns }, *cu, *nc;
	CUcontext ctx;
	CUmodule mod;
	CUfunction spin;
	CUdeviceptr d;
	CUstream s;
	CUdevice dev;

	(void)arg;
	setenv("RT_FAKE_CUDA_COPY_NS", "2000000", 1);
	setenv("RT_FAKE_NCCL_NS", "5000000", 1);
	cu = dlopen(RT_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);
	nc = dlopen(RT_FAKE_NCCL, RTLD_NOW);
	if (!cu || !nc)
		return 10;
	/* through dlsym, as an engine that loads them at run time does */
	*(void **)&copy2d = dlsym(cu, "cuMemcpy2D_v2");
	*(void **)&ar = dlsym(nc, "ncclAllReduce");
	*(void **)&par = dlsym(nc, "pncclAllReduce");
	*(void **)&get_id = dlsym(nc, "ncclGetUniqueId");
	*(void **)&init_rank = dlsym(nc, "ncclCommInitRank");
	*(void **)&gstart = dlsym(nc, "ncclGroupStart");
	*(void **)&gend = dlsym(nc, "ncclGroupEnd");
	*(void **)&send = dlsym(nc, "ncclSend");
	if (!copy2d || !ar || !par || ar != par || !get_id || !init_rank || !gstart || !gend ||
	    !send)
		return 11;

	CHECK(cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	      cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, ptx) ||
	      cuModuleGetFunction(&spin, mod, "rt_spin") || cuStreamCreate(&s, 0) ||
	      cuMemAlloc(&d, sizeof(host)));
	CHECK(get_id(&id) || init_rank(&comm, 1, id, 0));
	res.stream = (uintptr_t)s;
	if (res.err)
		goto out;

	CHECK(cuMemcpyHtoDAsync(d, host, 4096, s));
	CHECK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(host, d, 8192));
	CHECK(cuMemcpy(d, d + 4096, 100));
	CHECK(cuMemsetD32Async(d, 0, 256, s));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	CHECK(cuLaunchKernelEx(&cfg, spin, params2, NULL));
	desc.srcMemoryType = CU_MEMORYTYPE_HOST;
	desc.srcHost = host;
	desc.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	desc.dstDevice = d;
	desc.WidthInBytes = 64;
	desc.Height = 4;
	CHECK(copy2d(&desc) != CUDA_ERROR_NOT_SUPPORTED);
	CHECK(ar((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm, (cudaStream_t)s));
	CHECK(par((void *)d, (void *)d, 1024, ncclFloat32, ncclSum, comm, (cudaStream_t)s));
	CHECK(gstart());
	CHECK(send((void *)d, 512, ncclFloat32, 0, comm, (cudaStream_t)s));
	CHECK(gend());
	CHECK(cuStreamSynchronize(s));
	CHECK(cuCtxSynchronize());
out:
	return write(ch->child_out_fd, &res, sizeof(res)) == sizeof(res) ? 0 : 12;
}

static struct rt_bpf_source *src;

static bool ctx_sync_seen(const struct rt_collect *c, const void *arg)
{
	const pid_t *pid = arg;
	int api = rt_gpu_probe_find("cuCtxSynchronize");
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_cuda_api *e = (const void *)c->recs[i];

		if (c->recs[i]->kind == RT_EV_CUDA_API_EXIT && c->recs[i]->pid == (__u32)*pid &&
		    e->api == (__u32)api)
			return true;
	}
	return false;
}

static void check_record(const struct rt_event_hdr *h, const struct expect *x,
			 const struct result *res, pid_t pid)
{
	assert_int_equal(h->kind, x->kind);
	assert_int_equal(h->pid, pid);
	assert_int_equal(h->tid, res->tid);
	if (h->kind == RT_EV_NCCL_ENTER) {
		const struct rt_ev_nccl *n = (const void *)h;
		int op = rt_gpu_probes[rt_gpu_probe_find(x->fn)].api_class;

		assert_int_equal(n->op, op);
		assert_int_equal(n->stream, x->on_stream ? res->stream : 0);
		if (op == RT_NCCL_ALL_REDUCE) {
			assert_int_equal(n->count, 1024);
			assert_int_equal(n->datatype, 7);
			assert_true(n->comm != 0);
		}
		if (op == RT_NCCL_SEND) {
			assert_int_equal(n->count, 512);
			assert_int_equal(n->peer, 0);
		}
		return;
	}
	{
		const struct rt_ev_cuda_api *e = (const void *)h;
		const struct rt_gpu_probe *p = rt_gpu_probe_get(e->api);

		assert_non_null(p);
		if (strcmp(p->name, x->fn))
			fail_msg("record for %s where %s was called", p->name, x->fn);
		assert_int_equal(e->api_class, p->api_class);
		assert_int_equal(e->bytes, x->bytes);
		assert_int_equal(e->copy_kind, x->copy_kind);
		assert_int_equal(e->stream, x->on_stream ? res->stream : 0);
		assert_int_equal(e->corr_id, 0);
		assert_int_equal(e->ret, x->ret);
		assert_true(e->enter_ns <= h->ts_ns);
		if (h->kind == RT_EV_CUDA_API_EXIT)
			assert_true(h->ts_ns - e->enter_ns >= x->min_ns);
		else
			assert_int_equal(e->enter_ns, h->ts_ns);
	}
}

static void run_script(bool per_function)
{
	const struct rt_event_hdr *recs[64];
	struct rt_test_child ch;
	struct rt_collect c;
	struct result res;
	struct rt_bpf_stats st;
	size_t i, n = 0, k;
	uint64_t probes;
	CUresult (*sync)(CUstream);
	struct rt_bpf_source_opts o = { .source_id = 1, .gpu_per_function = per_function };
	void *cu;

	src = rt_test_source(&o);
	assert_int_equal(rt_test_child_start(&ch, child, NULL), 0);
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);
	assert_int_equal(rt_bpf_source__attach_gpu(src, RT_FAKE_CUDA), 0);
	assert_int_equal(rt_bpf_source__attach_gpu(src, RT_FAKE_NCCL), 0);
	assert_int_equal(rt_bpf_source__stats(src, &st), 0);
	probes = st.gpu_probes;
	assert_int_equal(st.n_gpu_libs, 2);
	assert_int_equal(st.gpu_attach_failed, 0);
	/* one uprobe per function, a uretprobe too for the timed ones: nothing twice */
	{
		uint64_t want = 0;

		for (i = 0; i < rt_gpu_n_probes; i++)
			want += rt_gpu_probes[i].rec == RT_GPU_REC_EXIT ? 2 : 1;
		assert_int_equal(probes, want);
	}
	/* each NCCL entry has its pncclX alias, at the same address: skipped */
	assert_int_equal(st.gpu_aliases, 13);
	/* the same file again, under another name: nothing new */
	{
		char other[4096];

		snprintf(other, sizeof(other), "%s", RT_FAKE_CUDA);
		*strrchr(other, '/') = '\0';
		strcat(other, "/libcuda.so");
		assert_int_equal(rt_bpf_source__attach_gpu(src, other), 0);
		assert_int_equal(rt_bpf_source__attach_gpu(src, RT_FAKE_CUDA), 0);
		assert_int_equal(rt_bpf_source__stats(src, &st), 0);
		assert_int_equal(st.gpu_probes, probes);
		assert_int_equal(st.n_gpu_libs, 2);
	}
	assert_int_equal(rt_bpf_source__attach_gpu(src, "/nonexistent/libcuda.so.1"), -ENOENT);

	/* the untraced parent calls a probed function: filtered in the kernel */
	cu = dlopen(RT_FAKE_CUDA, RTLD_NOW);
	assert_non_null(cu);
	sync = (CUresult(*)(CUstream))dlsym(cu, "cuStreamSynchronize");
	assert_int_equal(sync(NULL), CUDA_ERROR_NOT_INITIALIZED);

	rt_collect_init(&c, 1 << 20);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read(ch.out_fd, &res, sizeof(res)), sizeof(res));
	assert_int_equal(rt_test_child_wait(&ch), 0);
	if (res.err)
		fail_msg("the child's script failed at gpu_uprobes.c:%d", res.err);
	assert_true(rt_collect_until(src, &c, ctx_sync_seen, &ch.pid, 5000));

	for (i = 0; i < c.n && n < 64; i++) {
		unsigned int kind = c.recs[i]->kind;

		if (kind == RT_EV_CUDA_API_ENTER || kind == RT_EV_CUDA_API_EXIT ||
		    kind == RT_EV_NCCL_ENTER) {
			assert_int_equal(c.recs[i]->pid, ch.pid);
			recs[n++] = c.recs[i];
		}
	}
	/* records of one thread may reach the ring out of order only across CPUs: sort by time */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && recs[k - 1]->ts_ns > recs[k]->ts_ns; k--) {
			const struct rt_event_hdr *t = recs[k];

			recs[k] = recs[k - 1];
			recs[k - 1] = t;
		}
	for (i = 0; script[i].fn; i++)
		;
	assert_int_equal(n, i);
	/* timed records are stamped at return: order by entry to compare with the script */
	for (i = 1; i < n; i++)
		for (k = i; k > 0; k--) {
			const struct rt_ev_cuda_api *a = (const void *)recs[k - 1];
			const struct rt_ev_cuda_api *b = (const void *)recs[k];

			if (a->enter_ns <= b->enter_ns)
				break;
			recs[k] = &a->hdr;
			recs[k - 1] = &b->hdr;
		}
	for (i = 0; i < n; i++)
		check_record(recs[i], &script[i], &res, ch.pid);
	assert_int_equal(rt_collect_find(&c, RT_EV_LOSS, 0, recs, 0), 0);
	assert_int_equal(rt_bpf_source__stats(src, &st), 0);
	assert_int_equal(st.gpu_unmatched_ret, 0);
	assert_int_equal(st.gpu_bad_cookie, 0);
	assert_int_equal(st.events[RT_EV_NCCL_ENTER], 5);
	rt_collect_free(&c);
	rt_bpf_source__free(src);
	src = NULL;
}

/* Two links per library where the kernel has uprobe.multi (6.6+) */
static void test_multi(void **state)
{
	(void)state;
	run_script(false);
}

/* One perf-event uprobe per function: older kernels (slow to detach: ~70 ms each) */
static void test_per_function(void **state)
{
	(void)state;
	run_script(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multi),
		cmocka_unit_test(test_per_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
