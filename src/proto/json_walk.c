// SPDX-License-Identifier: BSD-2-Clause
/*
 * The facts of a whole JSON text without building a tree.
 *
 * Every SSE event of every streamed response is a JSON text; cJSON gave
 * each value a heap node, and parsing plus its malloc/free were a sixth of
 * the correlator's time with tens of requests in flight (docs/benchmarks.md).
 * This reads the same facts as it validates the text, and allocates
 * nothing: one walk checks the text as cJSON 1.7 accepts it (trailing
 * bytes after the value allowed, a UTF-8 BOM skipped, whitespace any byte
 * up to 0x20, numbers as strtod reads the run of [0-9+-eE.], "\u" escapes
 * with its surrogate rules, an invalid hex digit read as 0) and reads the
 * members the facts come from where they lie: keys compared in place,
 * "choices" elements and "usage"/"timings" objects as they are validated.
 * Only a "timings" seen before "usage" is read again after the walk (the
 * tree walk reported usage first), and the few scalar members are read at
 * the offsets the walk noted. A string is what cJSON's valuestring holds:
 * unescaped and cut at its first NUL.
 * tests/unit/test_json_walk.c holds it to cJSON itself, fact for fact, on
 * hand-made edge cases, the fuzz corpora and a million mutations of them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define TOKENS_MAX 1e15 /* as http_json.c: keeps the int64 conversion defined */

struct jw {
	const unsigned char *s;
	size_t n;
	size_t i;
	int depth; /* containers open; beyond RT_HTTP_JSON_DEPTH_MAX the text is refused */
};

static void ws(struct jw *p)
{
	while (p->i < p->n && p->s[p->i] <= 32)
		p->i++;
}

/* After a member or an element: a comma says another one follows. */
static inline bool more(struct jw *p)
{
	ws(p);
	if (p->i < p->n && p->s[p->i] == ',') {
		p->i++;
		return true;
	}
	return false;
}

/*
 * Enter the container whose opening bracket is at p->i: -1 too deep, 0 it
 * was empty (its closing bracket c read, its level left), 1 members follow.
 */
static inline int open_with(struct jw *p, char c)
{
	if (++p->depth > RT_HTTP_JSON_DEPTH_MAX)
		return -1;
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == c) {
		p->i++;
		p->depth--;
		return 0;
	}
	return 1;
}

/* The container's closing bracket, which leaves its nesting level. */
static inline bool close_with(struct jw *p, char c)
{
	if (p->i >= p->n || p->s[p->i] != c)
		return false;
	p->i++;
	p->depth--;
	return true;
}

static unsigned int hex4(const unsigned char *h)
{
	unsigned int v = 0;

	for (int k = 0; k < 4; k++) {
		unsigned char c = h[k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'A' && c <= 'F')
			v |= 10u + c - 'A';
		else if (c >= 'a' && c <= 'f')
			v |= 10u + c - 'a';
		else
			return 0; /* as cJSON: not an error, a zero */
	}
	return v;
}

