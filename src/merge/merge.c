/* SPDX-License-Identifier: BSD-2-Clause */
#include "merge/merge.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Slab: records are released in time order, not arrival order, so a ring
 * would be pinned by one old record. Size classes of fixed slots instead,
 * carved from aligned chunks; an empty chunk returns to a shared pool, so
 * memory moves between classes. Chunks are only freed with the merge.
 */
#define CHUNK_SIZE (128 * 1024)
#define CHUNK_HDR 64
#define N_CLASSES 37 /* see init_classes() */
#define MIN_MAX_BYTES (1024 * 1024)
#define HEAP_INIT 1024

struct chunk {
	struct chunk *next, *prev; /* class's partial list, or the pool (next only) */
	void *free; /* freed slots, linked through their first word */
	unsigned int used; /* slots handed out */
	unsigned int carved; /* slots ever handed out since the chunk was (re)assigned */
	unsigned int total;
	unsigned int cls;
	bool listed; /* in its class's partial list */
};

_Static_assert(sizeof(struct chunk) <= CHUNK_HDR, "chunk header");

struct size_class {
	unsigned int slot; /* bytes */
	struct chunk *partial; /* chunks with a free or uncarved slot */
};

/*
 * 16 bytes, so that the four children of a node share a cache line. The
 * arrival sequence that breaks ties lives in the slot, before the record:
 * equal timestamps are rare, so it is seldom read.
 */
struct entry {
	__u64 ts;
	struct rt_event_hdr *rec;
};

_Static_assert(sizeof(struct entry) == 16, "heap entry");

#define SLOT_HDR sizeof(__u64) /* arrival sequence */
#define HEAP_PAD 3

/*
 * Runs: most records come in time order per source, or in a few
 * interleaved ordered streams (one per CPU of a round, a late batch). A
 * record no older than the newest record of some run is appended to the
 * run whose newest is the closest below it, in O(1) and without touching
 * the heap; the rest go to the heap. Each run is sorted by (ts, arrival),
 * so the oldest held record is the least of the heap's top and the runs'
 * heads: the release order is exactly the heap's alone.
 */
#define N_RUNS 16
#define RUN_INIT 256

struct run {
	struct entry *e; /* ring of cap entries, a power of two */
	size_t cap, head, n;
	__u64 tail_ts; /* ts of the newest entry */
};

struct source {
	__u32 id;
	__u64 wm;
};

struct rt_merge {
	size_t max_pending, max_chunks, max_sources;
	/* slab */
	struct size_class cls[N_CLASSES];
	unsigned char cls_of[(RT_EVENT_MAX + SLOT_HDR) / 8 + 1]; /* slot size / 8 -> class */
	struct chunk **chunks; /* every chunk allocated, for free() */
	size_t n_chunks;
	struct chunk *pool;
	size_t n_pool;
	int want_cls; /* a push was refused for this class: drain makes room (-1: none) */
	/* held records */
	struct entry *heap;
	void *heap_mem;
	size_t heap_n, heap_cap;
	struct run runs[N_RUNS];
	size_t run_n; /* entries in all runs */
	int last_run; /* the run the previous record went to */
	struct rt_event_hdr **late;
	size_t late_n, late_cap;
	__u64 seq;
	__u64 horizon;
	/* sources: dense array plus an open-addressing index (slot = array index + 1) */
	struct source *src;
	size_t n_src;
	unsigned int *idx;
	unsigned int idx_mask;
	__u64 min_wm;
	bool min_dirty;
	struct rt_merge_stats st;
};

/* ---- slab ---------------------------------------------------------------- */

/* 8-byte steps up to 64, then four steps per doubling: at most 25% slack. */
static void init_classes(struct rt_merge *m)
{
	unsigned int c = 0, size, p, k, s;

	for (size = 32; size <= 64; size += 8)
		m->cls[c++].slot = size;
	for (p = 64; p < RT_EVENT_MAX; p *= 2)
		for (k = 1; k <= 4; k++)
			m->cls[c++].slot = p + k * p / 4;
	m->cls[c - 1].slot = RT_EVENT_MAX + SLOT_HDR; /* the largest record and its sequence */
	assert(c == N_CLASSES);
	c = 0;
	for (s = 0; s <= (RT_EVENT_MAX + SLOT_HDR) / 8; s++) {
		while (m->cls[c].slot < s * 8)
			c++;
		m->cls_of[s] = c;
	}
}

