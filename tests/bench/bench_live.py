#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Tracing overhead, measured side by side in one run (not a test).

Interleaves runs of the same load against the testbed untraced and traced
by reqtraced (--pid), and reports per pair the throughput ratio, plus the
daemon's CPU time (utime + stime from /proc) per 1000 requests. The
workload is small and fast (1 ms engine steps, 4 tokens per request); with
--profile cpu the handlers also burn CPU per request so that both cores are
saturated and every cycle tracing takes shows in throughput.

Also, per pair:
  - request latency p50/p99/p99.9 untraced and traced (the load generator's
    per-request total), and the traced - untraced deltas with a 95%
    bootstrap confidence interval over the pairs;
  - the time one socket syscall takes (write + read of 64 B on a socketpair,
    in a loop; the best of 3 x 5 rounds, alternating between the two
    processes) in a process the daemon traces (its own target) and in an
    untraced neighbour process, with the daemon running and without it;
  - request end -> span visible: sequential requests, each followed, as
    soon as the client has the response's last byte, by `show` polls on the
    control socket every --poll-ms until the span is there.

usage (root): tests/bench/bench_live.py [BUILD_DIR] [--pairs N] [--requests N]
              [--concurrency C] [--visible N] [--markdown]
"""

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# A process that times socket syscalls when asked: a line "N" on stdin runs
# N write+read round trips of 64 B on a socketpair, best of 5 rounds, and
# prints ns per syscall.
SYSCALL_LOOP = r"""
import os, socket, sys, time
a, b = socket.socketpair()
fa, fb, buf = a.fileno(), b.fileno(), b"x" * 64
w, r = os.write, os.read
print("ready", flush=True)
for line in sys.stdin:
    n, best = int(line), None
    for _ in range(5):
        t = time.perf_counter_ns()
        for _ in range(n):
            w(fa, buf)
            r(fb, 64)
        d = (time.perf_counter_ns() - t) / (2 * n)
        best = d if best is None else min(best, d)
    print(best, flush=True)
"""

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
    """The load generator's summary, with "lat_ms": every ok request's total."""
    d = tempfile.mkdtemp(prefix="rt-bench-")
    summ = os.path.join(d, "summary.json")
    out = os.path.join(d, "out.jsonl")
    subprocess.run([os.path.join(build, "src/testbed/reqtrace-load"), "--url",
                    "http://127.0.0.1:%d/v1/completions" % port, "--concurrency", str(conc),
                    "--requests", str(n), "--stream", "--max-tokens", str(tokens),
                    "--summary", summ, "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(summ) as f:
        res = json.load(f)
    with open(out) as f:
        res["lat_ms"] = [r["total_ms"] for r in map(json.loads, f) if r.get("ok")]
    return res


def pct(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[k]


def boot_ci(deltas, n=10000, seed=1):
    """Mean of the per-pair deltas and its 95% bootstrap interval (pairs resampled)."""
    rnd = random.Random(seed)
    means = sorted(statistics.fmean(rnd.choices(deltas, k=len(deltas))) for _ in range(n))
    return statistics.fmean(deltas), means[int(0.025 * n)], means[int(0.975 * n) - 1]


class SyscallLoop:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-c", SYSCALL_LOOP], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"

    def ns(self, n):
        self.p.stdin.write("%d\n" % n)
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def syscall_pair(target, neighbour, n, rounds=3):
    """Best ns per syscall of each, alternating between them so that a burst
    of the machine's other work does not land on one of them alone. The
    pauses let the daemon drain the target's records first: on two cores
    its consumer would otherwise compete with the neighbour's loop (its CPU
    is reported on its own), and the neighbour's number is to be the cost
    of the programs it passes through."""
    t, nb = [], []
    for _ in range(rounds):
        t.append(target.ns(n))
        time.sleep(0.5)
        nb.append(neighbour.ns(n))
        time.sleep(0.5)
    return min(t), min(nb)


def ctl(sock, req):
    """One control request: (payload lines, terminator)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall((json.dumps(dict({"v": 1}, **req)) + "\n").encode())
    buf, lines = b"", []
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise OSError("daemon closed the connection")
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.startswith(b'{"end":') or line.startswith(b'{"error":'):
                s.close()
                return lines, json.loads(line)
            lines.append(json.loads(line))


