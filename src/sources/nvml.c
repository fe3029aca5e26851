// SPDX-License-Identifier: BSD-2-Clause
/*
 * PCIe and NVLink byte counters from NVML, read on the daemon's timer
 * (docs/gpu.md, "Links"). The library is opened with dlopen so that the
 * daemon builds and runs where there is none; every function is looked up
 * by name against the hand-written declarations of sources/nvml_api.h.
 *
 * The counters are cumulative field values (nvmlDeviceGetFieldValues): one
 * call per device per round reads them all and costs microseconds, unlike
 * nvmlDeviceGetPcieThroughput, which samples for ~20 ms per call and would
 * stall the loop. PCIe counters may wrap (the value's own width); NVLink
 * counts KiB. The running totals undo both, so the LINK_SAMPLE records only
 * grow and a reader takes differences.
 */
#include "sources/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/nvml_api.h"

enum { C_PCIE_TX, C_PCIE_RX, C_NV_TX, C_NV_RX, C__COUNT };

struct counter {
	uint64_t last; /* the raw value last read */
	bool have;
};

struct dev_state {
	rt_nvmlDevice_t h;
	struct counter c[C__COUNT];
};

struct rt_nvml {
	void *dl;
	rt_nvmlShutdown_fn shutdown;
	rt_nvmlErrorString_fn error_string;
	rt_nvmlDeviceGetFieldValues_fn get_fields;
	bool inited;
	struct rt_nvml_stats st;
	struct dev_state dev[RT_NVML_DEVICES_MAX];
};

const char *rt_nvml_state_name(enum rt_nvml_state s)
{
	switch (s) {
	case RT_NVML_OK:
		return "ok";
	case RT_NVML_ERROR:
		return "error";
	case RT_NVML_ABSENT:
		break;
	}
	return "absent";
}

uint32_t rt_nvml_pcie_mbps(uint32_t gen, uint32_t width)
{
	/* per lane and direction after line encoding (8b/10b to gen 2, 128b/130b
	 * from gen 3, FLIT from gen 6), in 10^6 B/s */
	static const uint32_t lane[] = { 0, 250, 500, 985, 1969, 3938, 7563 };

	if (!gen || gen >= sizeof(lane) / sizeof(lane[0]) || !width)
		return 0;
	return lane[gen] * width;
}

static const char *err_str(const struct rt_nvml *n, rt_nvmlReturn_t r)
{
	const char *s = n->error_string ? n->error_string(r) : NULL;

	return s ? s : "unknown error";
}

__attribute__((format(printf, 3, 4))) static void set_state(struct rt_nvml *n, enum rt_nvml_state s,
							    const char *fmt, ...)
{
	va_list ap;

	n->st.state = s;
	va_start(ap, fmt);
	vsnprintf(n->st.error, sizeof(n->st.error), fmt, ap);
	va_end(ap);
}

/* A field's value as an unsigned counter and its width in bits; false if unusable. */
static bool field_u64(const rt_nvmlFieldValue_t *f, uint64_t *v, unsigned *bits)
{
	if (f->nvmlReturn != RT_NVML_SUCCESS)
		return false;
	switch (f->valueType) {
	case RT_NVML_VALUE_TYPE_UNSIGNED_INT:
		*v = f->value.uiVal;
		*bits = 32;
		return true;
	case RT_NVML_VALUE_TYPE_UNSIGNED_LONG:
		*v = f->value.ulVal;
		*bits = (unsigned)(8 * sizeof(unsigned long));
		return true;
	case RT_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		*v = f->value.ullVal;
		*bits = 64;
		return true;
	case RT_NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		if (f->value.sllVal < 0)
			return false;
		*v = (uint64_t)f->value.sllVal;
		*bits = 63;
		return true;
	default:
		return false;
	}
}

/* What the counter grew by since the last read (mod its width: it may wrap). */
static uint64_t advance(struct counter *c, uint64_t v, unsigned bits)
{
	uint64_t d = 0;

	if (c->have) {
		d = v - c->last;
		if (bits < 64)
			d &= (1ULL << bits) - 1;
	}
	c->last = v;
	c->have = true;
	return d;
}

