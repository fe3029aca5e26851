// SPDX-License-Identifier: BSD-2-Clause
/*
 * The "cuda" backend: each engine step does on a GPU what an engine step
 * does, through the CUDA driver API, so that reqtrace's GPU probes see real
 * launches, copies and syncs: on an NVIDIA device, and in CI on the fake
 * driver of tests/fixtures/fake_cuda (LD_LIBRARY_PATH picks which
 * libcuda.so.1 dlopen finds). Nothing links the CUDA toolkit: the driver
 * and NCCL are opened at run time.
 *
 * A step, on the engine's own stream:
 *   1. cuMemcpyHtoDAsync_v2: the step's token ids (4 bytes a token);
 *   2. cuLaunchKernel: a spin kernel (PTX below, loaded with
 *      cuModuleLoadData) that runs for the step's cost_ns;
 *   3. cuStreamSynchronize: the CPU waits for the step's compute;
 *   4. with NCCL: ncclAllReduce on a one-rank communicator (inside
 *      ncclGroupStart/End when asked), then cuStreamSynchronize again: the
 *      wait for the collective;
 *   5. cuMemcpyDtoH_v2 (blocking): one sampled token id per request.
 *
 * Configuration (environment: the knobs are the testbed's stage costs):
 *   REQTRACE_TB_CUDA_DEVICE      device ordinal (0)
 *   REQTRACE_TB_CUDA_NCCL        0: no NCCL, 1: plain all-reduce, 2: grouped (0)
 *   REQTRACE_TB_CUDA_NCCL_COUNT  floats all-reduced per step (65536)
 *   REQTRACE_TB_CUDA_TRUTH       JSON Lines file: per step what was done and
 *                                the waits measured around each call
 */
#include "backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#define IN_MAX (4u << 20) /* bytes of token ids copied per step, at most */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

struct nccl_id {
	char internal[128];
};

#define NCCL_FLOAT32 7
#define NCCL_SUM 0

static const char spin_ptx[] = ".version 7.5\n"
			       ".target sm_75\n"
			       ".address_size 64\n"
			       ".visible .entry rt_spin(.param .u64 spin_ns)\n"
			       "{\n"
			       "\t.reg .pred %p;\n"
			       "\t.reg .u64 %t0, %t1, %n;\n"
			       "\tld.param.u64 %n, [spin_ns];\n"
			       "\tmov.u64 %t0, %globaltimer;\n"
			       "LOOP:\n"
			       "\tmov.u64 %t1, %globaltimer;\n"
			       "\tsub.u64 %t1, %t1, %t0;\n"
			       "\tsetp.lt.u64 %p, %t1, %n;\n"
			       "\t@%p bra LOOP;\n"
			       "\tret;\n"
			       "}\n";

struct cu_api {
	CUresult (*init)(unsigned int);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
	CUresult (*primary_release)(CUdevice);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*module_load)(CUmodule *, const void *);
	CUresult (*module_unload)(CUmodule);
	CUresult (*get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*stream_create)(CUstream *, unsigned int);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*stream_sync)(CUstream);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*host_alloc)(void **, size_t);
	CUresult (*host_free)(void *);
	CUresult (*h2d_async)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*d2h)(void *, CUdeviceptr, size_t);
	CUresult (*launch)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
			   unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
	CUresult (*error_string)(CUresult, const char **);
};

struct nccl_api {
	int (*get_unique_id)(struct nccl_id *);
	int (*comm_init_rank)(void **, int, struct nccl_id, int);
	int (*comm_destroy)(void *);
	int (*all_reduce)(const void *, void *, size_t, int, int, void *, CUstream);
	int (*group_start)(void);
	int (*group_end)(void);
	const char *(*error_string)(int);
};

struct cuda_ctx {
	void *cu_lib, *nccl_lib;
	struct cu_api cu;
	struct nccl_api nc;
	CUdevice dev;
	CUcontext ctx;
	bool retained;
	CUmodule mod;
	CUfunction spin;
	CUstream stream;
	CUdeviceptr d_in, d_out, d_comm;
	void *h_in, *h_out;
	size_t out_bytes;
	void *comm;
	int nccl_mode;
	size_t nccl_count;
	FILE *truth;
	bool current; /* the step thread made the context current */
	bool reported; /* one error message is enough */
};

/* Resolves `name` into *slot; returns false when missing. */
static bool sym(void *lib, const char *name, void *slot)
{
	void *p = dlsym(lib, name);

	memcpy(slot, &p, sizeof(p));
	return p != NULL;
}

