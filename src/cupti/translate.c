// SPDX-License-Identifier: BSD-2-Clause
#include "translate.h"

#include <errno.h>
#include <string.h>

#include "cbid.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

__u64 rt_cupti_fnv1a(const char *s, size_t max)
{
	__u64 h = FNV_OFFSET;
	size_t i;

	for (i = 0; s && i < max && s[i]; i++) {
		h ^= (unsigned char)s[i];
		h *= FNV_PRIME;
	}
	return h;
}

static void fill_hdr(struct rt_cupti_xlate *x, struct rt_event_hdr *h, __u16 kind, __u16 size,
		     __u64 ts, __u32 tid)
{
	h->kind = kind;
	h->size = size;
	h->source = x->source;
	h->ts_ns = ts;
	h->pid = x->pid;
	h->tid = tid;
	if (ts > x->last_ts)
		x->last_ts = ts;
}

/* The emitter counts what it cannot deliver: translation goes on regardless. */
static int emit(struct rt_cupti_xlate *x, const struct rt_event_hdr *h)
{
	__u64 t = h->ts_ns;

	if (h->kind == RT_EV_GPU_SYNC)
		t = ((const struct rt_ev_gpu_sync *)h)->end_ns;
	if (t && (!x->oldest || t < x->oldest))
		x->oldest = t;
	x->records++;
	x->emit(h, x->ctx);
	return 0;
}

/* CUPTI writes start = end = 0 when it could not time an activity */
static int bad_interval(__u64 start, __u64 end)
{
	return (!start && !end) || end < start;
}

/* CUDA arrays live in device memory: array copies count as device-side ends */
static __u8 copy_kind(__u8 cupti_kind)
{
	switch (cupti_kind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return RT_COPY_H2D;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return RT_COPY_D2H;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
		return RT_COPY_D2D;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return RT_COPY_H2H;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return RT_COPY_P2P;
	default:
		return RT_COPY_UNKNOWN;
	}
}