static void probe_device(struct rt_nvml *n, rt_nvmlDeviceGetMaxPcieLinkGeneration_fn gen_fn,
			 rt_nvmlDeviceGetMaxPcieLinkWidth_fn width_fn, uint32_t i)
{
	struct rt_nvml_dev *pd = &n->st.dev[i];
	rt_nvmlFieldValue_t f[2];
	unsigned int gen = 0, width = 0;
	uint64_t links = 0, speed = 0;
	unsigned bits;

	pd->index = i;
	if (gen_fn && gen_fn(n->dev[i].h, &gen) != RT_NVML_SUCCESS)
		gen = 0;
	if (width_fn && width_fn(n->dev[i].h, &width) != RT_NVML_SUCCESS)
		width = 0;
	pd->pcie_gen = gen;
	pd->pcie_width = width;
	pd->pcie_max_mbps = rt_nvml_pcie_mbps(gen, width);
	memset(f, 0, sizeof(f));
	f[0].fieldId = RT_NVML_FI_DEV_NVLINK_LINK_COUNT;
	f[1].fieldId = RT_NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON;
	if (n->get_fields(n->dev[i].h, 2, f) != RT_NVML_SUCCESS)
		return;
	if (!field_u64(&f[0], &links, &bits) || !links)
		return;
	pd->nvlink_links = (uint32_t)links;
	if (field_u64(&f[1], &speed, &bits) && speed * links <= UINT32_MAX)
		pd->nvlink_max_mbps = (uint32_t)(speed * links);
	pd->nvlink = true;
}

struct rt_nvml *rt_nvml__open(const char *lib)
{
	struct rt_nvml *n = calloc(1, sizeof(*n));
	rt_nvmlInit_v2_fn init;
	rt_nvmlDeviceGetCount_v2_fn count;
	rt_nvmlDeviceGetHandleByIndex_v2_fn handle;
	rt_nvmlDeviceGetMaxPcieLinkGeneration_fn gen_fn;
	rt_nvmlDeviceGetMaxPcieLinkWidth_fn width_fn;
	rt_nvmlReturn_t r;
	unsigned int total = 0, i;

	if (!n)
		return NULL;
	if (!lib)
		lib = getenv(RT_NVML_LIB_ENV);
	if (!lib || !*lib)
		lib = RT_NVML_LIB_DEFAULT;
	snprintf(n->st.library, sizeof(n->st.library), "%s", lib);
	n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		const char *e = dlerror();

		set_state(n, RT_NVML_ABSENT, "%s", e ? e : "cannot open");
		return n;
	}
	/* the ABI's own names: the _v2 forms are what nvml.h maps the plain names to */
	init = (rt_nvmlInit_v2_fn)dlsym(n->dl, "nvmlInit_v2");
	n->shutdown = (rt_nvmlShutdown_fn)dlsym(n->dl, "nvmlShutdown");
	n->error_string = (rt_nvmlErrorString_fn)dlsym(n->dl, "nvmlErrorString");
	count = (rt_nvmlDeviceGetCount_v2_fn)dlsym(n->dl, "nvmlDeviceGetCount_v2");
	handle = (rt_nvmlDeviceGetHandleByIndex_v2_fn)dlsym(n->dl, "nvmlDeviceGetHandleByIndex_v2");
	n->get_fields = (rt_nvmlDeviceGetFieldValues_fn)dlsym(n->dl, "nvmlDeviceGetFieldValues");
	gen_fn = (rt_nvmlDeviceGetMaxPcieLinkGeneration_fn)dlsym(
		n->dl, "nvmlDeviceGetMaxPcieLinkGeneration");
	width_fn =
		(rt_nvmlDeviceGetMaxPcieLinkWidth_fn)dlsym(n->dl, "nvmlDeviceGetMaxPcieLinkWidth");
	if (!init || !n->shutdown || !count || !handle || !n->get_fields) {
		set_state(n, RT_NVML_ERROR, "%s lacks a function reqtrace needs", lib);
		return n;
	}
	r = init();
	if (r != RT_NVML_SUCCESS) {
		set_state(n, RT_NVML_ERROR, "nvmlInit_v2: %s", err_str(n, r));
		return n;
	}
	n->inited = true;
	r = count(&total);
	if (r != RT_NVML_SUCCESS) {
		set_state(n, RT_NVML_ERROR, "nvmlDeviceGetCount_v2: %s", err_str(n, r));
		return n;
	}
	n->st.devices_total = total;
	for (i = 0; i < total && n->st.n_devices < RT_NVML_DEVICES_MAX; i++) {
		r = handle(i, &n->dev[n->st.n_devices].h);
		if (r != RT_NVML_SUCCESS)
			continue; /* a device we may not open (permissions): left out */
		probe_device(n, gen_fn, width_fn, n->st.n_devices);
		n->st.dev[n->st.n_devices].index = i;
		n->st.n_devices++;
	}
	set_state(n, RT_NVML_OK, "%s", "");
	return n;
}

