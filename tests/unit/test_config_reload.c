// SPDX-License-Identifier: BSD-2-Clause
/* SIGHUP's plan (which changed keys apply, which need a restart) and the jsonl_* keys. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"

#define BIT(k) (1ULL << (k))

static void parse(struct rt_config *c, const char *text)
{
	char err[512] = "";

	rt_config_init(c);
	if (rt_config_parse_string(c, "t.conf", text, err, sizeof(err)))
		fail_msg("%s", err);
}

static void test_live_keys(void **state)
{
	uint64_t live = 0;
	int k;

	(void)state;
	for (k = 0; k < RT_CFG__N; k++)
		if (rt_config_key_live((enum rt_cfg_key)k))
			live |= BIT(k);
	for (k = RT_CFG_OTLP_ENDPOINT; k <= RT_CFG_OTLP_BATCH_DELAY; k++)
		assert_true(live & BIT(k));
	live &= ~(BIT(RT_CFG_OTLP_BATCH_DELAY + 1) - BIT(RT_CFG_OTLP_ENDPOINT));
	assert_int_equal(live, BIT(RT_CFG_LOG_LEVEL) | BIT(RT_CFG_MAX_SPANS) |
				       BIT(RT_CFG_JSONL_PATH) | BIT(RT_CFG_JSONL_MAX_BYTES) |
				       BIT(RT_CFG_JSONL_KEEP));
}

static const char running_text[] = "[daemon]\nlog_level = info\n"
				   "[limits]\nring_size = 8M\nmax_spans = 100\nmax_requests = 50\n"
				   "[exporters]\njsonl_path = /var/log/a.jsonl\n";

static void test_plan(void **state)
{
	struct rt_config a, b;
	uint64_t apply, restart;

	(void)state;
	parse(&a, running_text);
	parse(&b, "[daemon]\nlog_level = debug\n"
		  "[limits]\nring_size = 16M\nmax_spans = 400\nmax_requests = 80\n"
		  "[exporters]\njsonl_path = /var/log/b.jsonl\njsonl_keep = 2\n");
	rt_config_reload_plan(&a, &b, &apply, &restart);
	assert_int_equal(apply, BIT(RT_CFG_LOG_LEVEL) | BIT(RT_CFG_MAX_SPANS) |
					BIT(RT_CFG_JSONL_PATH) | BIT(RT_CFG_JSONL_KEEP));
	assert_int_equal(restart, BIT(RT_CFG_RING_SIZE) | BIT(RT_CFG_MAX_REQUESTS));
	rt_config_fini(&b);

	/* every exporter key applies: a new collector needs no restart */
	parse(&b, "[daemon]\nlog_level = info\n"
		  "[limits]\nring_size = 8M\nmax_spans = 100\nmax_requests = 50\n"
		  "[exporters]\njsonl_path = /var/log/a.jsonl\n"
		  "otlp_endpoint = http://127.0.0.1:4318/v1/traces\notlp_queue = 64\n");
	rt_config_reload_plan(&a, &b, &apply, &restart);
	assert_int_equal(apply, BIT(RT_CFG_OTLP_ENDPOINT) | BIT(RT_CFG_OTLP_QUEUE));
	assert_int_equal(restart, 0);
	rt_config_fini(&b);

	/* the same values written differently: nothing to do */
	parse(&b, "[limits]\nmax_requests=50\nring_size = 8192K\nmax_spans = 100\n"
		  "[exporters]\njsonl_path = /var/log/a.jsonl\njsonl_max_bytes = 64M\n");
	rt_config_reload_plan(&a, &b, &apply, &restart);
	assert_int_equal(apply, 0);
	assert_int_equal(restart, 0);
	rt_config_fini(&b);

	/* a removed jsonl_path turns the exporter off: applied */
	parse(&b, "[limits]\nring_size = 8M\nmax_spans = 100\nmax_requests = 50\n");
	rt_config_reload_plan(&a, &b, &apply, &restart);
	assert_int_equal(apply, BIT(RT_CFG_JSONL_PATH));
	assert_int_equal(restart, 0);
	rt_config_fini(&b);
	rt_config_fini(&a);
}

