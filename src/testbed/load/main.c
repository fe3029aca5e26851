// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace-load: a loopback-only load generator for completion servers that
 * checks every response (load/resp.c) and reports client-side TTFT and
 * latency per request (JSON Lines) and a summary.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "resp.h"
#include "stats.h"
#include "clock.h"

#define REQUESTS_MAX 1000000u
#define WORKERS_MAX 1024u
#define HEADERS_MAX 16u
#define HEADER_LEN_MAX 1024u

struct ld_opts {
	struct sockaddr_in addr;
	char host[64];
	char path[256];
	double rate; /* open loop: requests per second */
	unsigned concurrency; /* closed loop: workers */
	unsigned requests;
	bool stream;
	long max_tokens; /* -1: not sent */
	unsigned prompt_chars;
	double duration_limit; /* s: no request starts after this */
	double timeout; /* s: per request */
	const char *out, *summary;
	unsigned keepalive; /* requests per connection, 0 = unlimited */
	char id_prefix[64];
	long abort_after; /* events; -1: never */
	double abort_fraction;
	unsigned max_inflight; /* open loop workers */
	unsigned burst; /* open loop: requests sent together */
	const char *headers[HEADERS_MAX]; /* extra request header lines, "Name: value" */
	unsigned n_headers;
	const char *prompt_text; /* the prompt, instead of prompt_chars of filler */
};

struct ld_run {
	struct ld_opts o;
	char *prompt_json; /* the request body */
	struct ld_result *res;
	uint64_t t0, deadline;
	atomic_uint next; /* closed loop: next request index */
	pthread_mutex_t lock; /* open loop queue */
	pthread_cond_t cond;
	unsigned *queue, q_head, q_tail;
	bool q_closed;
	atomic_uint idle; /* open loop: workers waiting for a request */
	atomic_uint_fast64_t late; /* open loop: sent while no worker was idle */
};

struct worker {
	struct ld_run *run;
	pthread_t thread;
	int fd;
	unsigned on_conn; /* requests on the current connection */
};

enum {
	OPT_URL = 1000,
	OPT_RATE,
	OPT_CONCURRENCY,
	OPT_REQUESTS,
	OPT_STREAM,
	OPT_MAX_TOKENS,
	OPT_PROMPT_CHARS,
	OPT_DURATION_LIMIT,
	OPT_TIMEOUT,
	OPT_OUT,
	OPT_SUMMARY,
	OPT_KEEPALIVE,
	OPT_ID_PREFIX,
	OPT_ABORT_AFTER,
	OPT_ABORT_FRACTION,
	OPT_MAX_INFLIGHT,
	OPT_BURST,
	OPT_HEADER,
	OPT_PROMPT_TEXT,
	OPT_HELP,
};

/* same order as the OPT_ enum: error messages index it by opt - OPT_URL */
static const struct option long_opts[] = {
	{ "url", required_argument, NULL, OPT_URL },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
	{ "requests", required_argument, NULL, OPT_REQUESTS },
	{ "stream", no_argument, NULL, OPT_STREAM },
	{ "max-tokens", required_argument, NULL, OPT_MAX_TOKENS },
	{ "prompt-chars", required_argument, NULL, OPT_PROMPT_CHARS },
	{ "duration-limit", required_argument, NULL, OPT_DURATION_LIMIT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "summary", required_argument, NULL, OPT_SUMMARY },
	{ "keepalive", required_argument, NULL, OPT_KEEPALIVE },
	{ "id-prefix", required_argument, NULL, OPT_ID_PREFIX },
	{ "abort-after-events", required_argument, NULL, OPT_ABORT_AFTER },
	{ "abort-fraction", required_argument, NULL, OPT_ABORT_FRACTION },
	{ "max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT },
	{ "burst", required_argument, NULL, OPT_BURST },
	{ "header", required_argument, NULL, OPT_HEADER },
	{ "prompt-text", required_argument, NULL, OPT_PROMPT_TEXT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: reqtrace-load --url http://127.0.0.1:PORT/v1/completions\n"
		"                     (--rate R | --concurrency C) --requests N [--stream]\n"
		"                     [--max-tokens K] [--prompt-chars L] [--duration-limit S]\n"
		"                     [--timeout S] [--out FILE] [--summary FILE] [--keepalive K]\n"
		"                     [--id-prefix P] [--abort-after-events E [--abort-fraction "
		"F]]\n"
		"                     [--max-inflight M] [--burst B]\n"
		"                     [--header 'Name: value']... [--prompt-text TEXT]\n"
		"Loopback URLs only. Exits 1 when any request fails a check.\n");
}

static int parse_url(const char *url, struct ld_opts *o)
{
	const char *p, *slash, *colon;
	unsigned long port = 80;
	char *end;
	size_t hl;

	if (strncmp(url, "http://", 7) != 0)
		return -EINVAL;
	p = url + 7;
	slash = strchr(p, '/');
	if (!slash)
		slash = p + strlen(p);
	colon = memchr(p, ':', (size_t)(slash - p));
	hl = (size_t)((colon ? colon : slash) - p);
	if (hl == 0 || hl >= sizeof(o->host))
		return -EINVAL;
	memcpy(o->host, p, hl);
	o->host[hl] = '\0';
	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end != slash || port == 0 || port > 65535)
			return -EINVAL;
	}
	snprintf(o->path, sizeof(o->path), "%s", *slash ? slash : "/");
	for (p = o->path; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return -EINVAL;
	memset(&o->addr, 0, sizeof(o->addr));
	o->addr.sin_family = AF_INET;
	o->addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, strcmp(o->host, "localhost") ? o->host : "127.0.0.1",
		      &o->addr.sin_addr) != 1)
		return -EINVAL;
	/* a load generator must never be pointed at someone else's server */
	if ((ntohl(o->addr.sin_addr.s_addr) >> 24) != 127)
		return -EPERM;
	return 0;
}

