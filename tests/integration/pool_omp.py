#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Per-thread truth on a real OpenMP compute pool (issue 13, "Done when").

The testbed's `omp` backend (docs/testbed.md, "OpenMP backend") runs every
engine step as CPU work over a libgomp parallel region: the engine thread and
libgomp's workers ("tb-omp"), which spin between regions
(omp_wait_policy=2, active) or sleep (1, passive). A runtime thread ("tb-gc")
burns CPU every 20 ms and never works for a request. Under reqtraced, with
--markers (zero-code needs the libgomp pack: see pool_omp.cmake), both wait
policies:

  (a) span cpu.on_cpu_ms plus the daemon's unattributed_on_cpu_ms equals the
      process's on-CPU time over the run (/proc schedstat) within 5%; and the
      same on CPU + runqueue on both sides (unattributed_cpu_ms holds both)
  (b) the engine thread's CPU lands on the spans within 10%; each pool
      worker's CPU while requests were in flight lands on the spans within
      10%, and per request within 10% of what the rule gives it by the
      backend's step log: inside a step (the worker's CPU clock read at the
      step's begin and end) to the step's members (markers) or the engine set
      (zero-code); between steps (a spinning worker's spin) to the engine set
      (received, not ended, not queued), evenly over the instants where that
      set differs
  (c) the runtime thread's CPU is on no span, and is in unattributed

The run is bracketed by SIGSTOP: /proc and the daemon's counters are read
while the testbed is stopped and the daemon has caught up, so both cover
exactly the same CPU (a spinning pool never idles otherwise).

usage: pool_omp.py [--mode zero-code|markers|both] [--policy passive|active|both]
                   [--concurrency C] [--requests N]
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
MS = 1e6
POLICIES = {"passive": 1, "active": 2}


def tasks(pid):
    """{tid: (comm, on-CPU ns, runqueue ns)} of every thread of pid (schedstat: ns, not
    ticks; its run_delay is the time runnable but not running, the spans' runq_ms)."""
    out = {}
    base = "/proc/%d/task" % pid
    for t in os.listdir(base):
        try:
            with open("%s/%s/schedstat" % (base, t)) as f:
                ns = [int(x) for x in f.read().split()[:2]]
            with open("%s/%s/comm" % (base, t)) as f:
                comm = f.read().strip()
        except OSError:
            continue  # exited meanwhile
        out[int(t)] = (comm, ns[0], ns[1])
    return out


def proc_ticks_ms(pid):
    """utime + stime of the whole process (dead threads too), in ms."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def settle(daemon, ids, timeout=30):
    """Waits for every span of ids, then for unattributed to stop moving."""
    spans = daemon.wait_spans(0, timeout=timeout, ids=set(ids))
    last = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.3)
        cur = daemon.status()["correlator"]
        if last is not None and cur["unattributed_cpu_ms"] == last["unattributed_cpu_ms"]:
            break
        last = cur
    return spans, last


def thread_charge(span, tid):
    return sum(t["on_cpu_ms"] for t in span["cpu"]["threads"] if t["tid"] == tid)


def engine_set_at(truth, t, markers, maybe=None):
    """The requests the engine works for at t outside a step (docs/spans.md): received
    and not ended, less (with markers) those waiting in a queue (QUEUE open: the
    testbed's handler opens it when it submits, the tokenizer closes it when it
    starts, the tokenizer opens it again at enqueue, the engine closes it at
    admission). The truth's received_ns and end_ns are stamped when the handler's
    read or last write has returned to it, which can be milliseconds after the
    syscall (seen: 6 ms, the handler preempted by the spinning worker); the daemon
    sees the syscall. So a request is only maybe in the set from its first read
    to received_ns, and from its last token's write (the last write comes after
    it) to end_ns: those go to maybe (a list) when given, else count as in."""
    out = []
    for r in truth:
        if r["received_ns"] is None or t < (r.get("first_read_ns") or r["received_ns"]):
            continue
        if r["end_ns"] is not None and t >= r["end_ns"]:
            continue
        if markers and r["tokenize_start_ns"] is not None and \
                r["received_ns"] <= t < r["tokenize_start_ns"]:
            continue
        if markers and (r["tokenize_start_ns"] is None or
                        (r["enqueue_ns"] is not None and r["enqueue_ns"] <= t and
                         (r["admitted_ns"] is None or t < r["admitted_ns"]))):
            continue
        unsure = t < r["received_ns"] or \
            (r.get("last_token_write_ns") is not None and t >= r["last_token_write_ns"])
        (maybe if unsure and maybe is not None else out).append(r["request_id"])
    return out


GAPS_MIN_NS = 50 * MS  # the wall time between steps that can show a wait policy


def add(d, k, v):
    d[k] = d.get(k, 0.0) + v


def spread(acc, cpu_ms, a, b, truth, markers):
    """cpu_ms that worker spent somewhere in [a, b) goes to the engine set of each
    instant (split at every instant the set changes, equally within; nobody's where
    it is empty). When inside [a, b) it ran is not known: acc["exp"] gets the
    estimate if it ran evenly, acc["lo"]/acc["hi"] what a request gets at least and
    at most however it ran (all of it in the piece that gives the request least,
    or most); the same for nobody's (key None)."""
    if cpu_ms <= 0 or b <= a:
        for k in ("exp", "lo", "hi"):
            add(acc[k], None, max(cpu_ms, 0.0))
        return
    cuts = {a, b}
    for r in truth:
        for k in ("first_read_ns", "received_ns", "tokenize_start_ns", "last_token_write_ns",
                  "end_ns", "enqueue_ns", "admitted_ns"):
            if r.get(k) is not None and a < r[k] < b:
                cuts.add(r[k])
    cuts = sorted(cuts)
    pieces = []
    for x, y in zip(cuts, cuts[1:]):
        maybe = []
        sure = engine_set_at(truth, (x + y) // 2, markers, maybe)
        who = sure + maybe
        pieces.append((sure, maybe))
        part = cpu_ms * (y - x) / (b - a)
        if not who:
            add(acc["exp"], None, part)
        for rid in who:
            add(acc["exp"], rid, part / len(who))

    def least(rid, sure, maybe):
        if rid is None:
            return 0.0 if sure or maybe else 1.0
        return 1.0 / (len(sure) + len(maybe)) if rid in sure else 0.0

    def most(rid, sure, maybe):
        if rid is None:
            return 0.0 if sure else 1.0
        return 1.0 / (len(sure) + 1) if rid in maybe else \
            (1.0 / len(sure) if rid in sure else 0.0)

    everyone = {rid for sure, maybe in pieces for rid in sure + maybe} | {None}
    for rid in everyone:
        add(acc["lo"], rid, cpu_ms * min(least(rid, su, mb) for su, mb in pieces))
        add(acc["hi"], rid, cpu_ms * max(most(rid, su, mb) for su, mb in pieces))


def expected_shares(steps, truth, w, markers, cpu0, cpu1, t0, t1):
    """Worker w's CPU over the run [t0, t1) (its whole CPU clock cpu0 at t0, cpu1 at
    t1) by the rule of docs/spans.md, as spread() gives it, per request (None:
    nobody's): inside a step (the backend's clocks of w at the step's begin and
    end) to the step's members with markers (exact), to the engine set without;
    between steps (a spinning worker's spin) to the engine set."""
    acc = {"exp": {}, "lo": {}, "hi": {}}
    prev_t, prev_cpu = t0, cpu0
    for st in steps:
        mine = [x for x in st.get("workers", []) if x["tid"] == w]
        if not mine:
            continue
        wb = mine[0]["cpu_begin_ns"] or prev_cpu  # born in the step: from its birth
        spread(acc, (wb - prev_cpu) / MS, prev_t, st["begin_ns"], truth, markers)
        in_step = (mine[0]["cpu_end_ns"] - wb) / MS
        if markers:
            who = [m["id"] for m in st["members"]]
            for rid in who:
                for k in ("exp", "lo", "hi"):
                    add(acc[k], rid, in_step / len(who))
        else:
            spread(acc, in_step, st["begin_ns"], st["end_ns"], truth, markers)
        prev_t, prev_cpu = st["end_ns"], mine[0]["cpu_end_ns"]
    spread(acc, (cpu1 - prev_cpu) / MS, prev_t, t1, truth, markers)
    return acc


def one(mode, policy, conc, n):
    label = "%s/%s" % (mode, policy)
    markers = mode == "markers"
    d = tb.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    steps_path = os.path.join(d, "steps.jsonl")
    env = os.environ.copy()
    env["REQTRACE_TB_OMP_TRUTH"] = steps_path
    args = ["--backend", "omp", "--scenario", tb.scenario("omp"), "--port", "0",
            "--truth", truth_path, "--set", "omp_wait_policy=%d" % POLICIES[policy]]
    if markers:
        args.append("--markers")
    server = tb.Testbed(args, env=env, name="testbed-" + label.replace("/", "-"))
    pid = server.pid
    # the source tree's packs (libgomp's regions: zero-code has nothing else)
    conf = os.path.join(d, "reqtraced.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\npack_dir = %s\n" % os.path.join(lc.SRC, "configs", "packs"))
    daemon = lc.Daemon(["--config", conf, "--pid", str(pid)],
                       name="reqtraced-" + label.replace("/", "-"))
    stopped = False
    try:
        time.sleep(0.3)  # the probes are attached once status answers; let the first switches in
        # warm-up: libgomp makes its workers in the first region
        warm, r = lc.run_load(server.port, "--concurrency", 2, "--requests", 2, "--stream",
                              "--id-prefix", "w-")
        check(r.returncode == 0, "%s warm-up load ok" % label)
        os.kill(pid, signal.SIGSTOP)
        stopped = True
        _, u0 = settle(daemon, [x["request_id"] for x in warm])
        p0, ticks0 = tasks(pid), proc_ticks_ms(pid)
        t0 = time.monotonic_ns()  # CLOCK_MONOTONIC, the backend's and the truth's clock
        os.kill(pid, signal.SIGCONT)
        stopped = False
        lines, r = lc.run_load(server.port, "--concurrency", conc, "--requests", n, "--stream",
                               "--id-prefix", "p-")
        os.kill(pid, signal.SIGSTOP)
        t1 = time.monotonic_ns()
        stopped = True
        check(r.returncode == 0, "%s load ok: %s" % (label, r.stderr.strip()[-300:]))
        ids = [x["request_id"] for x in lines]
        got, u1 = settle(daemon, ids)
        p1, ticks1 = tasks(pid), proc_ticks_ms(pid)
        spans = {s["request_id"]: s for s in got if s["request_id"] in set(ids)}
        with open(os.path.join(d, "spans.json"), "w") as f:
            json.dump(spans, f)  # kept with the truth when a check fails
        check(len(spans) == n, "%s a span for each of the %d requests (got %d)"
              % (label, n, len(spans)))
        steps_all = lc.read_jsonl(steps_path)
        truth = [t for t in lc.read_jsonl(truth_path) if t["request_id"] in spans]
        warm_ids = {x["request_id"] for x in warm}
        steps = [s for s in steps_all if not any(m["id"] in warm_ids for m in s["members"])]
        check(steps and all(m["id"] in spans for s in steps for m in s["members"]),
              "%s the run's %d steps are of the run's requests" % (label, len(steps)))

        delta = {t: (p1[t][0], (p1[t][1] - p0.get(t, ("", 0, 0))[1]) / MS,
                     (p1[t][2] - p0.get(t, ("", 0, 0))[2]) / MS) for t in p1}
        proc_ms = sum(v[1] for v in delta.values())
        proc_runq_ms = sum(v[2] for v in delta.values())
        log("%s threads over the run (ms on CPU, from /proc schedstat):" % label)
        for t in sorted(delta):
            if delta[t][1] < 0.5 and not any(x["tid"] == t for s in spans.values()
                                             for x in s["cpu"]["threads"]):
                continue  # an idle handler: not worth a line
            on_spans = sum(thread_charge(s, t) for s in spans.values())
            runq = sum(x["runq_ms"] for s in spans.values() for x in s["cpu"]["threads"]
                       if x["tid"] == t)
            log("  %7d %-16s on CPU %9.2f runq %9.2f   on spans: on CPU %9.2f runq %9.2f"
                % (t, delta[t][0], delta[t][1], delta[t][2], on_spans, runq))

        # (a) the identity, on CPU: span on_cpu_ms + unattributed_on_cpu_ms =
        # the process's on-CPU time. Both sides count the kernel's sum_exec_runtime
        # (the probes' switch records, /proc schedstat) over the same stopped-to-
        # stopped window, so only what no side sees differs: shares rounded down
        # (ns per piece), a piece the daemon cut at a SIGSTOP instant a little off
        # /proc's read, not_run moving on-CPU to runqueue (steal). 5% is the issue's
        # bound; the run prints the real difference (well under 1% when it passes).
        # The same with runqueue on both sides (unattributed_cpu_ms holds both).
        span_ms = sum(s["cpu"]["on_cpu_ms"] for s in spans.values())
        runq_ms = sum(s["cpu"]["runq_ms"] for s in spans.values())
        un_ms = u1["unattributed_cpu_ms"] - u0["unattributed_cpu_ms"]
        check("unattributed_on_cpu_ms" in u1 and "unattributed_runq_ms" in u1,
              "%s status reports unattributed on CPU and runqueue apart" % label)
        un_on = u1.get("unattributed_on_cpu_ms", 0) - u0.get("unattributed_on_cpu_ms", 0)
        un_rq = u1.get("unattributed_runq_ms", 0) - u0.get("unattributed_runq_ms", 0)
        log("%s daemon over the run: late records %d, lost %d, missed switch-ins %d, not run "
            "%.2f ms" % (label, u1["late_events"] - u0["late_events"],
                         u1["lost_records"] - u0["lost_records"],
                         u1["missed_switch_ins"] - u0["missed_switch_ins"],
                         u1["not_run_ms"] - u0["not_run_ms"]))
        log("%s process: on CPU %.2f ms (/proc stat ticks: %.0f ms), runqueue %.2f ms; spans: "
            "on CPU %.2f ms, runqueue %.2f ms; unattributed %.2f ms (on CPU %.2f, runq %.2f)"
            % (label, proc_ms, ticks1 - ticks0, proc_runq_ms, span_ms, runq_ms, un_ms, un_on,
               un_rq))
        check(abs(span_ms + un_on - proc_ms) <= 0.05 * proc_ms,
              "%s (a) span on CPU %.2f + unattributed on CPU %.2f = %.2f ms is the process's "
              "CPU %.2f ms within 5%% (%+.2f%%)"
              % (label, span_ms, un_on, span_ms + un_on, proc_ms,
                 100.0 * (span_ms + un_on - proc_ms) / proc_ms))
        total, want = span_ms + runq_ms + un_ms, proc_ms + proc_runq_ms
        # Steal: a stint the kernel counted shorter than the switches say is
        # runqueue in the spans (not_run, docs/spans.md) but in no /proc
        # run_delay, and the runqueue then drifts past not_run itself (seen
        # on this VM, 2026-12-02: not run 114 ms, runq identity +18%; without
        # steal -0.4..+2%). Where the daemon saw more than 1% of the CPU not
        # run, the runqueue identity has no truth to meet: printed, not
        # asserted. The on-CPU identity above holds either way.
        not_run = u1["not_run_ms"] - u0["not_run_ms"]
        msg = ("%s (a) span on CPU + runq + unattributed %.2f ms is the process's on CPU + "
               "runq %.2f ms within 5%% (%+.2f%%; not run %.2f ms)"
               % (label, total, want, 100.0 * (total - want) / want, not_run))
        if not_run > 0.01 * proc_ms:
            log("%s -- not asserted: the machine stole %.2f ms of the process's CPU"
                % (msg, not_run))
        else:
            check(abs(total - want) <= 0.05 * want, msg)

        # (b) per worker, then per request
        engine = {s["tid"] for s in steps}
        workers = sorted({th["tid"] for s in steps for th in s["threads"]} - engine)
        check(len(workers) >= 1, "%s the pool has workers besides the engine thread: %s"
              % (label, workers))
        for e in sorted(engine):
            # the engine thread computes in every region too (thread 0): its CPU is the
            # steps' (rule 1: markers; zero-code: rule 4, it serves the handlers) but for
            # its idle loop's instants, a fraction of a percent here
            cpu = delta.get(e, ("", 0.0))[1]
            on_spans = sum(thread_charge(s, e) for s in spans.values())
            check(cpu > 0 and abs(on_spans - cpu) <= 0.10 * cpu,
                  "%s (b) engine thread %d's CPU %.2f ms lands on the spans within 10%% "
                  "(%.2f ms)" % (label, e, cpu, on_spans))
        for w in workers:
            cpu = delta.get(w, ("", 0.0))[1]
            acc = expected_shares(steps, truth, w, markers, p0.get(w, ("", 0))[1],
                                  p1[w][1], t0, t1)
            exp, lo, hi = acc["exp"], acc["lo"], acc["hi"]
            region = sum(th["cpu_ns"] for s in steps for th in s["threads"]
                         if th["tid"] == w) / MS
            on_spans = sum(thread_charge(s, w) for s in spans.values())
            # in flight: its whole CPU less what it spun with nobody in flight (nobody's
            # by the rule), as a range (spread() says why)
            flight_lo, flight_hi = cpu - hi.get(None, 0.0), cpu - lo.get(None, 0.0)
            log("%s worker %d: /proc %.2f ms, in regions %.2f ms (outside %.2f ms); while "
                "requests were in flight %.2f..%.2f ms (evenly: %.2f); on spans %.2f ms"
                % (label, w, cpu, region, cpu - region, flight_lo, flight_hi,
                   cpu - exp.get(None, 0.0), on_spans))
            # the policy took effect (libgomp read it at load): between steps (the
            # worker's CPU clock at each step's end and the next one's begin) a
            # passive worker sleeps, an active one spins whenever it gets a CPU. Seen
            # over 31 runs: passive 0.000-0.023 of the gaps' wall time on CPU (the
            # wake-up before the next region), active 0.28-0.82 (its share of 2 busy
            # cores); 0.1 parts them with a margin of about 3 each way. (Its CPU outside region bodies is no test: it counts the
            # steps' own wake-ups, and varied from 6% to 100% of the region CPU.)
            gap_cpu = gap_wall = 0
            last = None
            for st in steps:
                mine = [x for x in st.get("workers", []) if x["tid"] == w]
                if not mine:
                    continue
                if last and mine[0]["cpu_begin_ns"]:
                    gap_cpu += mine[0]["cpu_begin_ns"] - last[1]
                    gap_wall += st["begin_ns"] - last[0]
                last = (st["end_ns"], mine[0]["cpu_end_ns"])
            ratio = gap_cpu / gap_wall if gap_wall else 0.0
            if gap_wall < GAPS_MIN_NS:
                # steps back to back (zero-code under an active pool: 16-28 ms of
                # gaps in 250 steps): a gap is a worker's wake-up, too short to
                # show a policy; test_testbed_omp shows it takes effect
                log("%s worker %d: the gaps between steps (%.1f ms) are too short to "
                    "tell its policy (on CPU %.4f of them)" % (label, w, gap_wall / MS, ratio))
            elif policy == "passive":
                check(ratio <= 0.1, "%s worker %d sleeps between steps (on CPU %.4f of the "
                      "gaps' %.1f ms <= 0.1)" % (label, w, ratio, gap_wall / MS))
            else:
                check(ratio >= 0.1, "%s worker %d spins between steps (on CPU %.4f of the "
                      "gaps' %.1f ms >= 0.1)" % (label, w, ratio, gap_wall / MS))
            # the 10%, on the range the truth allows
            check(flight_hi > 0 and 0.9 * flight_lo <= on_spans <= 1.1 * flight_hi,
                  "%s (b) worker %d's CPU while requests were in flight, %.2f..%.2f ms, "
                  "lands on the spans within 10%% (%.2f ms)"
                  % (label, w, flight_lo, flight_hi, on_spans))
            # per request, within 10% of the range the truth allows: exact inside marker
            # steps (the backend reads the worker's CPU clock at each step's begin and
            # end); between steps, where the worker spins (active) while requests
            # arrive, queue and end, only the CPU of each gap is known, not when in
            # the gap it ran (its rate follows the machine's load): the range spans
            # every way it could have run. "evenly" is printed to show how close.
            worst, bad = 0.0, []
            for rid, s in spans.items():
                have = thread_charge(s, w)
                a_, b_ = 0.9 * lo.get(rid, 0.0), 1.1 * hi.get(rid, 0.0)
                want = exp.get(rid, 0.0)
                worst = max(worst, abs(have - want) / want if want else 0.0)
                if not a_ <= have <= b_:
                    bad.append("%s %.2f not in %.2f..%.2f" % (rid, have, a_, b_))
            log("%s worker %d per request: worst |got - evenly| %.1f%%, widest range %.2f ms,"
                " %d of %d out of range" % (label, w, 100 * worst,
                                            max(hi.get(r, 0) - lo.get(r, 0) for r in spans),
                                            len(bad), len(spans)))
            check(not bad, "%s (b) worker %d's share per request within 10%% of the step log's "
                  "(%s)" % (label, w, bad[:4]))

        # (c)
        gc = [t for t in delta if delta[t][0] == "tb-gc"]
        check(len(gc) == 1, "%s one runtime thread tb-gc (%s)" % (label, gc))
        for t in gc:
            on_spans = [rid for rid, s in spans.items() if any(x["tid"] == t
                                                               for x in s["cpu"]["threads"])]
            check(delta[t][1] >= 10.0 and not on_spans,
                  "%s (c) runtime thread %d (%.2f ms on CPU) is on no span (on %s)"
                  % (label, t, delta[t][1], on_spans[:3]))
            check(un_ms >= 0.9 * delta[t][1],
                  "%s (c) its CPU is within unattributed (%.2f ms >= 0.9 x %.2f ms)"
                  % (label, un_ms, delta[t][1]))
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        server.stop()
        code = daemon.stop()
        check(code == 0, "%s reqtraced shut down cleanly (exit %s)" % (label, code))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="markers", choices=("zero-code", "markers", "both"))
    ap.add_argument("--policy", default="both", choices=("passive", "active", "both"))
    ap.add_argument("--concurrency", type=int, default=3)
    ap.add_argument("--requests", type=int, default=40)
    a = ap.parse_args()
    lc.require_root()
    modes = ("zero-code", "markers") if a.mode == "both" else (a.mode,)
    policies = ("passive", "active") if a.policy == "both" else (a.policy,)
    for m in modes:
        for p in policies:
            one(m, p, a.concurrency, a.requests)
    lc.finish()


if __name__ == "__main__":
    main()
