// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/control.h"
#include "daemon/ctl_parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/log.h"

struct rt_ctl_client {
	uv_pipe_t pipe;
	struct rt_control *ctl;
	struct rt_ctl_client *next;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char *buf; /* request bytes not yet consumed */
	size_t len;
	size_t pending; /* answer bytes queued in libuv */
	bool held; /* an answer is in progress */
	bool in_process;
	bool closing;
	bool paused; /* not reading: too many answer bytes unread (RT_CTL_PAUSE_BYTES) */
	uv_shutdown_t shutdown;
};

struct rt_control {
	uv_pipe_t server;
	struct rt_control_opts o;
	struct rt_ctl_client *clients;
	unsigned int n_clients;
	struct rt_control_stats st;
	char *path;
};

struct write_req {
	uv_write_t req;
	struct rt_ctl_client *cl;
	size_t len;
	char data[];
};

static void process(struct rt_ctl_client *cl);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void on_client_closed(uv_handle_t *h)
{
	struct rt_ctl_client *cl = h->data;

	free(cl->buf);
	free(cl);
}

static void client_close(struct rt_ctl_client *cl)
{
	struct rt_control *c = cl->ctl;
	struct rt_ctl_client **pp;

	if (cl->closing)
		return;
	cl->closing = true;
	for (pp = &c->clients; *pp; pp = &(*pp)->next) {
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	}
	c->n_clients--;
	if (cl->held && c->o.gone)
		c->o.gone(cl, c->o.ctx);
	uv_close((uv_handle_t *)&cl->pipe, on_client_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct rt_ctl_client *cl = req->data;

	(void)status;
	client_close(cl);
}

/* Close once what was written has been sent (uv_close would drop it). */
static void client_close_flushed(struct rt_ctl_client *cl)
{
	cl->shutdown.data = cl;
	if (uv_shutdown(&cl->shutdown, (uv_stream_t *)&cl->pipe, on_shutdown))
		client_close(cl);
}

static void on_written(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *)req;
	struct rt_ctl_client *cl = w->cl;

	cl->pending -= w->len;
	free(w);
	if (status < 0 && !cl->closing)
		client_close(cl);
	if (cl->closing || !cl->paused || cl->pending > RT_CTL_PAUSE_BYTES / 2)
		return;
	/* the client read its answers: take its next requests */
	cl->paused = false;
	if (uv_read_start((uv_stream_t *)&cl->pipe, on_alloc, on_read)) {
		client_close(cl);
		return;
	}
	if (!cl->held && !cl->in_process)
		process(cl);
}

static int send_raw(struct rt_ctl_client *cl, const char *data, size_t len, bool newline)
{
	struct write_req *w;
	uv_buf_t b;

	if (cl->closing)
		return -EPIPE;
	if (cl->pending + len > RT_CTL_PENDING_MAX) {
		/* a client that does not read must not make the daemon grow */
		cl->ctl->st.dropped_slow++;
		wlog("control: dropping client pid %d: %zu bytes unread", cl->pid, cl->pending);
		client_close(cl);
		return -ENOBUFS;
	}
	w = malloc(sizeof(*w) + len + 1);
	if (!w)
		return -ENOMEM;
	memcpy(w->data, data, len);
	if (newline)
		w->data[len++] = '\n';
	w->cl = cl;
	w->len = len;
	b = uv_buf_init(w->data, (unsigned int)len);
	cl->pending += len;
	if (uv_write(&w->req, (uv_stream_t *)&cl->pipe, &b, 1, on_written)) {
		cl->pending -= len;
		free(w);
		client_close(cl);
		return -EPIPE;
	}
	return 0;
}

int rt_ctl_send(struct rt_ctl_client *cl, const char *line, size_t len)
{
	return send_raw(cl, line, len, true);
}

static void answer_done(struct rt_ctl_client *cl)
{
	cl->held = false;
	/* requests that queued behind this one (unless process() is running) */
	if (!cl->closing && !cl->in_process)
		process(cl);
}

