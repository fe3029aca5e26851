// SPDX-License-Identifier: BSD-2-Clause
/*
 * OTLP/HTTP export (otlp.h, docs/otlp.md). libcurl because a collector is
 * often behind TLS and proxies, and speaks HTTP/1.1 and 2:
 * writing that client by hand on uv_tcp_t would mean our own TLS and
 * HTTP framing. Its multi interface hands us its sockets and timeout, so
 * the daemon's one loop drives it (libcurl's documented libuv pattern).
 */
#include "otlp.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/jsonw.h"
#include "common/log.h"
#include "daemon.h"
#include "export/otlp_json.h"

#define RESP_MAX (64u << 10) /* an ExportTraceServiceResponse is tiny */
#define BODY_MAX (64u << 20)
#define RETRIES_MAX 5
#define BACKOFF_BASE_MS 1000
#define BACKOFF_MAX_MS 30000
#define RETRY_AFTER_MAX_MS (300u * 1000) /* a longer ask would stall the queue */

struct sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct rt_otlp *x;
	struct sock *next;
};

struct rt_otlp {
	uv_loop_t *loop;
	struct rt_otlp_opts o;
	char *endpoint, *ca_file, *service_name;
	char host[256];
	struct rt_otlp_header res_attr[RT_OTLP_HEADERS_MAX];
	struct rt_otlp_attr res_kv[RT_OTLP_HEADERS_MAX];
	size_t n_res;
	struct curl_slist *hdrs;
	CURLM *multi;
	CURL *easy; /* reused: keeps the connection to the collector */
	uv_timer_t curl_timer; /* libcurl's timeout */
	uv_timer_t flush_timer; /* batch delay, then retry waits */
	struct sock *socks;
	int open_handles;
	bool closing;

	struct rt_span *ring; /* the queue */
	uint32_t head, count;
	struct rt_span *batch; /* the batch being encoded, contiguous */

	/* the batch in flight or waiting to be retried */
	bool busy, in_multi, waiting_retry;
	unsigned char *body;
	size_t body_len;
	uint32_t body_spans;
	unsigned attempt;
	char resp[RESP_MAX];
	size_t resp_len;
	char retry_after[64];
	bool failing; /* logged once until delivery resumes */

	struct rt_otlp_bucket cap; /* otlp_max_spans_per_s */
	struct rt_otlp_stats st;

	/* SIGHUP's new options that shape a POST (URL, headers, timeout, CA,
	 * compression): a batch keeps the ones it was encoded and first sent with,
	 * retries included, so these wait for the next batch */
	struct pending {
		bool set;
		struct rt_otlp_opts o;
		char *endpoint, *ca_file, *service_name;
		struct curl_slist *hdrs;
	} next;
};

static void maybe_free(struct rt_otlp *x)
{
	if (!x->closing || x->open_handles)
		return;
	free(x->ring);
	free(x->batch);
	free(x->body);
	free(x->endpoint);
	free(x->ca_file);
	free(x->service_name);
	curl_slist_free_all(x->hdrs);
	free(x->next.endpoint);
	free(x->next.ca_file);
	free(x->next.service_name);
	curl_slist_free_all(x->next.hdrs);
	free(x);
}

static void handle_closed(uv_handle_t *h)
{
	struct rt_otlp *x = h->data;

	x->open_handles--;
	maybe_free(x);
}

static void sock_closed(uv_handle_t *h)
{
	struct sock *s = h->data;
	struct rt_otlp *x = s->x;

	free(s);
	x->open_handles--;
	maybe_free(x);
}

