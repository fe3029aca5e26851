#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A real llama.cpp engine, traced zero-code: node-llama-cpp 3.21.1 (CPU
prebuilt, 2 compute threads) serving a tiny random-weight GGUF this test
writes, behind tests/engines/llama/server.mjs.

Checks (what works without packs or markers today):
  every request has exactly one span, and its response_id is the server's
  span first-token and end instants vs the server's own log of its writes
  span TTFT and duration vs the client's own measurement
  events_out = tokens the server streamed
  the concurrent pair really ran on two sequences at once

Printed only (the compute-pool rule is another part of issue 13): the
server's threads (comm, role guess, CPU over the run from /proc), threads
that lived only inside the run (disposable ggml compute threads), span CPU
per thread, and the daemon's unattributed CPU.

Needs root/BPF and node-llama-cpp (install.sh, from npm): without them it
skips, or fails when CI=true.
"""

import os
import select
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
MS = 1e6
TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")
PROMPT = ("hello the world of tracing a request through the model server and "
          "back again with every token it makes for the test")
N_SEQ, N_PAR, MAX_TOKENS = 6, 8, 12
UV_POOL = 4  # libuv's pool size for the server (UV_THREADPOOL_SIZE)


def install():
    r = subprocess.run([os.path.join(HERE, "install.sh")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=900)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        lc.cannot_run("node-llama-cpp could not be installed (install.sh exit %d)"
                      % r.returncode)
    return r.stdout.strip().splitlines()[-1]


def thread_stat(pid, tid):
    """(comm, utime+stime ms, starttime ticks) of one thread, None when gone."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    f = s[s.rindex(")") + 2:].split()
    return comm, (int(f[11]) + int(f[12])) * TICK_MS, int(f[19])


def proc_cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    f = s[s.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) * TICK_MS


def threads(pid):
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        st = thread_stat(pid, int(t))
        if st:
            out[int(t)] = st
    return out


