// SPDX-License-Identifier: BSD-2-Clause
/*
 * Control requests (docs/protocol.md): status, spans, show, inflight,
 * record. Reading is open to every allowed peer; anything that changes
 * what the daemon does or writes files is root only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/dur.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "correlate/gpu.h"
#include "daemon.h"
#include "daemon/ctl_parse.h"
#include "export/span_json.h"
#include "otlp.h"
#include "sources/bpf_source.h"
#include "sources/bpf_zmq.h"
#include "sources/pack.h"

static void send_jsonw(struct rt_ctl_client *cl, struct rt_jsonw *w)
{
	if (rt_jsonw_ok(w))
		rt_ctl_send(cl, rt_jsonw_str(w), w->len);
}

static void key_u64(struct rt_jsonw *w, const char *k, uint64_t v)
{
	rt_jsonw_key(w, k);
	rt_jsonw_uint(w, v);
}

/*
 * A target's listening sockets and its namespaces' listen-queue counters
 * (daemon/listeners.h): connections the kernel refused while a queue was
 * full never reach the server, so no span shows them; this does.
 */
static void status_listen(struct rt_daemon *d, const struct rt_target *t, struct rt_jsonw *w)
{
	const struct rt_listen_group *g = rt_listeners__group(d->listeners, t->group_id);
	char addr[RT_LISTEN_ADDR_LEN], *colon;
	int i;

	rt_jsonw_key(w, "listen");
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "listeners");
	rt_jsonw_arr_open(w);
	for (i = 0; g && i < g->n; i++) {
		const struct rt_listener *l = &g->l[i];

		rt_jsonw_obj_open(w);
		rt_listen_addr_str(&l->s, addr, sizeof(addr));
		colon = strrchr(addr, ':'); /* the address alone, brackets and all */
		if (colon)
			*colon = '\0';
		rt_jsonw_key(w, "addr");
		rt_jsonw_str_val(w, addr);
		key_u64(w, "port", l->s.port);
		key_u64(w, "queue", l->s.queue);
		key_u64(w, "queue_max_seen", l->queue_max);
		rt_jsonw_key(w, "limit");
		if (l->s.limit)
			rt_jsonw_uint(w, l->s.limit);
		else
			rt_jsonw_null(w); /* read from /proc: the file does not have it */
		key_u64(w, "pid", (uint64_t)l->pid);
		key_u64(w, "netns", l->netns);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	/* per network namespace: the kernel keeps no per-listener counter */
	rt_jsonw_key(w, "netns");
	rt_jsonw_arr_open(w);
	for (i = 0; g && i < g->n_netns; i++) {
		rt_jsonw_obj_open(w);
		key_u64(w, "netns", g->netns[i].ino);
		rt_jsonw_key(w, "overflows");
		if (g->netns[i].counters)
			rt_jsonw_uint(w, g->netns[i].overflows);
		else
			rt_jsonw_null(w);
		rt_jsonw_key(w, "drops");
		if (g->netns[i].counters)
			rt_jsonw_uint(w, g->netns[i].drops);
		else
			rt_jsonw_null(w);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	key_u64(w, "skipped", g ? g->skipped : 0);
	rt_jsonw_obj_close(w);
}

static void status_targets(struct rt_daemon *d, struct rt_jsonw *w)
{
	uint32_t i;

	rt_jsonw_key(w, "targets");
	rt_jsonw_arr_open(w);
	for (i = 0; i < rt_targets__count(d->targets); i++) {
		const struct rt_target *t = rt_targets__get(d->targets, i);
		uint64_t unr[RT_UNREADABLE__COUNT];
		pid_t pids[64];
		int n = rt_targets__pids(d->targets, t->group_id, pids, 64), k;

		rt_correlator__unreadable(rt_pipeline__correlator(d->pipe), t->group_id, unr);
		rt_jsonw_obj_open(w);
		rt_jsonw_key(w, "group");
		rt_jsonw_str_val(w, t->group);
		rt_jsonw_key(w, "kind");
		rt_jsonw_str_val(w, rt_target_kind_name(t->kind));
		if (t->kind == RT_TARGET_CGROUP) {
			rt_jsonw_key(w, "cgroup");
			rt_jsonw_str_val(w, t->cgroup);
		}
		rt_jsonw_key(w, "active");
		rt_jsonw_bool(w, t->active);
		/* network namespace inode (port targets: where the listener was found) */
		key_u64(w, "netns", t->netns);
		rt_jsonw_key(w, "pids");
		rt_jsonw_arr_open(w);
		for (k = 0; k < n; k++)
			rt_jsonw_int(w, pids[k]);
		rt_jsonw_arr_close(w);
		rt_jsonw_key(w, "unreadable");
		rt_jsonw_obj_open(w);
		key_u64(w, "tls", unr[RT_UNREADABLE_TLS]);
		key_u64(w, "http2", unr[RT_UNREADABLE_HTTP2]);
		key_u64(w, "malformed", unr[RT_UNREADABLE_MALFORMED]);
		rt_jsonw_obj_close(w);
		status_listen(d, t, w);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
}

/* CUDA processes with the injection library: one entry each. */
static void status_inject(struct rt_daemon *d, struct rt_jsonw *w)
{
	static const char *const st[] = { "ok", "no_cupti", "cupti_busy", "cupti_version",
					  "cupti_error" };
	struct rt_inject_conn_info info[64];
	int n, i;

	rt_jsonw_key(w, "injected");
	rt_jsonw_arr_open(w);
	n = d->inject ? rt_inject_server__conns(d->inject, info, 64) : 0;
	for (i = 0; i < n && i < 64; i++) {
		if (info[i].role == RT_INJECT_ROLE_MARKER)
			continue; /* below, in marker_rings */
		rt_jsonw_obj_open(w);
		key_u64(w, "pid", info[i].pid);
		rt_jsonw_key(w, "comm");
		rt_jsonw_str_val(w, info[i].comm);
		rt_jsonw_key(w, "status");
		rt_jsonw_str_val(w, info[i].status < 5 ? st[info[i].status] : "unknown");
		key_u64(w, "records", info[i].records);
		key_u64(w, "invalid", info[i].invalid);
		key_u64(w, "lost", info[i].lost + info[i].lost_unconnected);
		key_u64(w, "watermark_ns", info[i].watermark_ns);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	/* marker libraries writing through shared memory (docs/markers.md) */
	rt_jsonw_key(w, "marker_rings");
	rt_jsonw_arr_open(w);
	for (i = 0; i < n && i < 64; i++) {
		if (info[i].role != RT_INJECT_ROLE_MARKER)
			continue;
		rt_jsonw_obj_open(w);
		key_u64(w, "pid", info[i].pid);
		rt_jsonw_key(w, "comm");
		rt_jsonw_str_val(w, info[i].comm);
		key_u64(w, "records", info[i].records);
		key_u64(w, "late", info[i].late);
		key_u64(w, "invalid", info[i].invalid);
		key_u64(w, "lost", info[i].lost);
		key_u64(w, "watermark_ns", info[i].watermark_ns);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
}

/* ZeroMQ frame uprobes (sources/bpf_zmq.h): what they saw and what they could not read. */
static void status_zmq(struct rt_daemon *d, struct rt_jsonw *w)
{
	struct rt_bpf_zmq_stats zs;

	rt_jsonw_key(w, "zmq");
	if (!d->bpf || rt_bpf_source__zmq_stats(d->bpf, &zs)) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	key_u64(w, "libraries", zs.n_libs);
	key_u64(w, "frames", zs.frames);
	key_u64(w, "cut", zs.cut);
	key_u64(w, "cut_bytes", zs.cut_bytes);
	key_u64(w, "calls_full", zs.calls_full);
	key_u64(w, "unmatched", zs.unmatched);
	key_u64(w, "layout", zs.layout);
	key_u64(w, "fault", zs.fault);
	rt_jsonw_obj_close(w);
}

/* GPU work as the correlator saw it: probes, joins, and how busy each device was. */
static void status_gpu(struct rt_daemon *d, const struct rt_bpf_stats *bs, struct rt_jsonw *w)
{
	struct rt_gpu_stats *gs = calloc(1, sizeof(*gs));
	uint32_t i;

	rt_jsonw_key(w, "gpu");
	if (!gs) {
		rt_jsonw_null(w);
		return;
	}
	rt_gpu_stats(rt_pipeline__correlator(d->pipe), gs);
	rt_jsonw_obj_open(w);
	key_u64(w, "libraries", bs->n_gpu_libs);
	key_u64(w, "probes", bs->gpu_probes);
	key_u64(w, "records", gs->records);
	key_u64(w, "attributed", gs->attributed);
	key_u64(w, "unattributed", gs->unattributed);
	key_u64(w, "device_records", gs->dev_records);
	key_u64(w, "device_joined", gs->dev_joined);
	key_u64(w, "device_unmatched", gs->dev_unmatched + gs->dev_held_dropped + gs->dev_nomem);
	rt_jsonw_key(w, "devices");
	rt_jsonw_arr_open(w);
	for (i = 0; i < gs->n_busy && i < RT_GPU_BUSY_DEVICES_MAX; i++) {
		rt_jsonw_obj_open(w);
		key_u64(w, "pid", gs->busy[i].pid);
		key_u64(w, "device", gs->busy[i].device);
		key_u64(w, "processes", gs->busy[i].processes);
		rt_jsonw_key(w, "busy_fraction");
		rt_jsonw_num(w, gs->busy[i].fraction, 4);
		key_u64(w, "kernels", gs->busy[i].kernels);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
	free(gs);
}

/* Engine packs (docs/packs.md "What status says"): per pack, what matched and what failed. */
static void status_packs(struct rt_daemon *d, struct rt_jsonw *w)
{
	struct rt_pack_stats *ps = calloc(1, sizeof(*ps));
	uint32_t i, k;

	rt_jsonw_key(w, "packs");
	if (!ps) {
		rt_jsonw_null(w);
		return;
	}
	rt_bpf_source__pack_stats(d->bpf, ps);
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "dir");
	if (d->o.pack_dir && *d->o.pack_dir)
		rt_jsonw_str_val(w, d->o.pack_dir);
	else
		rt_jsonw_null(w);
	key_u64(w, "loaded", d->packs ? d->packs->n : 0);
	key_u64(w, "files_examined", ps->files_examined);
	key_u64(w, "probes", ps->probes);
	key_u64(w, "batch_unreadable", ps->batch_unreadable);
	rt_jsonw_key(w, "list");
	rt_jsonw_arr_open(w);
	for (i = 0; d->packs && i < d->packs->n; i++) {
		const struct rt_pack_stat *s = &ps->packs[i];

		rt_jsonw_obj_open(w);
		key_u64(w, "id", i);
		rt_jsonw_key(w, "name");
		rt_jsonw_str_val(w, d->packs->packs[i].name);
		rt_jsonw_key(w, "version");
		rt_jsonw_str_val(w, d->packs->packs[i].version);
		key_u64(w, "matched", s->matched);
		key_u64(w, "attached", s->attached);
		key_u64(w, "failed", s->failed);
		key_u64(w, "probes", s->probes);
		rt_jsonw_key(w, "failures");
		rt_jsonw_arr_open(w);
		for (k = 0; k < s->n_failures && k < RT_PACK_FAILURES_MAX; k++) {
			rt_jsonw_obj_open(w);
			rt_jsonw_key(w, "file");
			rt_jsonw_str_val(w, s->failures[k].file);
			rt_jsonw_key(w, "reason");
			rt_jsonw_str_val(w, s->failures[k].reason);
			rt_jsonw_obj_close(w);
		}
		rt_jsonw_arr_close(w);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
	free(ps);
}

static void drop_json(void *ctx, const char *key, uint64_t v)
{
	key_u64(ctx, key, v);
}

/* The status JSON's "drops" and the Prometheus reqtrace_dropped_total: one list. */
void rt_daemon__drops(struct rt_daemon *d, const struct rt_bpf_stats *bs,
		      void (*fn)(void *ctx, const char *key, uint64_t v), void *ctx)
{
	struct rt_correlator_stats cs;
	struct rt_merge_stats ms;
	struct rt_store_stats ss;
	struct rt_targets_stats ts;
	struct rt_listeners_stats ls;

	rt_correlator__stats(rt_pipeline__correlator(d->pipe), &cs);
	rt_merge__stats(rt_pipeline__merge(d->pipe), &ms);
	rt_store__stats(d->store, &ss);
	rt_targets__stats(d->targets, &ts);
	rt_listeners__stats(d->listeners, &ls);
	fn(ctx, "bpf_ring", bs->lost_total);
	fn(ctx, "bpf_invalid", bs->invalid);
	fn(ctx, "bpf_args_full", bs->args_full);
	fn(ctx, "bpf_arrivals_full", bs->arrivals_full);
	fn(ctx, "bpf_targets_full", bs->targets_full);
	fn(ctx, "bpf_step_members", bs->step_trunc);
	fn(ctx, "merge_refused", ms.refused);
	fn(ctx, "merge_forced", ms.forced);
	fn(ctx, "merge_late", ms.late);
	fn(ctx, "intake_errors", d->intake_errors);
	fn(ctx, "correlator_invalid", cs.invalid_events);
	fn(ctx, "correlator_procs", cs.dropped_procs);
	fn(ctx, "correlator_conns", cs.dropped_conns);
	fn(ctx, "correlator_requests", cs.dropped_requests);
	fn(ctx, "correlator_threads", cs.dropped_threads);
	/* vLLM: the engine-request table (max_vllm_requests) and the executor's holds */
	fn(ctx, "correlator_vllm_requests", cs.vllm_dropped);
	fn(ctx, "correlator_vllm_exec", cs.vllm_exec_dropped);
	fn(ctx, "store_evicted", ss.evicted);
	fn(ctx, "targets_pids", ts.pids_dropped);
	fn(ctx, "targets_netns_skipped", ts.netns_skipped);
	fn(ctx, "targets_cgroup_truncated", ts.cgroup_truncated);
	fn(ctx, "listen_skipped", ls.skipped);
	fn(ctx, "listen_netns_skipped", ls.netns_skipped);
	if (d->inject) {
		struct rt_inject_server_stats is;

		rt_inject_server__stats(d->inject, &is);
		fn(ctx, "inject_invalid", is.invalid);
		fn(ctx, "inject_lost", is.lost);
		fn(ctx, "inject_rings_dropped", is.framing);
		fn(ctx, "marker_shm_late", is.mark_late);
		fn(ctx, "marker_shm_invalid", is.mark_invalid);
		fn(ctx, "marker_shm_stalled", is.mark_stalled);
	}
	fn(ctx, "stalled_sources", d->stalled_sources);
	fn(ctx, "recording_errors", d->rec_errors);
	fn(ctx, "bpf_gpu_attach_failed", bs->gpu_attach_failed);
	fn(ctx, "bpf_gpu_calls_full", bs->gpu_calls_full);
	{
		struct rt_jsonl_stats js = { 0 };

		if (d->jsonl)
			rt_jsonl__stats(d->jsonl, &js);
		fn(ctx, "jsonl", js.dropped);
	}
	if (d->otlp_was_on) { /* on now, or once: a counter stays once it appeared */
		struct rt_otlp_stats os;

		rt_daemon__otlp_stats(d, &os);
		fn(ctx, "otlp_queue_full", os.dropped_queue_full);
		fn(ctx, "otlp_rate_limited", os.dropped_rate_limited);
		fn(ctx, "otlp_rejected", os.dropped_rejected);
		fn(ctx, "otlp_retries_exhausted", os.dropped_retries_exhausted);
		fn(ctx, "otlp_encode", os.dropped_encode);
		fn(ctx, "otlp_partial_rejected", os.rejected_spans);
	}
}

static void link_json(struct rt_jsonw *w, const char *key, const struct rt_gpu_link *l)
{
	rt_jsonw_key(w, key);
	if (!l) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonw_obj_open(w);
	key_u64(w, "tx_bytes", l->tx_total);
	key_u64(w, "rx_bytes", l->rx_total);
	rt_jsonw_key(w, "tx_bytes_per_s");
	rt_jsonw_num(w, l->tx_bps, 0);
	rt_jsonw_key(w, "rx_bytes_per_s");
	rt_jsonw_num(w, l->rx_bps, 0);
	rt_jsonw_key(w, "max_bytes_per_s");
	if (l->max_bps)
		rt_jsonw_uint(w, l->max_bps);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "utilization");
	if (l->util >= 0)
		rt_jsonw_num(w, l->util, 4);
	else
		rt_jsonw_null(w);
	rt_jsonw_key(w, "utilization_peak");
	if (l->util_peak >= 0)
		rt_jsonw_num(w, l->util_peak, 4);
	else
		rt_jsonw_null(w);
	key_u64(w, "window_ms", l->window_ns / 1000000);
	key_u64(w, "samples", l->samples);
	rt_jsonw_obj_close(w);
}

/*
 * PCIe and NVLink per device (docs/protocol.md, docs/gpu.md "Links"): the
 * library's state from the NVML source, the traffic from the correlator's
 * LINK_SAMPLE series (the same numbers the verdict reads).
 */
static void status_nvml(struct rt_daemon *d, struct rt_jsonw *w)
{
	struct rt_nvml_stats *ns = calloc(1, sizeof(*ns));
	struct rt_gpu_links *gl = calloc(1, sizeof(*gl));
	uint32_t i, k;

	rt_jsonw_key(w, "nvml");
	if (!ns || !gl) {
		rt_jsonw_null(w);
		goto cleanup;
	}
	rt_nvml__stats(d->nvml, ns);
	rt_gpu_links(rt_pipeline__correlator(d->pipe), gl);
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "state");
	rt_jsonw_str_val(w, rt_nvml_state_name(ns->state));
	rt_jsonw_key(w, "library");
	rt_jsonw_str_val(w, ns->library);
	rt_jsonw_key(w, "error");
	if (ns->error[0])
		rt_jsonw_str_val(w, ns->error);
	else
		rt_jsonw_null(w);
	key_u64(w, "samples", ns->samples);
	key_u64(w, "read_errors", ns->read_errors);
	key_u64(w, "devices_total", ns->devices_total);
	rt_jsonw_key(w, "devices");
	rt_jsonw_arr_open(w);
	for (i = 0; i < ns->n_devices; i++) {
		const struct rt_nvml_dev *nd = &ns->dev[i];
		const struct rt_gpu_link *pcie = NULL, *nvl = NULL;

		for (k = 0; k < gl->n; k++) {
			if (gl->link[k].device != nd->index)
				continue;
			if (gl->link[k].link_type == RT_LINK_PCIE)
				pcie = &gl->link[k];
			else if (gl->link[k].link_type == RT_LINK_NVLINK)
				nvl = &gl->link[k];
		}
		rt_jsonw_obj_open(w);
		key_u64(w, "device", nd->index);
		key_u64(w, "pcie_gen", nd->pcie_gen);
		key_u64(w, "pcie_width", nd->pcie_width);
		key_u64(w, "nvlink_links", nd->nvlink_links);
		link_json(w, "pcie", pcie);
		link_json(w, "nvlink", nvl);
		rt_jsonw_obj_close(w);
	}
	rt_jsonw_arr_close(w);
	rt_jsonw_obj_close(w);
cleanup:
	free(ns);
	free(gl);
}

/* The OTLP exporter's state (docs/protocol.md, docs/otlp.md); null when off. */
static void status_otlp(struct rt_daemon *d, struct rt_jsonw *w)
{
	struct rt_otlp_stats os;

	rt_jsonw_key(w, "otlp");
	if (!d->otlp) {
		rt_jsonw_null(w);
		return;
	}
	rt_daemon__otlp_stats(d, &os);
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "endpoint");
	rt_jsonw_str_val(w, rt_otlp__endpoint(d->otlp));
	key_u64(w, "queued", os.queued);
	key_u64(w, "exported", os.exported);
	key_u64(w, "requests", os.requests);
	key_u64(w, "retries", os.retries);
	key_u64(w, "bytes_sent", os.bytes_sent);
	key_u64(w, "sampled_out", os.sampled_out);
	key_u64(w, "amended_skipped", os.amended_skipped);
	rt_jsonw_key(w, "dropped");
	rt_jsonw_obj_open(w);
	key_u64(w, "queue_full", os.dropped_queue_full);
	key_u64(w, "rate_limited", os.dropped_rate_limited);
	key_u64(w, "rejected", os.dropped_rejected);
	key_u64(w, "retries_exhausted", os.dropped_retries_exhausted);
	key_u64(w, "encode", os.dropped_encode);
	key_u64(w, "shutdown", os.dropped_shutdown);
	rt_jsonw_obj_close(w);
	key_u64(w, "rejected_spans", os.rejected_spans);
	key_u64(w, "last_status", (uint64_t)os.last_status);
	rt_jsonw_key(w, "last_error");
	if (os.last_error[0])
		rt_jsonw_str_val(w, os.last_error);
	else
		rt_jsonw_null(w);
	rt_jsonw_obj_close(w);
}

void rt_daemon__exported(struct rt_daemon *d, void (*fn)(void *ctx, const char *key, uint64_t v),
			 void *ctx)
{
	struct rt_jsonl_stats js = { 0 };
	struct rt_otlp_stats os = { 0 };

	/* both always, 0 when off: a series that comes and goes breaks rate() */
	if (d->jsonl)
		rt_jsonl__stats(d->jsonl, &js);
	fn(ctx, "jsonl", js.lines);
	rt_daemon__otlp_stats(d, &os);
	fn(ctx, "otlp", os.exported);
}

/* The status JSON's "jsonl": null when off (docs/protocol.md). */
static void status_jsonl(struct rt_daemon *d, struct rt_jsonw *w)
{
	struct rt_jsonl_opts jo;
	struct rt_jsonl_stats js;

	rt_jsonw_key(w, "jsonl");
	if (!d->jsonl) {
		rt_jsonw_null(w);
		return;
	}
	rt_jsonl__get_opts(d->jsonl, &jo);
	rt_jsonl__stats(d->jsonl, &js);
	rt_jsonw_obj_open(w);
	rt_jsonw_key(w, "path");
	rt_jsonw_str_val(w, jo.path);
	key_u64(w, "max_bytes", jo.max_bytes);
	key_u64(w, "keep", jo.keep);
	key_u64(w, "size", js.size);
	key_u64(w, "lines", js.lines);
	key_u64(w, "bytes", js.bytes);
	key_u64(w, "rotations", js.rotations);
	key_u64(w, "reopens", js.reopens);
	key_u64(w, "dropped", js.dropped);
	rt_jsonw_key(w, "dropped_by");
	rt_jsonw_obj_open(w);
	key_u64(w, "nospace", js.dropped_nospace);
	key_u64(w, "io", js.dropped_io);
	key_u64(w, "toolarge", js.dropped_toolarge);
	key_u64(w, "other", js.dropped_other);
	rt_jsonw_obj_close(w);
	rt_jsonw_key(w, "last_error");
	if (js.last_errno)
		rt_jsonw_str_val(w, strerror(js.last_errno));
	else
		rt_jsonw_null(w);
	rt_jsonw_obj_close(w);
}

static void cmd_status(struct rt_daemon *d, struct rt_ctl_client *cl)
{
	struct rt_bpf_stats *bs = calloc(1, sizeof(*bs));
	struct rt_correlator_stats cs;
	struct rt_merge_stats ms;
	struct rt_store_stats ss;
	struct rt_targets_stats ts;
	struct rt_listeners_stats ls;
	struct rt_jsonw w;

	if (!bs) {
		rt_ctl_error(cl, "out of memory");
		return;
	}
	if (d->bpf)
		rt_bpf_source__stats(d->bpf, bs);
	rt_correlator__stats(rt_pipeline__correlator(d->pipe), &cs);
	rt_merge__stats(rt_pipeline__merge(d->pipe), &ms);
	rt_store__stats(d->store, &ss);
	rt_targets__stats(d->targets, &ts);
	rt_listeners__stats(d->listeners, &ls);

	rt_jsonw_init(&w, 1 << 20);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "version");
	rt_jsonw_str_val(&w, RT_VERSION);
	key_u64(&w, "protocol", RT_CTL_PROTOCOL);
	rt_jsonw_key(&w, "uptime_s");
	rt_jsonw_num(&w, (double)(rt_now_ns() - d->start_ns) / 1e9, 1);
	status_targets(d, &w);

	rt_jsonw_key(&w, "sources");
	rt_jsonw_arr_open(&w);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "name");
	rt_jsonw_str_val(&w, "bpf");
	key_u64(&w, "events", d->src[1].events);
	rt_jsonw_key(&w, "events_per_s");
	rt_jsonw_num(&w, d->src[1].rate, 1);
	key_u64(&w, "lost", bs->lost_total);
	key_u64(&w, "ring_bytes", bs->ring_bytes);
	rt_jsonw_key(&w, "ring_fill");
	rt_jsonw_num(&w, bs->ring_bytes ? (double)bs->ring_avail / bs->ring_bytes : 0, 4);
	rt_jsonw_key(&w, "ring_fill_max");
	rt_jsonw_num(&w, bs->ring_bytes ? (double)bs->ring_avail_max / bs->ring_bytes : 0, 4);
	key_u64(&w, "links_pinned", bs->links_pinned);
	rt_jsonw_obj_close(&w);
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "name");
	rt_jsonw_str_val(&w, "daemon");
	key_u64(&w, "events", d->src[0].events);
	rt_jsonw_key(&w, "events_per_s");
	rt_jsonw_num(&w, d->src[0].rate, 1);
	rt_jsonw_obj_close(&w);
	rt_jsonw_arr_close(&w);
	status_inject(d, &w);
	status_gpu(d, bs, &w);
	status_zmq(d, &w);
	status_packs(d, &w);
	status_nvml(d, &w);

	/* every bounded stage and what it had to drop */
	rt_jsonw_key(&w, "drops");
	rt_jsonw_obj_open(&w);
	rt_daemon__drops(d, bs, drop_json, &w);
	rt_jsonw_obj_close(&w);

	rt_jsonw_key(&w, "merge");
	rt_jsonw_obj_open(&w);
	key_u64(&w, "pending", ms.pending);
	key_u64(&w, "pending_max", ms.pending_max);
	key_u64(&w, "horizon_ns", rt_merge__horizon(rt_pipeline__merge(d->pipe)));
	rt_jsonw_obj_close(&w);

	rt_jsonw_key(&w, "correlator");
	rt_jsonw_obj_open(&w);
	key_u64(&w, "inflight", cs.requests_inflight);
	key_u64(&w, "conns", cs.conns);
	key_u64(&w, "threads", cs.threads);
	key_u64(&w, "procs", cs.procs);
	key_u64(&w, "spans", cs.spans);
	key_u64(&w, "amended", cs.spans_amended);
	key_u64(&w, "late_events", cs.late_events);
	key_u64(&w, "lost_records", cs.lost_records);
	key_u64(&w, "orphan_markers", cs.orphan_markers);
	key_u64(&w, "missed_switch_ins", cs.missed_switch_ins);
	key_u64(&w, "peer_conns", cs.peer_conns);
	key_u64(&w, "zmtp_conns", cs.zmtp_conns);
	key_u64(&w, "zmq_messages", cs.zmq_messages);
	key_u64(&w, "zmq_desyncs", cs.zmq_desyncs);
	key_u64(&w, "zmq_frames_discarded", cs.zmq_frames_discarded);
	key_u64(&w, "vllm_requests", cs.vllm_requests);
	key_u64(&w, "vllm_joined", cs.vllm_joined);
	key_u64(&w, "vllm_dropped", cs.vllm_dropped);
	key_u64(&w, "vllm_unknown", cs.vllm_unknown);
	key_u64(&w, "vllm_exec_dropped", cs.vllm_exec_dropped);
	rt_jsonw_key(&w, "not_run_ms");
	rt_jsonw_ms(&w, (int64_t)cs.not_run_ns);
	rt_jsonw_key(&w, "unattributed_cpu_ms");
	rt_jsonw_ms(&w, (int64_t)cs.unattributed_cpu_ns);
	rt_jsonw_key(&w, "unattributed_on_cpu_ms");
	rt_jsonw_ms(&w, (int64_t)cs.unattributed_on_cpu_ns);
	rt_jsonw_key(&w, "unattributed_runq_ms");
	rt_jsonw_ms(&w, (int64_t)cs.unattributed_runq_ns);
	rt_jsonw_obj_close(&w);

	/* arrival in the kernel (docs/spans.md, "Arrival"): is it observed, and used */
	rt_jsonw_key(&w, "arrival");
	rt_jsonw_obj_open(&w);
	rt_jsonw_key(&w, "on");
	rt_jsonw_bool(&w, bs->arrival_on != 0);
	key_u64(&w, "applied", cs.arrivals_applied);
	key_u64(&w, "refused", cs.arrivals_refused);
	key_u64(&w, "unused", cs.arrivals_unused);
	rt_jsonw_obj_close(&w);

	rt_jsonw_key(&w, "store");
	rt_jsonw_obj_open(&w);
	key_u64(&w, "spans", ss.size);
	key_u64(&w, "capacity", ss.capacity);
	key_u64(&w, "bytes", ss.bytes);
	rt_jsonw_obj_close(&w);

	rt_jsonw_key(&w, "recording");
	if (d->rec) {
		struct rt_trace_writer_stats ws;

		rt_trace_writer__stats(d->rec, &ws);
		rt_jsonw_obj_open(&w);
		rt_jsonw_key(&w, "path");
		rt_jsonw_str_val(&w, d->rec_path);
		key_u64(&w, "records", ws.records);
		key_u64(&w, "bytes", ws.bytes);
		rt_jsonw_obj_close(&w);
	} else {
		rt_jsonw_null(&w);
	}
	status_otlp(d, &w);
	status_jsonl(d, &w);
	rt_jsonw_obj_close(&w);
	send_jsonw(cl, &w);
	rt_jsonw_fini(&w);
	free(bs);
	rt_ctl_end(cl, "");
}

