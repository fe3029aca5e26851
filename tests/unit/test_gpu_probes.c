// SPDX-License-Identifier: BSD-2-Clause
/*
 * The GPU probe table (src/probes/gpu_probes.c) against reality:
 *
 *   - every entry is well formed (classes, argument positions, timed only
 *     where a duration matters);
 *   - every probed name is exported by libcuda / libnccl, as saved in
 *     configs/probes/lib*.exports files (`nm -D --defined-only`), NCCL names with
 *     their pncclX alias at the same address;
 *   - every export of a probed family is probed (a new _v3 or _ptsz variant
 *     in a new toolkit fails here until the table has it);
 *   - the saved exports are those of the installed toolkit (stub libcuda.so
 *     and libnccl.so.2, read with the ELF reader the loader uses), and every
 *     family of the table exists in the stub: the check;
 *   - configs/probes/gpu.tsv is the table (RT_REGEN=1 rewrites it);
 *   - the structure offsets the BPF side reads match cuda.h.
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

#include <cmocka.h>

#include "sources/gpu_elf.h"
#include "probes/gpu_probes.h"

#ifdef RT_HAVE_CUDA_H
#include <cuda.h>
#endif

#define NAME_MAX_ 128

struct exp {
	char name[NAME_MAX_];
	uint64_t addr;
	char type;
};

struct exports {
	struct exp *v;
	size_t n, cap;
};

static void add(struct exports *e, const char *name, uint64_t addr, char type)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 256;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		assert_non_null(e->v);
	}
	snprintf(e->v[e->n].name, NAME_MAX_, "%s", name);
	e->v[e->n].addr = addr;
	e->v[e->n].type = type;
	e->n++;
}

static void load_saved(const char *file, struct exports *e)
{
	char path[1024], line[512], name[NAME_MAX_], type;
	unsigned long long addr;
	FILE *f;

	snprintf(path, sizeof(path), "%s/configs/probes/%s", RT_SOURCE_DIR, file);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3)
			add(e, name, addr, type);
	fclose(f);
	assert_true(e->n > 0);
}

static int on_sym(const struct rt_elf_sym *s, void *ctx)
{
	add(ctx, s->name, s->addr, s->weak ? 'W' : 'T');
	return 0;
}

static const struct exp *find(const struct exports *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		if (!strcmp(e->v[i].name, name))
			return &e->v[i];
	return NULL;
}

/* Is `fam` the family of some table entry? */
static bool probed_family(const char *fam)
{
	char f[NAME_MAX_];
	uint32_t i;

	for (i = 0; i < rt_gpu_n_probes; i++)
		if (!strcmp(rt_gpu_probe_family(rt_gpu_probes[i].name, f, sizeof(f)), fam))
			return true;
	return false;
}

