// SPDX-License-Identifier: BSD-2-Clause
/*
 * The llama_decode batch reader (include/reqtrace/pack_batch.h), the code
 * bpf/pack.bpf.c runs, on hand-built images of a traced process at the
 * uprobe: a pt_regs image and user memory (a stack, the batch's arrays).
 *
 *   - x86-64: the 56-byte batch sits on the stack at sp + 8, above the
 *     return address; the registers hold only ctx (rdi);
 *   - arm64: x1 holds the address of the caller's copy; sp is irrelevant;
 *   - per sequence: tokens, positions, outputs; NULL pos/seq_id/logits
 *     (llama_batch_get_one); the token bound (CUT); more sequences than a
 *     record lists; a fault part-way; an unreadable batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <linux/types.h>

#include <reqtrace/event.h>
#include <reqtrace/uprobe_args.h>

/* ---- a traced process's memory: a few mapped regions ---- */

#define REGIONS_MAX 8

struct region {
	__u64 base;
	__u8 *data;
	size_t len;
};

static struct region mem[REGIONS_MAX];
static int n_mem;
static int n_reads;

static int mem_read(void *dst, __u32 size, __u64 addr)
{
	int i;

	n_reads++;
	for (i = 0; i < n_mem; i++)
		if (addr >= mem[i].base && addr - mem[i].base + size <= mem[i].len) {
			memcpy(dst, mem[i].data + (addr - mem[i].base), size);
			return 0;
		}
	return -14; /* -EFAULT, as bpf_probe_read_user */
}

#define RT_PACK_READ(dst, size, addr) mem_read((dst), (size), (addr))
#include <reqtrace/pack_batch.h>

static __u8 *map(__u64 base, size_t len)
{
	assert_true(n_mem < REGIONS_MAX);
	mem[n_mem].base = base;
	mem[n_mem].data = calloc(1, len);
	mem[n_mem].len = len;
	assert_non_null(mem[n_mem].data);
	return mem[n_mem++].data;
}

static int teardown(void **state)
{
	(void)state;
	while (n_mem > 0)
		free(mem[--n_mem].data);
	n_reads = 0;
	return 0;
}

static void put64(__u8 *p, __u64 v)
{
	memcpy(p, &v, 8);
}

static void put32(__u8 *p, __u32 v)
{
	memcpy(p, &v, 4);
}

/* ---- a batch as llama_batch_init + common_batch_add would lay it out ---- */

#define HEAP 0x555500000000ull
#define STACK 0x7ffd00000000ull
#define SP (STACK + 0x800)
#define COPY (STACK + 0xa00) /* arm64: the caller's copy */

struct tok {
	__s32 pos, seq;
	__s8 logits;
};

struct arrays {
	__u64 token, pos, n_seq_id, seq_id, logits;
};

/* Arrays in the heap; each token's seq_id array is its own allocation. */
static struct arrays heap_arrays(const struct tok *t, __u32 n, bool pos, bool seq, bool logits)
{
	__u8 *h = map(HEAP, 0x100000);
	struct arrays a = { 0 };
	__u64 off = 0x1000, seqs;
	__u32 i;

	a.token = HEAP + off;
	off += 4 * n + 64;
	a.pos = pos ? HEAP + off : 0;
	off += 4 * n + 64;
	a.n_seq_id = HEAP + off;
	off += 4 * n + 64;
	a.seq_id = seq ? HEAP + off : 0;
	off += 8 * n + 64;
	a.logits = logits ? HEAP + off : 0;
	off += n + 64;
	seqs = off;
	for (i = 0; i < n; i++) {
		put32(h + (a.token - HEAP) + 4 * i, 100 + i);
		if (pos)
			put32(h + (a.pos - HEAP) + 4 * i, (__u32)t[i].pos);
		put32(h + (a.n_seq_id - HEAP) + 4 * i, 1);
		if (seq) {
			put32(h + seqs + 16 * i, (__u32)t[i].seq);
			put64(h + (a.seq_id - HEAP) + 8 * i, HEAP + seqs + 16 * i);
		}
		if (logits)
			h[a.logits - HEAP + i] = (__u8)t[i].logits;
	}
	return a;
}

