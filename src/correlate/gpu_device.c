// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device time per request: CUPTI's device records (KERNEL, MEMCPY, MEMSET)
 * joined to requests through the DRIVER record of the call that queued the
 * work, by (source, correlation id); and the GPU busy fraction per device.
 * docs/gpu.md, "Device time (CUPTI)", has the rules.
 *
 * A DRIVER record of a call that queues device work (launch, graph launch,
 * copy, memset) is kept with the requests its thread worked for: gpu.c's
 * owners() (markers, I/O owners, engine set: the same requests the uprobe
 * records of that call were charged to), less those not yet fully received
 * at the call's entry. Each device record with its correlation id splits its
 * duration equally among them (the remainder to the sharers in turn, so the
 * sum is exact): kernels into kernel_ns, copies and memsets into memcpy_ns.
 *
 * The merge orders records by their timestamp: a device record (stamped
 * with the work's start) comes before its DRIVER record (stamped with the
 * call's return) whenever the device started the work before the call
 * returned. Such records are held until their DRIVER record comes.
 *
 * Everything lives in fixed tables allocated once, by the first CUPTI record
 * (no allocation after that): calls and held records are FIFO rings in arrival order, which is merged
 * time order, so expiry and eviction take the oldest; owner sets are shared
 * by the calls that had the same owners (a step's launches and copies).
 * Every record that cannot be charged is counted in struct rt_gpu_stats.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NS_PER_S 1000000000ULL

/* ---- fixed open-addressing indices: slots hold entry index + 1 --------------- */

struct ix {
	uint32_t *slot;
	uint32_t mask;
	const char *base; /* the entries; each begins with its uint64_t key */
	size_t stride;
};

static uint64_t ix_key(const struct ix *x, uint32_t v)
{
	uint64_t k;

	memcpy(&k, x->base + (size_t)(v - 1) * x->stride, sizeof(k));
	return k;
}

/* The slot holding key, or the empty slot where it would go. */
static uint32_t ix_pos(const struct ix *x, uint64_t key)
{
	uint32_t i = (uint32_t)rt_hash_u64(key) & x->mask;

	while (x->slot[i] && ix_key(x, x->slot[i]) != key)
		i = (i + 1) & x->mask;
	return i;
}

static uint32_t ix_get(const struct ix *x, uint64_t key)
{
	return x->slot[ix_pos(x, key)];
}

/* The tables hold at most half as many entries as slots: never full. */
static void ix_put(struct ix *x, uint64_t key, uint32_t v)
{
	x->slot[ix_pos(x, key)] = v;
}

/* Removes key (backward shift: no tombstones, probes stay short). */
static void ix_del(struct ix *x, uint64_t key)
{
	uint32_t i = ix_pos(x, key), j = i, home;

	if (!x->slot[i])
		return;
	x->slot[i] = 0;
	for (;;) {
		j = (j + 1) & x->mask;
		if (!x->slot[j])
			return;
		home = (uint32_t)rt_hash_u64(ix_key(x, x->slot[j])) & x->mask;
		if (((j - home) & x->mask) >= ((j - i) & x->mask)) {
			x->slot[i] = x->slot[j];
			x->slot[j] = 0;
			i = j;
		}
	}
}

static struct ix calls_ix(struct rt_gpu_dev *d)
{
	return (struct ix){ d->calls_ix, 2 * RT_GPU_DEV_CALLS_MAX - 1, (const char *)d->calls,
			    sizeof(d->calls[0]) };
}

static struct ix held_ix(struct rt_gpu_dev *d)
{
	return (struct ix){ d->held_ix, 2 * RT_GPU_DEV_HELD_MAX - 1, (const char *)d->held,
			    sizeof(d->held[0]) };
}

#define CORR_MAX 0xffffffffULL /* CUPTI correlation ids are 32-bit */

/* Correlation ids are per process, hence per injection source: the key is exact. */
static uint64_t key_of(uint32_t source, uint64_t corr)
{
	return ((uint64_t)source << 32) | corr;
}

static bool older_than(uint64_t ts, uint64_t now, uint64_t ttl)
{
	return now > ts && now - ts > ttl;
}

/* ---- owner sets ------------------------------------------------------------------ */

static uint64_t hash_serials(const uint64_t *s, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = rt_hash_u64(h ^ s[i]);
	return h;
}

_Static_assert(RT_GPU_DEV_SNAPS_MAX % 64 == 0, "snap_busy is whole words");

static void snap_busy_set(struct rt_gpu_dev *d, uint32_t idx, bool busy)
{
	uint64_t bit = 1ULL << (idx % 64);

	if (busy)
		d->snap_busy[idx / 64] |= bit;
	else
		d->snap_busy[idx / 64] &= ~bit;
}

/* The first set with no calls at or after `from`, cyclically; RT_GPU_DEV_SNAPS_MAX: none. */
static uint32_t snap_free_from(const struct rt_gpu_dev *d, uint32_t from)
{
	uint32_t k, i;

	for (k = 0; k <= RT_GPU_DEV_SNAPS_MAX / 64; k++) {
		/* word of from first (bits from it on), the others whole, then its bits before from */
		uint32_t w = (from / 64 + k) % (RT_GPU_DEV_SNAPS_MAX / 64);
		uint64_t free_bits = ~d->snap_busy[w];

		if (k == 0)
			free_bits &= ~0ULL << (from % 64);
		else if (k == RT_GPU_DEV_SNAPS_MAX / 64)
			free_bits &= from % 64 ? ~(~0ULL << (from % 64)) : 0;
		if (free_bits) {
			i = w * 64 + (uint32_t)__builtin_ctzll(free_bits);
			return i;
		}
	}
	return RT_GPU_DEV_SNAPS_MAX;
}

static void snap_put(struct rt_gpu_dev *d, uint32_t snap, uint32_t gen)
{
	struct rt_gpu_dev_snap *s;

	if (!snap)
		return;
	s = &d->snaps[snap - 1];
	if (s->gen == gen && s->refs && !--s->refs)
		snap_busy_set(d, snap - 1, false);
}

/* A set holding who's requests and weights, shared with a recent call that had the same. */
static uint32_t snap_get(struct rt_gpu_dev *d, struct rt_gpu_stats *st,
			 const struct rt_gpu_who *who, uint32_t *gen)
{
	uint64_t serial[RT_GPU_SHARE_MAX], h;
	struct rt_gpu_dev_snap *s;
	uint32_t i, idx, n = who->n;

	for (i = 0; i < n; i++)
		serial[i] = who->req[i]->serial;
	h = hash_serials(serial, n);
	for (i = 0; i < n; i++)
		h = rt_hash_u64(h ^ who->w[i]);
	h = rt_hash_u64(h ^ who->split);
	for (i = 0; i < RT_GPU_DEV_RECENT; i++) {
		if (!d->recent[i])
			continue;
		s = &d->snaps[d->recent[i] - 1];
		if (s->hash == h && s->n == n && s->split == who->split &&
		    !memcmp(s->serial, serial, n * sizeof(serial[0])) &&
		    !memcmp(s->w, who->w, n * sizeof(who->w[0]))) {
			s->refs++;
			snap_busy_set(d, d->recent[i] - 1, true);
			*gen = s->gen;
			return d->recent[i];
		}
	}
	/*
	 * The first free slot from snap_next on, else that one: the calls that
	 * named it lose their owners. Read from the bitmap: reading each
	 * set's refs was a miss per 3 kB set, up to 256 a DRIVER record.
	 */
	idx = snap_free_from(d, d->snap_next);
	if (idx == RT_GPU_DEV_SNAPS_MAX) {
		idx = d->snap_next;
		st->dev_snaps_overwritten++;
	}
	d->snap_next = (idx + 1) % RT_GPU_DEV_SNAPS_MAX;
	s = &d->snaps[idx];
	s->gen++;
	s->refs = 1;
	snap_busy_set(d, idx, true);
	s->n = n;
	s->hash = h;
	s->split = who->split;
	s->weight_sum = who->weight_sum;
	memcpy(s->serial, serial, n * sizeof(serial[0]));
	memcpy(s->w, who->w, n * sizeof(who->w[0]));
	memmove(d->recent + 1, d->recent, (RT_GPU_DEV_RECENT - 1) * sizeof(d->recent[0]));
	d->recent[0] = idx + 1;
	*gen = s->gen;
	return idx + 1;
}

/* ---- charging ----------------------------------------------------------------- */

/*
 * A device record's duration to the call's owners, by their weights (the
 * tokens each advanced in a marker step that carries counts, else equal);
 * each also gets the whole duration in step_ns, the measured step time
 * beside its share.
 */
static void charge(struct rt_correlator *c, struct rt_gpu_dev_call *k, uint16_t kind, uint64_t dur)
{
	struct rt_gpu_dev *d = c->gpu.dev;
	struct rt_gpu_stats *st = &c->gpu.st;
	const struct rt_gpu_dev_snap *s = k->snap ? &d->snaps[k->snap - 1] : NULL;
	uint64_t share[RT_GPU_SHARE_MAX], given = 0;
	uint32_t i;

	k->matched++;
	st->dev_joined++;
	if (!s || s->gen != k->snap_gen || !s->n) {
		st->dev_unattributed++;
		st->dev_unattributed_ns += (int64_t)dur;
		return;
	}
	for (i = 0; i < s->n; i++) {
		share[i] = s->weight_sum ?
				   (uint64_t)((unsigned __int128)dur * s->w[i] / s->weight_sum) :
				   0;
		given += share[i];
	}
	if (given < dur) /* what does not divide: to the sharers in turn */
		share[d->turn++ % s->n] += dur - given;
	for (i = 0; i < s->n; i++) {
		struct rt_req *r = rt_req_get(c, s->serial[i]);
		struct rt_gpu_acc *a = r && !r->ended ? rt_gpu_acc_of(r) : NULL;

		if (!a) {
			st->dev_orphan_ns += (int64_t)share[i];
			continue;
		}
		if (kind == RT_EV_GPU_KERNEL)
			a->kernel_ns += (int64_t)share[i];
		else
			a->memcpy_ns += (int64_t)share[i];
		a->split_ns[s->split < RT_GPU_SPLIT__COUNT ? s->split : 0] += (int64_t)share[i];
		a->step_ns += (int64_t)dur;
		a->device = true;
	}
}

/* ---- the tables ---------------------------------------------------------------- */

/* Forgets the oldest call: it expired, or (evict) the table is full. */
static void call_pop(struct rt_correlator *c, bool evict)
{
	struct rt_gpu_dev *d = c->gpu.dev;
	struct rt_gpu_dev_call *k = &d->calls[d->calls_tail];
	struct ix x = calls_ix(d);

	if (k->used) {
		if (ix_get(&x, k->key) == d->calls_tail + 1)
			ix_del(&x, k->key);
		if (!k->matched) {
			if (evict)
				c->gpu.st.dev_calls_evicted++;
			else
				c->gpu.st.dev_calls_unmatched++;
		}
		snap_put(d, k->snap, k->snap_gen);
		k->used = 0;
	}
	d->calls_tail = (d->calls_tail + 1) % RT_GPU_DEV_CALLS_MAX;
	d->calls_len--;
}

static struct rt_gpu_dev_call *call_find(struct rt_gpu_dev *d, uint32_t source, uint64_t corr)
{
	struct ix x = calls_ix(d);
	uint32_t v = ix_get(&x, key_of(source, corr));

	return v ? &d->calls[v - 1] : NULL;
}

/* Forgets the oldest held record: expired, or (evict) the table is full. */
static void held_pop(struct rt_correlator *c, bool evict)
{
	struct rt_gpu_dev *d = c->gpu.dev;
	struct rt_gpu_dev_held *h = &d->held[d->held_tail];
	struct ix x = held_ix(d);
	uint32_t me = d->held_tail + 1, v, steps = 0;

	if (h->used) {
		/* the oldest of its key: the end of its chain */
		v = ix_get(&x, h->key);
		if (v == me) {
			ix_del(&x, h->key);
		} else {
			while (v && d->held[v - 1].older != me && ++steps < RT_GPU_DEV_HELD_MAX)
				v = d->held[v - 1].older;
			if (v && d->held[v - 1].older == me)
				d->held[v - 1].older = 0;
		}
		if (evict)
			c->gpu.st.dev_held_dropped++;
		else
			c->gpu.st.dev_unmatched++;
		c->gpu.st.dev_unattributed_ns += (int64_t)(h->end - h->start);
		h->used = 0;
	}
	d->held_tail = (d->held_tail + 1) % RT_GPU_DEV_HELD_MAX;
	d->held_len--;
}

static void hold(struct rt_correlator *c, const struct rt_event_hdr *ev, uint64_t corr,
		 uint64_t end)
{
	struct rt_gpu_dev *d = c->gpu.dev;
	struct ix x = held_ix(d);
	struct rt_gpu_dev_held *h;
	uint32_t idx;

	while (d->held_len && !d->held[d->held_tail].used)
		held_pop(c, false);
	if (d->held_len == RT_GPU_DEV_HELD_MAX)
		held_pop(c, true);
	idx = (d->held_tail + d->held_len) % RT_GPU_DEV_HELD_MAX;
	d->held_len++;
	h = &d->held[idx];
	h->key = key_of(ev->source, corr);
	h->corr = corr;
	h->start = ev->ts_ns;
	h->end = end;
	h->source = ev->source;
	h->pid = ev->pid;
	h->kind = ev->kind;
	h->used = 1;
	h->older = ix_get(&x, h->key);
	ix_put(&x, h->key, idx + 1);
	c->gpu.st.dev_held++;
}

/* The held records of call k (its DRIVER record just came): charged now. */
static void release_held(struct rt_correlator *c, struct rt_gpu_dev_call *k)
{
	struct rt_gpu_dev *d = c->gpu.dev;
	struct ix x = held_ix(d);
	uint32_t v = ix_get(&x, k->key), steps = 0;

	if (!v)
		return;
	ix_del(&x, k->key);
	/* a key's chain holds only live records of that key, newest first */
	while (v && steps++ < RT_GPU_DEV_HELD_MAX) {
		struct rt_gpu_dev_held *h = &d->held[v - 1];

		v = h->older;
		if (!h->used)
			break;
		charge(c, k, h->kind, h->end - h->start);
		h->used = 0;
	}
}

static void expire(struct rt_correlator *c)
{
	struct rt_gpu_dev *d = c->gpu.dev;

	while (d->calls_len &&
	       (!d->calls[d->calls_tail].used ||
		older_than(d->calls[d->calls_tail].ts, c->now, RT_GPU_DEV_CALL_TTL_NS)))
		call_pop(c, false);
	while (d->held_len &&
	       (!d->held[d->held_tail].used ||
		older_than(d->held[d->held_tail].start, c->now, RT_GPU_DEV_HELD_TTL_NS)))
		held_pop(c, false);
}

/* ---- GPU busy time: the union of kernel intervals per device -------------------- */

static void busy_pid(struct rt_gpu_busy_dev *b, uint32_t pid)
{
	uint32_t i;

	for (i = 0; i < b->n_pids; i++)
		if (b->pids[i] == pid)
			return;
	if (b->n_pids < RT_GPU_BUSY_PIDS_MAX)
		b->pids[b->n_pids++] = pid;
}

/*
 * The series of a device, whichever process ran the kernel: the union is
 * over every stream of every process on it (kernels of all sources come in
 * one merge order, by start).
 */
static struct rt_gpu_busy_dev *busy_dev(struct rt_correlator *c, uint32_t pid, uint32_t device)
{
	struct rt_gpu_busy_dev *b = c->gpu.dev->busy, *free_slot = NULL;
	uint32_t i;

	for (i = 0; i < RT_GPU_BUSY_DEVICES_MAX; i++) {
		if (b[i].used && b[i].device == device) {
			busy_pid(&b[i], pid);
			return &b[i];
		}
		if (!b[i].used && !free_slot)
			free_slot = &b[i];
	}
	if (!free_slot) {
		c->gpu.st.busy_devices_full++;
		return NULL;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = 1;
	free_slot->device = device;
	busy_pid(free_slot, pid);
	return free_slot;
}

/* Adds [from, to) to the per-second buckets (only the last window's seconds). */
static void bucket_add(struct rt_gpu_busy_dev *b, uint64_t from, uint64_t to)
{
	uint64_t sec, last = (to - 1) / NS_PER_S;

	if (to <= from)
		return;
	sec = from / NS_PER_S;
	if (last - sec >= RT_GPU_BUSY_WINDOW_S)
		sec = last - RT_GPU_BUSY_WINDOW_S + 1;
	for (; sec <= last; sec++) {
		uint32_t i = (uint32_t)(sec % RT_GPU_BUSY_WINDOW_S);
		uint64_t lo = sec * NS_PER_S, hi = lo + NS_PER_S;

		if (b->sec[i] > sec)
			continue; /* older than the window the bucket serves now */
		if (b->sec[i] != sec) {
			b->sec[i] = sec;
			b->busy[i] = 0;
		}
		b->busy[i] += (to < hi ? to : hi) - (from > lo ? from : lo);
	}
}

static void busy_close(struct rt_gpu_busy_dev *b)
{
	if (!b->open)
		return;
	bucket_add(b, b->open_start, b->open_end);
	b->busy_total_ns += b->open_end - b->open_start;
	b->done_until = b->open_end;
	b->open = 0;
}

/*
 * Kernels come in merge order, by start: each one either overlaps the
 * interval being grown or starts a new one, and the finished one moves into
 * the buckets. A kernel starting before what is already in the buckets (a
 * late record) counts only beyond it.
 */
static void busy_add(struct rt_correlator *c, uint32_t pid, uint32_t device, uint64_t start,
		     uint64_t end)
{
	struct rt_gpu_busy_dev *b = busy_dev(c, pid, device);

	if (!b)
		return;
	b->kernels++;
	if (!b->first_ns || start < b->first_ns)
		b->first_ns = start;
	if (start < b->done_until) {
		c->gpu.st.busy_late++;
		start = b->done_until;
		if (end <= start)
			return;
	}
	if (b->open && start <= b->open_end) {
		if (end > b->open_end)
			b->open_end = end;
		if (start < b->open_start)
			b->open_start = start;
		return;
	}
	busy_close(b);
	b->open = 1;
	b->open_start = start;
	b->open_end = end;
}

/* Busy ns of b in [from, to): buckets of the seconds it covers, and the open interval. */
static uint64_t busy_in(const struct rt_gpu_busy_dev *b, uint64_t from, uint64_t to)
{
	uint64_t sum = 0, sec, lo, hi;

	if (to <= from)
		return 0;
	for (sec = from / NS_PER_S; sec <= (to - 1) / NS_PER_S; sec++) {
		uint32_t i = (uint32_t)(sec % RT_GPU_BUSY_WINDOW_S);

		if (b->sec[i] == sec)
			sum += b->busy[i];
	}
	if (b->open) {
		lo = b->open_start > from ? b->open_start : from;
		hi = b->open_end < to ? b->open_end : to;
		if (hi > lo)
			sum += hi - lo;
	}
	return sum;
}

void rt_gpu_device_stats(const struct rt_correlator *c, struct rt_gpu_stats *st)
{
	const struct rt_gpu_busy_dev *b = c->gpu.dev ? c->gpu.dev->busy : NULL;
	uint64_t now = c->now, from;
	uint32_t i, n = 0;

	/* whole seconds: the window is the last RT_GPU_BUSY_WINDOW_S buckets */
	from = now / NS_PER_S >= RT_GPU_BUSY_WINDOW_S ?
		       (now / NS_PER_S - RT_GPU_BUSY_WINDOW_S + 1) * NS_PER_S :
		       0;
	for (i = 0; b && i < RT_GPU_BUSY_DEVICES_MAX; i++) {
		struct rt_gpu_busy *o = &st->busy[n];
		uint64_t lo;

		if (!b[i].used)
			continue;
		lo = b[i].first_ns > from ? b[i].first_ns : from;
		memset(o, 0, sizeof(*o));
		o->pid = b[i].pids[0];
		o->processes = b[i].n_pids;
		o->device = b[i].device;
		o->kernels = b[i].kernels;
		o->window_ns = now > lo ? now - lo : 0;
		o->busy_ns = busy_in(&b[i], lo, now);
		if (o->busy_ns > o->window_ns)
			o->busy_ns = o->window_ns;
		o->busy_total_ns = b[i].busy_total_ns;
		if (b[i].open)
			o->busy_total_ns += b[i].open_end - b[i].open_start;
		o->fraction = o->window_ns ? (double)o->busy_ns / (double)o->window_ns : 0;
		n++;
	}
	st->n_busy = n;
}

uint32_t rt_gpu_busy_series(const struct rt_correlator *c, uint32_t pid, uint32_t device,
			    uint64_t *busy_ns, uint32_t max, uint64_t *first_sec)
{
	const struct rt_gpu_busy_dev *b = NULL;
	uint64_t now_sec = c->now / NS_PER_S, sec, lo, hi;
	uint32_t i, n;

	(void)pid; /* a device's series covers all its processes */
	for (i = 0; c->gpu.dev && i < RT_GPU_BUSY_DEVICES_MAX && !b; i++)
		if (c->gpu.dev->busy[i].used && c->gpu.dev->busy[i].device == device)
			b = &c->gpu.dev->busy[i];
	if (!b || !max)
		return 0;
	if (max > RT_GPU_BUSY_WINDOW_S)
		max = RT_GPU_BUSY_WINDOW_S;
	if (max > now_sec + 1)
		max = (uint32_t)(now_sec + 1);
	sec = now_sec + 1 - max;
	if (first_sec)
		*first_sec = sec;
	for (n = 0; n < max; n++, sec++) {
		lo = sec * NS_PER_S;
		hi = sec == now_sec ? c->now : lo + NS_PER_S;
		busy_ns[n] = busy_in(b, lo, hi > lo ? hi : lo + 1);
	}
	return n;
}

/* ---- records -------------------------------------------------------------------- */

/* The join tables, made by the first CUPTI record; NULL (counted) without memory. */
static struct rt_gpu_dev *dev_of(struct rt_correlator *c)
{
	if (!c->gpu.dev) {
		c->gpu.dev = calloc(1, sizeof(*c->gpu.dev));
		if (!c->gpu.dev)
			c->gpu.st.dev_nomem++;
	}
	return c->gpu.dev;
}

void rt_gpu_device_free(struct rt_correlator *c)
{
	free(c->gpu.dev);
	c->gpu.dev = NULL;
}

/* Calls whose DRIVER record is followed by device records of the same id. */
static bool queues_work(uint16_t api_class)
{
	return api_class == RT_CUDA_LAUNCH || api_class == RT_CUDA_GRAPH_LAUNCH ||
	       api_class == RT_CUDA_MEMCPY || api_class == RT_CUDA_MEMCPY_ASYNC ||
	       api_class == RT_CUDA_MEMSET;
}

/*
 * The owners as of the call's entry: the record is applied at its return,
 * and a request fully received in between cannot have had work queued by
 * this call. (The caller's own markers and I/O cannot change while it is
 * inside the call.)
 */
static uint32_t at_entry(struct rt_gpu_who *who, uint64_t enter)
{
	uint32_t i, m = 0;

	who->weight_sum = 0;
	for (i = 0; i < who->n; i++) {
		struct rt_req *r = who->req[i];

		if (!r->span.received_ns || r->span.received_ns <= enter) {
			who->req[m] = r;
			who->w[m] = who->w[i];
			who->weight_sum += who->w[i];
			m++;
		}
	}
	who->n = m;
	return m;
}

void rt_gpu_device_on_driver(struct rt_correlator *c, const struct rt_ev_cuda_api *e)
{
	struct rt_gpu_dev *d = dev_of(c);
	struct rt_gpu_stats *st = &c->gpu.st;
	struct rt_gpu_who who;
	struct rt_gpu_dev_call *k;
	struct ix x;
	uint32_t n, idx;

	if (!d)
		return;
	x = calls_ix(d);
	expire(c);
	if (e->api_class > RT_CUDA_WAIT_EVENT || e->copy_kind > RT_COPY_H2H ||
	    e->enter_ns > e->hdr.ts_ns || e->corr_id > CORR_MAX) {
		st->dev_invalid++;
		return;
	}
	if (!queues_work(e->api_class))
		return; /* syncs and waits: their SYNC records are not device work */
	rt_gpu_owners(c, &e->hdr, &who);
	n = at_entry(&who, e->enter_ns);
	if (d->calls_len == RT_GPU_DEV_CALLS_MAX)
		call_pop(c, true);
	idx = (d->calls_tail + d->calls_len) % RT_GPU_DEV_CALLS_MAX;
	d->calls_len++;
	k = &d->calls[idx];
	memset(k, 0, sizeof(*k));
	k->key = key_of(e->hdr.source, e->corr_id);
	k->corr = e->corr_id;
	k->ts = e->hdr.ts_ns;
	k->source = e->hdr.source;
	k->pid = e->hdr.pid;
	k->used = 1;
	if (n)
		k->snap = snap_get(d, st, &who, &k->snap_gen);
	/* a repeated id (a wrapped counter) names the newer call from now on */
	ix_put(&x, k->key, idx + 1);
	st->dev_calls++;
	release_held(c, k);
}

void rt_gpu_device_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev)
{
	struct rt_gpu_stats *st = &c->gpu.st;
	struct rt_gpu_dev_call *k;
	uint64_t end, corr, dur;
	uint32_t device;

	switch (ev->kind) {
	case RT_EV_GPU_KERNEL: {
		const struct rt_ev_gpu_kernel *g = (const void *)ev;

		if (ev->size < sizeof(*g))
			goto invalid;
		end = g->end_ns;
		corr = g->corr_id;
		device = g->device;
		break;
	}
	case RT_EV_GPU_MEMCPY: {
		const struct rt_ev_gpu_memcpy *g = (const void *)ev;

		if (ev->size < sizeof(*g) || g->copy_kind > RT_COPY_H2H)
			goto invalid;
		end = g->end_ns;
		corr = g->corr_id;
		device = g->device;
		break;
	}
	case RT_EV_GPU_MEMSET: {
		const struct rt_ev_gpu_memset *g = (const void *)ev;

		if (ev->size < sizeof(*g))
			goto invalid;
		end = g->end_ns;
		corr = g->corr_id;
		device = g->device;
		break;
	}
	default:
		return; /* SYNC, EXT_CORR: not device work (counted by gpu.c) */
	}
	if (!dev_of(c))
		return;
	expire(c);
	st->dev_records++;
	if (end < ev->ts_ns || corr > CORR_MAX)
		goto invalid;
	dur = end - ev->ts_ns;
	if (dur > RT_GPU_WAIT_MAX_NS) {
		dur = RT_GPU_WAIT_MAX_NS;
		end = ev->ts_ns + dur;
		st->dev_clamped++;
	}
	if (ev->kind == RT_EV_GPU_KERNEL)
		busy_add(c, ev->pid, device, ev->ts_ns, end);
	if (!corr) {
		st->dev_no_corr++;
		st->dev_unattributed_ns += (int64_t)dur;
		return;
	}
	k = call_find(c->gpu.dev, ev->source, corr);
	if (k)
		charge(c, k, ev->kind, dur);
	else
		hold(c, ev, corr, end);
	return;
invalid:
	st->dev_invalid++;
}
