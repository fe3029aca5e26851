/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Correlator internals shared by its files (correlator.c, conn.c, cpu.c,
 * markers.c, finalize.c). Not a public header.
 */
#ifndef RT_CORRELATE_INTERNAL_H
#define RT_CORRELATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <reqtrace/event.h>
#include <reqtrace/span.h>

#include "common/hmap.h"
#include "correlate/correlator.h"
#include "correlate/gpu.h"
#include "gpu_state.h"
#include "proto/stream.h"
#include "zmq_asm.h"

#define RT_THREAD_OWNERS_MAX 32 /* persistent I/O owners of one thread */
#define RT_THREAD_SERVED_MAX 256 /* requests an engine thread serves in one burst */
/*
 * A burst with less on-CPU time than this took a lock, it did no work: its
 * hand-off carries over a wakeup that hands over nothing (docs/spans.md).
 * Contended futex paths run for microseconds; work for a request, longer.
 */
#define RT_HANDOFF_BRIEF_NS 100000
/* Below this, a stint's wall time over its runtime is clock noise (cpu.c). */
#define RT_NOT_RUN_MIN_NS 50000
#define RT_THREAD_MARK_MAX 8 /* concurrent exclusive marker owners */
#define RT_REQ_TOUCHED_MAX 32 /* threads a request may need flushed */
#define RT_REQ_GAPS_MAX 4096 /* inter-token gaps kept exactly */
#define RT_REQ_MARK_IV_MAX 32 /* marker intervals kept per request */
#define RT_CONN_FIFO_MAX RT_STREAM_FIFO_MAX /* pipelined requests awaiting responses */
#define RT_CORR_CPUS_MAX 4096 /* switch records of CPUs beyond are not used for gap repair */
#define RT_CONN_CARRIED_MAX 32 /* writes in flight on an internal hop */
#define RT_STEP_MEMBERS_MAX 256 /* = RT_MARK_STEP_MAX in reqtrace/marker.h */
#define RT_THREAD_COMM_IV_MAX 16 /* blocked peer reads a thread holds until it serves */
#define RT_THREAD_SLICES_MAX 16 /* on-CPU stretches of a burst's residual */
#define RT_POOL_THREADS_MAX 1024 /* compute-pool threads cut at each change of the engine's work */

/* Where a thread's open step came from: precedence marker > pack (docs/spans.md). */
enum rt_step_src {
	RT_STEP_MARKER = 0, /* rt_mark_step_begin() (markers.c) */
	RT_STEP_PACK = 1, /* an engine pack's step (pack.c) */
};

/* A stretch of time [from, to). */
struct rt_iv {
	uint64_t from, to;
};

struct rt_engine_set;

struct rt_proc {
	/* what records read first, in one cache line; the names after */
	uint32_t pid;
	uint32_t group_id;
	bool glinked;
	bool engine_pack; /* an engine pack's calls came from it: they name its engine threads */
	uint64_t set_ver; /* group 0: bumped when its requests join or leave an engine set */
	struct rt_engine_set *eset; /* gpu.c: its engine set, made on its first GPU call */
	struct rt_req *reqs; /* its requests in flight (rt_req.pnext) */
	struct rt_proc *gnext, *gprev; /* the other processes of its group (rt_correlator.groups) */
	struct rt_thread *threads; /* those whose rt_thread.proc is this (rt_thread.tnext) */
	uint64_t unreadable[RT_UNREADABLE__COUNT];
	char group[RT_NAME_LEN];
	char comm[RT_COMM_LEN];
};

/* slots of rt_correlator.group_ver: groups that share one only invalidate more often */
#define RT_GROUP_VER_SLOTS 1024

enum rt_req_state {
	RT_REQ_RECEIVING = 0, /* request bytes arriving */
	RT_REQ_WAITING = 1, /* fully read, no response byte yet */
	RT_REQ_RESPONDING = 2,
};

/* A request's interval arrays, allocated on first use (rt_req_iv_get). */
struct rt_req_iv {
	struct rt_iv mark_iv[RT_REQ_MARK_IV_MAX];
	uint8_t mark_iv_phase[RT_REQ_MARK_IV_MAX];
	struct rt_iv comm_iv[RT_SPAN_INTERVALS_MAX];
};