/* A --slowest candidate, by store position (a span handed out by the store
 * lasts only until the next call on it) and duration. */
struct span_pick {
	uint32_t pos;
	uint64_t dur;
};

struct span_filter {
	uint64_t since_ns; /* 0: all */
	const char *path;
	struct rt_ctl_client *cl;
	struct rt_jsonw *w;
	struct span_pick *pick; /* --slowest: candidates */
	uint32_t n_pick, max_pick;
	uint32_t pos; /* store position of the span being visited */
	uint64_t sent;
};

static bool matches(const struct span_filter *f, const struct rt_span *s)
{
	if (f->since_ns && s->end_ns < f->since_ns)
		return false;
	if (f->path && strcmp(f->path, s->path))
		return false;
	return true;
}

static void send_span(struct span_filter *f, const struct rt_span *s)
{
	rt_jsonw_reset(f->w);
	rt_span_to_json(f->w, s);
	send_jsonw(f->cl, f->w);
	f->sent++;
}

static int each_span(const struct rt_span *s, void *ctx)
{
	struct span_filter *f = ctx;
	uint32_t i, pos = f->pos++;
	/* started before the trace (no start): no duration to rank by */
	uint64_t dur = s->start_ns ? s->end_ns - s->start_ns : 0;

	if (!matches(f, s))
		return 0;
	if (!f->max_pick) {
		send_span(f, s);
		return 0;
	}
	/* keep the N slowest, sorted longest first (insertion: N is small) */
	for (i = f->n_pick; i > 0; i--) {
		if (f->pick[i - 1].dur >= dur)
			break;
		if (i < f->max_pick)
			f->pick[i] = f->pick[i - 1];
	}
	if (i < f->max_pick) {
		f->pick[i].pos = pos;
		f->pick[i].dur = dur;
		if (f->n_pick < f->max_pick)
			f->n_pick++;
	}
	return 0;
}