static int kernel(struct rt_cupti_xlate *x, const CUpti_ActivityKernel10 *k)
{
	struct rt_ev_gpu_kernel e;
	size_t n;

	if (bad_interval(k->start, k->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	fill_hdr(x, &e.hdr, RT_EV_GPU_KERNEL, sizeof(e), k->start, 0);
	e.end_ns = k->end;
	e.corr_id = k->correlationId;
	e.name_hash = rt_cupti_fnv1a(k->name, RT_CUPTI_NAME_SCAN_MAX);
	e.device = k->deviceId;
	e.context = k->contextId;
	e.stream = k->streamId;
	/* CUPTI's dimensions are signed ints that are never negative */
	e.grid[0] = k->gridX;
	e.grid[1] = k->gridY;
	e.grid[2] = k->gridZ;
	e.block[0] = k->blockX;
	e.block[1] = k->blockY;
	e.block[2] = k->blockZ;
	if (k->name) {
		n = strnlen(k->name, sizeof(e.name) - 1);
		memcpy(e.name, k->name, n); /* the rest stays 0: always terminated */
	}
	return emit(x, &e.hdr);
}

static int memcpy1(struct rt_cupti_xlate *x, const CUpti_ActivityMemcpy6 *c)
{
	struct rt_ev_gpu_memcpy e;

	if (bad_interval(c->start, c->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	fill_hdr(x, &e.hdr, RT_EV_GPU_MEMCPY, sizeof(e), c->start, 0);
	e.end_ns = c->end;
	e.corr_id = c->correlationId;
	e.bytes = c->bytes;
	/* a one-device copy: the device it ran on stands for both ends */
	e.device = e.src_device = e.dst_device = c->deviceId;
	e.stream = c->streamId;
	e.copy_kind = copy_kind(c->copyKind);
	return emit(x, &e.hdr);
}

static int memcpy2(struct rt_cupti_xlate *x, const CUpti_ActivityMemcpyPtoP4 *c)
{
	struct rt_ev_gpu_memcpy e;

	if (bad_interval(c->start, c->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	fill_hdr(x, &e.hdr, RT_EV_GPU_MEMCPY, sizeof(e), c->start, 0);
	e.end_ns = c->end;
	e.corr_id = c->correlationId;
	e.bytes = c->bytes;
	e.device = c->deviceId;
	e.src_device = c->srcDeviceId;
	e.dst_device = c->dstDeviceId;
	e.stream = c->streamId;
	e.copy_kind = c->srcDeviceId != c->dstDeviceId ? RT_COPY_P2P : copy_kind(c->copyKind);
	return emit(x, &e.hdr);
}

static int memset1(struct rt_cupti_xlate *x, const CUpti_ActivityMemset4 *m)
{
	struct rt_ev_gpu_memset e;

	if (bad_interval(m->start, m->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	fill_hdr(x, &e.hdr, RT_EV_GPU_MEMSET, sizeof(e), m->start, 0);
	e.end_ns = m->end;
	e.corr_id = m->correlationId;
	e.bytes = m->bytes;
	e.device = m->deviceId;
	e.stream = m->streamId;
	return emit(x, &e.hdr);
}

static int sync1(struct rt_cupti_xlate *x, const CUpti_ActivitySynchronization2 *s)
{
	struct rt_ev_gpu_sync e;
	__u32 tid = x->calls ? rt_cupti_calltrack_tid(x->calls, s->correlationId) : 0;

	if (bad_interval(s->start, s->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	fill_hdr(x, &e.hdr, RT_EV_GPU_SYNC, sizeof(e), s->start, tid);
	e.end_ns = s->end;
	e.corr_id = s->correlationId;
	e.sync_type = s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ?
			      (__u32)s->type :
			      RT_SYNC_UNKNOWN; /* CUPTI's values 0-4 are ours */
	e.stream = s->streamId;
	e.context = s->contextId;
	return emit(x, &e.hdr);
}

/* Emits held EXT_CORR records: those of corr at ts, all of them when corr is 0. */
static void release_ext(struct rt_cupti_xlate *x, __u64 corr, __u64 ts)
{
	unsigned int i, keep = 0;

	for (i = 0; i < x->n_ext; i++) {
		if (corr && x->ext[i].corr_id != corr) {
			x->ext[keep++] = x->ext[i];
			continue;
		}
		x->ext[i].hdr.ts_ns = ts ? ts : x->now_ns;
		emit(x, &x->ext[i].hdr);
	}
	x->n_ext = keep;
}

static int ext_corr(struct rt_cupti_xlate *x, const CUpti_ActivityExternalCorrelation *c)
{
	struct rt_ev_gpu_ext_corr *e;

	if (x->n_ext == RT_CUPTI_EXT_PENDING)
		release_ext(x, 0, x->last_ts); /* bound the hold: no API record came */
	e = &x->ext[x->n_ext++];
	memset(e, 0, sizeof(*e));
	e->hdr.kind = RT_EV_GPU_EXT_CORR;
	e->hdr.size = sizeof(*e);
	e->hdr.source = x->source;
	e->hdr.pid = x->pid;
	e->corr_id = c->correlationId;
	e->external_id = c->externalId;
	e->external_kind = c->externalKind;
	return 0;
}

static int api(struct rt_cupti_xlate *x, const CUpti_ActivityAPI *a)
{
	struct rt_ev_cuda_api e;
	__u8 cls, dir;

	/* without cuptiActivityEnableDriverApi every driver call comes: keep ours */
	if (!rt_cupti_cbid_info(a->cbid, &cls, &dir))
		return -ENOENT;
	if (bad_interval(a->start, a->end))
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	/* stamped at the return: the record exists only then (see the watermark) */
	fill_hdr(x, &e.hdr, RT_EV_CUDA_API_EXIT, sizeof(e), a->end, a->threadId);
	e.enter_ns = a->start;
	e.corr_id = a->correlationId;
	e.api = a->cbid;
	e.ret = (__s32)a->returnValue;
	e.api_class = cls;
	e.copy_kind = dir;
	release_ext(x, a->correlationId, a->start);
	return emit(x, &e.hdr);
}

void rt_cupti_xlate_begin(struct rt_cupti_xlate *x)
{
	x->n_ext = 0;
	x->last_ts = 0;
	x->oldest = 0;
}

int rt_cupti_xlate_record(struct rt_cupti_xlate *x, const CUpti_Activity *rec)
{
	int err;

	/* layouts are CUDA 13's: collect.c refuses a libcupti of another major */
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		err = kernel(x, (const CUpti_ActivityKernel10 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		err = memcpy1(x, (const CUpti_ActivityMemcpy6 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		err = memcpy2(x, (const CUpti_ActivityMemcpyPtoP4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		err = memset1(x, (const CUpti_ActivityMemset4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		err = sync1(x, (const CUpti_ActivitySynchronization2 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		err = api(x, (const CUpti_ActivityAPI *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		err = ext_corr(x, (const CUpti_ActivityExternalCorrelation *)rec);
		break;
	default:
		x->unknown++;
		return -ENOTSUP;
	}
	if (err == -EINVAL)
		x->invalid++;
	else if (err == -ENOENT)
		x->filtered++;
	return err < 0 ? err : 0;
}

void rt_cupti_xlate_end(struct rt_cupti_xlate *x)
{
	release_ext(x, 0, x->last_ts);
}