struct rt_req {
	uint64_t serial;
	/* what charging a piece of CPU time reads first, next to the serial */
	bool ended;
	/* the client left (its read returned 0): nothing is charged to this
	 * request any more, whatever comes before the request ends */
	uint64_t frozen_ns;
	uint32_t n_touched;
	uint32_t touched[RT_REQ_TOUCHED_MAX]; /* tids that may hold time for us */
	uint64_t last_activity;
	struct rt_gpu_acc *gpu; /* GPU work attributed so far (gpu.c), NULL: none */
	/* markers: per phase, open interval start (0: closed) */
	uint64_t mark_open[RT_PHASE__COUNT];
	uint32_t mark_tid[RT_PHASE__COUNT]; /* thread a marker interval claims */
	/* where gpu points once used: an allocation of its own was one more
	 * miss per GPU record and request */
	struct rt_gpu_acc gpu_acc;
	uint64_t conn_serial;
	uint32_t pid;
	int32_t fd;
	enum rt_req_state state;
	bool id_from_header;
	/* on its process's list; NULL: its process was not known (counted in orphan_reqs) */
	struct rt_proc *proc;
	struct rt_req *pnext, *pprev;

	uint64_t resp_first_enter; /* entry of the first response write */

	/* markers: per phase, totals */
	int64_t mark_total[RT_PHASE__COUNT];
	int64_t mark_comm_in[RT_PHASE__COUNT]; /* marker comm wait inside this phase */
	uint32_t mark_seen; /* bit per phase */
	/*
	 * Closed marker intervals (clipped to the span, for the overlap rule)
	 * and comm-wait pieces live in iv, allocated by the first of either:
	 * most requests have neither, and inline they were ~0.9 KB of each
	 * request in flight.
	 */
	struct rt_req_iv *iv;
	uint32_t n_mark_iv;
	uint64_t mark_iv_min, mark_iv_max; /* extent of the intervals beyond the array */
	uint32_t mark_iv_dropped[RT_PHASE__COUNT]; /* per phase, beyond the array */

	/* comm wait seen by probes (outbound sockets), split at the first token */
	int64_t comm_before_ft, comm_after_ft;
	bool comm_seen;
	uint64_t comm_group; /* last exchange group credited to us */
	/* where that comm wait was: its pieces (iv->comm_iv), for the span's timeline */
	uint32_t n_comm_iv, comm_iv_dropped;

	/* inter-token gaps */
	uint64_t last_event_enter;
	uint32_t n_gaps;
	int64_t *gaps; /* grown up to RT_REQ_GAPS_MAX */
	uint32_t gaps_cap;
	int64_t gap_max;

	uint64_t bind_key; /* hash of an engine id bound to this request, 0: none */

	struct rt_req_pack *pack; /* engine pack observations (pack.c), NULL: none */
	struct rt_req_vllm *vllm; /* vLLM engine requests joined (vllm.c), NULL: none */
	uint64_t vllm_tried; /* vllm.c: what a join was last tried with (0: never) */
	uint32_t recv_tid; /* the thread whose read completed the request, 0: unknown */
	uint32_t span_thread_hint; /* cpu.c: span.cpu.threads[] index last found */
	uint64_t slices_end; /* cpu.c: no slice of span.cpu ends after it */
	/*
	 * cpu.c: with span.cpu's slice list full, a tournament tree over it
	 * (nodes 1..31, children 2v and 2v+1, leaves 32 + slice index) whose
	 * root is the shortest slice, the first one on a tie; valid while
	 * slices_tt_ok
	 */
	uint8_t slices_tt[RT_SPAN_SLICES_MAX];
	bool slices_tt_ok;
	int32_t id_slot; /* the response's "id_slot" (llama-server's sequence), -1: none seen */
	/* started before the trace and joined mid-body: the first event seen is
	 * not its first token; resp_last_exit: exit of the last write seen */
	bool mid_body;
	uint64_t resp_last_exit;
	/* last: its fields are far apart, and the request's own ones above are read more */
	struct rt_span span;
};

enum rt_run_state {
	RT_RUN_UNKNOWN = 0,
	RT_RUN_ONCPU = 1,
	RT_RUN_RUNNABLE = 2,
	RT_RUN_BLOCKED = 3,
};

