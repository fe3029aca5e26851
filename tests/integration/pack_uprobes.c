// SPDX-License-Identifier: BSD-2-Clause
/*
 * Engine-pack uprobes (bpf/pack.bpf.c, rt_bpf_source__attach_packs,
 * docs/packs.md) on the fake libllama (tests/fixtures/fake_llama): a traced
 * child runs a fixed script of llama.cpp calls, and the records must be
 * exactly that script, in order:
 *
 *   - llama_tokenize: entry with text_len and n_tokens_max, return with
 *     the token count;
 *   - a 40-token prefill of sequence 0: PACK_BATCH (one sequence, 40
 *     tokens, positions 0..39, one output) just before the decode entry,
 *     then the return with 1000 + n_tokens;
 *   - llama_synchronize, llama_get_logits_ith(-1) (an int32 argument
 *     sign-extended, a pointer returned);
 *   - three decode steps with sequences 0 and 1, one token each;
 *   - a llama_batch_get_one-style batch: pos, seq_id and logits NULL;
 *   - llama_memory_seq_rm(mem, 1, -1, -1): a bool return;
 *   - llama_token_to_piece.
 *
 * The pack is found by scanning the child's maps (the file once, however
 * often asked); the untraced parent's call does not appear.
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

#include "bpf_test_util.h"
#include "fake_llama.h"
#include "sources/pack.h"

#define CTX ((struct llama_context *)0x1234000)
#define VOCAB ((const struct llama_vocab *)0x5678000)
#define MEM ((llama_memory_t)0x9abc000)

struct result {
	pid_t tid;
	uint64_t logits_ptr;
	int err;
};

/* A batch as common_batch_add fills it: each token its own seq_id array. */
struct batch_mem {
	llama_token token[64];
	llama_pos pos[64];
	int32_t n_seq_id[64];
	llama_seq_id seq_store[64];
	llama_seq_id *seq_id[64];
	int8_t logits[64];
};

static struct llama_batch batch_of(struct batch_mem *m, int n)
{
	struct llama_batch b = { .n_tokens = n,
				 .token = m->token,
				 .pos = m->pos,
				 .n_seq_id = m->n_seq_id,
				 .seq_id = m->seq_id,
				 .logits = m->logits };
	int i;

	for (i = 0; i < n; i++) {
		m->token[i] = 100 + i;
		m->n_seq_id[i] = 1;
		m->seq_id[i] = &m->seq_store[i];
	}
	return b;
}

static int child(struct rt_test_child *ch, void *arg)
{
	struct result res = { .tid = gettid() };
	static struct batch_mem m;
	struct llama_batch b;
	llama_token toks[64];
	char text[41], piece[8];
	int i, k;

	(void)arg;
	memset(text, 'x', 40);
	text[40] = '\0';
	if (llama_tokenize(VOCAB, text, 40, toks, 64, true, false) != 11)
		res.err = __LINE__;

	b = batch_of(&m, 40);
	for (i = 0; i < 40; i++) {
		m.pos[i] = i;
		m.seq_store[i] = 0;
		m.logits[i] = i == 39;
	}
	if (llama_decode(CTX, b) != 1040)
		res.err = __LINE__;
	llama_synchronize(CTX);
	res.logits_ptr = (uintptr_t)llama_get_logits_ith(CTX, -1);

	for (k = 0; k < 3; k++) {
		b = batch_of(&m, 2);
		m.pos[0] = 40 + k;
		m.seq_store[0] = 0;
		m.logits[0] = 1;
		m.pos[1] = 12 + k;
		m.seq_store[1] = 1;
		m.logits[1] = 1;
		if (llama_decode(CTX, b) != 1002)
			res.err = __LINE__;
	}

	/* llama_batch_get_one(tokens, 5) */
	memset(&b, 0, sizeof(b));
	b.n_tokens = 5;
	b.token = toks;
	if (llama_decode(CTX, b) != 1005)
		res.err = __LINE__;

	if (!llama_memory_seq_rm(MEM, 1, -1, -1))
		res.err = __LINE__;
	if (llama_token_to_piece(VOCAB, 7, piece, sizeof(piece), 0, false) != 1)
		res.err = __LINE__;
	return write(ch->child_out_fd, &res, sizeof(res)) == sizeof(res) ? 0 : 12;
}

static size_t pack_recs(const struct rt_collect *c, pid_t pid, const struct rt_event_hdr **out,
			size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < c->n; i++) {
		unsigned int kind = c->recs[i]->kind;

		if ((kind == RT_EV_PACK_CALL || kind == RT_EV_PACK_BATCH) &&
		    c->recs[i]->pid == (__u32)pid && n < max)
			out[n++] = c->recs[i];
	}
	return n;
}

