// SPDX-License-Identifier: BSD-2-Clause
#include "export/span_table.h"

#include <string.h>

/* phases in the table, in lifecycle order, with short headings */
static const struct {
	enum rt_phase phase;
	const char *head;
} cols[] = {
	{ RT_PHASE_BACKLOG, "backlog" },  { RT_PHASE_RECEIVE, "recv" },
	{ RT_PHASE_QUEUE, "queue" },	  { RT_PHASE_TOKENIZE, "tok" },
	{ RT_PHASE_PREFILL, "prefill" },  { RT_PHASE_PRE_FIRST_TOKEN, "pre1st" },
	{ RT_PHASE_DECODE, "decode" },	  { RT_PHASE_COMM_WAIT, "comm" },
	{ RT_PHASE_POSTPROCESS, "post" }, { RT_PHASE_OTHER, "other" },
};

static void ms(FILE *f, int64_t ns, int width)
{
	if (ns == RT_NULL_NS)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, " %*.1f", width, ns / 1e6);
}

void rt_span_table_header(FILE *f)
{
	size_t i;

	fprintf(f, "%-24s %-20s %4s %9s %8s %6s", "REQUEST", "PATH", "ST", "DUR_MS", "TTFT_MS",
		"EVENTS");
	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		fprintf(f, " %7s", cols[i].head);
	fprintf(f, "  %s\n", "OUTCOME");
}

/* Long ids and paths keep their end, which is what tells requests apart. */
static void clipped(FILE *f, const char *s, int width, bool left)
{
	size_t n = strlen(s);

	if (n <= (size_t)width)
		fprintf(f, left ? "%-*s" : "%*s", width, s);
	else
		fprintf(f, "~%s", s + n - (size_t)(width - 1));
}

void rt_span_table_row(FILE *f, const struct rt_span *s)
{
	size_t i;

	clipped(f, s->request_id, 24, true);
	fputc(' ', f);
	clipped(f, s->path[0] ? s->path : "-", 20, true);
	if (s->status)
		fprintf(f, " %4d", s->status);
	else
		fprintf(f, " %4s", "-");
	ms(f, rt_span_duration_ns(s), 9);
	ms(f, rt_span_ttft_ns(s), 8);
	fprintf(f, " %6u", s->events_out);
	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		ms(f, s->phase_ns[cols[i].phase], 7);
	fprintf(f, "  %s", rt_outcome_name(s->outcome));
	if (s->flags & RT_SPAN_INCOMPLETE)
		fprintf(f, " (incomplete)");
	if (s->revision)
		fprintf(f, " rev%u", s->revision);
	fputc('\n', f);
}
