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
