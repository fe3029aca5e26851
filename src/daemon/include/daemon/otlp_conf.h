/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The OTLP/HTTP exporter's options and the pure rules it follows
 * (docs/otlp.md): which responses are retried, Retry-After, backoff, the
 * OTEL_* environment variables, the headers list, partial_success. Kept
 * free of libcurl and the loop so unit tests reach all of it; the exporter
 * itself is src/daemon/otlp.c.
 */
#ifndef RT_DAEMON_OTLP_CONF_H
#define RT_DAEMON_OTLP_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define RT_OTLP_HEADERS_MAX 16
#define RT_OTLP_URL_MAX 2048

struct rt_otlp_opts {
	const char *endpoint; /* the full URL POSTed to (…/v1/traces); NULL: off */
	const char *headers; /* "k=v,k2=v2", values percent-encoded; NULL: none */
	bool no_gzip; /* send the body uncompressed */
	uint32_t timeout_ms; /* one POST, connection included */
	const char *ca_file; /* PEM bundle to verify the collector; NULL: system's */
	const char *service_name; /* NULL: the traced process's name */
	double sample_ratio; /* 0..1, by trace id */
	uint32_t max_spans_per_s; /* requests exported per second; 0: no cap */
	uint32_t queue; /* requests waiting to be sent */
	uint32_t batch; /* requests per POST */
	uint32_t batch_delay_ms; /* a partial batch waits at most this long */
};

/* The defaults: off, gzip, 10 s, ratio 1, no cap, queue 2048, batch 512, 1 s. */
void rt_otlp_opts_init(struct rt_otlp_opts *o);

/* What to do with an HTTP answer (0: no answer, a transport error). */
enum rt_otlp_verdict {
	RT_OTLP_DONE = 0, /* 2xx: delivered (partial_success aside) */
	RT_OTLP_RETRY = 1, /* 429, 502, 503, 504, or no answer */
	RT_OTLP_DROP = 2, /* anything else, 400 and 413 above all: never retried */
};
enum rt_otlp_verdict rt_otlp_verdict(long http_status);

/*
 * Retry-After: delay-seconds or an HTTP-date (RFC 9110), relative to now.
 * 0 with *ms set, or -EINVAL (the caller then uses its own backoff).
 */
int rt_otlp_retry_after_ms(const char *value, time_t now, uint64_t *ms);

/*
 * The attempt-th retry's wait (attempt from 0): base * 2^attempt capped at
 * max, with "equal jitter" from rnd (the upper half is random), so that
 * many daemons behind one collector do not retry in step.
 */
uint64_t rt_otlp_backoff_ms(unsigned attempt, uint64_t base_ms, uint64_t max_ms, uint64_t rnd);

struct rt_otlp_header {
	char name[64];
	char value[512];
};

/*
 * "k=v,k2=v2" (OTEL_EXPORTER_OTLP_HEADERS: W3C Baggage without properties;
 * values percent-decoded, blanks around items trimmed) into out[]. Returns
 * the number of headers, or -EINVAL (why says which item) / -E2BIG.
 */
int rt_otlp_parse_headers(const char *text, struct rt_otlp_header *out, size_t max, char *why,
			  size_t why_len);

/*
 * The config values the OTEL_* variables give, as config-file text, for
 * the keys they map to. get is getenv in the daemon. The signal-specific
 * OTEL_EXPORTER_OTLP_TRACES_* win over OTEL_EXPORTER_OTLP_*; the generic
 * endpoint is a base URL that gets "/v1/traces" appended, the traces one is
 * used as is; the timeout is milliseconds. An empty variable is unset.
 */
struct rt_otlp_env {
	char endpoint[RT_OTLP_URL_MAX]; /* "" unset, as the rest */
	const char *headers;
	char timeout[32]; /* "N ms" in the config's duration syntax */
	const char *compression;
	const char *ca_file;
	const char *service_name;
	const char *sample_ratio; /* OTEL_TRACES_SAMPLER_ARG with a ratio sampler */
	bool disabled; /* OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none */
	const char *warning; /* set when a variable asks for what we do not do */
};
int rt_otlp_env_read(const char *(*get)(const char *name), struct rt_otlp_env *out);

/*
 * rejectedSpans of an ExportTraceServiceResponse body (JSON; partialSuccess
 * may be absent or empty). 0 with *rejected set (0 when none), or -EINVAL
 * for a body that is no JSON object (a collector may answer 200 with "").
 */
int rt_otlp_partial_success(const char *body, size_t len, uint64_t *rejected, char *msg,
			    size_t msg_len);

/*
 * The volume cap: a token bucket of rate tokens per second holding one
 * second's worth at most (the burst). Starts full at the first take.
 */
struct rt_otlp_bucket {
	double tokens;
	uint64_t last_ns; /* 0: not used yet */
};
/* Takes one token at now_ns (monotonic); false: over the cap. rate 0: no cap. */
bool rt_otlp_bucket_take(struct rt_otlp_bucket *b, uint64_t now_ns, uint32_t rate);

/* Whether the request with this trace id (32 hex digits) is exported at ratio. */
bool rt_otlp_sampled(const char *trace_id, double ratio);

#endif /* RT_DAEMON_OTLP_CONF_H */