static int load_cuda(struct cuda_ctx *x)
{
	struct cu_api *c = &x->cu;

	x->cu_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!x->cu_lib) {
		fprintf(stderr, "cuda backend: %s\n", dlerror());
		return -ENOENT;
	}
	/* the versioned names are what cuda.h maps the API to */
	if (!sym(x->cu_lib, "cuInit", &c->init) || !sym(x->cu_lib, "cuDeviceGet", &c->device_get) ||
	    !sym(x->cu_lib, "cuDevicePrimaryCtxRetain", &c->primary_retain) ||
	    !sym(x->cu_lib, "cuDevicePrimaryCtxRelease_v2", &c->primary_release) ||
	    !sym(x->cu_lib, "cuCtxSetCurrent", &c->ctx_set) ||
	    !sym(x->cu_lib, "cuModuleLoadData", &c->module_load) ||
	    !sym(x->cu_lib, "cuModuleUnload", &c->module_unload) ||
	    !sym(x->cu_lib, "cuModuleGetFunction", &c->get_function) ||
	    !sym(x->cu_lib, "cuStreamCreate", &c->stream_create) ||
	    !sym(x->cu_lib, "cuStreamDestroy_v2", &c->stream_destroy) ||
	    !sym(x->cu_lib, "cuStreamSynchronize", &c->stream_sync) ||
	    !sym(x->cu_lib, "cuMemAlloc_v2", &c->mem_alloc) ||
	    !sym(x->cu_lib, "cuMemFree_v2", &c->mem_free) ||
	    !sym(x->cu_lib, "cuMemAllocHost_v2", &c->host_alloc) ||
	    !sym(x->cu_lib, "cuMemFreeHost", &c->host_free) ||
	    !sym(x->cu_lib, "cuMemcpyHtoDAsync_v2", &c->h2d_async) ||
	    !sym(x->cu_lib, "cuMemcpyDtoH_v2", &c->d2h) ||
	    !sym(x->cu_lib, "cuLaunchKernel", &c->launch) ||
	    !sym(x->cu_lib, "cuGetErrorString", &c->error_string)) {
		fprintf(stderr, "cuda backend: libcuda.so.1 lacks a driver API function\n");
		return -ENOSYS;
	}
	return 0;
}

static int load_nccl(struct cuda_ctx *x)
{
	struct nccl_api *n = &x->nc;

	x->nccl_lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!x->nccl_lib) {
		fprintf(stderr, "cuda backend: %s\n", dlerror());
		return -ENOENT;
	}
	if (!sym(x->nccl_lib, "ncclGetUniqueId", &n->get_unique_id) ||
	    !sym(x->nccl_lib, "ncclCommInitRank", &n->comm_init_rank) ||
	    !sym(x->nccl_lib, "ncclCommDestroy", &n->comm_destroy) ||
	    !sym(x->nccl_lib, "ncclAllReduce", &n->all_reduce) ||
	    !sym(x->nccl_lib, "ncclGroupStart", &n->group_start) ||
	    !sym(x->nccl_lib, "ncclGroupEnd", &n->group_end) ||
	    !sym(x->nccl_lib, "ncclGetErrorString", &n->error_string)) {
		fprintf(stderr, "cuda backend: libnccl.so.2 lacks an NCCL function\n");
		return -ENOSYS;
	}
	return 0;
}

/* A failed driver call: say which, once, and turn it into an errno. */
static int cu_fail(struct cuda_ctx *x, const char *what, CUresult r)
{
	const char *s = NULL;

	if (!x->reported) {
		if (x->cu.error_string)
			x->cu.error_string(r, &s);
		fprintf(stderr, "cuda backend: %s: error %d (%s)\n", what, r, s ? s : "?");
		x->reported = true;
	}
	return -EIO;
}

static int nccl_fail(struct cuda_ctx *x, const char *what, int r)
{
	if (!x->reported) {
		fprintf(stderr, "cuda backend: %s: NCCL error %d (%s)\n", what, r,
			x->nc.error_string ? x->nc.error_string(r) : "?");
		x->reported = true;
	}
	return -EIO;
}

static long env_long(const char *name, long dflt, long min, long max)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return dflt;
	x = strtol(v, &end, 10);
	if (*end || x < min || x > max) {
		fprintf(stderr, "cuda backend: %s=%s: want %ld..%ld, using %ld\n", name, v, min,
			max, dflt);
		return dflt;
	}
	return x;
}

