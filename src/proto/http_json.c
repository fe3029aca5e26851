// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a response's JSON says about generation: whether it carries
 * generated text (the TTFT rule of the span contract), and the numbers the
 * server reported (usage, llama.cpp timings). Only names and numbers leave
 * this file, never text.
 *
 * A whole text is read by json_walk.c (no tree, no allocation), which
 * refuses texts nested deeper than RT_HTTP_JSON_DEPTH_MAX. When only a head and a tail of a text were kept (a large
 * event, a gap), nothing parses as a whole; "usage" and "timings" objects
 * are then cut out and parsed on their own with cJSON (servers such as
 * llama.cpp put timings at the end of a large final event), and content
 * keys are looked for textually.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define TOKENS_MAX 1e15 /* beyond any real count; keeps the int64 conversion defined */

static bool number_value(const cJSON *it, double *v)
{
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return false;
	*v = it->valuedouble;
	return true;
}

static void set_tokens(struct rt_http_json_facts *f, double v)
{
	if (f->tokens_out < 0 && isfinite(v) && v >= 0 && v <= TOKENS_MAX)
		f->tokens_out = (int64_t)v;
}

static void set_tokens_from(struct rt_http_json_facts *f, const cJSON *it)
{
	double v;

	if (number_value(it, &v))
		set_tokens(f, v);
}

static void add_numbers(const cJSON *obj, const char *prefix, struct rt_http_json_facts *f)
{
	const cJSON *it;
	double v;

	cJSON_ArrayForEach(it, obj)
	{
		if (it->string && number_value(it, &v))
			rt_http_report(f->reported, &f->n_reported, prefix, it->string,
				       strlen(it->string), v);
	}
}