static void sock_close(struct sock *s)
{
	struct sock **pp;

	for (pp = &s->x->socks; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static void kick(struct rt_otlp *x);

static void fail_log(struct rt_otlp *x, const char *what)
{
	snprintf(x->st.last_error, sizeof(x->st.last_error), "%.159s", what);
	if (!x->failing)
		wlog("otlp %s: %s (further failures counted, not logged)", x->endpoint, what);
	x->failing = true;
}

static void apply_next(struct rt_otlp *x);

static void batch_end(struct rt_otlp *x)
{
	free(x->body);
	x->body = NULL;
	x->body_len = 0;
	x->body_spans = 0;
	x->attempt = 0;
	x->busy = false;
	x->waiting_retry = false;
	apply_next(x);
}

static void on_flush(uv_timer_t *t);

/* The POST of the current body. */
static void post(struct rt_otlp *x)
{
	CURLMcode mc;

	x->resp_len = 0;
	x->retry_after[0] = '\0';
	x->waiting_retry = false;
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, (const char *)x->body);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
	mc = curl_multi_add_handle(x->multi, x->easy);
	if (mc != CURLM_OK) {
		fail_log(x, curl_multi_strerror(mc));
		x->st.dropped_retries_exhausted += x->body_spans;
		batch_end(x);
		return;
	}
	x->in_multi = true;
}

static void finished(struct rt_otlp *x, CURLcode res)
{
	long status = 0;
	uint64_t wait_ms, rnd = 0, rejected;
	char msg[160];

	if (res == CURLE_OK)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(x->multi, x->easy);
	x->in_multi = false;
	x->st.requests++;
	x->st.last_status = status;
	switch (rt_otlp_verdict(res == CURLE_OK ? status : 0)) {
	case RT_OTLP_DONE:
		x->st.exported += x->body_spans;
		x->st.bytes_sent += x->body_len;
		if (!rt_otlp_partial_success(x->resp, x->resp_len, &rejected, msg, sizeof(msg)) &&
		    rejected) {
			x->st.rejected_spans += rejected;
			fail_log(x, msg[0] ? msg : "partial success: spans rejected");
		} else if (x->failing) {
			ilog("otlp %s: delivering again", x->endpoint);
			x->failing = false;
		}
		batch_end(x);
		break;
	case RT_OTLP_DROP:
		snprintf(msg, sizeof(msg), "HTTP %ld: batch of %u dropped, not retried", status,
			 x->body_spans);
		fail_log(x, msg);
		x->st.dropped_rejected += x->body_spans;
		batch_end(x);
		break;
	case RT_OTLP_RETRY:
		if (res != CURLE_OK)
			snprintf(msg, sizeof(msg), "%s", curl_easy_strerror(res));
		else
			snprintf(msg, sizeof(msg), "HTTP %ld", status);
		if (x->attempt >= RETRIES_MAX) {
			char m2[200];

			snprintf(m2, sizeof(m2), "%.100s: batch of %u dropped after %u retries",
				 msg, x->body_spans, x->attempt);
			fail_log(x, m2);
			x->st.dropped_retries_exhausted += x->body_spans;
			batch_end(x);
			break;
		}
		fail_log(x, msg);
		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
			rnd = (uint64_t)rt_now_ns();
		if (!x->retry_after[0] ||
		    rt_otlp_retry_after_ms(x->retry_after, time(NULL), &wait_ms))
			wait_ms = rt_otlp_backoff_ms(x->attempt, BACKOFF_BASE_MS, BACKOFF_MAX_MS,
						     rnd);
		else if (wait_ms > RETRY_AFTER_MAX_MS)
			wait_ms = RETRY_AFTER_MAX_MS;
		x->attempt++;
		x->st.retries++;
		x->waiting_retry = true;
		uv_timer_start(&x->flush_timer, on_flush, wait_ms, 0);
		return;
	}
	kick(x);
}

static void check_done(struct rt_otlp *x)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(x->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == x->easy)
			finished(x, m->data.result);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sock *s = h->data;
	struct rt_otlp *x = s->x;
	int flags = 0, running;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(x->multi, s->fd, flags, &running);
	check_done(x);
}