static void test_table_sane(void **state)
{
	uint32_t i, j;

	(void)state;
	assert_true(rt_gpu_n_probes > 100 && rt_gpu_n_probes <= RT_GPU_API_MAX);
	for (i = 0; i < rt_gpu_n_probes; i++) {
		const struct rt_gpu_probe *p = &rt_gpu_probes[i];
		bool nccl = p->lib == RT_GPU_LIB_NCCL;

		assert_non_null(p->name);
		assert_true(p->lib == RT_GPU_LIB_CUDA || nccl);
		assert_int_equal(p->rec == RT_GPU_REC_NCCL, nccl);
		assert_true(p->stream_arg <= 12 && p->bytes_arg <= 12 && p->bytes_arg2 <= 12);
		assert_true(p->count_arg <= 12 && p->dtype_arg <= 12 && p->comm_arg <= 12 &&
			    p->peer_arg <= 12);
		assert_int_equal(p->stream_how == RT_GPU_STREAM_NONE, p->stream_arg == 0);
		assert_int_equal(p->bytes_how == RT_GPU_BYTES_NONE, p->bytes_arg == 0);
		assert_true(p->copy_kind <= RT_COPY_H2H);
		if (nccl) {
			assert_true(p->api_class <= RT_NCCL_GROUP_END);
			assert_true(!strncmp(p->name, "nccl", 4));
		} else {
			assert_true(!strncmp(p->name, "cu", 2));
			assert_true(p->api_class <= RT_CUDA_WAIT_EVENT);
			/* timed exactly where the CPU may block on the device */
			assert_int_equal(p->rec == RT_GPU_REC_EXIT,
					 p->api_class == RT_CUDA_SYNC ||
						 p->api_class == RT_CUDA_MEMCPY ||
						 p->api_class == RT_CUDA_WAIT_EVENT);
			/* a copy direction only on copies */
			if (p->api_class != RT_CUDA_MEMCPY && p->api_class != RT_CUDA_MEMCPY_ASYNC)
				assert_int_equal(p->copy_kind, RT_COPY_UNKNOWN);
		}
		for (j = 0; j < i; j++)
			assert_string_not_equal(p->name, rt_gpu_probes[j].name);
	}
	/* the unified copies carry no direction (design: report it unknown) */
	assert_int_equal(rt_gpu_probes[rt_gpu_probe_find("cuMemcpy")].copy_kind, RT_COPY_UNKNOWN);
	assert_int_equal(rt_gpu_probes[rt_gpu_probe_find("cuMemcpyAsync")].copy_kind,
			 RT_COPY_UNKNOWN);
	assert_int_equal(rt_gpu_probes[rt_gpu_probe_find("cuMemcpyHtoDAsync_v2")].copy_kind,
			 RT_COPY_H2D);
	assert_int_equal(rt_gpu_probes[rt_gpu_probe_find("cuMemcpyDtoH_v2")].rec, RT_GPU_REC_EXIT);
	assert_int_equal(rt_gpu_probes[rt_gpu_probe_find("cuLaunchKernel")].stream_arg, 9);
}

static void test_names(void **state)
{
	char f[NAME_MAX_];

	(void)state;
	assert_string_equal(rt_gpu_probe_family("cuMemcpyHtoD_v2_ptds", f, sizeof(f)),
			    "cuMemcpyHtoD");
	assert_string_equal(rt_gpu_probe_family("cuMemcpyHtoDAsync_v2_ptsz", f, sizeof(f)),
			    "cuMemcpyHtoDAsync");
	assert_string_equal(rt_gpu_probe_family("cuCtxSynchronize_v2", f, sizeof(f)),
			    "cuCtxSynchronize");
	assert_string_equal(rt_gpu_probe_family("cuLaunchKernel", f, sizeof(f)), "cuLaunchKernel");
	assert_string_equal(rt_gpu_probe_family("pncclAllReduce", f, sizeof(f)), "ncclAllReduce");
	assert_string_equal(rt_gpu_probe_family("cuMemcpy", f, 4), "cuM");
	assert_int_equal(rt_gpu_probe_find("pncclAllReduce"), rt_gpu_probe_find("ncclAllReduce"));
	assert_true(rt_gpu_probe_find("ncclAllReduce") >= 0);
	assert_int_equal(rt_gpu_probe_find("cuLaunchHostFunc"), -ENOENT);
	assert_int_equal(rt_gpu_probe_find(NULL), -ENOENT);
	assert_null(rt_gpu_probe_get(rt_gpu_n_probes));
	assert_null(rt_gpu_probe_get(UINT32_MAX));
	assert_string_equal(rt_gpu_class_name(RT_CUDA_SYNC), "sync");
	assert_string_equal(rt_gpu_class_name(200), "?");
	assert_string_equal(rt_gpu_copy_kind_name(RT_COPY_D2H), "d2h");
	assert_string_equal(rt_gpu_nccl_op_name(RT_NCCL_GROUP_END), "group_end");
}

