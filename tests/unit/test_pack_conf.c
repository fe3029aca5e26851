// SPDX-License-Identifier: BSD-2-Clause
/*
 * Engine packs (src/sources/pack_conf.c, pack_match.c, docs/packs.md):
 *
 *   - configs/packs parses: the llama.cpp packs and libgomp, as written;
 *   - bad pack files are refused with FILE:LINE and what is wrong;
 *   - matching on the fake libllama fixtures (tests/unit/packs.cmake): the
 *     mid-2025 library picks llama-cpp-2025 from .dynsym, the older one
 *     llama-cpp-2024 (the deprecated seq_rm name skipped by unless=), a
 *     program carrying the functions is found through .symtab, a stripped
 *     one is named but cannot attach; the system's libgomp picks libgomp.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <reqtrace/event.h>
#include "sources/gpu_elf.h"
#include "sources/pack.h"

static struct rt_packs *packs;

static int load_packs(void **state)
{
	char err[512] = "";

	(void)state;
	if (rt_packs_load_dir(RT_SOURCE_DIR "/configs/packs", &packs, err, sizeof(err))) {
		print_error("%s\n", err);
		return -1;
	}
	return 0;
}

static int free_packs(void **state)
{
	(void)state;
	free(packs);
	packs = NULL;
	return 0;
}

static const struct rt_pack *pack_named(const char *name)
{
	uint32_t i;

	for (i = 0; i < packs->n; i++)
		if (!strcmp(packs->packs[i].name, name))
			return &packs->packs[i];
	fail_msg("no pack %s", name);
	return NULL;
}

static const struct rt_pack_probe *probe_of(const struct rt_pack *p, const char *sym)
{
	uint32_t i;

	for (i = 0; i < p->n_probes; i++)
		if (!strcmp(p->probes[i].sym, sym))
			return &p->probes[i];
	fail_msg("%s probes no %s", p->name, sym);
	return NULL;
}

static void test_configs(void **state)
{
	const struct rt_pack *p;
	const struct rt_pack_probe *pr;

	(void)state;
	assert_int_equal(packs->n, 3);
	/* file-name order: the index is the wire pack id */
	assert_string_equal(packs->packs[0].name, "libgomp");
	assert_string_equal(packs->packs[1].name, "llama-cpp-2024");
	assert_string_equal(packs->packs[2].name, "llama-cpp-2025");

	p = pack_named("llama-cpp-2025");
	assert_string_equal(p->engine, "llama.cpp");
	assert_string_equal(p->version, "2025.06");
	assert_int_equal(p->n_symbols, 3);
	assert_int_equal(p->n_files, 3);
	pr = probe_of(p, "llama_decode");
	assert_int_equal(pr->role, RT_PACK_DECODE);
	assert_int_equal(pr->reader, RT_PACK_READER_LLAMA_BATCH);
	assert_true(pr->ret);
	assert_int_equal(pr->n_args, 0);
	pr = probe_of(p, "llama_tokenize");
	assert_int_equal(pr->role, RT_PACK_TOKENIZE);
	assert_int_equal(pr->n_args, 2);
	assert_int_equal(pr->args[0], 3);
	assert_int_equal(pr->args[1], 5);
	pr = probe_of(p, "llama_memory_seq_rm");
	assert_int_equal(pr->role, RT_PACK_SEQ_RM);
	assert_int_equal(pr->n_args, 3);
	assert_int_equal(pr->args[0], 2);
	assert_int_equal(pr->arg_type[2], RT_PACK_I32);
	assert_int_equal(pr->ret_type, RT_PACK_BOOL);
	pr = probe_of(p, "llama_get_logits_ith");
	assert_int_equal(pr->ret_type, RT_PACK_I64);
	pr = probe_of(p, "llama_synchronize");
	assert_int_equal(pr->ret_type, RT_PACK_VOID);

	p = pack_named("llama-cpp-2024");
	assert_int_equal(p->n_without, 1);
	assert_string_equal(p->without[0], "llama_memory_seq_rm");
	pr = probe_of(p, "llama_kv_cache_seq_rm");
	assert_string_equal(pr->unless, "llama_kv_self_seq_rm");

	p = pack_named("libgomp");
	pr = probe_of(p, "GOMP_parallel");
	assert_int_equal(pr->role, RT_PACK_REGION);
	assert_true(pr->ret);
	assert_int_equal(pr->args[0], 3);
}

static void test_roles(void **state)
{
	(void)state;
	assert_int_equal(rt_pack_role_of("tokenize"), RT_PACK_TOKENIZE);
	assert_int_equal(rt_pack_role_of("region"), RT_PACK_REGION);
	assert_int_equal(rt_pack_role_of("prefill"), 0);
	assert_string_equal(rt_pack_role_name(RT_PACK_SEQ_RM), "seq_rm");
	assert_null(rt_pack_role_name(0));
	assert_null(rt_pack_role_name(99));
}