/* A key a flag gives wins in both layers: a change in the file is no change. */
static void test_flags_hold(void **state)
{
	struct rt_config a, b, flags;
	char why[256];
	uint64_t apply, restart;

	(void)state;
	rt_config_init(&flags);
	assert_int_equal(rt_config_set(&flags, RT_CFG_RING_SIZE, "32M", why, sizeof(why)), 0);
	assert_int_equal(rt_config_set(&flags, RT_CFG_JSONL_PATH, "/x.jsonl", why, sizeof(why)), 0);
	parse(&a, running_text);
	assert_int_equal(rt_config_merge(&a, &flags), 0);
	parse(&b, "[limits]\nring_size = 1M\nmax_spans = 100\nmax_requests = 50\n"
		  "[exporters]\njsonl_path = /var/log/c.jsonl\njsonl_max_bytes = 1M\n");
	assert_int_equal(rt_config_merge(&b, &flags), 0);
	rt_config_reload_plan(&a, &b, &apply, &restart);
	assert_int_equal(apply, BIT(RT_CFG_JSONL_MAX_BYTES));
	assert_int_equal(restart, 0);
	rt_config_fini(&b);
	rt_config_fini(&a);
	rt_config_fini(&flags);
}

/* What main.c's on_hup does with the plan: the applied keys join the running config. */
static void test_take_applied(void **state)
{
	struct rt_config a, b, took;
	uint64_t apply, restart;

	(void)state;
	parse(&a, running_text);
	parse(&b, "[limits]\nring_size = 16M\nmax_spans = 100\nmax_requests = 50\n"
		  "[exporters]\njsonl_path = /var/log/b.jsonl\njsonl_keep = 9\n");
	rt_config_reload_plan(&a, &b, &apply, &restart);
	took = b;
	took.set = apply;
	assert_int_equal(rt_config_merge(&a, &took), 0);
	rt_config_fini(&b); /* a holds copies */
	assert_string_equal(a.o.jsonl_path, "/var/log/b.jsonl");
	assert_int_equal(a.o.jsonl_keep, 9);
	assert_int_equal(a.o.ring_bytes, 8u << 20); /* needs a restart: the running value */
	rt_config_fini(&a);
}

static void test_jsonl_values(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} bad[] = {
		{ "[exporters]\njsonl_max_bytes = 512\n",
		  "t.conf:2: key 'jsonl_max_bytes': bad size '512' (want 0 or 1K to 1024G, a "
		  "number with optional K/M/G)" },
		{ "[exporters]\njsonl_max_bytes = 8Q\n",
		  "t.conf:2: key 'jsonl_max_bytes': bad size '8Q' (want 0 or 1K to 1024G, a "
		  "number with optional K/M/G)" },
		{ "[exporters]\n\njsonl_keep = 1001\n",
		  "t.conf:3: key 'jsonl_keep': bad number '1001' (want 0 to 1000)" },
		{ "[exporters]\njsonl_keep = -1\n",
		  "t.conf:2: key 'jsonl_keep': bad number '-1' (want 0 to 1000)" },
		{ "[daemon]\njsonl_path = /x\n",
		  "t.conf:2: key 'jsonl_path': belongs in [exporters], not [daemon]" },
	};
	struct rt_config c;
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rt_config_init(&c);
		err[0] = '\0';
		assert_int_equal(
			rt_config_parse_string(&c, "t.conf", bad[i].text, err, sizeof(err)),
			-EINVAL);
		assert_string_equal(err, bad[i].want);
		rt_config_fini(&c);
	}
	rt_config_init(&c);
	assert_null(c.o.jsonl_path);
	assert_int_equal(c.o.jsonl_max_bytes, 64ULL << 20);
	assert_int_equal(c.o.jsonl_keep, 5);
	rt_config_fini(&c);
	parse(&c, "[exporters]\njsonl_path = /var/log/reqtrace/spans.jsonl\n"
		  "jsonl_max_bytes = 3G\njsonl_keep = 0\n");
	assert_string_equal(c.o.jsonl_path, "/var/log/reqtrace/spans.jsonl");
	assert_int_equal(c.o.jsonl_max_bytes, 3ULL << 30);
	assert_int_equal(c.o.jsonl_keep, 0);
	rt_config_fini(&c);
	parse(&c, "[exporters]\njsonl_path = off\njsonl_max_bytes = 0\n");
	assert_null(c.o.jsonl_path);
	assert_int_equal(c.o.jsonl_max_bytes, 0);
	rt_config_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_keys),    cmocka_unit_test(test_plan),
		cmocka_unit_test(test_flags_hold),   cmocka_unit_test(test_take_applied),
		cmocka_unit_test(test_jsonl_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
