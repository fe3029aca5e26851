// SPDX-License-Identifier: BSD-2-Clause
/*
 * Connections: socket records → HTTP parsers → request boundaries.
 *
 * The parsers call back while consuming one syscall's bytes; the context
 * they are handed (struct io) holds that syscall's timestamps, so each
 * boundary gets the instant the span contract asks for (a read's exit, a
 * write's entry or exit).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "vllm.h"

static uint64_t conn_key(uint32_t pid, int32_t fd)
{
	return ((uint64_t)pid << 32) | (uint32_t)fd;
}

/* Appends src at *pos in buf[0..len) as snprintf would, truncating. */
static void put_str(char *buf, size_t len, size_t *pos, const char *src)
{
	size_t l = strlen(src);

	if (*pos + 1 >= len)
		return;
	if (l > len - 1 - *pos)
		l = len - 1 - *pos;
	memcpy(buf + *pos, src, l);
	*pos += l;
	buf[*pos] = '\0';
}

/* inet_ntop(AF_INET) as it writes it, without the sprintf it makes */
static void fmt_ipv4(char *buf, const uint8_t *b)
{
	char *q = buf;
	int i;

	for (i = 0; i < 4; i++) {
		unsigned int v = b[i];

		if (v >= 100)
			*q++ = (char)('0' + v / 100);
		if (v >= 10)
			*q++ = (char)('0' + v / 10 % 10);
		*q++ = (char)('0' + v % 10);
		*q++ = i < 3 ? '.' : '\0';
	}
}

/*
 * "ip:port" or "[v6]:port" without snprintf's few hundred instructions:
 * once per connection, which with short connections is once per request.
 */
static void fmt_addr(char *buf, size_t len, const struct rt_sock_addr *a)
{
	char ip[INET6_ADDRSTRLEN] = "?", port[8], *q = port + sizeof(port);
	unsigned int v = a->port;
	size_t pos = 0;

	if (a->family == RT_AF_INET)
		fmt_ipv4(ip, a->addr);
	else if (a->family == RT_AF_INET6)
		inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
	*--q = '\0';
	do
		*--q = (char)('0' + v % 10);
	while (v /= 10);
	buf[0] = '\0';
	if (a->family == RT_AF_INET6)
		put_str(buf, len, &pos, "[");
	put_str(buf, len, &pos, ip);
	put_str(buf, len, &pos, a->family == RT_AF_INET6 ? "]:" : ":");
	put_str(buf, len, &pos, q);
}

static void describe(struct rt_conn *conn, const struct rt_sock_addr *client,
		     const struct rt_sock_addr *server)
{
	char a[56], b[56]; /* "[v6]:port" */
	size_t pos = 0;

	if (client->family == RT_AF_UNIX || server->family == RT_AF_UNIX) {
		snprintf(conn->desc, sizeof(conn->desc), "unix");
		return;
	}
	if (client->family != RT_AF_INET && client->family != RT_AF_INET6) {
		conn->desc[0] = '\0';
		return;
	}
	fmt_addr(a, sizeof(a), client);
	fmt_addr(b, sizeof(b), server);
	conn->desc[0] = '\0';
	put_str(conn->desc, sizeof(conn->desc), &pos, a);
	put_str(conn->desc, sizeof(conn->desc), &pos, "->");
	put_str(conn->desc, sizeof(conn->desc), &pos, b);
}

static struct rt_conn *conn_new(struct rt_correlator *c, uint32_t pid, int32_t fd, bool predates)
{
	struct rt_stream_opts so = { .predates = predates };
	struct rt_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	rt_stream_init(&conn->stream, &so);
	conn->serial = ++c->next_serial;
	conn->pid = pid;
	conn->fd = fd;
	conn->predates = predates;
	if (rt_hmap_put(&c->conns, conn_key(pid, fd), conn)) {
		c->st.dropped_conns++;
		free(conn);
		return NULL;
	}
	conn->pnext = rt_hmap_get(&c->conns_of, pid);
	conn->counted = !rt_hmap_put(&c->conns_of, pid, conn);
	if (!conn->counted) {
		conn->pnext = NULL;
		c->conns_of_lost = true;
	} else if (conn->pnext) {
		conn->pnext->pprev = conn;
	}
	return conn;
}

static void freeze(struct rt_correlator *c, struct rt_req *r, uint64_t ts)
{
	rt_pool_cut(c, ts); /* pools worked for r until its client left */
	rt_cpu_flush_for(c, r, ts);
	if (!r->frozen_ns)
		r->frozen_ns = ts;
}

/* Charge what threads hold for the connection's requests, up to ts, and
 * take no more for them. */
static void settle(struct rt_correlator *c, struct rt_conn *conn, uint64_t ts)
{
	struct rt_req *r;
	uint32_t i;

	if (conn->responding && (r = rt_req_get(c, conn->responding)))
		freeze(c, r, ts);
	for (i = 0; i < conn->n_fifo; i++)
		if ((r = rt_req_get(c, conn->fifo[i])))
			freeze(c, r, ts);
	if (conn->receiving && (r = rt_req_get(c, conn->receiving)))
		freeze(c, r, ts);
	if (conn->cut && (r = rt_req_get(c, conn->cut)))
		freeze(c, r, ts);
}