#define HEAD "[pack]\nname = t\nversion = 1\nsymbols = f\n[probes]\n"

static const struct bad {
	const char *text;
	const char *err; /* the whole message after "bad.conf:" */
} bads[] = {
	{ "name = x\n", "1: 'name' outside a section" },
	{ "[pack]\nname = x\n[other]\n", "3: unknown section '[other]' ([pack], [probes])" },
	{ "[pack]\nname = x y\n", "2: name 'x y': letters, digits, '.', '_' and '-' only" },
	{ "[pack]\nname = x\nname = y\n", "3: 'name' given twice" },
	{ "[pack]\ncolour = red\n",
	  "2: unknown key 'colour' in [pack] (name, version, engine, files, symbols, without)" },
	{ "[pack]\njust words\n", "2: 'just words': not 'key = value'" },
	{ "[pack]\nsymbols = a 1b\n", "2: symbols: '1b' is not a symbol name" },
	{ "[pack]\nsymbols = a a\n", "2: symbols: 'a' listed twice" },
	{ "[pack]\nfiles = lib/x.so\n",
	  "2: files: 'lib/x.so' is not a file name pattern (no '/')" },
	{ "[pack]\nsymbols =\n", "2: symbols: empty list" },
	{ "[pack]\nsymbols = a b c d e f g h i\n", "2: symbols: more than 8 entries" },
	{ HEAD "f = prefill\n", "6: f: unknown role 'prefill' (tokenize, detokenize, decode, "
				"sync, seq_rm, region)" },
	{ HEAD "f =\n", "6: f: no role (tokenize, detokenize, decode, sync, seq_rm, region)" },
	{ HEAD "f = sync args=0\n", "6: f: args '0': argument numbers 1..12" },
	{ HEAD "f = sync args=13\n", "6: f: args '13': argument numbers 1..12" },
	{ HEAD "f = sync args=1,2,3,4,5\n", "6: f: more than 4 args" },
	{ HEAD "f = sync args=1,\n", "6: f: args '1,': argument numbers 1..12, comma-separated" },
	{ HEAD "f = sync args=x\n", "6: f: args 'x': argument numbers 1..12, comma-separated" },
	{ HEAD "f = sync batch\n", "6: f: 'batch' reads llama_decode's batch: role decode only" },
	{ HEAD "f = sync return return\n", "6: f: 'return' given twice" },
	{ HEAD "f = sync fast\n", "6: f: unknown option 'fast' (return[=TYPE], batch, "
				  "args=N[:TYPE],..., unless=SYMBOL)" },
	{ HEAD "f = sync args=1:void\n", "6: f: args '1:void': a type is i32, i64, ptr or bool" },
	{ HEAD "f = sync args=1:x,2\n", "6: f: args '1:x,2': a type is i32, i64, ptr or bool" },
	{ HEAD "f = sync return=u8\n",
	  "6: f: 'return=u8': a return type is i32, i64, ptr, bool or void" },
	{ HEAD "f = sync unless=f\n", "6: f: unless= names the probe itself" },
	{ HEAD "f = sync\nf = decode\n", "7: f: probed twice" },
	{ HEAD "f-g = sync\n", "6: 'f-g' is not a symbol name" },
	{ "[pack]\nversion = 1\nsymbols = f\n[probes]\nf = sync\n", "5: [pack] has no name" },
	{ "[pack]\nname = t\nsymbols = f\n[probes]\nf = sync\n", "5: [pack] has no version" },
	{ "[pack]\nname = t\nversion = 1\n[probes]\nf = sync\n",
	  "5: [pack] has no symbols (the functions a file must carry)" },
	{ "[pack]\nname = t\nversion = 1\nsymbols = f\n", "4: no [probes]" },
	{ "[pack]\nname = t\nversion = 1\nsymbols = f\nwithout = f\n[probes]\nf = sync\n",
	  "7: 'f' is in both symbols and without" },
	{ "[pack]\nname = t\nversion = 1\nsymbols = f\nwithout = g\n[probes]\ng = sync\n",
	  "7: 'g' is probed but listed in without" },
	{ "[pack]\n[pack]\n", "2: [pack] given twice" },
};

