// SPDX-License-Identifier: BSD-2-Clause
/*
 * json_walk.c against cJSON itself: the facts of a whole JSON text as the
 * tree walk read them before (kept below, verbatim, as the oracle) and as
 * the walk reads them now must be the same, fact for fact, on
 * hand-made edge cases of cJSON's grammar, the timings fuzz corpus, and
 * seeded mutations of both.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define TOKENS_MAX 1e15

/* ---- the oracle: the cJSON tree walk http_json.c used ------------------- */

static bool number_value(const cJSON *it, double *v)
{
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return false;
	*v = it->valuedouble;
	return true;
}

static void set_tokens(struct rt_http_json_facts *f, double v)
{
	if (f->tokens_out < 0 && isfinite(v) && v >= 0 && v <= TOKENS_MAX)
		f->tokens_out = (int64_t)v;
}

static void set_tokens_from(struct rt_http_json_facts *f, const cJSON *it)
{
	double v;

	if (number_value(it, &v))
		set_tokens(f, v);
}

static void add_numbers(const cJSON *obj, const char *prefix, struct rt_http_json_facts *f)
{
	const cJSON *it;
	double v;

	cJSON_ArrayForEach(it, obj)
	{
		if (it->string && number_value(it, &v))
			rt_http_report(f->reported, &f->n_reported, prefix, it->string,
				       strlen(it->string), v);
	}
}

static void add_usage(const cJSON *usage, const cJSON *timings, struct rt_http_json_facts *f)
{
	if (cJSON_IsObject(usage)) {
		f->usage = true;
		add_numbers(usage, "usage", f);
		set_tokens_from(f, cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"));
	}
	if (cJSON_IsObject(timings)) {
		f->usage = true;
		add_numbers(timings, "timings", f);
		set_tokens_from(f, cJSON_GetObjectItemCaseSensitive(timings, "predicted_n"));
	}
}

/* An id worth an attribute: 1 to max-1 printable ASCII characters, no quote or backslash. */
static void set_response_id(struct rt_http_json_facts *f, const char *s, size_t n)
{
	size_t i;

	if (!n || n >= sizeof(f->response_id))
		return;
	for (i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
			return;
	memcpy(f->response_id, s, n);
	f->response_id[n] = '\0';
}

static bool nonempty_string(const cJSON *it)
{
	return cJSON_IsString(it) && it->valuestring && it->valuestring[0];
}

static void add_count(const cJSON *root, const char *name, struct rt_http_json_facts *f)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);
	double v;

	if (number_value(it, &v))
		rt_http_report(f->reported, &f->n_reported, NULL, name, strlen(name), v);
}

static void from_tree(const cJSON *root, struct rt_http_json_facts *f)
{
	const cJSON *choices, *c, *content;

	if (!cJSON_IsObject(root))
		return;
	content = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (cJSON_IsString(content))
		set_response_id(f, content->valuestring, strlen(content->valuestring));
	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	if (cJSON_IsArray(choices)) {
		f->text_shape = true;
		cJSON_ArrayForEach(c, choices)
		{
			const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c, "delta");
			const cJSON *msg = cJSON_GetObjectItemCaseSensitive(c, "message");

			if (nonempty_string(cJSON_GetObjectItemCaseSensitive(c, "text")) ||
			    nonempty_string(cJSON_GetObjectItemCaseSensitive(delta, "content")) ||
			    nonempty_string(cJSON_GetObjectItemCaseSensitive(msg, "content")))
				f->content = true;
		}
	}
	/* llama.cpp's native /completion: {"content":"...", ...} */
	content = cJSON_GetObjectItemCaseSensitive(root, "content");
	if (cJSON_IsString(content)) {
		f->text_shape = true;
		if (nonempty_string(content))
			f->content = true;
	}
	add_usage(cJSON_GetObjectItemCaseSensitive(root, "usage"),
		  cJSON_GetObjectItemCaseSensitive(root, "timings"), f);
	add_count(root, "tokens_predicted", f);
	add_count(root, "tokens_evaluated", f);
	set_tokens_from(f, cJSON_GetObjectItemCaseSensitive(root, "tokens_predicted"));
}

static void oracle(const char *text, size_t len, struct rt_http_json_facts *f)
{
	cJSON *root;

	memset(f, 0, sizeof(*f));
	f->tokens_out = -1;
	root = cJSON_ParseWithLength(text, len);
	if (!root)
		return;
	f->parsed = true;
	from_tree(root, f);
	cJSON_Delete(root);
}

/* ---- the comparison ------------------------------------------------------ */