static void abort_all(struct rt_correlator *c, struct rt_conn *conn, uint64_t ts,
		      enum rt_outcome outcome)
{
	struct rt_req *r;
	uint32_t i;

	if (conn->peer_closed_ns && conn->peer_closed_ns < ts && outcome == RT_OUTCOME_ABORTED)
		ts = conn->peer_closed_ns; /* the abort happened when the client left */
	if (conn->responding && (r = rt_req_get(c, conn->responding)))
		rt_req_end(c, r, ts, outcome);
	conn->responding = 0;
	for (i = 0; i < conn->n_fifo; i++)
		if ((r = rt_req_get(c, conn->fifo[i])))
			rt_req_end(c, r, ts, outcome);
	conn->n_fifo = 0;
	rt_stream_abort(&conn->stream);
	if (conn->receiving && (r = rt_req_get(c, conn->receiving)))
		rt_req_end(c, r, ts, outcome);
	conn->receiving = 0;
	if (conn->cut && (r = rt_req_get(c, conn->cut)))
		rt_req_end(c, r, ts, outcome);
	conn->cut = 0;
	rt_cut_close(conn);
}

void rt_conn_free(struct rt_correlator *c, struct rt_conn *conn)
{
	if (!conn)
		return;
	if (conn->counted) {
		if (conn->pprev)
			conn->pprev->pnext = conn->pnext;
		else if (conn->pnext)
			rt_hmap_put(&c->conns_of, conn->pid,
				    conn->pnext); /* replaces: cannot fail */
		else
			rt_hmap_del(&c->conns_of, conn->pid);
		if (conn->pnext)
			conn->pnext->pprev = conn->pprev;
	}
	if (conn->end_key && rt_hmap_get(&c->ends, conn->end_key) == conn)
		rt_hmap_del(&c->ends, conn->end_key);
	rt_stream_fini(&conn->stream);
	rt_cut_close(conn);
	free(conn);
}

static void conn_close(struct rt_correlator *c, struct rt_conn *conn, uint64_t ts,
		       enum rt_outcome outcome)
{
	abort_all(c, conn, ts, outcome);
	rt_hmap_del(&c->conns, conn_key(conn->pid, conn->fd));
	rt_conn_free(c, conn);
}

/* ---- the two ends of a connection inside one service ------------------- */

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Key of the end whose own address is `self` and whose peer is `other`. */
static uint64_t end_key(const struct rt_sock_addr *self, const struct rt_sock_addr *other)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	static const uint8_t zero[16];

	if (self->family == RT_AF_UNIX) {
		/* socket inodes: both needed, or the end cannot be matched */
		if (!memcmp(self->addr, zero, 8) || !memcmp(other->addr, zero, 8))
			return 0;
		h = mix(h, self->addr, 8);
		h = mix(h, other->addr, 8);
	} else if (self->family == RT_AF_INET || self->family == RT_AF_INET6) {
		if (!self->port || !other->port)
			return 0;
		h = mix(h, self->addr, 16);
		h = mix(h, &self->port, 2);
		h = mix(h, other->addr, 16);
		h = mix(h, &other->port, 2);
	} else {
		return 0;
	}
	return h ? h : 1;
}

static bool same_group(struct rt_correlator *c, uint32_t a, uint32_t b)
{
	struct rt_proc *pa = rt_proc_get(c, a, false), *pb = rt_proc_get(c, b, false);

	return pa && pb && !strcmp(pa->group, pb->group);
}

/*
 * A connection between two processes of one target group is a hop inside
 * the service: its requests are not client requests (no span), waits on
 * it are not comm wait, and the work it carries belongs to the request the
 * writing side worked for (rt_conn_on_io). Called when an end's addresses
 * are known; pairs it with the other end if that one is known too.
 */
static void pair(struct rt_correlator *c, struct rt_conn *conn)
{
	struct rt_conn *twin;
	uint64_t key = end_key(&conn->local, &conn->peer);
	uint32_t i;

	if (!key || conn->end_key)
		return;
	if (rt_hmap_put(&c->ends, key, conn) == 0)
		conn->end_key = key;
	conn->twin_key = end_key(&conn->peer, &conn->local);
	twin = conn->twin_key ? rt_hmap_get(&c->ends, conn->twin_key) : NULL;
	if (!twin || !same_group(c, conn->pid, twin->pid))
		return;
	conn->internal = twin->internal = true;
	/* requests parsed on either end before we knew are not client requests */
	for (i = 0; i < 2; i++) {
		struct rt_conn *x = i ? twin : conn;
		struct rt_req *r;
		uint32_t k;

		if (x->receiving && (r = rt_req_get(c, x->receiving)))
			rt_req_discard(c, r, c->now);
		for (k = 0; k < x->n_fifo; k++)
			if ((r = rt_req_get(c, x->fifo[k])))
				rt_req_discard(c, r, c->now);
		if (x->responding && (r = rt_req_get(c, x->responding)))
			rt_req_discard(c, r, c->now);
		if (x->cut && (r = rt_req_get(c, x->cut)))
			rt_req_discard(c, r, c->now);
		rt_cut_close(x);
		x->receiving = x->responding = x->cut = 0;
		x->n_fifo = 0;
		x->comm_peer = false;
	}
}

