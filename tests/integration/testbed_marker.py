# SPDX-License-Identifier: BSD-2-Clause
"""The marker ABI and where the testbed places markers.

- libreqtrace_marker.so.1 exports exactly the documented symbols (nm -D),
  each at its own address, with SONAME libreqtrace_marker.so.1;
- the Python module loads it (REQTRACE_MARKER_LIB) and passes its arguments
  (checked through the recording stand-in library);
- reqtrace-testbed --markers calls the markers at the instants the truth log
  records, on the documented threads (recording library via LD_PRELOAD);
  without --markers it calls none.
"""

import os
import subprocess
import sys

import testbed_common as tc

SYMBOLS = {"rt_mark_begin", "rt_mark_end", "rt_mark_step_begin", "rt_mark_step_end",
           "rt_mark_bind", "rt_mark_abi_version", "rt_mark_step_begin_tokens"}
RECEIVE, QUEUE, TOKENIZE, PREFILL, PRE_FIRST, DECODE, COMM_WAIT, POSTPROCESS = range(8)
# A marker and its truth stamp are a few calls apart; the slack covers a
# preemption between them on a busy machine (the order checks are exact).
SLACK_NS = 5_000_000


def check_exports():
    out = subprocess.run(["nm", "-D", "--defined-only", tc.MARKER_LIB], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for l in out.splitlines():
        parts = l.split()
        if len(parts) == 3:
            syms[parts[2]] = (parts[0], parts[1])
    tc.check(set(syms) == SYMBOLS, "nm -D exports exactly %s (got %s)"
             % (sorted(SYMBOLS), sorted(syms)))
    tc.check(all(t == "T" for _, t in syms.values()), "every export is a text symbol")
    addrs = [a for a, _ in syms.values()]
    tc.check(len(set(addrs)) == len(addrs), "every marker has its own address")
    dyn = subprocess.run(["readelf", "-d", tc.MARKER_LIB], capture_output=True, text=True,
                         check=True).stdout
    tc.check("Library soname: [libreqtrace_marker.so.1]" in dyn, "SONAME libreqtrace_marker.so.1")


def check_python_module(d):
    sys.path.insert(0, os.path.join(tc.SRC, "src", "marker", "python"))
    rec = os.path.join(d, "py-markers.txt")
    code = (
        "import reqtrace_marker as rm\n"
        "assert rm.AVAILABLE and rm.abi_version() == 2, rm.abi_version()\n"
        "with rm.phase('py-1', rm.TOKENIZE):\n"
        "    pass\n"
        "with rm.step(7, ['py-1', b'py-2']):\n"
        "    pass\n"
        "rm.bind('eng-9', 'py-1')\n"
        "rm.step_begin_tokens(8, ['py-1', 'py-2'], [300, 1])\n"
        "rm.step_end(8)\n"
        "print('calls ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.join(tc.SRC, "src", "marker", "python"))
    env["REQTRACE_MARKER_LIB"] = tc.MARKER_LIB
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    tc.check(p.returncode == 0 and "calls ok" in p.stdout,
             "python module calls the real library (%s)" % p.stderr.strip()[-200:])
    env["REQTRACE_MARKER_LIB"] = tc.MARKER_RECORD_LIB
    env["REQTRACE_MARKER_RECORD"] = rec
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    lines = [l.split()[2:] for l in open(rec)] if os.path.exists(rec) else []
    want = [["begin", "py-1", str(TOKENIZE)], ["end", "py-1", str(TOKENIZE)],
            ["step_begin", "7", "2", "py-1", "py-2"], ["step_end", "7"],
            ["bind", "eng-9", "py-1"], ["step_begin_tokens", "8", "2", "py-1:300", "py-2:1"],
            ["step_end", "8"]]
    tc.check(p.returncode == 0 and lines == want, "python module passes its arguments (%s)"
             % lines)
    env["REQTRACE_MARKER_LIB"] = "/nonexistent/libreqtrace_marker.so"
    env["LD_LIBRARY_PATH"] = "/nonexistent"
    p = subprocess.run([sys.executable, "-c", "import reqtrace_marker as rm\n"
                        "rm.begin('x', rm.QUEUE)\nprint(rm.AVAILABLE or rm.abi_version())"],
                       env=env, capture_output=True, text=True)
    tc.check(p.returncode == 0, "python module is a no-op without a library")


def read_record(path):
    calls = []
    if not os.path.exists(path):
        return calls
    with open(path) as f:
        for l in f:
            p = l.split()
            calls.append({"ts": int(p[0]), "tid": int(p[1]), "fn": p[2], "args": p[3:]})
    return calls


def check_placement(calls, truth, handler_tids):
    by_req = {}
    for c in calls:
        if c["fn"] in ("begin", "end"):
            by_req.setdefault(c["args"][0], []).append(c)
    steps = {}
    for c in calls:
        if c["fn"] == "step_begin":
            steps[c["args"][0]] = {"begin": c, "ids": c["args"][2:], "n": int(c["args"][1])}
        elif c["fn"] == "step_end" and c["args"][0] in steps:
            steps[c["args"][0]]["end"] = c
    tc.check(steps and all("end" in s and s["end"]["tid"] == s["begin"]["tid"]
                           and s["n"] == len(s["ids"]) for s in steps.values()),
             "%d steps: each step_begin has n ids and a step_end on its thread" % len(steps))

    for t in truth:
        rid = t["request_id"]
        seq = [(c["fn"], int(c["args"][1])) for c in by_req.get(rid, []) if
               int(c["args"][1]) != COMM_WAIT]
        want = [("begin", QUEUE), ("end", QUEUE), ("begin", TOKENIZE), ("end", TOKENIZE),
                ("begin", QUEUE), ("end", QUEUE), ("begin", PREFILL), ("end", PREFILL),
                ("begin", DECODE), ("end", DECODE), ("begin", POSTPROCESS),
                ("end", POSTPROCESS)]
        if not tc.check(seq == want, "%s: phase markers in order" % rid):
            tc.log("  got %s" % seq)
            continue
        m = [c for c in by_req[rid] if int(c["args"][1]) != COMM_WAIT]
        tok, step = t["tokenizer_tid"], t["step_tids"][0]
        threads_ok = (m[0]["tid"] in handler_tids and m[1]["tid"] == tok and m[2]["tid"] == tok
                      and m[3]["tid"] == tok and m[4]["tid"] == tok and m[5]["tid"] == step
                      and m[6]["tid"] == step and all(c["tid"] == m[0]["tid"] for c in m[7:]))
        tc.check(threads_ok, "%s: markers on handler/tokenizer/step threads as documented" % rid)
        at = [(2, "tokenize_start_ns"), (3, "tokenize_end_ns"), (4, "enqueue_ns"),
              (5, "admitted_ns"), (6, "admitted_ns"), (7, "first_token_write_ns"),
              (9, "last_token_write_ns"), (11, "end_ns")]
        off = {k: m[i]["ts"] - t[k] for i, k in at}
        # markers before a write are called before its stamp; POSTPROCESS ends after end_ns
        stamps_ok = (all(abs(v) <= SLACK_NS for v in off.values())
                     and off["first_token_write_ns"] <= 0 and off["last_token_write_ns"] <= 0
                     and off["end_ns"] >= 0)
        if not tc.check(stamps_ok, "%s: markers at the truth's instants (within %d ms)"
                        % (rid, SLACK_NS // 1_000_000)):
            tc.log("  marker - truth (ns): %s" % off)
        member = [s for s in steps.values() if rid in s["ids"]]
        want_steps = 3 if rid.startswith("json-") else len(t["token_write_ns"])
        tc.check(len(member) == want_steps, "%s: in %d steps (one per token)"
                 % (rid, len(member)))
        comm = [c for c in by_req[rid] if int(c["args"][1]) == COMM_WAIT]
        pairs = list(zip(comm[0::2], comm[1::2]))
        ok = len(pairs) == len(member) and all(a["fn"] == "begin" and b["fn"] == "end"
                                               and a["tid"] == step for a, b in pairs)
        waited = sum(b["ts"] - a["ts"] for a, b in pairs)
        ok = ok and tc.within(waited, t["comm_wait_ns"], 0.05)
        tc.check(ok, "%s: one COMM_WAIT pair per step, %.1f ms vs truth %.1f ms"
                 % (rid, waited / 1e6, t["comm_wait_ns"] / 1e6))


def check_testbed(d):
    rec = os.path.join(d, "tb-markers.txt")
    truth_path = os.path.join(d, "truth.jsonl")
    env = tc.asan_env(os.environ)
    env["LD_PRELOAD"] = tc.MARKER_RECORD_LIB
    env["REQTRACE_MARKER_RECORD"] = rec
    with tc.Testbed(["--peer-mode", "--port", "0", "--set", "comm_delay_ms=3"],
                    name="peer") as peer:
        with tc.Testbed(["--scenario", tc.scenario("healthy"), "--port", "0", "--markers",
                         "--truth", truth_path, "--peer", "127.0.0.1:%d" % peer.port],
                        env=env, nice=-19) as tb:
            rc1, _, _, _ = tc.run_load(tb.url(), ["--concurrency", 3, "--requests", 6, "--stream",
                                                  "--max-tokens", 6])
            rc2, _, _, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", 2,
                                                  "--max-tokens", 3, "--id-prefix", "json-"])
            tc.check(rc1 == 0 and rc2 == 0, "load ok with --markers")
            handler_tids = set(int(x) for x in os.listdir("/proc/%d/task" % tb.pid))
            tc.check(tb.stop() == 0, "testbed exits 0")
        peer.stop()
    truth = tc.read_truth(truth_path)
    calls = read_record(rec)
    tc.check(len(truth) == 8 and calls, "%d truth lines, %d marker calls" % (len(truth), len(calls)))
    check_placement(calls, truth, handler_tids)

    # without --markers: no call at all
    rec2 = os.path.join(d, "tb-nomarkers.txt")
    env["REQTRACE_MARKER_RECORD"] = rec2
    with tc.Testbed(["--scenario", tc.scenario("healthy"), "--port", "0"], env=env) as tb:
        rc, _, _, _ = tc.run_load(tb.url(), ["--concurrency", 1, "--requests", 2, "--stream",
                                             "--max-tokens", 2])
        tc.check(rc == 0 and tb.stop() == 0, "run without --markers")
    tc.check(not read_record(rec2), "no marker calls without --markers")


def main():
    d = tc.tmpdir()
    check_exports()
    check_python_module(d)
    check_testbed(d)
    tc.finish()


if __name__ == "__main__":
    main()
