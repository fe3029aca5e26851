#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Tracing overhead, measured side by side in one run (not a test).

Interleaves runs of the same load against the testbed untraced and traced
by reqtraced (--pid), and reports per pair the throughput ratio, plus the
daemon's CPU time (utime + stime from /proc) per 1000 requests. The
workload is small and fast (1 ms engine steps, 4 tokens per request); with
--profile cpu the handlers also burn CPU per request so that both cores are
saturated and every cycle tracing takes shows in throughput.

usage (root): tests/bench/bench_live.py [BUILD_DIR] [--pairs N] [--requests N]
              [--concurrency C] [--markdown]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        f = f.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / CLK


def start_testbed(build, args):
    p = subprocess.Popen([os.path.join(build, "src/testbed/reqtrace-testbed"), "--port", "0"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(line.strip().rsplit(":", 1)[1])


def run_load(build, port, n, conc, tokens):
    d = tempfile.mkdtemp(prefix="rt-bench-")
    summ = os.path.join(d, "summary.json")
    subprocess.run([os.path.join(build, "src/testbed/reqtrace-load"), "--url",
                    "http://127.0.0.1:%d/v1/completions" % port, "--concurrency", str(conc),
                    "--requests", str(n), "--stream", "--max-tokens", str(tokens),
                    "--summary", summ, "--out", os.path.join(d, "out.jsonl")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(summ) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(SRC, "build"))
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--profile", default="engine", choices=("engine", "cpu"),
                    help="engine: fast engine steps, the cores half idle; cpu: handler CPU "
                         "stages that saturate both cores, so every traced cycle shows")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_live: needs root (it loads BPF programs)")
    knobs = ["--scenario", os.path.join(SRC, "configs/scenarios/healthy.conf"),
             "--set", "max_batch=64", "--set", "decode_base_ms=1", "--set", "prefill_base_ms=1",
             "--set", "decode_ms_per_seq=0.02", "--set", "tokenize_base_ms=0.05",
             "--set", "max_wait_ms=1"]
    if a.profile == "cpu":
        knobs += ["--set", "read_ms=1", "--set", "postprocess_ms=1", "--set", "detokenize_ms=0.1"]
    tb, port = start_testbed(a.build, knobs)
    rows = []
    try:
        run_load(a.build, port, 300, a.concurrency, a.tokens)  # warm up
        for i in range(a.pairs):
            base = run_load(a.build, port, a.requests, a.concurrency, a.tokens)
            sock = os.path.join(tempfile.mkdtemp(prefix="rt-bench-"), "ctl.sock")
            d = subprocess.Popen([os.path.join(a.build, "reqtraced"), "--pid", str(tb.pid),
                                  "--socket", sock], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            while not os.path.exists(sock):
                time.sleep(0.02)
            time.sleep(0.3)
            c0 = cpu_s(d.pid)
            traced = run_load(a.build, port, a.requests, a.concurrency, a.tokens)
            time.sleep(0.2)  # let the daemon drain the tail
            c1 = cpu_s(d.pid)
            d.send_signal(signal.SIGTERM)
            d.wait()
            rows.append((base["throughput_rps"], traced["throughput_rps"],
                         (c1 - c0) * 1000.0 / a.requests,
                         base["latency_p50_ms"], traced["latency_p50_ms"]))
            print("pair %d: untraced %.1f req/s, traced %.1f req/s (ratio %.3f), "
                  "daemon %.3f CPU-s per 1000 requests" %
                  (i + 1, rows[-1][0], rows[-1][1], rows[-1][1] / rows[-1][0], rows[-1][2]),
                  flush=True)
    finally:
        tb.terminate()
        tb.wait()
    ratios = [r[1] / r[0] for r in rows]
    med = statistics.median(ratios)
    cpu = statistics.median(r[2] for r in rows)
    print("median throughput ratio traced/untraced: %.3f (min %.3f, max %.3f)"
          % (med, min(ratios), max(ratios)))
    print("median daemon CPU per 1000 requests: %.3f s" % cpu)
    if a.markdown:
        print()
        print("| pair | untraced req/s | traced req/s | ratio | p50 latency untraced / traced (ms) "
              "| daemon CPU-s per 1000 req |")
        print("| --- | --- | --- | --- | --- | --- |")
        for i, r in enumerate(rows):
            print("| %d | %.1f | %.1f | %.3f | %.2f / %.2f | %.3f |"
                  % (i + 1, r[0], r[1], r[1] / r[0], r[3], r[4], r[2]))
        print("| median | | | %.3f | | %.3f |" % (med, cpu))


if __name__ == "__main__":
    main()