void rt_conn_on_accept(struct rt_correlator *c, const struct rt_ev_sock_conn *ev, bool outbound)
{
	struct rt_conn *conn;

	if (ev->ret < 0 && !(outbound && ev->ret == -EINPROGRESS))
		return;
	if (!rt_proc_get(c, ev->hdr.pid, true))
		return;
	conn = rt_hmap_get(&c->conns, conn_key(ev->hdr.pid, ev->fd));
	if (conn) /* we missed its close: the fd was reused */
		conn_close(c, conn, ev->hdr.ts_ns, RT_OUTCOME_ABORTED);
	conn = conn_new(c, ev->hdr.pid, ev->fd, false);
	if (!conn)
		return;
	conn->outbound = outbound;
	conn->last_activity = ev->hdr.ts_ns;
	conn->local = ev->local;
	conn->peer = ev->peer;
	if (outbound)
		describe(conn, &ev->local, &ev->peer);
	else
		describe(conn, &ev->peer, &ev->local);
	pair(c, conn);
}

/* ---- request parser callbacks ----------------------------------------- */

/* The parser callbacks' context: the connection and the syscall being parsed. */
struct io {
	struct rt_correlator *c;
	struct rt_conn *conn;
	uint64_t enter; /* the syscall's entry */
	uint64_t exit; /* its exit */
	/* a read: the ARRIVAL that belongs to it (data_ns 0: none), and
	 * whether the next request to begin begins at the read's first byte */
	struct rt_arrival arr;
	bool at_first_byte;
	uint32_t tid; /* the thread that did the I/O (pack.c: who read a request) */
	bool cut; /* the response parser is conn->cut_parser: the request is conn->cut */
};

/* The request the response being parsed answers. */
static uint64_t *resp_slot(struct io *io)
{
	return io->cut ? &io->conn->cut : &io->conn->responding;
}

/*
 * A request whose head was never seen: read before tracing began (a daemon
 * restarted under load). Its start, and all that is measured from it, is
 * null (docs/spans.md, "started_before_trace"); it is named as any request
 * without an x-request-id, the first seen on its connection.
 */
static struct rt_req *unseen_req_new(struct rt_correlator *c, struct rt_conn *conn, uint64_t ts)
{
	struct rt_req *r = rt_req_new(c, conn, ts);
	char id[RT_SPAN_ID_MAX];

	conn->cut_tried = true;
	if (!r)
		return NULL;
	r->span.start_ns = 0;
	r->span.flags |= RT_SPAN_STARTED_BEFORE_TRACE;
	snprintf(id, sizeof(id), "%u:%d:%u", conn->pid, conn->fd, conn->seq);
	rt_req_set_id(c, r, id);
	r->state = RT_REQ_RESPONDING;
	rt_req_set_changed(c, r);
	return r;
}

/*
 * Only where the request can have gone unseen: a connection first seen by
 * its I/O (no accept), whose handshake was not seen either, before the
 * first request seen on it, once. A response without its request anywhere
 * else is not a request of this trace's.
 */
static bool unseen_possible(const struct rt_conn *conn)
{
	return conn->predates && !conn->established_ns && !conn->seq && !conn->cut_tried &&
	       !conn->receiving && !conn->n_fifo && !conn->responding && !conn->cut;
}

/*
 * A request whose first byte is the read's first byte arrived when the
 * read's bytes did (docs/spans.md, "Arrival"). One that begins later in
 * the read may have come later than that: no arrival, never a guess.
 */
static void take_arrival(struct io *io, struct rt_req *r)
{
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	bool first = io->at_first_byte;
	uint64_t a = io->arr.data_ns;

	io->at_first_byte = false;
	if (!a)
		return;
	io->arr.data_ns = 0; /* it belongs to this read's first request only */
	if (!first) {
		c->st.arrivals_unused++;
		return;
	}
	if (a > r->span.start_ns || a < conn->last_end_ns) {
		c->st.arrivals_refused++;
		return;
	}
	r->span.arrival_ns = a;
	if (io->arr.flags & RT_ARR_LEFT_UNREAD)
		r->span.flags |= RT_SPAN_BACKLOG_LOWER_BOUND;
	c->st.arrivals_applied++;
}

static void req_on_begin(void *ctx)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r;

	if (conn->receiving) /* parser began again without completing: drop the old */
		if ((r = rt_req_get(c, conn->receiving)))
			rt_req_end(c, r, io->exit, RT_OUTCOME_ABORTED);
	if (conn->cut && (r = rt_req_get(c, conn->cut))) {
		/* the client asks again: it had the response, whose end went unseen */
		r->span.flags |= RT_SPAN_INCOMPLETE;
		rt_req_end(c, r, r->resp_last_exit, RT_OUTCOME_OK);
	}
	conn->cut = 0;
	rt_cut_close(conn);
	r = rt_req_new(c, conn, io->exit);
	conn->receiving = r ? r->serial : 0;
	if (!r)
		return;
	if (conn->n_fifo || conn->responding)
		r->span.flags |= RT_SPAN_PIPELINED;
	take_arrival(io, r);
}

