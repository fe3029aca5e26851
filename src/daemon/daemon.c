// SPDX-License-Identifier: BSD-2-Clause
/*
 * The daemon's loop: sources → intake → pipeline → store.
 *
 * Every record, whichever source made it, goes through rt_daemon__intake():
 * into the recording (when one runs) and into the pipeline. The daemon's
 * own records (SOURCE_INFO, TARGET, WATERMARK) take the same path, so a
 * recording holds exactly what the live pipeline saw, in the same order.
 */
#include "daemon.h"
#include "metrics.h"
#include "otlp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/caps.h"
#include "daemon/procfs.h"
#include "daemon/sdnotify.h"
#include "sources/bpf_source.h"
#include "sources/bpf_zmq.h"
#include "sources/pack.h"

#define DRAIN_MS 10
#define SCAN_MS 250
#define PACK_SCAN_MS 1000 /* engine packs: mapped files read again (new ones examined) */
#define STATS_MS 1000
#define LISTEN_MS 1000
#define NVML_MS 1000 /* NVML link counters: a read of cumulative fields costs microseconds */
#define MARKER_LIB "libreqtrace_marker.so"

uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void source_info(struct rt_daemon *d, uint32_t id, uint32_t type, const char *name,
			bool rec_only)
{
	struct rt_ev_source_info si = { 0 };

	si.hdr.kind = RT_EV_SOURCE_INFO;
	si.hdr.size = sizeof(si);
	si.hdr.source = RT_SOURCE_DAEMON;
	si.hdr.ts_ns = rt_now_ns();
	si.id = id;
	si.type = type;
	snprintf(si.name, sizeof(si.name), "%s", name);
	if (rec_only) {
		if (d->rec)
			rt_trace_writer__write(d->rec, &si.hdr);
		return;
	}
	rt_daemon__intake(&si.hdr, d);
}

static void target_record(struct rt_daemon *d, const struct rt_target *t, pid_t pid, bool leave,
			  bool rec_only)
{
	struct rt_ev_target tr = { 0 };

	tr.hdr.kind = RT_EV_TARGET;
	tr.hdr.size = sizeof(tr);
	tr.hdr.source = RT_SOURCE_DAEMON;
	tr.hdr.ts_ns = rt_now_ns();
	tr.hdr.pid = (__u32)pid;
	tr.group_id = t->group_id;
	tr.leave = leave;
	snprintf(tr.group, sizeof(tr.group), "%s", t->group);
	rt_procfs_comm(pid, tr.comm, sizeof(tr.comm));
	if (rec_only) {
		if (d->rec)
			rt_trace_writer__write(d->rec, &tr.hdr);
		return;
	}
	rt_daemon__intake(&tr.hdr, d);
}

static void watermark(struct rt_daemon *d, uint32_t source, uint64_t ts)
{
	struct rt_ev_watermark wm = { 0 };

	wm.hdr.kind = RT_EV_WATERMARK;
	wm.hdr.size = sizeof(wm);
	wm.hdr.source = source;
	wm.hdr.ts_ns = ts;
	rt_daemon__intake(&wm.hdr, d);
}

int rt_daemon__intake(const struct rt_event_hdr *ev, void *ctx)
{
	struct rt_daemon *d = ctx;
	int err;

	if (d->rec) {
		/* docs/privacy.md: payloads are redacted unless --capture-bodies */
		const struct rt_event_hdr *out =
			d->redact ? rt_redactor__redact(d->redact, ev) : ev;

		err = out ? rt_trace_writer__write(d->rec, out) : -EINVAL;
		if (err == -EINVAL || err == -ERANGE) {
			d->rec_errors++; /* a record the file format refuses: counted, skipped */
		} else if (err) {
			d->rec_errors++;
			elog("recording %s: %s: stopped", d->rec_path, strerror(-err));
			rt_daemon__record_stop(d);
		}
	}
	if (ev->source == RT_SOURCE_BPF)
		d->src[1].events++;
	else
		d->src[0].events++;
	rt_targets__observe(d->targets, ev);
	err = rt_pipeline__push(d->pipe, ev);
	if (err < 0)
		d->intake_errors++;
	return 0;
}

/*
 * A CUDA process that stops flushing (stopped, hung) would hold every span
 * back: past RT_SOURCE_STALL_NS its source stops counting in the merge
 * (its later records arrive late, flagged) until it delivers again.
 */