/* the script ends with llama_token_to_piece's return */
static bool script_done(const struct rt_collect *c, const void *arg)
{
	const pid_t *pid = arg;
	size_t i;

	for (i = 0; i < c->n; i++) {
		const struct rt_ev_pack_call *e = (const void *)c->recs[i];

		if (c->recs[i]->kind == RT_EV_PACK_CALL && c->recs[i]->pid == (__u32)*pid &&
		    e->role == RT_PACK_DETOKENIZE && e->ret)
			return true;
	}
	return false;
}

static uint32_t pack_id;
static const struct result *res_now;

static void call(const struct rt_event_hdr *h, int role, int ret, int64_t a0, int64_t a1,
		 int64_t a2, int64_t retval)
{
	const struct rt_ev_pack_call *e = (const void *)h;

	assert_int_equal(h->kind, RT_EV_PACK_CALL);
	assert_int_equal(h->tid, res_now->tid);
	assert_int_equal(e->pack, pack_id);
	assert_int_equal(e->role, role);
	assert_int_equal(e->ret, ret);
	if (!ret) {
		assert_int_equal(e->args[0], a0);
		assert_int_equal(e->args[1], a1);
		assert_int_equal(e->args[2], a2);
		assert_int_equal(e->args[3], 0);
		assert_int_equal(e->retval, 0);
	} else {
		assert_int_equal(e->retval, retval);
	}
}

struct seq {
	int32_t id;
	uint32_t n, pmin, pmax, logits;
};

static void batch(const struct rt_event_hdr *h, uint32_t n_tokens, uint32_t flags, uint32_t n_seqs,
		  const struct seq *s)
{
	const struct rt_ev_pack_batch *e = (const void *)h;
	uint32_t i;

	assert_int_equal(h->kind, RT_EV_PACK_BATCH);
	assert_int_equal(h->size, sizeof(*e));
	assert_int_equal(h->tid, res_now->tid);
	assert_int_equal(e->pack, pack_id);
	assert_int_equal(e->n_tokens, n_tokens);
	assert_int_equal(e->n_read, n_tokens);
	assert_int_equal(e->flags, flags);
	assert_int_equal(e->seqs_dropped, 0);
	assert_int_equal(e->n_seqs, n_seqs);
	for (i = 0; i < n_seqs; i++) {
		assert_int_equal(e->seqs[i].seq_id, s[i].id);
		assert_int_equal(e->seqs[i].n_tokens, s[i].n);
		assert_int_equal(e->seqs[i].pos_min, (int32_t)s[i].pmin);
		assert_int_equal(e->seqs[i].pos_max, (int32_t)s[i].pmax);
		assert_int_equal(e->seqs[i].n_logits, s[i].logits);
	}
}