/* snprintf(dst, size, "%s", src) without its ~600 instructions: per request and per report */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t l = strnlen(src, size - 1);

	memcpy(dst, src, l);
	dst[l] = '\0';
}

static void req_on_headers(void *ctx, const struct rt_http_req_info *info)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_req *r = rt_req_get(c, io->conn->receiving);
	char id[RT_SPAN_ID_MAX];

	if (!r)
		return;
	copy_str(r->span.method, sizeof(r->span.method), info->method);
	copy_str(r->span.path, sizeof(r->span.path), info->path);
	copy_str(r->span.trace_id, sizeof(r->span.trace_id), info->trace_id);
	copy_str(r->span.parent_span_id, sizeof(r->span.parent_span_id), info->parent_span_id);
	if (info->request_id[0]) {
		rt_req_set_id(c, r, info->request_id);
		r->id_from_header = true;
	} else {
		snprintf(id, sizeof(id), "%u:%d:%u", io->conn->pid, io->conn->fd, io->conn->seq);
		rt_req_set_id(c, r, id);
	}
	if (info->guessed)
		r->span.flags |= RT_SPAN_INCOMPLETE;
}

static void req_on_complete(void *ctx, const struct rt_http_req_info *info)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r = rt_req_get(c, conn->receiving);

	conn->receiving = 0;
	if (!r)
		return;
	/* uncaptured bytes inside a known length are fine; a guessed end is not */
	if (info->guessed)
		r->span.flags |= RT_SPAN_INCOMPLETE;
	r->span.received_ns = io->exit;
	rt_pool_cut(c, io->exit); /* r joins the engine set: pools' time so far is not its */
	r->recv_tid = io->tid;
	r->state = RT_REQ_WAITING;
	rt_req_set_changed(c, r);
	if (conn->n_fifo >= RT_CONN_FIFO_MAX) {
		/* a client pipelining this deep: give up on the oldest */
		struct rt_req *old = rt_req_get(c, conn->fifo[0]);

		memmove(conn->fifo, conn->fifo + 1, (conn->n_fifo - 1) * sizeof(conn->fifo[0]));
		conn->n_fifo--;
		if (old) {
			old->span.flags |= RT_SPAN_INCOMPLETE;
			rt_req_end(c, old, io->exit, RT_OUTCOME_ABORTED);
		}
	}
	conn->fifo[conn->n_fifo++] = r->serial;
}

static enum rt_unreadable unreadable_of(enum rt_http_error err)
{
	switch (err) {
	case RT_HTTP_ERR_TLS:
		return RT_UNREADABLE_TLS;
	case RT_HTTP_ERR_HTTP2:
		return RT_UNREADABLE_HTTP2;
	default:
		return RT_UNREADABLE_MALFORMED;
	}
}

static void mark_unreadable(struct rt_correlator *c, struct rt_conn *conn, enum rt_http_error err)
{
	struct rt_proc *p = rt_proc_get(c, conn->pid, false);
	enum rt_unreadable u = unreadable_of(err);

	if (conn->unreadable)
		return;
	conn->unreadable = true;
	c->st.unreadable[u]++;
	if (p) {
		p->unreadable[u]++;
		c->unreadable[p->group_id < RT_CORR_GROUPS_MAX ? p->group_id :
								 RT_CORR_GROUPS_MAX - 1][u]++;
	}
}

static void req_on_error(void *ctx, enum rt_http_error err)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r = rt_req_get(c, conn->receiving);

	if (r) /* never a valid request: no span */
		rt_req_discard(c, r, io->exit);
	conn->receiving = 0;
	mark_unreadable(c, conn, err);
}

static const struct rt_http_req_cb req_cb = {
	.on_begin = req_on_begin,
	.on_headers = req_on_headers,
	.on_complete = req_on_complete,
	.on_error = req_on_error,
};

/* ---- response parser callbacks ---------------------------------------- */

_Static_assert(RT_HTTP_RESPONSE_ID_MAX == RT_SPAN_RESPONSE_ID_MAX, "response ids copy whole");

static void add_reported(struct rt_req *r, const struct rt_http_reported *rep, uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < r->span.n_reported; j++)
			if (!strcmp(r->span.reported[j].name, rep[i].name))
				break;
		if (j == r->span.n_reported) {
			if (j >= RT_SPAN_REPORTED_MAX)
				continue;
			r->span.n_reported++;
			copy_str(r->span.reported[j].name, sizeof(r->span.reported[j].name),
				 rep[i].name);
		}
		r->span.reported[j].value = rep[i].value;
	}
}

