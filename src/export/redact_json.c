// SPDX-License-Identifier: BSD-2-Clause
/*
 * JSON masking for the recording redactor (redact_int.h): a streaming
 * tokenizer that writes a masked copy of its input, and the recovery of a
 * text's structure after a gap.
 *
 * Replay runs the masked text through http_json.c, which must find the same
 * validity, the same non-empty "text"/"content" strings and the same
 * usage/timings numbers. Hence structure, true/false/null (and the DONE of
 * "[DONE]") are kept; every byte of a string value becomes 'x' (an escape as
 * many x's as its bytes, so a string stays valid and non-empty); a key is
 * kept when it is a keep-list entry (while it spells the start of one, when
 * its end is not in sight); digits become '1' ('0' stays: the masked number
 * is as valid as the original) except in the members of "usage"/"timings"
 * objects and "tokens_predicted"/"tokens_evaluated", which the parsers
 * report. Anything else outside a string (not JSON) masks the rest.
 *
 * Numbers and keys are not kept in general because completions hide in
 * them: logprobs carry token bytes as number arrays, and top_logprobs uses
 * token text as keys.
 */
#include <string.h>

#include "export/redact.h"
#include "redact_int.h"

#define MASK_KEY 'X'
#define RECOVER_MAX 4096 /* a run is one head or tail of a record: at most RT_SOCK_*_MAX */

enum { J_OUT = 0, J_WORD, J_STR, J_ESC, J_UHEX, J_BAD };
enum { KV_VALUE = 0, KV_KEY, KV_KEY_ALL, KV_KEY_NONE };

#define KEY(s)                                                                                     \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}

static const struct {
	const char *s;
	size_t len;
} keep_keys[] = {
	/* what http_json.c looks up */
	KEY("choices"),
	KEY("text"),
	KEY("delta"),
	KEY("content"),
	KEY("message"),
	KEY("usage"),
	KEY("timings"),
	KEY("tokens_predicted"),
	KEY("tokens_evaluated"),
	/* the shape of a completion, for whoever reads a recording */
	KEY("id"),
	KEY("object"),
	KEY("created"),
	KEY("model"),
	KEY("index"),
	KEY("role"),
	KEY("finish_reason"),
	KEY("stop"),
};

#define N_KEYS (sizeof(keep_keys) / sizeof(keep_keys[0]))
#define KEY_USAGE 5
#define KEY_TIMINGS 6
#define KEY_TP 7
#define KEY_TE 8
#define KEY_ID 9
#define ALL_KEYS ((uint32_t)((1ULL << N_KEYS) - 1))

static const char *const literals[] = { "true", "false", "null", "DONE" };

void rt_mask_bytes(const uint8_t *in, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = in[i] == '\r' || in[i] == '\n' ? in[i] : RT_REDACT_MASK;
}

/* Keys are masked with 'X', a letter no keep-list key has: where a gap joins
 * the pieces of two keys, kept and masked bytes can never spell one. */
static void mask_key(const uint8_t *in, uint8_t *out, size_t n, bool key)
{
	rt_mask_bytes(in, out, n);
	for (size_t i = 0; key && i < n; i++)
		if (out[i] == RT_REDACT_MASK)
			out[i] = MASK_KEY;
}

