// SPDX-License-Identifier: BSD-2-Clause
/*
 * reqtrace top [--once] [--interval DUR] [--file REC.rtrace]
 *
 * A live frame of in-flight and recent requests with per-phase percentiles.
 * Full-screen mode uses ANSI clear/home only, so it works over SSH in any
 * terminal; `--once` prints one plain frame for scripts.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "term.h"
#include "common/dur.h"
#include "common/jsonw.h"
#include "export/span_json.h"
#include "verdict/findings.h"
#include "verdict/stats.h"
#include "verdict/verdict.h"

#define WINDOW_NS (60ull * 1000000000ull)
#define RECENT_ROWS 10
#define OPEN_ROWS 20

struct frame {
	char source[320];
	const struct rt_span *spans;
	size_t n;
	uint64_t spans_dropped;
	const struct rt_cli_open *open;
	size_t n_open;
	uint64_t open_dropped;
	double window_s; /* throughput's denominator; 0: unknown */
	const char *window_desc;
	char drops[512];
};

struct live {
	struct rt_cli_open *open;
	size_t n_open;
	uint64_t open_dropped;
	double uptime_s;
	char drops[512];
};

static int open_line(const char *line, size_t len, void *ctx)
{
	struct live *l = ctx;
	const cJSON *v;
	struct rt_cli_open *o;
	cJSON *j;

	(void)len;
	if (l->n_open >= RT_CLI_OPEN_MAX) {
		l->open_dropped++;
		return 0;
	}
	j = cJSON_Parse(line);
	if (!j)
		return 0;
	o = &l->open[l->n_open++];
	memset(o, 0, sizeof(*o));
	v = cJSON_GetObjectItemCaseSensitive(j, "request_id");
	snprintf(o->request_id, sizeof(o->request_id), "%s",
		 cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(j, "path");
	snprintf(o->path, sizeof(o->path), "%s", cJSON_IsString(v) ? v->valuestring : "");
	v = cJSON_GetObjectItemCaseSensitive(j, "phase");
	snprintf(o->phase, sizeof(o->phase), "%s", cJSON_IsString(v) ? v->valuestring : "?");
	v = cJSON_GetObjectItemCaseSensitive(j, "age_ms");
	o->age_ns = cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e12 ?
			    (int64_t)(v->valuedouble * 1e6) :
			    0;
	v = cJSON_GetObjectItemCaseSensitive(j, "events_out");
	o->events_out = cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 4e9 ?
				(uint32_t)v->valuedouble :
				0;
	cJSON_Delete(j);
	return 0;
}

static int status_line(const char *line, size_t len, void *ctx)
{
	struct live *l = ctx;
	const cJSON *d, *t;
	size_t o = 0;
	cJSON *j;

	(void)len;
	j = cJSON_Parse(line);
	if (!j)
		return 0;
	t = cJSON_GetObjectItemCaseSensitive(j, "uptime_s");
	l->uptime_s = cJSON_IsNumber(t) ? t->valuedouble : 0;
	d = cJSON_GetObjectItemCaseSensitive(j, "drops");
	cJSON_ArrayForEach(t, d)
	{
		if (cJSON_IsNumber(t) && t->valuedouble > 0 && o < sizeof(l->drops))
			o += (size_t)snprintf(l->drops + o, sizeof(l->drops) - o, "%s%s=%.0f",
					      o ? " " : "", t->string, t->valuedouble);
	}
	cJSON_Delete(j);
	return 0;
}

/* ---- one frame ------------------------------------------------------------------ */

static void clipped(FILE *f, const char *s, int width)
{
	size_t n = strlen(s), i, from = 0;

	if (n > (size_t)width)
		from = n - (size_t)(width - 1);
	if (from)
		fputc('~', f);
	for (i = from; i < n; i++)
		fputc((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i], f);
	for (i = n - from + (from ? 1 : 0); i < (size_t)width; i++)
		fputc(' ', f);
}

static void pct_row(FILE *f, const char *name, const struct rt_pct *q)
{
	fprintf(f, "  %-18s", name);
	if (!q->n)
		fprintf(f, " %10s %10s %6u\n", "-", "-", 0u);
	else
		fprintf(f, " %10.1f %10.1f %6u\n", q->p50_ns / 1e6, q->p99_ns / 1e6, q->n);
}

static int cmp_end_desc(const void *a, const void *b)
{
	const struct rt_span *x = *(const struct rt_span *const *)a;
	const struct rt_span *y = *(const struct rt_span *const *)b;

	return (x->end_ns < y->end_ns) - (x->end_ns > y->end_ns);
}

static int cmp_age_desc(const void *a, const void *b)
{
	const struct rt_cli_open *x = a, *y = b;

	return (x->age_ns < y->age_ns) - (x->age_ns > y->age_ns);
}

/* Words of s on lines of at most width columns, each indented by two spaces. */
static void wrapped(FILE *f, const char *s, size_t width)
{
	size_t col = 0;

	while (*s) {
		size_t w = strcspn(s, " ");

		if (col && col + 1 + w > width) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%s%.*s", col ? " " : "  ", (int)w, s);
		col += (col ? 1 : 2) + w;
		s += w;
		while (*s == ' ')
			s++;
	}
	fputc('\n', f);
}

/* The first finding over the frame's finished requests (docs/verdict.md). */
static int verdict(FILE *f, const struct frame *fr)
{
	struct rt_findings *fs = calloc(1, sizeof(*fs));
	struct rt_verdict *v = malloc(sizeof(*v));
	int err = -ENOMEM;

	if (!fs || !v)
		goto cleanup;
	err = rt_verdict_compute(fr->spans, fr->n, v);
	if (!err)
		err = rt_findings_compute(fr->spans, fr->n, v, NULL, fs);
	if (err)
		goto cleanup;
	fprintf(f, "\nVERDICT (reqtrace why: %u finding(s), the first)\n  %s\n", fs->n,
		rt_finding_kind_name(fs->f[0].kind));
	wrapped(f, fs->f[0].claim, 78);
cleanup:
	if (fs)
		rt_findings_free(fs);
	free(fs);
	free(v);
	return err;
}

static int render(FILE *f, const struct frame *fr)
{
	const struct rt_span **recent = NULL;
	struct rt_cli_open *open = NULL;
	struct rt_span_stats st;
	size_t i, k;
	int err, p;

	err = rt_span_stats_compute(fr->spans, fr->n, &st);
	if (err)
		return err;
	fprintf(f, "reqtrace top - %s - window: %s\n", fr->source, fr->window_desc);
	fprintf(f, "throughput ");
	if (fr->window_s > 0)
		fprintf(f, "%.2f req/s, %.1f tokens/s", fr->n / fr->window_s,
			st.tokens / fr->window_s);
	else
		fprintf(f, "-");
	fprintf(f, " (%zu finished in %.1f s); %zu in flight\n", fr->n, fr->window_s,
		fr->n_open + fr->open_dropped);
	fprintf(f, "drops: %s", fr->drops[0] ? fr->drops : "none");
	if (fr->spans_dropped)
		fprintf(f, " (view: %llu spans left out)", (unsigned long long)fr->spans_dropped);
	fprintf(f, "\n\nIN FLIGHT (%zu)\n", fr->n_open + fr->open_dropped);
	if (fr->n_open) {
		open = malloc(fr->n_open * sizeof(*open));
		if (!open)
			return -ENOMEM;
		memcpy(open, fr->open, fr->n_open * sizeof(*open));
		qsort(open, fr->n_open, sizeof(*open), cmp_age_desc);
		fprintf(f, "  %-24s %-20s %-16s %10s %6s\n", "REQUEST", "PATH", "PHASE", "AGE_MS",
			"EVENTS");
		for (i = 0; i < fr->n_open && i < OPEN_ROWS; i++) {
			fprintf(f, "  ");
			clipped(f, open[i].request_id, 24);
			fputc(' ', f);
			clipped(f, open[i].path[0] ? open[i].path : "-", 20);
			fputc(' ', f);
			clipped(f, open[i].phase, 16);
			fprintf(f, " %10.1f %6u\n", open[i].age_ns / 1e6, open[i].events_out);
		}
		if (fr->n_open > OPEN_ROWS)
			fprintf(f, "  ... %zu more\n", fr->n_open - OPEN_ROWS);
		free(open);
	}
	k = fr->n < RECENT_ROWS ? fr->n : RECENT_ROWS;
	fprintf(f, "\nRECENT (last %zu of %zu finished)\n", k, fr->n);
	if (k) {
		recent = malloc(fr->n * sizeof(*recent));
		if (!recent)
			return -ENOMEM;
		for (i = 0; i < fr->n; i++)
			recent[i] = &fr->spans[i];
		qsort(recent, fr->n, sizeof(*recent), cmp_end_desc);
		fprintf(f, "  %-24s %-20s %4s %9s %9s %6s  %s\n", "REQUEST", "PATH", "ST", "DUR_MS",
			"TTFT_MS", "EVENTS", "OUTCOME");
		for (i = 0; i < k; i++) {
			const struct rt_span *s = recent[i];

			fprintf(f, "  ");
			clipped(f, s->request_id, 24);
			fputc(' ', f);
			clipped(f, s->path[0] ? s->path : "-", 20);
			if (s->status)
				fprintf(f, " %4d", s->status);
			else
				fprintf(f, " %4s", "-");
			if (rt_span_duration_ns(s) != RT_NULL_NS)
				fprintf(f, " %9.1f", (double)rt_span_duration_ns(s) / 1e6);
			else /* started before the trace */
				fprintf(f, " %9s", "-");
			if (rt_span_ttft_ns(s) != RT_NULL_NS)
				fprintf(f, " %9.1f", (double)rt_span_ttft_ns(s) / 1e6);
			else
				fprintf(f, " %9s", "-");
			fprintf(f, " %6u  %s%s\n", s->events_out,
				rt_outcome_name((enum rt_outcome)s->outcome),
				s->flags & RT_SPAN_INCOMPLETE ? " (incomplete)" : "");
		}
		free(recent);
	}
	fprintf(f, "\nLATENCY (nearest rank over %u finished)\n", st.n_spans);
	fprintf(f, "  %-18s %10s %10s %6s\n", "", "P50_MS", "P99_MS", "N");
	pct_row(f, "duration", &st.duration);
	pct_row(f, "ttft", &st.ttft);
	pct_row(f, "itl (request p50)", &st.itl_p50);
	pct_row(f, "itl (request p99)", &st.itl_p99);
	fprintf(f, "\nPHASES (each over the requests where it was observed: N)\n");
	fprintf(f, "  %-18s %10s %10s %6s\n", "", "P50_MS", "P99_MS", "N");
	/* lifecycle order: the wait in the kernel comes first */
	pct_row(f, rt_phase_name(RT_PHASE_BACKLOG), &st.phase[RT_PHASE_BACKLOG]);
	for (p = 0; p < RT_PHASE__COUNT; p++)
		if (p != RT_PHASE_BACKLOG)
			pct_row(f, rt_phase_name((enum rt_phase)p), &st.phase[p]);
	return verdict(f, fr);
}

/* ---- sources of a frame ------------------------------------------------------------ */

struct top {
	const char *socket_path;
	const char *file;
	struct rt_cli_rec rec; /* --file: loaded once */
	struct rt_span *spans; /* live: this frame's */
	struct live live;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fill fr for this instant. Returns 0 or a CLI exit code (message printed). */
static int build(struct top *t, struct frame *fr)
{
	char req[64];
	size_t n = 0;
	int rc;

	memset(fr, 0, sizeof(*fr));
	if (t->file) {
		const struct rt_cli_rec *r = &t->rec;
		uint64_t lo = 0, hi = 0;
		size_t i;

		snprintf(fr->source, sizeof(fr->source), "recording %s", t->file);
		fr->window_desc = "the whole recording";
		fr->spans = r->spans;
		fr->n = r->n_spans;
		fr->spans_dropped = r->spans_dropped;
		fr->open = r->open;
		fr->n_open = r->n_open;
		fr->open_dropped = r->open_dropped;
		for (i = 0; i < r->n_spans; i++) {
			if (r->spans[i].start_ns && (!lo || r->spans[i].start_ns < lo))
				lo = r->spans[i].start_ns;
			if (r->spans[i].end_ns > hi)
				hi = r->spans[i].end_ns;
		}
		fr->window_s = hi > lo ? (double)(hi - lo) / 1e9 : 0;
		if (r->lost_records || r->late_events)
			snprintf(fr->drops, sizeof(fr->drops), "lost_records=%llu late_events=%llu",
				 (unsigned long long)r->lost_records,
				 (unsigned long long)r->late_events);
		return 0;
	}
	free(t->spans);
	t->spans = NULL;
	t->live.n_open = 0;
	t->live.open_dropped = 0;
	t->live.drops[0] = '\0';
	snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"status\"}");
	rc = rt_client_call(t->socket_path, req, status_line, &t->live, NULL, 0);
	if (!rc) {
		snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"inflight\"}");
		rc = rt_client_call(t->socket_path, req, open_line, &t->live, NULL, 0);
	}
	if (!rc)
		rc = rt_client_spans(t->socket_path, WINDOW_NS, &t->spans, &n);
	if (rc)
		return rc;
	snprintf(fr->source, sizeof(fr->source), "daemon %s", t->socket_path);
	fr->window_desc = "last 60 s";
	fr->spans = t->spans;
	fr->n = n;
	fr->open = t->live.open;
	fr->n_open = t->live.n_open;
	fr->open_dropped = t->live.open_dropped;
	/* a daemon up for less than the window has seen less than the window */
	fr->window_s = t->live.uptime_s < 60 ? t->live.uptime_s : 60;
	memcpy(fr->drops, t->live.drops, sizeof(fr->drops));
	return 0;
}

