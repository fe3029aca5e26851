// SPDX-License-Identifier: BSD-2-Clause
/*
 * A fake llama.cpp engine for tests/integration/pack_daemon.py: linked
 * against the fake libllama (tests/fixtures/fake_llama), it prints
 * "ready", waits for a line on stdin, makes a fixed series of calls (the
 * same script as pack_uprobes.c's child: tokenize, a 40-token prefill of
 * sequence 0, sync, three decode steps of sequences 0 and 1, a
 * llama_batch_get_one batch, a seq_rm, a token_to_piece), prints
 * "done TID LOGITS_PTR", and exits when stdin closes.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_llama.h"

#define CTX ((struct llama_context *)0x1234000)
#define VOCAB ((const struct llama_vocab *)0x5678000)
#define MEM ((llama_memory_t)0x9abc000)

static llama_token token[64];
static llama_pos pos[64];
static int32_t n_seq_id[64];
static llama_seq_id seq_store[64];
static llama_seq_id *seq_id[64];
static int8_t logits[64];

static struct llama_batch batch_of(int n)
{
	struct llama_batch b = { .n_tokens = n,
				 .token = token,
				 .pos = pos,
				 .n_seq_id = n_seq_id,
				 .seq_id = seq_id,
				 .logits = logits };
	int i;

	for (i = 0; i < n; i++) {
		token[i] = 100 + i;
		n_seq_id[i] = 1;
		seq_id[i] = &seq_store[i];
	}
	return b;
}

int main(void)
{
	struct llama_batch b;
	llama_token toks[64];
	char text[41], piece[8], line[64];
	float *lg;
	int i, k, bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	memset(text, 'x', 40);
	text[40] = '\0';
	bad |= llama_tokenize(VOCAB, text, 40, toks, 64, true, false) != 11;
	b = batch_of(40);
	for (i = 0; i < 40; i++) {
		pos[i] = i;
		seq_store[i] = 0;
		logits[i] = i == 39;
	}
	bad |= llama_decode(CTX, b) != 1040;
	llama_synchronize(CTX);
	lg = llama_get_logits_ith(CTX, -1);
	for (k = 0; k < 3; k++) {
		b = batch_of(2);
		pos[0] = 40 + k;
		seq_store[0] = 0;
		logits[0] = 1;
		pos[1] = 12 + k;
		seq_store[1] = 1;
		logits[1] = 1;
		bad |= llama_decode(CTX, b) != 1002;
	}
	memset(&b, 0, sizeof(b));
	b.n_tokens = 5;
	b.token = toks;
	bad |= llama_decode(CTX, b) != 1005;
	bad |= !llama_memory_seq_rm(MEM, 1, -1, -1);
	bad |= llama_token_to_piece(VOCAB, 7, piece, sizeof(piece), 0, false) != 1;
	printf("done %d %llu %d\n", (int)gettid(), (unsigned long long)(uintptr_t)lg, bad);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
