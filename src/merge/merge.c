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
 * Records are copied, in arrival order, into 128 KiB chunks by a bump
 * pointer; each chunk counts its live records and goes back to a pool when
 * the last is released. Allocation is a sequential write (no free list to
 * chase through cold slots) and, since arrival order is close to time
 * order, the release reads the chunks nearly in order too. A chunk is
 * pinned by its oldest held record: the byte bound counts whole chunks, and
 * a push that finds none forces the oldest records out (drain).
 */
#define CHUNK_SIZE (128 * 1024)
#define CHUNK_HDR 64
#define MIN_MAX_BYTES (1024 * 1024)
#define HEAP_INIT 1024

struct chunk {
	struct chunk *next; /* the pool */
	unsigned int used; /* records held */
	unsigned int carved; /* bytes handed out since the chunk was (re)used */
};

_Static_assert(sizeof(struct chunk) <= CHUNK_HDR, "chunk header");

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
 * Calendar: almost every held record lies within a few hundred ms of the
 * horizon, so it is appended, unsorted, to the bucket of its time: O(1),
 * no comparison, and the bucket's entries sit together in memory. A bucket
 * is sorted only when the release reaches it, by a sort stable on ts, so
 * that arrival order breaks ties exactly as the heap does. Records outside
 * the calendar's window go to the heap, and the release takes the lesser of
 * the two heads: the order is (ts, arrival), whatever the mix.
 * A bucket is ~1 ms: at tens of thousands of records a second a bucket
 * fills a few cache lines, where 65 us buckets cost a cold line per few
 * records (docs/benchmarks.md, "Fourth pass"); the window stays 537 ms.
 */
#define CAL_SHIFT 20 /* 1.05 ms buckets */
#define CAL_N 512 /* a window of 537 ms */
#define CAL_KEEP 1024 /* entries of a bucket's array kept when it empties (16 KiB) */
#define SORT_RUN 16 /* insertion-sorted blocks before merging */

struct bucket {
	struct entry *e;
	unsigned int n, cap;
};

struct source {
	__u32 id;
	__u64 wm;
};

