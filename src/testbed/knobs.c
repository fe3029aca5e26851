// SPDX-License-Identifier: BSD-2-Clause
#include "knobs.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum knob_type { KNOB_MS, KNOB_U32, KNOB_U64 };

struct knob {
	const char *name;
	enum knob_type type;
	size_t off;
	double min, max;
};

#define OFF(f) offsetof(struct tb_knobs, f)

/* Upper bounds keep a typo from turning into an hour-long step. */
static const struct knob knobs[] = {
	{ "read_ms", KNOB_MS, OFF(read_ms), 0, 60000 },
	{ "tokenize_base_ms", KNOB_MS, OFF(tokenize_base_ms), 0, 60000 },
	{ "tokenize_ms_per_kchar", KNOB_MS, OFF(tokenize_ms_per_kchar), 0, 60000 },
	{ "tokenizer_threads", KNOB_U32, OFF(tokenizer_threads), 1, 64 },
	/* at most RT_MARK_STEP_MAX: every id of a step reaches the tracer */
	{ "max_batch", KNOB_U32, OFF(max_batch), 1, 256 },
	{ "max_wait_ms", KNOB_MS, OFF(max_wait_ms), 0, 60000 },
	{ "prefill_base_ms", KNOB_MS, OFF(prefill_base_ms), 0, 60000 },
	{ "prefill_ms_per_ktok", KNOB_MS, OFF(prefill_ms_per_ktok), 0, 60000 },
	{ "decode_base_ms", KNOB_MS, OFF(decode_base_ms), 0, 60000 },
	{ "decode_ms_per_seq", KNOB_MS, OFF(decode_ms_per_seq), 0, 60000 },
	{ "detokenize_ms", KNOB_MS, OFF(detokenize_ms), 0, 60000 },
	{ "postprocess_ms", KNOB_MS, OFF(postprocess_ms), 0, 60000 },
	{ "comm_delay_ms", KNOB_MS, OFF(comm_delay_ms), 0, 60000 },
	{ "max_tokens_default", KNOB_U32, OFF(max_tokens_default), 1, 65536 },
	{ "max_tokens_limit", KNOB_U32, OFF(max_tokens_limit), 1, 65536 },
	{ "max_body", KNOB_U64, OFF(max_body), 1, 1 << 30 },
	{ "handler_threads", KNOB_U32, OFF(handler_threads), 1, 1024 },
	{ "park_idle", KNOB_U32, OFF(park_idle), 0, 1 },
	{ "omp_threads", KNOB_U32, OFF(omp_threads), 1, 64 },
	{ "omp_wait_policy", KNOB_U32, OFF(omp_wait_policy), 0, 2 },
	/* at most the period: more would be a thread that never sleeps */
	{ "omp_gc_ms", KNOB_MS, OFF(omp_gc_ms), 0, 20 },
};

void tb_knobs_default(struct tb_knobs *k)
{
	memset(k, 0, sizeof(*k));
	k->read_ms = 0.2;
	k->tokenize_base_ms = 0.5;
	k->tokenize_ms_per_kchar = 1.0;
	k->tokenizer_threads = 1;
	k->max_batch = 8;
	k->max_wait_ms = 2;
	/*
	 * A batch of 8 costs 1.8x a batch of 1 (the seed's measurement):
	 * decode (10 + 8 * 1.29) / (10 + 1.29) = 1.80, and prefill with the
	 * load generator's default 256-char (64-token) prompts
	 * (8 + 8 * 1.024) / (8 + 1.024) = 1.79.
	 */
	k->prefill_base_ms = 8;
	k->prefill_ms_per_ktok = 16;
	k->decode_base_ms = 10;
	k->decode_ms_per_seq = 1.29;
	k->detokenize_ms = 0.05;
	k->postprocess_ms = 0.5;
	k->comm_delay_ms = 0;
	k->max_tokens_default = 16;
	k->max_tokens_limit = 4096;
	k->max_body = 1 << 20;
	k->handler_threads = 64;
	k->omp_threads = 2;
}

static const struct knob *knob_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (strcmp(knobs[i].name, name) == 0)
			return &knobs[i];
	return NULL;
}