/* "Name: value": a token, a colon, no CR, LF or NUL (one header line). */
static bool header_ok(const char *h)
{
	const char *colon = strchr(h, ':');

	if (!colon || colon == h || strlen(h) > HEADER_LEN_MAX || strpbrk(h, "\r\n"))
		return false;
	for (const char *p = h; p < colon; p++)
		if (*p <= 0x20 || *p >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *p))
			return false;
	return true;
}

static bool parse_num(const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end && isfinite(*v) && *v >= lo && *v <= hi;
}

static int worker_connect(struct worker *w)
{
	struct ld_opts *o = &w->run->o;
	struct timeval tv = { .tv_sec = (time_t)o->timeout,
			      .tv_usec = (suseconds_t)(fmod(o->timeout, 1.0) * 1e6) };
	int fd, one = 1, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a stalled server turns into a timeout error, never a hang */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the kernel's receive time of each read (ttft_rx_ns, end_rx_ns); a
	 * kernel without it leaves them null */
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&o->addr, sizeof(o->addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	w->fd = fd;
	w->on_conn = 0;
	return 0;
}

/* recv with the kernel's receive stamp of the data read, in CLOCK_MONOTONIC
 * (*rx_ns 0 when none came). The stamp is CLOCK_REALTIME; the offset is read
 * right after, so a clock step between reads cannot skew it. */
static ssize_t recv_stamped(int fd, char *buf, size_t len, uint64_t *rx_ns)
{
	union {
		char raw[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = ctl.raw,
			      .msg_controllen = sizeof(ctl.raw) };
	struct timespec rx, real, mono;
	struct cmsghdr *c;
	ssize_t n;
	int64_t rx_real, off;

	*rx_ns = 0;
	n = recvmsg(fd, &msg, 0);
	if (n <= 0)
		return n;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS ||
		    c->cmsg_len < CMSG_LEN(sizeof(rx)))
			continue;
		memcpy(&rx, CMSG_DATA(c), sizeof(rx));
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		rx_real = (int64_t)rx.tv_sec * 1000000000 + rx.tv_nsec;
		off = ((int64_t)real.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
		      (real.tv_nsec - mono.tv_nsec);
		if (rx_real > off)
			*rx_ns = (uint64_t)(rx_real - off);
	}
	return n;
}

static void worker_close(struct worker *w, bool reset)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (w->fd < 0)
		return;
	/* linger 0: close sends RST, the abrupt client reset servers must survive */
	if (reset)
		setsockopt(w->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(w->fd);
	w->fd = -1;
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Does request idx abort on purpose? Spread evenly over the run. */
static bool aborts(const struct ld_opts *o, unsigned idx)
{
	if (o->abort_after < 0)
		return false;
	return floor((idx + 1) * o->abort_fraction) > floor(idx * o->abort_fraction);
}

static void run_one(struct worker *w, unsigned idx)
{
	struct ld_run *run = w->run;
	struct ld_opts *o = &run->o;
	struct ld_result *res = &run->res[idx];
	bool last_on_conn, will_abort = aborts(o, idx), retried = false;
	struct tb_buf req;
	struct ld_resp rp;
	char buf[65536];
	uint64_t rx;
	ssize_t n;
	int err, rc = 0;

	snprintf(res->id, sizeof(res->id), "%s%u", o->id_prefix, idx);
	res->sent = true;
	res->tokens = -1;
	last_on_conn = o->keepalive && w->on_conn + 1 >= o->keepalive;
	tb_buf_init(&req, 1u << 24);
	tb_buf_printf(&req,
		      "POST %s HTTP/1.1\r\nHost: %s:%u\r\nContent-Type: application/json\r\n"
		      "Accept: text/event-stream, application/json\r\nx-request-id: %s\r\n",
		      o->path, o->host, ntohs(o->addr.sin_port), res->id);
	for (unsigned h = 0; h < o->n_headers; h++)
		tb_buf_printf(&req, "%s\r\n", o->headers[h]);
	tb_buf_printf(&req, "Content-Length: %zu\r\nConnection: %s\r\n\r\n%s",
		      strlen(run->prompt_json), last_on_conn ? "close" : "keep-alive",
		      run->prompt_json);
	ld_resp_init(&rp, o->stream, res->id, o->max_tokens);
again:
	if (w->fd < 0) {
		err = worker_connect(w);
		res->connect_ns = tb_now_ns();
		if (err) {
			res->start_ns = res->end_ns = res->connect_ns;
			snprintf(res->error, sizeof(res->error), "connect: %s", strerror(-err));
			goto cleanup;
		}
	}
	res->start_ns = tb_now_ns();
	err = send_all(w->fd, req.p, req.len);
	w->on_conn++;
	/* a kept-alive connection the server closed meanwhile: retry once on a new one */
	if (err && w->on_conn > 1 && !retried) {
		worker_close(w, false);
		retried = true;
		goto again;
	}
	while (!err) {
		n = recv_stamped(w->fd, buf, sizeof(buf), &rx);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno == EAGAIN ? -ETIMEDOUT : -errno;
			break;
		}
		/* as above, when the close shows only as end of stream */
		if (n == 0 && rp.st == LD_HEAD && rp.head_len == 0 && w->on_conn > 1 && !retried) {
			worker_close(w, false);
			retried = true;
			goto again;
		}
		rc = ld_resp_feed(&rp, buf, (size_t)n);
		if (n > 0 && rx)
			res->end_rx_ns = rx;
		if (!res->ttft_ns && o->stream && rp.events > 0) {
			res->ttft_ns = tb_now_ns();
			res->ttft_rx_ns = rx;
		}
		if (rc != 0 || n == 0)
			break;
		if (will_abort && rp.events >= (uint32_t)o->abort_after) {
			res->end_ns = tb_now_ns();
			res->aborted = true;
			res->status = rp.status;
			res->events = rp.events;
			worker_close(w, true);
			goto cleanup;
		}
	}
	res->end_ns = tb_now_ns();
	res->status = rp.status;
	res->events = rp.events;
	res->tokens = rp.completion_tokens;
	if (err) {
		snprintf(res->error, sizeof(res->error), "%s", strerror(-err));
	} else if (rc < 0) {
		snprintf(res->error, sizeof(res->error), "%s", rp.err);
	} else if (rc == 0) {
		snprintf(res->error, sizeof(res->error), "connection closed mid-response");
	} else {
		res->ok = true;
	}
	if (!res->ok || !rp.keep_alive || last_on_conn || rp.st == LD_ERROR)
		worker_close(w, false);
cleanup:
	ld_resp_fini(&rp);
	tb_buf_free(&req);
}

/* Closed loop: take the next index. Open loop: wait for the dispatcher. */
static bool next_request(struct ld_run *run, unsigned *idx)
{
	bool got = false;

	if (run->o.concurrency) {
		*idx = atomic_fetch_add(&run->next, 1);
		return *idx < run->o.requests && tb_now_ns() < run->deadline;
	}
	pthread_mutex_lock(&run->lock);
	atomic_fetch_add(&run->idle, 1);
	while (run->q_head == run->q_tail && !run->q_closed)
		pthread_cond_wait(&run->cond, &run->lock);
	atomic_fetch_sub(&run->idle, 1);
	if (run->q_head != run->q_tail) {
		*idx = run->queue[run->q_head++];
		got = true;
	}
	pthread_mutex_unlock(&run->lock);
	return got;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned idx;

	while (next_request(w->run, &idx))
		run_one(w, idx);
	worker_close(w, false);
	return NULL;
}

/*
 * Open loop: request i is due at t0 + i / rate whether or not earlier ones
 * finished; with --burst B, B requests are due together every B / rate.
 */
static void dispatch(struct ld_run *run)
{
	unsigned i, b = run->o.burst ? run->o.burst : 1;
	uint64_t due;

	for (i = 0; i < run->o.requests; i++) {
		due = run->t0 + (uint64_t)((double)(i / b * b) / run->o.rate * 1e9);
		if (due >= run->deadline)
			break;
		tb_sleep_until(due);
		if (atomic_load(&run->idle) == 0)
			atomic_fetch_add(&run->late, 1);
		pthread_mutex_lock(&run->lock);
		run->queue[run->q_tail++] = i;
		pthread_cond_signal(&run->cond);
		pthread_mutex_unlock(&run->lock);
	}
	pthread_mutex_lock(&run->lock);
	run->q_closed = true;
	pthread_cond_broadcast(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "we");
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -EIO;
	return err;
}

static int parse_args(int argc, char **argv, struct ld_opts *o)
{
	const char *url = NULL;
	double v;
	int opt;

	*o = (struct ld_opts){ .max_tokens = -1,
			       .prompt_chars = 256,
			       .duration_limit = 60,
			       .timeout = 30,
			       .abort_after = -1,
			       .abort_fraction = 1,
			       .max_inflight = 256 };
	snprintf(o->id_prefix, sizeof(o->id_prefix), "ld-%d-", (int)getpid());
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_URL:
			url = optarg;
			break;
		case OPT_RATE:
			if (!parse_num(optarg, 1e-3, 1e5, &o->rate))
				goto bad;
			break;
		case OPT_CONCURRENCY:
			if (!parse_num(optarg, 1, WORKERS_MAX, &v) || v != floor(v))
				goto bad;
			o->concurrency = (unsigned)v;
			break;
		case OPT_REQUESTS:
			if (!parse_num(optarg, 1, REQUESTS_MAX, &v) || v != floor(v))
				goto bad;
			o->requests = (unsigned)v;
			break;
		case OPT_STREAM:
			o->stream = true;
			break;
		case OPT_MAX_TOKENS:
			if (!parse_num(optarg, 1, 1 << 20, &v) || v != floor(v))
				goto bad;
			o->max_tokens = (long)v;
			break;
		case OPT_PROMPT_CHARS:
			if (!parse_num(optarg, 0, 1 << 23, &v) || v != floor(v))
				goto bad;
			o->prompt_chars = (unsigned)v;
			break;
		case OPT_DURATION_LIMIT:
			if (!parse_num(optarg, 0.001, 86400, &o->duration_limit))
				goto bad;
			break;
		case OPT_TIMEOUT:
			if (!parse_num(optarg, 0.001, 3600, &o->timeout))
				goto bad;
			break;
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_SUMMARY:
			o->summary = optarg;
			break;
		case OPT_KEEPALIVE:
			if (!parse_num(optarg, 0, 1e9, &v) || v != floor(v))
				goto bad;
			o->keepalive = (unsigned)v;
			break;
		case OPT_ID_PREFIX:
			if (strlen(optarg) >= 48 || strpbrk(optarg, " \t\r\n\"\\"))
				goto bad;
			snprintf(o->id_prefix, sizeof(o->id_prefix), "%s", optarg);
			break;
		case OPT_ABORT_AFTER:
			if (!parse_num(optarg, 0, 1e9, &v) || v != floor(v))
				goto bad;
			o->abort_after = (long)v;
			break;
		case OPT_ABORT_FRACTION:
			if (!parse_num(optarg, 0, 1, &o->abort_fraction))
				goto bad;
			break;
		case OPT_MAX_INFLIGHT:
			if (!parse_num(optarg, 1, WORKERS_MAX, &v) || v != floor(v))
				goto bad;
			o->max_inflight = (unsigned)v;
			break;
		case OPT_BURST:
			if (!parse_num(optarg, 1, WORKERS_MAX, &v) || v != floor(v))
				goto bad;
			o->burst = (unsigned)v;
			break;
		case OPT_HEADER:
			if (o->n_headers >= HEADERS_MAX || !header_ok(optarg))
				goto bad;
			o->headers[o->n_headers++] = optarg;
			break;
		case OPT_PROMPT_TEXT:
			if (strlen(optarg) > 1u << 20)
				goto bad;
			o->prompt_text = optarg;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc || !url || !o->requests || (o->rate > 0) == (o->concurrency > 0)) {
		usage(stderr);
		return -EINVAL;
	}
	switch (parse_url(url, o)) {
	case 0:
		break;
	case -EPERM:
		fprintf(stderr, "reqtrace-load: refusing non-loopback URL '%s'\n", url);
		return -EPERM;
	default:
		fprintf(stderr, "reqtrace-load: bad URL '%s' (http://127.0.0.1:PORT/PATH)\n", url);
		return -EINVAL;
	}
	if (o->burst && !o->rate) {
		fprintf(stderr, "reqtrace-load: --burst needs --rate\n");
		return -EINVAL;
	}
	if (o->abort_after >= 0 && !o->stream) {
		fprintf(stderr, "reqtrace-load: --abort-after-events needs --stream\n");
		return -EINVAL;
	}
	return 0;
bad:
	fprintf(stderr, "reqtrace-load: bad value '%s' for --%s\n", optarg,
		long_opts[opt - OPT_URL].name);
	return -EINVAL;
}