static bool is_alpha(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_num(uint8_t c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static bool is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static uint8_t num_out(bool keep, uint8_t c)
{
	return keep || c < '1' || c > '9' ? c : '1';
}

/* Index of the keep-list entry that key[0..n) is, or -1. */
static int key_index(uint32_t match, size_t n)
{
	for (; match; match &= match - 1) {
		int k = __builtin_ctz(match);

		if (keep_keys[k].len == n)
			return k;
	}
	return -1;
}

static uint32_t key_step(uint32_t match, size_t pos, uint8_t c)
{
	for (uint32_t m = match; m; m &= m - 1) {
		int k = __builtin_ctz(m);

		if (pos >= keep_keys[k].len || (uint8_t)keep_keys[k].s[pos] != c)
			match &= ~(1u << k);
	}
	return match;
}

static uint32_t key_step_n(uint32_t match, const uint8_t *key, size_t n)
{
	for (size_t i = 0; i < n && match; i++)
		match = key_step(match, i, key[i]);
	return match;
}

void rt_json_mask_init(struct rt_json_mask *j)
{
	memset(j, 0, sizeof(*j));
}

static bool in_reported(const struct rt_json_mask *j)
{
	return j->depth && (j->reported >> (j->depth - 1) & 1);
}

/* A key ended: what its value keeps. */
static void key_done(struct rt_json_mask *j)
{
	int k = key_index(j->kmatch, j->klen);

	j->vkeep = in_reported(j) || k == KEY_TP || k == KEY_TE;
	/* the response's own id (gen_ai.response.id), a server-made token, not
	 * content: only at the top level, where a tool call's "id" cannot be */
	j->skeep = k == KEY_ID && j->depth == 1 && !j->outer;
	j->next_reported = k == KEY_USAGE || k == KEY_TIMINGS;
}

static uint8_t str_out(struct rt_json_mask *j, uint8_t c)
{
	if (j->kv == KV_VALUE) {
		/* an escape ends the keeping: the parser takes no id with one */
		if (j->skeep && c >= 0x21 && c <= 0x7e && c != '\\' && c != '"')
			return c;
		j->skeep = false;
		return RT_REDACT_MASK;
	}
	if (j->ktrack) {
		j->kmatch = key_step(j->kmatch, j->klen, c);
		if (j->klen < UINT8_MAX)
			j->klen++;
	}
	if (j->kv == KV_KEY_ALL)
		return c;
	return j->kv == KV_KEY && j->kmatch ? c : MASK_KEY;
}

/* The closing quote of a string whose content starts at p, within one line, or n. */
static size_t close_quote(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i;
		else if (p[i] == '\r' || p[i] == '\n')
			break;
	}
	return n;
}

/* A string starts at rest[0]: something other than a colon follows it, in sight. */
static bool not_key_ahead(const uint8_t *rest, size_t n)
{
	size_t len = close_quote(rest, n);

	if (len == n)
		return false;
	for (len++; len < n && is_ws(rest[len]); len++)
		;
	return len < n && rest[len] != ':';
}

/*
 * A key opens; rest[0..n) is what follows in this run. When the key ends in
 * the run it is kept or masked whole; when not (split across syscalls) it is
 * written while it spells a prefix of a keep-list entry.
 */
static void key_open(struct rt_json_mask *j, const uint8_t *rest, size_t n)
{
	size_t len = close_quote(rest, n);

	j->ktrack = len == n;
	if (j->ktrack) {
		j->kmatch = ALL_KEYS;
		j->klen = 0;
		j->kv = in_reported(j) ? KV_KEY_ALL : KV_KEY;
		return;
	}
	j->kmatch = key_step_n(ALL_KEYS, rest, len);
	j->klen = (uint8_t)(len < UINT8_MAX ? len : UINT8_MAX);
	j->kv = in_reported(j) || key_index(j->kmatch, len) >= 0 ? KV_KEY_ALL : KV_KEY_NONE;
}

static uint8_t json_out(struct rt_json_mask *j, const uint8_t *p, size_t n)
{
	uint8_t c = p[0];

	uint64_t bit;

	if (is_ws(c))
		return c;
	switch (c) {
	case '{':
	case '[':
		if (j->depth >= RT_REDACT_JSON_DEPTH) {
			j->st = J_BAD;
			return RT_REDACT_MASK;
		}
		bit = 1ULL << j->depth;
		j->objs = c == '{' ? j->objs | bit : j->objs & ~bit;
		j->reported = c == '{' && j->next_reported ? j->reported | bit : j->reported & ~bit;
		j->depth++;
		j->prev = c;
		j->vkeep = j->skeep = j->next_reported = false;
		return c;
	case '}':
	case ']':
		if (j->depth)
			j->depth--;
		j->prev = 0;
		j->vkeep = j->skeep = j->next_reported = false;
		return c;
	case ':':
		j->prev = c;
		return c;
	case ',':
		j->prev = c;
		j->vkeep = j->skeep = j->next_reported = false;
		return c;
	case '"':
		j->st = J_STR;
		j->kv = KV_VALUE;
		if (j->prev != '{' && j->prev != ',')
			return c;
		/* outside the levels a recovery saw open, only a colon in sight tells a key */
		if (j->depth ? j->objs >> (j->depth - 1) & 1 :
			       j->outer && !not_key_ahead(p + 1, n - 1))
			key_open(j, p + 1, n - 1);
		return c;
	default:
		break;
	}
	if (is_num(c)) {
		j->prev = 0;
		return num_out(j->vkeep, c);
	}
	for (uint8_t k = 0; k < sizeof(literals) / sizeof(literals[0]); k++) {
		if (c == (uint8_t)literals[k][0]) {
			j->st = J_WORD;
			j->lit = k;
			j->lpos = 1;
			j->prev = 0;
			return c;
		}
	}
	j->st = J_BAD;
	return RT_REDACT_MASK;
}

uint8_t rt_json_mask_byte(struct rt_json_mask *j, const uint8_t *p, size_t n)
{
	uint8_t c = p[0];

	switch (j->st) {
	case J_STR:
		if (c == '"') {
			j->st = J_OUT;
			j->prev = j->kv == KV_VALUE ? 0 : 'k';
			if (j->kv != KV_VALUE)
				key_done(j);
			return c;
		}
		if (c == '\\')
			j->st = J_ESC;
		return str_out(j, c);
	case J_ESC:
		j->st = J_STR;
		if (c == 'u') {
			j->st = J_UHEX;
			j->uleft = 4;
		} else if (!c || !strchr("\"\\/bfnrt", c)) {
			/* an invalid escape must stay invalid: close the masked string */
			str_out(j, c);
			return j->kv == KV_KEY_ALL ? c : '"';
		}
		return str_out(j, c);
	case J_UHEX:
		if (c == '"' || c == '\\') {
			j->st = J_STR;
			return rt_json_mask_byte(j, p, n);
		}
		if (--j->uleft == 0)
			j->st = J_STR;
		return str_out(j, c);
	case J_BAD:
		return RT_REDACT_MASK;
	case J_WORD:
		if (is_alpha(c)) {
			const char *lit = literals[j->lit];

			if (j->lpos < strlen(lit) && (uint8_t)lit[j->lpos] == c) {
				j->lpos++;
				return c;
			}
			j->st = J_BAD;
			return RT_REDACT_MASK;
		}
		j->st = J_OUT;
		return json_out(j, p, n);
	default:
		return json_out(j, p, n);
	}
}

/* ---- recovery after a gap ------------------------------------------------ */

/* An unescaped quote; -1 when the escapes before it may have begun in the gap. */
static int is_delim(const uint8_t *in, size_t i)
{
	size_t j = i;

	if (in[i] != '"')
		return 0;
	while (j > 0 && in[j - 1] == '\\')
		j--;
	if (j == 0 && i > 0)
		return -1;
	return (i - j) % 2 == 0;
}

/* The closing quote of the string opened at in[open], or n. */
static size_t string_end(const uint8_t *in, size_t n, size_t open)
{
	for (size_t i = open + 1; i < n; i++) {
		if (in[i] == '\\')
			i++;
		else if (in[i] == '"')
			return i;
	}
	return n;
}

static size_t skip_ws(const uint8_t *in, size_t n, size_t i)
{
	while (i < n && is_ws(in[i]))
		i++;
	return i;
}

/* A letter run outside strings is a literal; at either end of the region, part of one. */
static bool literal_ok(const uint8_t *w, size_t len, bool first, bool last)
{
	for (size_t k = 0; k < sizeof(literals) / sizeof(literals[0]); k++) {
		size_t l = strlen(literals[k]);

		if (len == l && !memcmp(w, literals[k], l))
			return true;
		if (first && len < l && !memcmp(w, literals[k] + l - len, len))
			return true;
		if (last && len < l && !memcmp(w, literals[k], len))
			return true;
	}
	return false;
}

/* in[0..n) ends a keep-list key (or is one, its opening quote lost). */
static bool key_tail(const uint8_t *in, size_t n)
{
	for (size_t k = 0; k < N_KEYS; k++) {
		size_t l = keep_keys[k].len;

		if (n && n <= l && !memcmp(in, keep_keys[k].s + l - n, n))
			return true;
	}
	return false;
}

struct recover {
	struct rt_json_mask j; /* depth relative to where the region starts */
	uint8_t prev; /* 1 at the start: anything may come first */
};

static bool recover_string(struct recover *rc, const uint8_t *in, uint8_t *out, size_t n,
			   size_t open, size_t close)
{
	size_t next = skip_ws(in, n, close + 1);
	bool key = next < n && in[next] == ':';
	bool verbatim = false;

	/* the region ends right after it: a keep-list key may be one, its colon to come */
	if (next == n && (rc->prev == 1 || rc->prev == '{' || rc->prev == ',') &&
	    (in_reported(&rc->j) || key_index(key_step_n(ALL_KEYS, in + open + 1, close - open - 1),
					      close - open - 1) >= 0))
		key = true;
	if (key) {
		if (rc->prev != 1 && rc->prev != '{' && rc->prev != ',')
			return false;
		rc->j.kmatch = ALL_KEYS;
		rc->j.klen = 0;
		for (size_t i = open + 1; i < close; i++)
			rc->j.kmatch = key_step(rc->j.kmatch, i - open - 1, in[i]);
		rc->j.klen = (uint8_t)(close - open - 1 < UINT8_MAX ? close - open - 1 : UINT8_MAX);
		verbatim = in_reported(&rc->j) || key_index(rc->j.kmatch, close - open - 1) >= 0;
		key_done(&rc->j);
	} else {
		if (rc->prev != 1 && rc->prev != '[' && rc->prev != ',' && rc->prev != ':')
			return false;
		if (next < n && in[next] != ',' && in[next] != '}' && in[next] != ']')
			return false;
	}
	out[open] = '"';
	out[close] = '"';
	if (verbatim)
		memcpy(out + open + 1, in + open + 1, close - open - 1);
	else
		mask_key(in + open + 1, out + open + 1, close - open - 1, key);
	rc->prev = key ? 'k' : 0;
	return true;
}

/*
 * A string opened at in[open] goes on past the region. In key position it is
 * written while it spells the start of a keep-list key, as when a key is cut
 * by the end of a syscall; the tokenizer takes over inside it.
 */
static bool open_string(struct recover *rc, const uint8_t *in, uint8_t *out, size_t n, size_t open)
{
	bool key = rc->prev == 1 || rc->prev == '{' || rc->prev == ',';
	size_t len = n - open - 1, bs = 0;

	if (!key && rc->prev != '[' && rc->prev != ':')
		return false;
	out[open] = '"';
	rc->j.st = J_STR;
	rc->j.kv = KV_VALUE;
	if (key) {
		rc->j.kv = in_reported(&rc->j) ? KV_KEY_ALL : KV_KEY;
		rc->j.ktrack = true;
		rc->j.kmatch = key_step_n(ALL_KEYS, in + open + 1, len);
		rc->j.klen = (uint8_t)(len < UINT8_MAX ? len : UINT8_MAX);
	}
	if (rc->j.kv == KV_KEY_ALL || (rc->j.kv == KV_KEY && rc->j.kmatch))
		memcpy(out + open + 1, in + open + 1, len);
	else
		mask_key(in + open + 1, out + open + 1, len, key);
	while (bs < len && in[n - 1 - bs] == '\\')
		bs++;
	if (bs % 2)
		rc->j.st = J_ESC;
	return true;
}

/* A letter run that ends the region: the literal it begins. */
static void open_literal(struct recover *rc, const uint8_t *w, size_t len)
{
	for (uint8_t k = 0; k < sizeof(literals) / sizeof(literals[0]); k++) {
		if (len < strlen(literals[k]) && !memcmp(w, literals[k], len)) {
			rc->j.st = J_WORD;
			rc->j.lit = k;
			rc->j.lpos = (uint8_t)len;
		}
	}
}

/* With ESCAPED, a quote after backslashes that reach back to the gap is escaped. */
#define ESCAPED 0x100

/* One reading of the region (how), or false when the region does not fit it. */
static bool recover(const uint8_t *in, uint8_t *out, size_t n, unsigned int how,
		    struct rt_json_mask *end)
{
	struct recover rc = { .prev = 1 };
	size_t i = 0, first = n, quotes = 0, w;
	bool open_end = how & RT_JSON_OPEN, cut = how & (RT_JSON_CUT | RT_JSON_OPEN);
	bool ambiguous = false;
	int d;

	for (i = 0; i < n; i++) {
		d = is_delim(in, i);
		if (d < 0) {
			/* the gap may hide an odd number of backslashes before it, or not */
			ambiguous = true;
			d = !(how & ESCAPED);
		}
		if (d && !quotes++)
			first = i;
	}
	if ((how & ESCAPED) && !ambiguous)
		return false; /* the same reading as without ESCAPED */
	i = 0;
	if (first == n && open_end) {
		/* no quote, and the end may be inside a string: nothing tells */
		rt_mask_bytes(in, out, n);
		rc.j.st = J_STR;
		goto done;
	}
	/* quotes alternate from the end, which is outside strings unless open_end */
	if (quotes % 2 != open_end) {
		/* the region starts inside a string: a value, or a key cut by the gap */
		i = skip_ws(in, n, first + 1);
		if (i < n && in[i] != ':' && in[i] != ',' && in[i] != '}' && in[i] != ']')
			return false;
		rc.prev = i < n && in[i] == ':' ? 'k' : 0;
		if (rc.prev == 'k' && key_tail(in, first)) {
			/* the parsers' scan may join it to the quote before the gap */
			memcpy(out, in, first);
			rc.j.kmatch = key_step_n(ALL_KEYS, in, first);
			rc.j.klen = (uint8_t)(first < UINT8_MAX ? first : UINT8_MAX);
			key_done(&rc.j);
		} else {
			mask_key(in, out, first, rc.prev == 'k');
		}
		out[first] = '"';
		i = first + 1;
	}
	while (i < n) {
		uint8_t c = in[i];

		if (c == '"') {
			size_t close = string_end(in, n, i);

			if (close >= n) {
				if (!open_end || !open_string(&rc, in, out, n, i))
					return false;
				goto done;
			}
			if (!recover_string(&rc, in, out, n, i, close))
				return false;
			i = close + 1;
			continue;
		}
		if (is_alpha(c) && c != 'e' && c != 'E') {
			for (w = i; w < n && is_alpha(in[w]); w++)
				;
			if (!literal_ok(in + i, w - i, i == 0, w == n && cut))
				return false;
			memcpy(out + i, in + i, w - i);
			rc.prev = 0;
			if (w == n)
				open_literal(&rc, in + i, w - i);
			i = w;
			continue;
		}
		if (c == ':' && rc.prev != 'k' && rc.prev != 1)
			return false;
		if (!is_ws(c) && !is_num(c) && !strchr("{}[]:,", c))
			return false;
		rc.j.st = J_OUT;
		out[i] = rt_json_mask_byte(&rc.j, in + i, n - i);
		if (rc.j.st == J_BAD)
			return false; /* nested too deep */
		if (!is_ws(c))
			rc.prev = is_num(c) || c == '}' || c == ']' ? 0 : c;
		i++;
	}
done:
	if (end) {
		/* levels opened before the region are unknown: their keys are masked */
		*end = rc.j;
		end->prev = rc.prev == 1 ? 0 : rc.prev;
		end->outer = true;
	}
	return true;
}

/* The readings are tried in turn; one that alone holds is trusted. */
static bool recover_unique(const uint8_t *in, uint8_t *out, size_t n, const unsigned int *hows,
			   size_t k, struct rt_json_mask *end)
{
	struct rt_json_mask e, held;
	uint8_t alt[RECOVER_MAX];
	int holds = 0;

	if (n > sizeof(alt))
		return false;
	for (size_t i = 0; i < k && holds < 2; i++) {
		if (!recover(in, alt, n, hows[i], &e))
			continue;
		if (!holds++) {
			memcpy(out, alt, n);
			held = e;
		}
	}
	if (holds != 1)
		return false;
	if (end)
		*end = held;
	return true;
}

bool rt_json_recover(const uint8_t *in, uint8_t *out, size_t n, unsigned int how,
		     struct rt_json_mask *end)
{
	const unsigned int hows[] = { how, how | ESCAPED };

	return recover_unique(in, out, n, hows, 2, end);
}

bool rt_json_recover_cut(const uint8_t *in, uint8_t *out, size_t n, struct rt_json_mask *end)
{
	static const unsigned int hows[] = { RT_JSON_CUT, RT_JSON_OPEN, RT_JSON_CUT | ESCAPED,
					     RT_JSON_OPEN | ESCAPED };

	return recover_unique(in, out, n, hows, 4, end);
}