static void unstall(struct rt_daemon *d, uint64_t now)
{
	struct rt_inject_conn_info info[64];
	struct rt_merge *m = rt_pipeline__merge(d->pipe);
	int n, i;
	__u64 wm;

	n = rt_inject_server__conns(d->inject, info, 64);
	for (i = 0; i < n && i < 64; i++) {
		if (!info[i].source_id || rt_merge__source_watermark(m, info[i].source_id, &wm))
			continue;
		if (wm + RT_SOURCE_STALL_NS < now) {
			rt_merge__remove_source(m, info[i].source_id);
			d->stalled_sources++;
			wlog("CUDA process %u (%s) lags %.1f s: no longer holding spans back",
			     info[i].pid, info[i].comm, (double)(now - wm) / 1e9);
		}
	}
}

/* Drain the sources, then move the watermarks: releases what is safe. */
static void drain(struct rt_daemon *d)
{
	uint64_t now;

	if (d->inject) {
		rt_inject_server__on_readable(d->inject);
		rt_inject_server__consume(d->inject, rt_daemon__intake, d);
		unstall(d, rt_now_ns());
	}
	if (d->bpf) {
		rt_bpf_source__consume(d->bpf, rt_daemon__intake, d);
		watermark(d, RT_SOURCE_BPF, rt_bpf_source__watermark(d->bpf));
	}
	/* the daemon's own records are stamped when made: nothing older will come */
	now = rt_now_ns();
	watermark(d, RT_SOURCE_DAEMON, now);
	if (d->rec && d->rec_until_ns && now >= d->rec_until_ns)
		rt_daemon__record_stop(d);
}

static void on_bpf_readable(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	drain(h->data);
}

static void on_inject_readable(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	drain(h->data);
}

static int inject_allow(__u32 pid, void *ctx)
{
	struct rt_daemon *d = ctx;

	return rt_targets__group_of(d->targets, (pid_t)pid) != 0;
}

static void inject_closed(__u32 source_id, __u32 pid, void *ctx)
{
	struct rt_daemon *d = ctx;

	(void)pid;
	/* nothing more will come from it: it must not hold the merge */
	rt_merge__remove_source(rt_pipeline__merge(d->pipe), source_id);
}

static void on_drain_timer(uv_timer_t *h)
{
	drain(h->data);
}

static void on_scan_timer(uv_timer_t *h)
{
	struct rt_daemon *d = h->data;
	pid_t pids[RT_TRACED_PIDS_MAX];
	char lib[4096];
	int n, i;

	rt_targets__scan(d->targets);
	if (d->listen_dirty) {
		d->listen_dirty = false;
		rt_listeners__refresh(d->listeners, d->targets);
	}
	/* marker libraries may be loaded (dlopen) after the process started */
	n = rt_targets__pids(d->targets, 0, pids, RT_TRACED_PIDS_MAX);
	for (i = 0; i < n && d->bpf; i++)
		if (rt_procfs_find_lib(pids[i], MARKER_LIB, lib, sizeof(lib)) == 1)
			rt_bpf_source__attach_markers(d->bpf, lib);
	/* so may libcuda and libnccl (GPU uprobes, docs/gpu.md); a file is attached once */
	for (i = 0; i < n && d->bpf; i++) {
		static const char *const gpu_libs[] = { "libcuda.so", "libnccl.so" };

		for (size_t k = 0; k < sizeof(gpu_libs) / sizeof(gpu_libs[0]); k++)
			if (rt_procfs_find_lib(pids[i], gpu_libs[k], lib, sizeof(lib)) == 1)
				rt_bpf_source__attach_gpu(d->bpf, lib);
	}
	/* and libzmq (ZeroMQ frame uprobes, docs/events.md "ZeroMQ") */
	for (i = 0; i < n && d->bpf; i++)
		if (rt_procfs_find_lib(pids[i], RT_ZMQ_LIB_NAME, lib, sizeof(lib)) == 1)
			rt_bpf_source__attach_zmq(d->bpf, lib);
	/* and an engine's library (docs/packs.md): every file once, so a second is enough */
	if (d->packs && ++d->pack_ticks * SCAN_MS >= PACK_SCAN_MS) {
		d->pack_ticks = 0;
		for (i = 0; i < n && d->bpf; i++)
			rt_bpf_source__attach_packs(d->bpf, d->packs, (__u32)pids[i]);
	}
}