static void cuda_fini(void *ctx);

static int setup(struct cuda_ctx *x, const struct tb_knobs *k)
{
	struct nccl_id id;
	const char *truth = getenv("REQTRACE_TB_CUDA_TRUTH");
	CUresult r;
	int nr;

	if ((r = x->cu.init(0)))
		return cu_fail(x, "cuInit", r);
	if ((r = x->cu.device_get(&x->dev, (int)env_long("REQTRACE_TB_CUDA_DEVICE", 0, 0, 64))))
		return cu_fail(x, "cuDeviceGet", r);
	if ((r = x->cu.primary_retain(&x->ctx, x->dev)))
		return cu_fail(x, "cuDevicePrimaryCtxRetain", r);
	x->retained = true;
	if ((r = x->cu.ctx_set(x->ctx)))
		return cu_fail(x, "cuCtxSetCurrent", r);
	if ((r = x->cu.module_load(&x->mod, spin_ptx)))
		return cu_fail(x, "cuModuleLoadData", r);
	if ((r = x->cu.get_function(&x->spin, x->mod, "rt_spin")))
		return cu_fail(x, "cuModuleGetFunction", r);
	if ((r = x->cu.stream_create(&x->stream, 0)))
		return cu_fail(x, "cuStreamCreate", r);
	x->out_bytes = (size_t)(k->max_batch ? k->max_batch : 1) * 4;
	if ((r = x->cu.mem_alloc(&x->d_in, IN_MAX)) ||
	    (r = x->cu.mem_alloc(&x->d_out, x->out_bytes)))
		return cu_fail(x, "cuMemAlloc", r);
	/* pinned host memory: an async copy from pageable memory would not be async */
	if ((r = x->cu.host_alloc(&x->h_in, IN_MAX)) ||
	    (r = x->cu.host_alloc(&x->h_out, x->out_bytes)))
		return cu_fail(x, "cuMemAllocHost", r);

	x->nccl_mode = (int)env_long("REQTRACE_TB_CUDA_NCCL", 0, 0, 2);
	x->nccl_count = (size_t)env_long("REQTRACE_TB_CUDA_NCCL_COUNT", 65536, 1, 1L << 26);
	if (x->nccl_mode) {
		nr = load_nccl(x);
		if (nr)
			return nr;
		if ((r = x->cu.mem_alloc(&x->d_comm, x->nccl_count * 4)))
			return cu_fail(x, "cuMemAlloc", r);
		if ((nr = x->nc.get_unique_id(&id)))
			return nccl_fail(x, "ncclGetUniqueId", nr);
		if ((nr = x->nc.comm_init_rank(&x->comm, 1, id, 0)))
			return nccl_fail(x, "ncclCommInitRank", nr);
	}
	if (truth && *truth) {
		x->truth = fopen(truth, "we");
		if (!x->truth) {
			fprintf(stderr, "cuda backend: %s: %s\n", truth, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int cuda_init(void **ctx, const struct tb_knobs *k)
{
	struct cuda_ctx *x = calloc(1, sizeof(*x));
	int err;

	*ctx = NULL;
	if (!x)
		return -ENOMEM;
	err = load_cuda(x);
	if (!err)
		err = setup(x, k);
	if (err) {
		cuda_fini(x);
		return err;
	}
	*ctx = x;
	return 0;
}

/* A timed blocking call: adds its duration to *sum. */
#define TIMED(sum, call)                                                                           \
	({                                                                                         \
		uint64_t t0__ = tb_now_ns();                                                       \
		CUresult r__ = (call);                                                             \
		*(sum) += tb_now_ns() - t0__;                                                      \
		r__;                                                                               \
	})

static int collective(struct cuda_ctx *x, unsigned int *calls, uint64_t *sync, uint64_t *comm)
{
	void *buf = (void *)(uintptr_t)x->d_comm;
	uint64_t waited = 0;
	CUresult r;
	int nr;

	if (x->nccl_mode == 2 && (nr = x->nc.group_start()))
		return nccl_fail(x, "ncclGroupStart", nr);
	nr = x->nc.all_reduce(buf, buf, x->nccl_count, NCCL_FLOAT32, NCCL_SUM, x->comm, x->stream);
	if (nr)
		return nccl_fail(x, "ncclAllReduce", nr);
	if (x->nccl_mode == 2 && (nr = x->nc.group_end()))
		return nccl_fail(x, "ncclGroupEnd", nr);
	*calls += x->nccl_mode == 2 ? 3 : 1;
	r = TIMED(&waited, x->cu.stream_sync(x->stream));
	*sync += waited;
	*comm += waited;
	return r ? cu_fail(x, "cuStreamSynchronize", r) : 0;
}

static void write_truth(struct cuda_ctx *x, const struct tb_step *st, uint64_t begin,
			size_t in_bytes, unsigned int nccl_calls, uint64_t sync, uint64_t comm)
{
	fprintf(x->truth,
		"{\"step_id\":%" PRIu64 ",\"kind\":\"%s\",\"batch\":%u,\"tokens\":%" PRIu64
		",\"cost_ns\":%" PRIu64 ",\"tid\":%d,\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
		",\"launches\":1,\"h2d_bytes\":%zu,\"d2h_bytes\":%zu,\"nccl_calls\":%u,"
		"\"nccl_count\":%zu,\"sync_ns\":%" PRIu64 ",\"comm_ns\":%" PRIu64 "}\n",
		st->step_id, st->kind == TB_STEP_PREFILL ? "prefill" : "decode", st->batch,
		st->tokens, st->cost_ns, tb_gettid(), begin, tb_now_ns(), in_bytes,
		(size_t)st->batch * 4, nccl_calls, x->nccl_mode ? x->nccl_count : 0, sync, comm);
	fflush(x->truth);
}

static int cuda_step(void *ctx, const struct tb_step *st)
{
	struct cuda_ctx *x = ctx;
	uint64_t begin = tb_now_ns(), spin = st->cost_ns, sync = 0, comm = 0;
	size_t in_bytes = st->tokens * 4 < IN_MAX ? st->tokens * 4 : IN_MAX;
	size_t out_bytes =
		(size_t)st->batch * 4 < x->out_bytes ? (size_t)st->batch * 4 : x->out_bytes;
	void *params[] = { &spin };
	unsigned int nccl_calls = 0;
	CUresult r;
	int err;

	if (!x->current) {
		if ((r = x->cu.ctx_set(x->ctx)))
			return cu_fail(x, "cuCtxSetCurrent", r);
		x->current = true;
	}
	if (in_bytes && (r = x->cu.h2d_async(x->d_in, x->h_in, in_bytes, x->stream)))
		return cu_fail(x, "cuMemcpyHtoDAsync_v2", r);
	if ((r = x->cu.launch(x->spin, 1, 1, 1, 1, 1, 1, 0, x->stream, params, NULL)))
		return cu_fail(x, "cuLaunchKernel", r);
	if ((r = TIMED(&sync, x->cu.stream_sync(x->stream))))
		return cu_fail(x, "cuStreamSynchronize", r);
	if (x->nccl_mode && (err = collective(x, &nccl_calls, &sync, &comm)))
		return err;
	if ((r = TIMED(&sync, x->cu.d2h(x->h_out, x->d_out, out_bytes))))
		return cu_fail(x, "cuMemcpyDtoH_v2", r);
	if (x->truth)
		write_truth(x, st, begin, in_bytes, nccl_calls, sync, comm);
	return 0;
}

static void cuda_fini(void *ctx)
{
	struct cuda_ctx *x = ctx;

	if (!x)
		return;
	if (x->ctx)
		x->cu.ctx_set(x->ctx);
	if (x->comm)
		x->nc.comm_destroy(x->comm);
	if (x->stream)
		x->cu.stream_sync(x->stream);
	if (x->d_comm)
		x->cu.mem_free(x->d_comm);
	if (x->d_in)
		x->cu.mem_free(x->d_in);
	if (x->d_out)
		x->cu.mem_free(x->d_out);
	if (x->h_in)
		x->cu.host_free(x->h_in);
	if (x->h_out)
		x->cu.host_free(x->h_out);
	if (x->stream)
		x->cu.stream_destroy(x->stream);
	if (x->mod)
		x->cu.module_unload(x->mod);
	if (x->retained)
		x->cu.primary_release(x->dev);
	if (x->truth)
		fclose(x->truth);
	/* the libraries stay loaded: drivers do not expect to be unloaded */
	free(x);
}

const struct tb_backend_ops tb_backend_cuda = {
	.name = "cuda",
	.init = cuda_init,
	.step = cuda_step,
	.fini = cuda_fini,
};