static int sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct rt_otlp *x = userp;
	struct sock *s = socketp;
	int events = 0;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			sock_close(s);
			curl_multi_assign(x->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -1;
		s->fd = fd;
		s->x = x;
		if (uv_poll_init_socket(x->loop, &s->poll, fd)) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		s->next = x->socks;
		x->socks = s;
		x->open_handles++;
		curl_multi_assign(x->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	uv_poll_start(&s->poll, events, on_poll);
	return 0;
}

static void on_curl_timeout(uv_timer_t *t)
{
	struct rt_otlp *x = t->data;
	int running;

	curl_multi_socket_action(x->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(x);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct rt_otlp *x = userp;

	(void)m;
	if (timeout_ms < 0)
		uv_timer_stop(&x->curl_timer);
	else /* 0 too: libcurl must not be called back from inside itself */
		uv_timer_start(&x->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *userp)
{
	struct rt_otlp *x = userp;
	size_t len = size * n, room = sizeof(x->resp) - 1 - x->resp_len;

	memcpy(x->resp + x->resp_len, p, len < room ? len : room);
	x->resp_len += len < room ? len : room;
	x->resp[x->resp_len] = '\0';
	return len; /* the rest is ignored, not an error */
}

static size_t on_header(char *p, size_t size, size_t n, void *userp)
{
	struct rt_otlp *x = userp;
	size_t len = size * n;
	static const char name[] = "retry-after:";

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) /* a new answer (after a 100) */
		x->retry_after[0] = '\0';
	if (len > sizeof(name) - 1 && !strncasecmp(p, name, sizeof(name) - 1))
		snprintf(x->retry_after, sizeof(x->retry_after), "%.*s",
			 (int)(len - (sizeof(name) - 1)), p + sizeof(name) - 1);
	return len;
}

/* gzip (RFC 1952) of in: deflate with zlib's gzip wrapper (windowBits 15 + 16). */
static int gzip(const char *in, size_t len, unsigned char **out, size_t *out_len)
{
	z_stream z = { 0 };
	unsigned char *buf;
	uLong cap;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(buf);
		return -EIO;
	}
	*out_len = z.total_out;
	*out = buf;
	deflateEnd(&z);
	return 0;
}

static int proc_info(uint32_t pid, struct rt_otlp_proc *out, void *ctx)
{
	char path[64], text[8192];
	size_t n;
	FILE *f;

	(void)ctx;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return rt_otlp_proc_from_cgroup(text, out);
}

/* Encode the oldest queued spans into the body and POST it. */
static void send_batch(struct rt_otlp *x)
{
	struct rt_otlp_resource res = {
		.service_name = x->service_name,
		.host_name = x->host[0] ? x->host : NULL,
		.extra = x->res_kv,
		.n_extra = x->n_res,
		.proc_info = proc_info,
	};
	uint32_t k = x->count < x->o.batch ? x->count : x->o.batch, i;
	struct rt_jsonw w;
	int err;

	for (i = 0; i < k; i++)
		x->batch[i] = x->ring[(x->head + i) % x->o.queue];
	x->head = (x->head + k) % x->o.queue;
	x->count -= k;
	rt_jsonw_init(&w, BODY_MAX);
	err = rt_otlp_json_encode(&w, x->batch, k, &res);
	if (!err && !x->o.no_gzip)
		err = gzip(rt_jsonw_str(&w), w.len, &x->body, &x->body_len);
	else if (!err) {
		x->body = malloc(w.len + 1);
		if (x->body) {
			memcpy(x->body, rt_jsonw_str(&w), w.len + 1);
			x->body_len = w.len;
		} else
			err = -ENOMEM;
	}
	rt_jsonw_fini(&w);
	if (err) {
		fail_log(x, err == -E2BIG ? "batch too large to encode" : strerror(-err));
		x->st.dropped_encode += k;
		return;
	}
	x->busy = true;
	x->body_spans = k;
	x->attempt = 0;
	post(x);
}

static void on_flush(uv_timer_t *t)
{
	struct rt_otlp *x = t->data;

	if (x->closing)
		return;
	if (x->waiting_retry) {
		post(x);
		return;
	}
	if (!x->busy && x->count)
		send_batch(x);
	kick(x);
}

/* Send when a batch is full; else make sure a partial one leaves in time. */
static void kick(struct rt_otlp *x)
{
	if (x->closing || x->busy)
		return;
	while (!x->busy && x->count >= x->o.batch)
		send_batch(x);
	if (!x->busy && x->count && !uv_is_active((uv_handle_t *)&x->flush_timer))
		uv_timer_start(&x->flush_timer, on_flush, x->o.batch_delay_ms, 0);
}

void rt_otlp__add(struct rt_otlp *x, const struct rt_span *s)
{
	char trace[33], span[17];

	if (!x || x->closing)
		return;
	if (s->revision) {
		x->st.amended_skipped++;
		return;
	}
	if (x->o.sample_ratio < 1.0) {
		if (strlen(s->trace_id) == 32)
			memcpy(trace, s->trace_id, sizeof(trace));
		else
			rt_otlp_span_ids(s, 0, trace, span);
		if (!rt_otlp_sampled(trace, x->o.sample_ratio)) {
			x->st.sampled_out++;
			return;
		}
	}
	if (!rt_otlp_bucket_take(&x->cap, rt_now_ns(), x->o.max_spans_per_s)) {
		x->st.dropped_rate_limited++;
		return;
	}
	if (x->count == x->o.queue) {
		x->st.dropped_queue_full++;
		return;
	}
	x->ring[(x->head + x->count) % x->o.queue] = *s;
	x->count++;
	kick(x);
}

void rt_otlp__stats(const struct rt_otlp *x, struct rt_otlp_stats *out)
{
	*out = x->st;
	out->queued = x->count + (x->busy ? x->body_spans : 0);
}

const char *rt_otlp__endpoint(const struct rt_otlp *x)
{
	return x->endpoint;
}

static char *dup_or_null(const char *s, bool *bad)
{
	char *d;

	if (!s || !*s)
		return NULL;
	d = strdup(s);
	if (!d)
		*bad = true;
	return d;
}

static int headers(const struct rt_otlp_opts *o, struct curl_slist **out)
{
	struct rt_otlp_header h[RT_OTLP_HEADERS_MAX];
	struct curl_slist *l;
	char why[160], line[sizeof(h[0].name) + sizeof(h[0].value) + 4];
	int n = 0, i;
	const char *fixed[] = { "Content-Type: application/json",
				/* no 100-continue round trip before each body */
				"Expect:", o->no_gzip ? NULL : "Content-Encoding: gzip" };

	if (o->headers) {
		n = rt_otlp_parse_headers(o->headers, h, RT_OTLP_HEADERS_MAX, why, sizeof(why));
		if (n < 0) {
			elog("otlp_headers: %s", why);
			return n;
		}
	}
	for (i = 0; i < 3; i++) {
		if (!fixed[i])
			continue;
		l = curl_slist_append(*out, fixed[i]);
		if (!l)
			return -ENOMEM;
		*out = l;
	}
	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "%.63s: %.511s", h[i].name, h[i].value);
		l = curl_slist_append(*out, line);
		if (!l)
			return -ENOMEM;
		*out = l;
	}
	return 0;
}