static void on_stats_timer(uv_timer_t *h)
{
	struct rt_daemon *d = h->data;
	size_t i;

	for (i = 0; i < 2; i++) {
		d->src[i].rate =
			(double)(d->src[i].events - d->src[i].last_events) * 1000.0 / STATS_MS;
		d->src[i].last_events = d->src[i].events;
	}
}

/* NVML's link counters, one round a second: LINK_SAMPLE records into the pipeline. */
static void on_nvml_timer(uv_timer_t *h)
{
	struct rt_daemon *d = h->data;

	rt_nvml__sample(d->nvml, rt_now_ns(), RT_SOURCE_DAEMON, rt_daemon__intake, d);
}

static void on_listen_timer(uv_timer_t *h)
{
	struct rt_daemon *d = h->data;

	rt_listeners__refresh(d->listeners, d->targets);
}

/* A target's listener on a port not seen before: its arrivals are wanted. */
static void listen_port(void *ctx, uint16_t port)
{
	struct rt_daemon *d = ctx;
	int err = d->bpf ? rt_bpf_source__watch_port(d->bpf, port) : -ENODEV;

	/* spans simply lack arrival times without it: worth a debug line, once */
	if (err && !d->watch_port_logged) {
		d->watch_port_logged = true;
		dlog("arrival times for port %u: %s (further failures not logged)", port,
		     strerror(-err));
	}
}

static void on_span(const struct rt_span *s, void *ctx)
{
	struct rt_daemon *d = ctx;

	rt_store__add(d->store, s);
	if (d->prom)
		rt_prom__observe(d->prom, s);
	rt_otlp__add(d->otlp, s);
	/* every revision: the file is a log, a shipper's reader keeps the newest */
	if (d->jsonl)
		rt_jsonl__write_span(d->jsonl, s);
}

static int target_add(void *ctx, const struct rt_target *t, pid_t pid)
{
	struct rt_daemon *d = ctx;
	char lib[4096];
	int err;

	/* the TARGET record is stamped before the kernel starts emitting */
	target_record(d, t, pid, false, false);
	d->listen_dirty = true;
	err = rt_bpf_source__add_pid(d->bpf, (__u32)pid, t->group_id);
	if (err)
		return err;
	if (rt_procfs_find_lib(pid, MARKER_LIB, lib, sizeof(lib)) == 1) {
		err = rt_bpf_source__attach_markers(d->bpf, lib);
		if (err)
			wlog("markers in %s: %s", lib, strerror(-err));
	}
	/* GPU uprobes on the libcuda and libnccl it maps (docs/gpu.md) */
	{
		static const char *const gpu_libs[] = { "libcuda.so", "libnccl.so" };

		for (size_t k = 0; k < sizeof(gpu_libs) / sizeof(gpu_libs[0]); k++) {
			if (rt_procfs_find_lib(pid, gpu_libs[k], lib, sizeof(lib)) != 1)
				continue;
			err = rt_bpf_source__attach_gpu(d->bpf, lib);
			if (err)
				wlog("GPU probes in %s: %s", lib, strerror(-err));
		}
	}
	/* ZeroMQ frames at the application boundary: zmq_msg_send/zmq_msg_recv */
	if (rt_procfs_find_lib(pid, RT_ZMQ_LIB_NAME, lib, sizeof(lib)) == 1) {
		err = rt_bpf_source__attach_zmq(d->bpf, lib);
		if (err)
			wlog("ZeroMQ probes in %s: %s", lib, strerror(-err));
	}
	/* engine packs on the files it maps; `status` says what matched and failed */
	if (d->packs)
		rt_bpf_source__attach_packs(d->bpf, d->packs, (__u32)pid);
	return 0;
}

static void target_remove(void *ctx, const struct rt_target *t, pid_t pid, bool left)
{
	struct rt_daemon *d = ctx;

	rt_bpf_source__remove_pid(d->bpf, (__u32)pid);
	d->listen_dirty = true;
	/* it lives on, untraced (moved out of its cgroup): its requests cannot finish */
	if (left)
		target_record(d, t, pid, true, false);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct rt_daemon *d = h->data;

	ilog("%s: shutting down", strsignal(sig));
	rt_sd_notify("STOPPING=1");
	d->stopping = true;
	uv_stop(d->loop);
}

