// SPDX-License-Identifier: BSD-2-Clause
/*
 * vLLM's request-id rules as exact matchers (proto/vllm_id.h). Indexes are
 * Python's str(int): decimal, no sign, no leading zero.
 */
#include <string.h>

#include "proto/vllm_id.h"

#define SUFFIX_HEX 8
/* an index of up to 18 digits fits int64_t */
#define INDEX_DIGITS_MAX 18

static bool index_of(const char *p, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n == 0 || n > INDEX_DIGITS_MAX || (n > 1 && p[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return true;
}

static bool starts(const char *p, size_t n, const char *a, size_t an)
{
	return n >= an && (an == 0 || memcmp(p, a, an) == 0);
}

/* ext == prefix + id + (nothing | sep + index) */
static enum rt_vllm_id_rule match(struct rt_vllm_str ext, const char *prefix, const char *id,
				  size_t id_len, char sep, bool index_required, int64_t *index)
{
	size_t pl = strlen(prefix);
	const char *rest;
	size_t left;

	if (!ext.ptr || (!id && id_len))
		return RT_VLLM_ID_NO_MATCH;
	if (!starts(ext.ptr, ext.len, prefix, pl) ||
	    !starts(ext.ptr + pl, ext.len - pl, id, id_len))
		return RT_VLLM_ID_NO_MATCH;
	rest = ext.ptr + pl + id_len;
	left = ext.len - pl - id_len;
	if (left == 0 && !index_required) {
		*index = -1;
		return RT_VLLM_ID_EXACT;
	}
	if (left >= 2 && rest[0] == sep && index_of(rest + 1, left - 1, index))
		return RT_VLLM_ID_PROMPT;
	return RT_VLLM_ID_NO_MATCH;
}

enum rt_vllm_id_rule rt_vllm_id_match_header(struct rt_vllm_str external, const char *hdr,
					     size_t hdr_len, int64_t *index)
{
	int64_t scratch;
	enum rt_vllm_id_rule r;

	if (!index)
		index = &scratch;
	*index = -1;
	if (hdr_len == 0)
		return RT_VLLM_ID_NO_MATCH; /* an empty header is no id: vLLM makes one */
	r = match(external, "chatcmpl-", hdr, hdr_len, '_', false, index);
	if (r == RT_VLLM_ID_NO_MATCH)
		r = match(external, "cmpl-", hdr, hdr_len, '-', true, index);
	return r;
}

enum rt_vllm_id_rule rt_vllm_id_match_response(struct rt_vllm_str external, const char *resp_id,
					       size_t resp_len, int64_t *index)
{
	int64_t scratch;
	enum rt_vllm_id_rule r;

	if (!index)
		index = &scratch;
	*index = -1;
	if (resp_len == 0)
		return RT_VLLM_ID_NO_MATCH;
	r = match(external, "", resp_id, resp_len, '_', false, index);
	if (r == RT_VLLM_ID_NO_MATCH)
		r = match(external, "", resp_id, resp_len, '-', true, index);
	return r;
}

/* rest == external ["-" 8 lower-case hex] */
static bool tail_ok(const char *p, size_t n, struct rt_vllm_str ext, bool *suffixed)
{
	if (!starts(p, n, ext.ptr, ext.len))
		return false;
	p += ext.len;
	n -= ext.len;
	if (n == 0) {
		*suffixed = false;
		return true;
	}
	if (n != 1 + SUFFIX_HEX || p[0] != '-')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	*suffixed = true;
	return true;
}

bool rt_vllm_id_internal(struct rt_vllm_str internal, struct rt_vllm_str external, int64_t *child,
			 bool *suffixed)
{
	const char *us;
	int64_t k;
	bool sfx;

	if (!internal.ptr || !external.ptr || external.len == 0)
		return false;
	if (tail_ok(internal.ptr, internal.len, external, &sfx)) {
		k = -1;
		goto found;
	}
	us = memchr(internal.ptr, '_', internal.len);
	if (!us || !index_of(internal.ptr, (size_t)(us - internal.ptr), &k))
		return false;
	if (!tail_ok(us + 1, internal.len - (size_t)(us - internal.ptr) - 1, external, &sfx))
		return false;
found:
	if (child)
		*child = k;
	if (suffixed)
		*suffixed = sfx;
	return true;
}