/* OTEL_RESOURCE_ATTRIBUTES: the same k=v,k2=v2 syntax as the headers */
static void resource_attrs(struct rt_otlp *x)
{
	const char *v = getenv("OTEL_RESOURCE_ATTRIBUTES");
	char why[160];
	int n;
	size_t i;

	if (!v || !*v)
		return;
	n = rt_otlp_parse_headers(v, x->res_attr, RT_OTLP_HEADERS_MAX, why, sizeof(why));
	if (n < 0) {
		wlog("OTEL_RESOURCE_ATTRIBUTES ignored: %s", why);
		return;
	}
	for (i = 0; i < (size_t)n; i++) {
		/* the resource's own keys come from what reqtraced observes */
		if (!strcmp(x->res_attr[i].name, "service.name"))
			continue;
		x->res_kv[x->n_res].key = x->res_attr[i].name;
		x->res_kv[x->n_res++].value = x->res_attr[i].value;
	}
}

struct rt_otlp *rt_otlp__new(uv_loop_t *loop, const struct rt_otlp_opts *o)
{
	static bool curl_ready;
	struct rt_otlp *x;
	bool bad = false;
	int err = -ENOMEM;

	if (!o->endpoint || !*o->endpoint) {
		errno = 0;
		return NULL;
	}
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			errno = ENOMEM;
			return NULL;
		}
		curl_ready = true;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->loop = loop;
	x->o = *o;
	if (!x->o.queue)
		x->o.queue = 2048;
	if (!x->o.batch)
		x->o.batch = 512;
	if (x->o.batch > x->o.queue) /* a batch never waits for more than fit */
		x->o.batch = x->o.queue;
	if (!x->o.batch_delay_ms)
		x->o.batch_delay_ms = 1000;
	x->endpoint = dup_or_null(o->endpoint, &bad);
	x->ca_file = dup_or_null(o->ca_file, &bad);
	x->service_name = dup_or_null(o->service_name, &bad);
	if (gethostname(x->host, sizeof(x->host) - 1))
		x->host[0] = '\0';
	resource_attrs(x);
	x->ring = calloc(x->o.queue, sizeof(*x->ring));
	x->batch = calloc(x->o.batch, sizeof(*x->batch));
	x->multi = curl_multi_init();
	x->easy = curl_easy_init();
	if (bad || !x->ring || !x->batch || !x->multi || !x->easy)
		goto cleanup;
	err = headers(&x->o, &x->hdrs);
	x->o.headers = NULL; /* parsed: the caller's string need not outlive this */
	if (err)
		goto cleanup;
	if (x->ca_file && access(x->ca_file, R_OK)) {
		err = -errno;
		elog("otlp_ca_file %s: %s", x->ca_file, strerror(errno));
		goto cleanup;
	}
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETDATA, x);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_URL, x->endpoint);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->easy, CURLOPT_USERAGENT, "reqtrace/" RT_VERSION);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)x->o.timeout_ms);
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	/* only http(s): an endpoint is no place for file:// or other schemes */
	curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	if (x->ca_file)
		curl_easy_setopt(x->easy, CURLOPT_CAINFO, x->ca_file);
	uv_timer_init(loop, &x->curl_timer);
	x->curl_timer.data = x;
	uv_timer_init(loop, &x->flush_timer);
	x->flush_timer.data = x;
	x->open_handles = 2;
	ilog("otlp: exporting to %s (%s, batch %u, queue %u)", x->endpoint,
	     x->o.no_gzip ? "uncompressed" : "gzip", x->o.batch, x->o.queue);
	return x;
