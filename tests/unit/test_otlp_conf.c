// SPDX-License-Identifier: BSD-2-Clause
/* The OTLP exporter's rules: retry verdicts, Retry-After, backoff, headers,
 * OTEL_* variables and their precedence, partial_success, sampling. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "daemon/otlp_conf.h"

static void test_verdict(void **state)
{
	(void)state;
	assert_int_equal(rt_otlp_verdict(200), RT_OTLP_DONE);
	assert_int_equal(rt_otlp_verdict(202), RT_OTLP_DONE);
	assert_int_equal(rt_otlp_verdict(429), RT_OTLP_RETRY);
	assert_int_equal(rt_otlp_verdict(502), RT_OTLP_RETRY);
	assert_int_equal(rt_otlp_verdict(503), RT_OTLP_RETRY);
	assert_int_equal(rt_otlp_verdict(504), RT_OTLP_RETRY);
	assert_int_equal(rt_otlp_verdict(0), RT_OTLP_RETRY); /* no answer */
	assert_int_equal(rt_otlp_verdict(400), RT_OTLP_DROP);
	assert_int_equal(rt_otlp_verdict(413), RT_OTLP_DROP);
	assert_int_equal(rt_otlp_verdict(500), RT_OTLP_DROP);
	assert_int_equal(rt_otlp_verdict(404), RT_OTLP_DROP);
	assert_int_equal(rt_otlp_verdict(301), RT_OTLP_DROP);
}

