// SPDX-License-Identifier: BSD-2-Clause
/*
 * NVML link counters (src/sources/nvml.c) on the fake NVML
 * (tests/fixtures/fake_nvml), and their bytes, rates and utilisation in the
 * correlator (src/correlate/gpu_link.c, rt_gpu_links): a missing library
 * is "absent", a failing nvmlInit "error"; PCIe counters that wrap at 32
 * bits and NVLink counters in KiB become byte totals that only grow;
 * utilisation is against the link's maximum (PCIe generation x width,
 * NVLink links x speed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "correlate/correlator.h"
#include "correlate/gpu.h"
#include "sources/nvml.h"
#include "sources/nvml_api.h"

#define S 1000000000ULL
#define T0 (100 * S)
#define RECS_MAX 64

static struct rt_ev_link_sample recs[RECS_MAX];
static int n_recs;

static int collect(const struct rt_event_hdr *ev, void *ctx)
{
	(void)ctx;
	assert_int_equal(ev->kind, RT_EV_LINK_SAMPLE);
	assert_int_equal(ev->size, sizeof(struct rt_ev_link_sample));
	assert_true(n_recs < RECS_MAX);
	memcpy(&recs[n_recs++], ev, sizeof(recs[0]));
	return 0;
}

static const struct rt_ev_link_sample *rec(int i, uint32_t dev, uint32_t type)
{
	int k, seen = 0;

	for (k = 0; k < n_recs; k++)
		if (recs[k].device == dev && recs[k].link_type == type && seen++ == i)
			return &recs[k];
	fail_msg("no record %d of device %u type %u", i, dev, type);
	return NULL;
}

static void clear_env(void)
{
	unsetenv("RT_FAKE_NVML_INIT_FAIL");
	unsetenv("RT_FAKE_NVML_SCRIPT");
	unsetenv("RT_FAKE_NVML_DEVICES");
	unsetenv("RT_FAKE_NVML_NVLINKS");
	unsetenv("RT_FAKE_NVML_NVLINK_MBPS");
	unsetenv(RT_NVML_LIB_ENV);
	n_recs = 0;
}

static void test_layout(void **state)
{
	(void)state;
	/* the sizes nvml.h has (also asserted at compile time in nvml_api.h) */
	assert_int_equal(sizeof(rt_nvmlFieldValue_t), 40);
	assert_int_equal(offsetof(rt_nvmlFieldValue_t, value), 32);
	assert_int_equal(RT_NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 197);
	assert_int_equal(RT_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 138);
	assert_int_equal(rt_nvml_pcie_mbps(4, 16), 31504);
	assert_int_equal(rt_nvml_pcie_mbps(5, 16), 63008);
	assert_int_equal(rt_nvml_pcie_mbps(0, 16), 0);
	assert_int_equal(rt_nvml_pcie_mbps(9, 16), 0);
}

static void test_absent(void **state)
{
	struct rt_nvml_stats st;
	struct rt_nvml *n;

	(void)state;
	clear_env();
	n = rt_nvml__open("/nonexistent/libnvidia-ml.so.1");
	assert_non_null(n);
	rt_nvml__stats(n, &st);
	assert_int_equal(st.state, RT_NVML_ABSENT);
	assert_string_equal(rt_nvml_state_name(st.state), "absent");
	assert_true(st.error[0] != '\0');
	assert_int_equal(rt_nvml__sample(n, T0, 1, collect, NULL), 0);
	assert_int_equal(n_recs, 0);
	rt_nvml__close(n);
	/* a library without NVML's functions: there, but an error */
	n = rt_nvml__open("libc.so.6");
	rt_nvml__stats(n, &st);
	assert_int_equal(st.state, RT_NVML_ERROR);
	rt_nvml__close(n);
}

static void test_init_fails(void **state)
{
	struct rt_nvml_stats st;
	struct rt_nvml *n;

	(void)state;
	clear_env();
	setenv("RT_FAKE_NVML_INIT_FAIL", "1", 1);
	/* the library named by the environment, as the daemon finds it */
	setenv(RT_NVML_LIB_ENV, RT_FAKE_NVML, 1);
	n = rt_nvml__open(NULL);
	rt_nvml__stats(n, &st);
	assert_int_equal(st.state, RT_NVML_ERROR);
	assert_string_equal(st.library, RT_FAKE_NVML);
	assert_string_equal(st.error, "nvmlInit_v2: Unknown Error");
	rt_nvml__close(n);
	clear_env();
}

