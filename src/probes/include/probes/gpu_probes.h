/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU probe table: every libcuda and libnccl function reqtrace puts a
 * uprobe on, what it does for the correlator (class, copy direction), and
 * which of its arguments carry the stream, the byte count and the NCCL
 * parameters. An entry's index is the `api` field of the records its probe
 * emits (struct rt_ev_cuda_api), so entries are only ever appended.
 *
 * Names come from the real exports (`nm -D` of the CUDA toolkit's stub
 * libcuda.so and of libnccl.so.2, snapshots in configs/probes/), not from
 * the documentation: cudart reaches versioned and per-thread-stream entry
 * points (_v2, _ptsz, _ptds) through cuGetProcAddress. NCCL entries name
 * ncclX; pncclX is the same function at the same address.
 * tests/unit/test_gpu_probes.c keeps the table, the snapshots and
 * configs/probes/gpu.tsv in agreement. docs/gpu.md explains the choices.
 *
 * Its own module (src/probes/) because the api index is a wire field: the
 * loader (sources) attaches by it, the correlator and the text dump read
 * records by it, and neither should depend on the other to know it.
 */
#ifndef RT_PROBES_GPU_PROBES_H
#define RT_PROBES_GPU_PROBES_H

#include <stdint.h>
#include <stdio.h>

#include <reqtrace/event.h>
/* enum rt_gpu_rec, rt_gpu_stream_how, rt_gpu_bytes_how: shared with bpf/gpu.bpf.c */
#include <reqtrace/gpu_spec.h>

enum rt_gpu_lib {
	RT_GPU_LIB_CUDA = 1, /* libcuda.so.1 */
	RT_GPU_LIB_NCCL = 2, /* libnccl.so.2 */
};

struct rt_gpu_probe {
	const char *name; /* exported symbol */
	uint8_t lib; /* enum rt_gpu_lib */
	uint8_t rec; /* enum rt_gpu_rec: which record a hit emits */
	uint8_t api_class; /* enum rt_cuda_api_class; enum rt_nccl_op for NCCL */
	uint8_t copy_kind; /* enum rt_copy_kind the function implies (2D/3D: from the descriptor) */
	uint8_t stream_how,
		stream_arg; /* enum rt_gpu_stream_how; arguments count from 1, 0: none */
	uint8_t bytes_how, bytes_arg, bytes_arg2, elem; /* enum rt_gpu_bytes_how */
	uint8_t count_arg, dtype_arg, comm_arg,
		peer_arg; /* NCCL; peer_arg is the root for rooted ops */
};

extern const struct rt_gpu_probe rt_gpu_probes[];
extern const uint32_t rt_gpu_n_probes;

/* The entry for api id `api`, or NULL when out of range (records are untrusted). */
const struct rt_gpu_probe *rt_gpu_probe_get(uint32_t api);

/*
 * The api id of the entry named `name` ("pncclX" finds ncclX's entry), or
 * -ENOENT.
 */
int rt_gpu_probe_find(const char *name);

/*
 * A symbol's family: its name without the version and per-thread-stream
 * suffix (_v2, _v3, _ptsz, _ptds, _v2_ptsz, _v2_ptds; "cuMemcpyHtoD_v2_ptds"
 * → "cuMemcpyHtoD"), and for NCCL without the "p" of the profiling alias.
 * Writes at most len bytes (NUL included) to out and returns out.
 */
char *rt_gpu_probe_family(const char *name, char *out, size_t len);

/* Short lowercase names for docs, tables and text dumps ("launch", "h2d", "all_reduce"). */
const char *rt_gpu_class_name(uint32_t api_class);
const char *rt_gpu_copy_kind_name(uint32_t copy_kind);
const char *rt_gpu_nccl_op_name(uint32_t op);

/*
 * Writes the table as tab-separated text, one line per entry after a
 * header line (configs/probes/gpu.tsv is this output). Returns 0 or -EIO.
 */
int rt_gpu_probes_write_tsv(FILE *f);

#endif /* RT_PROBES_GPU_PROBES_H */