cleanup:
	if (x->easy)
		curl_easy_cleanup(x->easy);
	if (x->multi)
		curl_multi_cleanup(x->multi);
	x->closing = true;
	maybe_free(x);
	errno = -err;
	return NULL;
}

void rt_otlp__close(struct rt_otlp *x)
{
	if (!x || x->closing)
		return;
	x->closing = true;
	x->st.dropped_shutdown += x->count + (x->busy ? x->body_spans : 0);
	if (x->st.dropped_shutdown)
		wlog("otlp: %llu span(s) still queued at exit, dropped",
		     (unsigned long long)x->st.dropped_shutdown);
	if (x->in_multi)
		curl_multi_remove_handle(x->multi, x->easy);
	curl_easy_cleanup(x->easy);
	curl_multi_cleanup(x->multi);
	/* sockets libcurl did not report removed */
	while (x->socks)
		sock_close(x->socks);
	uv_close((uv_handle_t *)&x->curl_timer, handle_closed);
	uv_close((uv_handle_t *)&x->flush_timer, handle_closed);
}

/* The per-POST options of x->next into the easy handle, between batches. */
static void apply_next(struct rt_otlp *x)
{
	struct pending *n = &x->next;

	if (!n->set || x->busy || x->closing)
		return;
	free(x->endpoint);
	free(x->ca_file);
	curl_slist_free_all(x->hdrs);
	x->endpoint = n->endpoint;
	x->ca_file = n->ca_file;
	x->hdrs = n->hdrs;
	x->o.no_gzip = n->o.no_gzip;
	x->o.timeout_ms = n->o.timeout_ms;
	n->endpoint = n->ca_file = NULL;
	n->hdrs = NULL;
	n->set = false;
	curl_easy_setopt(x->easy, CURLOPT_URL, x->endpoint);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)x->o.timeout_ms);
	curl_easy_setopt(x->easy, CURLOPT_CAINFO, x->ca_file); /* NULL: the default bundle */
	x->failing = false;
	ilog("otlp: exporting to %s (%s)", x->endpoint, x->o.no_gzip ? "uncompressed" : "gzip");
}