void rt_ctl_end(struct rt_ctl_client *cl, const char *extra)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "{\"end\":true%s%s}", extra && *extra ? "," : "",
			 extra ? extra : "");

	send_raw(cl, line, (size_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1), true);
	answer_done(cl);
}

void rt_ctl_error(struct rt_ctl_client *cl, const char *fmt, ...)
{
	struct rt_jsonw w;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rt_jsonw_init(&w, 4096);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "error");
	rt_jsonw_str_val(&w, msg);
	rt_jsonw_obj_close(&w);
	send_raw(cl, rt_jsonw_str(&w), w.len, true);
	rt_jsonw_fini(&w);
	answer_done(cl);
}

void rt_ctl_hold(struct rt_ctl_client *cl)
{
	cl->held = true;
}

uid_t rt_ctl_uid(const struct rt_ctl_client *cl)
{
	return cl->uid;
}

pid_t rt_ctl_pid(const struct rt_ctl_client *cl)
{
	return cl->pid;
}

static void handle_line(struct rt_ctl_client *cl, char *line)
{
	struct rt_control *c = cl->ctl;
	struct rt_ctl_req req;
	char why[96];

	c->st.requests++;
	cl->held = true; /* until rt_ctl_end/rt_ctl_error */
	if (rt_ctl_parse(line, &req, why, sizeof(why))) {
		c->st.bad_requests++;
		rt_ctl_error(cl, "%s", why);
		return;
	}
	c->o.handler(cl, req.cmd, req.json, c->o.ctx);
	cJSON_Delete(req.json);
}