def end_to_visible(port, sock, n, tokens, poll_ms, tag):
    """ms from the client's last response byte to the span in `show`, per request."""
    out = []
    body = json.dumps({"prompt": "x" * 64, "stream": True, "max_tokens": tokens})
    for i in range(n):
        rid = "vis-%s-%d" % (tag, i)
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Content-Type: application/json\r\nX-Request-Id: %s\r\n"
                   "Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                   % (port, rid, len(body), body)).encode())
        got = b""
        while not got.endswith(b"0\r\n\r\n"):
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
        t_end = time.monotonic()
        deadline = t_end + 5
        while time.monotonic() < deadline:
            _, term = ctl(sock, {"cmd": "show", "id": rid})
            if "error" not in term:
                out.append((time.monotonic() - t_end) * 1000)
                break
            time.sleep(poll_ms / 1000)
        else:
            out.append(float("inf"))
        c.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(SRC, "build"))
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--syscalls", type=int, default=20000,
                    help="write+read round trips per timing round")
    ap.add_argument("--visible", type=int, default=50,
                    help="requests timed from response end to span visible, per pair")
    ap.add_argument("--poll-ms", type=float, default=1.0)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--profile", default="engine", choices=("engine", "cpu"),
                    help="engine: fast engine steps, the cores half idle; cpu: handler CPU "
                         "stages that saturate both cores, so every traced cycle shows")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_live: needs root (it loads BPF programs)")
    while os.path.exists("/tmp/rt-ci-busy"):
        print("waiting for /tmp/rt-ci-busy to go", flush=True)
        time.sleep(60)
    knobs = ["--scenario", os.path.join(SRC, "configs/scenarios/healthy.conf"),
             "--set", "max_batch=64", "--set", "decode_base_ms=1", "--set", "prefill_base_ms=1",
             "--set", "decode_ms_per_seq=0.02", "--set", "tokenize_base_ms=0.05",
             "--set", "max_wait_ms=1"]
    if a.profile == "cpu":
        knobs += ["--set", "read_ms=1", "--set", "postprocess_ms=1", "--set", "detokenize_ms=0.1"]
    tb, port = start_testbed(a.build, knobs)
    target, neighbour = SyscallLoop(), SyscallLoop()
    rows, sys_rows, visible = [], [], []
    try:
        run_load(a.build, port, 300, a.concurrency, a.tokens)  # warm up
        for i in range(a.pairs):
            base = run_load(a.build, port, a.requests, a.concurrency, a.tokens)
            s_none = syscall_pair(target, neighbour, a.syscalls)
            sock = os.path.join(tempfile.mkdtemp(prefix="rt-bench-"), "ctl.sock")
            d = subprocess.Popen([os.path.join(a.build, "reqtraced"), "--pid", str(tb.pid),
                                  "--pid", str(target.p.pid), "--socket", sock],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while not os.path.exists(sock):
                time.sleep(0.02)
            time.sleep(0.3)
            c0 = cpu_s(d.pid)
            traced = run_load(a.build, port, a.requests, a.concurrency, a.tokens)
            time.sleep(0.2)  # let the daemon drain the tail
            c1 = cpu_s(d.pid)
            s_on = syscall_pair(target, neighbour, a.syscalls)
            if a.visible:
                visible += end_to_visible(port, sock, a.visible, a.tokens, a.poll_ms, str(i))
            d.send_signal(signal.SIGTERM)
            d.wait()
            lat = [[pct(r["lat_ms"], p) for p in (50, 99, 99.9)] for r in (base, traced)]
            rows.append((base["throughput_rps"], traced["throughput_rps"],
                         (c1 - c0) * 1000.0 / a.requests, lat[0], lat[1]))
            sys_rows.append(s_none + s_on)
            print("pair %d: untraced %.1f req/s, traced %.1f req/s (ratio %.3f), "
                  "daemon %.3f CPU-s per 1000 requests; latency p50/p99/p99.9 ms "
                  "untraced %.2f/%.2f/%.2f traced %.2f/%.2f/%.2f; ns per syscall: "
                  "target %.0f -> %.0f traced, neighbour %.0f -> %.0f" %
                  ((i + 1, rows[-1][0], rows[-1][1], rows[-1][1] / rows[-1][0], rows[-1][2])
                   + tuple(lat[0]) + tuple(lat[1]) + (s_none[0], s_on[0], s_none[1], s_on[1])),
                  flush=True)
    finally:
        target.close()
        neighbour.close()
        tb.terminate()
        tb.wait()
    ratios = [r[1] / r[0] for r in rows]
    med = statistics.median(ratios)
    cpu = statistics.median(r[2] for r in rows)
    print("median throughput ratio traced/untraced: %.3f (min %.3f, max %.3f)"
          % (med, min(ratios), max(ratios)))
    print("median daemon CPU per 1000 requests: %.3f s" % cpu)
    lat_ci = []
    for k, name in enumerate(("p50", "p99", "p99.9")):
        m, lo, hi = boot_ci([r[4][k] - r[3][k] for r in rows])
        lat_ci.append((name, m, lo, hi))
        print("latency %s traced - untraced: %+.3f ms (95%% CI %+.3f .. %+.3f, %d pairs)"
              % (name, m, lo, hi, len(rows)))
    sys_ci = []
    for name, k in (("traced target", 0), ("untraced neighbour", 1)):
        m, lo, hi = boot_ci([r[2 + k] - r[k] for r in sys_rows])
        sys_ci.append((name, m, lo, hi))
        print("ns added per socket syscall, %s: %+.0f (95%% CI %+.0f .. %+.0f)"
              % (name, m, lo, hi))
    vis = [v for v in visible if v != float("inf")]
    if visible:
        print("request end -> span visible (ms, %d requests, %d never seen in 5 s): "
              "p50 %.1f p90 %.1f p99 %.1f max %.1f"
              % (len(visible), len(visible) - len(vis), pct(vis, 50), pct(vis, 90),
                 pct(vis, 99), max(vis) if vis else float("nan")))
    if a.markdown:
        print()
        print("| pair | untraced req/s | traced req/s | ratio | latency p50/p99/p99.9 untraced "
              "(ms) | traced (ms) | daemon CPU-s per 1000 req |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for i, r in enumerate(rows):
            print("| %d | %.1f | %.1f | %.3f | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.3f |"
                  % ((i + 1, r[0], r[1], r[1] / r[0]) + tuple(r[3]) + tuple(r[4]) + (r[2],)))
        print("| median | | | %.3f | | | %.3f |" % (med, cpu))
        print()
        print("| latency delta, traced - untraced | mean over pairs (ms) | 95% CI (ms) |")
        print("| --- | --- | --- |")
        for name, m, lo, hi in lat_ci:
            print("| %s | %+.3f | %+.3f .. %+.3f |" % (name, m, lo, hi))
        print()
        print("| pair | target ns/syscall, no daemon / traced | neighbour ns/syscall, "
              "no daemon / daemon tracing the target |")
        print("| --- | --- | --- |")
        for i, r in enumerate(sys_rows):
            print("| %d | %.0f / %.0f | %.0f / %.0f |" % (i + 1, r[0], r[2], r[1], r[3]))
        for name, m, lo, hi in sys_ci:
            print("| added, %s | %+.0f ns (95%% CI %+.0f .. %+.0f) | |" % (name, m, lo, hi))
        if vis:
            print()
            print("| request end -> span visible | p50 | p90 | p99 | max | not seen in 5 s |")
            print("| --- | --- | --- | --- | --- | --- |")
            print("| %d requests, `show` polled every %g ms | %.1f ms | %.1f ms | %.1f ms "
                  "| %.1f ms | %d |" % (len(visible), a.poll_ms, pct(vis, 50), pct(vis, 90),
                                       pct(vis, 99), max(vis), len(visible) - len(vis)))


if __name__ == "__main__":
    main()