/* The queue resized to q, oldest first; what no longer fits is dropped, counted. */
static int resize_queue(struct rt_otlp *x, uint32_t q, uint32_t batch)
{
	struct rt_span *ring, *b;
	uint32_t keep = x->count < q ? x->count : q, skip = x->count - keep, i;

	if (q == x->o.queue && batch == x->o.batch)
		return 0;
	ring = calloc(q, sizeof(*ring));
	b = calloc(batch, sizeof(*b));
	if (!ring || !b) {
		free(ring);
		free(b);
		return -ENOMEM;
	}
	/* the newest stay: a full queue drops arrivals, a shrunk one its oldest */
	for (i = 0; i < keep; i++)
		ring[i] = x->ring[(x->head + skip + i) % x->o.queue];
	x->st.dropped_queue_full += skip;
	free(x->ring);
	free(x->batch);
	x->ring = ring;
	x->batch = b;
	x->head = 0;
	x->count = keep;
	x->o.queue = q;
	x->o.batch = batch;
	return 0;
}

int rt_otlp__reconfigure(struct rt_otlp *x, const struct rt_otlp_opts *o)
{
	struct pending n = { .set = true, .o = *o };
	uint32_t q = o->queue ? o->queue : 2048, batch = o->batch ? o->batch : 512;
	char *service = NULL;
	bool bad = false;
	int err = -ENOMEM;

	if (!x || x->closing || !o->endpoint || !*o->endpoint)
		return -EINVAL;
	if (batch > q)
		batch = q;
	n.endpoint = dup_or_null(o->endpoint, &bad);
	n.ca_file = dup_or_null(o->ca_file, &bad);
	service = dup_or_null(o->service_name, &bad);
	if (bad)
		goto cleanup;
	err = headers(o, &n.hdrs);
	if (err)
		goto cleanup;
	if (n.ca_file && access(n.ca_file, R_OK)) {
		err = -errno;
		elog("otlp_ca_file %s: %s", n.ca_file, strerror(errno));
		goto cleanup;
	}
	err = resize_queue(x, q, batch);
	if (err)
		goto cleanup;
	/* these shape what is queued, not a POST: at once */
	free(x->service_name);
	x->service_name = service;
	service = NULL;
	x->o.sample_ratio = o->sample_ratio;
	x->o.max_spans_per_s = o->max_spans_per_s;
	x->o.batch_delay_ms = o->batch_delay_ms ? o->batch_delay_ms : 1000;
	/* a reload before the last one took: the newer wins */
	free(x->next.endpoint);
	free(x->next.ca_file);
	curl_slist_free_all(x->next.hdrs);
	n.o.headers = NULL;
	x->next = n;
	apply_next(x);
	kick(x);
	return 0;
cleanup:
	free(n.endpoint);
	free(n.ca_file);
	free(service);
	curl_slist_free_all(n.hdrs);
	return err;
}