static void list_add(struct size_class *sc, struct chunk *ch)
{
	ch->prev = NULL;
	ch->next = sc->partial;
	if (sc->partial)
		sc->partial->prev = ch;
	sc->partial = ch;
	ch->listed = true;
}

static void list_del(struct size_class *sc, struct chunk *ch)
{
	if (ch->prev)
		ch->prev->next = ch->next;
	else
		sc->partial = ch->next;
	if (ch->next)
		ch->next->prev = ch->prev;
	ch->listed = false;
}

static bool class_has_room(const struct rt_merge *m, unsigned int c)
{
	return m->cls[c].partial || m->pool || m->n_chunks < m->max_chunks;
}

static struct chunk *chunk_get(struct rt_merge *m, unsigned int c)
{
	struct chunk *ch = m->pool;

	if (ch) {
		m->pool = ch->next;
		m->n_pool--;
	} else {
		if (m->n_chunks >= m->max_chunks)
			return NULL;
		ch = aligned_alloc(CHUNK_SIZE, CHUNK_SIZE);
		if (!ch)
			return NULL;
		m->chunks[m->n_chunks++] = ch;
	}
	ch->free = NULL;
	ch->used = 0;
	ch->carved = 0;
	ch->cls = c;
	ch->total = (CHUNK_SIZE - CHUNK_HDR) / m->cls[c].slot;
	list_add(&m->cls[c], ch);
	return ch;
}

static void *slot_alloc(struct rt_merge *m, unsigned int c)
{
	struct size_class *sc = &m->cls[c];
	struct chunk *ch = sc->partial;
	void *p;

	if (!ch) {
		ch = chunk_get(m, c);
		if (!ch)
			return NULL;
	}
	if (ch->free) {
		p = ch->free;
		memcpy(&ch->free, p, sizeof(void *));
	} else {
		p = (char *)ch + CHUNK_HDR + (size_t)ch->carved * sc->slot;
		ch->carved++;
	}
	if (++ch->used == ch->total)
		list_del(sc, ch);
	return p;
}

static void slot_free(struct rt_merge *m, void *p)
{
	struct chunk *ch = (struct chunk *)((uintptr_t)p & ~(uintptr_t)(CHUNK_SIZE - 1));
	struct size_class *sc = &m->cls[ch->cls];

	memcpy(p, &ch->free, sizeof(void *));
	ch->free = p;
	if (!ch->listed)
		list_add(sc, ch);
	if (--ch->used == 0) {
		list_del(sc, ch);
		ch->next = m->pool;
		m->pool = ch;
		m->n_pool++;
	}
}

/* ---- 4-ary heap of (ts, arrival) ------------------------------------------- */

static inline __u64 seq_of(const struct rt_event_hdr *rec)
{
	return ((const __u64 *)rec)[-1];
}

static inline bool before(const struct entry *a, const struct entry *b)
{
	return a->ts < b->ts || (a->ts == b->ts && seq_of(a->rec) < seq_of(b->rec));
}

static void heap_push(struct rt_merge *m, struct entry e)
{
	size_t i = m->heap_n++, parent;

	while (i) {
		parent = (i - 1) / 4;
		if (!before(&e, &m->heap[parent]))
			break;
		m->heap[i] = m->heap[parent];
		i = parent;
	}
	m->heap[i] = e;
}

/* Removes the top; prefetches the next one's record, which the caller reads soon. */
static struct rt_event_hdr *heap_pop(struct rt_merge *m)
{
	struct entry top = m->heap[0], last = m->heap[--m->heap_n];
	size_t i = 0, n = m->heap_n, c, j, best, end;

	while ((c = 4 * i + 1) < n) {
		best = c;
		end = c + 4 < n ? c + 4 : n;
		for (j = c + 1; j < end; j++)
			if (before(&m->heap[j], &m->heap[best]))
				best = j;
		if (!before(&m->heap[best], &last))
			break;
		m->heap[i] = m->heap[best];
		i = best;
	}
	if (n) {
		m->heap[i] = last;
		__builtin_prefetch(m->heap[0].rec);
	}
	return top.rec;
}

/* The run a record of time ts goes to (one with room made for it), or -1: the heap. */
static int run_for(struct rt_merge *m, __u64 ts)
{
	int i, best = -1, empty = -1;

	/* a stream in order stays on its run without looking at the others */
	if (m->runs[m->last_run].n && m->runs[m->last_run].tail_ts <= ts)
		return m->last_run;
	for (i = 0; i < N_RUNS; i++) {
		const struct run *r = &m->runs[i];

		if (!r->n) {
			if (empty < 0)
				empty = i;
		} else if (r->tail_ts <= ts && (best < 0 || r->tail_ts > m->runs[best].tail_ts)) {
			best = i;
		}
	}
	return best >= 0 ? best : empty;
}

