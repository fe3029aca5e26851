#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The llama.cpp engine pack on a real engine: node-llama-cpp 3.21.1 (CPU
prebuilt, 2 compute threads) behind tests/engines/llama/server.mjs, traced
by reqtraced with pack_dir = the source tree's configs/packs.

Pack checks, against the server's own log (server.mjs's truth: its step log
wraps node-llama-cpp's native decodeBatch, so its instants bracket each
llama_decode on the server side):
  status: llama-cpp-2025 matched and attached on libllama.v0.4.0.so
  every span: tokenize, prefill, decode non-null with phase_source "pack",
    steps_source "pack", pack.seq = the server's llama.cpp sequence id
  prefill_ms within 3 ms or 5% of the server's prefill (first step that fed
    the prompt to the end of the step that gave its output), less the
    server's own queueing: its threads' runqueue wait in those steps,
    which the server reads from their schedstat; and the span's prefill
    interval inside the server's bracket of those steps
  pack.prefill_steps and pack.decode_steps = the server's step counts
  the tokenize interval inside the server's bracket around model.tokenize
  two concurrent requests (overlapping, on two sequences) each get their
    own prefill: the interval of its own prompt step, not the other's

Per-thread CPU (issue 13's "per-thread truth"), over the run, from /proc
(utime+stime of live threads; the threads that came and went: the process
total less the live threads) and the recorded pack calls (which threads ran
llama_decode):
  compute threads (the libuv pool threads that ran llama_decode, and the
    disposable ggml threads born in the run) land on the spans within 10%
  every charged CPU slice lies inside its request's span (in flight)
  the compute-pool rule never charges the runtime's threads that never ran
    llama code (V8 platform workers, idle libuv threads); how much of their
    CPU other rules charge is printed (the hand-off rule gives V8's workers,
    woken by the JS thread, to a request the JS thread works for alone)

Two rounds: the server alone, then with --runtime-load (chores for nobody
every 10 ms, so V8's workers and libuv's pool run); in round 2 the prefill
tolerance and the pool rule on runtime threads are printed, not held.
  span CPU + the daemon's unattributed on-CPU = the process's CPU within 5%
    (needs status.correlator.unattributed_on_cpu_ms; without it the sum is
    printed, since unattributed_cpu_ms also counts runqueue time)

Needs root/BPF and node-llama-cpp (install.sh, from npm): without them it
skips, or fails when CI=true.
"""

import os
import re
import select
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
sys.path.insert(0, HERE)
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402
import llama_zero_code as lz  # noqa: E402

log, check = lc.log, lc.check
MS = 1e6
PROMPT = lz.PROMPT
N_SEQ, N_PAR, MAX_TOKENS = 4, 6, 10
RUNTIME_LOAD = 10  # ms between server.mjs's runtime chores in round 2


def start_server(d, modules, runtime_load):
    gguf = os.path.join(d, "tiny.gguf")
    subprocess.run([sys.executable, os.path.join(HERE, "gguf_write.py"), gguf], check=True)
    truth_path = os.path.join(d, "truth.jsonl")
    err = open(os.path.join(d, "server.log"), "w")
    srv = subprocess.Popen(["node", os.path.join(HERE, "server.mjs"), "--model", gguf,
                            "--modules", modules, "--port", "0", "--truth", truth_path,
                            "--threads", "2", "--sequences", "2",
                            "--runtime-load", str(runtime_load)],
                           env=dict(os.environ, UV_THREADPOOL_SIZE=str(lz.UV_POOL)),
                           stdout=subprocess.PIPE, stderr=err, text=True)
    ready, _, _ = select.select([srv.stdout], [], [], 180)
    line = srv.stdout.readline() if ready else ""
    if not line.startswith("listening on "):
        srv.kill()
        err.close()
        check(False, "server.mjs came up (got %r; log in %s)" % (line, d))
        lc.finish()
    return srv, err, int(line.strip().rsplit(":", 1)[1]), truth_path


def pack_of(st, name):
    for p in (st.get("packs") or {}).get("list") or []:
        if p["name"] == name:
            return p
    return None


def main():
    lc.require_root()
    modules = lz.install()
    log("== round 1: the server alone")
    run_round(modules, 0)
    log("== round 2: the server's runtime busy for nobody (--runtime-load %d ms)" % RUNTIME_LOAD)
    run_round(modules, RUNTIME_LOAD)
    lc.finish()


def run_round(modules, runtime_load):
    """One server under one reqtraced: sequential then concurrent requests."""
    d = tb.tmpdir()
    srv, err, port, truth_path = start_server(d, modules, runtime_load)
    conf = os.path.join(d, "reqtraced.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\npack_dir = %s\n" % os.path.join(lc.SRC, "configs", "packs"))
    rec = os.path.join(d, "events.rtrace")
    daemon = lc.Daemon(["--config", conf, "--record", rec, "--pid", str(srv.pid)])
    try:
        deadline = time.monotonic() + 15
        while True:
            st0 = daemon.status()
            p25 = pack_of(st0, "llama-cpp-2025")
            if (p25 and p25["attached"] >= 1) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check(p25 is not None and p25["matched"] >= 1 and p25["attached"] >= 1 and
              p25["failed"] == 0, "status: llama-cpp-2025 attached to node-llama-cpp's "
              "libllama: %s" % p25)
        p24 = pack_of(st0, "llama-cpp-2024")
        check(p24 is None or p24["attached"] == 0, "llama-cpp-2024 not attached: %s" % p24)
        cpu0 = lz.proc_cpu_ms(srv.pid)
        th0 = lz.threads(srv.pid)
        sampler = lz.Sampler(srv.pid)
        sampler.start()
        seq, r1 = lc.run_load(port, "--concurrency", 1, "--requests", N_SEQ, "--stream",
                              "--max-tokens", MAX_TOKENS, "--id-prefix", "seq-",
                              "--prompt-text", PROMPT)
        par, r2 = lc.run_load(port, "--concurrency", 2, "--requests", N_PAR, "--stream",
                              "--max-tokens", MAX_TOKENS, "--id-prefix", "par-",
                              "--prompt-text", PROMPT)
        check(r1.returncode == 0 and r2.returncode == 0 and all(x["ok"] for x in seq + par),
              "node-llama-cpp served %d requests, each a valid OpenAI stream" % (N_SEQ + N_PAR))
        client = {x["request_id"]: x for x in seq + par}
        daemon.wait_spans(0, ids=set(client))
        time.sleep(0.5)
        spans = daemon.spans()
        # the daemon's counters and /proc are read at the same end (the
        # runtime load, if any, runs on: both see it)
        st1 = daemon.status()
        cpu1 = lz.proc_cpu_ms(srv.pid)
        th1 = lz.threads(srv.pid)
        sampler.stop_ev.set()
        sampler.join()
        truth = {t["request_id"]: t for t in lc.read_jsonl(truth_path)}
        check(set(truth) == set(client), "the server logged every request (%d)" % len(truth))
        by_id = {s["request_id"]: s for s in spans if s["request_id"] in client}
        check(len(by_id) == len(client), "a span for every request (%d of %d)"
              % (len(by_id), len(client)))
        pack_checks(by_id, truth, runtime_load == 0)
        srv.terminate()
        srv.wait(10)
        daemon.stop()
        cpu_checks(srv.pid, rec, by_id, th0, th1, sampler.seen, cpu1 - cpu0, st0, st1,
                   runtime_load)
    finally:
        if srv.poll() is None:
            srv.terminate()
            srv.wait(10)
        err.close()
        daemon.stop()


def server_steps(t):
    """(prefill steps, decode steps, prefill start, prefill end, the JS
    thread's runqueue wait in those steps) from the server's step log:
    steps feed the prompt until one gives its output."""
    steps = t.get("steps") or []
    k = next((i for i, s in enumerate(steps) if s[3] > 0), None)
    if k is None:
        return len(steps), 0, None, None, 0
    return (k + 1, len(steps) - k - 1, steps[0][0], steps[k][1],
            sum(s[5] for s in steps[:k + 1]))


def interval(s, phase):
    ivs = [iv for iv in s.get("intervals") or [] if iv["phase"] == phase]
    if not ivs:
        return None
    return min(iv["start_ns"] for iv in ivs), max(iv["end_ns"] for iv in ivs)


def pack_checks(by_id, truth, strict_prefill):
    bad_src, bad_steps, bad_prefill, bad_iv, bad_tok, bad_seq = [], [], [], [], [], []
    worst = 0.0
    log("per request: span prefill vs the server's (ms), steps span/server, tokenize ms:")
    for rid in sorted(by_id):
        s, t = by_id[rid], truth.get(rid)
        if t is None:
            continue
        ph, src, pk = s["phases"], s.get("phase_source") or {}, s.get("pack") or {}
        for k in ("tokenize", "prefill", "decode"):
            if ph.get(k + "_ms") is None or src.get(k) != "pack":
                bad_src.append((rid, k, ph.get(k + "_ms"), src.get(k)))
        if s.get("steps_source") != "pack":
            bad_src.append((rid, "steps_source", s.get("steps_source")))
        n_pre, n_dec, pre0, pre1, runq = server_steps(t)
        if (pk.get("prefill_steps"), pk.get("decode_steps")) != (n_pre, n_dec):
            bad_steps.append((rid, pk.get("prefill_steps"), pk.get("decode_steps"), n_pre, n_dec))
        if pk.get("seq") != t.get("seq_id"):
            bad_seq.append((rid, pk.get("seq"), t.get("seq_id")))
        # The server's prefill starts when its JS thread queues the step to
        # libuv and ends when it takes the completion: longer than the
        # llama_decode calls by the kernel's queueing of its threads on a
        # busy machine (a libuv thread waiting for a CPU before it enters
        # llama_decode, the JS thread after it), as the client's view is.
        # The server measures its threads' runqueue wait in the steps itself
        # (schedstat run_delay of the JS, libuv and V8 threads), but not
        # which part fell outside llama_decode: its prefill less queueing
        # lies in [raw - wait, raw].
        # d_pre: how far outside that the span's is.
        raw_pre = (pre1 - pre0) / MS if pre0 is not None else None
        srv_pre = raw_pre - runq / MS if raw_pre is not None else None
        d_pre = None
        if raw_pre is not None and ph.get("prefill_ms") is not None:
            v = ph["prefill_ms"]
            d_pre = v - raw_pre if v > raw_pre else (v - srv_pre if v < srv_pre else 0.0)
        if d_pre is None or abs(d_pre) > max(3.0, 0.05 * raw_pre):
            bad_prefill.append((rid, ph.get("prefill_ms"), srv_pre, raw_pre))
        if d_pre is not None:
            worst = max(worst, abs(d_pre))
        iv = interval(s, "prefill")
        # the server's instants bracket the native calls (0.1 ms for its clock reads)
        if iv is None or pre0 is None or iv[0] < pre0 - 0.1 * MS or iv[1] > pre1 + 0.1 * MS:
            bad_iv.append((rid, iv, (pre0, pre1)))
        tiv = interval(s, "tokenize")
        if tiv is None or tiv[0] < t["tokenize_start_ns"] - 0.1 * MS or \
                tiv[1] > t["tokenize_end_ns"] + 0.1 * MS:
            bad_tok.append((rid, tiv, (t["tokenize_start_ns"], t["tokenize_end_ns"])))
        log("  %-7s seq %s  prefill %7.3f (server %7.3f..%7.3f, runq %.3f; %+.3f)"
            "  steps %s/%s (server %d/%d)  tokenize %.3f (server %.3f)  queue %s decode %s" % (
                rid, pk.get("seq"), ph.get("prefill_ms") or -1, srv_pre or -1, raw_pre or -1,
                runq / MS, d_pre if d_pre is not None else float("nan"), pk.get("prefill_steps"),
                pk.get("decode_steps"), n_pre, n_dec, ph.get("tokenize_ms") or -1,
                (t["tokenize_end_ns"] - t["tokenize_start_ns"]) / MS, ph.get("queue_ms"),
                ph.get("decode_ms")))
    check(not bad_src, "tokenize, prefill, decode non-null with source pack, steps_source "
          "pack (wrong: %s)" % bad_src[:4])
    check(not bad_seq, "pack.seq = the server's sequence id (wrong: %s)" % bad_seq[:4])
    check(not bad_steps, "prefill and decode steps counted exactly (span/server wrong: %s)"
          % bad_steps[:4])
    what = ("prefill within 3 ms or 5%% of the server's, less its own queueing (worst "
            "|diff| %.3f ms; wrong: %s)"
            % (worst, bad_prefill[:4]))
    if strict_prefill:
        check(not bad_prefill, what)
    else:
        # the server's instants are taken on its JS thread: with that thread
        # busy they are late by its queueing (the containment check above
        # still holds); printed only
        log("printed: " + what)
    check(not bad_iv, "prefill interval inside the server's bracket of its prompt steps "
          "(wrong: %s)" % bad_iv[:3])
    check(not bad_tok, "tokenize interval inside the server's bracket around tokenize "
          "(wrong: %s)" % bad_tok[:3])
    # concurrent pairs: overlapping requests on two sequences each got the
    # prefill of their own prompt step
    par = sorted((t for t in truth.values() if t["request_id"].startswith("par-")
                  and t["request_id"] in by_id), key=lambda t: t["admitted_ns"])
    pairs, own = 0, 0
    for a, b in zip(par, par[1:]):
        if a["seq_id"] == b["seq_id"] or b["admitted_ns"] >= a["end_ns"]:
            continue
        pairs += 1
        ok = True
        for t in (a, b):
            iv = interval(by_id[t["request_id"]], "prefill")
            _, _, p0, p1, _ = server_steps(t)
            ok = ok and iv is not None and p0 is not None and \
                p0 - 0.1 * MS <= iv[0] and iv[1] <= p1 + 0.1 * MS
        own += ok
    check(pairs >= 1 and own == pairs, "two concurrent requests each get their own prefill "
          "(%d of %d overlapping pairs)" % (own, pairs))


def decode_tids(rec, pid):
    """Threads that ran llama_decode, from the recorded pack calls."""
    r = subprocess.run([lc.REQTRACE, "replay", rec, "--events"], capture_output=True,
                       text=True, timeout=300)
    check(r.returncode == 0, "replay --events of the recording: exit %d" % r.returncode)
    tids, llama = set(), set()
    pat = re.compile(r"\bPACK_CALL\s+pid=%d tid=(\d+) pack=\d+ role=(\w+)" % pid)
    for line in r.stdout.splitlines():
        m = pat.search(line)
        if m:
            llama.add(int(m.group(1)))
            if m.group(2) == "decode":
                tids.add(int(m.group(1)))
    return tids, llama


def cpu_checks(pid, rec, by_id, th0, th1, seen, proc_ms, st0, st1, runtime_load):
    dec, llama = decode_tids(rec, pid)
    cpu = {}
    for tid in set(th0) | set(th1):
        a, b = th0.get(tid), th1.get(tid)
        cpu[tid] = (b[1] if b else seen.get(tid, (None, 0.0))[1]) - (a[1] if a else 0.0)
    live_sum = sum(v for t, v in cpu.items() if t in th1)
    # threads that exited in the run (disposable ggml threads; a pre-run
    # thread that exited counts with its last sample, in cpu[])
    gone = proc_ms - live_sum - sum(v for t, v in cpu.items() if t not in th1)
    born = {t for t in th1 if t not in th0}
    compute = {t for t in th0 if t in dec and t != pid} | born
    runtime = {t for t in th0 if t != pid and t not in llama}
    span_tid, span_total, span_runq = {}, 0.0, 0.0
    rt_pool, rt_seq, rt_par = 0.0, 0.0, 0.0
    for s in by_id.values():
        span_total += s["cpu"]["on_cpu_ms"]
        span_runq += s["cpu"]["runq_ms"]
        for t in s["cpu"]["threads"]:
            span_tid[t["tid"]] = span_tid.get(t["tid"], 0.0) + t["on_cpu_ms"]
            if t["tid"] in runtime:
                if t.get("pool"):
                    rt_pool += t["on_cpu_ms"]
                if s["request_id"].startswith("seq-"):
                    rt_seq += t["on_cpu_ms"]
                else:
                    rt_par += t["on_cpu_ms"]
    # cpu.threads lists 16 threads per span in tid order: the threads that
    # existed before the run (lower tids) are always listed; what is not
    # listed is born threads' time
    listed_old = sum(v for t, v in span_tid.items() if t in th0)
    span_born = span_total - listed_old
    log("threads (tid, role, CPU in the run from /proc, on spans):")
    for tid in sorted(cpu):
        role = ("JS main thread" if tid == pid else
                "llama_decode caller (libuv pool)" if tid in dec else
                "ran llama code" if tid in llama else
                "born in the run" if tid in born else "runtime, never ran llama code")
        log("  %-7d %-34s %8.1f ms  spans %8.1f ms" % (tid, role, cpu[tid], span_tid.get(tid, 0.0)))
    transient = [t for t in seen if t not in th0 and t not in th1]
    log("threads that came and went: %.1f ms of CPU (%d seen by sampling); spans hold "
        "%.1f ms on threads born in the run" % (gone, len(transient), span_born))
    truth_compute = sum(cpu[t] for t in compute if t in cpu) + gone
    span_compute = sum(span_tid.get(t, 0.0) for t in compute if t in th0) + span_born
    log("compute threads: %.1f ms from /proc, %.1f ms on spans (%.1f%%)" % (
        truth_compute, span_compute, 100.0 * span_compute / truth_compute if truth_compute else 0))
    # in flight: every charged slice lies inside its request's span
    outside = [(s["request_id"], sl["tid"]) for s in by_id.values()
               for sl in s["cpu"].get("slices") or []
               if sl["start_ns"] < (s.get("arrival_ns") or s["start_ns"]) or
               sl["end_ns"] > s["end_ns"]]
    n_sl = sum(len(s["cpu"].get("slices") or []) for s in by_id.values())
    check(n_sl > 0 and not outside, "the CPU charged to a request ran while it was in flight "
          "(%d slices, outside: %s)" % (n_sl, outside[:4]))
    what = ("compute threads' CPU lands on the requests within 10%% (/proc %.1f ms, spans %.1f "
            "ms)" % (truth_compute, span_compute))
    within = truth_compute > 0 and abs(span_compute - truth_compute) <= 0.10 * truth_compute
    if runtime_load == 0:
        check(within, what)
    else:
        # round 2's chores run pbkdf2 on libuv's pool, the same threads that
        # call llama_decode: /proc cannot take that work (rightly nobody's)
        # out of theirs, so the comparison has no exact truth here (seen:
        # 83.5-98.1%, lower the busier the machine)
        log("printed (pbkdf2 shares the compute threads): %s: %s"
            % (what, "holds" if within else "does not hold"))
    rt_cpu = sum(cpu.get(t, 0.0) for t in runtime)
    rt_span = sum(span_tid.get(t, 0.0) for t in runtime)
    # the compute-pool rule does not spread them over the engine set
    what = ("the compute-pool rule leaves the runtime's threads alone (%d threads, %.1f ms "
            "CPU, %.3f ms on spans as pool)" % (len(runtime), rt_cpu, rt_pool))
    check(bool(runtime), "threads that never ran llama code found (%d)" % len(runtime))
    if runtime_load == 0:
        check(rt_pool == 0.0, what)
    else:
        # docs/spans.md's limit: a V8 worker woken by a compute thread
        # (mmap_lock released by a ggml thread that exits, seen in a
        # recording) is taken for a pool thread for that burst, and its
        # wakeups of the other workers pass the link on; printed, not held
        log("printed: " + what)
    # V8's GC helpers are woken by the JS thread (and wake it back) while
    # it works for one request alone; in a process whose engine the pack
    # reads, a thread that never made its calls is the runtime's and rules
    # 3 and 4 give it nothing (docs/spans.md): only the pool rule's
    # documented limit above may charge it (1 ms for rounding)
    check(rt_span - rt_pool <= 1.0,
          "the runtime's threads that never ran llama code stay unattributed but for the "
          "pool rule's limit (%.1f ms CPU, %.3f ms on spans: %.3f on sequential requests, "
          "%.3f on concurrent ones, %.3f as pool)" % (rt_cpu, rt_span, rt_seq, rt_par, rt_pool))
    c0, c1 = st0["correlator"], st1["correlator"]
    un_all = c1["unattributed_cpu_ms"] - c0["unattributed_cpu_ms"]
    if "unattributed_on_cpu_ms" in c1:
        un = c1["unattributed_on_cpu_ms"] - c0["unattributed_on_cpu_ms"]
        tot = span_total + un
        log("span on-CPU %.1f + unattributed on-CPU %.1f = %.1f ms vs process %.1f ms "
            "(%.1f%%); runqueue: spans %.1f, unattributed %.1f" % (
                span_total, un, tot, proc_ms, 100.0 * tot / proc_ms if proc_ms else 0,
                span_runq, un_all - un))
        check(proc_ms > 0 and abs(tot - proc_ms) <= 0.05 * proc_ms,
              "span CPU + unattributed = process CPU within 5%% (%.1f vs %.1f ms)"
              % (tot, proc_ms))
    else:
        log("NOT CHECKED (status has no unattributed_on_cpu_ms): span on-CPU %.1f + runq %.1f "
            "+ unattributed (on-CPU + runq) %.1f = %.1f ms vs process on-CPU %.1f ms" % (
                span_total, span_runq, un_all, span_total + span_runq + un_all, proc_ms))


if __name__ == "__main__":
    main()
