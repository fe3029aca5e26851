/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulated inference server and its clients: scenario configuration,
 * per-request state and the facts the truth pass needs. server.c drives the
 * threads (acceptor, thread-per-connection handlers, a tokenizer, an engine
 * loop, untraced noise), http_bytes.c builds the bytes on the wire,
 * truth.c and truth_cpu.c turn the facts into the span contract's values.
 */
#ifndef RT_GEN_MODEL_H
#define RT_GEN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gen.h"
#include "sim.h"

#define GEN_MAX_REQS 16
#define GEN_MAX_CONNS 4
#define GEN_MAX_TOKENS 48
#define GEN_MAX_STEPS 64
#define GEN_MAX_REPORTED 8
#define GEN_PID 4242
#define GEN_NOISE_PID 777
#define GEN_LISTEN_FD 5
#define GEN_PEER_FD 6
#define GEN_SERVER_PORT 8080
#define GEN_PEER_PORT 29500

/* How generated text travels in SSE events. */
enum gen_fmt {
	GEN_FMT_TEXT = 0, /* /v1/completions: choices[].text */
	GEN_FMT_CHAT = 1, /* /v1/chat/completions: choices[].delta.content */
	GEN_FMT_LLAMA = 2, /* llama.cpp /completion: content, final event with timings */
};

struct gen_req_cfg {
	int conn;
	uint64_t at_ns; /* first request on a connection: sent this long after it opens */
	uint64_t think_ns; /* later ones: after the previous response ended */
	int n_tokens;
	int prompt_len; /* prompt characters (tokenizer cost) */
	uint8_t fmt; /* enum gen_fmt */
	bool stream;
	bool with_id; /* x-request-id header (always in marker mode) */
	bool auth; /* an Authorization header the parser must drop */
	bool empty_first; /* an empty (role-only) event goes out with the headers */
	bool hdr_with_first; /* no headers write: headers travel with the first token */
	bool split_head_body; /* head and body arrive separately */
	bool awkward_split; /* arrives in many small pieces at awkward offsets */
	bool chunked_body; /* request body in chunked transfer encoding */
	bool pipelined_next; /* the next request is sent in the same segment */
	int abort_after; /* the client closes after this many content events (0: never) */
	bool two_writes; /* non-streamed: headers and body in two writes */
	bool large_final; /* llama: ~3 KiB final event with timings at its end */
	bool coalesce; /* the handler writes every pending token in one write */
	int spec_every; /* every n-th step yields two tokens (speculative decoding); 0: never */
};

struct gen_scenario {
	const char *name;
	const char *desc;
	int n_conns;
	uint64_t conn_at[GEN_MAX_CONNS]; /* connection opens, ns after the start */
	int n_reqs;
	struct gen_req_cfg reqs[GEN_MAX_REQS];
	bool comm; /* engine exchanges with a peer rank every step */
	uint64_t comm_lo, comm_hi; /* peer reply delay */
	uint16_t recv_sys, send_sys, final_sys; /* enum rt_sock_syscall */
	int noise; /* untraced CPU hogs (0-2) */
	/* the kernel's receive path is traced: ARRIVAL records before reads */
	bool arrival;
	/* handler threads, each serving its connections one after another
	 * (connection i goes to handler i % n_handlers); 0: one per connection */
	int n_handlers;
	/*
	 * compute pools around the engine's step (docs/spans.md "Compute
	 * pools"): each step's work is a parallel region (PACK_CALL REGION
	 * records, both modes); a sleeping worker woken in it, a spinning
	 * worker created by the first one, and a runtime thread that is
	 * never engine work
	 */
	bool pool;
};

/* http_bytes.c: a growable byte string */
struct gen_str {
	char *p;
	size_t len, cap;
	int err;
};

struct gen_interval {
	uint64_t t0, t1;
};

struct gen_reported {
	char name[40];
	char value[24]; /* as written in the response */
};

struct gen_req {
	const struct gen_req_cfg *cfg;
	int idx, conn, seq;
	char id[64];
	const char *method, *path;
	size_t off_begin, off_end, head_end; /* in the connection's client stream */
	int prompt_tokens;

