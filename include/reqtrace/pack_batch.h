/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * llama_decode's batch summarised per sequence (RT_EV_PACK_BATCH,
 * docs/packs.md): the one implementation, compiled into bpf/pack.bpf.c
 * (reads with bpf_probe_read_user, token loop under bpf_loop) and into the
 * unit tests (reads from hand-built register and stack images), so the
 * tests check the code the kernel runs.
 *
 * The includer defines RT_PACK_READ(dst, size, addr) before including:
 * copies `size` bytes of the traced process's memory at `addr` into `dst`,
 * 0 on success, non-zero on a fault. Include after <reqtrace/event.h>.
 *
 * Cost: a batch of n tokens takes 3 reads per RT_PACK_CHUNK tokens (pos,
 * logits, seq_id pointers) and one per token for seq_id[i][0], skipped when
 * a token shares the previous token's seq_id array. At most
 * RT_PACK_BATCH_READ_MAX tokens are read; past that the record says
 * RT_PACK_BATCH_CUT and counts only what it read.
 */
#ifndef REQTRACE_PACK_BATCH_H
#define REQTRACE_PACK_BATCH_H

/* struct llama_batch since llama.cpp PR #9745 (October 2024), LP64; the
 * 72-byte layout before it has the same first 56 bytes */
#define RT_LLAMA_BATCH_SIZE 56
#define RT_LLAMA_BATCH_N_TOKENS 0 /* int32 */
#define RT_LLAMA_BATCH_TOKEN 8 /* llama_token * */
#define RT_LLAMA_BATCH_EMBD 16 /* float * */
#define RT_LLAMA_BATCH_POS 24 /* llama_pos * (int32) */
#define RT_LLAMA_BATCH_N_SEQ_ID 32 /* int32 * */
#define RT_LLAMA_BATCH_SEQ_ID 40 /* llama_seq_id ** */
#define RT_LLAMA_BATCH_LOGITS 48 /* int8 * */

#define RT_PACK_BATCH_READ_MAX 4096 /* tokens one batch record summarises */
#define RT_PACK_CHUNK 64 /* tokens per array read; a power of two */

/* The reader's state: per-CPU scratch in BPF (too big for its stack). */
struct rt_pack_batch_scan {
	struct rt_ev_pack_batch rec; /* built here, copied to the ring at the end */
	__u64 pos, seq_id, logits; /* the batch's arrays (0: NULL) */
	__u64 seq_prev_ptr; /* seq_id[i - 1], to skip re-reading a shared array */
	__s32 seq_prev; /* *seq_prev_ptr */
	__u32 last; /* rec.seqs index of the previous token's sequence */
	__s32 seq_drop_prev; /* last sequence that found no room */
	__u32 drop_any;
	__u32 last_dropped; /* the previous token's sequence found no room */
	/* twice a chunk: the verifier sees a read size only through a mask (below) */
	__s32 pos_c[2 * RT_PACK_CHUNK];
	__u64 seqp_c[2 * RT_PACK_CHUNK];
	__s8 logits_c[2 * RT_PACK_CHUNK];
};

static inline __u64 rt_pack_u64_at(const __u8 *b, __u32 off)
{
	__u64 v = 0;
	__u32 i;

	/* little-endian, both ABIs; no unaligned loads in BPF */
	for (i = 0; i < 8; i++)
		v |= (__u64)b[off + i] << (8 * i);
	return v;
}

/*
 * Reads the batch at `batch_addr` (uprobe_args.h's rt_abi_big_arg_loc() says
 * where that is) and prepares `sc`. Returns the tokens to visit with
 * rt_pack_batch_token() (0 .. RT_PACK_BATCH_READ_MAX), or -1 when the batch
 * itself cannot be read (the record is then not worth sending).
 */
static inline int rt_pack_batch_begin(struct rt_pack_batch_scan *sc, __u64 batch_addr)
{
	__u8 b[RT_LLAMA_BATCH_SIZE];
	__s32 n;

	if (RT_PACK_READ(b, sizeof(b), batch_addr))
		return -1;
	n = (__s32)(__u32)rt_pack_u64_at(b, RT_LLAMA_BATCH_N_TOKENS);
	sc->rec.n_tokens = (__u32)n;
	sc->rec.n_read = 0;
	sc->rec.n_seqs = 0;
	sc->rec.seqs_dropped = 0;
	sc->rec.flags = 0;
	sc->pos = rt_pack_u64_at(b, RT_LLAMA_BATCH_POS);
	sc->seq_id = rt_pack_u64_at(b, RT_LLAMA_BATCH_SEQ_ID);
	sc->logits = rt_pack_u64_at(b, RT_LLAMA_BATCH_LOGITS);
	sc->seq_prev_ptr = 0;
	sc->seq_prev = 0;
	sc->last = 0;
	sc->seq_drop_prev = 0;
	sc->drop_any = 0;
	sc->last_dropped = 0;
	if (!sc->pos)
		sc->rec.flags |= RT_PACK_BATCH_NO_POS;
	if (!sc->seq_id)
		sc->rec.flags |= RT_PACK_BATCH_NO_SEQ;
	if (!sc->logits)
		sc->rec.flags |= RT_PACK_BATCH_NO_LOGITS;
	if (!rt_pack_u64_at(b, RT_LLAMA_BATCH_TOKEN) && rt_pack_u64_at(b, RT_LLAMA_BATCH_EMBD))
		sc->rec.flags |= RT_PACK_BATCH_EMBD;
	if (n <= 0)
		return 0;
	if (n > RT_PACK_BATCH_READ_MAX) {
		sc->rec.flags |= RT_PACK_BATCH_CUT;
		n = RT_PACK_BATCH_READ_MAX;
	}
	return n;
}