int tb_knobs_set(struct tb_knobs *k, const char *key, const char *value, char *err, size_t errlen)
{
	const struct knob *kn = knob_find(key);
	char *end = NULL;
	double d;

	if (!kn) {
		snprintf(err, errlen, "unknown knob '%s'", key);
		return -ENOENT;
	}
	errno = 0;
	if (kn->type == KNOB_MS) {
		d = strtod(value, &end);
	} else {
		/* strtoull accepts "-1": refuse signs explicitly */
		if (!isdigit((unsigned char)value[0]))
			goto bad;
		d = (double)strtoull(value, &end, 10);
	}
	if (errno || end == value || *end != '\0' || !isfinite(d))
		goto bad;
	if (d < kn->min || d > kn->max) {
		snprintf(err, errlen, "knob '%s': %s is out of range [%g, %g]", key, value, kn->min,
			 kn->max);
		return -EINVAL;
	}
	switch (kn->type) {
	case KNOB_MS:
		*(double *)((char *)k + kn->off) = d;
		break;
	case KNOB_U32:
		*(uint32_t *)((char *)k + kn->off) = (uint32_t)d;
		break;
	case KNOB_U64:
		*(uint64_t *)((char *)k + kn->off) = (uint64_t)d;
		break;
	}
	return 0;
bad:
	snprintf(err, errlen, "knob '%s': bad value '%s' (%s)", key, value,
		 kn->type == KNOB_MS ? "milliseconds, a decimal number" : "an unsigned integer");
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Splits "key = value" in place; comments were already cut. */
static int split_kv(char *line, char **key, char **value, char *err, size_t errlen)
{
	char *eq = strchr(line, '=');

	if (!eq) {
		snprintf(err, errlen, "expected 'knob = value', got '%s'", line);
		return -EINVAL;
	}
	*eq = '\0';
	*key = trim(line);
	*value = trim(eq + 1);
	if (!**key || !**value) {
		snprintf(err, errlen, "expected 'knob = value'");
		return -EINVAL;
	}
	return 0;
}

int tb_knobs_set_arg(struct tb_knobs *k, const char *arg, char *err, size_t errlen)
{
	char buf[256], *key, *value;
	int err_;

	if (strlen(arg) >= sizeof(buf)) {
		snprintf(err, errlen, "knob setting too long");
		return -EINVAL;
	}
	strcpy(buf, arg);
	err_ = split_kv(buf, &key, &value, err, errlen);
	if (err_)
		return err_;
	return tb_knobs_set(k, key, value, err, errlen);
}

int tb_knobs_parse_line(struct tb_knobs *k, const char *line, char *err, size_t errlen)
{
	char buf[256], *s, *hash, *key, *value;
	int err_;

	if (strlen(line) >= sizeof(buf)) {
		snprintf(err, errlen, "line too long");
		return -EINVAL;
	}
	strcpy(buf, line);
	hash = strchr(buf, '#');
	if (hash)
		*hash = '\0';
	s = trim(buf);
	if (!*s)
		return 0;
	err_ = split_kv(s, &key, &value, err, errlen);
	if (err_)
		return err_;
	return tb_knobs_set(k, key, value, err, errlen);
}

int tb_knobs_load(struct tb_knobs *k, const char *path, char *err, size_t errlen)
{
	char line[512], msg[256];
	unsigned lineno = 0;
	FILE *f;
	int err_ = 0;

	f = fopen(path, "re");
	if (!f) {
		err_ = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-err_));
		return err_;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line too long", path, lineno);
			err_ = -EINVAL;
			goto cleanup;
		}
		err_ = tb_knobs_parse_line(k, line, msg, sizeof(msg));
		if (err_) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, msg);
			goto cleanup;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		err_ = -EIO;
	}
cleanup:
	fclose(f);
	return err_;
}

int tb_knobs_check(const struct tb_knobs *k, char *err, size_t errlen)
{
	if (k->max_tokens_default > k->max_tokens_limit) {
		snprintf(err, errlen, "max_tokens_default (%u) exceeds max_tokens_limit (%u)",
			 k->max_tokens_default, k->max_tokens_limit);
		return -EINVAL;
	}
	return 0;
}

double tb_knobs_prefill_ms(const struct tb_knobs *k, uint64_t tokens)
{
	return k->prefill_base_ms + k->prefill_ms_per_ktok * (double)tokens / 1000.0;
}

double tb_knobs_decode_ms(const struct tb_knobs *k, uint32_t batch)
{
	return k->decode_base_ms + k->decode_ms_per_seq * batch;
}

double tb_knobs_tokenize_ms(const struct tb_knobs *k, uint64_t chars)
{
	return k->tokenize_base_ms + k->tokenize_ms_per_kchar * (double)chars / 1000.0;
}

uint64_t tb_prompt_tokens(uint64_t chars)
{
	return chars ? (chars + 3) / 4 : 1;
}
