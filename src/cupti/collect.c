// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI setup and callbacks. Setup follows the design's "CUDA facts": the
 * timestamp callback (CLOCK_MONOTONIC) before any kind is enabled, system
 * thread ids, CONCURRENT_KERNEL (KERNEL would serialise kernels), DRIVER
 * records only for the calls in cbid.c, a flush period, a forced flush at
 * exit and never cuptiFinalize (unsafe from an arbitrary thread).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "cbid.h"
#include "dbg.h"
#include "translate.h"

#define RT_CUPTI_LAG_WINDOW_NS 5000000000ULL
#define RT_CUPTI_HORIZON_MAX_NS 60000000000ULL
/* CUPTI stamps a call's entry itself, around our callback: stay below our reading */
#define RT_CUPTI_FLOOR_MARGIN_NS 1000000ULL

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, /* not KERNEL: it serialises kernels */
	CUPTI_ACTIVITY_KIND_MEMCPY, /* copies on one device or with the host */
	CUPTI_ACTIVITY_KIND_MEMCPY2, /* peer-to-peer copies */
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, /* host waits: how long, on what */
	CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, /* ids pushed by engines (NVTX-like) */
};

static const __u32 loss_reason[RT_CUPTI_LOSS__COUNT] = {
	[RT_CUPTI_LOSS_DROPPED] = RT_LOSS_CUPTI_DROPPED,
	[RT_CUPTI_LOSS_DISCARD] = RT_LOSS_CUPTI_DISCARD,
	[RT_CUPTI_LOSS_INVALID] = RT_LOSS_INVALID,
	[RT_CUPTI_LOSS_RING] = RT_LOSS_INJECT_RING,
};

__u64 rt_cupti_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
	return rt_cupti_now_ns();
}

void rt_cupti_loss_add(struct rt_cupti_agent *a, enum rt_cupti_loss r, __u64 n, __u64 now_ns)
{
	struct rt_cupti_pending_loss *p = &a->loss[r];

	if (!n)
		return;
	if (!rt_cupti_ring_ok(&a->ring)) {
		a->lost_unconnected += n;
		return;
	}
	/* ring-full losses carry record times, which need not be in order */
	if (!p->count || now_ns < p->since_ns)
		p->since_ns = now_ns;
	if (now_ns > p->last_ns)
		p->last_ns = now_ns;
	p->count += n;
}

void rt_cupti_loss_flush(struct rt_cupti_agent *a, __u64 now_ns)
{
	struct rt_cupti_pending_loss *p;
	struct rt_ev_loss e;
	int r, err;

	(void)now_ns;
	for (r = 0; r < RT_CUPTI_LOSS__COUNT; r++) {
		p = &a->loss[r];
		if (!p->count)
			continue;
		memset(&e, 0, sizeof(e));
		e.hdr.kind = RT_EV_LOSS;
		e.hdr.size = sizeof(e);
		e.hdr.source = a->source_id;
		e.hdr.ts_ns = p->last_ns;
		e.hdr.pid = a->pid;
		e.since_ns = p->since_ns;
		e.count = p->count;
		e.reason = loss_reason[r];
		err = rt_cupti_ring_write(&a->ring, &e.hdr);
		if (err == -ENOSPC)
			return; /* stays pending: the ring is full */
		if (err)
			a->lost_unconnected += p->count;
		memset(p, 0, sizeof(*p));
	}
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = rt_cupti_bufpool_get(&rt_cupti_agent.pool, size);
	*max_records = 0;
}

static int ring_emit(const struct rt_event_hdr *ev, void *ctx)
{
	struct rt_cupti_agent *a = ctx;
	int err = rt_cupti_ring_write(&a->ring, ev);

	if (err == -ENOSPC)
		rt_cupti_loss_add(a, RT_CUPTI_LOSS_RING, 1, ev->ts_ns);
	else if (err)
		a->lost_unconnected++;
	return err;
}

/* Records in a buffer we will not translate; stops at the first bad one. */
static __u64 count_records(struct rt_cupti_agent *a, uint8_t *buf, size_t valid)
{
	CUpti_Activity *rec = NULL;
	__u64 n = 0;

	while (a->fns.next_record(buf, valid, &rec) == CUPTI_SUCCESS)
		n++;
	return n;
}