static void batch_bytes(__u8 *b, __u32 n, const struct arrays *a)
{
	put32(b + RT_LLAMA_BATCH_N_TOKENS, n);
	put64(b + RT_LLAMA_BATCH_TOKEN, a->token);
	put64(b + RT_LLAMA_BATCH_EMBD, 0);
	put64(b + RT_LLAMA_BATCH_POS, a->pos);
	put64(b + RT_LLAMA_BATCH_N_SEQ_ID, a->n_seq_id);
	put64(b + RT_LLAMA_BATCH_SEQ_ID, a->seq_id);
	put64(b + RT_LLAMA_BATCH_LOGITS, a->logits);
}

/* The pt_regs image and the stack at llama_decode's first instruction. */
struct image {
	__u8 regs[512];
};

static struct image x86_call(__u32 n, const struct arrays *a)
{
	struct image im = { 0 };
	__u8 *stack = map(STACK, 0x1000);

	put64(im.regs + RT_X86_64_ARG1_OFF, 0x5555deadbeefull); /* ctx */
	put64(im.regs + RT_X86_64_SP_OFF, SP);
	put64(stack + (SP - STACK), 0x555512345678ull); /* the return address */
	batch_bytes(stack + (SP - STACK) + 8, n, a);
	/* rsi, rdx, ... are whatever the caller left: garbage that must not be used */
	put64(im.regs + RT_X86_64_ARG2_OFF, 0x4141414141414141ull);
	return im;
}

static struct image arm64_call(__u32 n, const struct arrays *a)
{
	struct image im = { 0 };
	__u8 *stack = map(STACK, 0x1000);

	put64(im.regs + RT_AAPCS64_ARG1_OFF, 0x5555deadbeefull);
	put64(im.regs + RT_AAPCS64_ARG2_OFF, COPY);
	put64(im.regs + RT_AAPCS64_SP_OFF, SP);
	/* what sits at sp + 8 is not the batch on arm64 */
	memset(stack + (SP - STACK), 0x41, 64);
	batch_bytes(stack + (COPY - STACK), n, a);
	return im;
}

/* The probe's steps: where the batch is, then the reader. */
static int summarise(enum rt_abi abi, const struct image *im, struct rt_pack_batch_scan *sc)
{
	struct rt_abi_arg loc;
	__u64 addr, sp;
	int n, i;

	assert_int_equal(rt_abi_big_arg_loc(abi, 2, &loc), 0);
	if (loc.in_reg) {
		memcpy(&addr, im->regs + loc.off, 8);
	} else {
		memcpy(&sp,
		       im->regs + (abi == RT_ABI_X86_64 ? RT_X86_64_SP_OFF : RT_AAPCS64_SP_OFF), 8);
		addr = sp + loc.off;
	}
	memset(sc, 0x5a, sizeof(*sc)); /* per-CPU scratch holds the last batch's leftovers */
	n = rt_pack_batch_begin(sc, addr);
	for (i = 0; i < n; i++)
		if (rt_pack_batch_token(sc, (__u32)i, (__u32)n))
			break;
	if (n >= 0)
		rt_pack_batch_end(sc);
	return n;
}

static void expect_seq(const struct rt_pack_batch_scan *sc, __u32 k, __s32 seq, __u32 n, __s32 pmin,
		       __s32 pmax, __u32 logits)
{
	const struct rt_pack_seq *s = &sc->rec.seqs[k];

	assert_true(k < sc->rec.n_seqs);
	assert_int_equal(s->seq_id, seq);
	assert_int_equal(s->n_tokens, n);
	assert_int_equal(s->pos_min, pmin);
	assert_int_equal(s->pos_max, pmax);
	assert_int_equal(s->n_logits, logits);
}

static struct rt_pack_batch_scan sc;

/* one sequence's 40-token prompt, output on the last token only */
static void prefill(enum rt_abi abi)
{
	struct tok t[40];
	struct arrays a;
	struct image im;
	int i;

	for (i = 0; i < 40; i++)
		t[i] = (struct tok){ .pos = i, .seq = 0, .logits = i == 39 };
	a = heap_arrays(t, 40, true, true, true);
	im = abi == RT_ABI_X86_64 ? x86_call(40, &a) : arm64_call(40, &a);
	assert_int_equal(summarise(abi, &im, &sc), 40);
	assert_int_equal(sc.rec.n_tokens, 40);
	assert_int_equal(sc.rec.n_read, 40);
	assert_int_equal(sc.rec.n_seqs, 1);
	assert_int_equal(sc.rec.seqs_dropped, 0);
	assert_int_equal(sc.rec.flags, 0);
	expect_seq(&sc, 0, 0, 40, 0, 39, 1);
}