/* ---- the full-screen loop ------------------------------------------------------------ */

static volatile sig_atomic_t got_stop, got_winch;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_stop = 1;
}

/* Draw text clipped to the screen: at most rows - 1 lines of width columns. */
static void blit(const char *text, int width, int rows, bool hint)
{
	const char *p = text;
	int line = 0;

	fputs(RT_ANSI_CLEAR_HOME, stdout);
	while (*p && (rows <= 1 || line < rows - 1)) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(stdout, "%.*s\n", len < width ? len : width, p);
		line++;
		if (!nl)
			break;
		p = nl + 1;
	}
	if (rows > 1 && hint)
		printf("%.*s", width, "(q quits)");
	fflush(stdout);
}

/* Sleep up to ms; true when the user pressed q or a signal asked to stop. */
static bool wait_key(const struct rt_term_raw *raw, int ms)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000ull;

	while (!got_stop && !got_winch) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		uint64_t now = now_ns();
		char c;

		if (now >= until)
			return false;
		if (poll(&pfd, raw->active ? 1 : 0, (int)((until - now) / 1000000ull) + 1) > 0 &&
		    read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			return true;
	}
	return got_stop;
}

int rt_cli_top_frame(const char *socket_path, bool screen)
{
	struct top t = { .socket_path = socket_path };
	char *buf = NULL;
	size_t len = 0;
	struct frame fr;
	FILE *mf;
	int rc;

	t.live.open = calloc(RT_CLI_OPEN_MAX, sizeof(*t.live.open));
	if (!t.live.open)
		return RT_EXIT_FAIL;
	rc = build(&t, &fr);
	if (!rc && !screen && render(stdout, &fr))
		rc = RT_EXIT_FAIL;
	if (!rc && screen) {
		mf = open_memstream(&buf, &len);
		if (!mf || render(mf, &fr))
			rc = RT_EXIT_FAIL;
		if (mf)
			fclose(mf);
		if (!rc)
			blit(buf, rt_term_width(STDOUT_FILENO), rt_term_rows(STDOUT_FILENO), false);
		free(buf);
	}
	free(t.spans);
	free(t.live.open);
	return rc;
}