static void add_usage(const cJSON *usage, const cJSON *timings, struct rt_http_json_facts *f)
{
	if (cJSON_IsObject(usage)) {
		f->usage = true;
		add_numbers(usage, "usage", f);
		set_tokens_from(f, cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"));
	}
	if (cJSON_IsObject(timings)) {
		f->usage = true;
		add_numbers(timings, "timings", f);
		set_tokens_from(f, cJSON_GetObjectItemCaseSensitive(timings, "predicted_n"));
	}
}

/* An id worth an attribute: 1 to max-1 printable ASCII characters, no quote or backslash. */
static void set_response_id(struct rt_http_json_facts *f, const char *s, size_t n)
{
	size_t i;

	if (!n || n >= sizeof(f->response_id))
		return;
	for (i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			return;
	memcpy(f->response_id, s, n);
	f->response_id[n] = '\0';
}

/*
 * A kept head of a larger text: only a leading {"id":"..."} is the top-level
 * id for sure (OpenAI-style bodies and chunks start with it); an "id" further
 * in may belong to a tool call, so it is not taken.
 */
static void scan_response_id(const char *s, size_t n, struct rt_http_json_facts *f)
{
	static const char head[] = "\"id\"";
	size_t i = 0, j;

	while (i < n && strchr(" \t\r\n", s[i]))
		i++;
	if (i >= n || s[i++] != '{')
		return;
	while (i < n && strchr(" \t\r\n", s[i]))
		i++;
	if (n - i < sizeof(head) - 1 || memcmp(s + i, head, sizeof(head) - 1))
		return;
	i += sizeof(head) - 1;
	while (i < n && strchr(" \t\r\n", s[i]))
		i++;
	if (i >= n || s[i++] != ':')
		return;
	while (i < n && strchr(" \t\r\n", s[i]))
		i++;
	if (i >= n || s[i++] != '"')
		return;
	for (j = i; j < n && s[j] != '"'; j++)
		;
	if (j < n)
		set_response_id(f, s + i, j - i);
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The quoted keys the scan looks for. */
enum { K_USAGE, K_TIMINGS, K_PREDICTED, K_EVALUATED, K_CHOICES, K_CONTENT, K_TEXT, K_SLOT, K__N };

static const char *const qkeys[K__N] = {
	"\"usage\"",   "\"timings\"", "\"tokens_predicted\"", "\"tokens_evaluated\"", "\"choices\"",
	"\"content\"", "\"text\"",    "\"id_slot\"",
};

#define HITS_MAX 64

/*
 * Where each key occurs in the text, found in one pass over its quotes (a
 * quoted key starts at one), instead of one memmem pass per key and per
 * occurrence tried. With more hits than room, find_key searches as before.
 */
struct key_index {
	bool valid;
	size_t n;
	size_t pos[HITS_MAX];
	uint8_t key[HITS_MAX];
};

static void index_keys(const char *s, size_t n, struct key_index *ix)
{
	const char *q = s, *end = s + n;

	ix->valid = true;
	ix->n = 0;
	while ((q = memchr(q, '"', (size_t)(end - q)))) {
		size_t left = (size_t)(end - q);

		for (int k = 0; k < K__N; k++) {
			size_t kl = strlen(qkeys[k]);

			if (left < kl || q[1] != qkeys[k][1] || memcmp(q, qkeys[k], kl))
				continue;
			if (ix->n == HITS_MAX) {
				ix->valid = false;
				return;
			}
			ix->pos[ix->n] = (size_t)(q - s);
			ix->key[ix->n++] = (uint8_t)k;
			break; /* a quoted key is no prefix of another */
		}
		q++;
	}
}

/* The next occurrence of key k at or after *from, from the index or by search; n: none. */
static size_t next_hit(const char *s, size_t n, size_t from, int k, const struct key_index *ix)
{
	const char *hit;

	if (!ix->valid) {
		hit = memmem(s + from, n - from, qkeys[k], strlen(qkeys[k]));
		return hit ? (size_t)(hit - s) : n;
	}
	for (size_t j = 0; j < ix->n; j++)
		if (ix->key[j] == k && ix->pos[j] >= from)
			return ix->pos[j];
	return n;
}

/*
 * The next occurrence of the quoted key at or after *from, not escaped
 * (so not inside a string), followed by a colon: returns the index of the
 * value, or n when there is none.
 */
static size_t find_key(const char *s, size_t n, size_t *from, int k, const struct key_index *ix)
{
	size_t kl = strlen(qkeys[k]);

	while (*from < n) {
		size_t i = next_hit(s, n, *from, k, ix);

		if (i >= n)
			break;
		*from = i + 1;
		if (i > 0 && s[i - 1] == '\\')
			continue;
		i += kl;
		while (i < n && is_ws(s[i]))
			i++;
		if (i >= n || s[i] != ':')
			continue;
		i++;
		while (i < n && is_ws(s[i]))
			i++;
		if (i < n)
			return i;
	}
	*from = n;
	return n;
}

/* The end (exclusive) of the object or array starting at s[start], or 0. */
static size_t match_close(const char *s, size_t n, size_t start)
{
	bool in_str = false, esc = false;
	int depth = 0;

	for (size_t i = start; i < n; i++) {
		char c = s[i];

		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > RT_HTTP_JSON_DEPTH_MAX)
				return 0;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

/* The first "<key>": {...} that parses on its own. */
static cJSON *scan_object(const char *s, size_t n, int k, const struct key_index *ix)
{
	size_t from = 0, v;

	while ((v = find_key(s, n, &from, k, ix)) < n) {
		size_t end;
		cJSON *obj;

		if (s[v] != '{')
			continue;
		end = match_close(s, n, v);
		if (!end)
			continue;
		obj = cJSON_ParseWithLength(s + v, end - v);
		if (cJSON_IsObject(obj))
			return obj;
		cJSON_Delete(obj);
	}
	return NULL;
}

static void scan_count(const char *s, size_t n, int k, const struct key_index *ix, const char *name,
		       struct rt_http_json_facts *f)
{
	size_t from = 0, v = find_key(s, n, &from, k, ix), l = 0;
	char num[32];
	double d;

	if (v >= n)
		return;
	while (v + l < n && l < sizeof(num) - 1 && s[v + l] && strchr("0123456789.eE+-", s[v + l]))
		l++;
	if (!l)
		return;
	memcpy(num, s + v, l);
	num[l] = '\0';
	d = strtod(num, NULL);
	if (!isfinite(d))
		return;
	rt_http_report(f->reported, &f->n_reported, NULL, name, strlen(name), d);
	if (strcmp(name, "tokens_predicted") == 0)
		set_tokens(f, d);
}

/*
 * llama-server's "id_slot", a small integer near the start of its bodies, so
 * a kept head holds it; textual here: the first such key, at any depth.
 */
static void scan_id_slot(const char *s, size_t n, const struct key_index *ix,
			 struct rt_http_json_facts *f)
{
	size_t from = 0, v = find_key(s, n, &from, K_SLOT, ix), l = 0;
	long slot = 0;

	if (v >= n)
		return;
	while (v + l < n && l < 9 && s[v + l] >= '0' && s[v + l] <= '9')
		slot = slot * 10 + (s[v + l++] - '0');
	/* a whole integer: not cut by the kept head, no fraction or exponent */
	if (l && v + l < n && !strchr("0123456789.eE", s[v + l]))
		f->id_slot = (int32_t)slot;
}

/* A "<key>": "x..." with a non-empty string value. */
static void scan_text_key(const char *s, size_t n, int k, const struct key_index *ix,
			  struct rt_http_json_facts *f)
{
	size_t from = 0, v;

	while ((v = find_key(s, n, &from, k, ix)) < n) {
		if (s[v] != '"')
			continue;
		f->text_shape = true;
		if (v + 1 < n && s[v + 1] != '"') {
			f->content = true;
			return;
		}
	}
}

static void scan(const char *s, size_t n, const struct key_index *ix, struct rt_http_json_facts *f)
{
	cJSON *usage = scan_object(s, n, K_USAGE, ix);
	cJSON *timings = scan_object(s, n, K_TIMINGS, ix);
	size_t from = 0;

	add_usage(usage, timings, f);
	cJSON_Delete(usage);
	cJSON_Delete(timings);
	scan_count(s, n, K_PREDICTED, ix, "tokens_predicted", f);
	scan_count(s, n, K_EVALUATED, ix, "tokens_evaluated", f);
	if (find_key(s, n, &from, K_CHOICES, ix) < n)
		f->text_shape = true;
	scan_text_key(s, n, K_CONTENT, ix, f);
	if (!f->content)
		scan_text_key(s, n, K_TEXT, ix, f);
}

void rt_http_json_facts(const char *text, size_t len, bool partial, struct rt_http_json_facts *f)
{
	/* reported[] counts from 0: only its first n_reported entries are ever read */
	memset(f, 0, offsetof(struct rt_http_json_facts, reported));
	f->tokens_out = -1;
	f->id_slot = -1;
	if (!text || !len)
		return;
	if (partial) {
		struct key_index ix;

		index_keys(text, len, &ix);
		scan(text, len, &ix, f);
		scan_response_id(text, len, f);
		scan_id_slot(text, len, &ix, f);
		return;
	}
	/* the walk refuses texts nested deeper than RT_HTTP_JSON_DEPTH_MAX */
	(void)rt_json_walk_facts(text, len, f);
}