static bool shallow(const char *s, size_t n)
{
	bool in_str = false, esc = false;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		if (in_str) {
			if (esc)
				esc = false;
			else if (s[i] == '\\')
				esc = true;
			else if (s[i] == '"')
				in_str = false;
		} else if (s[i] == '"') {
			in_str = true;
		} else if ((s[i] == '{' || s[i] == '[') && ++depth > RT_HTTP_JSON_DEPTH_MAX) {
			return false;
		} else if (s[i] == '}' || s[i] == ']') {
			depth--;
		}
	}
	return true;
}

static unsigned long compared, parsed;

static void same(const char *text, size_t len)
{
	struct rt_http_json_facts a, b;

	if (!shallow(text, len))
		return; /* rt_http_json_facts never hands those on */
	oracle(text, len, &a);
	memset(&b, 0, sizeof(b));
	b.tokens_out = -1;
	(void)rt_json_walk_facts(text, len, &b);
	compared++;
	parsed += a.parsed;
	if (a.parsed != b.parsed || a.content != b.content || a.text_shape != b.text_shape ||
	    a.usage != b.usage || a.tokens_out != b.tokens_out ||
	    strcmp(a.response_id, b.response_id) || a.n_reported != b.n_reported) {
		fprintf(stderr,
			"differs on %zu bytes [%.*s]: parsed %d/%d content %d/%d shape %d/%d "
			"usage %d/%d tokens %lld/%lld id '%s'/'%s' reported %u/%u\n",
			len, (int)(len > 300 ? 300 : len), text, a.parsed, b.parsed, a.content,
			b.content, a.text_shape, b.text_shape, a.usage, b.usage,
			(long long)a.tokens_out, (long long)b.tokens_out, a.response_id,
			b.response_id, a.n_reported, b.n_reported);
		fail();
	}
	for (uint32_t i = 0; i < a.n_reported; i++) {
		if (strcmp(a.reported[i].name, b.reported[i].name) ||
		    memcmp(&a.reported[i].value, &b.reported[i].value, sizeof(double))) {
			fprintf(stderr, "differs on [%.*s]: reported %u: %s=%g / %s=%g\n",
				(int)(len > 300 ? 300 : len), text, i, a.reported[i].name,
				a.reported[i].value, b.reported[i].name, b.reported[i].value);
			fail();
		}
	}
}

static void same_str(const char *s)
{
	same(s, strlen(s));
}