int rt_daemon__record_start(struct rt_daemon *d, const char *path, uint64_t duration_ns)
{
	struct rt_trace_writer_opts wo = { .source = RT_SOURCE_DAEMON };
	uint32_t i;

	if (d->rec)
		return -EBUSY;
	if (!d->o.capture_bodies && !(d->redact = rt_redactor__new(NULL)))
		return -errno;
	d->rec = rt_trace_writer__open(path, &wo);
	if (!d->rec) {
		int err = -errno;

		rt_redactor__free(d->redact);
		d->redact = NULL;
		return err;
	}
	snprintf(d->rec_path, sizeof(d->rec_path), "%s", path);
	d->rec_until_ns = duration_ns ? rt_now_ns() + duration_ns : 0;
	/* a recording stands alone: name the sources, restate the targets */
	source_info(d, RT_SOURCE_DAEMON, RT_SRC_DAEMON, "daemon", true);
	source_info(d, RT_SOURCE_BPF, RT_SRC_BPF, "bpf", true);
	for (i = 0; i < rt_targets__count(d->targets); i++) {
		const struct rt_target *t = rt_targets__get(d->targets, i);
		pid_t pids[RT_TRACED_PIDS_MAX];
		int n = rt_targets__pids(d->targets, t->group_id, pids, RT_TRACED_PIDS_MAX);

		for (int k = 0; k < n; k++)
			target_record(d, t, pids[k], false, true);
	}
	ilog("recording to %s%s%s", path, duration_ns ? "" : " until stopped",
	     d->redact ? "" : ", payloads unredacted (--capture-bodies)");
	return 0;
}

void rt_daemon__record_stop(struct rt_daemon *d)
{
	struct rt_trace_writer_stats ws = { 0 };
	struct rt_ctl_client *cl = d->rec_client;
	char extra[256];
	int err;

	if (!d->rec)
		return;
	rt_trace_writer__stats(d->rec, &ws);
	err = rt_trace_writer__close(d->rec);
	d->rec = NULL;
	if (d->redact) {
		struct rt_redactor_stats rs;

		rt_redactor__stats(d->redact, &rs);
		ilog("recording %s: %llu socket records redacted, %llu masked whole (table full), "
		     "%llu not HTTP/1.x; ZeroMQ: %llu by structure, %llu masked whole",
		     d->rec_path, (unsigned long long)rs.records, (unsigned long long)rs.no_slot,
		     (unsigned long long)rs.unreadable, (unsigned long long)rs.zmq_walked,
		     (unsigned long long)rs.zmq_masked);
		rt_redactor__free(d->redact);
		d->redact = NULL;
	}
	d->rec_until_ns = 0;
	d->rec_client = NULL;
	if (err)
		elog("recording %s: %s", d->rec_path, strerror(-err));
	else
		ilog("recording %s: %llu records", d->rec_path, (unsigned long long)ws.records);
	if (!cl)
		return;
	if (err) {
		rt_ctl_error(cl, "recording %s: %s", d->rec_path, strerror(-err));
		return;
	}
	snprintf(extra, sizeof(extra), "\"records\":%llu,\"bytes\":%llu",
		 (unsigned long long)ws.records, (unsigned long long)ws.bytes);
	rt_ctl_end(cl, extra);
}

