#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtraced's JSONL exporter under load, with rotation and SIGHUP reloads.

reqtraced runs from a config file with a small jsonl_max_bytes while the
testbed serves load. Every line of every file (PATH.N ... PATH.1, PATH) must
be a span whose newest revision equals what `spans` returns for the request;
every request of the load appears exactly once per revision across the files
(nothing lost or doubled at a rotation); files respect the size bound. Then
SIGHUP with a changed jsonl_path (and ring_size, which needs a restart) moves
output to the new file, and a bad file on SIGHUP leaves the daemon running,
with file:line:key logged. docs/operations.md, "JSONL export".
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
N = 40  # requests before the reload
M = 12  # after it
MAX_BYTES = 8192
KEEP = 1000  # nothing rotated away: every line stays countable
SPAN_KEYS = {"request_id": str, "pid": int, "start_ns": int, "end_ns": int, "outcome": str,
             "phases": dict, "cpu": dict, "flags": list, "revision": int}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_conf(path, jsonl, ring="8M", keep=KEEP, max_spans=10000):
    with open(path, "w") as f:
        f.write("[daemon]\nlog_level = info\n[limits]\nring_size = %s\nmax_spans = %d\n"
                "[exporters]\njsonl_path = %s\njsonl_max_bytes = %d\njsonl_keep = %s\n"
                % (ring, max_spans, jsonl, MAX_BYTES, keep))


def files_of(path):
    """The file and its rotations, oldest first (PATH.N ... PATH.1, PATH)."""
    rotated = [p for p in glob.glob(path + ".*") if re.fullmatch(re.escape(path) + r"\.\d+", p)]
    rotated.sort(key=lambda p: -int(p.rsplit(".", 1)[1]))
    return rotated + ([path] if os.path.exists(path) else [])


def read_lines(path):
    """(file, span) per line of every file; a line that is no span fails the test."""
    out = []
    for p in files_of(path):
        with open(p, "rb") as f:
            data = f.read()
        check(not data or data.endswith(b"\n"), "%s ends with a whole line" % p)
        lines = data.split(b"\n")[:-1] if data else []
        size = len(data)
        check(size <= MAX_BYTES or len(lines) == 1,
              "%s: %d bytes, within %d (or one line alone)" % (p, size, MAX_BYTES))
        for line in lines:
            try:
                s = json.loads(line)
            except ValueError:
                check(False, "%s: a line that is not JSON: %r" % (p, line[:80]))
                continue
            bad = [k for k, t in SPAN_KEYS.items() if not isinstance(s.get(k), t)]
            check(not bad, "%s: a span line with its fields (%s missing or mistyped)" % (p, bad))
            out.append((p, s))
    return out


