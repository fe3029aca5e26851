// SPDX-License-Identifier: BSD-2-Clause
/*
 * What `why` knows beyond the spans (verdict/findings.h, rt_verdict_extra):
 * PCIe and NVLink traffic per device, from a recording's LINK_SAMPLE records
 * replayed through the correlator, or from the daemon's status (its "nvml"
 * object, the same correlator series). Spans alone cannot say how busy a
 * link was; transfer_bound's link evidence comes from here.
 */
#include <cjson/cJSON.h>
#include <reqtrace/event.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"

void rt_cli_links_from_gpu(const struct rt_gpu_links *gl, struct rt_verdict_link *out, uint32_t max,
			   uint32_t *n)
{
	uint32_t i;

	*n = 0;
	for (i = 0; i < gl->n && *n < max; i++) {
		const struct rt_gpu_link *l = &gl->link[i];
		struct rt_verdict_link *v = &out[(*n)++];

		memset(v, 0, sizeof(*v));
		v->device = l->device;
		snprintf(v->link, sizeof(v->link), "%s",
			 l->link_type == RT_LINK_NVLINK ? "nvlink" : "pcie");
		v->tx_bytes = l->tx_bytes;
		v->rx_bytes = l->rx_bytes;
		v->utilisation = l->util;
	}
}

struct links_ctx {
	struct rt_verdict_link *out;
	uint32_t max, n;
};

static void one(struct links_ctx *x, const cJSON *dev, const char *key)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(dev, key);
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(l, "utilization");
	double win_s = rt_client_num(l, "window_ms") / 1000.0;
	struct rt_verdict_link *v;

	if (!cJSON_IsObject(l) || x->n >= x->max)
		return;
	v = &x->out[x->n++];
	memset(v, 0, sizeof(*v));
	v->device = (uint32_t)rt_client_num(dev, "device");
	snprintf(v->link, sizeof(v->link), "%s", key);
	/* the status gives rates over the window: bytes in it, as a recording's */
	v->tx_bytes = (uint64_t)(rt_client_num(l, "tx_bytes_per_s") * win_s);
	v->rx_bytes = (uint64_t)(rt_client_num(l, "rx_bytes_per_s") * win_s);
	v->utilisation = cJSON_IsNumber(u) ? u->valuedouble : -1;
}

static int status_line(const char *line, size_t len, void *ctx)
{
	struct links_ctx *x = ctx;
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *devs, *d;

	if (!o)
		return 0; /* no links known: the verdict goes on without */
	devs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "nvml"),
						"devices");
	cJSON_ArrayForEach(d, devs)
	{
		one(x, d, "pcie");
		one(x, d, "nvlink");
	}
	cJSON_Delete(o);
	return 0;
}

int rt_cli_links_from_daemon(const char *socket_path, struct rt_verdict_link *out, uint32_t max,
			     uint32_t *n)
{
	struct links_ctx x = { .out = out, .max = max };
	int rc = rt_client_call(socket_path, "{\"v\":1,\"cmd\":\"status\"}", status_line, &x, NULL,
				0);

	*n = x.n;
	return rc;
}
