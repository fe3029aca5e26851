/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Terminal helpers for the CLI's views (`show`, `top`): whether to colour,
 * how wide to draw, raw keyboard input for `q`. Plain ANSI escapes only, so
 * the views work over SSH in any terminal without curses.
 */
#ifndef RT_CLI_TERM_H
#define RT_CLI_TERM_H

#include <stdbool.h>
#include <termios.h>

#define RT_TERM_WIDTH_DEFAULT 100
#define RT_TERM_WIDTH_MIN 60
#define RT_TERM_WIDTH_MAX 400

/*
 * Colour decision from its inputs: a terminal, TERM set and not "dumb", and
 * NO_COLOR absent (https://no-color.org; any value, even empty, turns colour
 * off). Pure, so it can be tested.
 */
bool rt_term_color_decide(bool is_tty, const char *term, const char *no_color);

/* rt_term_color_decide() for fd with this process's environment. */
bool rt_term_color(int fd);

/*
 * Columns to draw in: the terminal's width when fd is one, else $COLUMNS,
 * else RT_TERM_WIDTH_DEFAULT; clamped to [RT_TERM_WIDTH_MIN, RT_TERM_WIDTH_MAX].
 */
int rt_term_width(int fd);

/* Rows of the terminal on fd, or 0 when it is not one. */
int rt_term_rows(int fd);

/*
 * Raw keyboard mode (no echo, no line buffering) so a single `q` is read at
 * once; output processing is left on. rt_term_raw_enter() saves the mode it
 * replaces; rt_term_raw_leave() puts it back and may be called any number
 * of times, and from a signal handler (it only calls tcsetattr()).
 */
struct rt_term_raw {
	int fd;
	bool active;
	struct termios saved;
};

/* Returns 0, or -errno (-ENOTTY when fd is not a terminal). */
int rt_term_raw_enter(struct rt_term_raw *t, int fd);
void rt_term_raw_leave(struct rt_term_raw *t);

/* ANSI sequences the views use. */
#define RT_ANSI_RESET "\033[0m"
#define RT_ANSI_BOLD "\033[1m"
#define RT_ANSI_DIM "\033[2m"
#define RT_ANSI_CLEAR_HOME "\033[H\033[2J"
#define RT_ANSI_HIDE_CURSOR "\033[?25l"
#define RT_ANSI_SHOW_CURSOR "\033[?25h"

#endif /* RT_CLI_TERM_H */