/* The table against a library's exports: both directions. */
static void check_against(const struct exports *cu, const struct exports *nc)
{
	char f[NAME_MAX_], p[NAME_MAX_ + 1];
	uint32_t i;
	size_t k;

	for (i = 0; i < rt_gpu_n_probes; i++) {
		const struct rt_gpu_probe *e = &rt_gpu_probes[i];
		const struct exp *a, *b;

		if (e->lib == RT_GPU_LIB_CUDA) {
			if (!find(cu, e->name))
				fail_msg("probed %s is not exported by libcuda", e->name);
			continue;
		}
		snprintf(p, sizeof(p), "p%s", e->name);
		a = find(nc, e->name);
		b = find(nc, p);
		if (!a || !b)
			fail_msg("probed %s / %s is not exported by libnccl", e->name, p);
		/* one function at one address: a uprobe on each would count it twice */
		assert_int_equal(a->addr, b->addr);
		assert_int_equal(a->type, 'W');
	}
	/* completeness: a probed family's every variant is probed */
	for (k = 0; k < cu->n; k++)
		if (probed_family(rt_gpu_probe_family(cu->v[k].name, f, sizeof(f))) &&
		    rt_gpu_probe_find(cu->v[k].name) < 0)
			fail_msg("libcuda exports %s of a probed family, not in the table",
				 cu->v[k].name);
	for (k = 0; k < nc->n; k++)
		if (probed_family(rt_gpu_probe_family(nc->v[k].name, f, sizeof(f))) &&
		    rt_gpu_probe_find(nc->v[k].name) < 0)
			fail_msg("libnccl exports %s of a probed family, not in the table",
				 nc->v[k].name);
}

static void test_table_vs_saved_exports(void **state)
{
	struct exports cu = { 0 }, nc = { 0 };

	(void)state;
	load_saved("libcuda.so.exports", &cu);
	load_saved("libnccl.so.2.exports", &nc);
	check_against(&cu, &nc);
	free(cu.v);
	free(nc.v);
}

/* The saved list is what the installed library exports, name for name. */
static void same_names(const struct exports *saved, const struct exports *real, const char *what)
{
	size_t k;

	for (k = 0; k < real->n; k++)
		if (!find(saved, real->v[k].name))
			fail_msg("%s exports %s, missing from configs/probes (update it)", what,
				 real->v[k].name);
	for (k = 0; k < saved->n; k++)
		if (!find(real, saved->v[k].name))
			fail_msg("configs/probes lists %s, which %s no longer exports",
				 saved->v[k].name, what);
}

static void test_installed_toolkit(void **state)
{
	struct exports saved = { 0 }, real = { 0 };
	char f[NAME_MAX_];
	uint32_t i;
	size_t k;
	bool found;

	(void)state;
	if (RT_CUDA_STUB[0]) {
		load_saved("libcuda.so.exports", &saved);
		assert_int_equal(rt_elf_dynsyms(RT_CUDA_STUB, on_sym, &real), 0);
		same_names(&saved, &real, RT_CUDA_STUB);
		/* every symbol family in the probe list exists in the stub */
		for (i = 0; i < rt_gpu_n_probes; i++) {
			if (rt_gpu_probes[i].lib != RT_GPU_LIB_CUDA)
				continue;
			rt_gpu_probe_family(rt_gpu_probes[i].name, f, sizeof(f));
			for (k = 0, found = false; k < real.n && !found; k++) {
				char g[NAME_MAX_];

				found = !strcmp(rt_gpu_probe_family(real.v[k].name, g, sizeof(g)),
						f);
			}
			if (!found)
				fail_msg("family %s is not in %s", f, RT_CUDA_STUB);
		}
		free(saved.v);
		free(real.v);
		saved = (struct exports){ 0 };
		real = (struct exports){ 0 };
	}
	if (RT_NCCL_LIB[0]) {
		load_saved("libnccl.so.2.exports", &saved);
		assert_int_equal(rt_elf_dynsyms(RT_NCCL_LIB, on_sym, &real), 0);
		same_names(&saved, &real, RT_NCCL_LIB);
		for (k = 0; k < real.n; k++) {
			const struct exp *s = find(&saved, real.v[k].name);

			assert_int_equal(s->addr, real.v[k].addr);
			assert_int_equal(s->type, real.v[k].type);
		}
		free(saved.v);
		free(real.v);
	}
	if (!RT_CUDA_STUB[0] && !RT_NCCL_LIB[0]) {
		/* no toolkit here: the saved lists stand for it */
		load_saved("libcuda.so.exports", &saved);
		assert_non_null(find(&saved, "cuLaunchKernel"));
		free(saved.v);
	}
}