	/* engine and handler progress */
	bool sent, tokenized;
	int planned; /* tokens the engine has scheduled */
	int steps; /* engine steps it took part in */
	int produced; /* tokens handed to the handler */
	int consumed; /* tokens the handler took */
	bool finished; /* all tokens produced */
	bool eng_abort; /* the handler asked the engine to drop it */
	bool abort_scheduled;
	int open_phase; /* marker phase open on the engine, -1: none */
	int pk_seq; /* pack mode: its sequence id in the engine, -1: none */
	int pk_pos; /* pack mode: next position in its sequence */
	int steps_fed; /* pack mode: batches that listed it */
	uint64_t prefill_ns, first_prod_ns, last_prod_ns;

	/* truth */
	uint64_t arrival; /* as the span contract gives it, 0: null */
	bool arrival_bound; /* arrival is an upper bound: backlog_lower_bound */
	uint64_t start, received, first_tok, last_tok, end, first_write;
	uint64_t end_enter; /* entry of the write that ended the response (else end) */
	uint64_t tok_writes[GEN_MAX_TOKENS];
	int n_tok_writes;
	int64_t tokens_out; /* -1: not reported */
	int status;
	bool aborted, pipelined, done;
	struct gen_interval comm[GEN_MAX_STEPS]; /* blocked peer reads of its steps */
	int n_comm;
	struct gen_reported reported[GEN_MAX_REPORTED];
	int n_reported;
};

enum gen_hstate { GEN_H_WAIT_CONN, GEN_H_READ, GEN_H_TOKENS, GEN_H_DONE };

struct gen_conn {
	int fd;
	uint16_t client_port;
	uint8_t *stream; /* every request the client sends, in order */
	size_t stream_len;
	int first_req, n_reqs;
	int handler; /* thread index */
	int next_conn; /* the handler's next connection after this one, -1: none */
	bool accepted, eof_seen, closed;
	enum gen_hstate hst;
	int cur; /* request being answered, -1: none */
	int next_proc; /* next request to answer, -1: none */
	struct gen_world *w;
};

/* pack mode: one llama_decode batch, a sequence per member */
struct gen_pk_step {
	int n;
	int req[GEN_MAX_REQS];
	struct rt_pack_seq seqs[GEN_MAX_REQS];
};

struct gen_world {
	struct sim sim; /* first: callbacks get the world from their struct sim */
	const struct gen_scenario *sc;
	enum rt_gen_mode mode;
	uint64_t seed;
	uint64_t t_start;
	struct gen_req reqs[GEN_MAX_REQS];
	int n_reqs;
	struct gen_conn conns[GEN_MAX_CONNS];
	int n_conns, conns_closed;
	int th_main, th_tok, th_eng;
	int main_st;
	int accepted;
	int tok_inbox[GEN_MAX_REQS], tok_n;
	int eng_inbox[GEN_MAX_REQS], eng_in_n;
	uint32_t eng_running, eng_waiting; /* request bit masks */
	uint64_t step;
	uint64_t step_t0; /* when the current engine step started */
	bool eng_ready; /* peer connected */
	bool stop_armed;
	/* compute pools (gen_scenario.pool), thread indexes or -1 */
	int th_sleeper, th_spinner, th_runtime, th_disp;
	bool spinner_born;
	bool disp_alive; /* the disposable worker of the current region has not exited */
	uint32_t pool_kicks, pool_taken; /* regions that woke the sleeper, and it took */
	/* pack mode: each step's batch (index: step id), sequence ids in use */
	struct gen_pk_step *pk_steps;
	size_t n_pk_steps, cap_pk_steps;
	uint32_t pk_seq_used;
	int pk_fresh[GEN_MAX_REQS], n_pk_fresh; /* taken this iteration, in inbox order */
};

static inline struct gen_world *gen_world_of(struct sim *s)
{
	return (struct gen_world *)s;
}

/* scenario.c */
const struct gen_scenario *gen_scenario_find(const char *name);
const struct gen_scenario *gen_scenario_at(size_t i);
size_t gen_scenario_n(void);

/* server.c: sets up threads, sockets and client timers; 0 or -errno. */
int gen_server_setup(struct gen_world *w);

/* act.c: queue actions on a simulated thread; markers only in marker mode. */
void gen_mark(struct gen_world *w, struct sim_thread *t, uint16_t kind, uint32_t phase, int req);
void gen_mark_step(struct gen_world *w, struct sim_thread *t, uint16_t kind, uint64_t step,
		   uint32_t mask);
