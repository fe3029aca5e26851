#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Daemon memory with many requests in flight (not a test: it prints numbers).

Fills the span store first (fast requests to one testbed), then holds
--inflight slow streaming requests open at once, one connection each,
spread over several testbeds (a testbed serves at most 1024 connections at
once: handler_threads), all traced by one reqtraced. It reads the daemon's
VmRSS/VmHWM from /proc at each stage and prints them with the bounds and
counts from the control socket's status.

usage (root): tests/bench/bench_memory.py [BUILD_DIR] [--inflight N] [--fill N]
              [--max-requests N] [--ring-size B] [--hold S] [--markdown]
"""

import argparse
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PER_TESTBED = 1000  # connections per testbed (handler_threads is at most 1024)


def proc_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def ring_kb(pid):
    """RSS of the BPF maps mapped into the daemon (the ring buffer, mapped twice)."""
    kb, in_map = 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
                in_map = "anon_inode:bpf-map" in line
            elif in_map and line.startswith("Rss:"):
                kb += int(line.split()[1])
    return kb


def ctl(sock, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(sock)
    s.sendall((json.dumps({"v": 1, "cmd": cmd}) + "\n").encode())
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
                return lines
            lines.append(json.loads(line))


def start_testbed(build, knobs):
    p = subprocess.Popen([os.path.join(build, "src/testbed/reqtrace-testbed"), "--port", "0"] +
                         knobs, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, int(line.strip().rsplit(":", 1)[1])


def sample(d, sock, stage):
    st = ctl(sock, "status")[0]
    drops = {k: v for k, v in st["drops"].items() if v}
    return {"stage": stage, "rss_kb": proc_kb(d.pid, "VmRSS"), "hwm_kb": proc_kb(d.pid, "VmHWM"),
            "anon_kb": proc_kb(d.pid, "RssAnon"), "ring_kb": ring_kb(d.pid),
            "store_kb": st["store"].get("bytes", 0) / 1024,
            "inflight": st["correlator"]["inflight"], "conns": st["correlator"]["conns"],
            "threads": st["correlator"]["threads"], "procs": st["correlator"]["procs"],
            "spans": st["store"]["spans"], "capacity": st["store"]["capacity"],
            "pending_max": st["merge"]["pending_max"], "drops": drops}


def hold_streams(ports, n, max_tokens, sel):
    """n streaming requests, one connection each, round robin over ports."""
    conns = []
    for i in range(n):
        port = ports[i // PER_TESTBED]
        s = socket.create_connection(("127.0.0.1", port))
        body = json.dumps({"prompt": "x" * 64, "stream": True, "max_tokens": max_tokens})
        s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Content-Type: application/json\r\nX-Request-Id: mem-%d\r\n"
                   "Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                   % (port, i, len(body), body)).encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        conns.append(s)
    return conns


def drain(sel, seconds):
    """Read whatever the servers stream (slowly) for this long."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for key, _ in sel.select(timeout=0.2):
            try:
                key.fileobj.recv(65536)
            except (BlockingIOError, ConnectionError):
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(SRC, "build"))
    ap.add_argument("--inflight", type=int, default=10000)
    ap.add_argument("--fill", type=int, default=12000, help="fast requests first (store)")
    ap.add_argument("--max-requests", type=int, default=0, help="reqtraced --max-requests")
    ap.add_argument("--ring-size", default="", help="reqtraced --ring-size (default 8M)")
    ap.add_argument("--preload", default="",
                    help="LD_PRELOAD for reqtraced: tests/bench/alloc_hist.c built as a .so "
                         "prints the live heap by allocation size at the peak")
    ap.add_argument("--hold", type=float, default=10.0, help="seconds held at the peak")
    ap.add_argument("--step-ms", type=float, default=1000, help="slow decode step")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_memory: needs root (it loads BPF programs)")
    while os.path.exists("/tmp/rt-ci-busy"):
        print("waiting for /tmp/rt-ci-busy to go", flush=True)
        time.sleep(60)
    nofile = a.inflight + 4096
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))  # children inherit it

    fast = ["--scenario", os.path.join(SRC, "configs/scenarios/healthy.conf"),
            "--set", "max_batch=64", "--set", "decode_base_ms=1", "--set", "prefill_base_ms=1",
            "--set", "decode_ms_per_seq=0.02", "--set", "tokenize_base_ms=0.05",
            "--set", "max_wait_ms=1"]
    slow = ["--scenario", os.path.join(SRC, "configs/scenarios/healthy.conf"),
            "--set", "handler_threads=1024", "--set", "max_batch=256",
            "--set", "decode_base_ms=%g" % a.step_ms, "--set", "decode_ms_per_seq=0",
            "--set", "prefill_base_ms=1", "--set", "tokenize_base_ms=0.01",
            "--set", "max_wait_ms=1", "--set", "max_tokens_limit=65536"]
    tbs = []
    sel = selectors.DefaultSelector()
    conns = []
    d = None
    rows = []
    try:
        tb_fast, fport = start_testbed(a.build, fast)
        tbs.append(tb_fast)
        ports = []
        for _ in range((a.inflight + PER_TESTBED - 1) // PER_TESTBED):
            p, port = start_testbed(a.build, slow)
            tbs.append(p)
            ports.append(port)
        sock = os.path.join(tempfile.mkdtemp(prefix="rt-bench-"), "ctl.sock")
        args = [os.path.join(a.build, "reqtraced"), "--socket", sock, "--no-inject"]
        for p in tbs:
            args += ["--pid", str(p.pid)]
        if a.max_requests:
            args += ["--max-requests", str(a.max_requests)]
        if a.ring_size:
            args += ["--ring-size", a.ring_size]
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.preload)) if a.preload else None
        d = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        while not os.path.exists(sock):
            time.sleep(0.05)
        time.sleep(0.5)
        rows.append(sample(d, sock, "started"))
        if a.fill:
            out = tempfile.mkdtemp(prefix="rt-bench-")
            subprocess.run([os.path.join(a.build, "src/testbed/reqtrace-load"), "--url",
                            "http://127.0.0.1:%d/v1/completions" % fport, "--concurrency", "64",
                            "--requests", str(a.fill), "--stream", "--max-tokens", "4",
                            "--out", os.path.join(out, "out.jsonl")],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            rows.append(sample(d, sock, "after %d fast requests" % a.fill))
        t0 = time.monotonic()
        conns = hold_streams(ports, a.inflight, 60000, sel)
        print("opened %d streams in %.1f s" % (len(conns), time.monotonic() - t0), flush=True)
        deadline = time.monotonic() + 120
        while True:
            drain(sel, 1.0)
            r = sample(d, sock, "in flight")
            print("  inflight %d conns %d threads %d rss %.1f MiB"
                  % (r["inflight"], r["conns"], r["threads"], r["rss_kb"] / 1024), flush=True)
            if r["inflight"] >= a.inflight or time.monotonic() > deadline:
                break
        drain(sel, a.hold)
        rows.append(sample(d, sock, "%d streams held %g s" % (len(conns), a.hold)))
        if a.preload:
            hist = "/tmp/alloc_hist.%d" % d.pid
            d.send_signal(signal.SIGUSR2)
            time.sleep(1.0)
            with open(hist) as f:
                print("live heap at the peak, by allocation size (%s):" % hist)
                print(f.read(), flush=True)
        for s in conns:
            sel.unregister(s)
            s.close()
        conns = []
        deadline = time.monotonic() + 60
        while True:  # the aborted requests end as spans
            time.sleep(1.0)
            r = sample(d, sock, "streams closed")
            if r["inflight"] == 0 or time.monotonic() > deadline:
                break
        rows.append(r)
    finally:
        for s in conns:
            s.close()
        if d:
            d.terminate()
            d.wait()
        for p in tbs:
            p.terminate()
        for p in tbs:
            p.wait()
    print("bounds: --max-requests %s, store capacity %d, merge pending_max %d"
          % (a.max_requests or "default (8192)", rows[0]["capacity"], rows[0]["pending_max"]))
    for r in rows:
        print("%-28s VmRSS %6.1f MiB (anon %6.1f, BPF maps %5.1f)  VmHWM %6.1f MiB  inflight %5d "
              "conns %5d threads %5d spans %5d/%d (%.1f MiB packed)  drops %s"
              % (r["stage"], r["rss_kb"] / 1024, r["anon_kb"] / 1024, r["ring_kb"] / 1024,
                 r["hwm_kb"] / 1024, r["inflight"], r["conns"], r["threads"], r["spans"],
                 r["capacity"], r["store_kb"] / 1024, json.dumps(r["drops"])))
    if a.markdown:
        print()
        print("| stage | VmRSS MiB | of it anon / BPF maps | VmHWM MiB | in flight | conns "
              "| threads | spans stored (packed MiB) | drops |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print("| %s | %.1f | %.1f / %.1f | %.1f | %d | %d | %d | %d/%d (%.1f) | %s |"
                  % (r["stage"], r["rss_kb"] / 1024, r["anon_kb"] / 1024, r["ring_kb"] / 1024,
                     r["hwm_kb"] / 1024, r["inflight"], r["conns"], r["threads"], r["spans"],
                     r["capacity"], r["store_kb"] / 1024,
                     ", ".join("%s %d" % kv for kv in r["drops"].items()) or "none"))


if __name__ == "__main__":
    main()
