// SPDX-License-Identifier: BSD-2-Clause
#include "term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

bool rt_term_color_decide(bool is_tty, const char *term, const char *no_color)
{
	if (!is_tty || no_color)
		return false;
	return term && term[0] && strcmp(term, "dumb") != 0;
}

bool rt_term_color(int fd)
{
	return rt_term_color_decide(isatty(fd) == 1, getenv("TERM"), getenv("NO_COLOR"));
}

static int clamp_width(long w)
{
	if (w < RT_TERM_WIDTH_MIN)
		return RT_TERM_WIDTH_MIN;
	if (w > RT_TERM_WIDTH_MAX)
		return RT_TERM_WIDTH_MAX;
	return (int)w;
}

int rt_term_width(int fd)
{
	struct winsize ws;
	const char *cols;
	char *end;
	long w;

	if (isatty(fd) == 1 && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return clamp_width(ws.ws_col);
	cols = getenv("COLUMNS");
	if (cols && *cols) {
		errno = 0;
		w = strtol(cols, &end, 10);
		if (!errno && !*end && w > 0)
			return clamp_width(w);
	}
	return RT_TERM_WIDTH_DEFAULT;
}

int rt_term_rows(int fd)
{
	struct winsize ws;

	if (isatty(fd) == 1 && !ioctl(fd, TIOCGWINSZ, &ws))
		return ws.ws_row;
	return 0;
}

int rt_term_raw_enter(struct rt_term_raw *t, int fd)
{
	struct termios raw;

	t->active = false;
	t->fd = fd;
	if (isatty(fd) != 1)
		return -ENOTTY;
	if (tcgetattr(fd, &t->saved))
		return -errno;
	raw = t->saved;
	/* keep ISIG so Ctrl-C still raises SIGINT, which top handles */
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &raw))
		return -errno;
	t->active = true;
	return 0;
}

void rt_term_raw_leave(struct rt_term_raw *t)
{
	if (!t || !t->active)
		return;
	tcsetattr(t->fd, TCSANOW, &t->saved);
	t->active = false;
}