static void cmd_spans(struct rt_daemon *d, struct rt_ctl_client *cl, const cJSON *req)
{
	struct span_filter f = { .cl = cl };
	struct rt_jsonw w;
	const cJSON *v;
	uint64_t since;
	char extra[64];
	uint32_t i;

	if (rt_ctl_dur_field(req, "since", &since)) {
		rt_ctl_error(cl, "bad \"since\": a duration such as 30s or 5m");
		return;
	}
	if (since)
		f.since_ns = rt_now_ns() > since ? rt_now_ns() - since : 1;
	v = cJSON_GetObjectItemCaseSensitive(req, "path");
	if (cJSON_IsString(v))
		f.path = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(req, "slowest");
	if (v) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 100000) {
			rt_ctl_error(cl, "bad \"slowest\": 1..100000");
			return;
		}
		f.max_pick = (uint32_t)v->valuedouble;
		f.pick = calloc(f.max_pick, sizeof(*f.pick));
		if (!f.pick) {
			rt_ctl_error(cl, "out of memory");
			return;
		}
	}
	rt_jsonw_init(&w, 1 << 20);
	f.w = &w;
	rt_store__foreach(d->store, each_span, &f);
	for (i = 0; i < f.n_pick; i++)
		send_span(&f, rt_store__at(d->store, f.pick[i].pos));
	free(f.pick);
	rt_jsonw_fini(&w);
	snprintf(extra, sizeof(extra), "\"count\":%llu", (unsigned long long)f.sent);
	rt_ctl_end(cl, extra);
}

