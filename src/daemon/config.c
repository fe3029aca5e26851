// SPDX-License-Identifier: BSD-2-Clause
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "common/dur.h"
#include "daemon/otlp_conf.h"
#include "daemon/procfs.h"

/* A file larger than this is no config file: refuse rather than read it all. */
#define CONFIG_MAX_BYTES (1 << 20)

struct rt_cfg_str {
	struct rt_cfg_str *next;
	char s[];
};

static const struct {
	const char *name;
	const char *section;
} keys[RT_CFG__N] = {
	[RT_CFG_PIDS] = { "pids", "targets" },
	[RT_CFG_PORTS] = { "ports", "targets" },
	[RT_CFG_COMMS] = { "comms", "targets" },
	[RT_CFG_CGROUPS] = { "cgroups", "targets" },
	[RT_CFG_SOCKET] = { "socket", "daemon" },
	[RT_CFG_SOCKET_GROUP] = { "socket_group", "daemon" },
	[RT_CFG_RECORD] = { "record", "daemon" },
	[RT_CFG_CAPTURE_BODIES] = { "capture_bodies", "daemon" },
	[RT_CFG_INJECT] = { "inject", "daemon" },
	[RT_CFG_INJECT_SOCKET] = { "inject_socket", "daemon" },
	[RT_CFG_LOG_LEVEL] = { "log_level", "daemon" },
	[RT_CFG_RING_SIZE] = { "ring_size", "limits" },
	[RT_CFG_HEAD_BYTES] = { "head_bytes", "limits" },
	[RT_CFG_TAIL_BYTES] = { "tail_bytes", "limits" },
	[RT_CFG_MAX_SPANS] = { "max_spans", "limits" },
	[RT_CFG_MAX_REQUESTS] = { "max_requests", "limits" },
	[RT_CFG_IDLE_TIMEOUT] = { "idle_timeout", "limits" },
	[RT_CFG_METRICS_LISTEN] = { "metrics_listen", "exporters" },
	[RT_CFG_OTLP_ENDPOINT] = { "otlp_endpoint", "exporters" },
	[RT_CFG_OTLP_HEADERS] = { "otlp_headers", "exporters" },
	[RT_CFG_OTLP_COMPRESSION] = { "otlp_compression", "exporters" },
	[RT_CFG_OTLP_TIMEOUT] = { "otlp_timeout", "exporters" },
	[RT_CFG_OTLP_CA_FILE] = { "otlp_ca_file", "exporters" },
	[RT_CFG_OTLP_SERVICE_NAME] = { "otlp_service_name", "exporters" },
	[RT_CFG_OTLP_SAMPLE_RATIO] = { "otlp_sample_ratio", "exporters" },
	[RT_CFG_OTLP_MAX_SPANS_PER_S] = { "otlp_max_spans_per_s", "exporters" },
	[RT_CFG_OTLP_QUEUE] = { "otlp_queue", "exporters" },
	[RT_CFG_OTLP_BATCH] = { "otlp_batch", "exporters" },
	[RT_CFG_OTLP_BATCH_DELAY] = { "otlp_batch_delay", "exporters" },
	[RT_CFG_JSONL_PATH] = { "jsonl_path", "exporters" },
	[RT_CFG_JSONL_MAX_BYTES] = { "jsonl_max_bytes", "exporters" },
	[RT_CFG_JSONL_KEEP] = { "jsonl_keep", "exporters" },
	[RT_CFG_PACK_DIR] = { "pack_dir", "daemon" },
	[RT_CFG_MAX_VLLM_REQUESTS] = { "max_vllm_requests", "limits" },
	[RT_CFG_PIN_DIR] = { "pin_dir", "daemon" },
};

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void rt_config_init(struct rt_config *c)
{
	memset(c, 0, sizeof(*c));
	c->o.socket_path = RT_DAEMON_SOCKET;
	c->o.inject_path = RT_DAEMON_INJECT_SOCKET;
	c->o.socket_group = (gid_t)-1;
	c->inject = true;
	c->log_level = RT_LOG_INFO;
	rt_otlp_opts_init(&c->o.otlp);
	c->o.jsonl_max_bytes = RT_DAEMON_JSONL_MAX_BYTES;
	c->o.jsonl_keep = RT_DAEMON_JSONL_KEEP;
	c->o.pack_dir = RT_DAEMON_PACK_DIR;
	c->o.pin_dir = RT_DAEMON_PIN_DIR;
}

void rt_config_fini(struct rt_config *c)
{
	struct rt_cfg_str *s, *next;

	for (s = c->strs; s; s = next) {
		next = s->next;
		free(s);
	}
	c->strs = NULL;
}

int rt_config_key(const char *name)
{
	int i;

	for (i = 0; i < RT_CFG__N; i++)
		if (!strcmp(keys[i].name, name))
			return i;
	return -ENOENT;
}

const char *rt_config_key_name(enum rt_cfg_key k)
{
	return k < RT_CFG__N ? keys[k].name : "?";
}

const char *rt_config_key_section(enum rt_cfg_key k)
{
	return k < RT_CFG__N ? keys[k].section : "?";
}

