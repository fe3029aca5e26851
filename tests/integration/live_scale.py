#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Live capture at scale and under loss.

  - 64 concurrent keep-alive connections, 100 requests on each: one span per
    request, each on its own connection's conn string, zero drops;
  - requests whose body and response span many reads and writes (200 KB
    prompts, long streams, large JSON bodies) match the truth;
  - a deliberately tiny BPF ring: drops counted in status and spans flagged
    incomplete, never silently lost.
"""

import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
MS = 1e6


def keepalive_64x100():
    fast = ["--set", "max_batch=64", "--set", "decode_base_ms=1", "--set", "prefill_base_ms=1",
            "--set", "decode_ms_per_seq=0.02", "--set", "tokenize_base_ms=0.05",
            "--set", "max_wait_ms=1"]
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0"] + fast)
    daemon = lc.Daemon(["--pid", str(server.pid), "--max-spans", "20000"])
    try:
        out, r = lc.run_load(server.port, "--concurrency", 64, "--keepalive", 100,
                             "--requests", 6400, "--stream", "--max-tokens", 2,
                             "--id-prefix", "ka-")
        check(r.returncode == 0 and len(out) == 6400 and all(x["ok"] for x in out),
              "6400 requests on 64 keep-alive connections served: " + r.stderr.strip()[-200:])
        ids = {x["request_id"] for x in out}
        spans = [s for s in daemon.wait_spans(6400, timeout=60) if s["request_id"] in ids]
        check(len(spans) == 6400, "a span for every request (%d of 6400)" % len(spans))
        # the load generator's workers share one request counter, so a
        # connection carries up to 100 requests (--keepalive) and a fast
        # worker opens a new one for what is left. How many connections
        # reach 100 depends on how evenly the machine runs the workers (under
        # load: 105 connections, few of them full); that one does is
        # pigeonhole: some worker served at least the mean of 100, on its
        # first connection first. A span's conn is the address pair, and on
        # loopback the kernel reuses a closed connection's port at once
        # (tcp_tw_reuse): one pair can stand for two connections (seen: 102),
        # so a count over 100 is not a fault
        per_conn = collections.Counter(s["conn"] for s in spans)
        check(len(per_conn) >= 64 and max(per_conn.values()) >= 100 and
              sum(per_conn.values()) == 6400,
              "keep-alive: %d connections, up to 100 spans each (counts %s)"
              % (len(per_conn), sorted(set(per_conn.values()))))
        check(all(s["outcome"] == "ok" and s["events_out"] == 2 for s in spans),
              "every span ok with its 2 events")
        st = daemon.status()
        check(all(v == 0 for v in st["drops"].values()),
              "zero drops: %s" % {k: v for k, v in st["drops"].items() if v})
    finally:
        server.stop()
        daemon.stop()


def big_messages():
    d = tb.tmpdir()
    truth = os.path.join(d, "truth.jsonl")
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--truth", truth,
                         "--set", "decode_base_ms=2", "--set", "tokenize_ms_per_kchar=0.01"],
                        wrap=["chrt", "-f", "10"])
    daemon = lc.Daemon(["--pid", str(server.pid)])
    try:
        s1, r1 = lc.run_load(server.port, "--concurrency", 4, "--requests", 12, "--stream",
                             "--prompt-chars", 200000, "--max-tokens", 300, "--id-prefix", "big-")
        s2, r2 = lc.run_load(server.port, "--concurrency", 4, "--requests", 8,
                             "--prompt-chars", 100000, "--max-tokens", 2000, "--id-prefix",
                             "bigjson-")
        check(r1.returncode == 0 and r2.returncode == 0, "large requests served")
        time.sleep(0.3)
        rows = lc.read_jsonl(truth)
        ids = {t["request_id"] for t in rows}
        spans = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ids)}
        bad = []
        for t in rows:
            s = spans.get(t["request_id"])
            if not s:
                bad.append((t["request_id"], "missing"))
                continue
            for sk, tk in (("start_ns", "arrival_ns"), ("received_ns", "received_ns"),
                           ("end_ns", "end_ns")):
                if abs(s[sk] - t[tk]) > 2 * MS:
                    bad.append((t["request_id"], sk, (s[sk] - t[tk]) / MS))
            if t["request_id"].startswith("big-"):
                if s["events_out"] != len(t["token_write_ns"]) or \
                        abs(s["first_token_ns"] - t["first_token_write_ns"]) > 2 * MS:
                    bad.append((t["request_id"], "stream", s["events_out"]))
            if "incomplete" in s["flags"]:
                bad.append((t["request_id"], "incomplete"))
        check(not bad, "200 KB bodies over many reads, 300-event streams and large JSON "
              "responses match the truth (off: %s)" % bad[:4])
        # the prompt took many reads: receive must cover them
        check(all(spans[i]["phases"]["receive_ms"] is not None for i in ids if i in spans),
              "receive phase present for multi-read requests")
    finally:
        server.stop()
        daemon.stop()


def tiny_ring():
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0"])
    daemon = lc.Daemon(["--pid", str(server.pid), "--ring-size", "4096"])
    try:
        out, r = lc.run_load(server.port, "--concurrency", 16, "--requests", 200, "--stream",
                             "--max-tokens", 32, "--id-prefix", "tiny-")
        time.sleep(0.5)
        st = daemon.status()
        spans = daemon.spans()
        inc = [s for s in spans if "incomplete" in s["flags"]]
        check(st["drops"]["bpf_ring"] > 0,
              "a 4 KiB ring loses records and status says so (bpf_ring=%d)"
              % st["drops"]["bpf_ring"])
        check(st["correlator"]["lost_records"] > 0,
              "the loss reached the correlator as LOSS records (%d)"
              % st["correlator"]["lost_records"])
        check(len(inc) > 0, "spans touched by the loss are flagged incomplete (%d of %d)"
              % (len(inc), len(spans)))
    finally:
        server.stop()
        daemon.stop()


def main():
    lc.require_root()
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("all", "keepalive"):
        keepalive_64x100()
    if which in ("all", "big"):
        big_messages()
    if which in ("all", "loss"):
        tiny_ring()
    lc.finish()


if __name__ == "__main__":
    main()