struct rt_thread {
	/*
	 * Fields every scheduler record reads or writes come first, in the
	 * first three cache lines (threads are allocated line-aligned): with
	 * thousands of threads in flight each record's thread is a miss, and
	 * a thread's state was spread over a dozen lines.
	 */
	uint32_t tid, pid;
	enum rt_run_state run;
	bool in_burst;
	bool in_step;
	/* an event loop that exchanges engine messages (vllm.c): a burst that
	 * handled requests (messages, socket bytes) is theirs alone, not every
	 * I/O owner's (docs/spans.md, "vLLM") */
	bool msg_loop;
	bool engine_calls; /* it made an engine pack's calls (rule 3 in a packed process) */
	uint64_t since; /* start of the current run state */
	/* the current stint on a CPU: when it began and the kernel's runtime
	 * count then, and that count when it last left a CPU (0: unknown) */
	uint64_t oncpu_ns, runtime_in, runtime_out;
	/* on-CPU time of this burst; the hand-off of the last burst if it was
	 * brief (a lock taken, not work done), for the next wakeup */
	int64_t burst_on;
	/* burst time not under markers, charged to the burst's owners when the
	 * burst ends (or a request it holds time for ends) */
	int64_t resid_on;

	int64_t resid_runq;
	/* rule 3: the request handed over by the wakeup that began this burst */
	uint64_t handoff;
	uint64_t brief_handoff;
	char comm[RT_COMM_LEN];
	uint32_t n_io; /* io[] below */
	uint32_t n_mark; /* mark[] below */
	uint32_t n_served; /* served[] below */
	uint32_t n_rslice; /* rslice[] below */
	uint32_t n_grp; /* grp[] below */
	uint32_t n_pool_runq; /* pool_runq[] below */

	/* its process while in c->procs, NULL: not looked up yet (rt_thread_proc()) */
	struct rt_proc *proc;
	struct rt_thread *tnext, *tprev; /* the other threads of proc (rt_proc.threads) */
	/*
	 * Compute pools (pool.c, docs/spans.md "Compute pools"). A pool thread
	 * is linked to the engine thread whose work it does (pool_link): for
	 * its life when that thread created it during a step or a parallel
	 * region, for one burst when it woke it then.
	 */
	bool pool_life; /* born of engine work: linked while it lives */
	bool pool_burst; /* this burst was started by engine work */
	bool pool_listed; /* in rt_correlator.pool_tids */
	/* proc's engine_pack, kept here: the process is one more miss a wakeup */
	bool proc_pack;
	/* parallel regions (RT_PACK_REGION) this thread is inside; seen any */
	bool region_seen;
	uint32_t region_depth;
	uint32_t pool_link; /* tid of the engine thread, 0: none */
	uint32_t brief_pool; /* pool_link of the last burst if it was brief (a lock) */
	uint32_t n_step; /* step[] below */
	uint32_t served_cap, rslice_dropped, grp_dropped;

	/* comm wait (blocked peer reads) held until the thread next serves */
	int64_t comm_pending;

	/* rule 2: persistent owners through I/O */
	uint64_t io[RT_THREAD_OWNERS_MAX];
	/* rule 4: requests served in this burst, up to RT_THREAD_SERVED_MAX */
	uint64_t *served;
	/* rule 1: markers */
	uint64_t mark[RT_THREAD_MARK_MAX];
	uint8_t mark_phase[RT_THREAD_MARK_MAX];
	uint64_t step_id;
	uint64_t *step; /* members of the open step, RT_STEP_MEMBERS_MAX slots */
	/* tokens each member of the open step advanced (STEP_TOKENS records),
	 * parallel to step[]; usable when every member got its count */
	uint32_t *step_tok;
	uint32_t n_step_tok;
	uint8_t step_src; /* enum rt_step_src of the open step */
	uint32_t step_last_index; /* the last STEP_MEMBER's list index ... */
	int32_t step_last_slot; /* ... and its slot in step[], -1: not kept */
	/*
	 * An engine-message loop's burst, cut at the events that name
	 * requests (docs/spans.md, "vLLM"): the group of the last event (its
	 * time, whether work follows it, its requests) and the on-CPU time not
	 * yet charged that goes with it (carry, run over [carry_from, carry_to]).
	 */
	uint64_t grp_ts;
	bool grp_reads;
	uint64_t *grp; /* RT_THREAD_SERVED_MAX slots, made on first use */
	int64_t grp_carry;
	uint64_t carry_from, carry_to;
	/* when resid_on ran: its on-CPU stretches, for the owners' slices */
	struct rt_iv rslice[RT_THREAD_SLICES_MAX];
	uint64_t comm_group;
	bool comm_served;
	struct rt_iv comm_iv[RT_THREAD_COMM_IV_MAX]; /* the pieces of comm_pending */
	uint32_t n_comm_iv, comm_iv_dropped;
	uint32_t cap_pool_runq; /* pool_runq[] allocated, grown by doubling */
	/* runqueue pieces a pool thread was charged since its last switch
	 * record: some were on CPU if its switch-in went unrecorded (pool.c) */
	struct rt_pool_runq *pool_runq;
	void *mem; /* the allocation this line-aligned thread lies in (rt_thread_free()) */
};