static void translate_buffer(struct rt_cupti_agent *a, uint8_t *buf, size_t valid, __u64 now)
{
	struct rt_cupti_xlate x = {
		.source = a->source_id,
		.pid = a->pid,
		.calls = &a->calls,
		.emit = ring_emit,
		.ctx = a,
		.now_ns = now,
	};
	CUpti_Activity *rec = NULL;
	CUptiResult res;

	rt_cupti_loss_flush(a, now);
	rt_cupti_xlate_begin(&x);
	for (;;) {
		res = a->fns.next_record(buf, valid, &rec);
		if (res != CUPTI_SUCCESS)
			break;
		rt_cupti_xlate_record(&x, rec);
	}
	rt_cupti_xlate_end(&x);
	/* INVALID_KIND: an incomplete or corrupt record ends the buffer; the
	 * records after it are lost too, but CUPTI cannot say how many */
	if (res != CUPTI_ERROR_MAX_LIMIT_REACHED)
		x.invalid++;
	rt_cupti_loss_add(a, RT_CUPTI_LOSS_INVALID, x.invalid + x.unknown, now);
	__atomic_fetch_add(&a->records, x.records, __ATOMIC_RELAXED);
	if (x.oldest && now > x.oldest && now - x.oldest > a->lag_cur)
		a->lag_cur = now - x.oldest;
	if (x.invalid || x.unknown)
		rt_cupti_dbg("buffer: %llu records, %llu invalid, %llu unknown kind",
			     (unsigned long long)x.records, (unsigned long long)x.invalid,
			     (unsigned long long)x.unknown);
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				   size_t valid)
{
	struct rt_cupti_agent *a = &rt_cupti_agent;
	__u64 now = rt_cupti_now_ns();
	size_t dropped = 0;

	(void)size;
	__atomic_fetch_add(&a->delivering, 1, __ATOMIC_ACQ_REL);
	if (a->fns.num_dropped(ctx, stream, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	pthread_mutex_lock(&a->ring_lock);
	rt_cupti_loss_add(a, RT_CUPTI_LOSS_DROPPED, dropped, now);
	if (buf && valid) {
		if (rt_cupti_bufpool_is_discard(&a->pool, buf))
			rt_cupti_loss_add(a, RT_CUPTI_LOSS_DISCARD, count_records(a, buf, valid),
					  now);
		else if (!rt_cupti_ring_ok(&a->ring))
			a->lost_unconnected += count_records(a, buf, valid);
		else
			translate_buffer(a, buf, valid, now);
	}
	pthread_mutex_unlock(&a->ring_lock);
	rt_cupti_bufpool_put(&a->pool, buf);
	__atomic_fetch_add(&a->buffers, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&a->delivering, 1, __ATOMIC_ACQ_REL);
}

/* Runs on the host's threads inside its CUDA calls: keep it short. */
static void CUPTIAPI api_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = data;
	struct rt_cupti_calltrack *t = &rt_cupti_agent.calls;
	__u64 cookie;
	__u32 tid;

	(void)ud;
	if (dom != CUPTI_CB_DOMAIN_DRIVER_API || !cb)
		return;
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (cb->correlationData && rt_cupti_cbid_blocking(cbid))
			rt_cupti_calltrack_exit(t, *cb->correlationData);
		return;
	}
	tid = (__u32)syscall(SYS_gettid);
	if (cb->correlationData && rt_cupti_cbid_blocking(cbid)) {
		rt_cupti_calltrack_enter(t, cb->correlationId, tid, rt_cupti_now_ns(), &cookie);
		*cb->correlationData = cookie; /* CUPTI hands it back at exit */
	} else
		rt_cupti_calltrack_note_tid(t, cb->correlationId, tid);
}

static size_t env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	return *end ? def : n;
}

static void fail(struct rt_cupti_agent *a, const char *what, CUptiResult res)
{
	a->status = RT_INJECT_ST_CUPTI_ERROR;
	a->cupti_result = res;
	rt_cupti_dbg("%s: %s (%d): staying idle", what, rt_cupti_fns_errstr(&a->fns, res), res);
}

