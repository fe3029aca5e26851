# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the testbed's integration tests (python3 stdlib only).

The tests start real reqtrace-testbed and reqtrace-load processes found
under $RT_BINARY_DIR (set by CTest) and check them against the truth log.
"""

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get(
    "RT_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
)
BIN = os.environ.get("RT_BINARY_DIR", os.path.join(SRC, "build"))
TESTBED = os.path.join(BIN, "src", "testbed", "reqtrace-testbed")
LOAD = os.path.join(BIN, "src", "testbed", "reqtrace-load")
MARKER_LIB = os.path.join(BIN, "src", "marker", "libreqtrace_marker.so.1")
MARKER_RECORD_LIB = os.path.join(BIN, "src", "marker", "libreqtrace_marker_record.so")
SCENARIOS = os.path.join(SRC, "configs", "scenarios")

TRUTH_KEYS = {
    "request_id", "accept_ns", "arrival_ns", "first_read_ns", "received_ns", "tokenize_start_ns", "tokenize_end_ns",
    "enqueue_ns", "admitted_ns", "first_token_write_ns", "token_write_ns",
    "last_token_write_ns", "end_ns", "comm_wait_ns", "tokenizer_tid", "step_tids", "outcome",
}

failures = []
_tmpdirs = []


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    """Records a failed assertion (the test goes on to report them all)."""
    if cond:
        log("ok:   " + msg)
    else:
        log("FAIL: " + msg)
        failures.append(msg)
    return cond


def within(value, want, rel):
    return abs(value - want) <= rel * abs(want)


def _show_kept(d, tail_lines=40):
    """What CI's output needs when nobody can open the kept files: each file's size, and the
    end of every log the processes wrote (the daemon's, the testbed's stderr)."""
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return
    for n in names:
        p = os.path.join(d, n)
        try:
            size = os.path.getsize(p)
        except OSError:
            continue
        log("  kept %s (%d bytes)" % (p, size))
        if n.endswith((".log", ".stderr")) and size:
            with open(p, errors="replace") as f:
                lines = f.read().splitlines()[-tail_lines:]
            for line in lines:
                log("    | " + line)


def finish():
    """Exits 1 if a check failed (keeping the temporary files to look at, and printing their
    logs), else 0."""
    if failures:
        log("%d check(s) failed; files kept in %s" % (len(failures), " ".join(_tmpdirs)))
        for d in _tmpdirs:
            _show_kept(d)
        sys.exit(1)
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)
    log("all checks passed")
    sys.exit(0)


def scenario(name):
    return os.path.join(SCENARIOS, name + ".conf")


def tmpdir():
    d = tempfile.mkdtemp(prefix="rt-testbed-")
    _tmpdirs.append(d)
    return d


def asan_env(env):
    """LD_PRELOAD next to an ASan runtime needs the link-order check off."""
    env = dict(env)
    opts = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
    return env


def _renice(inc):
    """In the child before exec: every thread the testbed starts inherits it.

    With autogroup scheduling (sched_autogroup_enabled) nice only ranks tasks
    within a session, and sessions share the CPU equally: the child gets a
    session of its own and gives it the same nice value.
    """
    try:
        os.setsid()
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(inc))
    except OSError:
        pass  # no autogroup scheduling
    try:
        os.nice(inc)
    except OSError:
        pass  # not allowed (not root): measure at normal priority


class Testbed:
    """A reqtrace-testbed process: started, port read, stopped with SIGTERM."""

    def __init__(self, args, env=None, wrap=None, name="testbed", nice=0):
        self.dir = tmpdir()
        self.err_path = os.path.join(self.dir, name + ".stderr")
        self.err = open(self.err_path, "w")
        self.wrapped = bool(wrap)
        cmd = (wrap or []) + [TESTBED] + list(args)
        log("start: " + " ".join(cmd))
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.err, env=env or os.environ.copy(),
            text=True, preexec_fn=(lambda: _renice(nice)) if nice else None,
        )
        self.port = self._wait_listening(15)

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                line = self.proc.stdout.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith("listening on 127.0.0.1:"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("testbed did not start: %r; stderr: %s" % (line, self.stderr()))
        return int(line.strip().rsplit(":", 1)[1])

    @property
    def pid(self):
        """The testbed's pid (under a wrapper such as strace: the wrapper's child)."""
        if not self.wrapped:
            return self.proc.pid
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                kids = f.read().split()
            return int(kids[0]) if kids else self.proc.pid
        except OSError:
            return self.proc.pid

    def url(self, path="/v1/completions"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        if not self.err.closed:
            self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self, timeout=20):
        """SIGTERM; returns the exit status (None if it had to be killed)."""
        if self.proc.poll() is None:
            # a wrapper (strace) exits with its child's status
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        self.err.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_load(url, args, timeout=120):
    """Runs reqtrace-load; returns (exit status, per-request results, summary, stderr)."""
    d = tmpdir()
    out = os.path.join(d, "load.jsonl")
    summ = os.path.join(d, "summary.json")
    cmd = [LOAD, "--url", url, "--out", out, "--summary", summ] + [str(a) for a in args]
    log("load: " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    results, summary = [], None
    if os.path.exists(out):
        with open(out) as f:
            results = [json.loads(l) for l in f if l.strip()]
    if os.path.exists(summ):
        with open(summ) as f:
            summary = json.loads(f.read())
    if p.returncode != 0:
        log("load stderr: " + p.stderr[-2000:])
    return p.returncode, results, summary, p.stderr


def read_truth(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def truth_ok_keys(rows):
    """Every line has exactly the documented keys."""
    bad = [r.get("request_id") for r in rows if set(r) != TRUTH_KEYS]
    return check(not bad, "truth lines have exactly the documented keys (bad: %s)" % bad[:3])


def thread_runq_s(pid, tid):
    """Time one thread spent runnable but waiting for a CPU, in seconds
    (/proc/PID/task/TID/schedstat: on-CPU ns, runqueue ns, slices)."""
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[1]) / 1e9


def thread_cpu_s(pid, tid):
    """utime + stime of one thread, in seconds, from /proc/PID/task/TID/stat."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_raw(port, data, timeout=10, shut=True):
    """Sends raw bytes, returns everything the server sends until it closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may refuse before reading everything: read its answer
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        s.close()


def status_of(resp):
    try:
        return int(resp.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None