#define RT_POOL_RUNQ_MAX 64 /* pieces kept between two switch records */
#define RT_POOL_RUNQ_REQS 8 /* requests a kept piece may name */
struct rt_pool_runq {
	uint64_t from, to;
	uint32_t n;
	uint8_t source; /* enum rt_work_source */
	bool spin, spin_known;
	uint64_t serial[RT_POOL_RUNQ_REQS];
	int64_t share[RT_POOL_RUNQ_REQS];
};

/* The last ARRIVAL of a connection, waiting for the read it belongs to. */
struct rt_arrival {
	uint64_t ts; /* the read's exit, as the RECV record's */
	uint64_t data_ns;
	uint64_t established_ns;
	uint32_t tid;
	uint32_t flags; /* RT_ARR_* */
	bool valid;
};

/* A connection (pid, fd) from accept/connect/first I/O to close. */
struct rt_conn {
	uint64_t serial;
	uint32_t pid;
	int32_t fd;
	bool predates; /* first seen by its I/O: the parser joined mid-stream */
	bool counted; /* on its process's list in rt_correlator.conns_of */
	struct rt_conn *pnext, *pprev; /* that list */
	bool rx_seen; /* a read of it returned bytes */
	struct rt_arrival arrival;
	uint64_t established_ns; /* handshake completed (ARRIVAL), 0: unknown */
	uint64_t last_end_ns; /* entry of the write that ended the last response: a client that
				 waits for it sends no sooner, yet may before that write returns */
	bool outbound; /* we connect()ed: a peer, not a client */
	bool unreadable; /* parser gave up: TLS, HTTP/2, garbage */
	bool comm_peer; /* outbound, not HTTP: waits on it are comm wait */
	bool peer_kind_known;
	bool first_data_seen; /* the first bytes (either direction) were checked for ZMTP */
	bool zmtp; /* opened with a ZMTP greeting: ZeroMQ plumbing, no parsing, no comm wait */
	uint64_t peer_closed_ns; /* the client's read side returned 0 */
	char desc[RT_SPAN_CONN_MAX];
	uint32_t seq; /* requests seen */
	struct rt_stream stream; /* the HTTP parsers, fed through the stream driver */
	uint64_t receiving; /* request being read, 0: none */
	uint64_t fifo[RT_CONN_FIFO_MAX]; /* read, awaiting response, oldest first */
	uint32_t n_fifo;
	uint64_t responding; /* request whose response is being written */
	/* a response joined mid-body on a connection older than the trace: its
	 * request (0: none) and the parser that frames it (cut.c) */
	uint64_t cut;
	struct rt_http_resp_parser *cut_parser;
	bool cut_tried; /* one such response per connection */
	uint64_t last_activity;
	/* both ends' addresses (AF_UNIX: socket inodes), to find the other end */
	struct rt_sock_addr local, peer;
	uint64_t end_key; /* key in c->ends, 0: not registered */
	/* the other end is a connection of a process of the same target group:
	 * a hop inside the service (front end to engine), not a client */
	bool internal;
	uint64_t twin_key; /* the other end's end_key */
	/* bytes written on this end and for which request, so the reader of
	 * the other end knows whose bytes it reads (internal hops) */
	uint64_t sent, recvd;
	struct {
		uint64_t end; /* sent offset where this request's bytes end */
		uint64_t req;
	} carried[RT_CONN_CARRIED_MAX];
	uint32_t n_carried;
};

/* An emitted span kept for late amendment. */
struct rt_recent {
	bool used;
	struct rt_span span;
};

