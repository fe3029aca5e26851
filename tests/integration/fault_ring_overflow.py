#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fault: the BPF ring overflows, forced with a small ring and a stalled consumer.

The daemon runs with a 64 KiB ring (--ring-size) and is stopped (SIGSTOP)
for 1 s while four long streaming requests are served, so the kernel side
cannot reserve and drops records; then it is continued (SIGCONT).

  - the loss is counted at each stage: drops.bpf_ring and the bpf source's
    `lost` in status, LOSS records in the correlator (correlator.lost_records);
  - every span of a request in flight across the whole stall is flagged
    incomplete, and no span is wrong about whose it is (pid, request id);
  - nothing crashes: the daemon answers, and the requests sent afterwards
    all have spans; when no record was lost meanwhile, none is incomplete.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
STALL_S = 1.0


def losses(st):
    bpf = [s for s in st["sources"] if s["name"] == "bpf"][0]
    return st["drops"]["bpf_ring"], bpf["lost"], st["correlator"]["lost_records"]


def main():
    lc.require_root()
    d = tb.tmpdir()
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--set",
                         "decode_base_ms=5"])
    daemon = lc.Daemon(["--pid", str(server.pid), "--ring-size", "64K"])
    out = os.path.join(d, "long.jsonl")
    load = None
    try:
        daemon.wait_spans(0)
        before = losses(daemon.status())
        load = subprocess.Popen(
            [tb.LOAD, "--url", "http://127.0.0.1:%d/v1/completions" % server.port,
             "--concurrency", "4", "--requests", "8", "--stream", "--max-tokens", "150",
             "--id-prefix", "ro-", "--out", out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # stall once all four are being answered
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(daemon.call({"cmd": "inflight"})[0]) < 4:
            time.sleep(0.02)
        t_stop = time.monotonic_ns()
        os.kill(daemon.proc.pid, signal.SIGSTOP)
        time.sleep(STALL_S)
        os.kill(daemon.proc.pid, signal.SIGCONT)
        t_cont = time.monotonic_ns()
        _, err = load.communicate(timeout=120)
        check(load.returncode == 0, "the load is served (rc %d) %s" % (load.returncode,
                                                                      err[-300:]))
        time.sleep(0.5)
        st = daemon.status()
        after = losses(st)
        log("losses before the stall (bpf_ring, source lost, correlator LOSS records): %s, "
            "after: %s; drops not zero: %s" % (before, after,
                                                {k: v for k, v in st["drops"].items() if v}))
        check(after[0] > before[0], "drops.bpf_ring counts the ring's losses (%d -> %d)"
              % (before[0], after[0]))
        check(after[1] > before[1], "the bpf source's lost counts them (%d -> %d)"
              % (before[1], after[1]))
        check(after[2] > before[2], "LOSS records reached the correlator (%d -> %d)"
              % (before[2], after[2]))
        truth = {r["request_id"]: r for r in lc.read_jsonl(out)}
        spans = {s["request_id"]: s for s in daemon.spans()}
        across = [i for i, r in truth.items() if r["start_ns"] < t_stop and r["end_ns"] > t_cont]
        check(len(across) >= 1, "requests in flight across the whole stall (%d)" % len(across))
        bad = [(i, spans[i]["flags"]) for i in across
               if i in spans and "incomplete" not in spans[i]["flags"]]
        check(not bad, "every span of a request in flight across the stall is incomplete "
              "(%d spans of %d such requests; off: %s)"
              % (len([i for i in across if i in spans]), len(across), bad[:4]))
        bad = [(i, s["pid"]) for i, s in spans.items()
               if s["pid"] != server.pid or (i not in truth and "incomplete" not in s["flags"])]
        check(not bad, "every span names the testbed and, unless incomplete, a request the "
              "load sent (off: %s)" % bad[:4])
        inc = sum(1 for s in spans.values() if "incomplete" in s["flags"])
        log("%d spans, %d incomplete, %d requests" % (len(spans), inc, len(truth)))

        # afterwards: tracing as usual
        more, r = lc.run_load(server.port, "--concurrency", 2, "--requests", 20, "--stream",
                              "--max-tokens", 8, "--id-prefix", "after-")
        ids = {x["request_id"] for x in more}
        got = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ids)}
        check(r.returncode == 0 and len(ids) == 20 and ids <= set(got),
              "requests after the stall all have spans (%d of %d)"
              % (len(ids & set(got)), len(ids)))
        final = losses(daemon.status())
        if final[0] == after[0]:
            inc = [i for i in ids if i in got and "incomplete" in got[i]["flags"]]
            check(not inc, "no record lost afterwards: no span after the stall is incomplete "
                  "(off: %s)" % inc[:4])
        else:
            log("note: %d more records lost after the stall (a busy machine); the check that "
                "later spans are whole is left out" % (final[0] - after[0]))
        check(daemon.alive(), "the daemon runs on")
    finally:
        if load and load.poll() is None:
            load.kill()
        try:
            os.kill(daemon.proc.pid, signal.SIGCONT)
        except OSError:
            pass
        server.stop()
        code = daemon.stop()
    check(code == 0, "reqtraced exits 0 on SIGTERM")
    lc.finish()


if __name__ == "__main__":
    main()