static void test_retry_after(void **state)
{
	uint64_t ms = 0;
	time_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */

	(void)state;
	assert_int_equal(rt_otlp_retry_after_ms(" 7\r\n", now, &ms), 0);
	assert_int_equal(ms, 7000);
	assert_int_equal(rt_otlp_retry_after_ms("0", now, &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(rt_otlp_retry_after_ms("Sun, 06 Nov 1994 08:49:47 GMT\r\n", now, &ms), 0);
	assert_int_equal(ms, 10000);
	/* a date in the past: at once */
	assert_int_equal(rt_otlp_retry_after_ms("Sun, 06 Nov 1994 08:00:00 GMT", now, &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(rt_otlp_retry_after_ms("-1", now, &ms), -EINVAL);
	assert_int_equal(rt_otlp_retry_after_ms("7s", now, &ms), -EINVAL);
	assert_int_equal(rt_otlp_retry_after_ms("soon", now, &ms), -EINVAL);
	assert_int_equal(rt_otlp_retry_after_ms("", now, &ms), -EINVAL);
}

static void test_backoff(void **state)
{
	(void)state;
	/* equal jitter: half fixed, half random */
	assert_int_equal(rt_otlp_backoff_ms(0, 1000, 30000, 0), 500);
	assert_int_equal(rt_otlp_backoff_ms(0, 1000, 30000, 500), 1000);
	assert_int_equal(rt_otlp_backoff_ms(0, 1000, 30000, 501), 500);
	assert_int_equal(rt_otlp_backoff_ms(3, 1000, 30000, 0), 4000);
	assert_int_equal(rt_otlp_backoff_ms(10, 1000, 30000, 0), 15000);
	assert_true(rt_otlp_backoff_ms(40, 1000, 30000, UINT64_MAX) <= 30000);
}

static void test_headers(void **state)
{
	struct rt_otlp_header h[3];
	char why[160];

	(void)state;
	assert_int_equal(rt_otlp_parse_headers(" api-key = s%3Dcr%2Cet , x-team=a b,,", h, 3, why,
					       sizeof(why)),
			 2);
	assert_string_equal(h[0].name, "api-key");
	assert_string_equal(h[0].value, "s=cr,et");
	assert_string_equal(h[1].name, "x-team");
	assert_string_equal(h[1].value, "a b");
	assert_int_equal(rt_otlp_parse_headers("novalue", h, 3, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "novalue"));
	/* no header injection through a name or a decoded value */
	assert_int_equal(rt_otlp_parse_headers("a:b=1", h, 3, why, sizeof(why)), -EINVAL);
	assert_int_equal(rt_otlp_parse_headers("a=1%0d%0aX-Evil: 1", h, 3, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(rt_otlp_parse_headers("a=1,b=2,c=3,d=4", h, 3, why, sizeof(why)), -E2BIG);
	/* a % without two hex digits stays as it is */
	assert_int_equal(rt_otlp_parse_headers("a=50%", h, 3, why, sizeof(why)), 1);
	assert_string_equal(h[0].value, "50%");
}

/* a fake environment */
static const char *const *env_vars;

static const char *fake_get(const char *name)
{
	size_t n = strlen(name);
	int i;

	for (i = 0; env_vars[i]; i++)
		if (!strncmp(env_vars[i], name, n) && env_vars[i][n] == '=')
			return env_vars[i] + n + 1;
	return NULL;
}

static void test_env(void **state)
{
	static const char *const base[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=http://col:4318/",
					    "OTEL_EXPORTER_OTLP_HEADERS=a=1",
					    "OTEL_EXPORTER_OTLP_TRACES_HEADERS=b=2",
					    "OTEL_EXPORTER_OTLP_TIMEOUT=2500",
					    "OTEL_EXPORTER_OTLP_COMPRESSION=none",
					    "OTEL_SERVICE_NAME=inference",
					    "OTEL_TRACES_SAMPLER=traceidratio",
					    "OTEL_TRACES_SAMPLER_ARG=0.25",
					    NULL };
	static const char *const traces[] = {
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://col:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://x/custom/path",
		"OTEL_SDK_DISABLED=false", NULL
	};
	struct rt_otlp_env e;

	(void)state;
	env_vars = base;
	assert_int_equal(rt_otlp_env_read(fake_get, &e), 0);
	assert_string_equal(e.endpoint, "http://col:4318/v1/traces"); /* one slash */
	assert_string_equal(e.headers, "b=2"); /* the signal's own wins */
	assert_string_equal(e.timeout, "2500ms");
	assert_string_equal(e.compression, "none");
	assert_string_equal(e.service_name, "inference");
	assert_string_equal(e.sample_ratio, "0.25");
	assert_false(e.disabled);
	env_vars = traces;
	assert_int_equal(rt_otlp_env_read(fake_get, &e), 0);
	assert_string_equal(e.endpoint, "https://x/custom/path"); /* as is */
	assert_null(e.headers);
}

static void test_env_precedence(void **state)
{
	static const char *const vars[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=http://env:4318",
					    "OTEL_EXPORTER_OTLP_TIMEOUT=2500",
					    "OTEL_SERVICE_NAME=from-env", NULL };
	static const char *const bad[] = { "OTEL_EXPORTER_OTLP_COMPRESSION=brotli", NULL };
	static const char *const off[] = { "OTEL_EXPORTER_OTLP_ENDPOINT=http://env:4318",
					   "OTEL_SDK_DISABLED=true", NULL };
	struct rt_config c;
	char err[512];

	(void)state;
	env_vars = vars;
	rt_config_init(&c);
	assert_int_equal(rt_config_parse_string(&c, "t.conf",
						"[exporters]\notlp_service_name = from-file\n", err,
						sizeof(err)),
			 0);
	assert_int_equal(rt_config_env(&c, fake_get, err, sizeof(err)), 0);
	assert_string_equal(c.o.otlp.endpoint, "http://env:4318/v1/traces");
	assert_int_equal(c.o.otlp.timeout_ms, 2500);
	assert_string_equal(c.o.otlp.service_name, "from-file"); /* the file wins */
	assert_false(c.o.otlp.no_gzip); /* gzip unless told otherwise */
	rt_config_fini(&c);

	env_vars = bad;
	rt_config_init(&c);
	assert_int_equal(rt_config_env(&c, fake_get, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_COMPRESSION"));
	rt_config_fini(&c);

	env_vars = off;
	rt_config_init(&c);
	assert_int_equal(rt_config_env(&c, fake_get, err, sizeof(err)), 0);
	assert_null(c.o.otlp.endpoint);
	rt_config_fini(&c);
}

static void test_config_keys(void **state)
{
	struct rt_config c, f;
	char err[512];

	(void)state;
	rt_config_init(&c);
	assert_int_equal(c.o.otlp.queue, 2048);
	assert_int_equal(c.o.otlp.batch, 512);
	assert_int_equal(rt_config_parse_string(&c, "t.conf",
						"[exporters]\n"
						"otlp_endpoint = https://collector:4318/v1/traces\n"
						"otlp_headers = authorization=Bearer%20x\n"
						"otlp_compression = none\n"
						"otlp_timeout = 3s\n"
						"otlp_sample_ratio = 0.5\n"
						"otlp_max_spans_per_s = 100\n"
						"otlp_queue = 64\n"
						"otlp_batch = 8\n"
						"otlp_batch_delay = 200ms\n",
						err, sizeof(err)),
			 0);
	assert_string_equal(c.o.otlp.endpoint, "https://collector:4318/v1/traces");
	assert_true(c.o.otlp.no_gzip);
	assert_int_equal(c.o.otlp.timeout_ms, 3000);
	assert_true(c.o.otlp.sample_ratio == 0.5);
	assert_int_equal(c.o.otlp.max_spans_per_s, 100);
	assert_int_equal(c.o.otlp.queue, 64);
	assert_int_equal(c.o.otlp.batch, 8);
	assert_int_equal(c.o.otlp.batch_delay_ms, 200);
	/* a flag over the file */
	rt_config_init(&f);
	assert_int_equal(rt_config_set(&f, RT_CFG_OTLP_BATCH, "16", err, sizeof(err)), 0);
	assert_int_equal(rt_config_merge(&c, &f), 0);
	assert_int_equal(c.o.otlp.batch, 16);
	assert_true(c.set & (1ULL << RT_CFG_OTLP_BATCH_DELAY)); /* past bit 31 */
	rt_config_fini(&f);
	rt_config_fini(&c);

	rt_config_init(&c);
	assert_int_equal(rt_config_parse_string(&c, "t.conf",
						"[exporters]\notlp_endpoint = ftp://x\n", err,
						sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "otlp_endpoint"));
	rt_config_fini(&c);
	rt_config_init(&c);
	assert_int_equal(rt_config_parse_string(&c, "t.conf",
						"[exporters]\notlp_sample_ratio = 1.5\n", err,
						sizeof(err)),
			 -EINVAL);
	rt_config_fini(&c);
}

static void test_partial_success(void **state)
{
	const char *a = "{\"partialSuccess\":{\"rejectedSpans\":\"3\",\"errorMessage\":\"bad\"}}";
	const char *b = "{\"partialSuccess\":{\"rejectedSpans\":4}}";
	uint64_t n = 99;
	char msg[32];

	(void)state;
	assert_int_equal(rt_otlp_partial_success(a, strlen(a), &n, msg, sizeof(msg)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(msg, "bad");
	assert_int_equal(rt_otlp_partial_success(b, strlen(b), &n, msg, sizeof(msg)), 0);
	assert_int_equal(n, 4);
	assert_int_equal(rt_otlp_partial_success("{}", 2, &n, msg, sizeof(msg)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(rt_otlp_partial_success("", 0, &n, msg, sizeof(msg)), -EINVAL);
}

static void test_bucket(void **state)
{
	struct rt_otlp_bucket b = { 0 };
	uint64_t t = 5000000000ULL;
	int i, n = 0;

	(void)state;
	/* a burst of one second's worth, then nothing until time passes */
	for (i = 0; i < 20; i++)
		n += rt_otlp_bucket_take(&b, t, 10);
	assert_int_equal(n, 10);
	assert_false(rt_otlp_bucket_take(&b, t + 50000000, 10)); /* half a token */
	assert_true(rt_otlp_bucket_take(&b, t + 100000000, 10));
	/* ten seconds idle refill one second's worth, not ten */
	for (i = 0, n = 0; i < 200; i++)
		n += rt_otlp_bucket_take(&b, t + 10000000000ULL, 10);
	assert_int_equal(n, 10);
	for (i = 0, n = 0; i < 100; i++)
		n += rt_otlp_bucket_take(&b, t, 0); /* no cap */
	assert_int_equal(n, 100);
}

static void test_sampled(void **state)
{
	char id[33];
	int i, kept = 0;

	(void)state;
	assert_true(rt_otlp_sampled("0000000000000000ffffffffffffffff", 1.0));
	assert_false(rt_otlp_sampled("00000000000000000000000000000001", 0.0));
	assert_true(rt_otlp_sampled("00000000000000000000000000000001", 0.1));
	assert_false(rt_otlp_sampled("0000000000000000ffffffffffffffff", 0.9));
	/* about the ratio over spread ids */
	for (i = 0; i < 1000; i++) {
		snprintf(id, sizeof(id), "%016x%016llx", 0,
			 (unsigned long long)i * 0x9e3779b97f4a7c15ULL);
		kept += rt_otlp_sampled(id, 0.25);
	}
	assert_in_range(kept, 200, 300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict),	    cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_backoff),	    cmocka_unit_test(test_headers),
		cmocka_unit_test(test_env),	    cmocka_unit_test(test_env_precedence),
		cmocka_unit_test(test_config_keys), cmocka_unit_test(test_partial_success),
		cmocka_unit_test(test_sampled),	    cmocka_unit_test(test_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