static const char *const cases[] = {
	"{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"text\":\"tok\","
	"\"index\":0,\"finish_reason\":null}]}",
	"{\"id\":\"chatcmpl-9\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]"
	"}",
	"{\"id\":\"chatcmpl-9\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}",
	"{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":5,"
	"\"completion_tokens\":7,\"total_tokens\":12}}",
	"{\"choices\":[],\"usage\":{\"completion_tokens\":1e3,\"x\":-0.5,\"bad name\":1,"
	"\"completion_tokens\":9}}",
	"{\"content\":\"abc\",\"stop\":true,\"tokens_predicted\":12,\"tokens_evaluated\":30,"
	"\"timings\":{\"prompt_n\":30,\"prompt_ms\":12.5,\"predicted_n\":12,\"predicted_ms\":99.1}"
	"}",
	"{\"content\":\"\",\"timings\":{\"predicted_n\":1e999}}",
	"{\"tokens_predicted\":-1,\"tokens_predicted\":4}",
	"{\"id\":\"a\",\"id\":\"b\"}",
	"{\"id\":\"\\u0041\\u0042\"}",
	"{\"id\":\"a\\u0000b\"}",
	"{\"id\":\"\\uZZZZ\"}",
	"{\"id\":\"\\uD83D\\uDE00\"}",
	"{\"id\":\"\\uD83D\"}",
	"{\"id\":\"\\uDE00x\"}",
	"{\"id\":\"\\uD83D\\u0041\"}",
	"{\"id\":\"\\q\"}",
	"{\"id\":\"a b\"}",
	"{\"id\":\"a\\\"b\"}",
	"{\"id\":\"\\u12\"}",
	"{\"id\":\"\\u000\\\\\"}",
	"{\"\\u0069d\":\"x\"}",
	"{\"id\\u0000zz\":\"x\"}",
	"{\"id\":\"x\"} trailing garbage",
	"{\"id\":\"x\"",
	"{\"id\":\"x\",}",
	"{,\"id\":\"x\"}",
	"{\"id\" \"x\"}",
	"\xEF\xBB\xBF{\"id\":\"bom\"}",
	"\xEF\xBB\xBF{}",
	"  \x01\x02{\"id\":\"ctl-ws\"}",
	"[1,2,3]",
	"\"just a string\"",
	"-",
	"01",
	"-0",
	"1.2.3",
	"{\"usage\":{\"a\":1.2.3}}",
	"{\"usage\":{\"a\":+1}}",
	"{\"usage\":{\"a\":.5}}",
	"{\"usage\":{\"a\":1e}}",
	"{\"usage\":{\"a\":-e1}}",
	"{\"usage\":{\"a\":0x10}}",
	"{\"usage\":{\"a\":1111111111111111111111111111111111111111111111111111111111111111111111}"
	"}",
	"{\"usage\":{\"a\":11111111111111111111111111111111111111111111111111111111111111.5}}",
	"{\"usage\":{\"a\":nul}}",
	"{\"usage\":{\"a\":true,\"b\":false,\"c\":null,\"d\":[1,{\"e\":2}],\"f\":{\"g\":3}}}",
	"{\"usage\":[1,2],\"timings\":\"no\",\"tokens_predicted\":\"7\"}",
	"{\"choices\":{\"text\":\"not an array\"}}",
	"{\"choices\":[1,\"a\",[{\"text\":\"nested\"}],null,{\"text\":\"\"},{\"text\":5}]}",
	"{\"choices\":[{\"delta\":[{\"content\":\"x\"}]},{\"message\":{\"content\":\"\\u0000x\"}}]"
	"}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\n\"}}]}",
	"{\"choices\" : [ { \"text\" : \"spaced\" } ] , \"id\" : \"sp\" }",
	"{\"a\":\"raw\x01control\",\"id\":\"x\"}",
	"{\"a\":\"\xc3\xa9\",\"id\":\"\xc3\xa9\"}",
	"{\"usage\":{\"\\u0061\":1,\"ab\\u0000cd\":2,\"\\\\\":3}}",
	"{}",
	"{ }",
	"{",
	"}",
	"",
	"   ",
	"nulls",
	"truex",
	"{\"a\":tru}",
	"{\"usage\":{\"completion_tokens\":5}, \"usage\":{\"completion_tokens\":6}}",
	"{\"timings\":{\"predicted_n\":3},\"usage\":{\"completion_tokens\":4}}",
	/* facts read as the walk validates: keys cut at a NUL, late and repeated members */
	"{\"choices\\u0000x\":[{\"text\":\"a\"}],\"usage\\u0000\":{\"total_tokens\":2}}",
	"{\"content\\u0000x\":\"a\",\"choices\":[{\"delta\\u0000\":{\"content\\u0000z\":\"b\"}}]}",
	"{\"timings\":{\"prompt_n\":1,\"predicted_n\":3},\"usage\":{\"completion_tokens\":4,"
	"\"prompt_n\":2},\"timings\":{\"predicted_n\":9}}",
	"{\"timings\":{\"predicted_n\":3},\"usage\":5,\"tokens_predicted\":8}",
	"{\"usage\":{\"completion_tokens\":4,\"total_tokens\":5},\"choices\":[}",
	"{\"usage\":{\"completion_tokens\":\"4\",\"completion_tokens\":5},\"timings\":{"
	"\"predicted_n\":6}}",
	"{\"usage\":{\"completion_tokens\":1e999,\"x\":[1,{\"y\":2}]},\"timings\":{\"predicted_n\":"
	"6}}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\u0000\"}},{\"message\":{\"content\":\"\\u00zz\"}"
	"}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\ud83d\\ude00\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\\t\"},\"delta\":{\"content\":\"x\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"\",\"content\":\"x\"},\"text\":\"\"}]}",
	"{\"choices\":[{\"message\":{\"content\":\"\\u0041\"}}],\"usage\":{}}",
	"{\"timings\":{},\"usage\":{\"a\":1}}",
};

/* llama-server's id_slot: read by both passes, never reported */
static void test_id_slot(void **state)
{
	static const struct {
		const char *text;
		bool partial;
		int32_t want;
	} cs[] = {
		{ "{\"id_slot\":3,\"content\":\"x\"}", false, 3 },
		{ "{\"id_slot\":3,\"content\":\"x\"}", true, 3 },
		{ "{\"id_slot\":0}", false, 0 },
		{ "{\"id_slot\":-1}", false, -1 },
		{ "{\"id_slot\":1.5}", false, -1 },
		{ "{\"id_slot\":\"2\"}", false, -1 },
		{ "{\"a\":{\"id_slot\":4}}", false, -1 },
		{ "{\"content\":\"x\"}", false, -1 },
	};
	struct rt_http_json_facts f;

	(void)state;
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		rt_http_json_facts(cs[i].text, strlen(cs[i].text), cs[i].partial, &f);
		assert_int_equal(f.id_slot, cs[i].want);
		for (uint32_t k = 0; k < f.n_reported; k++)
			assert_string_not_equal(f.reported[k].name, "id_slot");
	}
}

