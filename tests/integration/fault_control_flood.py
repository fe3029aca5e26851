#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fault: the control socket flooded while the daemon traces a loaded target.

  - 1000 clients connect at once and each sends a status request: every one
    gets an answer or an error line (the daemon serves 64 at a time, the rest
    are told "too many clients"), none is left hanging;
  - 8 clients send garbage lines (not JSON, JSON that is no request, wrong
    version, binary, NULs) and each gets one error per line, then a valid
    request on the same connection is still answered;
  - a line longer than the 64 KiB limit is refused with an error;
  - a client that sends garbage lines as fast as it can without reading the
    answers: the daemon stops reading from it once 256 KiB of answers pile
    up, so its memory stays bounded; when the client reads, every line it sent
    is answered;
  - meanwhile every request of the load has its span, and the daemon answers
    afterwards.

The daemon's peak RSS growth over the floods is printed and checked against
64 MiB (a memory bound, not a speed bound).
"""

import json
import os
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
N_CLIENTS = 1000
RSS_GROWTH_MAX_KB = 64 * 1024


def rss_kb(pid, key="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def read_lines(s, n, timeout=60):
    """Up to n answer lines from s (fewer if it closes); terminators only count."""
    s.settimeout(timeout)
    buf, lines = b"", []
    while len(lines) < n:
        try:
            chunk = s.recv(1 << 16)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and len(lines) < n:
            line, buf = buf.split(b"\n", 1)
            if line.startswith(b'{"end":') or line.startswith(b'{"error":'):
                lines.append(json.loads(line))
    return lines


def many_clients(sock):
    """N_CLIENTS connected at once, each asking for status. Returns (answered, errors,
    nothing)."""
    conns = []
    for _ in range(N_CLIENTS):
        # a blocking connect, as the CLI's: it waits for room in the listen backlog
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sock)
            s.sendall(b'{"v":1,"cmd":"status"}\n')
        except OSError:
            pass  # reset at connect: the answer (none) is counted below
        conns.append(s)
    answered = errors = nothing = 0
    msgs = set()
    for s in conns:
        try:
            got = read_lines(s, 1)
        except OSError:
            got = []
        s.close()
        if got and "end" in got[0]:
            answered += 1
        elif got:
            errors += 1
            msgs.add(got[0]["error"])
        else:
            nothing += 1
    return answered, errors, nothing, msgs


GARBAGE = [b"hello", b"{", b"[]", b"42", b'"cmd"', b"{}", b'{"cmd":7}', b'{"v":2,"cmd":"status"}',
           b'{"cmd":"no-such-command"}', b"\x00\x01\x02\xff\xfe", b"\xc3\x28 not utf-8",
           b'{"cmd":"spans","since":"yesterday"}', b'{"cmd":"show"}', b" " * 1000]


def garbage_client(sock, rounds, result, idx):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    lines = [g for g in GARBAGE for _ in range(rounds)]
    s.sendall(b"\n".join(lines) + b"\n" + b'{"cmd":"status"}\n')
    got = read_lines(s, len(lines) + 1)
    s.close()
    result[idx] = (len(lines), got)


def main():
    lc.require_root()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < N_CLIENTS + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, N_CLIENTS + 100),) * 2)
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--set",
                         "decode_base_ms=5"])
    env = os.environ.copy()
    if "ASAN_OPTIONS" in env:
        # ASan keeps freed memory in a quarantine (256 MiB by default), which
        # a flood of short-lived buffers fills: that is the sanitizer's RSS,
        # not the daemon's bound. A small quarantine keeps the check meaningful.
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=8:thread_local_quarantine_size_kb=64"
    daemon = lc.Daemon(["--pid", str(server.pid)], env=env)
    pid = daemon.proc.pid
    loader = {}

    def load():
        loader["out"], loader["r"] = lc.run_load(server.port, "--concurrency", 2, "--requests",
                                                  150, "--stream", "--max-tokens", 8,
                                                  "--id-prefix", "fl-")

    try:
        daemon.wait_spans(0)
        rss0 = rss_kb(pid)
        lt = threading.Thread(target=load)
        lt.start()

        # 1. a thousand clients at once
        answered, errors, nothing, msgs = many_clients(daemon.sock)
        log("1000 clients: %d answered, %d errors %s, %d got nothing"
            % (answered, errors, sorted(msgs), nothing))
        check(answered + errors == N_CLIENTS and nothing == 0,
              "each of 1000 clients gets an answer or an error line")
        check(answered >= 1 and errors >= 1,
              "some are served, the rest are told why not (%d, %d)" % (answered, errors))
        check(all(m.startswith("too many clients") for m in msgs),
              "the error says too many clients")

        # 2. garbage lines from 8 clients at once, answered line by line
        res = {}
        ts = [threading.Thread(target=garbage_client, args=(daemon.sock, 50, res, i))
              for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        bad = []
        for i in range(8):
            n, got = res.get(i, (0, []))
            errs = [g for g in got[:n] if "error" in g]
            if not n or len(errs) != n or len(got) != n + 1 or "end" not in got[n]:
                bad.append((i, n, len(errs), len(got)))
        check(not bad, "8 garbage clients: one error per garbage line (%d each), then the "
              "valid request is answered (off: %s)" % (len(GARBAGE) * 50, bad[:3]))

        # 3. a line over the limit
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(daemon.sock)
        try:
            s.sendall(b"x" * (70 << 10))
        except OSError:
            pass
        got = read_lines(s, 1)
        s.close()
        check(got and "error" in got[0] and "longer" in got[0]["error"],
              "a line over 64 KiB is refused: %s" % got)

        # 4. garbage as fast as possible, answers never read
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(daemon.sock)
        s.settimeout(5)
        sent = 0
        chunk = b"x\n" * (1 << 15)
        peak = rss_kb(pid)
        t_end = time.monotonic() + 8
        while time.monotonic() < t_end:
            try:
                sent += s.send(chunk)
            except socket.timeout:
                pass  # the daemon stopped reading from us: what the check wants
            except OSError:
                break  # cut off
            peak = max(peak, rss_kb(pid))
        log("unread flood: %d lines sent in 8 s, daemon RSS %d KiB -> peak %d KiB"
            % (sent // 2, rss0, peak))
        # reading the answers lets the daemon take the rest of the requests
        got = read_lines(s, sent // 2, timeout=30)
        s.close()
        check(len(got) == sent // 2 and all("error" in g for g in got),
              "once the client reads, every line it sent is answered (%d of %d)"
              % (len(got), sent // 2))

        lt.join(300)
        check(loader["r"].returncode == 0, "the load ran through the floods")
        ids = {x["request_id"] for x in loader["out"]}
        spans = daemon.wait_spans(0, ids=ids)
        got = {x["request_id"] for x in spans}
        check(ids <= got and len(ids) == 150,
              "every request of the load has its span (%d of %d)" % (len(ids & got), len(ids)))
        hwm = rss_kb(pid, "VmHWM")
        log("daemon RSS: %d KiB before the floods, peak %d KiB (growth %d KiB)"
            % (rss0, hwm, hwm - rss0))
        check(hwm - rss0 <= RSS_GROWTH_MAX_KB, "the daemon's memory stays bounded: peak RSS "
              "grew %d KiB <= %d KiB" % (hwm - rss0, RSS_GROWTH_MAX_KB))
        check(daemon.alive() and daemon.status()["targets"][0]["active"],
              "the daemon answers and traces after the floods")
    finally:
        server.stop()
        code = daemon.stop()
    check(code == 0, "reqtraced exits 0 on SIGTERM")
    lc.finish()


if __name__ == "__main__":
    main()