static void test_counters_and_links(void **state)
{
	char path[] = "/tmp/rt_nvml_scriptXXXXXX";
	struct rt_correlator_opts o = { 0 };
	struct rt_nvml_stats st;
	struct rt_gpu_links links;
	const struct rt_gpu_link *l;
	struct rt_correlator *c;
	struct rt_nvml *n;
	FILE *f;
	int fd, i;

	(void)state;
	clear_env();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	/* device 0: PCIe as 32-bit counters about to wrap; NVLink in KiB */
	fprintf(f, "0 4294967000 100 0 0 32\n");
	fprintf(f, "0 1000 1000100 1024 2048 32\n");
	fprintf(f, "0 2000001000 1000100 1024 2048 32\n");
	/* device 1: 64-bit, half the PCIe gen 4 x16 link for the second second */
	fprintf(f, "1 0 0 0 0\n");
	fprintf(f, "1 0 0 0 0\n");
	fprintf(f, "1 15752000000 7876000000 0 0\n");
	fclose(f);
	setenv("RT_FAKE_NVML_SCRIPT", path, 1);
	setenv("RT_FAKE_NVML_DEVICES", "2", 1);
	setenv("RT_FAKE_NVML_NVLINKS", "18", 1);
	setenv("RT_FAKE_NVML_NVLINK_MBPS", "25000", 1);
	n = rt_nvml__open(RT_FAKE_NVML);
	rt_nvml__stats(n, &st);
	assert_int_equal(st.state, RT_NVML_OK);
	assert_int_equal(st.n_devices, 2);
	assert_int_equal(st.dev[0].pcie_gen, 4);
	assert_int_equal(st.dev[0].pcie_width, 16);
	assert_int_equal(st.dev[0].pcie_max_mbps, 31504);
	assert_int_equal(st.dev[0].nvlink_links, 18);
	assert_int_equal(st.dev[0].nvlink_max_mbps, 18 * 25000);
	for (i = 0; i < 3; i++)
		assert_int_equal(rt_nvml__sample(n, T0 + (uint64_t)i * S, 5, collect, NULL), 0);
	/* two devices x (PCIe, NVLink) x 3 rounds */
	assert_int_equal(n_recs, 12);
	assert_int_equal(rec(0, 0, RT_LINK_PCIE)->tx_bytes, 0); /* the first round: a start */
	assert_int_equal(rec(1, 0, RT_LINK_PCIE)->tx_bytes, 1296); /* across the wrap */
	assert_int_equal(rec(1, 0, RT_LINK_PCIE)->rx_bytes, 1000000);
	assert_int_equal(rec(2, 0, RT_LINK_PCIE)->tx_bytes, 2000001296);
	assert_int_equal(rec(1, 0, RT_LINK_NVLINK)->tx_bytes, 1024 * 1024);
	assert_int_equal(rec(1, 0, RT_LINK_NVLINK)->rx_bytes, 2048 * 1024);
	assert_int_equal(rec(2, 0, RT_LINK_NVLINK)->max_mbps, 450000);
	assert_int_equal(rec(2, 1, RT_LINK_PCIE)->tx_bytes, 15752000000ULL);
	assert_int_equal(rec(2, 1, RT_LINK_PCIE)->max_mbps, 31504);
	assert_int_equal(rec(0, 1, RT_LINK_PCIE)->hdr.source, 5);
	assert_int_equal(rec(2, 1, RT_LINK_PCIE)->hdr.ts_ns, T0 + 2 * S);
	rt_nvml__stats(n, &st);
	assert_int_equal(st.samples, 3);
	assert_int_equal(st.read_errors, 0);
	assert_int_equal(st.dev[0].pcie_tx, 2000001296);
	rt_nvml__close(n);
	unlink(path);

	/* the same records through the correlator */
	c = rt_correlator__new(&o);
	assert_non_null(c);
	for (i = 0; i < n_recs; i++)
		rt_correlator__event(c, &recs[i].hdr, false);
	rt_gpu_links(c, &links);
	assert_int_equal(links.n, 4);
	assert_int_equal(links.records, 12);
	assert_int_equal(links.refused, 0);
	l = NULL;
	for (i = 0; i < (int)links.n; i++)
		if (links.link[i].device == 1 && links.link[i].link_type == RT_LINK_PCIE)
			l = &links.link[i];
	assert_non_null(l);
	assert_int_equal(l->max_bps, 31504000000ULL);
	assert_int_equal(l->tx_total, 15752000000ULL);
	assert_int_equal(l->rx_total, 7876000000ULL);
	assert_int_equal(l->window_ns, 2 * S);
	assert_true(l->tx_bps > 7875999999.0 && l->tx_bps < 7876000001.0);
	/* over the window (2 s) a quarter; the busy second half */
	assert_true(l->util > 0.2499 && l->util < 0.2501);
	assert_true(l->util_peak > 0.4999 && l->util_peak < 0.5001);
	for (i = 0; i < (int)links.n; i++)
		if (links.link[i].device == 0 && links.link[i].link_type == RT_LINK_NVLINK)
			l = &links.link[i];
	assert_int_equal(l->tx_total, 1024 * 1024);
	assert_int_equal(l->max_bps, 450000000000ULL);
	/* a counter going back is not this series: refused */
	recs[0].hdr.ts_ns = T0 + 3 * S;
	rt_correlator__event(c, &recs[0].hdr, false);
	rt_gpu_links(c, &links);
	assert_int_equal(links.refused, 1);
	assert_int_equal(links.records, 12);
	rt_correlator__free(c);
	clear_env();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_init_fails),
		cmocka_unit_test(test_counters_and_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
