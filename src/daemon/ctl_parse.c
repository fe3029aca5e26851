// SPDX-License-Identifier: BSD-2-Clause
#include "daemon/ctl_parse.h"

#include <errno.h>
#include <stdio.h>

#include "common/dur.h"
#include "daemon/control.h"

int rt_ctl_parse(const char *line, struct rt_ctl_req *req, char *why, size_t why_len)
{
	cJSON *json = cJSON_Parse(line);
	const cJSON *v;
	int err = -EINVAL;

	req->json = NULL;
	req->cmd = NULL;
	if (!cJSON_IsObject(json)) {
		snprintf(why, why_len, "bad request: not a JSON object");
		goto fail;
	}
	v = cJSON_GetObjectItemCaseSensitive(json, "v");
	if (v && (!cJSON_IsNumber(v) || v->valueint != RT_CTL_PROTOCOL)) {
		snprintf(why, why_len, "unsupported protocol version (this daemon speaks %d)",
			 RT_CTL_PROTOCOL);
		err = -EPROTONOSUPPORT;
		goto fail;
	}
	v = cJSON_GetObjectItemCaseSensitive(json, "cmd");
	if (!cJSON_IsString(v)) {
		snprintf(why, why_len, "bad request: no \"cmd\"");
		goto fail;
	}
	req->json = json;
	req->cmd = v->valuestring;
	return 0;
fail:
	cJSON_Delete(json);
	return err;
}

int rt_ctl_dur_field(const cJSON *req, const char *key, uint64_t *ns)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	*ns = 0;
	if (!v)
		return 0;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0) {
		/* 2^64 and beyond do not convert (undefined behaviour) */
		if (v->valuedouble >= 18446744073709551616.0)
			return -EINVAL;
		*ns = (uint64_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v))
		return rt_dur_parse(v->valuestring, ns);
	return -EINVAL;
}