static int loop(struct top *t, uint64_t interval_ns)
{
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term, old_winch;
	struct rt_term_raw raw = { 0 };
	bool tty = isatty(STDOUT_FILENO) == 1;
	int rc = RT_EXIT_OK;
	char *buf = NULL;
	size_t len = 0;

	/* no SA_RESTART: poll() returns at once on a signal */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGWINCH, &sa, &old_winch);
	if (tty) {
		rt_term_raw_enter(&raw, STDIN_FILENO);
		fputs(RT_ANSI_HIDE_CURSOR, stdout);
	}
	while (!got_stop) {
		struct frame fr;
		FILE *mf;

		got_winch = 0;
		rc = build(t, &fr);
		if (rc)
			break;
		if (!tty) {
			/* a pipe or a file: plain frames one after another */
			render(stdout, &fr);
			printf("\n");
			fflush(stdout);
		} else {
			mf = open_memstream(&buf, &len);
			if (!mf) {
				rc = RT_EXIT_FAIL;
				break;
			}
			render(mf, &fr);
			fclose(mf);
			blit(buf, rt_term_width(STDOUT_FILENO), rt_term_rows(STDOUT_FILENO), true);
			free(buf);
			buf = NULL;
		}
		if (wait_key(&raw, (int)(interval_ns / 1000000ull)))
			break;
	}
	if (tty) {
		rt_term_raw_leave(&raw);
		fputs(RT_ANSI_SHOW_CURSOR "\n", stdout);
		fflush(stdout);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGWINCH, &old_winch, NULL);
	return rc;
}

