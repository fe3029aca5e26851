// SPDX-License-Identifier: BSD-2-Clause
/*
 * GET /metrics over HTTP/1.1: read one request head (bounded), answer,
 * close. Prometheus opens a fresh connection when the server closes it, so
 * keep-alive buys nothing at a scrape every few seconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "correlate/gpu.h"
#include "daemon.h"
#include "metrics.h"
#include "otlp.h"
#include "sources/bpf_source.h"

#define REQ_MAX 4096 /* a scrape's head is ~300 bytes */
#define CLIENTS_MAX 16
#define CLIENT_TIMEOUT_MS 5000
#define LINGER_MS 1000 /* after the answer, for the client to close */
#define BODY_MAX (16u << 20)

struct client {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wr;
	uv_shutdown_t sd;
	struct rt_metrics *m;
	struct client *next;
	int open_handles;
	bool answered;
	size_t len;
	char req[REQ_MAX];
	char head[256];
	char *body;
};

struct rt_metrics {
	uv_tcp_t srv;
	struct rt_daemon *d;
	struct client *clients;
	uint32_t n_clients;
	uint64_t refused;
	bool closing, srv_closed;
};

/* The listener and every client closed: only then may m go. */
static void maybe_free(struct rt_metrics *m)
{
	if (m->closing && m->srv_closed && !m->n_clients)
		free(m);
}

int rt_metrics_parse_addr(const char *s, struct sockaddr_storage *addr)
{
	char host[64];
	const char *colon, *port_s;
	unsigned long port;
	char *end;
	size_t hl;

	colon = strrchr(s, ':');
	port_s = colon ? colon + 1 : s;
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || end == port_s || *end || !port || port > 65535 || *port_s == '-')
		return -EINVAL;
	hl = colon ? (size_t)(colon - s) : 0;
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		if (hl - 2 >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl - 2);
		host[hl - 2] = '\0';
		return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) ? -EINVAL : 0;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	/* loopback unless an address is named: metrics describe the traced
	 * servers' traffic, not something to publish by accident */
	if (!hl)
		snprintf(host, sizeof(host), "127.0.0.1");
	else {
		memcpy(host, s, hl);
		host[hl] = '\0';
	}
	return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) ? -EINVAL : 0;
}

static void client_closed(uv_handle_t *h)
{
	struct client *c = h->data;
	struct rt_metrics *m = c->m;
	struct client **pp;

	if (--c->open_handles)
		return;
	for (pp = &m->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	m->n_clients--;
	free(c->body);
	free(c);
	maybe_free(m);
}

static void client_close(struct client *c)
{
	if (!uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, client_closed);
	if (!uv_is_closing((uv_handle_t *)&c->timer))
		uv_close((uv_handle_t *)&c->timer, client_closed);
}

static void on_timeout(uv_timer_t *t)
{
	client_close(t->data);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/*
 * Closing a socket with unread bytes (an oversized head, a body we never
 * wanted) sends a reset that can destroy our answer before the client
 * reads it: send FIN, read and discard until the client closes, bounded by
 * the timer.
 */
static void on_shutdown(uv_shutdown_t *sd, int status)
{
	struct client *c = sd->data;

	if (status || uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read))
		client_close(c);
}

static void on_written(uv_write_t *w, int status)
{
	struct client *c = w->data;

	c->sd.data = c;
	if (status || uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown))
		client_close(c);
	else
		uv_timer_start(&c->timer, on_timeout, LINGER_MS, 0);
}

struct kv_list {
	struct rt_prom_kv kv[64];
	uint32_t n;
};

static void event_count(void *ctx, const char *key, uint64_t v)
{
	struct kv_list *l = ctx;

	if (l->n < sizeof(l->kv) / sizeof(l->kv[0]))
		l->kv[l->n++] = (struct rt_prom_kv){ .name = key, .value = v };
}