static const char *keep(struct rt_config *c, const char *s, size_t n)
{
	struct rt_cfg_str *e = malloc(sizeof(*e) + n + 1);

	if (!e)
		return NULL;
	memcpy(e->s, s, n);
	e->s[n] = '\0';
	e->next = c->strs;
	c->strs = e;
	return e->s;
}

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- value parsers: the one place each kind of value is read ---- */

static int parse_count(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "8388608", "8192K", "8M", "1G": binary multiples, as ring sizes are. */
static int parse_size(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'K':
	case 'k':
		mul = 1ULL << 10;
		end++;
		break;
	case 'M':
	case 'm':
		mul = 1ULL << 20;
		end++;
		break;
	case 'G':
	case 'g':
		mul = 1ULL << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end || v > ULONG_MAX / mul || v * mul < min || v * mul > max)
		return -EINVAL;
	*out = (unsigned long)(v * mul);
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * HOST:PORT with an IPv4 address, a host name or a bracketed IPv6 address
 * ("[::1]:9464"); the port 1..65535. The listener resolves a name.
 */
static int parse_addr_port(const char *s, const char **why)
{
	char host[256], buf[sizeof(struct in6_addr)];
	const char *colon, *p;
	unsigned long port;
	size_t n;

	/* a bare PORT or :PORT means loopback, as --metrics-listen takes it (docs/metrics.md) */
	p = s[0] == ':' ? s + 1 : s;
	if (*p && strspn(p, "0123456789") == strlen(p)) {
		port = strlen(p) <= 5 ? strtoul(p, NULL, 10) : 0;
		if (!port || port > 65535) {
			*why = "port out of range 1-65535";
			return -EINVAL;
		}
		return 0;
	}
	if (s[0] == '[') {
		p = strchr(s, ']');
		if (!p || p[1] != ':') {
			*why = "want [IPV6]:PORT";
			return -EINVAL;
		}
		n = (size_t)(p - s - 1);
		if (n >= sizeof(host)) {
			*why = "address too long";
			return -EINVAL;
		}
		memcpy(host, s + 1, n);
		host[n] = '\0';
		if (inet_pton(AF_INET6, host, buf) != 1) {
			*why = "not an IPv6 address in the brackets";
			return -EINVAL;
		}
		colon = p + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "no port: want HOST:PORT";
			return -EINVAL;
		}
		n = (size_t)(colon - s);
		if (!n || n >= sizeof(host)) {
			*why = n ? "host too long" : "no host: want HOST:PORT";
			return -EINVAL;
		}
		memcpy(host, s, n);
		host[n] = '\0';
		/* a listening address: numeric, as the listener binds it (no resolver) */
		if (inet_pton(AF_INET, host, buf) != 1) {
			*why = strchr(host, ':') ? "put an IPv6 address in brackets" :
						   "not an IPv4 address";
			return -EINVAL;
		}
	}
	if (parse_count(colon + 1, 1, 65535, &port)) {
		*why = "port not in 1..65535";
		return -EINVAL;
	}
	return 0;
}

/* Items of a list value: separated by commas, and by blanks too unless
 * the items may hold blanks themselves (command names, cgroup paths). */