struct rt_correlator {
	struct rt_correlator_opts o;
	struct rt_correlator_stats st;
	struct rt_zmq_asm *zmq; /* ZMQ_MSG frames into messages (zmq_asm.h) */
	uint64_t now; /* ts of the newest event applied */
	uint64_t last_scan; /* last idle scan */
	uint64_t next_serial;

	struct rt_hmap procs; /* pid → rt_proc */
	struct rt_hmap threads; /* tid → rt_thread */
	struct rt_hmap conns; /* (pid, fd) → rt_conn */
	struct rt_hmap reqs; /* serial → rt_req */
	struct rt_hmap req_ids; /* hash(request id) → rt_req (latest) */
	struct rt_hmap binds; /* hash(engine id) → hash(request id), as a uintptr */
	struct rt_hmap ends; /* endpoint pair key → rt_conn: a connection's two ends */

	uint64_t unreadable[RT_CORR_GROUPS_MAX][RT_UNREADABLE__COUNT];
	uint64_t cpu_last_switch[RT_CORR_CPUS_MAX]; /* ts of the last switch seen per CPU */

	struct rt_recent *recent;
	uint32_t recent_head;

	struct rt_gpu_state gpu; /* gpu.c */
	struct rt_pack_state *pack; /* pack.c, NULL until a pack record came */
	struct rt_vllm_state *vllm; /* vllm.c, NULL until a vLLM message came */
	/*
	 * Engine set versions (gpu.c caches each process's set): a request of
	 * a group entering or leaving the set, or a process joining or leaving
	 * the group, bumps its group's slot (the process's set_ver without a
	 * group); procs_ver covers the rest (processes without a group).
	 */
	uint64_t group_ver[RT_GROUP_VER_SLOTS];
	uint64_t procs_ver;
	/*
	 * The engine set without scanning every request: group id → its first
	 * process (rt_proc.gnext), each with its requests. Requests whose
	 * process was unknown or is gone, or a group that could not be listed,
	 * make gpu.c scan the request table as before.
	 */
	struct rt_hmap groups;
	uint64_t orphan_reqs;
	bool groups_lost;
	/* pid → its first connection in c->conns (rt_conn.pnext): a process
	 * exit closes its own without scanning every connection */
	struct rt_hmap conns_of;
	bool conns_of_lost;

	/* compute-pool threads (pool.c), cut when what the engine works for changes */
	uint32_t pool_tids[RT_POOL_THREADS_MAX];
	uint32_t n_pool;

	/* an ARRIVAL for a connection not known yet (first seen by that very
	 * read): held here until its RECV makes the connection */
	uint32_t arr_pid;
	int32_t arr_fd;
	struct rt_arrival arr_unknown;
};

/* correlator.c */
struct rt_proc *rt_proc_get(struct rt_correlator *c, uint32_t pid, bool create);
static inline struct rt_req *rt_req_get(struct rt_correlator *c, uint64_t serial)
{
	return serial ? (struct rt_req *)rt_hmap_get(&c->reqs, serial) : NULL;
}
/*
 * rt_req_get() of serials[0..n) into out, the lookups overlapped: the
 * slots are loaded first, then each request's head (and with cpu, its
 * span's CPU counters), so that n misses cost about one.
 */
void rt_reqs_get(struct rt_correlator *c, const uint64_t *serials, uint32_t n, struct rt_req **out,
		 bool cpu);
struct rt_req *rt_req_by_id(struct rt_correlator *c, const char *id);
struct rt_req *rt_req_new(struct rt_correlator *c, struct rt_conn *conn, uint64_t start_ns);
void rt_req_set_id(struct rt_correlator *c, struct rt_req *r, const char *id);
/* r's state changed in a way that may move it in or out of its group's engine set. */
void rt_req_set_changed(struct rt_correlator *c, const struct rt_req *r);
/* Frees a process that is no longer in c->procs. */
void rt_proc_free(struct rt_proc *p);
/* p leaves c->procs: off its group's list, its requests orphaned. */
void rt_proc_drop(struct rt_correlator *c, struct rt_proc *p);
/* Drops r without a span (it was never a valid request). */
void rt_req_discard(struct rt_correlator *c, struct rt_req *r, uint64_t ts);
/* Ends r: finalises and emits its span, releases ownerships, frees it. */
void rt_req_end(struct rt_correlator *c, struct rt_req *r, uint64_t end_ns,
		enum rt_outcome outcome);