/* UTF-8 of cp into out (4 bytes room); its length */
static size_t utf8(unsigned long cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/*
 * The first quote or backslash in s[i..n), or n: eight bytes a step (the
 * classic has-zero-byte test; its lowest flagged byte is always a true
 * match, and bytes are read little-end first), the rest one by one.
 */
static inline __attribute__((always_inline)) size_t stop_at(const unsigned char *s, size_t i,
							    size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;

	for (; i + 8 <= n; i += 8) {
		uint64_t w, q, b, hit;

		memcpy(&w, s + i, 8);
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		hit = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
		if (hit)
			return i + (size_t)(__builtin_ctzll(hit) >> 3);
	}
#endif
	while (i < n && s[i] != '"' && s[i] != '\\')
		i++;
	return i;
}

/*
 * A string at p->i ('"'). Validates it; into buf (cap bytes, may be 0) goes
 * the start of its value as a C string would hold it (cut at the first
 * NUL), *len its whole length so cut (cap + 1 when longer than cap).
 */
static bool string(struct jw *p, char *buf, size_t cap, size_t *len)
{
	const unsigned char *s = p->s;
	size_t end = p->i + 1, k, out = 0;
	bool cut = false, escaped = false, found;

	if (p->i >= p->n || s[p->i] != '"')
		return false;
	/* most strings hold no backslash: the first quote ends them */
	end = stop_at(s, end, p->n);
	found = end < p->n && s[end] == '"';
	if (!found) {
		/* an escape, or no end: byte by byte from the start */
		end = p->i + 1;
		while (end < p->n && s[end] != '"') {
			if (s[end] == '\\') {
				if (end + 1 >= p->n)
					return false;
				escaped = true;
				end++;
			}
			end++;
		}
		if (end >= p->n)
			return false;
	}
	if (!escaped && !cap) {
		/* a value nobody reads: only whether it is empty as a C string */
		*len = end > p->i + 1 && s[p->i + 1] ? 1 : 0;
		p->i = end + 1;
		return true;
	}
	if (!escaped) {
		/* most strings: nothing to unescape, only where a NUL cuts it */
		const unsigned char *z = NULL;

		/* where a NUL cuts it: keys are short, a call costs more than the bytes */
		if (end - p->i - 1 <= 32) {
			for (k = p->i + 1; k < end && !z; k++)
				if (!s[k])
					z = s + k;
		} else {
			z = memchr(s + p->i + 1, 0, end - p->i - 1);
		}
		out = (z ? (size_t)(z - s) : end) - p->i - 1;
		memcpy(buf, s + p->i + 1, out < cap ? out : cap - 1);
		buf[out < cap ? out : cap - 1] = '\0';
		*len = out <= cap ? out : cap + 1;
		p->i = end + 1;
		return true;
	}
	for (k = p->i + 1; k < end;) {
		unsigned char u[4];
		size_t m = 1;

		if (s[k] != '\\') {
			u[0] = s[k++];
		} else if (s[k + 1] == 'u') {
			unsigned long cp;
			unsigned int first, second;

			if (end - k < 6)
				return false;
			first = hex4(s + k + 2);
			if (first >= 0xDC00 && first <= 0xDFFF)
				return false;
			if (first >= 0xD800 && first <= 0xDBFF) {
				if (end - (k + 6) < 6 || s[k + 6] != '\\' || s[k + 7] != 'u')
					return false;
				second = hex4(s + k + 8);
				if (second < 0xDC00 || second > 0xDFFF)
					return false;
				cp = 0x10000 + (((first & 0x3FFul) << 10) | (second & 0x3FF));
				k += 12;
			} else {
				cp = first;
				k += 6;
			}
			m = utf8(cp, u);
		} else {
			switch (s[k + 1]) {
			case 'b':
				u[0] = '\b';
				break;
			case 'f':
				u[0] = '\f';
				break;
			case 'n':
				u[0] = '\n';
				break;
			case 'r':
				u[0] = '\r';
				break;
			case 't':
				u[0] = '\t';
				break;
			case '"':
			case '\\':
			case '/':
				u[0] = s[k + 1];
				break;
			default:
				return false;
			}
			k += 2;
		}
		for (size_t j = 0; j < m && !cut; j++) {
			if (u[j] == 0) {
				cut = true; /* the C string ends here */
				break;
			}
			if (out < cap)
				buf[out] = (char)u[j];
			out++;
		}
	}
	if (cap)
		buf[out < cap ? out : cap - 1] = '\0';
	*len = out <= cap ? out : cap + 1;
	p->i = end + 1;
	return true;
}

static bool num_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.';
}