/* Reads the arrays for tokens i .. i + RT_PACK_CHUNK - 1 (fewer at the end). */
static inline int rt_pack_batch_chunk(struct rt_pack_batch_scan *sc, __u32 i, __u32 n)
{
	__u32 cnt = n - i;

	if (cnt > RT_PACK_CHUNK)
		cnt = RT_PACK_CHUNK;
	if (cnt < 1)
		return -1;
	/*
	 * A no-op on the value (cnt <= RT_PACK_CHUNK), but the verifier loses
	 * compared bounds across the compiler's register copies and keeps a
	 * mask's: each size below is then within its (doubled) buffer. The
	 * empty asm keeps the compiler from dropping the mask it knows is moot.
	 */
	asm volatile("" : "+r"(cnt));
	cnt &= 2 * RT_PACK_CHUNK - 1;
	if (sc->pos && RT_PACK_READ(sc->pos_c, cnt * 4, sc->pos + (__u64)i * 4))
		return -1;
	if (sc->seq_id && RT_PACK_READ(sc->seqp_c, cnt * 8, sc->seq_id + (__u64)i * 8))
		return -1;
	if (sc->logits && RT_PACK_READ(sc->logits_c, cnt, sc->logits + i))
		return -1;
	return 0;
}

/* Index in rec.seqs for sequence `seq`, appended if new; -1 when full. */
static inline int rt_pack_batch_slot(struct rt_pack_batch_scan *sc, __s32 seq)
{
	__u32 k, n = sc->rec.n_seqs;
	__u32 last = sc->last & (RT_PACK_BATCH_SEQS - 1);

	/* a prompt chunk is one sequence's run of tokens: the last one usually matches */
	if (last < n && sc->rec.seqs[last].seq_id == seq)
		return (int)last;
	for (k = 0; k < RT_PACK_BATCH_SEQS; k++) {
		if (k >= n)
			break;
		if (sc->rec.seqs[k].seq_id == seq)
			return (int)k;
	}
	if (n >= RT_PACK_BATCH_SEQS)
		return -1;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].seq_id = seq;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].n_tokens = 0;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].pos_min = 0x7fffffff;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].pos_max = -1;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].n_logits = 0;
	sc->rec.seqs[n & (RT_PACK_BATCH_SEQS - 1)].pad = 0;
	sc->rec.n_seqs = n + 1;
	return (int)n;
}

/*
 * Token i of the n that rt_pack_batch_begin() returned, in order. Returns
 * 0 to go on, 1 to stop (a fault: the record says RT_PACK_BATCH_FAULT and
 * n_read the tokens counted before it).
 */
static inline int rt_pack_batch_token(struct rt_pack_batch_scan *sc, __u32 i, __u32 n)
{
	__u32 j = i & (RT_PACK_CHUNK - 1);
	struct rt_pack_seq *s;
	__s32 seq = 0;
	__u64 p;
	int k;

	if (j == 0 && rt_pack_batch_chunk(sc, i, n))
		goto fault;
	if (sc->seq_id) {
		/* seq_id[i][0]: a token listed under several sequences counts for its first */
		p = sc->seqp_c[j];
		if (!p)
			goto fault;
		if (p == sc->seq_prev_ptr) {
			seq = sc->seq_prev;
		} else {
			if (RT_PACK_READ(&seq, sizeof(seq), p))
				goto fault;
			sc->seq_prev_ptr = p;
			sc->seq_prev = seq;
		}
	}
	k = rt_pack_batch_slot(sc, seq);
	if (k < 0) {
		/* counted once per run of tokens: a distinct count needs a set */
		if (!sc->drop_any || sc->seq_drop_prev != seq)
			sc->rec.seqs_dropped++;
		sc->drop_any = 1;
		sc->seq_drop_prev = seq;
		sc->last_dropped = 1;
		sc->rec.n_read = i + 1;
		return 0;
	}
	sc->last = (__u32)k;
	sc->last_dropped = 0;
	s = &sc->rec.seqs[k & (RT_PACK_BATCH_SEQS - 1)];
	s->n_tokens++;
	if (sc->pos) {
		if (sc->pos_c[j] < s->pos_min)
			s->pos_min = sc->pos_c[j];
		if (sc->pos_c[j] > s->pos_max)
			s->pos_max = sc->pos_c[j];
	}
	if (sc->logits && sc->logits_c[j])
		s->n_logits++;
	sc->rec.n_read = i + 1;
	return 0;
fault:
	sc->rec.flags |= RT_PACK_BATCH_FAULT;
	return 1;
}

/*
 * After the token loop: without batch.pos the positions are the library's
 * (pos_min = pos_max = -1); without batch.logits only the batch's last token
 * produces output, credited when the read reached it.
 */
static inline void rt_pack_batch_end(struct rt_pack_batch_scan *sc)
{
	__u32 k;

	for (k = 0; k < RT_PACK_BATCH_SEQS; k++) {
		if (k >= sc->rec.n_seqs)
			break;
		if (!sc->pos || sc->rec.seqs[k].pos_max < 0) {
			sc->rec.seqs[k].pos_min = -1;
			sc->rec.seqs[k].pos_max = -1;
		}
	}
	if (!sc->logits && sc->rec.n_read && sc->rec.n_read == sc->rec.n_tokens &&
	    !sc->last_dropped && sc->last < sc->rec.n_seqs)
		sc->rec.seqs[sc->last & (RT_PACK_BATCH_SEQS - 1)].n_logits = 1;
}

#endif /* REQTRACE_PACK_BATCH_H */
