/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vLLM's request-id rules (docs/packs.md ("vLLM V1"), "Joining"), as exact
 * matchers: each says whether two ids are related by one of the rules and
 * by which index, never by similarity. They join an engine request (its
 * internal id and external_req_id, from the ADD) to the HTTP request (the
 * client's X-Request-Id, or the id of the response's SSE chunks / body).
 *
 * Rules (vLLM 364631ab and the OpenAI handlers of 2025-2026):
 *   external = "chatcmpl-" H          chat, one prompt
 *            | "chatcmpl-" H "_" i    chat, prompt i of several
 *            | "cmpl-" H "-" i        completions, prompt i (always)
 *     where H is X-Request-Id when sent, and the response id is the
 *     external id without its "_i" / "-i";
 *   internal = [k "_"] external ["-" 8 hex]   child k of n>1; the random
 *     suffix unless randomisation is disabled.
 *
 * Several readings can fit one pair (a header that itself ends in "_3");
 * the matchers take the exact one first and report which rule they used,
 * so that a caller with two candidates prefers the exact match.
 */
#ifndef RT_PROTO_VLLM_ID_H
#define RT_PROTO_VLLM_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/vllm.h"

enum rt_vllm_id_rule {
	RT_VLLM_ID_NO_MATCH = 0,
	RT_VLLM_ID_EXACT = 1, /* the ids are equal (after the prefix, for headers) */
	RT_VLLM_ID_PROMPT = 2, /* one prompt of several: index in *index */
};

/* external_req_id against the client's X-Request-Id value */
enum rt_vllm_id_rule rt_vllm_id_match_header(struct rt_vllm_str external, const char *hdr,
					     size_t hdr_len, int64_t *index);

/* external_req_id against the response's id (SSE chunk or JSON body "id") */
enum rt_vllm_id_rule rt_vllm_id_match_response(struct rt_vllm_str external, const char *resp_id,
					       size_t resp_len, int64_t *index);

/* The internal request_id against the external_req_id of the same ADD:
 * true when internal = [k "_"] external ["-" 8 hex]; *child is k or -1,
 * *suffixed whether the random suffix is there. */
bool rt_vllm_id_internal(struct rt_vllm_str internal, struct rt_vllm_str external, int64_t *child,
			 bool *suffixed);

#endif