static void resp_on_begin(void *ctx)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r;

	if (conn->responding)
		return; /* interim (1xx) response already began this one */
	if (!conn->n_fifo) {
		/* a response to a request we did not see (before tracing) */
		conn->responding = 0;
		if (unseen_possible(conn) && (r = unseen_req_new(c, conn, io->exit))) {
			conn->responding = r->serial;
			r->resp_first_enter = io->enter;
		}
		return;
	}
	conn->responding = conn->fifo[0];
	memmove(conn->fifo, conn->fifo + 1, (conn->n_fifo - 1) * sizeof(conn->fifo[0]));
	conn->n_fifo--;
	r = rt_req_get(c, conn->responding);
	if (!r)
		return;
	r->state = RT_REQ_RESPONDING;
	rt_req_set_changed(c, r);
	r->resp_first_enter = io->enter;
}

static void resp_on_headers(void *ctx, const struct rt_http_resp_info *info)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_req *r = rt_req_get(c, io->conn->responding);

	if (!r)
		return;
	if (info->status >= 100 && info->status < 200)
		return; /* interim: the real status follows */
	r->span.status = info->status;
	r->span.streamed = info->sse;
	add_reported(r, info->reported, info->n_reported);
}

static void resp_on_sse_event(void *ctx, const struct rt_sse_event *ev)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_req *r = rt_req_get(c, *resp_slot(io));

	if (!r)
		return;
	/*
	 * ev->incomplete (bytes of this event were not captured) is not a
	 * span flag: the event's bounds are known and its kind and numbers
	 * come from the captured head and tail. docs/spans.md, "incomplete".
	 */
	if (ev->tokens_out >= 0)
		r->span.tokens_out = ev->tokens_out;
	if (!r->span.response_id[0] && ev->response_id[0])
		memcpy(r->span.response_id, ev->response_id, sizeof(r->span.response_id));
	if (r->id_slot < 0)
		r->id_slot = ev->id_slot;
	add_reported(r, ev->reported, ev->n_reported);
	rt_vllm_on_sse(c, r, io->enter, ev->kind == RT_SSE_CONTENT);
	switch (ev->kind) {
	case RT_SSE_CONTENT:
		r->span.events_out++;
		/* joined mid-body: the first event seen is not the first token */
		if (!r->span.first_token_ns && !r->mid_body)
			r->span.first_token_ns = io->enter;
		else if (r->last_event_enter)
			rt_span_add_gap(r, (int64_t)(io->enter - r->last_event_enter));
		r->last_event_enter = io->enter;
		r->span.last_token_ns = io->enter;
		break;
	default:
		break;
	}
}

static void resp_on_complete(void *ctx, const struct rt_http_resp_done *done)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	uint64_t *slot = resp_slot(io);
	struct rt_req *r = rt_req_get(c, *slot);

	*slot = 0;
	if (!r)
		return;
	if (done->tokens_out >= 0)
		r->span.tokens_out = done->tokens_out;
	if (!r->span.response_id[0] && done->response_id[0])
		memcpy(r->span.response_id, done->response_id, sizeof(r->span.response_id));
	if (r->id_slot < 0)
		r->id_slot = done->id_slot;
	add_reported(r, done->reported, done->n_reported);
	if (done->guessed)
		r->span.flags |= RT_SPAN_INCOMPLETE;
	conn->last_end_ns = io->enter;
	rt_req_end(c, r, io->exit, r->span.status >= 500 ? RT_OUTCOME_ERROR : RT_OUTCOME_OK);
}

static void resp_on_error(void *ctx, enum rt_http_error err)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r = rt_req_get(c, conn->responding);

	if (r) {
		r->span.flags |= RT_SPAN_INCOMPLETE;
		conn->last_end_ns = io->enter;
		rt_req_end(c, r, io->exit,
			   r->span.status >= 500 ? RT_OUTCOME_ERROR : RT_OUTCOME_OK);
	}
	conn->responding = 0;
	mark_unreadable(c, conn, err);
}

static const struct rt_http_resp_cb resp_cb = {
	.on_begin = resp_on_begin,
	.on_headers = resp_on_headers,
	.on_sse_event = resp_on_sse_event,
	.on_complete = resp_on_complete,
	.on_error = resp_on_error,
};

/*
 * The parser of a response joined mid-body failed: its bytes were not the
 * chunked event stream assumed (cut.c), so nothing made of them is kept.
 * The connection itself is fine: its own parser never saw them.
 */
static void cut_on_error(void *ctx, enum rt_http_error err)
{
	struct io *io = ctx;
	struct rt_correlator *c = io->c;
	struct rt_conn *conn = io->conn;
	struct rt_req *r = rt_req_get(c, conn->cut);

	(void)err;
	if (r) {
		rt_req_discard(c, r, io->exit);
		conn->seq--; /* it was never a request of the connection's */
	}
	conn->cut = 0;
}

static const struct rt_http_resp_cb cut_cb = {
	.on_sse_event = resp_on_sse_event,
	.on_complete = resp_on_complete,
	.on_error = cut_on_error,
};

static const struct rt_stream_ops stream_ops = {
	.req = &req_cb,
	.resp = &resp_cb,
};

/* ---- a response joined mid-body ------------------------------------------ */

/*
 * A response write on a connection older than the trace, before any
 * request was seen on it, that starts like a chunk: the middle of a
 * response to a request read before tracing began. Its own parser frames
 * it (cut.c); the connection's parser skips it as before.
 */