static void test_x86_prefill(void **state)
{
	(void)state;
	prefill(RT_ABI_X86_64);
}

static void test_arm64_prefill(void **state)
{
	(void)state;
	prefill(RT_ABI_AAPCS64);
}

/* a decode step: sequences 0 and 1, one token each, then a draft token of 0 */
static void decode_step(enum rt_abi abi)
{
	const struct tok t[] = {
		{ .pos = 40, .seq = 0, .logits = 1 },
		{ .pos = 7, .seq = 1, .logits = 1 },
		{ .pos = 41, .seq = 0, .logits = 1 },
	};
	struct arrays a = heap_arrays(t, 3, true, true, true);
	struct image im = abi == RT_ABI_X86_64 ? x86_call(3, &a) : arm64_call(3, &a);

	assert_int_equal(summarise(abi, &im, &sc), 3);
	assert_int_equal(sc.rec.n_seqs, 2);
	assert_int_equal(sc.rec.flags, 0);
	expect_seq(&sc, 0, 0, 2, 40, 41, 2);
	expect_seq(&sc, 1, 1, 1, 7, 7, 1);
}

static void test_x86_decode(void **state)
{
	(void)state;
	decode_step(RT_ABI_X86_64);
}

static void test_arm64_decode(void **state)
{
	(void)state;
	decode_step(RT_ABI_AAPCS64);
}

/* llama_batch_get_one: only tokens; sequence 0, positions and outputs the library's */
static void get_one(enum rt_abi abi)
{
	struct tok t[7] = { 0 };
	struct arrays a = heap_arrays(t, 7, false, false, false);
	struct image im = abi == RT_ABI_X86_64 ? x86_call(7, &a) : arm64_call(7, &a);

	assert_int_equal(summarise(abi, &im, &sc), 7);
	assert_int_equal(sc.rec.flags,
			 RT_PACK_BATCH_NO_POS | RT_PACK_BATCH_NO_SEQ | RT_PACK_BATCH_NO_LOGITS);
	assert_int_equal(sc.rec.n_read, 7);
	assert_int_equal(sc.rec.n_seqs, 1);
	expect_seq(&sc, 0, 0, 7, -1, -1, 1);
}

static void test_x86_get_one(void **state)
{
	(void)state;
	get_one(RT_ABI_X86_64);
}

static void test_arm64_get_one(void **state)
{
	(void)state;
	get_one(RT_ABI_AAPCS64);
}

/* a prompt chunk past the bound: counted up to it, and said so */
static void test_cut(void **state)
{
	__u32 n = RT_PACK_BATCH_READ_MAX + 1000, i;
	struct tok *t = calloc(n, sizeof(*t));
	struct arrays a;
	struct image im;

	(void)state;
	assert_non_null(t);
	for (i = 0; i < n; i++)
		t[i] = (struct tok){ .pos = (__s32)i + 100, .seq = 3, .logits = i == n - 1 };
	a = heap_arrays(t, n, true, true, true);
	im = x86_call(n, &a);
	n_reads = 0;
	assert_int_equal(summarise(RT_ABI_X86_64, &im, &sc), RT_PACK_BATCH_READ_MAX);
	assert_int_equal(sc.rec.n_tokens, n);
	assert_int_equal(sc.rec.n_read, RT_PACK_BATCH_READ_MAX);
	assert_int_equal(sc.rec.flags, RT_PACK_BATCH_CUT);
	/* the last token (the only output) was not read */
	expect_seq(&sc, 0, 3, RT_PACK_BATCH_READ_MAX, 100, 100 + RT_PACK_BATCH_READ_MAX - 1, 0);
	/* the batch, 3 arrays per chunk, and each token's own seq_id array */
	assert_int_equal(n_reads,
			 1 + 3 * (RT_PACK_BATCH_READ_MAX / RT_PACK_CHUNK) + RT_PACK_BATCH_READ_MAX);
	free(t);
}

