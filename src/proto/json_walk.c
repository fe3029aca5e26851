// SPDX-License-Identifier: BSD-2-Clause
/*
 * The facts of a whole JSON text without building a tree.
 *
 * Every SSE event of every streamed response is a JSON text; cJSON gave
 * each value a heap node, and parsing plus its malloc/free were a sixth of
 * the correlator's time with tens of requests in flight (docs/benchmarks.md).
 * This reads the same facts in two passes over the bytes and allocates
 * nothing: the first validates the text as cJSON 1.7 accepts it (trailing
 * bytes after the value allowed, a UTF-8 BOM skipped, whitespace any byte
 * up to 0x20, numbers as strtod reads the run of [0-9+-eE.], "\u" escapes
 * with its surrogate rules, an invalid hex digit read as 0) and notes where
 * the top-level members the facts come from first appear; the second reads
 * those values in the order the tree walk did. A string is what cJSON's
 * valuestring holds: unescaped and cut at its first NUL.
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
static size_t stop_at(const unsigned char *s, size_t i, size_t n)
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
	if (++p->depth > RT_HTTP_JSON_DEPTH_MAX)
		return false;
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == ']') {
		p->i++;
		p->depth--;
		return true;
	}
	for (;;) {
		ws(p);
		if (!value(p))
			return false;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		break;
	}
	if (p->i >= p->n || p->s[p->i] != ']')
		return false;
	p->i++;
	p->depth--;
	return true;
}

/* The top level's first "choices" array, read as the walk validates it. */
struct choices_hook {
	size_t k; /* its index in names */
	bool seen; /* it was an array, and content tells what it holds */
	bool content;
};

static bool choices_walk(struct jw *p, bool *content);

/*
 * An object at p->i. With names, the offset of the value of the first
 * member called names[k] goes to at[k] (0: none; a value is never at 0).
 * With hook, the first member called names[hook->k], when an array, is
 * read by choices_walk (the same validation as value()).
 */
static bool object(struct jw *p, const char *const *names, size_t *at, size_t n_names,
		   struct choices_hook *hook)
{
	char key[24];
	size_t kl;

	if (++p->depth > RT_HTTP_JSON_DEPTH_MAX)
		return false;
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == '}') {
		p->i++;
		p->depth--;
		return true;
	}
	for (;;) {
		ws(p);
		if (!string(p, key, n_names ? sizeof(key) : 0, &kl))
			return false;
		ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return false;
		p->i++;
		ws(p);
		/* the first byte tells most names apart: few calls to strcmp */
		for (size_t k = 0; k < n_names && kl < sizeof(key); k++) {
			if (!at[k] && key[0] == names[k][0] && !strcmp(key, names[k])) {
				at[k] = p->i;
				if (hook && k == hook->k && p->i < p->n && p->s[p->i] == '[') {
					if (!choices_walk(p, &hook->content))
						return false;
					hook->seen = true;
					goto next;
				}
				break;
			}
		}
		if (!value(p))
			return false;
	next:
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		break;
	}
	if (p->i >= p->n || p->s[p->i] != '}')
		return false;
	p->i++;
	p->depth--;
	return true;
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
		return object(p, NULL, NULL, 0, NULL);
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

/* ---- the second pass: values of a text the first pass accepted ----------- */

static char kind_at(const struct jw *t, size_t at)
{
	return at ? (char)t->s[at] : 0;
}

/* the value of the first member `name` of the object at `at`, 0 if none */
static size_t member(const struct jw *t, size_t at, const char *name)
{
	struct jw p = { t->s, t->n, at, 0 };
	const char *names[1] = { name };
	size_t found = 0;

	if (kind_at(t, at) != '{')
		return 0;
	(void)object(&p, names, &found, 1, NULL);
	return found;
}

static bool nonempty_string(const struct jw *t, size_t at)
{
	struct jw p = { t->s, t->n, at, 0 };
	char c[1];
	size_t l;

	return kind_at(t, at) == '"' && string(&p, c, sizeof(c), &l) && l > 0;
}

static bool number_at(const struct jw *t, size_t at, double *v)
{
	struct jw p = { t->s, t->n, at, 0 };
	char c = kind_at(t, at);

	if (!(c == '-' || (c >= '0' && c <= '9')))
		return false;
	return number(&p, v) && isfinite(*v);
}

static void set_tokens_at(const struct jw *t, size_t at, struct rt_http_json_facts *f)
{
	double v;

	if (number_at(t, at, &v) && f->tokens_out < 0 && v >= 0 && v <= TOKENS_MAX)
		f->tokens_out = (int64_t)v;
}