void rt_cupti_collect_init(struct rt_cupti_agent *a)
{
	uint32_t version = 0;
	CUptiResult res;

	a->status = RT_INJECT_ST_NO_CUPTI;
	if (rt_cupti_fns_load(&a->fns, getenv(RT_CUPTI_LIB_ENV)))
		return;
	if (a->fns.get_version(&version) != CUPTI_SUCCESS)
		version = 0;
	a->cupti_version = version;
	/* record layouts are those of this build's major version (CUPTI_API_VERSION 13xxxx) */
	if (version / 10000 != CUPTI_API_VERSION / 10000) {
		a->status = RT_INJECT_ST_CUPTI_VERSION;
		rt_cupti_dbg("libcupti API version %u, built for %u: staying idle", version,
			     (unsigned)CUPTI_API_VERSION);
		return;
	}
	res = a->fns.subscribe(&a->sub, api_cb, NULL);
	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		a->status = RT_INJECT_ST_CUPTI_BUSY;
		a->cupti_result = res;
		rt_cupti_dbg("another CUPTI subscriber holds CUPTI: stepping aside");
		return;
	}
	if (res != CUPTI_SUCCESS) {
		fail(a, "cuptiSubscribe", res);
		return;
	}
	if (rt_cupti_bufpool_init(
		    &a->pool, env_size("REQTRACE_CUPTI_BUF_KB", 0) * 1024 ?: RT_CUPTI_BUF_DEFAULT,
		    env_size("REQTRACE_CUPTI_BUFS", RT_CUPTI_BUFS_DEFAULT))) {
		fail(a, "buffer pool", CUPTI_ERROR_OUT_OF_MEMORY);
		return;
	}
	/* before any kind is enabled: CUPTI's default clock is not monotonic */
	res = a->fns.register_timestamp(timestamp_cb);
	if (res != CUPTI_SUCCESS) {
		fail(a, "cuptiActivityRegisterTimestampCallback", res);
		return;
	}
	res = a->fns.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if (res != CUPTI_SUCCESS) {
		fail(a, "cuptiSetThreadIdType", res);
		return;
	}
	res = a->fns.register_callbacks(buf_requested, buf_completed);
	if (res != CUPTI_SUCCESS) {
		fail(a, "cuptiActivityRegisterCallbacks", res);
		return;
	}
	a->status = RT_INJECT_ST_OK;
	rt_cupti_dbg("CUPTI %u ready (collection starts when a daemon accepts us)", version);
}

int rt_cupti_collect_start(struct rt_cupti_agent *a)
{
	CUptiResult res;
	size_t i;
	__u32 cbid;
	__u8 cls, dir;

	if (a->status != RT_INJECT_ST_OK)
		return -ENODEV;
	if (__atomic_load_n(&a->collecting, __ATOMIC_ACQUIRE))
		return 0;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		res = a->fns.enable(kinds[i]);
		if (res != CUPTI_SUCCESS) {
			fail(a, "cuptiActivityEnable", res);
			return -EIO;
		}
	}
	/* DRIVER records for the listed calls only; without the fine-grained
	 * switch, all of them (translation filters the rest) */
	if (a->fns.enable_driver_api) {
		for (cbid = 0; cbid < rt_cupti_cbid_limit(); cbid++)
			if (rt_cupti_cbid_info(cbid, &cls, &dir))
				a->fns.enable_driver_api(cbid, 1);
	} else {
		res = a->fns.enable(CUPTI_ACTIVITY_KIND_DRIVER);
		if (res != CUPTI_SUCCESS) {
			fail(a, "cuptiActivityEnable(DRIVER)", res);
			return -EIO;
		}
	}
	for (cbid = 0; cbid < rt_cupti_cbid_limit(); cbid++)
		if (rt_cupti_cbid_callback(cbid))
			a->fns.enable_callback(1, a->sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
	a->fns.flush_period(a->flush_ms);
	__atomic_store_n(&a->collecting, 1, __ATOMIC_RELEASE);
	rt_cupti_dbg("collecting");
	return 0;
}