/* conn.c */
void rt_conn_on_accept(struct rt_correlator *c, const struct rt_ev_sock_conn *ev, bool outbound);
void rt_conn_on_io(struct rt_correlator *c, const struct rt_ev_sock_io *ev);
void rt_conn_on_close(struct rt_correlator *c, const struct rt_ev_sock_close *ev);
void rt_conn_on_arrival(struct rt_correlator *c, const struct rt_ev_sock_arrival *ev);
void rt_conn_free(struct rt_correlator *c, struct rt_conn *conn);
void rt_conns_proc_exit(struct rt_correlator *c, uint32_t pid, uint64_t ts);

/* cut.c: a response joined mid-body, framed by a parser of its own */
/* p starts with a chunk-size line ("1a\r\n", "1a;ext\r\n") */
bool rt_cut_chunk_start(const uint8_t *p, size_t n);
/* makes conn->cut_parser, placed where a chunked SSE body's first chunk starts */
int rt_cut_open(struct rt_conn *conn);
/* feeds one write's head, gap and tail; returns the parser's error, 0 */
int rt_cut_feed(struct rt_conn *conn, const struct rt_ev_sock_io *io,
		const struct rt_http_resp_cb *cb, void *ctx);
void rt_cut_close(struct rt_conn *conn);

/* cpu.c */
struct rt_thread *rt_thread_get(struct rt_correlator *c, uint32_t tid, uint32_t pid, bool create);
void rt_thread_free(struct rt_correlator *c, struct rt_thread *t);
/* t's process if known (in c->procs), else NULL; kept on t until the process leaves */
struct rt_proc *rt_thread_proc(struct rt_correlator *c, struct rt_thread *t);
/* The thread tid of pid when both are known (no lookup of the process once t holds it), else NULL. */
struct rt_thread *rt_thread_known(struct rt_correlator *c, uint32_t tid, uint32_t pid);
/* p leaves c->procs: its threads forget it. */
void rt_proc_threads_drop(struct rt_proc *p);
void rt_cpu_on_switch(struct rt_correlator *c, const struct rt_ev_sched_switch *ev);
void rt_cpu_on_waking(struct rt_correlator *c, const struct rt_ev_sched_waking *ev);
/* Rule 1 claims t for serial (after accounting up to the claim). */
void rt_cpu_claim_begins(struct rt_correlator *c, struct rt_thread *t, uint64_t serial);
/* A record the thread made itself (a syscall, a uprobe): it is on a CPU. */
void rt_cpu_on_own_record(struct rt_correlator *c, const struct rt_event_hdr *ev);
void rt_cpu_on_exit(struct rt_correlator *c, uint32_t tid, uint64_t ts);
/* Charge time held for r up to ts (r is about to end). */
void rt_cpu_flush_for(struct rt_correlator *c, struct rt_req *r, uint64_t ts);
/* Thread t does I/O for r at ts: rule 2. */
void rt_cpu_io_owner(struct rt_correlator *c, struct rt_thread *t, struct rt_req *r, uint64_t ts);
/* ns of on-CPU (else runqueue) time that no request owns. */
void rt_cpu_unattributed(struct rt_correlator *c, bool on_cpu, int64_t ns);
/*
 * Thread t, an event loop of engine messages, handled r in this burst
 * (msg_loop) at ts; reads: r's work follows the event (a receipt), else
 * it led up to it (a send).
 */
void rt_cpu_loop_serves(struct rt_correlator *c, struct rt_thread *t, struct rt_req *r, uint64_t ts,
			bool reads);
/* Close the current piece of t's time at ts under its present owners. */
void rt_cpu_account(struct rt_correlator *c, struct rt_thread *t, uint64_t ts);
/*
 * The requests thread t works for now, as far as known: its marker owners
 * (claims, open step) if any, else its I/O owners, hand-off and the
 * requests it served in this burst. Returns the count (at most max).
 */