struct rt_merge {
	size_t max_pending, max_chunks, max_sources;
	/* record memory */
	struct chunk **chunks; /* every chunk allocated, for free() */
	size_t n_chunks;
	struct chunk *pool;
	size_t n_pool;
	struct chunk *bump; /* the chunk records are copied into now */
	size_t want; /* a push of this many bytes was refused: drain makes room (0: none) */
	/* held records */
	struct entry *heap;
	void *heap_mem;
	size_t heap_n, heap_cap;
	struct bucket *cal; /* CAL_N, bucket b at cal[b % CAL_N] */
	__u64 cal_base; /* first bucket number the ring holds */
	size_t cal_n; /* entries in the ring */
	/* the bucket being released, sorted; cur_no is its number */
	struct entry *cur, *scratch;
	size_t cur_n, cur_i, cur_cap, scratch_cap;
	__u64 cur_no;
	bool cur_open;
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

/* ---- record memory -------------------------------------------------------- */

/* bytes of a record and its arrival sequence */
static inline size_t rec_need(size_t size)
{
	return SLOT_HDR + ((size + 7) & ~(size_t)7);
}

static inline struct chunk *chunk_of(const void *p)
{
	return (struct chunk *)((uintptr_t)p & ~(uintptr_t)(CHUNK_SIZE - 1));
}

static bool bump_fits(const struct rt_merge *m, size_t need)
{
	const struct chunk *ch = m->bump;

	return ch && (!ch->used || ch->carved + need <= CHUNK_SIZE - CHUNK_HDR);
}

static bool has_room(const struct rt_merge *m, size_t need)
{
	return bump_fits(m, need) || m->pool || m->n_chunks < m->max_chunks;
}

static void *rec_alloc(struct rt_merge *m, size_t need)
{
	struct chunk *ch = m->bump;
	void *p;

	if (ch && !ch->used)
		ch->carved = 0; /* everything in it was released: start over */
	if (!ch || ch->carved + need > CHUNK_SIZE - CHUNK_HDR) {
		ch = m->pool;
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
		ch->used = 0;
		ch->carved = 0;
		/* the one left behind goes back when its last record does */
		m->bump = ch;
	}
	p = (char *)ch + CHUNK_HDR + ch->carved;
	ch->carved += (unsigned int)need;
	ch->used++;
	return p;
}

static void rec_free(struct rt_merge *m, void *p)
{
	struct chunk *ch = chunk_of(p);

	if (--ch->used == 0 && ch != m->bump) {
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

/* ---- calendar ------------------------------------------------------------------ */

static int grow_entries(struct entry **e, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 16;
	struct entry *p;

	while (n < need)
		n *= 2;
	if (n == *cap)
		return 0;
	p = realloc(*e, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*e = p;
	*cap = n;
	return 0;
}

static void insertion_sort(struct entry *e, size_t n)
{
	size_t i, j;
	struct entry x;

	for (i = 1; i < n; i++) {
		x = e[i];
		for (j = i; j && e[j - 1].ts > x.ts; j--)
			e[j] = e[j - 1];
		e[j] = x;
	}
}

/*
 * Stable: insertion-sorted blocks, then merge passes between e and tmp. A
 * bucket is a few ordered stretches (one per CPU of a ring round, a late
 * batch), so a bucket already in order, the common case, costs one pass.
 */
static struct entry *stable_sort(struct entry *e, struct entry *tmp, size_t n)
{
	struct entry *src = e, *dst = tmp, *t;
	size_t i, w, lo, mid, hi, a, b, k;

	for (i = 1; i < n && e[i - 1].ts <= e[i].ts; i++)
		;
	if (i >= n)
		return e;
	for (i = 0; i < n; i += SORT_RUN)
		insertion_sort(e + i, n - i < SORT_RUN ? n - i : SORT_RUN);
	for (w = SORT_RUN; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			mid = lo + w < n ? lo + w : n;
			hi = lo + 2 * w < n ? lo + 2 * w : n;
			a = lo, b = mid, k = lo;
			if (mid < hi && src[mid - 1].ts <= src[mid].ts) {
				memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*src));
				continue;
			}
			while (a < mid && b < hi)
				dst[k++] = src[b].ts < src[a].ts ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		t = src, src = dst, dst = t;
	}
	return src;
}

/* Appends to the ring, or inserts into the open bucket; 1: neither (the heap's). */
static int cal_push(struct rt_merge *m, struct entry e)
{
	__u64 no = e.ts >> CAL_SHIFT;
	struct bucket *bk;
	size_t lo, hi, mid, cap;

	if (m->cur_open && no == m->cur_no) {
		if (grow_entries(&m->cur, &m->cur_cap, m->cur_n + 1))
			return -ENOMEM;
		/* after every entry of time <= ts: it arrived last */
		lo = m->cur_i, hi = m->cur_n;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (m->cur[mid].ts <= e.ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(m->cur + lo + 1, m->cur + lo, (m->cur_n - lo) * sizeof(e));
		m->cur[lo] = e;
		m->cur_n++;
		return 0;
	}
	if (!m->cal_n && (!m->cur_open || m->cur_i == m->cur_n)) {
		/* nothing held in order: the window may move anywhere */
		m->cur_open = false;
		m->cal_base = no;
	}
	if (no < m->cal_base || no - m->cal_base >= CAL_N)
		return 1;
	bk = &m->cal[no & (CAL_N - 1)];
	if (bk->n == bk->cap) {
		cap = bk->cap;
		if (grow_entries(&bk->e, &cap, bk->n + 1u))
			return -ENOMEM;
		bk->cap = (unsigned int)cap;
	}
	bk->e[bk->n++] = e;
	m->cal_n++;
	return 0;
}

/* The ring's oldest entry, opening its next bucket when the open one is spent. */
static struct entry *cal_head(struct rt_merge *m)
{
	struct bucket *bk;
	struct entry *sorted, *t;
	size_t cap;

	if (m->cur_open && m->cur_i < m->cur_n)
		return &m->cur[m->cur_i];
	if (!m->cal_n)
		return NULL;
	while (!(bk = &m->cal[m->cal_base & (CAL_N - 1)])->n)
		m->cal_base++;
	if (m->scratch_cap < bk->n && grow_entries(&m->scratch, &m->scratch_cap, bk->n))
		insertion_sort(bk->e, bk->n); /* no room to merge: slow, still in order */
	/* the bucket's array becomes the open one; the spent one goes back */
	t = m->cur, cap = m->cur_cap;
	m->cur = bk->e, m->cur_cap = bk->cap, m->cur_n = bk->n, m->cur_i = 0;
	if (cap > CAL_KEEP) {
		free(t);
		t = NULL, cap = 0;
	}
	bk->e = t, bk->cap = (unsigned int)cap, bk->n = 0;
	m->cal_n -= m->cur_n;
	m->cur_no = m->cal_base++;
	m->cur_open = true;
	/* the next buckets' entries were written long ago: start loading them */
	bk = &m->cal[m->cal_base & (CAL_N - 1)];
	if (bk->n)
		__builtin_prefetch(bk->e);
	__builtin_prefetch(&m->cal[(m->cal_base + 1) & (CAL_N - 1)]);
	sorted = m->scratch_cap < m->cur_n ? m->cur : stable_sort(m->cur, m->scratch, m->cur_n);
	if (sorted != m->cur) {
		t = m->cur, cap = m->cur_cap;
		m->cur = m->scratch, m->cur_cap = m->scratch_cap;
		m->scratch = t, m->scratch_cap = cap;
	}
	return &m->cur[0];
}

/* The oldest held entry (NULL: none); *in_heap says where it is. */
static struct entry *oldest(struct rt_merge *m, bool *in_heap)
{
	struct entry *c = cal_head(m), *h = m->heap_n ? &m->heap[0] : NULL;

	*in_heap = h && (!c || before(h, c));
	return *in_heap ? h : c;
}

static struct rt_event_hdr *take(struct rt_merge *m, bool in_heap)
{
	struct rt_event_hdr *rec;
	size_t i;

	if (in_heap)
		return heap_pop(m);
	rec = m->cur[m->cur_i++].rec;
	/* the callback reads each record soon; most were written long ago */
	i = m->cur_i + 6;
	if (i < m->cur_n) {
		__builtin_prefetch(m->cur[i].rec);
		__builtin_prefetch((char *)m->cur[i].rec + 64);
	}
	return rec;
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
	while (idx_n < 2 * m->max_sources)
		idx_n *= 2;
	m->idx_mask = idx_n - 1;
	m->chunks = calloc(m->max_chunks, sizeof(*m->chunks));
	m->src = calloc(m->max_sources, sizeof(*m->src));
	m->idx = calloc(idx_n, sizeof(*m->idx));
	m->cal = calloc(CAL_N, sizeof(*m->cal));
	if (!m->chunks || !m->src || !m->idx || !m->cal) {
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
	for (i = 0; m->cal && i < CAL_N; i++)
		free(m->cal[i].e);
	free(m->cal);
	free(m->cur);
	free(m->scratch);
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
	__u64 *slot;
	size_t need;
	bool late;
	int where = 1;

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

	need = rec_need(ev->size);
	if (m->st.pending >= m->max_pending || !has_room(m, need)) {
		m->want = need;
		return refuse(m, -ENOBUFS);
	}
	late = ev->ts_ns < m->horizon;
	/* room first, so that a refusal leaves nothing half-queued */
	if (reserve(m, late))
		return refuse(m, -ENOMEM);
	slot = rec_alloc(m, need);
	if (!slot)
		return refuse(m, -ENOMEM);
	*slot = m->seq;
	rec = (struct rt_event_hdr *)(slot + 1);
	memcpy(rec, ev, ev->size);
	if (!late)
		where = cal_push(m, (struct entry){ .ts = ev->ts_ns, .rec = rec });
	if (late) {
		m->late[m->late_n++] = rec;
		m->st.late++;
	} else if (where > 0) {
		heap_push(m, (struct entry){ .ts = ev->ts_ns, .rec = rec });
	} else if (where < 0) {
		rec_free(m, slot);
		return refuse(m, -ENOMEM);
	}
	m->seq++;
	m->st.pushed++;
	if (++m->st.pending > m->st.pending_max)
		m->st.pending_max = m->st.pending;
	return 0;
}

/* ts is the record's, from its entry: the record itself is first read by fn */
static int release(struct rt_merge *m, struct rt_event_hdr *rec, __u64 ts, unsigned int flags,
		   rt_merge_fn fn, void *ctx)
{
	int err;

	if (!(flags & RT_MERGE_LATE) && ts > m->horizon)
		m->horizon = ts;
	if (flags & RT_MERGE_FORCED)
		m->st.forced++;
	err = fn(rec, flags, ctx);
	rec_free(m, (__u64 *)rec - 1);
	m->st.pending--;
	m->st.released++;
	return err < 0 ? err : 0;
}

static int release_late(struct rt_merge *m, rt_merge_fn fn, void *ctx, size_t *n)
{
	size_t i;
	int err = 0;

	for (i = 0; i < m->late_n && !err; i++, (*n)++)
		err = release(m, m->late[i], 0, RT_MERGE_LATE, fn, ctx);
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
	struct entry *e;
	size_t n = 0;
	bool in_heap;
	__u64 w, ts;
	int err;

	err = release_late(m, fn, ctx, &n);
	if (err)
		return err;
	w = min_watermark(m);
	while ((e = oldest(m, &in_heap)) && (ts = e->ts) < w) {
		err = release(m, take(m, in_heap), ts, 0, fn, ctx);
		n++;
		if (err)
			return err;
	}
	/* with no source left, nothing is promised: the horizon stays at what was released */
	if (m->n_src && w > m->horizon)
		m->horizon = w;
	if (m->want) {
		while ((e = oldest(m, &in_heap)) &&
		       (m->st.pending >= m->max_pending || !has_room(m, m->want))) {
			ts = e->ts;
			err = release(m, take(m, in_heap), ts, RT_MERGE_FORCED, fn, ctx);
			n++;
			if (err)
				return err;
		}
		m->want = 0;
	}
	return ret_count(n);
}

int rt_merge__flush(struct rt_merge *m, rt_merge_fn fn, void *ctx)
{
	struct entry *e;
	size_t n = 0;
	bool in_heap;
	__u64 ts;
	int err;

	err = release_late(m, fn, ctx, &n);
	if (err)
		return err;
	while ((e = oldest(m, &in_heap))) {
		ts = e->ts;
		err = release(m, take(m, in_heap), ts, 0, fn, ctx);
		n++;
		if (err)
			return err;
	}
	m->want = 0;
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
	/* the current chunk holds nothing once its records are gone */
	st->pending_bytes =
		(__u64)(m->n_chunks - m->n_pool - (m->bump && !m->bump->used)) * CHUNK_SIZE;
}

const struct rt_event_hdr *rt_merge__ahead(const struct rt_merge *m, unsigned int k)
{
	size_t i = m->cur_i - 1 + k;

	return m->cur_open && m->cur_i && i < m->cur_n ? m->cur[i].rec : NULL;
}