static char *make_body(const struct ld_opts *o)
{
	static const char text[] = "the quick brown fox jumps over a lazy dog ";
	struct tb_buf b;
	unsigned i;

	tb_buf_init(&b, o->prompt_chars + 256u + (o->prompt_text ? 6 * strlen(o->prompt_text) : 0));
	tb_buf_puts(&b, "{\"prompt\":");
	if (o->prompt_text) {
		tb_buf_json_str(&b, o->prompt_text);
	} else {
		tb_buf_puts(&b, "\"");
		for (i = 0; i < o->prompt_chars; i++)
			tb_buf_add(&b, &text[i % (sizeof(text) - 1)], 1);
		tb_buf_puts(&b, "\"");
	}
	tb_buf_printf(&b, ",\"stream\":%s", o->stream ? "true" : "false");
	if (o->max_tokens > 0)
		tb_buf_printf(&b, ",\"max_tokens\":%ld", o->max_tokens);
	tb_buf_puts(&b, "}");
	if (b.overflow) {
		tb_buf_free(&b);
		return NULL;
	}
	return b.p;
}

int main(int argc, char **argv)
{
	struct ld_run run = { 0 };
	struct worker *ws = NULL;
	struct ld_summary sum;
	struct tb_buf out;
	unsigned i, nw = 0, started = 0;
	int err, rc = 1;

	if (parse_args(argc, argv, &run.o))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	tb_buf_init(&out, 1u << 30);
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	run.prompt_json = make_body(&run.o);
	run.res = calloc(run.o.requests, sizeof(*run.res));
	run.queue = calloc(run.o.requests, sizeof(*run.queue));
	nw = run.o.concurrency ? run.o.concurrency : run.o.max_inflight;
	if (nw > run.o.requests)
		nw = run.o.requests;
	ws = calloc(nw, sizeof(*ws));
	if (!run.prompt_json || !run.res || !run.queue || !ws) {
		fprintf(stderr, "reqtrace-load: out of memory\n");
		goto cleanup;
	}
	run.t0 = tb_now_ns();
	run.deadline = run.t0 + (uint64_t)(run.o.duration_limit * 1e9);
	for (i = 0; i < nw; i++) {
		ws[i].run = &run;
		ws[i].fd = -1;
		err = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (err) {
			fprintf(stderr, "reqtrace-load: thread: %s\n", strerror(err));
			break;
		}
		started++;
	}
	if (!run.o.concurrency)
		dispatch(&run);
	for (i = 0; i < started; i++)
		pthread_join(ws[i].thread, NULL);
	if (started < nw)
		goto cleanup;

	for (i = 0; i < run.o.requests; i++) {
		if (!run.res[i].sent)
			continue;
		ld_result_json(&run.res[i], &out);
		if (!run.res[i].ok && !run.res[i].aborted)
			fprintf(stderr, "reqtrace-load: %s: %s\n", run.res[i].id, run.res[i].error);
	}
	if (run.o.out && (err = write_file(run.o.out, out.p ? out.p : "", out.len))) {
		fprintf(stderr, "reqtrace-load: %s: %s\n", run.o.out, strerror(-err));
		goto cleanup;
	}
	if (ld_summarize(run.res, run.o.requests, &sum))
		goto cleanup;
	tb_buf_reset(&out);
	ld_summary_json(&sum, &out);
	fputs(out.p, stderr);
	if (run.o.summary && (err = write_file(run.o.summary, out.p, out.len))) {
		fprintf(stderr, "reqtrace-load: %s: %s\n", run.o.summary, strerror(-err));
		goto cleanup;
	}
	if (atomic_load(&run.late))
		fprintf(stderr,
			"reqtrace-load: %llu requests were due while every worker was busy\n",
			(unsigned long long)atomic_load(&run.late));
	rc = sum.errors || sum.not_sent ? 1 : 0;
	if (sum.not_sent)
		fprintf(stderr, "reqtrace-load: %llu requests not sent within --duration-limit\n",
			(unsigned long long)sum.not_sent);
cleanup:
	tb_buf_free(&out);
	free(ws);
	free(run.queue);
	free(run.res);
	free(run.prompt_json);
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	return rc;
}