/*
 * A kept head and tail is scanned from an index of where the keys occur;
 * past its room (64 hits) the scan searches the text as it did before the
 * index: the same facts either way.
 */
static void test_partial_many_keys(void **state)
{
	static char text[8192];
	struct rt_http_json_facts few, many;
	const char *tail = "\"usage\":{\"completion_tokens\":3},\"timings\":{\"predicted_n\":4},"
			   "\"tokens_predicted\":5,\"id_slot\":2,\"content\":\"y\"}";
	size_t n = 0;

	(void)state;
	n += (size_t)snprintf(text, sizeof(text), "{\"id\":\"r-1\",");
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", tail);
	rt_http_json_facts(text, n, true, &few);
	n = (size_t)snprintf(text, sizeof(text), "{\"id\":\"r-1\",");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "\"text\":\"\",\"usage\":[%d],\"content\" :\"\",", i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", tail);
	rt_http_json_facts(text, n, true, &many);
	assert_true(few.content && many.content && few.usage && many.usage);
	assert_int_equal(few.tokens_out, 3);
	assert_int_equal(many.tokens_out, 3);
	assert_int_equal(many.id_slot, 2);
	assert_string_equal(many.response_id, "r-1");
	assert_int_equal(many.n_reported, few.n_reported);
	for (uint32_t k = 0; k < few.n_reported; k++) {
		assert_string_equal(many.reported[k].name, few.reported[k].name);
		assert_true(many.reported[k].value == few.reported[k].value);
	}
}

/* a literal with NULs in it, whole */
#define same_len(lit) same((lit), sizeof(lit) - 1)

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same_str(cases[i]);
	/* a NUL inside the text, and texts cut at every length */
	same("{\"id\":\"a\0b\"}", 12);
	same("{\"id\":\"x\"}\0garbage", 18);
	/* raw NULs in keys: compared in place, cut as a C string is */
	same_len("{\"usage\0x\":{\"completion_tokens\0\":3},\"choices\0\":[{\"delta\":{"
		 "\"content\0\":\"a\"}}]}");
	same_len("{\"us\0age\":{\"a\":1},\"choices\":[{\"text\0\":\"a\",\"\0text\":\"b\"}]}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t n = 0; n < strlen(cases[i]); n++)
			same(cases[i], n);
	assert_true(compared > 100);
}

/* ---- mutations ---------------------------------------------------------- */

static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void mutate_and_compare(const char *base, size_t len, unsigned int rounds)
{
	static const char dict[] =
		"{}[],:\"\\u0123456789abcdefABCDEF.eE+- \t\n\x01\x00\xef\xbb\xbf";
	char buf[8192];

	for (unsigned int r = 0; r < rounds; r++) {
		size_t n = len < sizeof(buf) - 64 ? len : sizeof(buf) - 64;
		unsigned int edits = 1 + (unsigned int)(rnd() % 4);

		memcpy(buf, base, n);
		for (unsigned int e = 0; e < edits && n; e++) {
			size_t at = (size_t)(rnd() % n);
			char c = dict[rnd() % (sizeof(dict) - 1)];

			switch (rnd() % 4) {
			case 0: /* replace */
				buf[at] = c;
				break;
			case 1: /* insert */
				if (n < sizeof(buf) - 1) {
					memmove(buf + at + 1, buf + at, n - at);
					buf[at] = c;
					n++;
				}
				break;
			case 2: /* delete */
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
				break;
			default: /* cut */
				n = at;
				break;
			}
		}
		same(buf, n);
	}
}

static void test_mutations(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		mutate_and_compare(cases[i], strlen(cases[i]), 4000);
	assert_true(parsed > 1000);
}

static void test_corpus(void **state)
{
	char path[4096], buf[8192];
	const char *dir = RT_SOURCE_DIR "/tests/fuzz/corpus/timings";
	struct dirent *de;
	DIR *d = opendir(dir);
	unsigned int files = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		FILE *fp;
		size_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fp = fopen(path, "rb");
		if (!fp)
			continue;
		n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		files++;
		same(buf, n);
		if (n > 1) {
			same(buf + 1, n - 1); /* the harness's first byte is a mode */
			mutate_and_compare(buf + 1, n - 1, 2000);
		}
	}
	closedir(d);
	assert_true(files >= 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_slot), cmocka_unit_test(test_partial_many_keys),
		cmocka_unit_test(test_cases),	cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_corpus),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	fprintf(stderr, "test_json_walk: %lu texts compared, %lu of them JSON\n", compared, parsed);
	return rc;
}
