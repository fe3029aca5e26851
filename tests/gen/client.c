// SPDX-License-Identifier: BSD-2-Clause
/*
 * The clients: timers that open connections, put request bytes on the wire
 * (whole, head and body apart, pipelined, or in many awkward pieces) and
 * hang up.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#define US 1000ULL

static void client_arrive(struct sim *s, uint64_t conn, uint64_t range)
{
	struct gen_conn *c = &gen_world_of(s)->conns[conn];
	size_t lo = range >> 32, hi = range & 0xffffffffu;

	sim_sock_arrive(s, c->fd, c->stream + lo, hi - lo);
}

void gen_client_close(struct sim *s, uint64_t conn, uint64_t broken)
{
	sim_sock_peer_close(s, gen_world_of(s)->conns[conn].fd, broken);
}

void gen_conn_open(struct sim *s, uint64_t conn, uint64_t unused)
{
	(void)unused;
	sim_listen_arrive(s, gen_world_of(s)->conns[conn].fd);
}

static int add_cut(size_t *cuts, int n, size_t cut, size_t len)
{
	int i;

	if (cut == 0 || cut >= len)
		return n;
	for (i = 0; i < n; i++)
		if (cuts[i] == cut)
			return n;
	cuts[n++] = cut;
	for (i = n - 1; i > 0 && cuts[i] < cuts[i - 1]; i--) {
		size_t x = cuts[i];

		cuts[i] = cuts[i - 1];
		cuts[i - 1] = x;
	}
	return n;
}

static size_t find(const uint8_t *p, size_t len, size_t from, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = from; i + n <= len; i++)
		if (!memcmp(p + i, needle, n))
			return i;
	return 0;
}

/* Where a split of the request's bytes hurts most: inside tokens, between CR and LF. */
static int awkward_cuts(const struct gen_req *r, const uint8_t *p, size_t len, size_t *cuts)
{
	size_t head = r->head_end - r->off_begin, x;
	int n = 0;

	n = add_cut(cuts, n, 12, len); /* inside the request target */
	n = add_cut(cuts, n, find(p, len, 0, "\r\n") + 1, len); /* between CR and LF */
	n = add_cut(cuts, n, find(p, len, 0, "User-Agent") + 5, len); /* inside a header name */
	n = add_cut(cuts, n, find(p, len, 0, "Content-Type: ") + 14, len); /* before a value */
	n = add_cut(cuts, n, head - 1, len); /* before the head's last LF */
	if (r->cfg->chunked_body) {
		n = add_cut(cuts, n, head + 1, len); /* inside the first chunk size */
		x = find(p, len, head, "\r\n") + 2; /* first chunk's data */
		x += strtoul((const char *)p + head, NULL, 16);
		n = add_cut(cuts, n, x + 1, len); /* between the data's CR and LF */
		n = add_cut(cuts, n, len - 2, len); /* "0\r\n" | "\r\n" */
	} else {
		n = add_cut(cuts, n, head + (len - head) / 2, len);
	}
	return n;
}

void gen_client_send(struct sim *s, uint64_t req, uint64_t unused)
{
	struct gen_world *w = gen_world_of(s);
	struct gen_req *r = &w->reqs[req];
	struct gen_conn *c = &w->conns[r->conn];
	size_t lo = r->off_begin, hi = r->off_end, cuts[16], prev;
	uint64_t at = s->now;
	int n = 0, i;

	(void)unused;
	r->sent = true;
	if (r->cfg->pipelined_next && req + 1 < (uint64_t)w->n_reqs) {
		hi = w->reqs[req + 1].off_end;
		w->reqs[req + 1].sent = true;
	}
	if (r->cfg->split_head_body)
		n = add_cut(cuts, n, r->head_end - lo, hi - lo);
	else if (r->cfg->awkward_split)
		n = awkward_cuts(r, c->stream + lo, hi - lo, cuts);
	prev = 0;
	for (i = 0; i <= n; i++) {
		size_t end = i < n ? cuts[i] : hi - lo;

		sim_timer(s, at, client_arrive, (uint64_t)r->conn,
			  ((uint64_t)(lo + prev) << 32) | (lo + end));
		prev = end;
		at += sim_range(s, 150 * US, 400 * US);
	}
}

/* The response to r ended (the client read it): send the next request or hang up. */
void gen_client_after(struct gen_world *w, struct gen_req *r)
{
	struct gen_conn *c = &w->conns[r->conn];
	struct sim *s = &w->sim;
	int next = r->idx + 1;

	if (next < c->first_req + c->n_reqs) {
		if (!w->reqs[next].sent)
			sim_timer(s, s->now + w->reqs[next].cfg->think_ns, gen_client_send,
				  (uint64_t)next, 0);
		return;
	}
	sim_timer(s, s->now + sim_range(s, 1500 * US, 3000 * US), gen_client_close,
		  (uint64_t)r->conn, 0);
}