/* every numeric member of the object at `at`, as "prefix.name" */
static void numbers(const struct jw *t, size_t at, const char *prefix, struct rt_http_json_facts *f)
{
	struct jw p = { t->s, t->n, at + 1, 0 };
	char name[RT_HTTP_REPORTED_NAME_MAX + 1];
	size_t nl;
	double v;

	ws(&p);
	if (p.i < p.n && p.s[p.i] == '}')
		return;
	for (;;) {
		ws(&p);
		if (!string(&p, name, sizeof(name), &nl))
			return;
		ws(&p);
		p.i++; /* ':' */
		ws(&p);
		if (number_at(t, p.i, &v))
			rt_http_report(f->reported, &f->n_reported, prefix, name, nl, v);
		if (!value(&p))
			return;
		ws(&p);
		if (p.i >= p.n || p.s[p.i] != ',')
			return;
		p.i++;
	}
}

/*
 * The first top-level "choices" array, in the first pass: validated as
 * array() would, and content set when an element has a non-empty "text",
 * delta.content or message.content (each the first member so called), as
 * the tree walk read them. Saves walking the array a second time.
 */
static bool choices_walk(struct jw *p, bool *content)
{
	static const char *const names[3] = { "text", "delta", "message" };

	if (++p->depth > RT_HTTP_JSON_DEPTH_MAX)
		return false;
	p->i++;
	ws(p);
	if (p->i < p->n && p->s[p->i] == ']') {
		p->i++;
		p->depth--;
		return true;
	}
	for (;;) {
		ws(p);
		if (p->i < p->n && p->s[p->i] == '{') {
			size_t at[3] = { 0 };

			if (!object(p, names, at, 3, NULL))
				return false;
			if (!*content && (nonempty_string(p, at[0]) ||
					  nonempty_string(p, member(p, at[1], "content")) ||
					  nonempty_string(p, member(p, at[2], "content"))))
				*content = true;
		} else if (!value(p)) {
			return false;
		}
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		break;
	}
	if (p->i >= p->n || p->s[p->i] != ']')
		return false;
	p->i++;
	p->depth--;
	return true;
}

enum { M_ID, M_CHOICES, M_CONTENT, M_USAGE, M_TIMINGS, M_PREDICTED, M_EVALUATED, M_SLOT, M__N };

bool rt_json_walk_facts(const char *text, size_t len, struct rt_http_json_facts *f)
{
	static const char *const names[M__N] = {
		"id",	   "choices",	       "content",	   "usage",
		"timings", "tokens_predicted", "tokens_evaluated", "id_slot"
	};
	struct jw t = { (const unsigned char *)text, len, 0, 0 };
	size_t at[M__N] = { 0 };
	struct choices_hook hook = { M_CHOICES, false, false };
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
	if (!object(&t, names, at, M__N, &hook) || !trailing_ok(&t))
		return false;
	f->parsed = true;
	if (kind_at(&t, at[M_ID]) == '"') {
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
	if (hook.seen) {
		f->text_shape = true;
		f->content = hook.content;
	}
	if (kind_at(&t, at[M_CONTENT]) == '"') {
		f->text_shape = true;
		if (nonempty_string(&t, at[M_CONTENT]))
			f->content = true;
	}
	if (kind_at(&t, at[M_USAGE]) == '{') {
		f->usage = true;
		numbers(&t, at[M_USAGE], "usage", f);
		set_tokens_at(&t, member(&t, at[M_USAGE], "completion_tokens"), f);
	}
	if (kind_at(&t, at[M_TIMINGS]) == '{') {
		f->usage = true;
		numbers(&t, at[M_TIMINGS], "timings", f);
		set_tokens_at(&t, member(&t, at[M_TIMINGS], "predicted_n"), f);
	}
	if (number_at(&t, at[M_PREDICTED], &v))
		rt_http_report(f->reported, &f->n_reported, NULL, "tokens_predicted", 16, v);
	if (number_at(&t, at[M_EVALUATED], &v))
		rt_http_report(f->reported, &f->n_reported, NULL, "tokens_evaluated", 16, v);
	set_tokens_at(&t, at[M_PREDICTED], f);
	/* llama-server's slot (its sequence id): the pack's exact join, not a report */
	if (number_at(&t, at[M_SLOT], &v) && v >= 0 && v < 1e9 && v == (double)(int32_t)v)
		f->id_slot = (int32_t)v;
	return true;
}