static void cut_begin(struct rt_correlator *c, struct rt_conn *conn, const struct rt_ev_sock_io *ev)
{
	struct rt_req *r;

	if (!unseen_possible(conn) || !rt_cut_chunk_start(ev->data, ev->head_len))
		return;
	conn->cut_tried = true;
	if (rt_cut_open(conn))
		return;
	r = unseen_req_new(c, conn, ev->hdr.ts_ns);
	if (!r) {
		rt_cut_close(conn);
		return;
	}
	r->mid_body = true;
	conn->cut = r->serial;
}

static void cut_feed(struct rt_correlator *c, struct rt_conn *conn, const struct rt_ev_sock_io *ev,
		     struct io *io)
{
	struct rt_req *r = rt_req_get(c, conn->cut);

	if (r)
		r->resp_last_exit = ev->hdr.ts_ns;
	io->cut = true;
	rt_cut_feed(conn, ev, &cut_cb, io);
	io->cut = false;
	if (!conn->cut)
		rt_cut_close(conn);
}

/* ---- socket records ---------------------------------------------------- */

static bool looks_like_http_request(const uint8_t *p, size_t n)
{
	static const char *const methods[] = { "GET ",	 "POST ",    "PUT ",	 "DELETE ", "HEAD ",
					       "PATCH ", "OPTIONS ", "CONNECT ", "TRACE " };
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t l = strlen(methods[i]);

		if (n >= l && !memcmp(p, methods[i], l))
			return true;
	}
	return false;
}

/*
 * A ZMTP 3.x greeting (ZeroMQ, rfc.zeromq.org/spec/23): 0xFF, 8 bytes, 0x7F,
 * then the major version. libzmq writes the 10-byte signature alone first
 * and the version once the peer's signature came, so 10 bytes suffice.
 */
static bool looks_like_zmtp(const uint8_t *p, size_t n)
{
	return n >= 10 && p[0] == 0xff && p[9] == 0x7f && (n == 10 || p[10] >= 3);
}

static struct rt_conn *conn_for_io(struct rt_correlator *c, const struct rt_ev_sock_io *ev)
{
	struct rt_conn *conn = rt_hmap_get(&c->conns, conn_key(ev->hdr.pid, ev->fd));

	if (conn)
		return conn;
	/* first sight of a connection opened before tracing started */
	conn = conn_new(c, ev->hdr.pid, ev->fd, true);
	if (!conn)
		return NULL;
	conn->outbound = rt_stream_guess_outbound(&ev->local, &ev->peer);
	if (conn->outbound)
		describe(conn, &ev->local, &ev->peer);
	else
		describe(conn, &ev->peer, &ev->local);
	conn->local = ev->local;
	conn->peer = ev->peer;
	pair(c, conn);
	return conn;
}

/* Note whose work a write carries (any connection: its other end may pair later). */
static void note_write(struct rt_correlator *c, struct rt_conn *conn, struct rt_thread *t,
		       int64_t n)
{
	uint64_t owners[2], req = 0;

	(void)c;
	/*
	 * Whose bytes these are: the writer's own request if it has one by
	 * I/O (rules 3-4 may add requests it merely woke, such as a handler
	 * waiting on the same lock), else its single owner by any rule.
	 */
	if (t->n_io == 1)
		req = t->io[0];
	else if (!t->n_io && rt_cpu_owners(t, owners, 2) == 1)
		req = owners[0];
	conn->sent += (uint64_t)n;
	if (conn->n_carried && conn->carried[conn->n_carried - 1].req == req) {
		conn->carried[conn->n_carried - 1].end = conn->sent;
		return;
	}
	if (conn->n_carried == RT_CONN_CARRIED_MAX) {
		/* a reader far behind: forget the oldest range */
		memmove(conn->carried, conn->carried + 1,
			(RT_CONN_CARRIED_MAX - 1) * sizeof(conn->carried[0]));
		conn->n_carried--;
	}
	conn->carried[conn->n_carried].end = conn->sent;
	conn->carried[conn->n_carried].req = req;
	conn->n_carried++;
}

/*
 * A hop inside the service: the thread that reads bytes on one end works
 * for the requests the other end's writers worked for when they wrote
 * those bytes (rule 2 across processes), so one span gets the CPU of both
 * processes. Byte ranges keep this exact when writers interleave.
 */
static void internal_read(struct rt_correlator *c, struct rt_conn *conn, struct rt_thread *t,
			  const struct rt_ev_sock_io *ev)
{
	struct rt_conn *twin = conn->twin_key ? rt_hmap_get(&c->ends, conn->twin_key) : NULL;
	uint64_t from = conn->recvd, to = conn->recvd + (uint64_t)ev->ret;
	struct rt_req *r;
	uint32_t i;

	conn->recvd = to;
	if (!twin)
		return;
	for (i = 0; i < twin->n_carried; i++) {
		uint64_t start = i ? twin->carried[i - 1].end : 0;

		if (twin->carried[i].end <= from || start >= to)
			continue;
		if (twin->carried[i].req && (r = rt_req_get(c, twin->carried[i].req)))
			rt_cpu_io_owner(c, t, r, ev->hdr.ts_ns);
	}
	/* ranges wholly read are done with */
	while (twin->n_carried > 1 && twin->carried[0].end <= to) {
		memmove(twin->carried, twin->carried + 1,
			(twin->n_carried - 1) * sizeof(twin->carried[0]));
		twin->n_carried--;
	}
}