static void top_usage(FILE *f)
{
	fprintf(f, "usage: reqtrace top [--once] [--interval DUR] [--file REC.rtrace]\n"
		   "  --once          print one plain frame (no escape codes) and exit\n"
		   "  --interval DUR  refresh period (default 1s)\n"
		   "  --file REC      the frame of a recording: all its spans, requests open at "
		   "its end\n"
		   "keys: q quits\n");
}

int rt_cmd_top(struct rt_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct top t = { .socket_path = cli->socket_path };
	uint64_t interval = 1000000000ull;
	bool once = false;
	struct frame fr;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			once = true;
			break;
		case 'i':
			if (rt_dur_parse(optarg, &interval) || interval < 100000000ull ||
			    interval > 3600000000000ull) {
				fprintf(stderr,
					"reqtrace: --interval: a duration from 100ms to 1h\n");
				return RT_EXIT_USAGE;
			}
			break;
		case 'f':
			t.file = optarg;
			break;
		case 'h':
			top_usage(stdout);
			return RT_EXIT_OK;
		default:
			top_usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		top_usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (t.file) {
		rc = rt_cli_rec_load(t.file, &t.rec);
		if (rc)
			return rc;
	}
	t.live.open = calloc(RT_CLI_OPEN_MAX, sizeof(*t.live.open));
	if (!t.live.open) {
		rc = RT_EXIT_FAIL;
		goto cleanup;
	}
	if (once) {
		rc = build(&t, &fr);
		if (!rc && render(stdout, &fr))
			rc = RT_EXIT_FAIL;
	} else {
		rc = loop(&t, interval);
	}
cleanup:
	free(t.spans);
	free(t.live.open);
	rt_cli_rec_free(&t.rec);
	return rc;
}