static void cmd_show(struct rt_daemon *d, struct rt_ctl_client *cl, const cJSON *req)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "id");
	const struct rt_span *s;
	struct rt_jsonw w;

	if (!cJSON_IsString(v)) {
		rt_ctl_error(cl, "bad request: show needs \"id\"");
		return;
	}
	s = rt_store__find(d->store, v->valuestring);
	if (!s) {
		rt_ctl_error(cl, "no finished request with id '%s' in the store", v->valuestring);
		return;
	}
	rt_jsonw_init(&w, 1 << 20);
	rt_span_to_json(&w, s);
	send_jsonw(cl, &w);
	rt_jsonw_fini(&w);
	rt_ctl_end(cl, "");
}

struct inflight_ctx {
	struct rt_ctl_client *cl;
	struct rt_jsonw w;
	uint64_t now;
};

static void each_inflight(const struct rt_inflight *r, void *ctx)
{
	struct inflight_ctx *x = ctx;

	rt_jsonw_reset(&x->w);
	rt_jsonw_obj_open(&x->w);
	rt_jsonw_key(&x->w, "request_id");
	rt_jsonw_str_val(&x->w, r->request_id);
	rt_jsonw_key(&x->w, "path");
	rt_jsonw_str_val(&x->w, r->path);
	rt_jsonw_key(&x->w, "group");
	rt_jsonw_str_val(&x->w, r->group);
	key_u64(&x->w, "pid", r->pid);
	rt_jsonw_key(&x->w, "start_ns");
	if (r->start_ns) {
		rt_jsonw_uint(&x->w, r->start_ns);
	} else { /* started before the trace */
		rt_jsonw_null(&x->w);
	}
	rt_jsonw_key(&x->w, "age_ms");
	if (r->start_ns)
		rt_jsonw_ms(&x->w, x->now > r->start_ns ? (int64_t)(x->now - r->start_ns) : 0);
	else
		rt_jsonw_null(&x->w);
	rt_jsonw_key(&x->w, "phase");
	rt_jsonw_str_val(&x->w, rt_phase_name(r->phase));
	key_u64(&x->w, "events_out", r->events_out);
	rt_jsonw_obj_close(&x->w);
	send_jsonw(x->cl, &x->w);
}