uint32_t rt_cpu_owners(const struct rt_thread *t, uint64_t *out, uint32_t max);
/* r's cpu.threads entry for t, made on first use; NULL when the list is full (counted). */
struct rt_span_thread *rt_cpu_span_thread(struct rt_req *r, const struct rt_thread *t);
/* cpu.threads in tid order, as the span contract lists them. */
void rt_cpu_sort_threads(struct rt_span_cpu *cpu);
/* Remove r from t's owner sets. */
void rt_cpu_forget(struct rt_thread *t, uint64_t serial);
void rt_req_touch(struct rt_req *r, uint32_t tid);
/* Probe-observed comm wait [enter, exit] by thread t: charged to its owners. */
void rt_cpu_comm_wait(struct rt_correlator *c, struct rt_thread *t, uint64_t enter, uint64_t exit);

/* markers.c */
void rt_marker_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev);
/* Close r's open marker intervals at ts (r ends). */
void rt_marker_close_all(struct rt_req *r, uint64_t ts);

/* pack.c (declared in pack.h): engine pack records → phases and step members */
struct rt_req_pack;
struct rt_pack_state;
/* vllm.c (declared in vllm.h): vLLM engine messages → joins and phases */
struct rt_req_vllm;
struct rt_vllm_state;
/*
 * t's burst [from, ts] has a residual with no owner by rules 2-4 but the
 * hand-off: a vLLM API server's helper thread (the tokenizer executor)
 * keeps it for the ADDs the event loop sends about then (docs/spans.md,
 * "vLLM"). True: held, not charged.
 */
bool rt_vllm_hold(struct rt_correlator *c, const struct rt_thread *t, int64_t on, int64_t runq,
		  uint64_t from, uint64_t ts);

/* gpu.c: CUDA/NCCL CPU-side records (uprobes, CUPTI DRIVER) and device
 * records (CUPTI) attributed to requests; fills span.gpu and comm wait. */
struct rt_gpu_acc;
void rt_gpu_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev);
/* r is ending: fill r->span.gpu (and comm wait) from what was attributed. */
void rt_gpu_finish(struct rt_correlator *c, struct rt_req *r);
void rt_gpu_release(struct rt_req *r);
/* A process's cached engine set; NULL is fine. */
void rt_engine_set_free(struct rt_engine_set *s);
/*
 * Who a GPU record on ev->tid of ev->pid is for, as docs/gpu.md's
 * "Attribution" says (markers, I/O owners, engine set): live requests, at
 * most RT_GPU_SHARE_MAX, into out. Returns the count.
 */
struct rt_gpu_who {
	uint32_t n;
	uint32_t split; /* enum rt_gpu_split: the rule that named them */
	uint32_t source; /* enum rt_work_source (rt_working_for()) */
	uint64_t weight_sum; /* of w[0..n) */
	struct rt_req *req[RT_GPU_SHARE_MAX];
	uint32_t w[RT_GPU_SHARE_MAX]; /* tokens each advanced (split TOKENS), else 1 */
};
uint32_t rt_gpu_owners(struct rt_correlator *c, const struct rt_event_hdr *ev,
		       struct rt_gpu_who *who);
/*
 * Shares of q among who's requests by their weights, into out[0..n): each
 * gets floor(q * w / sum), and what that leaves to one sharer, chosen in
 * turn (*turn), so the shares sum to q.
 */
void rt_gpu_split_q(uint64_t q, const struct rt_gpu_who *who, uint32_t *turn, uint64_t *out);
/* r's interval arrays, allocated on first use; NULL when memory ran out. */
struct rt_req_iv *rt_req_iv_get(struct rt_req *r);
/* r's GPU accumulator (r->gpu_acc), cleared on first use; never NULL. */
struct rt_gpu_acc *rt_gpu_acc_of(struct rt_req *r);

/* working.c: who the engine is working for (docs/spans.md) */
/* The engine set of pid's group, oldest first, into out[RT_GPU_SHARE_MAX]. */
uint32_t rt_engine_set(struct rt_correlator *c, uint32_t pid, uint64_t *out);
/* Live requests of ids[0..n) into who, weight 1; queued ones left out when skip_queued. */
uint32_t rt_work_resolve(struct rt_correlator *c, const uint64_t *ids, uint32_t n,
			 struct rt_gpu_who *who, bool skip_queued);
/* t's open step weighted by tokens when t has no claims and every member its count, else 0. */
uint32_t rt_work_step_tokens(struct rt_correlator *c, const struct rt_thread *t,
			     struct rt_gpu_who *who);