/* ---- arrival: when a read's bytes reached the socket ---------------------- */

void rt_conn_on_arrival(struct rt_correlator *c, const struct rt_ev_sock_arrival *ev)
{
	struct rt_conn *conn = rt_hmap_get(&c->conns, conn_key(ev->hdr.pid, ev->fd));
	struct rt_arrival *slot = conn ? &conn->arrival : &c->arr_unknown;

	if (slot->valid && slot->data_ns)
		c->st.arrivals_unused++; /* its read never came */
	*slot = (struct rt_arrival){
		.ts = ev->hdr.ts_ns,
		.data_ns = ev->data_ns,
		.established_ns = ev->established_ns,
		.tid = ev->hdr.tid,
		.flags = ev->flags,
		.valid = true,
	};
	if (!conn) {
		c->arr_pid = ev->hdr.pid;
		c->arr_fd = ev->fd;
		return;
	}
	if (ev->established_ns)
		conn->established_ns = ev->established_ns;
}

/*
 * The ARRIVAL written for this read: same thread, same fd, same exit
 * instant. It belongs to that read only, so it is consumed here either way.
 */
static struct rt_arrival arrival_for(struct rt_correlator *c, struct rt_conn *conn,
				     const struct rt_ev_sock_io *ev)
{
	struct rt_arrival *slot = &conn->arrival, none = { 0 };

	if (!slot->valid && c->arr_unknown.valid && c->arr_pid == ev->hdr.pid &&
	    c->arr_fd == ev->fd) {
		/* held before the connection was known: it is known now */
		*slot = c->arr_unknown;
		c->arr_unknown.valid = false;
		if (slot->established_ns)
			conn->established_ns = slot->established_ns;
	}
	if (!slot->valid)
		return none;
	if (slot->ts == ev->hdr.ts_ns && slot->tid == ev->hdr.tid) {
		none = *slot;
		slot->valid = false;
		return none;
	}
	if (slot->ts < ev->hdr.ts_ns) { /* a read went by without it: stale */
		if (slot->data_ns)
			c->st.arrivals_unused++;
		slot->valid = false;
	}
	return (struct rt_arrival){ 0 };
}