static void test_elf_reader(void **state)
{
	char path[1024];
	struct exports e = { 0 };
	Dl_info libc;

	(void)state;
	snprintf(path, sizeof(path), "%s/configs/probes/gpu.tsv", RT_SOURCE_DIR);
	assert_int_equal(rt_elf_dynsyms(path, on_sym, &e), -ENOEXEC);
	assert_int_equal(rt_elf_dynsyms("/nonexistent/libcuda.so.1", on_sym, &e), -ENOENT);
	assert_int_equal(rt_elf_dynsyms(NULL, on_sym, &e), -EINVAL);
	assert_int_equal(e.n, 0);
	/* libc: a real shared library; its exports have file offsets a uprobe can use */
	assert_true(dladdr((void *)malloc, &libc) && libc.dli_fname);
	assert_int_equal(rt_elf_dynsyms(libc.dli_fname, on_sym, &e), 0);
	assert_non_null(find(&e, "malloc"));
	assert_true(find(&e, "malloc")->addr != 0);
	free(e.v);
}

static void test_tsv_current(void **state)
{
	char path[1024], *want = NULL, *got = NULL;
	size_t got_len = 0;
	long len;
	FILE *f, *m;

	(void)state;
	snprintf(path, sizeof(path), "%s/configs/probes/gpu.tsv", RT_SOURCE_DIR);
	m = open_memstream(&got, &got_len);
	assert_non_null(m);
	assert_int_equal(rt_gpu_probes_write_tsv(m), 0);
	fclose(m);
	if (getenv("RT_REGEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(got, 1, got_len, f), got_len);
		fclose(f);
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s missing: run with RT_REGEN=1", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	want = calloc(1, (size_t)len + 1);
	assert_non_null(want);
	assert_int_equal(fread(want, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	if (strcmp(want, got))
		fail_msg("%s differs from the table: run test_gpu_probes with RT_REGEN=1", path);
	free(want);
	free(got);
}

#ifdef RT_HAVE_CUDA_H
static void test_struct_offsets(void **state)
{
	(void)state;
	assert_int_equal(offsetof(CUlaunchConfig, hStream), RT_CU_LAUNCH_CONFIG_STREAM);
	assert_int_equal(offsetof(CUDA_MEMCPY2D, srcMemoryType), RT_CU_MEMCPY2D_SRC_TYPE);
	assert_int_equal(offsetof(CUDA_MEMCPY2D, dstMemoryType), RT_CU_MEMCPY2D_DST_TYPE);
	assert_int_equal(offsetof(CUDA_MEMCPY2D, WidthInBytes), RT_CU_MEMCPY2D_WIDTH);
	assert_int_equal(offsetof(CUDA_MEMCPY2D, Height), RT_CU_MEMCPY2D_HEIGHT);
	assert_int_equal(offsetof(CUDA_MEMCPY3D, srcMemoryType), RT_CU_MEMCPY3D_SRC_TYPE);
	assert_int_equal(offsetof(CUDA_MEMCPY3D, dstMemoryType), RT_CU_MEMCPY3D_DST_TYPE);
	assert_int_equal(offsetof(CUDA_MEMCPY3D, WidthInBytes), RT_CU_MEMCPY3D_WIDTH);
	assert_int_equal(offsetof(CUDA_MEMCPY3D, Height), RT_CU_MEMCPY3D_HEIGHT);
	assert_int_equal(offsetof(CUDA_MEMCPY3D, Depth), RT_CU_MEMCPY3D_DEPTH);
	/* the peer descriptor has the same layout where the probe reads it */
	assert_int_equal(offsetof(CUDA_MEMCPY3D_PEER, srcMemoryType), RT_CU_MEMCPY3D_SRC_TYPE);
	assert_int_equal(offsetof(CUDA_MEMCPY3D_PEER, WidthInBytes), RT_CU_MEMCPY3D_WIDTH);
	assert_int_equal(offsetof(CUDA_MEMCPY3D_PEER, Depth), RT_CU_MEMCPY3D_DEPTH);
	assert_int_equal(CU_MEMORYTYPE_HOST, RT_CU_MEMORYTYPE_HOST);
	assert_int_equal(CU_MEMORYTYPE_UNIFIED, RT_CU_MEMORYTYPE_UNIFIED);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_sane),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_table_vs_saved_exports),
		cmocka_unit_test(test_installed_toolkit),
		cmocka_unit_test(test_elf_reader),
		cmocka_unit_test(test_tsv_current),
#ifdef RT_HAVE_CUDA_H
		cmocka_unit_test(test_struct_offsets),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