static void write_watermark(struct rt_cupti_agent *a, __u64 wm)
{
	struct rt_ev_watermark e = {
		.hdr = {
			.kind = RT_EV_WATERMARK,
			.size = sizeof(e),
			.source = a->source_id,
			.ts_ns = wm,
			.pid = a->pid,
		},
	};

	if (wm <= a->last_wm)
		return;
	if (rt_cupti_ring_write(&a->ring, &e.hdr) == 0)
		a->last_wm = wm;
}

/*
 * The horizon: at least horizon_ms, and at least the worst delivery lag seen
 * over the last one or two lag windows plus a flush period. CUPTI returns a
 * buffer only once all its records are complete, so under continuous device
 * work a buffer may wait until it is full; after the first late buffer the
 * watermark follows the lag CUPTI really has instead of going on producing
 * late records. Capped at RT_CUPTI_HORIZON_MAX_NS.
 */
static __u64 horizon_ns(struct rt_cupti_agent *a, __u64 now)
{
	__u64 h = (__u64)a->horizon_ms * 1000000ULL;
	__u64 lag = a->lag_cur > a->lag_prev ? a->lag_cur : a->lag_prev;

	if (now - a->lag_window_start >= RT_CUPTI_LAG_WINDOW_NS) {
		a->lag_prev = a->lag_cur;
		a->lag_cur = 0;
		a->lag_window_start = now;
	}
	lag += (__u64)a->flush_ms * 1000000ULL;
	if (lag > h)
		h = lag;
	return h < RT_CUPTI_HORIZON_MAX_NS ? h : RT_CUPTI_HORIZON_MAX_NS;
}

void rt_cupti_collect_tick(struct rt_cupti_agent *a)
{
	__u64 t, wm, floor, horizon;
	int blind;

	if (!__atomic_load_n(&a->collecting, __ATOMIC_ACQUIRE))
		return;
	/* with the exit handler's exiting/in_tick pair (seq_cst both ways): no
	 * flush of ours may still run when the process unloads libcupti */
	__atomic_store_n(&a->in_tick, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&a->exiting, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&a->in_tick, 0, __ATOMIC_RELEASE);
		return;
	}
	rt_cupti_calltrack_next_epoch(&a->calls);
	t = rt_cupti_now_ns();
	/* a default flush returns every buffer whose records are all complete */
	a->fns.flush_all(0);
	pthread_mutex_lock(&a->ring_lock);
	if (rt_cupti_ring_ok(&a->ring)) {
		rt_cupti_loss_flush(a, t);
		floor = rt_cupti_calltrack_floor(&a->calls, &blind);
		horizon = horizon_ns(a, t);
		/* a completion on CUPTI's own thread may still be writing older records */
		if (!blind && !__atomic_load_n(&a->delivering, __ATOMIC_ACQUIRE)) {
			wm = t > horizon ? t - horizon : 0;
			if (floor && floor - RT_CUPTI_FLOOR_MARGIN_NS < wm)
				wm = floor - RT_CUPTI_FLOOR_MARGIN_NS;
			write_watermark(a, wm);
		}
	}
	pthread_mutex_unlock(&a->ring_lock);
	__atomic_store_n(&a->in_tick, 0, __ATOMIC_RELEASE);
}

void rt_cupti_collect_exit(struct rt_cupti_agent *a)
{
	__u64 t, lost;
	int i;

	__atomic_store_n(&a->exiting, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&a->collecting, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < 500 && __atomic_load_n(&a->in_tick, __ATOMIC_SEQ_CST); i++)
		usleep(1000); /* a tick is short: a flush and a ring write */
	t = rt_cupti_now_ns();
	/* forced: also buffers with incomplete records; CUPTI delivers them before returning */
	a->fns.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&a->ring_lock);
	if (rt_cupti_ring_ok(&a->ring)) {
		rt_cupti_loss_flush(a, t);
		write_watermark(a, t);
	}
	lost = a->lost_unconnected;
	pthread_mutex_unlock(&a->ring_lock);
	rt_cupti_dbg("exit: %llu records in %llu buffers, %llu lost unconnected",
		     (unsigned long long)__atomic_load_n(&a->records, __ATOMIC_RELAXED),
		     (unsigned long long)__atomic_load_n(&a->buffers, __ATOMIC_RELAXED),
		     (unsigned long long)lost);
}