static void cmd_inflight(struct rt_daemon *d, struct rt_ctl_client *cl)
{
	struct inflight_ctx x = { .cl = cl, .now = rt_now_ns() };

	rt_jsonw_init(&x.w, 1 << 16);
	rt_correlator__inflight(rt_pipeline__correlator(d->pipe), each_inflight, &x);
	rt_jsonw_fini(&x.w);
	rt_ctl_end(cl, "");
}

static void cmd_record(struct rt_daemon *d, struct rt_ctl_client *cl, const cJSON *req)
{
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(req, "path");
	uint64_t dur;
	int err;

	if (rt_ctl_uid(cl) != 0) {
		rt_ctl_error(cl, "permission denied: record is root only");
		return;
	}
	if (!cJSON_IsString(path) || path->valuestring[0] != '/') {
		rt_ctl_error(cl, "bad request: record needs an absolute \"path\"");
		return;
	}
	if (rt_ctl_dur_field(req, "duration", &dur) || !dur) {
		rt_ctl_error(cl, "bad \"duration\": a duration such as 10s");
		return;
	}
	if (d->rec) {
		rt_ctl_error(cl, "a recording is already running (%s)", d->rec_path);
		return;
	}
	err = rt_daemon__record_start(d, path->valuestring, dur);
	if (err) {
		rt_ctl_error(cl, "cannot record to %s: %s", path->valuestring, strerror(-err));
		return;
	}
	d->rec_client = cl;
	rt_ctl_hold(cl);
}

void rt_daemon__handle(struct rt_ctl_client *cl, const char *cmd, const cJSON *req, void *ctx)
{
	struct rt_daemon *d = ctx;

	if (!strcmp(cmd, "status"))
		cmd_status(d, cl);
	else if (!strcmp(cmd, "spans"))
		cmd_spans(d, cl, req);
	else if (!strcmp(cmd, "show"))
		cmd_show(d, cl, req);
	else if (!strcmp(cmd, "inflight"))
		cmd_inflight(d, cl);
	else if (!strcmp(cmd, "record"))
		cmd_record(d, cl, req);
	else
		rt_ctl_error(cl, "unknown command '%s'", cmd);
}

void rt_daemon__client_gone(struct rt_ctl_client *cl, void *ctx)
{
	struct rt_daemon *d = ctx;

	/* the recording goes on to its end; there is just nobody to tell */
	if (d->rec_client == cl)
		d->rec_client = NULL;
}