static int set_list(struct rt_config *c, enum rt_cfg_key k, const char *value, char *why,
		    size_t len)
{
	const char *seps = (k == RT_CFG_PIDS || k == RT_CFG_PORTS) ? ", \t" : ",";
	const char *p = value, *q, *item;
	char cgpath[RT_TARGET_CGROUP_LEN], tmp[32];
	unsigned long v;
	size_t n;
	int items = 0;

	for (;;) {
		while (*p && (strchr(seps, *p) || *p == ' ' || *p == '\t'))
			p++;
		if (!*p)
			break;
		for (q = p; *q && !strchr(seps, *q); q++)
			;
		n = (size_t)(q - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		items++;
		switch (k) {
		case RT_CFG_PIDS:
		case RT_CFG_PORTS:
			if (n >= sizeof(tmp))
				return fail(why, len, "bad %s '%.*s...' (too long)",
					    k == RT_CFG_PIDS ? "pid" : "port", 16, p);
			memcpy(tmp, p, n);
			tmp[n] = '\0';
			if (k == RT_CFG_PIDS) {
				if (parse_count(tmp, 1, INT_MAX, &v))
					return fail(why, len, "bad pid '%s' (want 1..%d)", tmp,
						    INT_MAX);
				if (c->o.n_pids >= RT_DAEMON_ARGS_MAX)
					goto full;
				c->o.pids[c->o.n_pids++] = (pid_t)v;
			} else {
				if (parse_count(tmp, 1, 65535, &v))
					return fail(why, len, "bad port '%s' (want 1..65535)", tmp);
				if (c->o.n_ports >= RT_DAEMON_ARGS_MAX)
					goto full;
				c->o.ports[c->o.n_ports++] = (uint16_t)v;
			}
			break;
		case RT_CFG_COMMS:
			if (n > 15)
				return fail(why, len,
					    "bad command name '%.*s' (want 1 to 15 characters)",
					    (int)n, p);
			if (c->o.n_comms >= RT_DAEMON_ARGS_MAX)
				goto full;
			if (!(item = keep(c, p, n)))
				return -ENOMEM;
			c->o.comms[c->o.n_comms++] = item;
			break;
		case RT_CFG_CGROUPS:
			if (!(item = keep(c, p, n)))
				return -ENOMEM;
			if (rt_procfs_cgroup_path(item, cgpath, sizeof(cgpath)))
				return fail(why, len,
					    "bad cgroup '%s' (want a cgroup path without '..', "
					    "under %d characters)",
					    item, RT_TARGET_CGROUP_LEN);
			if (c->o.n_cgroups >= RT_DAEMON_ARGS_MAX)
				goto full;
			c->o.cgroups[c->o.n_cgroups++] = item;
			break;
		default:
			return -EINVAL;
		}
		p = q;
	}
	if (!items)
		return fail(why, len, "empty list");
	return 0;
full:
	snprintf(why, len, "more than %d items", RT_DAEMON_ARGS_MAX);
	return -E2BIG;
}

/* The otlp_* keys (docs/otlp.md). */
static int set_otlp(struct rt_config *c, enum rt_cfg_key k, const char *value, char *why,
		    size_t len)
{
	struct rt_otlp_opts *o = &c->o.otlp;
	struct rt_otlp_header h[RT_OTLP_HEADERS_MAX];
	const char *s = NULL;
	unsigned long v;
	uint64_t ns;
	double r;
	char *end;

	switch (k) {
	case RT_CFG_OTLP_ENDPOINT:
		/* empty or off: no export (the default) */
		if (!*value || !strcasecmp(value, "off")) {
			o->endpoint = NULL;
			return 0;
		}
		if (strncmp(value, "http://", 7) && strncmp(value, "https://", 8))
			return fail(why, len,
				    "bad URL '%s' (want http://HOST[:PORT]/PATH or https://...)",
				    value);
		if (strlen(value) >= RT_OTLP_URL_MAX)
			return fail(why, len, "URL longer than %d characters", RT_OTLP_URL_MAX - 1);
		break;
	case RT_CFG_OTLP_HEADERS:
		if (rt_otlp_parse_headers(value, h, RT_OTLP_HEADERS_MAX, why, len) < 0)
			return -EINVAL;
		break;
	case RT_CFG_OTLP_COMPRESSION:
		if (strcasecmp(value, "gzip") && strcasecmp(value, "none"))
			return fail(why, len, "bad compression '%s' (want gzip or none)", value);
		o->no_gzip = !strcasecmp(value, "none");
		return 0;
	case RT_CFG_OTLP_TIMEOUT:
	case RT_CFG_OTLP_BATCH_DELAY:
		if (rt_dur_parse(value, &ns) || ns < 1000000 || ns > 3600ULL * 1000000000ULL)
			return fail(why, len,
				    "bad duration '%s' (want 1ms to 1h, with a unit: ms, s, m)",
				    value);
		if (k == RT_CFG_OTLP_TIMEOUT)
			o->timeout_ms = (uint32_t)(ns / 1000000);
		else
			o->batch_delay_ms = (uint32_t)(ns / 1000000);
		return 0;
	case RT_CFG_OTLP_CA_FILE:
	case RT_CFG_OTLP_SERVICE_NAME:
		break;
	case RT_CFG_OTLP_SAMPLE_RATIO:
		errno = 0;
		r = strtod(value, &end);
		if (errno || end == value || *end || !(r >= 0.0 && r <= 1.0))
			return fail(why, len, "bad ratio '%s' (want 0 to 1)", value);
		o->sample_ratio = r;
		return 0;
	case RT_CFG_OTLP_MAX_SPANS_PER_S:
		if (parse_count(value, 0, 10000000, &v))
			return fail(why, len, "bad rate '%s' (want 0 (no cap) to 10000000)", value);
		o->max_spans_per_s = (uint32_t)v;
		return 0;
	case RT_CFG_OTLP_QUEUE:
	case RT_CFG_OTLP_BATCH:
		if (parse_count(value, 1, 1000000, &v))
			return fail(why, len, "bad number '%s' (want 1 to 1000000)", value);
		if (k == RT_CFG_OTLP_QUEUE)
			o->queue = (uint32_t)v;
		else
			o->batch = (uint32_t)v;
		return 0;
	default:
		return fail(why, len, "unknown key");
	}
	/* the string keys; empty unsets */
	if (*value && !(s = keep(c, value, strlen(value))))
		return -ENOMEM;
	if (k == RT_CFG_OTLP_ENDPOINT)
		o->endpoint = s;
	else if (k == RT_CFG_OTLP_HEADERS)
		o->headers = s;
	else if (k == RT_CFG_OTLP_CA_FILE)
		o->ca_file = s;
	else
		o->service_name = s;
	return 0;
}

int rt_config_set(struct rt_config *c, enum rt_cfg_key k, const char *value, char *why, size_t len)
{
	const char *s, *reason;
	struct group *gr;
	unsigned long v;
	uint64_t ns;
	size_t i;
	int err;

	if (k >= RT_CFG__N)
		return fail(why, len, "unknown key");
	switch (k) {
	case RT_CFG_PIDS:
	case RT_CFG_PORTS:
	case RT_CFG_COMMS:
	case RT_CFG_CGROUPS:
		err = set_list(c, k, value, why, len);
		if (err)
			return err;
		break;
	case RT_CFG_SOCKET:
	case RT_CFG_INJECT_SOCKET:
		if (!*value)
			return fail(why, len, "empty path");
		if (!(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		if (k == RT_CFG_SOCKET)
			c->o.socket_path = s;
		else
			c->o.inject_path = s;
		break;
	case RT_CFG_PACK_DIR:
		/* empty: no engine packs */
		if (!(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		c->o.pack_dir = s;
		break;
	case RT_CFG_PIN_DIR:
		/* empty: links not pinned */
		if (*value && *value != '/')
			return fail(why, len, "an absolute path in a bpffs mount, or empty");
		if (!(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		c->o.pin_dir = s;
		break;
	case RT_CFG_RECORD:
		/* empty: no recording, so a file can say so explicitly */
		s = NULL;
		if (*value && !(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		c->o.record_path = s;
		break;
	case RT_CFG_SOCKET_GROUP:
		if (!*value) {
			c->o.socket_group = (gid_t)-1;
			break;
		}
		gr = getgrnam(value);
		if (!gr)
			return fail(why, len, "no group '%s'", value);
		c->o.socket_group = gr->gr_gid;
		break;
	case RT_CFG_CAPTURE_BODIES:
	case RT_CFG_INJECT:
		if (parse_bool(value, k == RT_CFG_INJECT ? &c->inject : &c->o.capture_bodies))
			return fail(why, len, "bad boolean '%s' (want true or false)", value);
		break;
	case RT_CFG_LOG_LEVEL:
		for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
			if (!strcasecmp(value, level_names[i]))
				break;
		if (i == sizeof(level_names) / sizeof(level_names[0]))
			return fail(why, len,
				    "bad log level '%s' (want error, warn, info or debug)", value);
		c->log_level = (enum rt_log_level)i;
		break;
	case RT_CFG_RING_SIZE:
		if (parse_size(value, 4096, 1UL << 30, &v))
			return fail(why, len,
				    "bad size '%s' (want a number with optional K/M/G, 4096 to "
				    "1G)",
				    value);
		c->o.ring_bytes = (uint32_t)v;
		break;
	case RT_CFG_HEAD_BYTES:
	case RT_CFG_TAIL_BYTES:
		if (parse_size(value, 0,
			       k == RT_CFG_HEAD_BYTES ? RT_SOCK_HEAD_MAX : RT_SOCK_TAIL_MAX, &v))
			return fail(why, len,
				    "bad size '%s' (want a number with optional K/M/G, 0 to %d)",
				    value,
				    k == RT_CFG_HEAD_BYTES ? RT_SOCK_HEAD_MAX : RT_SOCK_TAIL_MAX);
		if (k == RT_CFG_HEAD_BYTES)
			c->o.head_bytes = (uint16_t)v;
		else
			c->o.tail_bytes = (uint16_t)v;
		break;
	case RT_CFG_MAX_SPANS:
	case RT_CFG_MAX_REQUESTS:
		if (parse_count(value, 1, 10000000, &v))
			return fail(why, len, "bad number '%s' (want 1 to 10000000)", value);
		if (k == RT_CFG_MAX_SPANS)
			c->o.max_spans = (uint32_t)v;
		else
			c->o.max_requests = (uint32_t)v;
		break;
	case RT_CFG_MAX_VLLM_REQUESTS:
		/* auto: as many as max_requests, whatever that is set to */
		if (!strcasecmp(value, "auto")) {
			c->o.max_vllm_requests = 0;
			break;
		}
		if (parse_count(value, 1, 10000000, &v))
			return fail(why, len, "bad number '%s' (want 1 to 10000000, or auto)",
				    value);
		c->o.max_vllm_requests = (uint32_t)v;
		break;
	case RT_CFG_IDLE_TIMEOUT:
		if (rt_dur_parse(value, &ns) || !ns)
			return fail(why, len,
				    "bad duration '%s' (want a number with a unit: ns, us, ms, s, "
				    "m, h)",
				    value);
		c->o.idle_timeout_ns = ns;
		break;
	case RT_CFG_METRICS_LISTEN:
		/* empty or off: no listener (the default) */
		if (!*value || !strcasecmp(value, "off")) {
			c->o.metrics_listen = NULL;
			break;
		}
		if (parse_addr_port(value, &reason))
			return fail(why, len, "bad address '%s' (%s)", value, reason);
		if (!(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		c->o.metrics_listen = s;
		break;
	case RT_CFG_OTLP_ENDPOINT:
	case RT_CFG_OTLP_HEADERS:
	case RT_CFG_OTLP_COMPRESSION:
	case RT_CFG_OTLP_TIMEOUT:
	case RT_CFG_OTLP_CA_FILE:
	case RT_CFG_OTLP_SERVICE_NAME:
	case RT_CFG_OTLP_SAMPLE_RATIO:
	case RT_CFG_OTLP_MAX_SPANS_PER_S:
	case RT_CFG_OTLP_QUEUE:
	case RT_CFG_OTLP_BATCH:
	case RT_CFG_OTLP_BATCH_DELAY:
		err = set_otlp(c, k, value, why, len);
		if (err)
			return err;
		break;
	case RT_CFG_JSONL_PATH:
		/* empty or off: no JSONL file (the default) */
		s = NULL;
		if (*value && strcasecmp(value, "off") && !(s = keep(c, value, strlen(value))))
			return -ENOMEM;
		c->o.jsonl_path = s;
		break;
	case RT_CFG_JSONL_MAX_BYTES:
		/* 0: never rotated here (an external logrotate and SIGHUP) */
		if (parse_size(value, 0, 1UL << 40, &v) || (v && v < 1024))
			return fail(why, len,
				    "bad size '%s' (want 0 or 1K to 1024G, a number with optional "
				    "K/M/G)",
				    value);
		c->o.jsonl_max_bytes = v;
		break;
	case RT_CFG_JSONL_KEEP:
		if (parse_count(value, 0, RT_DAEMON_JSONL_KEEP_MAX, &v))
			return fail(why, len, "bad number '%s' (want 0 to %d)", value,
				    RT_DAEMON_JSONL_KEEP_MAX);
		c->o.jsonl_keep = (uint32_t)v;
		break;
	default:
		return fail(why, len, "unknown key");
	}
	c->set |= 1ULL << k;
	return 0;
}

/* ---- the file ---- */

struct parse_ctx {
	struct rt_config *c;
	const char *name;
	const char *text; /* the whole file, for quoting a line */
	const char *p; /* the reader's position */
	int line; /* the reader's line: the line inih works on */
	int long_line; /* the first line over inih's limit */
	int max_line; /* that limit, in characters */
	int err_line; /* the first error the handler found */
	char err[512];
};

/* inih reads through this so that the handler knows its line (Debian's
 * inih is built without INI_HANDLER_LINENO) and an over-long line is an
 * error instead of two lines. */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *x = stream;
	const char *nl;
	size_t n;

	if (!*x->p)
		return NULL;
	nl = strchr(x->p, '\n');
	n = nl ? (size_t)(nl - x->p) + 1 : strlen(x->p);
	x->line++;
	if (n > (size_t)num - 1) {
		if (!x->long_line)
			x->long_line = x->line;
		x->max_line = num - 2;
		memcpy(str, x->p, (size_t)num - 2);
		str[num - 2] = '\n';
		str[num - 1] = '\0';
	} else {
		memcpy(str, x->p, n);
		str[n] = '\0';
	}
	x->p += n;
	return str;
}

/* Line n of the text (1-based), without its newline, into buf. */
static void line_text(const char *text, int n, char *buf, size_t len)
{
	const char *p = text, *nl;
	size_t l;

	while (--n > 0 && (nl = strchr(p, '\n')))
		p = nl + 1;
	nl = strchr(p, '\n');
	l = nl ? (size_t)(nl - p) : strlen(p);
	while (l && (p[l - 1] == '\r' || p[l - 1] == ' ' || p[l - 1] == '\t'))
		l--;
	while (l && (*p == ' ' || *p == '\t')) {
		p++;
		l--;
	}
	if (l >= len)
		l = len - 1;
	memcpy(buf, p, l);
	buf[l] = '\0';
}

static bool line_indented(const char *text, int n)
{
	const char *p = text, *nl;

	while (--n > 0 && (nl = strchr(p, '\n')))
		p = nl + 1;
	return *p == ' ' || *p == '\t';
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *x = user;
	char why[384];
	int k, err;

	if (x->err_line)
		return 0; /* keep the first error */
	k = rt_config_key(name);
	if (k < 0) {
		snprintf(why, sizeof(why), "unknown key");
		goto bad;
	}
	if (strcmp(section, keys[k].section)) {
		if (*section)
			snprintf(why, sizeof(why), "belongs in [%s], not [%s]", keys[k].section,
				 section);
		else
			snprintf(why, sizeof(why), "belongs in section [%s]", keys[k].section);
		goto bad;
	}
	if (x->c->line[k]) {
		snprintf(why, sizeof(why), "given twice (first on line %d)%s", x->c->line[k],
			 line_indented(x->text, x->line) ?
				 "; an indented line continues the key above it" :
				 "");
		goto bad;
	}
	err = rt_config_set(x->c, (enum rt_cfg_key)k, value, why, sizeof(why));
	if (err == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	if (err)
		goto bad;
	x->c->line[k] = x->line;
	return 1;
bad:
	x->err_line = x->line;
	snprintf(x->err, sizeof(x->err), "key '%s': %s", name, why);
	return 0;
}

int rt_config_parse_string(struct rt_config *c, const char *name, const char *text, char *err,
			   size_t err_len)
{
	struct parse_ctx x = { .c = c, .name = name, .text = text, .p = text };
	char t[96];
	int r, line;

	r = ini_parse_stream(reader, &x, handler, &x);
	if (r < 0) {
		snprintf(err, err_len, "%s: out of memory", name);
		return -ENOMEM;
	}
	if (!r && !x.long_line)
		return 0;
	/* the first problem in file order */
	line = r;
	if (x.long_line && (!line || x.long_line <= line)) {
		snprintf(err, err_len, "%s:%d: line longer than %d characters", name, x.long_line,
			 x.max_line);
		return -EINVAL;
	}
	if (x.err_line == line) {
		snprintf(err, err_len, "%s:%d: %s", name, line, x.err);
		return -EINVAL;
	}
	line_text(text, line, t, sizeof(t));
	if (t[0] == '[')
		snprintf(err, err_len, "%s:%d: '%s': section header without ']'", name, line, t);
	else
		snprintf(err, err_len, "%s:%d: '%s': not 'key = value' or '[section]'", name, line,
			 t);
	return -EINVAL;
}

int rt_config_load(struct rt_config *c, const char *path, char *err, size_t err_len)
{
	FILE *f;
	char *buf = NULL;
	size_t n;
	int ret;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		snprintf(err, err_len, "%s: %s", path, strerror(-ret));
		return ret;
	}
	buf = malloc(CONFIG_MAX_BYTES + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, err_len, "%s: out of memory", path);
		goto cleanup;
	}
	n = fread(buf, 1, CONFIG_MAX_BYTES + 1, f);
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, err_len, "%s: read error", path);
		goto cleanup;
	}
	if (n > CONFIG_MAX_BYTES) {
		ret = -EFBIG;
		snprintf(err, err_len, "%s: larger than %d bytes", path, CONFIG_MAX_BYTES);
		goto cleanup;
	}
	if (memchr(buf, '\0', n)) {
		ret = -EINVAL;
		snprintf(err, err_len, "%s: a NUL byte: not a text file", path);
		goto cleanup;
	}
	buf[n] = '\0';
	ret = rt_config_parse_string(c, path, buf, err, err_len);
cleanup:
	free(buf);
	fclose(f);
	return ret;
}

static const char *copy(struct rt_config *c, const char *s, int *err)
{
	const char *r;

	if (!s)
		return NULL;
	r = keep(c, s, strlen(s));
	if (!r)
		*err = -ENOMEM;
	return r;
}

int rt_config_merge(struct rt_config *b, const struct rt_config *o)
{
	int i, err = 0;

#define OVER(key) (o->set & (1ULL << (key)))
	if (OVER(RT_CFG_PIDS)) {
		memcpy(b->o.pids, o->o.pids, sizeof(b->o.pids));
		b->o.n_pids = o->o.n_pids;
	}
	if (OVER(RT_CFG_PORTS)) {
		memcpy(b->o.ports, o->o.ports, sizeof(b->o.ports));
		b->o.n_ports = o->o.n_ports;
	}
	if (OVER(RT_CFG_COMMS)) {
		for (i = 0; i < o->o.n_comms; i++)
			b->o.comms[i] = copy(b, o->o.comms[i], &err);
		b->o.n_comms = o->o.n_comms;
	}
	if (OVER(RT_CFG_CGROUPS)) {
		for (i = 0; i < o->o.n_cgroups; i++)
			b->o.cgroups[i] = copy(b, o->o.cgroups[i], &err);
		b->o.n_cgroups = o->o.n_cgroups;
	}
	if (OVER(RT_CFG_SOCKET))
		b->o.socket_path = copy(b, o->o.socket_path, &err);
	if (OVER(RT_CFG_SOCKET_GROUP))
		b->o.socket_group = o->o.socket_group;
	if (OVER(RT_CFG_RECORD))
		b->o.record_path = copy(b, o->o.record_path, &err);
	if (OVER(RT_CFG_CAPTURE_BODIES))
		b->o.capture_bodies = o->o.capture_bodies;
	if (OVER(RT_CFG_INJECT))
		b->inject = o->inject;
	if (OVER(RT_CFG_INJECT_SOCKET))
		b->o.inject_path = copy(b, o->o.inject_path, &err);
	if (OVER(RT_CFG_PACK_DIR))
		b->o.pack_dir = copy(b, o->o.pack_dir, &err);
	if (OVER(RT_CFG_PIN_DIR))
		b->o.pin_dir = copy(b, o->o.pin_dir, &err);
	if (OVER(RT_CFG_LOG_LEVEL))
		b->log_level = o->log_level;
	if (OVER(RT_CFG_RING_SIZE))
		b->o.ring_bytes = o->o.ring_bytes;
	if (OVER(RT_CFG_HEAD_BYTES))
		b->o.head_bytes = o->o.head_bytes;
	if (OVER(RT_CFG_TAIL_BYTES))
		b->o.tail_bytes = o->o.tail_bytes;
	if (OVER(RT_CFG_MAX_SPANS))
		b->o.max_spans = o->o.max_spans;
	if (OVER(RT_CFG_MAX_REQUESTS))
		b->o.max_requests = o->o.max_requests;
	if (OVER(RT_CFG_MAX_VLLM_REQUESTS))
		b->o.max_vllm_requests = o->o.max_vllm_requests;
	if (OVER(RT_CFG_IDLE_TIMEOUT))
		b->o.idle_timeout_ns = o->o.idle_timeout_ns;
	if (OVER(RT_CFG_METRICS_LISTEN))
		b->o.metrics_listen = copy(b, o->o.metrics_listen, &err);
	if (OVER(RT_CFG_OTLP_ENDPOINT))
		b->o.otlp.endpoint = copy(b, o->o.otlp.endpoint, &err);
	if (OVER(RT_CFG_OTLP_HEADERS))
		b->o.otlp.headers = copy(b, o->o.otlp.headers, &err);
	if (OVER(RT_CFG_OTLP_COMPRESSION))
		b->o.otlp.no_gzip = o->o.otlp.no_gzip;
	if (OVER(RT_CFG_OTLP_TIMEOUT))
		b->o.otlp.timeout_ms = o->o.otlp.timeout_ms;
	if (OVER(RT_CFG_OTLP_CA_FILE))
		b->o.otlp.ca_file = copy(b, o->o.otlp.ca_file, &err);
	if (OVER(RT_CFG_OTLP_SERVICE_NAME))
		b->o.otlp.service_name = copy(b, o->o.otlp.service_name, &err);
	if (OVER(RT_CFG_OTLP_SAMPLE_RATIO))
		b->o.otlp.sample_ratio = o->o.otlp.sample_ratio;
	if (OVER(RT_CFG_OTLP_MAX_SPANS_PER_S))
		b->o.otlp.max_spans_per_s = o->o.otlp.max_spans_per_s;
	if (OVER(RT_CFG_OTLP_QUEUE))
		b->o.otlp.queue = o->o.otlp.queue;
	if (OVER(RT_CFG_OTLP_BATCH))
		b->o.otlp.batch = o->o.otlp.batch;
	if (OVER(RT_CFG_OTLP_BATCH_DELAY))
		b->o.otlp.batch_delay_ms = o->o.otlp.batch_delay_ms;
	if (OVER(RT_CFG_JSONL_PATH))
		b->o.jsonl_path = copy(b, o->o.jsonl_path, &err);
	if (OVER(RT_CFG_JSONL_MAX_BYTES))
		b->o.jsonl_max_bytes = o->o.jsonl_max_bytes;
	if (OVER(RT_CFG_JSONL_KEEP))
		b->o.jsonl_keep = o->o.jsonl_keep;
#undef OVER
	b->set |= o->set;
	return err;
}

static bool str_differ(const char *a, const char *b)
{
	return (!a || !b) ? a != b : strcmp(a, b) != 0;
}

static bool strs_differ(const char *const *a, int na, const char *const *b, int nb)
{
	int i;

	if (na != nb)
		return true;
	for (i = 0; i < na; i++)
		if (str_differ(a[i], b[i]))
			return true;
	return false;
}

uint64_t rt_config_diff(const struct rt_config *a, const struct rt_config *b)
{
	const struct rt_daemon_opts *x = &a->o, *y = &b->o;
	uint64_t d = 0;

#define DIFF(key, cond)                                                                            \
	do {                                                                                       \
		if (cond)                                                                          \
			d |= 1ULL << (key);                                                        \
	} while (0)
	DIFF(RT_CFG_PIDS, x->n_pids != y->n_pids ||
				  memcmp(x->pids, y->pids, sizeof(x->pids[0]) * (size_t)x->n_pids));
	DIFF(RT_CFG_PORTS,
	     x->n_ports != y->n_ports ||
		     memcmp(x->ports, y->ports, sizeof(x->ports[0]) * (size_t)x->n_ports));
	DIFF(RT_CFG_COMMS, strs_differ(x->comms, x->n_comms, y->comms, y->n_comms));
	DIFF(RT_CFG_CGROUPS, strs_differ(x->cgroups, x->n_cgroups, y->cgroups, y->n_cgroups));
	DIFF(RT_CFG_SOCKET, str_differ(x->socket_path, y->socket_path));
	DIFF(RT_CFG_SOCKET_GROUP, x->socket_group != y->socket_group);
	DIFF(RT_CFG_RECORD, str_differ(x->record_path, y->record_path));
	DIFF(RT_CFG_CAPTURE_BODIES, x->capture_bodies != y->capture_bodies);
	DIFF(RT_CFG_INJECT, a->inject != b->inject);
	DIFF(RT_CFG_INJECT_SOCKET, str_differ(x->inject_path, y->inject_path));
	DIFF(RT_CFG_PACK_DIR, str_differ(x->pack_dir, y->pack_dir));
	DIFF(RT_CFG_PIN_DIR, str_differ(x->pin_dir, y->pin_dir));
	DIFF(RT_CFG_LOG_LEVEL, a->log_level != b->log_level);
	DIFF(RT_CFG_RING_SIZE, x->ring_bytes != y->ring_bytes);
	DIFF(RT_CFG_HEAD_BYTES, x->head_bytes != y->head_bytes);
	DIFF(RT_CFG_TAIL_BYTES, x->tail_bytes != y->tail_bytes);
	DIFF(RT_CFG_MAX_SPANS, x->max_spans != y->max_spans);
	DIFF(RT_CFG_MAX_REQUESTS, x->max_requests != y->max_requests);
	DIFF(RT_CFG_MAX_VLLM_REQUESTS, x->max_vllm_requests != y->max_vllm_requests);
	DIFF(RT_CFG_IDLE_TIMEOUT, x->idle_timeout_ns != y->idle_timeout_ns);
	DIFF(RT_CFG_METRICS_LISTEN, str_differ(x->metrics_listen, y->metrics_listen));
	DIFF(RT_CFG_OTLP_ENDPOINT, str_differ(x->otlp.endpoint, y->otlp.endpoint));
	DIFF(RT_CFG_OTLP_HEADERS, str_differ(x->otlp.headers, y->otlp.headers));
	DIFF(RT_CFG_OTLP_COMPRESSION, x->otlp.no_gzip != y->otlp.no_gzip);
	DIFF(RT_CFG_OTLP_TIMEOUT, x->otlp.timeout_ms != y->otlp.timeout_ms);
	DIFF(RT_CFG_OTLP_CA_FILE, str_differ(x->otlp.ca_file, y->otlp.ca_file));
	DIFF(RT_CFG_OTLP_SERVICE_NAME, str_differ(x->otlp.service_name, y->otlp.service_name));
	DIFF(RT_CFG_OTLP_SAMPLE_RATIO, x->otlp.sample_ratio != y->otlp.sample_ratio);
	DIFF(RT_CFG_OTLP_MAX_SPANS_PER_S, x->otlp.max_spans_per_s != y->otlp.max_spans_per_s);
	DIFF(RT_CFG_OTLP_QUEUE, x->otlp.queue != y->otlp.queue);
	DIFF(RT_CFG_OTLP_BATCH, x->otlp.batch != y->otlp.batch);
	DIFF(RT_CFG_OTLP_BATCH_DELAY, x->otlp.batch_delay_ms != y->otlp.batch_delay_ms);
	DIFF(RT_CFG_JSONL_PATH, str_differ(x->jsonl_path, y->jsonl_path));
	DIFF(RT_CFG_JSONL_MAX_BYTES, x->jsonl_max_bytes != y->jsonl_max_bytes);
	DIFF(RT_CFG_JSONL_KEEP, x->jsonl_keep != y->jsonl_keep);
#undef DIFF
	return d;
}

/* One OTEL_* value into key k unless the file or a flag gave k. */
static int env_key(struct rt_config *c, enum rt_cfg_key k, const char *value, const char *var,
		   char *why, size_t len)
{
	char w[384];
	int err;

	if (!value || !*value || (c->set & (1ULL << k)))
		return 0;
	err = rt_config_set(c, k, value, w, sizeof(w));
	if (err)
		snprintf(why, len, "%s: %s", var, w);
	return err;
}

int rt_config_env(struct rt_config *c, const char *(*get)(const char *name), char *why, size_t len)
{
	struct rt_otlp_env e;
	int err;

	err = rt_otlp_env_read(get, &e);
	if (err) {
		snprintf(why, len, "OTEL_EXPORTER_OTLP_ENDPOINT: longer than %d characters",
			 RT_OTLP_URL_MAX - 1);
		return -EINVAL;
	}
	if (e.warning)
		wlog("%s", e.warning);
	/* OTEL_SDK_DISABLED: the environment's endpoint is not used; a
	 * configured one still is (the operator asked for it explicitly) */
	err = e.disabled ? 0 :
			   env_key(c, RT_CFG_OTLP_ENDPOINT, e.endpoint,
				   "OTEL_EXPORTER_OTLP_ENDPOINT", why, len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_HEADERS, e.headers, "OTEL_EXPORTER_OTLP_HEADERS", why,
			      len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_TIMEOUT, e.timeout, "OTEL_EXPORTER_OTLP_TIMEOUT", why,
			      len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_COMPRESSION, e.compression,
			      "OTEL_EXPORTER_OTLP_COMPRESSION", why, len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_CA_FILE, e.ca_file, "OTEL_EXPORTER_OTLP_CERTIFICATE",
			      why, len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_SERVICE_NAME, e.service_name, "OTEL_SERVICE_NAME", why,
			      len);
	err = err   ?:
		      env_key(c, RT_CFG_OTLP_SAMPLE_RATIO, e.sample_ratio,
			      "OTEL_TRACES_SAMPLER_ARG", why, len);
	return err;
}

bool rt_config_key_live(enum rt_cfg_key k)
{
	switch (k) {
	case RT_CFG_LOG_LEVEL:
	case RT_CFG_MAX_SPANS: /* the store moves to a ring of the new size */
	case RT_CFG_JSONL_PATH:
	case RT_CFG_JSONL_MAX_BYTES:
	case RT_CFG_JSONL_KEEP:
		return true;
	default:
		/* every otlp_* key (consecutive in the enum): the exporter reconfigures */
		if (k >= RT_CFG_OTLP_ENDPOINT && k <= RT_CFG_OTLP_BATCH_DELAY)
			return true;
		/*
		 * Restart: ring_size, head/tail_bytes (BPF maps and programs
		 * built at load), max_requests, max_vllm_requests, idle_timeout (the correlator's
		 * tables and options are fixed at start), sockets, socket_group,
		 * inject (bound at start, capabilities since dropped), targets,
		 * record, capture_bodies, metrics_listen.
		 */
		return false;
	}
}

void rt_config_reload_plan(const struct rt_config *running, const struct rt_config *next,
			   uint64_t *apply, uint64_t *restart)
{
	uint64_t changed = rt_config_diff(running, next);
	int k;

	*apply = *restart = 0;
	for (k = 0; k < RT_CFG__N; k++) {
		if (!(changed & (1ULL << k)))
			continue;
		if (rt_config_key_live((enum rt_cfg_key)k))
			*apply |= 1ULL << k;
		else
			*restart |= 1ULL << k;
	}
}

void rt_config_opts(const struct rt_config *c, struct rt_daemon_opts *out)
{
	*out = c->o;
	if (!c->inject)
		out->inject_path = NULL;
	out->verbose = c->log_level >= RT_LOG_DEBUG;
}