static int emit_sample(rt_event_fn emit, void *ctx, uint64_t now, uint32_t source, uint32_t device,
		       uint32_t type, uint64_t tx, uint64_t rx, uint32_t max)
{
	struct rt_ev_link_sample s;

	memset(&s, 0, sizeof(s));
	s.hdr.kind = RT_EV_LINK_SAMPLE;
	s.hdr.size = sizeof(s);
	s.hdr.source = source;
	s.hdr.ts_ns = now;
	s.tx_bytes = tx;
	s.rx_bytes = rx;
	s.device = device;
	s.link = RT_LINK_ALL;
	s.link_type = type;
	s.max_mbps = max;
	return emit(&s.hdr, ctx);
}

int rt_nvml__sample(struct rt_nvml *n, uint64_t now_ns, uint32_t source, rt_event_fn emit,
		    void *ctx)
{
	uint32_t i;
	int err;

	if (!n || n->st.state != RT_NVML_OK)
		return 0;
	n->st.samples++;
	for (i = 0; i < n->st.n_devices; i++) {
		struct dev_state *ds = &n->dev[i];
		struct rt_nvml_dev *pd = &n->st.dev[i];
		rt_nvmlFieldValue_t f[C__COUNT];
		int nf = pd->nvlink ? 4 : 2;
		uint64_t v[C__COUNT] = { 0 };
		bool ok[C__COUNT] = { false };
		unsigned bits[C__COUNT] = { 0 };
		int k;

		memset(f, 0, sizeof(f));
		f[C_PCIE_TX].fieldId = RT_NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
		f[C_PCIE_RX].fieldId = RT_NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
		f[C_NV_TX].fieldId = RT_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
		f[C_NV_TX].scopeId = RT_NVML_SCOPE_ALL_LINKS;
		f[C_NV_RX].fieldId = RT_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
		f[C_NV_RX].scopeId = RT_NVML_SCOPE_ALL_LINKS;
		if (n->get_fields(ds->h, nf, f) != RT_NVML_SUCCESS) {
			n->st.read_errors++;
			continue;
		}
		for (k = 0; k < nf; k++) {
			ok[k] = field_u64(&f[k], &v[k], &bits[k]);
			if (!ok[k])
				n->st.read_errors++;
		}
		pd->pcie = ok[C_PCIE_TX] && ok[C_PCIE_RX];
		if (pd->pcie) {
			pd->pcie_tx += advance(&ds->c[C_PCIE_TX], v[C_PCIE_TX], bits[C_PCIE_TX]);
			pd->pcie_rx += advance(&ds->c[C_PCIE_RX], v[C_PCIE_RX], bits[C_PCIE_RX]);
			err = emit_sample(emit, ctx, now_ns, source, pd->index, RT_LINK_PCIE,
					  pd->pcie_tx, pd->pcie_rx, pd->pcie_max_mbps);
			if (err)
				return err;
		}
		if (pd->nvlink && ok[C_NV_TX] && ok[C_NV_RX]) {
			/* KiB counters */
			pd->nvlink_tx += 1024 * advance(&ds->c[C_NV_TX], v[C_NV_TX], bits[C_NV_TX]);
			pd->nvlink_rx += 1024 * advance(&ds->c[C_NV_RX], v[C_NV_RX], bits[C_NV_RX]);
			err = emit_sample(emit, ctx, now_ns, source, pd->index, RT_LINK_NVLINK,
					  pd->nvlink_tx, pd->nvlink_rx, pd->nvlink_max_mbps);
			if (err)
				return err;
		}
	}
	return 0;
}

void rt_nvml__stats(const struct rt_nvml *n, struct rt_nvml_stats *st)
{
	if (!n) {
		memset(st, 0, sizeof(*st));
		snprintf(st->error, sizeof(st->error), "not opened");
		return;
	}
	*st = n->st;
}

void rt_nvml__close(struct rt_nvml *n)
{
	if (!n)
		return;
	if (n->inited && n->shutdown)
		n->shutdown();
	if (n->dl)
		dlclose(n->dl);
	free(n);
}