static void test_llama_script(void **state)
{
	const struct rt_event_hdr *r[64];
	struct rt_bpf_source_opts o = { .source_id = 1 };
	struct rt_pack_stats *st = calloc(1, sizeof(*st));
	struct rt_packs *packs = NULL;
	struct rt_bpf_source *src;
	struct rt_test_child ch;
	struct rt_collect c;
	struct result res;
	struct llama_batch pb = { 0 };
	char err[512] = "";
	size_t n, i = 0;
	int k;

	(void)state;
	assert_non_null(st);
	if (rt_packs_load_dir(RT_SOURCE_DIR "/configs/packs", &packs, err, sizeof(err)))
		fail_msg("%s", err);
	for (pack_id = 0; pack_id < packs->n; pack_id++)
		if (!strcmp(packs->packs[pack_id].name, "llama-cpp-2025"))
			break;
	assert_true(pack_id < packs->n);

	src = rt_test_source(&o);
	assert_int_equal(rt_test_child_start(&ch, child, NULL), 0);
	assert_int_equal(rt_bpf_source__add_pid(src, ch.pid, 1), 0);
	assert_int_equal(rt_bpf_source__attach_packs(src, packs, ch.pid), 0);
	rt_bpf_source__pack_stats(src, st);
	assert_int_equal(st->n, packs->n);
	assert_string_equal(st->packs[pack_id].name, "llama-cpp-2025");
	assert_int_equal(st->packs[pack_id].matched, 1);
	assert_int_equal(st->packs[pack_id].attached, 1);
	assert_int_equal(st->packs[pack_id].failed, 0);
	/* six functions of the fake, each with a uretprobe */
	assert_int_equal(st->packs[pack_id].probes, 12);
	assert_int_equal(st->probes, 12);
	assert_true(st->files_examined >= 3); /* the test program, libllama, libc at least */
	/* again, and for this process (the same libllama): nothing new */
	assert_int_equal(rt_bpf_source__attach_packs(src, packs, ch.pid), 0);
	assert_int_equal(rt_bpf_source__attach_packs(src, packs, getpid()), 0);
	rt_bpf_source__pack_stats(src, st);
	assert_int_equal(st->probes, 12);
	assert_int_equal(st->packs[pack_id].matched, 1);
	/* another pack set: refused, the wire ids are the first set's */
	{
		struct rt_packs *other = calloc(1, sizeof(*other));

		assert_non_null(other);
		assert_int_equal(rt_bpf_source__attach_packs(src, other, ch.pid), -EBUSY);
		free(other);
	}

	/* the untraced parent calls llama_decode: filtered in the kernel */
	assert_int_equal(llama_decode(CTX, pb), 1000);

	rt_collect_init(&c, 1 << 20);
	assert_int_equal(rt_test_child_go(&ch), 0);
	assert_int_equal(read(ch.out_fd, &res, sizeof(res)), sizeof(res));
	assert_int_equal(rt_test_child_wait(&ch), 0);
	if (res.err)
		fail_msg("the child's script failed at pack_uprobes.c:%d", res.err);
	res_now = &res;
	if (!rt_collect_until(src, &c, script_done, &ch.pid, 5000)) {
		struct rt_bpf_stats bs;

		n = pack_recs(&c, ch.pid, r, 64);
		rt_bpf_source__stats(src, &bs);
		rt_bpf_source__pack_stats(src, st);
		fail_msg("the script's end not seen: %zu pack records of the child, %zu records, "
			 "%llu PACK_CALL, %llu lost, %llu bad cookies, %llu invalid",
			 n, c.n, (unsigned long long)bs.events[RT_EV_PACK_CALL],
			 (unsigned long long)bs.lost_total, (unsigned long long)st->bad_cookie,
			 (unsigned long long)bs.invalid);
	}
	n = pack_recs(&c, ch.pid, r, 64);
	/* one thread, one program per record: ring order is call order */
	for (k = 1; k < (int)n; k++)
		assert_true(r[k - 1]->ts_ns <= r[k]->ts_ns);

	call(r[i++], RT_PACK_TOKENIZE, 0, 40, 64, 0, 0);
	call(r[i++], RT_PACK_TOKENIZE, 1, 0, 0, 0, 11);
	batch(r[i++], 40, 0, 1, (const struct seq[]){ { 0, 40, 0, 39, 1 } });
	/* the batch record and the entry come from one program hit: one timestamp */
	assert_int_equal(r[i - 1]->ts_ns, r[i]->ts_ns);
	call(r[i++], RT_PACK_DECODE, 0, 0, 0, 0, 0);
	call(r[i++], RT_PACK_DECODE, 1, 0, 0, 0, 1040);
	call(r[i++], RT_PACK_SYNC, 0, 0, 0, 0, 0);
	call(r[i++], RT_PACK_SYNC, 1, 0, 0, 0, 0);
	call(r[i++], RT_PACK_SYNC, 0, -1, 0, 0, 0);
	call(r[i++], RT_PACK_SYNC, 1, 0, 0, 0, (int64_t)res.logits_ptr);
	for (k = 0; k < 3; k++) {
		const struct seq s[] = { { 0, 1, 40u + k, 40u + k, 1 },
					 { 1, 1, 12u + k, 12u + k, 1 } };

		batch(r[i++], 2, 0, 2, s);
		call(r[i++], RT_PACK_DECODE, 0, 0, 0, 0, 0);
		call(r[i++], RT_PACK_DECODE, 1, 0, 0, 0, 1002);
	}
	batch(r[i++], 5, RT_PACK_BATCH_NO_POS | RT_PACK_BATCH_NO_SEQ | RT_PACK_BATCH_NO_LOGITS, 1,
	      (const struct seq[]){ { 0, 5, (uint32_t)-1, (uint32_t)-1, 1 } });
	call(r[i++], RT_PACK_DECODE, 0, 0, 0, 0, 0);
	call(r[i++], RT_PACK_DECODE, 1, 0, 0, 0, 1005);
	call(r[i++], RT_PACK_SEQ_RM, 0, 1, -1, -1, 0);
	call(r[i++], RT_PACK_SEQ_RM, 1, 0, 0, 0, 1);
	call(r[i++], RT_PACK_DETOKENIZE, 0, 7, 0, 0, 0);
	call(r[i++], RT_PACK_DETOKENIZE, 1, 0, 0, 0, 1);
	assert_int_equal(n, i);

	assert_int_equal(rt_collect_find(&c, RT_EV_LOSS, 0, r, 0), 0);
	rt_bpf_source__pack_stats(src, st);
	assert_int_equal(st->bad_cookie, 0);
	assert_int_equal(st->batch_unreadable, 0);
	rt_collect_free(&c);
	rt_bpf_source__free(src);
	free(packs);
	free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama_script),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
