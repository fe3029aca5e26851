// SPDX-License-Identifier: BSD-2-Clause
#include "client.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "export/span_json.h"

#define LINE_MAX_BYTES (8u << 20)

void rt_client_request(struct rt_jsonw *w, const char *cmd)
{
	rt_jsonw_init(w, 0);
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "v");
	rt_jsonw_int(w, 1);
	rt_jsonw_key(w, "cmd");
	rt_jsonw_str_val(w, cmd);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		/* a daemon that refuses us answers and closes first: no SIGPIPE */
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void print_error(const char *line)
{
	cJSON *o = cJSON_Parse(line);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "error");

	fprintf(stderr, "reqtrace: %s\n", cJSON_IsString(m) ? m->valuestring : line);
	cJSON_Delete(o);
}

int rt_client_call(const char *socket_path, const char *request, rt_line_fn fn, void *ctx,
		   char *end_line, size_t end_len)
{
	size_t cap = 65536, len = 0;
	char *buf = NULL;
	int fd, rc = RT_EXIT_FAIL;

	fd = connect_to(socket_path);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		fprintf(stderr,
			"reqtrace: %s: %s (the control socket is for root and the group given "
			"to reqtraced --socket-group)\n",
			socket_path, strerror(errno));
		return RT_EXIT_FAIL;
	}
	if (fd < 0) {
		fprintf(stderr,
			"reqtrace: cannot reach reqtraced at %s (%s); is the daemon running? "
			"(sudo reqtraced --port N)\n",
			socket_path, strerror(errno));
		return RT_EXIT_FAIL;
	}
	/* on EPIPE the daemon may have answered already (a refusal): read it */
	if ((write_all(fd, request, strlen(request)) || write_all(fd, "\n", 1)) && errno != EPIPE) {
		fprintf(stderr, "reqtrace: %s: %s\n", socket_path, strerror(errno));
		goto out;
	}
	buf = malloc(cap);
	if (!buf)
		goto out;
	for (;;) {
		char *nl;
		ssize_t n;

		while ((nl = memchr(buf, '\n', len))) {
			size_t l = (size_t)(nl - buf);

			*nl = '\0';
			if (!strncmp(buf, "{\"end\":", 7)) {
				if (end_line)
					snprintf(end_line, end_len, "%s", buf);
				rc = RT_EXIT_OK;
				goto out;
			}
			if (!strncmp(buf, "{\"error\":", 9)) {
				print_error(buf);
				goto out;
			}
			if (fn && fn(buf, l, ctx)) {
				rc = RT_EXIT_OK;
				goto out;
			}
			memmove(buf, nl + 1, len - l - 1);
			len -= l + 1;
		}
		if (len == cap) {
			char *b;

			if (cap >= LINE_MAX_BYTES) {
				fprintf(stderr, "reqtrace: answer line over %u bytes\n",
					LINE_MAX_BYTES);
				goto out;
			}
			b = realloc(buf, cap * 2);
			if (!b)
				goto out;
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "reqtrace: reqtraced closed the connection mid-answer\n");
			goto out;
		}
		len += (size_t)n;
	}
out:
	free(buf);
	close(fd);
	return rc;
}

double rt_client_num(const struct cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* ---- finished spans ------------------------------------------------------------ */

struct fetch {
	struct rt_span *spans;
	size_t n, cap;
	uint64_t dropped;
	bool oom;
};

static int fetch_line(const char *line, size_t len, void *ctx)
{
	struct fetch *x = ctx;

	(void)len;
	if (x->n >= RT_CLI_SPANS_MAX) {
		x->dropped++;
		return 0;
	}
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		void *p = realloc(x->spans, cap * sizeof(*x->spans));

		if (!p) {
			x->oom = true;
			return 1;
		}
		x->spans = p;
		x->cap = cap;
	}
	if (!rt_span_from_json(line, &x->spans[x->n]))
		x->n++;
	return 0;
}

int rt_client_spans(const char *socket_path, uint64_t since_ns, struct rt_span **spans, size_t *n)
{
	struct fetch x = { 0 };
	struct rt_jsonw w;
	int rc;

	rt_client_request(&w, "spans");
	if (since_ns) {
		rt_jsonw_key(&w, "since");
		rt_jsonw_uint(&w, since_ns);
	}
	rt_jsonw_obj_close(&w);
	rc = rt_client_call(socket_path, rt_jsonw_str(&w), fetch_line, &x, NULL, 0);
	rt_jsonw_fini(&w);
	if (x.oom) {
		fprintf(stderr, "reqtrace: out of memory\n");
		rc = RT_EXIT_FAIL;
	}
	if (x.dropped)
		fprintf(stderr, "reqtrace: only the first %d spans are used (%llu more)\n",
			RT_CLI_SPANS_MAX, (unsigned long long)x.dropped);
	if (rc) {
		free(x.spans);
		x.spans = NULL;
		x.n = 0;
	}
	*spans = x.spans;
	*n = x.n;
	return rc;
}