/* The exposition, as of now, into a malloc'd buffer. */
static int render(struct rt_metrics *m, char **out, size_t *len)
{
	struct rt_daemon *d = m->d;
	struct rt_bpf_stats *bs = calloc(1, sizeof(*bs));
	struct rt_gpu_stats *gs = calloc(1, sizeof(*gs));
	struct kv_list *events = calloc(1, sizeof(*events));
	struct kv_list *drops = calloc(1, sizeof(*drops));
	struct kv_list *exported = calloc(1, sizeof(*exported));
	struct rt_prom_gpu gpu[RT_GPU_BUSY_DEVICES_MAX];
	struct rt_gpu_links *gl = calloc(1, sizeof(*gl));
	struct rt_prom_link links[RT_GPU_LINKS_MAX];
	struct rt_prom_extra x = { 0 };
	FILE *f = NULL;
	uint32_t i;
	int err = -ENOMEM;

	*out = NULL;
	if (!bs || !gs || !events || !drops || !exported || !gl)
		goto cleanup;
	if (d->bpf)
		rt_bpf_source__stats(d->bpf, bs);
	event_count(events, d->src[1].name, d->src[1].events);
	event_count(events, d->src[0].name, d->src[0].events);
	if (d->inject) {
		struct rt_inject_server_stats is;

		rt_inject_server__stats(d->inject, &is);
		event_count(events, "inject", is.records);
	}
	rt_daemon__drops(d, bs, event_count, drops);
	rt_daemon__exported(d, event_count, exported);
	rt_gpu_stats(rt_pipeline__correlator(d->pipe), gs);
	for (i = 0; i < gs->n_busy && i < RT_GPU_BUSY_DEVICES_MAX; i++)
		gpu[i] = (struct rt_prom_gpu){ .pid = gs->busy[i].pid,
					       .device = gs->busy[i].device,
					       .busy_ns = gs->busy[i].busy_total_ns };
	x.events = events->kv;
	x.n_events = events->n;
	x.drops = drops->kv;
	x.n_drops = drops->n;
	x.exported = exported->kv;
	x.n_exported = exported->n;
	x.gpu = gpu;
	x.n_gpu = i;
	/* busy time comes from CUPTI device records; without any, say nothing */
	x.gpu_known = gs->dev_records > 0;
	rt_gpu_links(rt_pipeline__correlator(d->pipe), gl);
	for (i = 0; i < gl->n; i++)
		links[i] = (struct rt_prom_link){
			.device = gl->link[i].device,
			.link = gl->link[i].link_type == RT_LINK_NVLINK ? "nvlink" : "pcie",
			.tx_bytes = gl->link[i].tx_total,
			.rx_bytes = gl->link[i].rx_total,
		};
	x.links = links;
	x.n_links = gl->n;

	f = open_memstream(out, len);
	if (!f)
		goto cleanup;
	err = rt_prom__write(d->prom, &x, f);
	if (fclose(f) && !err)
		err = -EIO;
	f = NULL;
	if (!err && *len > BODY_MAX)
		err = -EFBIG;
cleanup:
	if (err) {
		free(*out);
		*out = NULL;
	}
	free(bs);
	free(gs);
	free(gl);
	free(events);
	free(drops);
	free(exported);
	return err;
}

static void respond(struct client *c, int code, const char *reason, const char *extra, char *body,
		    size_t body_len, bool head_only)
{
	uv_buf_t bufs[2];
	int n;

	c->answered = true;
	c->body = body;
	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		     "Connection: close\r\n\r\n",
		     code, reason, code == 200 ? RT_PROM_CONTENT_TYPE : "text/plain; charset=utf-8",
		     body_len, extra ? extra : "");
	bufs[0] = uv_buf_init(c->head, (unsigned)n);
	bufs[1] = uv_buf_init(body, (unsigned)body_len);
	c->wr.data = c;
	uv_read_stop((uv_stream_t *)&c->tcp);
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, head_only || !body_len ? 1 : 2,
		     on_written))
		client_close(c);
}

static void respond_text(struct client *c, int code, const char *reason, const char *extra,
			 bool head_only)
{
	char *b = malloc(64);
	int n;

	if (!b) {
		client_close(c);
		return;
	}
	n = snprintf(b, 64, "%d %s\n", code, reason);
	respond(c, code, reason, extra, b, (size_t)n, head_only);
}