class Sampler(threading.Thread):
    """Lists the server's threads every ~2 ms: threads born and gone within
    the run (ggml's per-graph compute threads) show up only this way."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.seen, self.stop_ev = pid, {}, threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                for t in os.listdir("/proc/%d/task" % self.pid):
                    tid = int(t)
                    st = thread_stat(self.pid, tid)
                    if st:
                        self.seen[tid] = st
            except OSError:
                return
            time.sleep(0.002)


def main():
    lc.require_root()
    modules = install()
    d = tb.tmpdir()
    gguf = os.path.join(d, "tiny.gguf")
    subprocess.run([sys.executable, os.path.join(HERE, "gguf_write.py"), gguf], check=True)
    truth_path = os.path.join(d, "truth.jsonl")
    err = open(os.path.join(d, "server.log"), "w")
    t0 = time.monotonic()
    srv = subprocess.Popen(["node", os.path.join(HERE, "server.mjs"), "--model", gguf,
                            "--modules", modules, "--port", "0", "--truth", truth_path,
                            "--threads", "2", "--sequences", "2"],
                           env=dict(os.environ, UV_THREADPOOL_SIZE=str(UV_POOL)),
                           stdout=subprocess.PIPE, stderr=err, text=True)
    # model load takes seconds; a server stuck before listening must not
    # hold the test until ctest's timeout
    ready, _, _ = select.select([srv.stdout], [], [], 180)
    line = srv.stdout.readline() if ready else ""
    if not line.startswith("listening on "):
        srv.kill()
        err.close()
        check(False, "server.mjs came up (got %r; log in %s)" % (line, d))
        lc.finish()
    port = int(line.strip().rsplit(":", 1)[1])
    log("server pid %d on port %d, model loaded in %.1f s" % (srv.pid, port, time.monotonic() - t0))
    daemon = lc.Daemon(["--pid", str(srv.pid)])
    try:
        st0 = daemon.status()
        cpu0 = proc_cpu_ms(srv.pid)
        th0 = threads(srv.pid)
        sampler = Sampler(srv.pid)
        sampler.start()
        seq, r1 = lc.run_load(port, "--concurrency", 1, "--requests", N_SEQ, "--stream",
                              "--max-tokens", MAX_TOKENS, "--id-prefix", "seq-",
                              "--prompt-text", PROMPT)
        par, r2 = lc.run_load(port, "--concurrency", 2, "--requests", N_PAR, "--stream",
                              "--max-tokens", MAX_TOKENS, "--id-prefix", "par-",
                              "--prompt-text", PROMPT)
        sampler.stop_ev.set()
        sampler.join()
        cpu1 = proc_cpu_ms(srv.pid)
        th1 = threads(srv.pid)
        check(r1.returncode == 0 and r2.returncode == 0 and all(x["ok"] for x in seq + par),
              "node-llama-cpp served %d requests, each a valid OpenAI stream" % (N_SEQ + N_PAR))
        client = {x["request_id"]: x for x in seq + par}
        spans = daemon.wait_spans(0, ids=set(client))
        time.sleep(0.5)
        spans = daemon.spans()
        st1 = daemon.status()
        truth = {t["request_id"]: t for t in lc.read_jsonl(truth_path)}
        compare(spans, client, truth)
        report_cpu(srv.pid, spans, client, th0, th1, sampler.seen,
                   cpu1 - cpu0, st0, st1)
    finally:
        srv.terminate()
        srv.wait(10)
        err.close()
        daemon.stop()
    lc.finish()


def outside(ns, lo, hi):
    """ms by which ns falls outside [lo, hi]; 0 inside, huge when missing."""
    if ns is None:
        return 1e9
    return max(lo - ns, ns - hi, 0) / MS


def compare(spans, client, truth):
    by_id = {}
    for s in spans:
        by_id.setdefault(s["request_id"], []).append(s)
    missing = [i for i in client if len(by_id.get(i, [])) != 1]
    check(not missing and len(spans) == len(client),
          "one span per request (%d spans for %d requests; missing or doubled: %s)"
          % (len(spans), len(client), missing[:4]))
    check(set(truth) == set(client), "the server logged every request (%d)" % len(truth))
    rows, worst, diffs = [], {}, {}

    def note(key, v):
        worst[key] = max(worst.get(key, 0.0), abs(v))
        diffs.setdefault(key, []).append(abs(v))

    bad_resp, bad_ev = [], []
    for rid, c in sorted(client.items()):
        if len(by_id.get(rid, [])) != 1 or rid not in truth:
            continue
        s, t = by_id[rid][0], truth[rid]
        if s.get("response_id") != t["response_id"]:
            bad_resp.append((rid, s.get("response_id"), t["response_id"]))
        if s["events_out"] != t["completion_tokens"]:
            bad_ev.append((rid, s["events_out"], t["completion_tokens"]))
        # how far outside the server's bracket around the write the span's
        # instant is (0 inside): scheduling delays widen the bracket, not this
        d_ft = outside(s["first_token_ns"], t["token_write_start_ns"][0], t["token_write_ns"][0])
        d_end = outside(s["end_ns"], t["end_start_ns"], t["end_ns"])
        d_ttft = s["ttft_ms"] - c["ttft_ms"] if s["ttft_ms"] is not None else 1e9
        d_tot = s["duration_ms"] - c["total_ms"]
        for k, v in (("first_token_vs_server", d_ft), ("end_vs_server", d_end),
                     ("ttft_vs_client", d_ttft), ("total_vs_client", d_tot)):
            note(k, v)
            if abs(v) > 2.0:
                rows.append("  %-8s %s %+.3f ms (span %s)" % (
                    rid, k, v, {x: s.get(x) for x in ("arrival_ns", "start_ns", "received_ns",
                                                     "first_token_ns", "end_ns", "events_out")}))
        rows.append("  %-8s seq %d ttft %7.2f ms (client %7.2f) total %8.2f ms (client %8.2f)"
                    " server prefill %6.2f ms tokenize %.3f ms"
                    % (rid, t["sequence"], s["ttft_ms"] or -1, c["ttft_ms"], s["duration_ms"],
                       c["total_ms"], (t["first_token_ns"] - t["prefill_start_ns"]) / MS,
                       (t["tokenize_end_ns"] - t["tokenize_start_ns"]) / MS))
    log("per request (span vs client; server's own prefill and tokenize):")
    for r in rows:
        log(r)
    log("worst |diff| ms: " + ", ".join("%s %.3f" % kv for kv in sorted(worst.items())))
    check(not bad_resp, "span response_id is the server's cmpl-N id (wrong: %s)" % bad_resp[:3])
    check(not bad_ev, "events_out = tokens streamed (wrong: %s)" % bad_ev[:3])
    # instants against the server's own log of the same writes: the span's
    # write(2) entry/exit lies between the server's clock reads around it
    # (same clock), whatever the scheduler did; 0.1 ms for the reads themselves
    check(worst.get("first_token_vs_server", 1e9) <= 0.1,
          "span first_token_ns inside the server's bracket around its first write "
          "(worst %.3f ms outside)" % worst.get("first_token_vs_server", 1e9))
    check(worst.get("end_vs_server", 1e9) <= 0.1,
          "span end_ns inside the server's bracket around res.end "
          "(worst %.3f ms outside)" % worst.get("end_vs_server", 1e9))
    widths = sorted((t["token_write_ns"][0] - t["token_write_start_ns"][0]) / MS
                    for t in truth.values() if t.get("token_write_ns"))
    if widths:
        log("server's first-write brackets: median %.3f ms, max %.3f ms (scheduling)"
            % (lc.pct(widths, 50), widths[-1]))
    # against the client, at the other end of loopback: its reads wait for
    # the load generator to be scheduled (on a busy 2-CPU machine a first
    # token was read 24 ms after the server's write while the span matched
    # the write within 0.3 ms), so the median is held, the worst printed
    for key, what in (("ttft_vs_client", "ttft_ms"), ("total_vs_client", "duration_ms")):
        med = lc.pct(diffs.get(key, [1e9]), 50)
        check(med <= 2.0, "span %s within 2 ms of the client's, median over requests "
              "(median %.3f ms, worst %.3f ms)" % (what, med, worst.get(key, 1e9)))
    # two sequences at once: the pair overlapped in the engine (prefill of
    # one while the other was generating, on the other sequence)
    par = sorted((t for t in truth.values() if t["request_id"].startswith("par-")),
                 key=lambda t: t["admitted_ns"])
    overlaps = sum(1 for a, b in zip(par, par[1:])
                   if a["sequence"] != b["sequence"] and b["admitted_ns"] < a["end_ns"])
    check(overlaps >= 1, "concurrent requests ran on two sequences at once (%d overlapping "
          "pairs of %d)" % (overlaps, len(par) - 1))
    # the server's barrier (server.mjs): both requests asked for their next
    # token in the same tick, so node-llama-cpp put both into one batch
    shared = sum(t.get("shared_steps", 0) for t in par)
    check(shared >= len(par), "concurrent requests shared decode steps (%d shared steps over "
          "%d requests of %d tokens)" % (shared, len(par), MAX_TOKENS))
    check(all(t.get("shared_steps", 0) == 0 for t in truth.values()
              if t["request_id"].startswith("seq-")),
          "sequential requests never shared a step")


def roles(pid, th):
    """A guess at each thread's job: every thread of node is called "node".
    Node starts V8's platform workers before any JS runs; libuv creates its
    pool (UV_THREADPOOL_SIZE, set to 4 here) at the first queued work, so
    the newest UV_POOL threads alive before the run are the pool, which runs
    llama_decode (node-llama-cpp queues each batch as N-API async work)."""
    others = sorted((t for t in th if t != pid), key=lambda t: (th[t][2], t))
    pool = set(others[-UV_POOL:])
    out = {}
    for t in th:
        if t == pid:
            out[t] = "JS main thread (HTTP, tokenize, sampling glue)"
        elif t in pool:
            out[t] = "libuv pool (guess): llama_decode caller"
        else:
            out[t] = "V8 platform / other runtime (guess)"
    return out


def report_cpu(pid, spans, client, th0, th1, seen, proc_ms, st0, st1):
    log("threads of the server (comm, CPU during the run from /proc):")
    guess = roles(pid, th0)
    live_sum = 0.0
    for tid in sorted(set(th0) | set(th1)):
        a, b = th0.get(tid), th1.get(tid)
        cpu = (b[1] if b else seen.get(tid, (None, 0.0))[1]) - (a[1] if a else 0.0)
        live_sum += cpu
        comm = (b or a)[0]
        log("  tid %-7d %-16s %8.1f ms  %s%s" % (tid, comm, cpu,
                                                  guess.get(tid, "born in the run"),
                                                  "" if b else " (exited)"))
    transient = sorted(t for t in seen if t not in th0 and t not in th1)
    log("threads seen only inside the run (sampled every ~2 ms): %d %s"
        % (len(transient), sorted(set(seen[t][0] for t in transient))))
    gone_ms = proc_ms - live_sum
    log("process CPU over the run %.1f ms; threads alive at the ends %.1f ms; "
        "threads that came and went %.1f ms" % (proc_ms, live_sum, gone_ms))
    mine = [s for s in spans if s["request_id"] in client]
    span_ms = sum(s["cpu"]["on_cpu_ms"] for s in mine)
    per_tid = {}
    for s in mine:
        for t in s["cpu"]["threads"]:
            k = (t["tid"], t["comm"])
            per_tid[k] = per_tid.get(k, 0.0) + t["on_cpu_ms"]
    log("span CPU %.1f ms over %d spans, per thread: %s" % (
        span_ms, len(mine), ", ".join("%d/%s %.1f" % (k[0], k[1], v)
                                      for k, v in sorted(per_tid.items()))))
    un = (st1["correlator"]["unattributed_cpu_ms"] -
          st0["correlator"]["unattributed_cpu_ms"])
    log("daemon unattributed_cpu_ms over the run %.1f; span CPU + unattributed = %.1f ms "
        "vs process %.1f ms (%.0f%%)" % (un, span_ms + un, proc_ms,
                                         100.0 * (span_ms + un) / proc_ms if proc_ms else 0))


if __name__ == "__main__":
    main()