static int mkdir_for(const char *path)
{
	char dir[4096], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int rt_daemon__init(struct rt_daemon *d, uv_loop_t *loop, const struct rt_daemon_opts *o)
{
	struct rt_pipeline_opts po = { 0 };
	struct rt_bpf_source_opts bo = { 0 };
	struct rt_store_opts so = { 0 };
	struct rt_control_opts co = { 0 };
	struct rt_targets_cb tcb = { 0 };
	int err, i, fd;

	memset(d, 0, sizeof(*d));
	d->loop = loop;
	d->o = *o;
	d->start_ns = rt_now_ns();
	d->src[0].name = "daemon";
	d->src[1].name = "bpf";

	so.max_spans = o->max_spans;
	d->store = rt_store__new(&so);
	po.corr.on_span = on_span;
	po.corr.ctx = d;
	po.corr.max_requests = o->max_requests;
	po.corr.max_vllm_requests = o->max_vllm_requests;
	po.corr.idle_timeout_ns = o->idle_timeout_ns;
	d->pipe = rt_pipeline__new(&po);
	tcb.add = target_add;
	tcb.remove = target_remove;
	tcb.ctx = d;
	d->targets = rt_targets__new(&tcb);
	if (!d->store || !d->pipe || !d->targets) {
		err = -ENOMEM;
		goto cleanup;
	}
	rt_merge__add_source(rt_pipeline__merge(d->pipe), RT_SOURCE_DAEMON);
	rt_merge__add_source(rt_pipeline__merge(d->pipe), RT_SOURCE_BPF);

	if (o->pack_dir && *o->pack_dir) {
		char why[768];

		err = rt_packs_load_dir(o->pack_dir, &d->packs, why, sizeof(why));
		if (err == -ENOENT) {
			/* not installed (a build tree): tracing goes on without packs */
			wlog("engine packs: %s", why);
			err = 0;
		} else if (err) {
			elog("engine packs: %s", why);
			goto cleanup;
		} else {
			ilog("engine packs: %u from %s", d->packs->n, o->pack_dir);
		}
	}

	bo.source_id = RT_SOURCE_BPF;
	bo.ring_bytes = o->ring_bytes;
	bo.head_bytes = o->head_bytes;
	bo.tail_bytes = o->tail_bytes;
	bo.verbose = o->verbose;
	bo.pin_root = o->pin_dir;
	d->bpf = rt_bpf_source__new(&bo);
	if (!d->bpf) {
		err = -errno;
		elog("cannot start the BPF probes (%s); reqtraced needs root (CAP_BPF, "
		     "CAP_PERFMON, CAP_SYS_ADMIN for tracefs) and a kernel with BTF, "
		     "tracepoints and uprobes",
		     strerror(-err));
		goto cleanup;
	}

	if (o->record_path) {
		err = rt_daemon__record_start(d, o->record_path, 0);
		if (err) {
			elog("--record %s: %s", o->record_path, strerror(-err));
			goto cleanup;
		}
	}
	for (i = 0; i < o->n_pids; i++)
		rt_targets__add_pid(d->targets, o->pids[i]);
	for (i = 0; i < o->n_ports; i++)
		rt_targets__add_port(d->targets, o->ports[i]);
	for (i = 0; i < o->n_comms; i++)
		rt_targets__add_comm(d->targets, o->comms[i]);
	for (i = 0; i < o->n_cgroups; i++) {
		err = rt_targets__add_cgroup(d->targets, o->cgroups[i]);
		if (err) {
			elog("--cgroup %s: %s", o->cgroups[i], strerror(-err));
			goto cleanup;
		}
	}
	rt_targets__scan(d->targets);
	{
		struct rt_listeners_opts lo = { .new_port = listen_port, .ctx = d };

		d->listeners = rt_listeners__new(&lo);
		if (!d->listeners) {
			err = -errno;
			goto cleanup;
		}
		rt_listeners__refresh(d->listeners, d->targets);
		d->listen_dirty = false;
	}

	if (o->inject_path) {
		struct rt_inject_server_opts io = {
			.path = o->inject_path,
			.first_source_id = RT_SOURCE_INJECT_FIRST,
			.allow_pid = inject_allow,
			.on_close = inject_closed,
			.ctx = d,
		};

		err = mkdir_for(o->inject_path);
		if (!err) {
			d->inject = rt_inject_server__new(&io);
			err = d->inject ? 0 : -errno;
		}
		if (err) {
			elog("injection socket %s: %s", o->inject_path, strerror(-err));
			goto cleanup;
		}
	}

	if (o->metrics_listen) {
		d->prom = rt_prom__new();
		d->metrics = d->prom ? rt_metrics__new(loop, o->metrics_listen, d) : NULL;
		if (!d->metrics) {
			err = -errno;
			goto cleanup;
		}
	}

	errno = 0;
	d->otlp = rt_otlp__new(loop, &o->otlp);
	d->otlp_was_on = d->otlp != NULL;
	if (!d->otlp && errno) {
		err = -errno;
		elog("OTLP exporter to %s: %s", o->otlp.endpoint, strerror(-err));
		goto cleanup;
	}
	if (o->jsonl_path) {
		err = rt_daemon__set_jsonl(d, o->jsonl_path, o->jsonl_max_bytes, o->jsonl_keep);
		if (err) {
			elog("jsonl_path %s: %s", o->jsonl_path, strerror(-err));
			goto cleanup;
		}
	}

	err = mkdir_for(o->socket_path);
	if (err) {
		elog("control socket directory for %s: %s", o->socket_path, strerror(-err));
		goto cleanup;
	}
	co.path = o->socket_path;
	co.group = o->socket_group;
	co.handler = rt_daemon__handle;
	co.gone = rt_daemon__client_gone;
	co.ctx = d;
	d->ctl = rt_control__new(loop, &co);
	if (!d->ctl) {
		err = -errno;
		goto cleanup;
	}

	fd = rt_bpf_source__epoll_fd(d->bpf);
	uv_poll_init(loop, &d->bpf_poll, fd);
	d->bpf_poll.data = d;
	uv_poll_start(&d->bpf_poll, UV_READABLE, on_bpf_readable);
	if (d->inject) {
		uv_poll_init(loop, &d->inject_poll, rt_inject_server__epoll_fd(d->inject));
		d->inject_poll.data = d;
		uv_poll_start(&d->inject_poll, UV_READABLE, on_inject_readable);
	}
	uv_timer_init(loop, &d->drain_timer);
	d->drain_timer.data = d;
	uv_timer_start(&d->drain_timer, on_drain_timer, DRAIN_MS, DRAIN_MS);
	uv_timer_init(loop, &d->scan_timer);
	d->scan_timer.data = d;
	uv_timer_start(&d->scan_timer, on_scan_timer, SCAN_MS, SCAN_MS);
	uv_timer_init(loop, &d->stats_timer);
	d->stats_timer.data = d;
	uv_timer_start(&d->stats_timer, on_stats_timer, STATS_MS, STATS_MS);
	uv_timer_init(loop, &d->listen_timer);
	d->listen_timer.data = d;
	uv_timer_start(&d->listen_timer, on_listen_timer, LISTEN_MS, LISTEN_MS);
	/* dlopen: no NVIDIA driver is "absent" in the status, not an error */
	d->nvml = rt_nvml__open(NULL);
	if (d->nvml) {
		struct rt_nvml_stats ns;

		rt_nvml__stats(d->nvml, &ns);
		if (ns.state == RT_NVML_OK)
			ilog("nvml: %s, %u device(s): PCIe/NVLink counters every %d ms", ns.library,
			     ns.n_devices, NVML_MS);
		else
			ilog("nvml %s: %s: no link counters", rt_nvml_state_name(ns.state),
			     ns.error);
		uv_timer_init(loop, &d->nvml_timer);
		d->nvml_timer.data = d;
		if (ns.state == RT_NVML_OK)
			uv_timer_start(&d->nvml_timer, on_nvml_timer, 0, NVML_MS);
	}
	uv_signal_init(loop, &d->sig_int);
	d->sig_int.data = d;
	uv_signal_start(&d->sig_int, on_signal, SIGINT);
	uv_signal_init(loop, &d->sig_term);
	d->sig_term.data = d;
	uv_signal_start(&d->sig_term, on_signal, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Setup done (tracefs mount, socket chown): keep only what later attaches
	 * need (daemon/caps.h). Fail closed: a drop that did not happen would
	 * leave a root tracer running with more than the operator granted.
	 */
	err = rt_caps_drop_to(RT_CAPS_KEEP);
	if (err) {
		elog("cannot drop the capabilities reqtraced does not need: %s", strerror(-err));
		goto cleanup;
	}
	ilog("ready: control socket %s, %u target(s)", o->socket_path,
	     rt_targets__count(d->targets));
	err = rt_sd_notify("READY=1\nSTATUS=tracing");
	if (err < 0)
		wlog("NOTIFY_SOCKET: %s", strerror(-err));
	return 0;
cleanup:
	rt_daemon__fini(d);
	return err;
}

int rt_daemon__run(struct rt_daemon *d)
{
	uv_run(d->loop, UV_RUN_DEFAULT);
	return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

void rt_daemon__fini(struct rt_daemon *d)
{
	if (d->bpf) /* what the kernel still holds belongs in the recording */
		drain(d);
	rt_daemon__record_stop(d);
	if (d->ctl) {
		rt_control__close(d->ctl);
		d->ctl = NULL;
	}
	rt_metrics__close(d->metrics); /* before the walk: its clients free themselves */
	d->metrics = NULL;
	rt_otlp__close(d->otlp); /* the same: its handles free it */
	d->otlp = NULL;
	/* close every handle and let the loop finish closing them */
	uv_walk(d->loop, close_walk, NULL);
	uv_run(d->loop, UV_RUN_DEFAULT);
	rt_bpf_source__free(d->bpf);
	d->bpf = NULL;
	free(d->packs); /* after the source: its probes name packs by index */
	d->packs = NULL;
	rt_inject_server__free(d->inject);
	d->inject = NULL;
	rt_nvml__close(d->nvml);
	d->nvml = NULL;
	rt_pipeline__free(d->pipe);
	d->pipe = NULL;
	rt_store__free(d->store);
	d->store = NULL;
	rt_targets__free(d->targets);
	d->targets = NULL;
	rt_listeners__free(d->listeners);
	d->listeners = NULL;
	rt_prom__free(d->prom);
	d->prom = NULL;
	rt_jsonl__close(d->jsonl);
	d->jsonl = NULL;
}

int rt_daemon__set_max_spans(struct rt_daemon *d, uint32_t max_spans)
{
	int err = rt_store__set_max(d->store, max_spans);

	if (!err)
		d->o.max_spans = max_spans;
	return err;
}

int rt_daemon__set_jsonl(struct rt_daemon *d, const char *path, uint64_t max_bytes, uint32_t keep)
{
	struct rt_jsonl_opts jo = { .path = path, .max_bytes = max_bytes, .keep = keep };
	struct rt_jsonl *j;

	if (!path) {
		if (d->jsonl)
			ilog("JSONL export to %s stopped", rt_jsonl__path(d->jsonl));
		rt_jsonl__close(d->jsonl);
		d->jsonl = NULL;
		return 0;
	}
	if (d->jsonl)
		return rt_jsonl__configure(d->jsonl, &jo);
	j = rt_jsonl__open(&jo);
	if (!j)
		return -errno;
	d->jsonl = j;
	ilog("JSONL export to %s (rotated past %llu bytes, %u kept)", path,
	     (unsigned long long)max_bytes, keep);
	return 0;
}

int rt_daemon__reopen_jsonl(struct rt_daemon *d)
{
	return d->jsonl ? rt_jsonl__reopen(d->jsonl) : 0;
}

void rt_daemon__otlp_stats(const struct rt_daemon *d, struct rt_otlp_stats *out)
{
	const struct rt_otlp_stats *g = &d->otlp_gone;

	memset(out, 0, sizeof(*out));
	if (d->otlp)
		rt_otlp__stats(d->otlp, out);
	else {
		out->last_status = g->last_status;
		memcpy(out->last_error, g->last_error, sizeof(out->last_error));
	}
	out->exported += g->exported;
	out->sampled_out += g->sampled_out;
	out->amended_skipped += g->amended_skipped;
	out->requests += g->requests;
	out->retries += g->retries;
	out->bytes_sent += g->bytes_sent;
	out->dropped_queue_full += g->dropped_queue_full;
	out->dropped_rate_limited += g->dropped_rate_limited;
	out->dropped_rejected += g->dropped_rejected;
	out->dropped_retries_exhausted += g->dropped_retries_exhausted;
	out->dropped_encode += g->dropped_encode;
	out->dropped_shutdown += g->dropped_shutdown;
	out->rejected_spans += g->rejected_spans;
}

int rt_daemon__set_otlp(struct rt_daemon *d, const struct rt_otlp_opts *o)
{
	struct rt_otlp *x;

	if (!o->endpoint || !*o->endpoint) {
		if (!d->otlp)
			return 0;
		/* close counts what was still queued; fold it in before it goes */
		rt_otlp__close(d->otlp);
		rt_daemon__otlp_stats(d, &d->otlp_gone);
		d->otlp_gone.queued = 0;
		d->otlp = NULL;
		ilog("OTLP export stopped");
		return 0;
	}
	if (d->otlp)
		return rt_otlp__reconfigure(d->otlp, o);
	errno = 0;
	x = rt_otlp__new(d->loop, o);
	if (!x)
		return errno ? -errno : -EINVAL;
	d->otlp = x;
	d->otlp_was_on = true;
	return 0;
}