/* 40 sequences, one token each: 32 listed, 8 dropped */
static void test_many_seqs(void **state)
{
	struct tok t[40];
	struct arrays a;
	struct image im;
	int i;

	(void)state;
	for (i = 0; i < 40; i++)
		t[i] = (struct tok){ .pos = 10 + i, .seq = 100 + i, .logits = 1 };
	a = heap_arrays(t, 40, true, true, true);
	im = arm64_call(40, &a);
	assert_int_equal(summarise(RT_ABI_AAPCS64, &im, &sc), 40);
	assert_int_equal(sc.rec.n_seqs, RT_PACK_BATCH_SEQS);
	assert_int_equal(sc.rec.seqs_dropped, 40 - RT_PACK_BATCH_SEQS);
	assert_int_equal(sc.rec.n_read, 40);
	for (i = 0; i < RT_PACK_BATCH_SEQS; i++)
		expect_seq(&sc, (__u32)i, 100 + i, 1, 10 + i, 10 + i, 1);
}

/* token 70's seq_id array is unmapped: the summary stops there */
static void test_fault(void **state)
{
	struct tok t[100];
	struct arrays a;
	struct image im;
	int i;

	(void)state;
	for (i = 0; i < 100; i++)
		t[i] = (struct tok){ .pos = i, .seq = 2, .logits = 0 };
	a = heap_arrays(t, 100, true, true, true);
	put64(mem[0].data + (a.seq_id - HEAP) + 8 * 70, 0x10); /* a wild pointer */
	im = x86_call(100, &a);
	assert_int_equal(summarise(RT_ABI_X86_64, &im, &sc), 100);
	assert_int_equal(sc.rec.flags, RT_PACK_BATCH_FAULT);
	assert_int_equal(sc.rec.n_read, 70);
	expect_seq(&sc, 0, 2, 70, 0, 69, 0);
}

/* the stack page itself is gone: no record */
static void test_unreadable_batch(void **state)
{
	struct image im = { 0 };

	(void)state;
	put64(im.regs + RT_X86_64_SP_OFF, 0x1000);
	assert_int_equal(summarise(RT_ABI_X86_64, &im, &sc), -1);
	put64(im.regs + RT_AAPCS64_ARG2_OFF, 0);
	assert_int_equal(summarise(RT_ABI_AAPCS64, &im, &sc), -1);
}

/* an empty batch (llama_decode rejects it) still says so */
static void test_empty(void **state)
{
	struct arrays a = heap_arrays(NULL, 0, true, true, true);
	struct image im = x86_call(0, &a);

	(void)state;
	assert_int_equal(summarise(RT_ABI_X86_64, &im, &sc), 0);
	assert_int_equal(sc.rec.n_tokens, 0);
	assert_int_equal(sc.rec.n_seqs, 0);
	assert_int_equal(sc.rec.n_read, 0);
}

static void test_big_arg_loc(void **state)
{
	struct rt_abi_arg l;

	(void)state;
	assert_int_equal(rt_abi_big_arg_loc(RT_ABI_X86_64, 2, &l), 0);
	assert_int_equal(l.in_reg, 0);
	assert_int_equal(l.off, 8);
	assert_int_equal(rt_abi_big_arg_loc(RT_ABI_AAPCS64, 2, &l), 0);
	assert_int_equal(l.in_reg, 1);
	assert_int_equal(l.off, RT_AAPCS64_ARG2_OFF);
	assert_int_equal(rt_abi_big_arg_loc(RT_ABI_X86_64, 7, &l), -1);
	assert_int_equal(rt_abi_big_arg_loc(RT_ABI_AAPCS64, 9, &l), -1);
	assert_int_equal(rt_abi_big_arg_loc((enum rt_abi)0, 2, &l), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_x86_prefill, teardown),
		cmocka_unit_test_teardown(test_arm64_prefill, teardown),
		cmocka_unit_test_teardown(test_x86_decode, teardown),
		cmocka_unit_test_teardown(test_arm64_decode, teardown),
		cmocka_unit_test_teardown(test_x86_get_one, teardown),
		cmocka_unit_test_teardown(test_arm64_get_one, teardown),
		cmocka_unit_test_teardown(test_cut, teardown),
		cmocka_unit_test_teardown(test_many_seqs, teardown),
		cmocka_unit_test_teardown(test_fault, teardown),
		cmocka_unit_test_teardown(test_unreadable_batch, teardown),
		cmocka_unit_test_teardown(test_empty, teardown),
		cmocka_unit_test(test_big_arg_loc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
