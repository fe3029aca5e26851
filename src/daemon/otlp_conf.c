// SPDX-License-Identifier: BSD-2-Clause
/* The OTLP exporter's pure rules (daemon/otlp_conf.h, docs/otlp.md). */
#include "daemon/otlp_conf.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rt_otlp_opts_init(struct rt_otlp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_ms = 10000; /* OTEL_EXPORTER_OTLP_TIMEOUT's default */
	o->sample_ratio = 1.0;
	/* the OTel batch span processor's defaults */
	o->queue = 2048;
	o->batch = 512;
	o->batch_delay_ms = 1000;
}

enum rt_otlp_verdict rt_otlp_verdict(long status)
{
	if (status >= 200 && status < 300)
		return RT_OTLP_DONE;
	/* the retryable codes of the OTLP/HTTP spec; 400 (bad data) and 413
	 * (too large) would fail the same way again */
	switch (status) {
	case 0:
	case 429:
	case 502:
	case 503:
	case 504:
		return RT_OTLP_RETRY;
	default:
		return RT_OTLP_DROP;
	}
}

int rt_otlp_retry_after_ms(const char *value, time_t now, uint64_t *ms)
{
	const char *p = value;
	struct tm tm;
	char *end;
	time_t t;

	while (*p == ' ' || *p == '\t')
		p++;
	if (isdigit((unsigned char)*p)) {
		unsigned long long s;

		errno = 0;
		s = strtoull(p, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
			end++;
		if (errno || *end || s > 86400ULL * 365)
			return -EINVAL;
		*ms = s * 1000;
		return 0;
	}
	/* IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" (the form RFC 9110 says to send) */
	memset(&tm, 0, sizeof(tm));
	end = strptime(p, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end)
		return -EINVAL;
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	if (*end)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ms = t > now ? (uint64_t)(t - now) * 1000 : 0;
	return 0;
}

uint64_t rt_otlp_backoff_ms(unsigned attempt, uint64_t base_ms, uint64_t max_ms, uint64_t rnd)
{
	uint64_t d = base_ms;

	while (attempt-- && d < max_ms)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	return d / 2 + (d / 2 ? rnd % (d - d / 2 + 1) : 0);
}

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* p[0..n) trimmed of blanks */
static void trim(const char **p, size_t *n)
{
	while (*n && isblank((unsigned char)**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && isblank((unsigned char)(*p)[*n - 1]))
		(*n)--;
}

int rt_otlp_parse_headers(const char *text, struct rt_otlp_header *out, size_t max, char *why,
			  size_t why_len)
{
	const char *p = text;
	size_t count = 0;

	while (*p) {
		const char *item = p, *eq, *k, *v;
		size_t n = strcspn(p, ","), kn, vn, i, o = 0;

		p += n;
		if (*p == ',')
			p++;
		trim(&item, &n);
		if (!n)
			continue; /* "a=b,,c=d": an empty item is no header */
		eq = memchr(item, '=', n);
		if (!eq) {
			snprintf(why, why_len, "header '%.*s' has no '='", (int)n, item);
			return -EINVAL;
		}
		k = item;
		kn = (size_t)(eq - item);
		v = eq + 1;
		vn = n - kn - 1;
		trim(&k, &kn);
		trim(&v, &vn);
		if (!kn || kn >= sizeof(out->name)) {
			snprintf(why, why_len, "header name '%.*s' empty or too long", (int)kn, k);
			return -EINVAL;
		}
		for (i = 0; i < kn; i++)
			/* an HTTP token: a name with ':' or CR/LF could forge other headers */
			if (!isalnum((unsigned char)k[i]) && !strchr("!#$%&'*+-.^_`|~", k[i])) {
				snprintf(why, why_len, "header name '%.*s' is no HTTP token",
					 (int)kn, k);
				return -EINVAL;
			}
		if (count == max) {
			snprintf(why, why_len, "more than %zu headers", max);
			return -E2BIG;
		}
		memcpy(out[count].name, k, kn);
		out[count].name[kn] = '\0';
		for (i = 0; i < vn; i++) {
			int c = (unsigned char)v[i];

			if (c == '%' && i + 2 < vn && unhex(v[i + 1]) >= 0 &&
			    unhex(v[i + 2]) >= 0) {
				c = unhex(v[i + 1]) * 16 + unhex(v[i + 2]);
				i += 2;
			}
			if (c == '\r' || c == '\n' || c == '\0' || o + 1 >= sizeof(out->value)) {
				snprintf(why, why_len,
					 "header '%s': value too long or has CR, LF or NUL",
					 out[count].name);
				return -EINVAL;
			}
			out[count].value[o++] = (char)c;
		}
		out[count].value[o] = '\0';
		count++;
	}
	return (int)count;
}

static const char *env(const char *(*get)(const char *), const char *traces, const char *generic)
{
	const char *v = get(traces);

	if (v && *v)
		return v;
	v = generic ? get(generic) : NULL;
	return v && *v ? v : NULL;
}

int rt_otlp_env_read(const char *(*get)(const char *name), struct rt_otlp_env *out)
{
	const char *v;

	memset(out, 0, sizeof(*out));
	v = env(get, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", NULL);
	if (v) {
		if (strlen(v) >= sizeof(out->endpoint))
			return -ENAMETOOLONG;
		strcpy(out->endpoint, v);
	} else if ((v = env(get, "OTEL_EXPORTER_OTLP_ENDPOINT", NULL))) {
		size_t n = strlen(v);

		/* a base URL: the signal's path goes after it, one slash between */
		while (n && v[n - 1] == '/')
			n--;
		if (n + sizeof("/v1/traces") > sizeof(out->endpoint))
			return -ENAMETOOLONG;
		snprintf(out->endpoint, sizeof(out->endpoint), "%.*s/v1/traces", (int)n, v);
	}
	out->headers = env(get, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
	v = env(get, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
	if (v)
		snprintf(out->timeout, sizeof(out->timeout), "%sms", v);
	out->compression =
		env(get, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
	out->ca_file =
		env(get, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE");
	out->service_name = env(get, "OTEL_SERVICE_NAME", NULL);
	v = env(get, "OTEL_TRACES_SAMPLER", NULL);
	if (v && (!strcmp(v, "traceidratio") || !strcmp(v, "parentbased_traceidratio")))
		out->sample_ratio = env(get, "OTEL_TRACES_SAMPLER_ARG", NULL);
	else if (v && (!strcmp(v, "always_off") || !strcmp(v, "parentbased_always_off")))
		out->sample_ratio = "0";
	v = env(get, "OTEL_SDK_DISABLED", NULL);
	if (v && !strcasecmp(v, "true"))
		out->disabled = true;
	v = env(get, "OTEL_TRACES_EXPORTER", NULL);
	if (v && !strcmp(v, "none"))
		out->disabled = true;
	v = env(get, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
	if (v && strcmp(v, "http/json"))
		out->warning = "OTEL_EXPORTER_OTLP_PROTOCOL: reqtraced sends http/json only";
	if (env(get, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"))
		out->warning =
			"OTEL_EXPORTER_OTLP_CLIENT_KEY: client certificates are not supported";
	return 0;
}

int rt_otlp_partial_success(const char *body, size_t len, uint64_t *rejected, char *msg,
			    size_t msg_len)
{
	cJSON *root = cJSON_ParseWithLength(body, len), *ps, *v;

	*rejected = 0;
	if (msg_len)
		msg[0] = '\0';
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	ps = cJSON_GetObjectItemCaseSensitive(root, "partialSuccess");
	v = cJSON_GetObjectItemCaseSensitive(ps, "rejectedSpans");
	/* an int64: a string in proto3 JSON, though some servers write a number */
	if (cJSON_IsString(v))
		*rejected = strtoull(v->valuestring, NULL, 10);
	else if (cJSON_IsNumber(v) && v->valuedouble > 0)
		*rejected = (uint64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(ps, "errorMessage");
	if (cJSON_IsString(v) && msg_len)
		snprintf(msg, msg_len, "%s", v->valuestring);
	cJSON_Delete(root);
	return 0;
}

bool rt_otlp_bucket_take(struct rt_otlp_bucket *b, uint64_t now_ns, uint32_t rate)
{
	if (!rate)
		return true;
	if (!b->last_ns)
		b->tokens = rate;
	else if (now_ns > b->last_ns)
		b->tokens += (double)(now_ns - b->last_ns) * rate / 1e9;
	if (b->tokens > rate)
		b->tokens = rate;
	b->last_ns = now_ns;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

bool rt_otlp_sampled(const char *trace_id, double ratio)
{
	uint64_t v = 0;
	int i, d;

	if (ratio >= 1.0)
		return true;
	if (ratio <= 0.0)
		return false;
	/* the trace id's low 64 bits, uniform for W3C random ids, against the
	 * ratio: requests of one trace are kept or dropped together */
	for (i = 16; i < 32; i++) {
		d = unhex((unsigned char)trace_id[i]);
		if (d < 0)
			return true;
		v = v << 4 | (uint64_t)d;
	}
	return (double)v < ratio * 18446744073709551616.0;
}