void rt_conn_on_io(struct rt_correlator *c, const struct rt_ev_sock_io *ev)
{
	bool recv = ev->hdr.kind == RT_EV_SOCK_RECV;
	struct rt_arrival arrival = { 0 };
	struct rt_thread *t;
	struct rt_conn *conn;
	struct rt_req *r;
	struct io io;

	if (!rt_proc_get(c, ev->hdr.pid, true))
		return;
	conn = conn_for_io(c, ev);
	if (!conn)
		return;
	if (recv)
		arrival = arrival_for(c, conn, ev);
	conn->last_activity = ev->hdr.ts_ns;
	t = rt_thread_get(c, ev->hdr.tid, ev->hdr.pid, true);
	if (!conn->end_key && ev->local.family) {
		/* an end first seen before its addresses were known */
		conn->local = ev->local;
		conn->peer = ev->peer;
		pair(c, conn);
	}

	if (!recv && ev->ret > 0 && t)
		note_write(c, conn, t, ev->ret);
	if (conn->internal) {
		if (recv && ev->ret > 0 && t)
			internal_read(c, conn, t, ev);
		return;
	}
	/* ZeroMQ between processes: neither a peer to wait on nor a client (docs/spans.md) */
	if (!conn->first_data_seen && ev->ret > 0) {
		conn->first_data_seen = true;
		conn->zmtp = looks_like_zmtp(ev->data, ev->head_len);
		if (conn->zmtp)
			c->st.zmtp_conns++;
	}
	if (conn->zmtp)
		return;
	if (conn->outbound) {
		if (!conn->peer_kind_known && !recv && ev->ret > 0) {
			conn->peer_kind_known = true;
			conn->comm_peer = !looks_like_http_request(ev->data, ev->head_len);
			if (conn->comm_peer)
				c->st.peer_conns++;
		}
		/* blocked waiting for a peer's reply: comm wait (docs/spans.md) */
		if (recv && ev->ret > 0 && conn->comm_peer && t)
			rt_cpu_comm_wait(c, t, ev->enter_ns, ev->hdr.ts_ns);
		return;
	}
	if (ev->ret == 0 && recv) {
		/*
		 * The client is gone (or half-closed): an unfinished request ends
		 * here if its response never completes (docs/spans.md: aborted),
		 * so nothing after this instant is charged to it.
		 */
		conn->peer_closed_ns = ev->hdr.ts_ns;
		settle(c, conn, ev->hdr.ts_ns);
		return;
	}
	if (ev->ret < 0) {
		if (rt_stream_abort_errno(ev->ret))
			abort_all(c, conn, ev->hdr.ts_ns, RT_OUTCOME_ABORTED);
		if (arrival.data_ns)
			c->st.arrivals_unused++;
		return;
	}
	if (conn->unreadable) {
		if (arrival.data_ns)
			c->st.arrivals_unused++;
		return;
	}

	if (recv && conn->receiving && t && (r = rt_req_get(c, conn->receiving)))
		rt_cpu_io_owner(c, t, r, ev->hdr.ts_ns);
	if (!recv)
		cut_begin(c, conn, ev);
	if (!recv && t) {
		uint64_t serial = conn->responding ? conn->responding :
				  conn->n_fifo	   ? conn->fifo[0] :
						     conn->cut;

		if (serial && (r = rt_req_get(c, serial)))
			rt_cpu_io_owner(c, t, r, ev->hdr.ts_ns);
	}
	/* an inbound connection: the client's bytes are requests */
	io = (struct io){ .c = c,
			  .conn = conn,
			  .enter = ev->enter_ns,
			  .exit = ev->hdr.ts_ns,
			  .tid = ev->hdr.tid };
	if (recv) {
		io.arr = arrival;
		/*
		 * Between requests, and (joined mid-stream) framed by one already.
		 * A connection first seen by its I/O whose handshake the kernel side
		 * saw (established_ns) is not mid-stream: it began while we watched,
		 * and only its accept went unseen (the accept call predates tracing),
		 * so its first read we see is its first read.
		 */
		io.at_first_byte = !conn->receiving && (!conn->predates || conn->seq ||
							(arrival.established_ns && !conn->rx_seen));
		if (ev->ret > 0)
			conn->rx_seen = true;
	}
	if (!recv && conn->cut)
		cut_feed(c, conn, ev, &io);
	rt_stream_feed(&conn->stream, recv ? RT_STREAM_REQ : RT_STREAM_RESP, ev, &stream_ops, &io);
	if (recv && conn->receiving && t && (r = rt_req_get(c, conn->receiving)))
		rt_cpu_io_owner(c, t, r, ev->hdr.ts_ns);
	if (io.arr.data_ns) /* the read began no request */
		c->st.arrivals_unused++;
	/* a read that completed requests: the reader worked for each of them */
	if (recv && t) {
		uint32_t i;

		for (i = 0; i < conn->n_fifo; i++)
			if ((r = rt_req_get(c, conn->fifo[i])) &&
			    r->span.received_ns == ev->hdr.ts_ns)
				rt_cpu_io_owner(c, t, r, ev->hdr.ts_ns);
	}
}

void rt_conn_on_close(struct rt_correlator *c, const struct rt_ev_sock_close *ev)
{
	struct rt_conn *conn = rt_hmap_get(&c->conns, conn_key(ev->hdr.pid, ev->fd));

	if (!conn)
		return;
	if (ev->hdr.kind == RT_EV_SOCK_SHUTDOWN)
		return; /* half-close: the connection may still carry a response */
	if (conn->responding) {
		struct io io = {
			.c = c, .conn = conn, .enter = ev->enter_ns, .exit = ev->hdr.ts_ns
		};

		rt_stream_eof(&conn->stream, &stream_ops, &io);
	}
	conn_close(c, conn, ev->hdr.ts_ns, RT_OUTCOME_ABORTED);
}

struct victim {
	size_t pos; /* slot in c->conns */
	struct rt_conn *conn;
};

static int cmp_victim(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	return (x->pos > y->pos) - (x->pos < y->pos);
}

void rt_conns_proc_exit(struct rt_correlator *c, uint32_t pid, uint64_t ts)
{
	struct rt_conn *victims[256], *conn;
	struct victim v[256];
	size_t pos;
	uint32_t n, i;
	uint64_t key;
	void *val;

	if (!c->conns_of_lost) {
		/*
		 * Its own list, closed in the order the walk below would close
		 * them (their slots in c->conns: the spans come out in the same
		 * order); the walk cost 2.5% of the pipeline with thousands of
		 * connections open. More than one batch: the walk, as it batches.
		 */
		n = 0;
		for (conn = rt_hmap_get(&c->conns_of, pid); conn && n <= 256; conn = conn->pnext) {
			if (n < 256) {
				v[n].conn = conn;
				v[n].pos = rt_hmap_pos(&c->conns, conn_key(conn->pid, conn->fd));
			}
			n++;
		}
		if (n <= 256) {
			qsort(v, n, sizeof(v[0]), cmp_victim);
			for (i = 0; i < n; i++)
				conn_close(c, v[i].conn, ts, RT_OUTCOME_SERVER_EXIT);
			return;
		}
	}
	/* collect then close: the map must not change while we walk it */
	do {
		n = 0;
		pos = 0;
		while (n < 256 && (pos = rt_hmap_next(&c->conns, pos, &key, &val)) != 0)
			if (((struct rt_conn *)val)->pid == pid)
				victims[n++] = val;
		for (i = 0; i < n; i++)
			conn_close(c, victims[i], ts, RT_OUTCOME_SERVER_EXIT);
	} while (n == 256);
}