static bool number(struct jw *p, double *v)
{
	char small[64], *num = small;
	size_t l = 0, d;
	char *after;

	/*
	 * Most numbers are plain integers: one pass over the digits. What
	 * follows them must end the run strtod would read (no '.', 'e', sign),
	 * and up to 15 digits the value is exact; otherwise the general path.
	 */
	{
		const unsigned char *s = p->s;
		size_t i = p->i + (s[p->i] == '-'), k = i;
		double x = 0;

		while (k < p->n && k - i < 16 && s[k] >= '0' && s[k] <= '9')
			x = x * 10 + (s[k++] - '0');
		if (k > i && k - i <= 15 && (k >= p->n || !num_char(s[k]))) {
			*v = s[p->i] == '-' ? -x : x;
			p->i = k;
			return true;
		}
	}
	while (p->i + l < p->n && num_char(p->s[p->i + l]))
		l++;
	/*
	 * Most numbers are plain integers: strtod reads all of such a run, and
	 * up to 15 digits it is exact, so the value is computed here.
	 */
	d = l && p->s[p->i] == '-';
	if (l > d && l - d <= 15) {
		double x = 0;
		size_t k;

		for (k = d; k < l && p->s[p->i + k] >= '0' && p->s[p->i + k] <= '9'; k++)
			x = x * 10 + (p->s[p->i + k] - '0');
		if (k == l) {
			*v = d ? -x : x;
			p->i += l;
			return true;
		}
	}
	/* Debian's cJSON reads the whole run (its CVE-2023-26819 fix), not 63 */
	if (l >= sizeof(small)) {
		num = malloc(l + 1);
		if (!num)
			return false;
	}
	memcpy(num, p->s + p->i, l);
	num[l] = '\0';
	*v = strtod(num, &after);
	l = (size_t)(after - num);
	if (num != small)
		free(num);
	if (l == 0)
		return false;
	p->i += l;
	return true;
}

static bool literal(struct jw *p, const char *w, size_t l)
{
	if (p->n - p->i < l || memcmp(p->s + p->i, w, l))
		return false;
	p->i += l;
	return true;
}

static bool value(struct jw *p);

static bool array(struct jw *p)
{
	switch (open_with(p, ']')) {
	case -1:
		return false;
	case 0:
		return true;
	}
	for (;;) {
		ws(p);
		if (!value(p))
			return false;
		if (more(p))
			continue;
		break;
	}
	return close_with(p, ']');
}

/*
 * A member of an object with names that a hook reads itself: 1 when the
 * hook read (and validated) the value, 0 when value() should, -1 when the
 * text does not parse.
 */
typedef int (*member_hook)(struct jw *p, size_t k, void *ctx);

/*
 * The key at p->i ('"'), consumed: *which is the first names[k] (lens[k]
 * its length) it equals as a C string would hold it (cut at its first
 * NUL) whose at[k] is still 0, n_names when none. Most keys hold no
 * backslash: compared where they lie, not copied.
 */
static bool key(struct jw *p, const char *const *names, const unsigned char *lens, const size_t *at,
		size_t n_names, size_t *which)
{
	const unsigned char *s = p->s;
	size_t st = p->i + 1, end = stop_at(s, st, p->n);
	char buf[24];
	size_t kl;

	*which = n_names;
	if (end < p->n && s[end] == '"') {
		const unsigned char *raw = s + st;
		size_t rl = end - st;

		for (size_t k = 0; k < n_names; k++) {
			size_t l = lens[k];

			size_t j = 1;

			/* raw[0] is readable even when rl is 0: the closing quote */
			if (raw[0] != (unsigned char)names[k][0] || rl < l)
				continue;
			/* names are short: a call to memcmp costs more than the bytes */
			while (j < l && raw[j] == (unsigned char)names[k][j])
				j++;
			/* a NUL right after the name cuts the key there */
			if (j == l && (rl == l || !raw[l])) {
				if (!at[k])
					*which = k;
				break;
			}
		}
		p->i = end + 1;
		return true;
	}
	if (!string(p, buf, sizeof(buf), &kl))
		return false;
	for (size_t k = 0; k < n_names && kl < sizeof(buf); k++) {
		if (buf[0] == names[k][0] && !strcmp(buf, names[k])) {
			if (!at[k])
				*which = k;
			break;
		}
	}
	return true;
}

/*
 * An object at p->i. With names, the offset of the value of the first
 * member called names[k] goes to at[k] (0: none; a value is never at 0),
 * and hook, when given, may read that value itself.
 */