static int run_reserve(struct run *r)
{
	size_t cap, i;
	struct entry *e;

	if (r->n < r->cap)
		return 0;
	cap = r->cap ? 2 * r->cap : RUN_INIT;
	e = malloc(cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < r->n; i++)
		e[i] = r->e[(r->head + i) & (r->cap - 1)];
	free(r->e);
	r->e = e;
	r->cap = cap;
	r->head = 0;
	return 0;
}

static void run_push(struct rt_merge *m, struct run *r, struct entry e)
{
	r->e[(r->head + r->n) & (r->cap - 1)] = e;
	r->n++;
	r->tail_ts = e.ts;
	m->run_n++;
	m->last_run = (int)(r - m->runs);
}

/* Where the oldest held record is: a run's index, N_RUNS for the heap, -1 for none. */
static int oldest(const struct rt_merge *m)
{
	const struct entry *best = m->heap_n ? &m->heap[0] : NULL;
	int i, where = best ? N_RUNS : -1;

	if (!m->run_n)
		return where;
	for (i = 0; i < N_RUNS; i++) {
		const struct run *r = &m->runs[i];

		if (r->n && (!best || before(&r->e[r->head], best))) {
			best = &r->e[r->head];
			where = i;
		}
	}
	return where;
}

static __u64 oldest_ts(const struct rt_merge *m, int where)
{
	const struct run *r = &m->runs[where < N_RUNS ? where : 0];

	return where < N_RUNS ? r->e[r->head].ts : m->heap[0].ts;
}

static struct rt_event_hdr *take(struct rt_merge *m, int where)
{
	struct run *r;
	struct entry e;

	if (where == N_RUNS)
		return heap_pop(m);
	r = &m->runs[where];
	e = r->e[r->head];
	r->head = (r->head + 1) & (r->cap - 1);
	r->n--;
	m->run_n--;
	if (r->n)
		__builtin_prefetch(r->e[r->head].rec);
	return e.rec;
}

static size_t next_cap(const struct rt_merge *m, size_t cap)
{
	size_t n = cap ? 2 * cap : HEAP_INIT;

	return n < m->max_pending ? n : m->max_pending;
}

/*
 * The heap and the late list grow geometrically up to max_pending: no
 * allocation once there. The heap starts HEAP_PAD entries into a 64-byte
 * aligned block, so that children 4i+1..4i+4 fill exactly one cache line.
 */
static int reserve(struct rt_merge *m, bool late)
{
	struct entry *h;
	size_t n, bytes;
	void *p;

	if (late) {
		if (m->late_n < m->late_cap)
			return 0;
		n = next_cap(m, m->late_cap);
		p = realloc(m->late, n * sizeof(*m->late));
		if (!p)
			return -ENOMEM;
		m->late = p;
		m->late_cap = n;
		return 0;
	}
	if (m->heap_n < m->heap_cap)
		return 0;
	n = next_cap(m, m->heap_cap);
	bytes = ((n + HEAP_PAD) * sizeof(*h) + 63) & ~(size_t)63;
	p = aligned_alloc(64, bytes);
	if (!p)
		return -ENOMEM;
	h = (struct entry *)p + HEAP_PAD;
	if (m->heap_n)
		memcpy(h, m->heap, m->heap_n * sizeof(*h));
	free(m->heap_mem);
	m->heap_mem = p;
	m->heap = h;
	m->heap_cap = n;
	return 0;
}

/* ---- sources ---------------------------------------------------------------- */

static unsigned int hash_id(const struct rt_merge *m, __u32 id)
{
	return (id * 2654435761u) & m->idx_mask;
}

static struct source *find_source(const struct rt_merge *m, __u32 id)
{
	unsigned int i = hash_id(m, id), v;

	while ((v = m->idx[i])) {
		if (m->src[v - 1].id == id)
			return &m->src[v - 1];
		i = (i + 1) & m->idx_mask;
	}
	return NULL;
}

static void index_insert(struct rt_merge *m, size_t pos)
{
	unsigned int i = hash_id(m, m->src[pos].id);

	while (m->idx[i])
		i = (i + 1) & m->idx_mask;
	m->idx[i] = pos + 1;
}

static struct source *new_source(struct rt_merge *m, __u32 id, __u64 wm)
{
	struct source *s;