/* Handle complete lines while no answer is in progress. */
static void process(struct rt_ctl_client *cl)
{
	size_t off = 0; /* consumed: moved out once, not per line (a flood of tiny lines) */

	cl->in_process = true;
	while (!cl->held && !cl->closing && off < cl->len && cl->pending <= RT_CTL_PAUSE_BYTES) {
		char *line = cl->buf + off;
		char *nl = memchr(line, '\n', cl->len - off);

		if (!nl)
			break;
		*nl = '\0';
		off += (size_t)(nl - line) + 1;
		handle_line(cl, line);
		if (cl->closing)
			return; /* freed when its close completes, not yet */
	}
	if (off) {
		memmove(cl->buf, cl->buf + off, cl->len - off);
		cl->len -= off;
	}
	/* answers pile up unread: stop reading requests until the client reads them, so
	 * that tiny requests with longer answers cannot make the daemon grow */
	if (cl->pending > RT_CTL_PAUSE_BYTES && !cl->paused && !cl->closing) {
		cl->paused = true;
		uv_read_stop((uv_stream_t *)&cl->pipe);
	}
	cl->in_process = false;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct rt_ctl_client *cl = h->data;

	(void)suggested;
	if (!cl->buf)
		cl->buf = malloc(RT_CTL_LINE_MAX);
	if (!cl->buf || cl->len >= RT_CTL_LINE_MAX) {
		*buf = uv_buf_init(NULL, 0);
		return;
	}
	*buf = uv_buf_init(cl->buf + cl->len, (unsigned int)(RT_CTL_LINE_MAX - cl->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct rt_ctl_client *cl = s->data;

	(void)buf;
	if (n == UV_ENOBUFS) {
		cl->ctl->st.bad_requests++;
		rt_ctl_error(cl, "request line longer than %d bytes", RT_CTL_LINE_MAX);
		client_close_flushed(cl);
		return;
	}
	if (n < 0) {
		client_close(cl);
		return;
	}
	cl->len += (size_t)n;
	process(cl);
}

static bool allowed(const struct rt_control *c, const struct rt_ctl_client *cl)
{
	gid_t groups[64];
	int n, i;

	if (cl->uid == 0)
		return true;
	if (c->o.group == (gid_t)-1)
		return false;
	if (cl->gid == c->o.group)
		return true;
	/* supplementary groups of the peer are not in SO_PEERCRED: read them */
	n = 0;
	{
		char path[64], line[512];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/status", cl->pid);
		f = fopen(path, "re");
		if (!f)
			return false;
		while (fgets(line, sizeof(line), f)) {
			char *p, *end;

			if (strncmp(line, "Groups:", 7))
				continue;
			for (p = line + 7; n < 64; p = end) {
				long g = strtol(p, &end, 10);

				if (end == p)
					break;
				groups[n++] = (gid_t)g;
			}
		}
		fclose(f);
	}
	for (i = 0; i < n; i++)
		if (groups[i] == c->o.group)
			return true;
	return false;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct rt_control *c = server->data;
	struct rt_ctl_client *cl;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;

	if (status < 0)
		return;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return;
	cl->ctl = c;
	uv_pipe_init(server->loop, &cl->pipe, 0);
	cl->pipe.data = cl;
	if (uv_accept(server, (uv_stream_t *)&cl->pipe)) {
		uv_close((uv_handle_t *)&cl->pipe, on_client_closed);
		return;
	}
	cl->next = c->clients;
	c->clients = cl;
	c->n_clients++;
	if (uv_fileno((uv_handle_t *)&cl->pipe, &fd) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		client_close(cl);
		return;
	}
	cl->uid = cred.uid;
	cl->gid = cred.gid;
	cl->pid = cred.pid;
	if (!allowed(c, cl)) {
		c->st.refused++;
		wlog("control: refused pid %d uid %u: not root%s", cl->pid, cl->uid,
		     c->o.group == (gid_t)-1 ? "" : " nor in the reqtrace group");
		cl->held = true;
		rt_ctl_error(cl, "permission denied: the control socket is for root%s",
			     c->o.group == (gid_t)-1 ? " only" : " and the configured group");
		client_close_flushed(cl);
		return;
	}
	if (c->n_clients > RT_CTL_CLIENTS_MAX) {
		c->st.refused++;
		cl->held = true;
		rt_ctl_error(cl, "too many clients (%d)", RT_CTL_CLIENTS_MAX);
		client_close_flushed(cl);
		return;
	}
	c->st.accepted++;
	uv_read_start((uv_stream_t *)&cl->pipe, on_alloc, on_read);
}

static void on_server_closed(uv_handle_t *h)
{
	struct rt_control *c = h->data;

	free(c->path);
	free(c);
}

struct rt_control *rt_control__new(uv_loop_t *loop, const struct rt_control_opts *o)
{
	struct rt_control *c = calloc(1, sizeof(*c));
	mode_t old;
	int err;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->o = *o;
	c->path = strdup(o->path);
	uv_pipe_init(loop, &c->server, 0);
	c->server.data = c;
	unlink(o->path); /* a stale socket from a previous run */
	/* create it with the final mode: no window in which others may connect */
	old = umask(o->group == (gid_t)-1 ? 0177 : 0117);
	err = uv_pipe_bind(&c->server, o->path);
	umask(old);
	if (err) {
		elog("control socket %s: %s", o->path, uv_strerror(err));
		goto fail;
	}
	if (o->group != (gid_t)-1 && chown(o->path, 0, o->group)) {
		err = -errno;
		elog("control socket %s: chown to group %u: %s", o->path, o->group,
		     strerror(errno));
		goto fail;
	}
	err = uv_listen((uv_stream_t *)&c->server, 16, on_connection);
	if (err) {
		elog("control socket %s: listen: %s", o->path, uv_strerror(err));
		goto fail;
	}
	return c;
fail:
	/* freed by the close callback: the caller must still run the loop */
	uv_close((uv_handle_t *)&c->server, on_server_closed);
	errno = err < 0 ? -err : EIO;
	return NULL;
}

void rt_control__close(struct rt_control *c)
{
	if (!c)
		return;
	while (c->clients)
		client_close(c->clients);
	unlink(c->path);
	uv_close((uv_handle_t *)&c->server, on_server_closed);
}

void rt_control__stats(const struct rt_control *c, struct rt_control_stats *st)
{
	*st = c->st;
}