static void test_bad_files(void **state)
{
	struct rt_pack *p = malloc(sizeof(*p));
	char err[512], want[512];
	size_t i;

	(void)state;
	assert_non_null(p);
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		err[0] = '\0';
		if (rt_pack_parse("bad.conf", bads[i].text, p, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted: %s", bads[i].text);
		snprintf(want, sizeof(want), "bad.conf:%s", bads[i].err);
		if (strcmp(err, want))
			fail_msg("for:\n%s\ngot  '%s'\nwant '%s'", bads[i].text, err, want);
	}
	/* a long line */
	{
		char *t = malloc(2000);

		assert_non_null(t);
		memset(t, 'a', 1999);
		t[1999] = '\0';
		assert_int_equal(rt_pack_parse("bad.conf", t, p, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, "bad.conf:1: line longer than 511 characters");
		free(t);
	}
	/* comments, blank lines, spaces, CRLF, the engine defaulting to the name */
	assert_int_equal(rt_pack_parse("ok.conf",
				       "# c\r\n\r\n [pack] \nname=t # x\nversion =1\n"
				       "symbols = f  g\n[probes]\n"
				       "  f = decode batch return=i64 args=1:ptr,2:bool,3:i32\n",
				       p, err, sizeof(err)),
			 0);
	assert_string_equal(p->engine, "t");
	assert_int_equal(p->n_symbols, 2);
	assert_int_equal(p->probes[0].n_args, 3);
	assert_int_equal(p->probes[0].arg_type[0], RT_PACK_I64);
	assert_int_equal(p->probes[0].arg_type[1], RT_PACK_BOOL);
	assert_int_equal(p->probes[0].arg_type[2], RT_PACK_I32);
	assert_int_equal(p->probes[0].ret_type, RT_PACK_I64);
	free(p);
}

static void test_load_dir_errors(void **state)
{
	char dir[] = "/tmp/rt-packs-XXXXXX", path[600], err[512] = "";
	struct rt_packs *ps = NULL;
	FILE *f;

	(void)state;
	assert_int_equal(rt_packs_load_dir("/nonexistent/packs", &ps, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/packs: No such file or directory");
	assert_non_null(mkdtemp(dir));
	/* empty: no packs, no error */
	assert_int_equal(rt_packs_load_dir(dir, &ps, err, sizeof(err)), 0);
	assert_int_equal(ps->n, 0);
	free(ps);
	snprintf(path, sizeof(path), "%s/a.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(HEAD "f = sync\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/b.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(HEAD "f = sync\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/ignored.txt", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(rt_packs_load_dir(dir, &ps, err, sizeof(err)), -EINVAL);
	snprintf(path, sizeof(path), "%s/b.conf: pack 't' already defined by %s/a.conf", dir, dir);
	assert_string_equal(err, path);
	snprintf(path, sizeof(path), "%s/b.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(HEAD "f = nope\n", f);
	fclose(f);
	assert_int_equal(rt_packs_load_dir(dir, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/b.conf:6: f: unknown role 'nope'"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/a.conf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ignored.txt", dir);
	unlink(path);
	rmdir(dir);
}

/* ---- matching ---- */

static const char *site_sym(const struct rt_pack_pick *pk, uint32_t k)
{
	return packs->packs[pk->pack].probes[pk->sites[k].probe].sym;
}

static bool has_site(const struct rt_pack_pick *pk, const char *sym)
{
	uint32_t k;

	for (k = 0; k < pk->n_sites; k++)
		if (!strcmp(site_sym(pk, k), sym)) {
			assert_true(pk->sites[k].offset > 0);
			return true;
		}
	return false;
}

static void expect_2025(const struct rt_pack_pick *pk)
{
	assert_int_equal(pk->pack, 2);
	assert_int_equal(pk->named, -1);
	assert_false(pk->stripped);
	/* the fake exports 7 of the 8 probed functions (no llama_get_logits) */
	assert_int_equal(pk->n_sites, 6);
	assert_true(has_site(pk, "llama_decode"));
	assert_true(has_site(pk, "llama_tokenize"));
	assert_true(has_site(pk, "llama_token_to_piece"));
	assert_true(has_site(pk, "llama_synchronize"));
	assert_true(has_site(pk, "llama_get_logits_ith"));
	assert_true(has_site(pk, "llama_memory_seq_rm"));
	assert_false(has_site(pk, "llama_detokenize"));
}

static void test_match_shared(void **state)
{
	struct rt_pack_pick pk;

	(void)state;
	assert_int_equal(rt_pack_match_file(packs, RT_FAKE_LLAMA_DIR "/libllama.so", &pk), 0);
	expect_2025(&pk);
}

static void test_match_old(void **state)
{
	struct rt_pack_pick pk;

	(void)state;
	assert_int_equal(rt_pack_match_file(packs, RT_FAKE_LLAMA_DIR "/old/libllama.so", &pk), 0);
	assert_int_equal(pk.pack, 1);
	assert_true(has_site(&pk, "llama_decode"));
	assert_true(has_site(&pk, "llama_kv_self_seq_rm"));
	/* the deprecated wrapper is skipped: it would report each call twice */
	assert_false(has_site(&pk, "llama_kv_cache_seq_rm"));
	assert_int_equal(pk.n_sites, 6);
}

/* llama.cpp linked into the program: the functions are in .symtab only */
static int count_dyn(const struct rt_elf_sym *s, void *ctx)
{
	if (!strncmp(s->name, "llama_", 6))
		++*(int *)ctx;
	return 0;
}

static void test_match_static(void **state)
{
	struct rt_pack_pick pk;
	int n = 0;

	(void)state;
	assert_int_equal(rt_elf_dynsyms(RT_FAKE_LLAMA_DIR "/static/llama-server", count_dyn, &n),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(rt_pack_match_file(packs, RT_FAKE_LLAMA_DIR "/static/llama-server", &pk),
			 0);
	expect_2025(&pk);
}

static void test_match_stripped(void **state)
{
	struct rt_pack_pick pk;

	(void)state;
	assert_int_equal(rt_pack_match_file(packs, RT_FAKE_LLAMA_DIR "/stripped/llama-server", &pk),
			 0);
	assert_int_equal(pk.pack, -1);
	/* named by files=: the first llama pack in file order */
	assert_int_equal(pk.named, 1);
	assert_true(pk.stripped);
	assert_string_equal(pk.missing, "llama_decode");
	assert_int_equal(pk.n_sites, 0);
}

/* the offsets are where the functions' code is in the file */
static int find_decode(const struct rt_elf_sym *s, void *ctx)
{
	if (!strcmp(s->name, "llama_decode"))
		*(uint64_t *)ctx = s->offset;
	return 0;
}

static void test_offsets(void **state)
{
	struct rt_pack_pick pk;
	uint64_t off = 0;
	uint32_t k;

	(void)state;
	assert_int_equal(
		rt_elf_funcs(RT_FAKE_LLAMA_DIR "/libllama.so", RT_ELF_DYNSYM, find_decode, &off),
		0);
	assert_true(off > 0);
	assert_int_equal(rt_pack_match_file(packs, RT_FAKE_LLAMA_DIR "/libllama.so", &pk), 0);
	for (k = 0; k < pk.n_sites; k++)
		if (!strcmp(site_sym(&pk, k), "llama_decode"))
			assert_int_equal(pk.sites[k].offset, off);
	assert_int_equal(rt_elf_funcs(RT_FAKE_LLAMA_DIR "/libllama.so", 0, find_decode, &off),
			 -EINVAL);
}

static void test_match_other(void **state)
{
	struct rt_pack_pick pk;

	(void)state;
	/* this test program: an ELF file with symbols, none of a pack's */
	assert_int_equal(rt_pack_match_file(packs, "/proc/self/exe", &pk), 0);
	assert_int_equal(pk.pack, -1);
	assert_int_equal(pk.named, -1);
	assert_true(pk.n_syms > 0);
	assert_int_equal(
		rt_pack_match_file(packs, RT_SOURCE_DIR "/configs/packs/libgomp.conf", &pk),
		-ENOEXEC);
	assert_int_equal(rt_pack_match_file(packs, "/nonexistent.so", &pk), -ENOENT);
}

static void test_match_libgomp(void **state)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
					     "/usr/lib/aarch64-linux-gnu/libgomp.so.1",
					     "/usr/lib64/libgomp.so.1" };
	struct rt_pack_pick pk;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], R_OK) == 0)
			break;
	/* gcc depends on libgomp1 in Debian: scripts/deps.sh installs gcc */
	assert_true(i < sizeof(paths) / sizeof(paths[0]));
	assert_int_equal(rt_pack_match_file(packs, paths[i], &pk), 0);
	assert_int_equal(pk.pack, 0);
	assert_true(has_site(&pk, "GOMP_parallel"));
	assert_true(has_site(&pk, "GOMP_parallel_loop_static"));
}

static int count_files(const char *path, void *ctx)
{
	struct stat st;

	assert_int_equal(strncmp(path, "/proc/", 6), 0);
	assert_int_equal(stat(path, &st), 0);
	++*(int *)ctx;
	return 0;
}

static void test_mapped_files(void **state)
{
	int n = 0;

	(void)state;
	/* at least this program and libc */
	assert_int_equal(rt_pack_mapped_files(getpid(), count_files, &n), 0);
	assert_true(n >= 2);
	assert_int_equal(rt_pack_mapped_files(0x7ffffff0, count_files, &n), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_configs),	      cmocka_unit_test(test_roles),
		cmocka_unit_test(test_bad_files),     cmocka_unit_test(test_load_dir_errors),
		cmocka_unit_test(test_match_shared),  cmocka_unit_test(test_match_old),
		cmocka_unit_test(test_match_static),  cmocka_unit_test(test_match_stripped),
		cmocka_unit_test(test_offsets),	      cmocka_unit_test(test_match_other),
		cmocka_unit_test(test_match_libgomp), cmocka_unit_test(test_mapped_files),
	};

	return cmocka_run_group_tests(tests, load_packs, free_packs);
}