	if (m->n_src >= m->max_sources)
		return NULL;
	s = &m->src[m->n_src];
	s->id = id;
	s->wm = wm;
	index_insert(m, m->n_src++);
	m->st.sources = m->n_src;
	m->min_dirty = true;
	return s;
}

int rt_merge__add_source(struct rt_merge *m, __u32 id)
{
	if (find_source(m, id))
		return -EEXIST;
	return new_source(m, id, 0) ? 0 : -ENOSPC;
}

int rt_merge__remove_source(struct rt_merge *m, __u32 id)
{
	struct source *s = find_source(m, id);
	size_t i;

	if (!s)
		return -ENOENT;
	*s = m->src[--m->n_src];
	/* removal is rare: rebuild the index rather than handle tombstones */
	memset(m->idx, 0, (m->idx_mask + 1) * sizeof(*m->idx));
	for (i = 0; i < m->n_src; i++)
		index_insert(m, i);
	m->st.sources = m->n_src;
	m->min_dirty = true;
	return 0;
}

int rt_merge__source_watermark(const struct rt_merge *m, __u32 id, __u64 *wm_ns)
{
	const struct source *s = find_source(m, id);

	if (!s)
		return -ENOENT;
	*wm_ns = s->wm;
	return 0;
}

static __u64 min_watermark(struct rt_merge *m)
{
	__u64 w = UINT64_MAX;
	size_t i;

	if (m->min_dirty) {
		for (i = 0; i < m->n_src; i++)
			if (m->src[i].wm < w)
				w = m->src[i].wm;
		m->min_wm = w;
		m->min_dirty = false;
	}
	return m->min_wm;
}

/* ---- lifetime ------------------------------------------------------------------ */

struct rt_merge *rt_merge__new(const struct rt_merge_opts *opts)
{
	struct rt_merge *m;
	size_t max_bytes, idx_n = 8;
	int err;

	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->max_pending =
		opts && opts->max_pending ? opts->max_pending : RT_MERGE_MAX_PENDING_DEFAULT;
	max_bytes = opts && opts->max_bytes ? opts->max_bytes : RT_MERGE_MAX_BYTES_DEFAULT;
	m->max_sources =
		opts && opts->max_sources ? opts->max_sources : RT_MERGE_MAX_SOURCES_DEFAULT;
	if (max_bytes < MIN_MAX_BYTES || m->max_sources > UINT_MAX / 4) {
		err = -EINVAL;
		goto cleanup;
	}
	m->max_chunks = max_bytes / CHUNK_SIZE;
	m->want_cls = -1;
	init_classes(m);
	while (idx_n < 2 * m->max_sources)
		idx_n *= 2;
	m->idx_mask = idx_n - 1;
	m->chunks = calloc(m->max_chunks, sizeof(*m->chunks));
	m->src = calloc(m->max_sources, sizeof(*m->src));
	m->idx = calloc(idx_n, sizeof(*m->idx));
	if (!m->chunks || !m->src || !m->idx) {
		err = -ENOMEM;
		goto cleanup;
	}
	return m;

cleanup:
	rt_merge__free(m);
	errno = -err;
	return NULL;
}

void rt_merge__free(struct rt_merge *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n_chunks; i++)
		free(m->chunks[i]);
	free(m->chunks);
	free(m->heap_mem);
	for (i = 0; i < N_RUNS; i++)
		free(m->runs[i].e);
	free(m->late);
	free(m->src);
	free(m->idx);
	free(m);
}

/* ---- push and release --------------------------------------------------------------- */

static int refuse(struct rt_merge *m, int err)
{
	m->st.refused++;
	return err;
}

