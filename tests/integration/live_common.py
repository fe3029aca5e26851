# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for live-capture tests: a real reqtraced tracing real processes.

These tests load and attach the BPF programs. Outside CI they skip (exit 77)
when that is impossible (not root, no BPF); with CI=true they fail instead,
as the project's rules demand.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testbed_common as tb  # noqa: E402

BIN = tb.BIN
SRC = tb.SRC
REQTRACED = os.path.join(BIN, "reqtraced")
REQTRACE = os.path.join(BIN, "reqtrace")
SKIP = 77
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

log = tb.log
check = tb.check
finish = tb.finish


def cannot_run(why):
    """BPF is unavailable: fail in CI, skip elsewhere."""
    if IN_CI:
        log("FAIL (CI=true, so this is not skipped): " + why)
        sys.exit(1)
    log("SKIP: " + why)
    sys.exit(SKIP)


def require_root():
    if os.geteuid() != 0:
        cannot_run("needs root to load BPF programs")
    for p in (REQTRACED, REQTRACE):
        if not os.access(p, os.X_OK):
            cannot_run("%s is not built" % p)


class Daemon:
    """reqtraced with its own control socket in a temp dir."""

    def __init__(self, args, name="reqtraced", env=None, wrap=None):
        self.dir = tempfile.mkdtemp(prefix="rt-live-")
        tb._tmpdirs.append(self.dir)  # removed by finish() unless a check failed
        self.sock = os.path.join(self.dir, "ctl.sock")
        self.err_path = os.path.join(self.dir, name + ".log")
        self.err = open(self.err_path, "w")
        self.inject_sock = os.path.join(self.dir, "inject.sock")
        # wrap: a launcher that execs reqtraced (setpriv), so proc.pid stays its pid
        cmd = (wrap or []) + [REQTRACED, "--socket", self.sock] + list(args)
        if "--inject-socket" not in args and "--no-inject" not in args:
            cmd += ["--inject-socket", self.inject_sock]
        # RT_LIVE_RECORD=1 keeps the raw events of a run for replay (a failed
        # check keeps the directory); a debugging aid: tests that start their
        # own recording (privacy) fail with it
        if os.environ.get("RT_LIVE_RECORD") and "--record" not in args:
            cmd += ["--record", os.path.join(self.dir, "events.rtrace")]
        log("start: " + " ".join(cmd))
        self.proc = subprocess.Popen(cmd, stdout=self.err, stderr=self.err,
                                     env=env or os.environ.copy())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                cannot_run("reqtraced exited with %d at start: %s" % (self.proc.returncode,
                                                                      self.log_text()))
            if os.path.exists(self.sock):
                try:
                    self.call({"cmd": "status"})
                    return
                except OSError:
                    pass
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError("reqtraced did not come up: " + self.log_text())

    def log_text(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()[-4000:]

    def call(self, req, timeout=60):
        """One control request; returns (payload lines as dicts, terminator dict)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.sock)
        s.sendall((json.dumps(dict({"v": 1}, **req)) + "\n").encode())
        buf = b""
        lines = []
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                raise OSError("daemon closed the connection")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                obj = json.loads(line)
                if line.startswith(b'{"end":'):
                    s.close()
                    return lines, obj
                if line.startswith(b'{"error":'):
                    s.close()
                    raise RuntimeError("daemon: " + obj["error"])
                lines.append(obj)

    def status(self):
        return self.call({"cmd": "status"})[0][0]

    def spans(self, **kw):
        return self.call(dict({"cmd": "spans"}, **kw))[0]

    def wait_spans(self, n, timeout=20, ids=None):
        """Spans once at least n are in the store (or the ids given all are)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans()
            got = {s["request_id"] for s in spans}
            if (ids is None and len(spans) >= n) or (ids is not None and ids <= got):
                return spans
            if time.monotonic() > deadline:
                return spans
            time.sleep(0.2)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM; returns the exit code (a clean shutdown is 0)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        return self.proc.returncode


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def run_load(port, *args, out=None):
    """reqtrace-load against the testbed; returns its per-request lines."""
    d = tempfile.mkdtemp(prefix="rt-load-")
    out = out or os.path.join(d, "load.jsonl")
    cmd = [tb.LOAD, "--url", "http://127.0.0.1:%d/v1/completions" % port, "--out", out]
    cmd += [str(a) for a in args]
    log("load: " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode not in (0, 1):
        raise RuntimeError("reqtrace-load failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    return read_jsonl(out), r


def pct(values, p):
    """Nearest-rank percentile (the definition spans use)."""
    v = sorted(values)
    if not v:
        return None
    k = max(1, -(-len(v) * p // 100))
    return v[int(k) - 1]