/* The request line of a complete head: "METHOD SP TARGET SP HTTP/1.x". */
static void handle(struct client *c)
{
	char *sp1, *sp2, *eol, *q;
	bool head_only;
	char *body;
	size_t len;
	int err;

	eol = strpbrk(c->req, "\r\n");
	sp1 = memchr(c->req, ' ', (size_t)(eol - c->req));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7)) {
		respond_text(c, 400, "Bad Request", NULL, false);
		return;
	}
	*sp1 = *sp2 = '\0';
	q = strchr(sp1 + 1, '?');
	if (q)
		*q = '\0';
	head_only = !strcmp(c->req, "HEAD");
	if (strcmp(sp1 + 1, "/metrics")) {
		respond_text(c, 404, "Not Found", NULL, head_only);
		return;
	}
	if (strcmp(c->req, "GET") && !head_only) {
		respond_text(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", false);
		return;
	}
	err = render(c->m, &body, &len);
	if (err) {
		wlog("metrics: cannot render the exposition: %s", strerror(-err));
		respond_text(c, 500, "Internal Server Error", NULL, head_only);
		return;
	}
	respond(c, 200, "OK", NULL, body, len, head_only);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct client *c = h->data;

	(void)suggested;
	if (c->answered) { /* discarding until the client closes */
		*buf = uv_buf_init(c->req, REQ_MAX);
		return;
	}
	/* one byte kept for the terminating NUL */
	*buf = uv_buf_init(c->req + c->len, (unsigned)(REQ_MAX - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct client *c = s->data;

	(void)buf;
	if (c->answered) {
		if (n < 0)
			client_close(c);
		return;
	}
	if (n < 0) {
		client_close(c);
		return;
	}
	c->len += (size_t)n;
	c->req[c->len] = '\0';
	if (memchr(c->req, '\0', c->len)) {
		respond_text(c, 400, "Bad Request", NULL, false);
		return;
	}
	if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
		handle(c);
		return;
	}
	if (c->len >= REQ_MAX - 1)
		respond_text(c, 431, "Request Header Fields Too Large", NULL, false);
}

static void handle_free(uv_handle_t *h)
{
	free(h);
}

static void srv_closed(uv_handle_t *h)
{
	struct rt_metrics *m = h->data;

	m->srv_closed = true;
	maybe_free(m);
}

static void on_connection(uv_stream_t *srv, int status)
{
	struct rt_metrics *m = srv->data;
	struct client *c;
	uv_tcp_t *drop;

	if (status < 0)
		return;
	if (m->n_clients >= CLIENTS_MAX || !(c = calloc(1, sizeof(*c)))) {
		/* accept and close at once: the kernel queue must not fill up */
		m->refused++;
		drop = malloc(sizeof(*drop));
		if (drop && !uv_tcp_init(srv->loop, drop)) {
			uv_accept(srv, (uv_stream_t *)drop);
			uv_close((uv_handle_t *)drop, handle_free);
		} else {
			free(drop);
		}
		return;
	}
	c->m = m;
	uv_tcp_init(srv->loop, &c->tcp);
	uv_timer_init(srv->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->open_handles = 2;
	c->next = m->clients;
	m->clients = c;
	m->n_clients++;
	if (uv_accept(srv, (uv_stream_t *)&c->tcp) ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read)) {
		client_close(c);
		return;
	}
	uv_timer_start(&c->timer, on_timeout, CLIENT_TIMEOUT_MS, 0);
}

struct rt_metrics *rt_metrics__new(uv_loop_t *loop, const char *listen, struct rt_daemon *d)
{
	struct sockaddr_storage addr = { 0 };
	struct rt_metrics *m;
	int err;

	err = rt_metrics_parse_addr(listen, &addr);
	if (err) {
		elog("--metrics-listen %s: not ADDR:PORT (IPv4, or [IPv6]:PORT)", listen);
		errno = -err;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->d = d;
	uv_tcp_init(loop, &m->srv);
	m->srv.data = m;
	err = uv_tcp_bind(&m->srv, (const struct sockaddr *)&addr, 0);
	if (!err)
		err = uv_listen((uv_stream_t *)&m->srv, 64, on_connection);
	if (err) {
		elog("--metrics-listen %s: %s", listen, uv_strerror(err));
		m->closing = true;
		uv_close((uv_handle_t *)&m->srv, srv_closed);
		errno = -err;
		return NULL;
	}
	{
		char host[INET6_ADDRSTRLEN] = "?";
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&addr;
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)&addr;

		if (addr.ss_family == AF_INET6)
			uv_ip6_name(a6, host, sizeof(host));
		else
			uv_ip4_name(a4, host, sizeof(host));
		ilog("metrics: http://%s%s%s:%u/metrics", addr.ss_family == AF_INET6 ? "[" : "",
		     host, addr.ss_family == AF_INET6 ? "]" : "",
		     ntohs(addr.ss_family == AF_INET6 ? a6->sin6_port : a4->sin_port));
	}
	return m;
}

void rt_metrics__close(struct rt_metrics *m)
{
	struct client *c;

	if (!m)
		return;
	m->closing = true;
	for (c = m->clients; c; c = c->next)
		client_close(c);
	uv_close((uv_handle_t *)&m->srv, srv_closed);
}