def wait_lines(path, ids, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        got = {s["request_id"] for _, s in read_lines_quiet(path)}
        if ids <= got or time.monotonic() > deadline:
            return
        time.sleep(0.2)


def read_lines_quiet(path):
    out = []
    for p in files_of(path):
        with open(p, "rb") as f:
            for line in f.read().split(b"\n"):
                try:
                    out.append((p, json.loads(line)))
                except ValueError:
                    pass
    return out


def wait_log(daemon, pattern, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        text = daemon.log_text()
        if re.search(pattern, text):
            return True
        if time.monotonic() > deadline:
            log("daemon log:\n" + text)
            return False
        time.sleep(0.1)


def load(server, n, prefix):
    out, r = lc.run_load(server.port, "--concurrency", 4, "--requests", n, "--stream",
                         "--max-tokens", 8, "--id-prefix", prefix)
    ok = [x for x in out if x.get("ok")]
    check(r.returncode == 0 and len(ok) == n, "the testbed served %d requests (%d ok)"
          % (n, len(ok)))
    return {x["request_id"] for x in ok}


def check_once(lines, ids, what):
    """Each (request, revision) of ids once; returns the newest line per request."""
    seen, newest = {}, {}
    for _, s in lines:
        if s["request_id"] not in ids:
            continue
        key = (s["request_id"], s["revision"])
        seen[key] = seen.get(key, 0) + 1
        if s["request_id"] not in newest or s["revision"] >= newest[s["request_id"]]["revision"]:
            newest[s["request_id"]] = s
    dups = [k for k, v in seen.items() if v > 1]
    check(not dups, "%s: no span line written twice (%s)" % (what, dups[:3]))
    missing = ids - set(newest)
    check(not missing, "%s: every request has a line (%d of %d; missing %s)"
          % (what, len(newest), len(ids), sorted(missing)[:3]))
    zero = sum(1 for i in ids if (i, 0) in seen)
    check(zero == len(ids), "%s: revision 0 of every request once (%d of %d)"
          % (what, zero, len(ids)))
    return newest


def metric(mport, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as r:
        body = r.read().decode()
    m = re.search(r"^%s (\d+)$" % re.escape(name), body, re.M)
    return int(m.group(1)) if m else None


def main():
    lc.require_root()
    d = tempfile.mkdtemp(prefix="rt-jsonl-")
    tb._tmpdirs.append(d)
    os.makedirs(os.path.join(d, "a"))
    os.makedirs(os.path.join(d, "b"))
    path_a = os.path.join(d, "a", "spans.jsonl")
    path_b = os.path.join(d, "b", "spans.jsonl")
    conf = os.path.join(d, "reqtraced.conf")
    write_conf(conf, path_a)
    mport = free_port()
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0"])
    mounted = None
    daemon = lc.Daemon(["--config", conf, "--pid", str(server.pid),
                        "--metrics-listen", "127.0.0.1:%d" % mport])
    try:
        st = os.stat(path_a)
        check(st.st_mode & 0o777 == 0o640, "the JSONL file is created mode 0640 (%o)"
              % (st.st_mode & 0o777))

        # ---- rotation under load ----
        ids = load(server, N, "jl-")
        spans = {s["request_id"]: s for s in daemon.wait_spans(N, ids=ids)
                 if s["request_id"] in ids}
        check(len(spans) == N, "reqtraced made a span per request (%d of %d)" % (len(spans), N))
        wait_lines(path_a, ids)
        lines = read_lines(path_a)
        files = files_of(path_a)
        status = daemon.status()["jsonl"]
        log("status jsonl: %s" % json.dumps(status))
        check(len(files) >= 3, "the small bound rotated the file (%d files)" % len(files))
        check(status["rotations"] == len(files) - 1,
              "status counts the rotations (%d, %d files)" % (status["rotations"], len(files)))
        check(status["lines"] == len(lines), "status lines == lines in the files (%d, %d)"
              % (status["lines"], len(lines)))
        check(status["bytes"] == sum(os.path.getsize(p) for p in files),
              "status bytes == the files' sizes")
        check(status["dropped"] == 0 and status["path"] == path_a,
              "nothing dropped, path %s" % status["path"])
        newest = check_once(lines, ids, "before the reload")
        same = sum(1 for i in ids if newest.get(i) == spans.get(i))
        check(same == N, "each request's newest line equals its span from `spans` (%d of %d)"
              % (same, N))
        others = {s["request_id"] for _, s in lines} - ids
        check(not others, "no line for a request the load did not make (%s)" % sorted(others)[:3])
        text = subprocess.run([lc.REQTRACE, "--socket", daemon.sock, "status"],
                              stdout=subprocess.PIPE, text=True, timeout=30).stdout
        want = "jsonl: %s (%d lines, %d rotations, 0 dropped)" % (path_a, status["lines"],
                                                                    status["rotations"])
        check(want in text, "`reqtrace status` shows the exporter (%r)" % want)
        exported = metric(mport, 'reqtrace_exported_spans_total{exporter="jsonl"}')
        dropped = metric(mport, 'reqtrace_dropped_total{stage="jsonl"}')
        check(exported == status["lines"] and dropped == 0,
              "prometheus: exported %s (status %d), dropped %s"
              % (exported, status["lines"], dropped))

        # ---- SIGHUP: a new path applies, ring_size needs a restart ----
        write_conf(conf, path_b, ring="16M", max_spans=20000)
        os.kill(daemon.proc.pid, signal.SIGHUP)
        check(wait_log(daemon, re.escape("SIGHUP: JSONL export %s" % path_b)),
              "SIGHUP applied the new jsonl_path")
        check(wait_log(daemon, r"SIGHUP: ring_size changed: needs a restart"),
              "SIGHUP said ring_size needs a restart")
        check(wait_log(daemon, r"SIGHUP: max_spans 10000 -> 20000"), "SIGHUP grew max_spans")
        st = daemon.status()
        check(st["jsonl"]["path"] == path_b, "status shows the new path")
        check(st["store"]["capacity"] == 20000 and st["store"]["spans"] >= N,
              "the store grew and kept its spans (%s)" % st["store"])
        before_a = len(read_lines_quiet(path_a))
        ids2 = load(server, M, "jl2-")
        daemon.wait_spans(M, ids=ids2)
        wait_lines(path_b, ids2)
        lines_b = read_lines(path_b)
        check_once(lines_b, ids2, "after the reload")
        check(not ({s["request_id"] for _, s in lines_b} & ids),
              "the new file holds none of the earlier requests")
        lines_a = read_lines_quiet(path_a)
        check(len(lines_a) == before_a and not ({s["request_id"] for _, s in lines_a} & ids2),
              "the old files get nothing more (%d lines, was %d)" % (len(lines_a), before_a))

        # ---- SIGHUP with a bad file: the daemon runs on, the error names file:line:key ----
        write_conf(conf, path_a, keep="lots")
        os.kill(daemon.proc.pid, signal.SIGHUP)
        want = r"SIGHUP: %s:9: key 'jsonl_keep': bad number 'lots'.*the running configuration " \
               r"stays" % re.escape(conf)
        check(wait_log(daemon, want), "a bad file on SIGHUP is logged with file:line:key")
        check(daemon.alive(), "reqtraced still runs after a bad reload")
        check(daemon.status()["jsonl"]["path"] == path_b, "the running jsonl_path stays")
        ids3 = load(server, 3, "jl3-")
        daemon.wait_spans(3, ids=ids3)
        wait_lines(path_b, ids3)
        check(ids3 <= {s["request_id"] for _, s in read_lines(path_b)},
              "spans still go to the running path")

        # ---- a full file system: lines dropped and counted, never split ----
        fs = os.path.join(d, "full")
        os.makedirs(fs)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k,mode=0755", "tmpfs", fs]).returncode:
            lc.cannot_run("cannot mount a 32 KiB tmpfs for the ENOSPC case")
        mounted = fs
        path_c = os.path.join(fs, "spans.jsonl")
        write_conf(conf, path_c)
        base = daemon.status()["jsonl"]  # counters run on across paths: Prometheus counters
        os.kill(daemon.proc.pid, signal.SIGHUP)
        check(wait_log(daemon, re.escape("SIGHUP: JSONL export %s" % path_c)),
              "SIGHUP moved the output onto the small tmpfs")
        ids4 = load(server, 60, "jl4-")
        daemon.wait_spans(60, ids=ids4)
        deadline = time.monotonic() + 20
        while True:
            st = daemon.status()["jsonl"]
            new_lines, new_dropped = st["lines"] - base["lines"], st["dropped"] - base["dropped"]
            if new_lines + new_dropped >= 60 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        log("status jsonl on the full tmpfs: %s" % json.dumps(st))
        lines_c = read_lines(path_c)  # every line whole, every file within the bound
        check(new_dropped > 0 and st["dropped"] == st["dropped_by"]["nospace"],
              "the full file system's losses are counted as nospace (%d)" % new_dropped)
        check(st["last_error"] == os.strerror(28), "last_error says why (%s)" % st["last_error"])
        check(new_lines == len(lines_c), "status lines grew by the lines on the tmpfs (%d, %d)"
              % (new_lines, len(lines_c)))
        check(new_lines + new_dropped >= 60,
              "every span either written or counted as dropped (%d + %d, 60 requests)"
              % (new_lines, new_dropped))
        got = {s["request_id"] for _, s in lines_c}
        check(got <= ids4 and len(got) + new_dropped >= 60,
              "only this load's requests, each written or dropped (%d + %d)"
              % (len(got), new_dropped))
        keys = [(s["request_id"], s["revision"]) for _, s in lines_c]
        check(len(keys) == len(set(keys)), "no span line written twice on the full file system")
        check(daemon.alive(), "reqtraced runs on with its JSONL file system full")
        dropped = metric(mport, 'reqtrace_dropped_total{stage="jsonl"}')
        check(dropped == st["dropped"], "prometheus: dropped{stage=jsonl} %s == status %d"
              % (dropped, st["dropped"]))
    finally:
        code = daemon.stop()
        server.stop()
        if mounted:
            subprocess.run(["umount", mounted])
    check(code == 0, "reqtraced exits cleanly (%s)" % code)
    lc.finish()


if __name__ == "__main__":
    main()