/* t's open step members (by tokens when known, else equally); 0 when t is in no step. */
uint32_t rt_work_step(struct rt_correlator *c, const struct rt_thread *t, struct rt_gpu_who *who);
/*
 * The requests the engine is working for, seen from engine thread t (NULL:
 * none known) of process pid: t's open step members, else pid's engine set.
 * who->source says which (enum rt_work_source).
 */
uint32_t rt_working_for(struct rt_correlator *c, const struct rt_thread *t, uint32_t pid,
			struct rt_gpu_who *who);

/* pool.c: the CPU of compute pools (docs/spans.md, "Compute pools") */
/*
 * What the engine works for may change at ts (a step begins or ends, a
 * request enters or leaves an engine set, a region opens): every pool
 * thread's time up to ts is charged under the old state first.
 */
void rt_pool_cut(struct rt_correlator *c, uint64_t ts);
/* A TASK_NEW: a thread born of a thread doing engine work is a pool thread. */
void rt_pool_on_task_new(struct rt_correlator *c, const struct rt_ev_task_new *ev);
/* w woke t (rule 3 done): t's burst is pool work when w was doing engine work. */
void rt_pool_on_wake(struct rt_correlator *c, struct rt_thread *t, struct rt_thread *w);
/* t comes back on a CPU unwoken, or its burst ends: the brief-lock carry (as rule 3's). */
void rt_pool_resume_unwoken(struct rt_correlator *c, struct rt_thread *t);
void rt_pool_end_burst(struct rt_thread *t);
/* A PACK_CALL record of role RT_PACK_REGION (entry or return). */
void rt_pool_on_region(struct rt_correlator *c, const struct rt_ev_pack_call *ev);
/*
 * A piece of t's time with no owner of its own (no marker, no burst owner):
 * charged to what t's engine works for when t is a pool thread. Returns
 * false when t is not one now (the caller keeps the piece as before).
 */
/*
 * w is doing engine work (a step with members, a parallel region): what it
 * wakes is linked by the pool rule, never handed w's rule-3 owner.
 */
bool rt_pool_engine_busy(const struct rt_thread *w);
/*
 * t's switch-in went unrecorded and it was on a CPU over [from, to), which
 * pool.c charged as runqueue meanwhile: that part becomes on-CPU time of
 * the requests it went to. Then (at every switch record of t) the pieces
 * kept for this are dropped.
 */
void rt_pool_runq_was_on(struct rt_correlator *c, struct rt_thread *t, uint64_t from, uint64_t to);
void rt_pool_runq_reset(struct rt_thread *t);
bool rt_pool_charge(struct rt_correlator *c, struct rt_thread *t, bool on_cpu, int64_t ns,
		    uint64_t from, uint64_t to);

/* gpu_device.c: CUPTI device records joined to requests through their DRIVER
 * records by correlation id, and the GPU busy fraction per device. */
/* A CUPTI DRIVER record (corr_id != 0): remembers whom the call was for. */
void rt_gpu_device_on_driver(struct rt_correlator *c, const struct rt_ev_cuda_api *e);
/* Any other CUPTI record (KERNEL, MEMCPY, MEMSET charge device time; the rest is counted). */
void rt_gpu_device_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev);
/* Fills st->busy and st->n_busy (rt_gpu_stats). */
void rt_gpu_device_stats(const struct rt_correlator *c, struct rt_gpu_stats *st);
/* Frees the join tables (rt_correlator__free). */
void rt_gpu_device_free(struct rt_correlator *c);

/* gpu_link.c: a LINK_SAMPLE record (NVML counters). */
void rt_gpu_link_on_event(struct rt_correlator *c, const struct rt_event_hdr *ev);

/* finalize.c */
void rt_span_finalize(struct rt_req *r);
void rt_span_add_gap(struct rt_req *r, int64_t gap);
/* A piece [from, to) of the probe comm wait credited to r (bounded, counted beyond). */
void rt_req_comm_piece(struct rt_req *r, uint64_t from, uint64_t to);
/*
 * Thread tid ran on a CPU for r over [from, to): a slice of r's timeline,
 * merged with a slice of the same thread it touches or overlaps.
 */
void rt_span_slice_add(struct rt_req *r, uint32_t tid, uint64_t from, uint64_t to, bool shared);

#endif /* RT_CORRELATE_INTERNAL_H */