static bool object(struct jw *p, const char *const *names, const unsigned char *lens, size_t *at,
		   size_t n_names, member_hook hook, void *ctx)
{
	size_t kl, k;

	switch (open_with(p, '}')) {
	case -1:
		return false;
	case 0:
		return true;
	}
	for (;;) {
		ws(p);
		if (p->i >= p->n || p->s[p->i] != '"')
			return false;
		if (n_names) {
			if (!key(p, names, lens, at, n_names, &k))
				return false;
		} else {
			if (!string(p, NULL, 0, &kl))
				return false;
			k = 0;
		}
		ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return false;
		p->i++;
		ws(p);
		if (k < n_names) {
			at[k] = p->i;
			if (hook) {
				int r = hook(p, k, ctx);

				if (r < 0)
					return false;
				if (r)
					goto next;
			}
		}
		if (!value(p))
			return false;
	next:
		if (more(p))
			continue;
		break;
	}
	return close_with(p, '}');
}

static bool value(struct jw *p)
{
	size_t l;
	double d;

	if (p->i >= p->n)
		return false;
	switch (p->s[p->i]) {
	case 'n':
		return literal(p, "null", 4);
	case 'f':
		return literal(p, "false", 5);
	case 't':
		return literal(p, "true", 4);
	case '"':
		return string(p, NULL, 0, &l);
	case '[':
		return array(p);
	case '{':
		return object(p, NULL, NULL, NULL, 0, NULL, NULL);
	default:
		if (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9'))
			return number(p, &d);
		return false;
	}
}

/*
 * The bytes after the value (cJSON ignores them) nest no deeper than the
 * bound either, as the whole-text check this walk replaced required: it
 * counted brackets outside strings over the whole text, and within a
 * value that parsed, that count is the walk's own depth.
 */
static bool trailing_ok(const struct jw *p)
{
	bool in_str = false, esc = false;
	int depth = 0;

	for (size_t i = p->i; i < p->n; i++) {
		unsigned char c = p->s[i];

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
				return false;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return true;
}

/* ---- facts read as the walk validates ------------------------------------ */

static char kind_at(const struct jw *t, size_t at)
{
	return at ? (char)t->s[at] : 0;
}

/*
 * Whether the string at `at` (one the walk accepted) is non-empty as a C
 * string: its first character, unescaped, is no NUL. An escape other than
 * "\u" never is; a "\u" is NUL only as 0000 or with a bad hex digit.
 */
static bool nonempty_string(const struct jw *t, size_t at)
{
	const unsigned char *s = t->s + at;

	if (kind_at(t, at) != '"' || s[1] == '"' || !s[1])
		return false;
	if (s[1] != '\\' || s[2] != 'u')
		return true;
	return hex4(s + 3) != 0;
}

/*
 * nonempty_string(), for a string whose emptiness is a fact: the first such
 * without a backslash becomes f's var string (struct rt_http_json_facts).
 */
static bool content_string(const struct jw *t, size_t at, struct rt_http_json_facts *f)
{
	if (!f->var_q1 && kind_at(t, at) == '"' && at <= UINT32_MAX) {
		size_t e = stop_at(t->s, at + 1, t->n);

		if (e < t->n && t->s[e] == '"' && e <= UINT32_MAX) {
			f->var_q0 = (uint32_t)at;
			f->var_q1 = (uint32_t)e;
		}
	}
	return nonempty_string(t, at);
}

static bool number_at(const struct jw *t, size_t at, double *v)
{
	struct jw p = { t->s, t->n, at, 0 };
	char c = kind_at(t, at);

	if (!(c == '-' || (c >= '0' && c <= '9')))
		return false;
	return number(&p, v) && isfinite(*v);
}

static void set_tokens(struct rt_http_json_facts *f, bool have, double v)
{
	if (have && f->tokens_out < 0 && v >= 0 && v <= TOKENS_MAX)
		f->tokens_out = (int64_t)v;
}

/*
 * Every numeric member of the object at p->i reported as "prefix.name",
 * validated as object() would; *tok, *have the value of the first member
 * called `count` when it is a finite number.
 */
static bool numbers(struct jw *p, const char *prefix, const char *count, size_t count_len,
		    struct rt_http_json_facts *f, double *tok, bool *have)
{
	char name[RT_HTTP_REPORTED_NAME_MAX + 1];
	bool count_seen = false;
	size_t nl;
	double v;

	switch (open_with(p, '}')) {
	case -1:
		return false;
	case 0:
		return true;
	}
	for (;;) {
		bool is_count;
		char c;

		ws(p);
		if (!string(p, name, sizeof(name), &nl))
			return false;
		ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return false;
		p->i++;
		ws(p);
		is_count = !count_seen && nl == count_len && !memcmp(name, count, count_len);
		count_seen |= is_count;
		c = p->i < p->n ? (char)p->s[p->i] : 0;
		if (c == '-' || (c >= '0' && c <= '9')) {
			if (!number(p, &v))
				return false;
			if (isfinite(v)) {
				rt_http_report(f->reported, &f->n_reported, prefix, name, nl, v);
				if (is_count) {
					*tok = v;
					*have = true;
				}
			}
		} else if (!value(p)) {
			return false;
		}
		if (more(p))
			continue;
		break;
	}
	return close_with(p, '}');
}

static const char *const content_names[1] = { "content" };
static const unsigned char content_lens[1] = { 7 };

/* where choices_walk() reads to */
struct content {
	bool content; /* an element has content */
	struct rt_http_json_facts *f; /* for its var string */
};

/* an element of "choices": its "delta" or "message" object's "content" read in place */
static int element_hook(struct jw *p, size_t k, void *ctx)
{
	struct content *c = ctx;
	size_t at = 0;

	if (k == 0 || p->i >= p->n || p->s[p->i] != '{')
		return 0;
	if (!object(p, content_names, content_lens, &at, 1, NULL, NULL))
		return -1;
	if (content_string(p, at, c->f))
		c->content = true;
	return 1;
}

/*
 * The first top-level "choices" array, validated as array() would, and
 * content set when an element has a non-empty "text", delta.content or
 * message.content (each the first member so called), as the tree walk
 * read them.
 */
static bool choices_walk(struct jw *p, struct content *content)
{
	static const char *const names[3] = { "text", "delta", "message" };
	static const unsigned char lens[3] = { 4, 5, 7 };

	switch (open_with(p, ']')) {
	case -1:
		return false;
	case 0:
		return true;
	}
	for (;;) {
		ws(p);
		if (p->i < p->n && p->s[p->i] == '{') {
			size_t at[3] = { 0 };

			if (!object(p, names, lens, at, 3, element_hook, content))
				return false;
			if (content_string(p, at[0], content->f))
				content->content = true;
		} else if (!value(p)) {
			return false;
		}
		if (more(p))
			continue;
		break;
	}
	return close_with(p, ']');
}

enum { M_ID, M_CHOICES, M_CONTENT, M_USAGE, M_TIMINGS, M_PREDICTED, M_EVALUATED, M_SLOT, M__N };

/* what the top level's hook read */
struct top {
	struct rt_http_json_facts *f;
	const size_t *at;
	bool choices, content; /* "choices" was an array; one of its elements has content */
	bool usage, timings; /* reported, in that order, as the tree walk did */
	bool usage_have, timings_have;
	double usage_tok, timings_tok;
	size_t timings_late; /* "timings" before "usage": walked again after */
};

static int top_hook(struct jw *p, size_t k, void *ctx)
{
	struct top *t = ctx;
	bool obj = p->i < p->n && p->s[p->i] == '{';

	switch (k) {
	case M_CHOICES:
		if (p->i >= p->n || p->s[p->i] != '[')
			return 0;
		{
			struct content c = { .content = t->content, .f = t->f };

			if (!choices_walk(p, &c))
				return -1;
			t->content = c.content;
		}
		t->choices = true;
		return 1;
	case M_USAGE:
		if (!obj)
			return 0;
		if (!numbers(p, "usage", "completion_tokens", 17, t->f, &t->usage_tok,
			     &t->usage_have))
			return -1;
		t->usage = true;
		return 1;
	case M_TIMINGS:
		if (!obj)
			return 0;
		/* a "usage" after it would be reported first: left for later */
		if (!t->at[M_USAGE]) {
			t->timings_late = p->i;
			return 0;
		}
		if (!numbers(p, "timings", "predicted_n", 11, t->f, &t->timings_tok,
			     &t->timings_have))
			return -1;
		t->timings = true;
		return 1;
	default:
		return 0;
	}
}

bool rt_json_walk_facts(const char *text, size_t len, struct rt_http_json_facts *f)
{
	static const char *const names[M__N] = {
		"id",	   "choices",	       "content",	   "usage",
		"timings", "tokens_predicted", "tokens_evaluated", "id_slot"
	};
	static const unsigned char lens[M__N] = { 2, 7, 7, 5, 7, 16, 16, 7 };
	struct jw t = { (const unsigned char *)text, len, 0, 0 };
	size_t at[M__N] = { 0 };
	struct top top = { .f = f, .at = at };
	uint32_t n0 = f->n_reported;
	double v;

	if (len > 4 && !memcmp(text, "\xEF\xBB\xBF", 3))
		t.i = 3;
	ws(&t);
	if (t.i >= t.n)
		return false;
	if (t.s[t.i] != '{') {
		if (!value(&t) || !trailing_ok(&t))
			return false;
		return f->parsed = true;
	}
	if (!object(&t, names, lens, at, M__N, top_hook, &top) || !trailing_ok(&t)) {
		f->n_reported = n0; /* what the walk reported before it failed */
		return false;
	}
	f->parsed = true;
	if (kind_at(&t, at[M_ID]) == '"' && t.s[stop_at(t.s, at[M_ID] + 1, t.n)] == '"') {
		/*
		 * No escape (the walk accepted the string, so the stop is in
		 * bounds): checked where it lies, as string() would cut it at a
		 * NUL and the check below would take it.
		 */
		const unsigned char *raw = t.s + at[M_ID] + 1;
		size_t l;
		bool ok = true;

		for (l = 0; l < RT_HTTP_RESPONSE_ID_MAX && raw[l] != '"' && raw[l]; l++)
			if (raw[l] < 0x21 || raw[l] > 0x7e) {
				ok = false;
				break;
			}
		if (ok && l && l < RT_HTTP_RESPONSE_ID_MAX) {
			memcpy(f->response_id, raw, l);
			f->response_id[l] = '\0';
		}
	} else if (kind_at(&t, at[M_ID]) == '"') {
		struct jw p = { t.s, t.n, at[M_ID], 0 };
		char id[RT_HTTP_RESPONSE_ID_MAX];
		size_t l;
		bool ok = true;

		/* an id worth an attribute: printable ASCII, no quote or backslash */
		if (string(&p, id, sizeof(id), &l) && l && l < sizeof(id)) {
			for (size_t i = 0; i < l; i++)
				if (id[i] < 0x21 || id[i] > 0x7e || id[i] == '"' || id[i] == '\\')
					ok = false;
			if (ok)
				memcpy(f->response_id, id, l + 1);
		}
	}
	if (top.choices) {
		f->text_shape = true;
		f->content = top.content;
	}
	if (kind_at(&t, at[M_CONTENT]) == '"') {
		f->text_shape = true;
		if (content_string(&t, at[M_CONTENT], f))
			f->content = true;
	}
	if (top.timings_late) {
		struct jw p = { t.s, t.n, top.timings_late, 0 };

		(void)numbers(&p, "timings", "predicted_n", 11, f, &top.timings_tok,
			      &top.timings_have);
		top.timings = true;
	}
	f->usage = top.usage || top.timings;
	set_tokens(f, top.usage_have, top.usage_tok);
	set_tokens(f, top.timings_have, top.timings_tok);
	if (number_at(&t, at[M_PREDICTED], &v))
		rt_http_report(f->reported, &f->n_reported, NULL, "tokens_predicted", 16, v);
	if (number_at(&t, at[M_EVALUATED], &v))
		rt_http_report(f->reported, &f->n_reported, NULL, "tokens_evaluated", 16, v);
	if (number_at(&t, at[M_PREDICTED], &v))
		set_tokens(f, true, v);
	/* llama-server's slot (its sequence id): the pack's exact join, not a report */
	if (number_at(&t, at[M_SLOT], &v) && v >= 0 && v < 1e9 && v == (double)(int32_t)v)
		f->id_slot = (int32_t)v;
	return true;
}