int rt_merge__push(struct rt_merge *m, const struct rt_event_hdr *ev)
{
	struct rt_event_hdr *rec;
	struct source *s;
	unsigned int c;
	__u64 *slot;
	bool late;
	int run;

	if (ev->size < sizeof(*ev) || ev->size > RT_EVENT_MAX)
		return -EINVAL;
	s = find_source(m, ev->source);
	if (!s) {
		s = new_source(m, ev->source, ev->ts_ns);
		if (!s)
			return refuse(m, -ENOSPC);
		m->st.auto_sources++;
	}
	if (ev->kind == RT_EV_WATERMARK) {
		if (ev->ts_ns < s->wm) {
			m->st.watermark_regressions++;
		} else if (ev->ts_ns > s->wm) {
			s->wm = ev->ts_ns;
			m->min_dirty = true;
		}
		m->st.watermarks++;
		return 0;
	}

	c = m->cls_of[(ev->size + SLOT_HDR + 7) / 8];
	if (m->st.pending >= m->max_pending || !class_has_room(m, c)) {
		m->want_cls = c;
		return refuse(m, -ENOBUFS);
	}
	late = ev->ts_ns < m->horizon;
	run = late ? -1 : run_for(m, ev->ts_ns);
	if (run >= 0 && run_reserve(&m->runs[run]))
		run = -1;
	if (run < 0 && reserve(m, late))
		return refuse(m, -ENOMEM);
	slot = slot_alloc(m, c);
	if (!slot)
		return refuse(m, -ENOMEM);
	*slot = m->seq;
	rec = (struct rt_event_hdr *)(slot + 1);
	memcpy(rec, ev, ev->size);
	if (late) {
		m->late[m->late_n++] = rec;
		m->st.late++;
	} else if (run >= 0) {
		run_push(m, &m->runs[run], (struct entry){ .ts = ev->ts_ns, .rec = rec });
	} else {
		heap_push(m, (struct entry){ .ts = ev->ts_ns, .rec = rec });
	}
	m->seq++;
	m->st.pushed++;
	if (++m->st.pending > m->st.pending_max)
		m->st.pending_max = m->st.pending;
	return 0;
}

static int release(struct rt_merge *m, struct rt_event_hdr *rec, unsigned int flags, rt_merge_fn fn,
		   void *ctx)
{
	int err;

	if (!(flags & RT_MERGE_LATE) && rec->ts_ns > m->horizon)
		m->horizon = rec->ts_ns;
	if (flags & RT_MERGE_FORCED)
		m->st.forced++;
	err = fn(rec, flags, ctx);
	slot_free(m, (__u64 *)rec - 1);
	m->st.pending--;
	m->st.released++;
	return err < 0 ? err : 0;
}

static int release_late(struct rt_merge *m, rt_merge_fn fn, void *ctx, size_t *n)
{
	size_t i;
	int err = 0;

	for (i = 0; i < m->late_n && !err; i++, (*n)++)
		err = release(m, m->late[i], RT_MERGE_LATE, fn, ctx);
	/* on error, keep the ones not delivered, in order */
	if (i < m->late_n)
		memmove(m->late, m->late + i, (m->late_n - i) * sizeof(*m->late));
	m->late_n -= i;
	return err;
}

static int ret_count(size_t n)
{
	return n > INT_MAX ? INT_MAX : (int)n;
}

int rt_merge__drain(struct rt_merge *m, rt_merge_fn fn, void *ctx)
{
	size_t n = 0;
	__u64 w;
	int err, where;

	err = release_late(m, fn, ctx, &n);
	if (err)
		return err;
	w = min_watermark(m);
	while ((where = oldest(m)) >= 0 && oldest_ts(m, where) < w) {
		err = release(m, take(m, where), 0, fn, ctx);
		n++;
		if (err)
			return err;
	}
	/* with no source left, nothing is promised: the horizon stays at what was released */
	if (m->n_src && w > m->horizon)
		m->horizon = w;
	if (m->want_cls >= 0) {
		while ((where = oldest(m)) >= 0 &&
		       (m->st.pending >= m->max_pending || !class_has_room(m, m->want_cls))) {
			err = release(m, take(m, where), RT_MERGE_FORCED, fn, ctx);
			n++;
			if (err)
				return err;
		}
		m->want_cls = -1;
	}
	return ret_count(n);
}

int rt_merge__flush(struct rt_merge *m, rt_merge_fn fn, void *ctx)
{
	size_t n = 0;
	int err, where;

	err = release_late(m, fn, ctx, &n);
	if (err)
		return err;
	while ((where = oldest(m)) >= 0) {
		err = release(m, take(m, where), 0, fn, ctx);
		n++;
		if (err)
			return err;
	}
	m->want_cls = -1;
	return ret_count(n);
}

int rt_merge__push_release(struct rt_merge *m, const struct rt_event_hdr *ev, rt_merge_fn fn,
			   void *ctx)
{
	int err = rt_merge__push(m, ev);

	if (err != -ENOBUFS)
		return err;
	err = rt_merge__drain(m, fn, ctx);
	if (err < 0)
		return err;
	return rt_merge__push(m, ev);
}

__u64 rt_merge__horizon(const struct rt_merge *m)
{
	return m->horizon;
}

void rt_merge__stats(const struct rt_merge *m, struct rt_merge_stats *st)
{
	*st = m->st;
	st->pending_bytes = (__u64)(m->n_chunks - m->n_pool) * CHUNK_SIZE;
}