/* CPU work of a random length in [lo, hi] ns */
/* pack mode only: an engine pack's uprobe record (role, entry 0 / return 1) for request req */
void gen_pack_call(struct gen_world *w, struct sim_thread *t, uint16_t role, uint32_t ret, int req);
void gen_burn(struct gen_world *w, struct sim_thread *t, uint64_t lo, uint64_t hi);
/* fn runs (at no cost) when the thread gets there */
void gen_call(struct gen_world *w, struct sim_thread *t, sim_cb fn, int req, long arg);
void gen_wake(struct gen_world *w, struct sim_thread *t, int target, uint32_t reason);
/* sleep until cond() holds; fd >= 0: data or EOF on it wakes the thread too */
void gen_wait(struct gen_world *w, struct sim_thread *t, uint32_t reason, int fd, sim_cond cond);
/* a write of b's bytes (b is consumed), a read of up to 4 KiB */
struct sim_act *gen_send(struct gen_world *w, struct sim_thread *t, int fd, uint16_t syscall,
			 struct gen_str *b, int req, sim_cb done);
struct sim_act *gen_recv(struct gen_world *w, struct sim_thread *t, int fd, uint16_t syscall,
			 sim_cb done);
bool gen_never(struct sim *s, struct sim_thread *t);

/* client.c: timer callbacks (sim_timer_fn) and the client's reaction to a response end */
void gen_conn_open(struct sim *s, uint64_t conn, uint64_t unused);
void gen_client_send(struct sim *s, uint64_t req, uint64_t unused);
void gen_client_close(struct sim *s, uint64_t conn, uint64_t broken);
void gen_client_after(struct gen_world *w, struct gen_req *r);

/* engine.c: thread behaviours */
void gen_tok_behave(struct sim *s, struct sim_thread *t);
void gen_eng_behave(struct sim *s, struct sim_thread *t);
/* compute pools (gen_scenario.pool) */
void gen_sleeper_behave(struct sim *s, struct sim_thread *t);
void gen_spinner_behave(struct sim *s, struct sim_thread *t);
void gen_runtime_behave(struct sim *s, struct sim_thread *t);
void gen_disp_behave(struct sim *s, struct sim_thread *t);

void gs_free(struct gen_str *g);
void gs_put(struct gen_str *g, const char *s, size_t n);
__attribute__((format(printf, 2, 3))) void gs_printf(struct gen_str *g, const char *fmt, ...);

/* The request as the client sends it; *head_len: bytes up to the blank line. */
int gen_http_request(const struct gen_world *w, const struct gen_req *r, struct gen_str *out,
		     size_t *head_len);
/* Response head of a streamed (chunked SSE) or non-streamed (Content-Length) response. */
void gen_http_stream_head(struct gen_str *out);
/* One SSE event in one chunk: text NULL is the empty/role-only event. */
void gen_sse_chunk(struct gen_str *out, enum gen_fmt fmt, const char *text);
/* Token i's text (JSON-escaped) for request r. */
const char *gen_token_text(const struct gen_req *r, int i);
/* Closing writes; fill r->reported and r->tokens_out with what they carry. */
void gen_stream_final(struct gen_str *out, struct gen_req *r);
void gen_llama_final_event(struct gen_str *out, struct gen_req *r);
void gen_chunk_end(struct gen_str *out);
void gen_nonstream_head(struct gen_str *out, size_t body_len);
void gen_nonstream_body(struct gen_str *out, struct gen_req *r);

/* truth.c: one JSON object per request */
int gen_truth_write(struct gen_world *w, const char *path);

/* truth_cpu.c: the CPU each request is charged, per thread (index in sim.threads) */
struct gen_cpu_truth {
	int64_t on[GEN_MAX_REQS][SIM_MAX_THREADS];
	int64_t runq[GEN_MAX_REQS][SIM_MAX_THREADS];
	bool shared[GEN_MAX_REQS][SIM_MAX_THREADS];
	bool charged[GEN_MAX_REQS][SIM_MAX_THREADS];
	bool pool[GEN_MAX_REQS][SIM_MAX_THREADS]; /* charged as a compute pool's */
	int64_t pool_on[GEN_MAX_REQS]; /* pool threads' on-CPU share */
	int64_t off[GEN_MAX_REQS];
};

/* Fills a zeroed *ct from the finished simulation; 0 or -errno. */
int gen_cpu_truth(struct gen_world *w, struct gen_cpu_truth *ct);

/* deliver.c: the records in arrival order with watermarks, to an .rtrace file */
int gen_deliver(struct gen_world *w, const char *path);

#endif /* RT_GEN_MODEL_H */
