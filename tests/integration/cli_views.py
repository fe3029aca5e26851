#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The CLI's views: show, top, why, demo.

1. On the committed recording tests/fixtures/cli/preprocess-markers.rtrace:
   `show ID --json --file` is byte for byte the span `replay --json` gives
   for that id; `show ID --file` draws every non-null phase with its value
   and a bar of the right length, in plain ASCII within the width; `top
   --once --file` has the percentiles, throughput, recent and in-flight
   requests that Python computes from `replay --json`; `why --file` names
   the phase with the largest p50.
2. Live: reqtraced + testbed under load; `top --once` against the daemon
   shows requests in flight, then the finished ones; `show` from the
   daemon matches `spans --json`.
3. `demo preprocess-bound --requests 6` runs to completion and names
   tokenize as the dominant phase.
"""

import fcntl
import json
import math
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
FIXTURE = os.path.join(lc.SRC, "tests", "fixtures", "cli", "preprocess-markers.rtrace")
PHASES = ["receive", "queue", "tokenize", "prefill", "pre_first_token", "decode",
          "comm_wait", "postprocess", "other"]
WIDTH = 100
BAR_W = WIDTH - 42 - 2  # the waterfall's label column and the two '|'


def run(args, sock=None, env=None, timeout=60):
    cmd = [lc.REQTRACE] + (["--socket", sock] if sock else []) + list(args)
    e = dict(os.environ)
    e.update({"COLUMNS": str(WIDTH)})
    e.pop("NO_COLOR", None)
    if env:
        e.update(env)
    log("run: " + " ".join(cmd))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def pct(values, p):
    """Nearest rank, as reqtrace computes it."""
    v = sorted(values)
    if not v:
        return None
    return v[max(1, math.ceil(len(v) * p / 100)) - 1]


def close(a, b, tol=0.051):
    return a is not None and b is not None and abs(a - b) <= tol


def replay_spans():
    r = run(["replay", FIXTURE, "--json"])
    check(r.returncode == 0, "replay --json of the fixture exits 0 (%d: %s)" % (r.returncode,
                                                                              r.stderr.strip()))
    last, raw = {}, {}
    for line in r.stdout.splitlines():
        s = json.loads(line)
        last[s["request_id"]] = s  # later revisions replace earlier ones
        raw[s["request_id"]] = line
    m = re.search(r"(\d+) request\(s\) still in flight", r.stderr)
    return last, raw, int(m.group(1)) if m else 0


def section(text, title):
    """Lines after the line starting with title, up to the next blank line."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if l.startswith(title):
            out = []
            for l2 in lines[i + 1:]:
                if not l2.strip():
                    break
                out.append(l2)
            return l, out
    return None, []


def pct_rows(rows):
    """'  name   p50   p99   n' rows → {name: (p50, p99, n)}."""
    out = {}
    for r in rows:
        m = re.match(r"^  (.+?)\s+(-|[\d.]+)\s+(-|[\d.]+)\s+(\d+)$", r)
        if m:
            f = lambda x: None if x == "-" else float(x)  # noqa: E731
            out[m.group(1).strip()] = (f(m.group(2)), f(m.group(3)), int(m.group(4)))
    return out


def ms_of(span, name):
    if name == "duration":
        return (span["end_ns"] - span["start_ns"]) / 1e6
    if name == "ttft":
        return None if span["first_token_ns"] is None else \
            (span["first_token_ns"] - span["start_ns"]) / 1e6
    if name.startswith("itl"):
        itl = span["itl_ms"]
        return None if itl is None else itl["p50" if "p50" in name else "p99"]
    return span["phases"][name + "_ms"]


def check_show_file(spans, raw):
    # the slowest request: the most bars to check
    sid = max(spans, key=lambda i: spans[i]["duration_ms"])
    s = spans[sid]
    r = run(["show", sid, "--json", "--file", FIXTURE])
    check(r.returncode == 0, "show --json --file exits 0")
    check(r.stdout.rstrip("\n") == raw[sid],
          "show %s --json --file is byte for byte replay --json's last revision" % sid)
    check(json.loads(r.stdout) == s, "... and the same object")

    r = run(["show", sid, "--file", FIXTURE])
    out = r.stdout
    check(r.returncode == 0, "show --file exits 0")
    check("\x1b" not in out, "show to a pipe is plain: no escape byte")
    check(all(len(l) <= WIDTH for l in out.splitlines()),
          "every line within COLUMNS=%d (longest %d)" % (WIDTH, max(map(len, out.splitlines()))))
    check(out.startswith("request  %s\n" % sid), "header names the request")
    # the same double and the same correctly rounded %.1f as the C side
    check("duration %.1f ms" % ((s["end_ns"] - s["start_ns"]) / 1e6) in out and
          "TTFT %.1f ms" % ((s["first_token_ns"] - s["start_ns"]) / 1e6) in out,
          "header has duration and TTFT")
    rows = {}
    for l in out.splitlines():
        m = re.match(r"^(\w+)\s+(-?[\d.]+)\s+(marker|probe|inferred|-)\s+\|(.*)\|$", l)
        if m and m.group(1) in PHASES:
            rows[m.group(1)] = (float(m.group(2)), m.group(3), m.group(4))
    dur = s["end_ns"] - s["start_ns"]
    for p in PHASES:
        v = s["phases"][p + "_ms"]
        if v is None:
            check(p not in rows, "null phase %s has no bar" % p)
            continue
        if not check(p in rows, "phase %s has a row" % p):
            continue
        val, src, bar = rows[p]
        check(close(val, v), "%s row shows %.1f ms (span: %.3f)" % (p, val, v))
        check(src == s["phase_source"].get(p, "-"), "%s row shows its source %s" % (p, src))
        want = round(v * 1e6 * BAR_W / dur)
        got = bar.count("#") + bar.count("~")
        check(abs(got - max(want, 1 if v > 0 else 0)) <= 1,
              "%s bar is %d cells (%.0f%% of %d: %d)" % (p, got, 100 * v * 1e6 / dur, BAR_W, want))
    nulls = [p for p in PHASES if s["phases"][p + "_ms"] is None]
    if nulls:
        check(("no value (not observed): " + ", ".join(nulls)) in out, "null phases are named")
    for t in s["cpu"]["threads"]:
        check(re.search(r"^\s*%d \S+\s+%.1f\s+%.1f" % (t["tid"], t["on_cpu_ms"], t["runq_ms"]),
                        out, re.M) is not None,
              "thread %d row with on-CPU %.1f and runqueue %.1f ms" % (t["tid"], t["on_cpu_ms"],
                                                                    t["runq_ms"]))
    r = run(["show", "no-such-request", "--file", FIXTURE])
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and not r.stdout,
          "unknown id: one-line error, exit 1 (%d, %r)" % (r.returncode, r.stderr))


def check_top_file(spans, n_open):
    r = run(["top", "--once", "--file", FIXTURE])
    out = r.stdout
    check(r.returncode == 0, "top --once --file exits 0")
    check("\x1b" not in out, "top --once has no escape byte")
    vals = list(spans.values())
    n = len(vals)

    _, rows = section(out, "PHASES")
    got = pct_rows(rows)
    for p in PHASES:
        xs = [v["phases"][p + "_ms"] for v in vals if v["phases"][p + "_ms"] is not None]
        g = got.get(p)
        if not check(g is not None, "top has a row for %s" % p):
            continue
        if not xs:
            check(g == (None, None, 0), "%s: no value in any span, shown as -" % p)
            continue
        check(close(g[0], pct(xs, 50)) and close(g[1], pct(xs, 99)) and g[2] == len(xs),
              "%s p50/p99/n %s = Python's %.3f/%.3f/%d" % (p, g, pct(xs, 50), pct(xs, 99),
                                                           len(xs)))
    _, rows = section(out, "LATENCY")
    got = pct_rows(rows)
    for name in ("duration", "ttft", "itl (request p50)", "itl (request p99)"):
        xs = [ms_of(v, name) for v in vals if ms_of(v, name) is not None]
        g = got.get(name)
        check(g is not None and close(g[0], pct(xs, 50)) and close(g[1], pct(xs, 99)) and
              g[2] == len(xs), "%s %s = Python's %s/%s" % (name, g, pct(xs, 50), pct(xs, 99)))

    m = re.search(r"^throughput ([\d.]+) req/s, ([\d.]+) tokens/s \((\d+) finished", out, re.M)
    window = (max(v["end_ns"] for v in vals) - min(v["start_ns"] for v in vals)) / 1e9
    check(m and close(float(m.group(1)), n / window, 0.006) and int(m.group(3)) == n,
          "throughput %s req/s = %d spans over %.2f s" % (m and m.group(1), n, window))
    toks = sum(v["tokens_out"] for v in vals if v["tokens_out"] is not None)
    check(m and close(float(m.group(2)), toks / window, 0.06), "tokens/s = %d over the window" % toks)

    head, rows = section(out, "RECENT")
    want = sorted(vals, key=lambda v: -v["end_ns"])[:10]
    ids = [r.split()[0] for r in rows[1:]]
    check(ids == [v["request_id"] for v in want], "recent: newest first %s" % ids)
    head, rows = section(out, "IN FLIGHT")
    check(head == "IN FLIGHT (%d)" % n_open, "%r: as many as replay leaves open (%d)" % (head,
                                                                                       n_open))
    open_ids = [r.split()[0] for r in rows[1:]]
    check(len(open_ids) == n_open and not set(open_ids) & set(spans),
          "in-flight rows %s are requests that did not finish" % open_ids)
    check(n_open >= 1, "the fixture ends with a request in flight")


def check_why_file(spans):
    vals = list(spans.values())
    best, bv = None, None
    for p in PHASES:
        xs = [v["phases"][p + "_ms"] for v in vals if v["phases"][p + "_ms"] is not None]
        if xs and (bv is None or pct(xs, 50) > bv):
            best, bv = p, pct(xs, 50)
    r = run(["why", "--file", FIXTURE])
    check(r.returncode == 0, "why --file exits 0")
    check(re.search(r"^%s .*<- dominates p50" % best, r.stdout, re.M) is not None and
          ("- %s is " % best) in r.stdout, "why names %s as dominant at p50" % best)
    check("tokenize work of" in r.stdout or "tokenizer" in r.stdout,
          "why names the serial tokenizer thread")


def check_top_tty():
    """Full-screen top in a pseudo-terminal: raw mode while it runs, q or a signal ends
    it, and the terminal is as it was afterwards."""
    for how in ("q", signal.SIGINT, signal.SIGTERM):
        pid, fd = pty.fork()
        if pid == 0:
            os.environ["TERM"] = "xterm"
            os.execv(lc.REQTRACE, [lc.REQTRACE, "top", "--file", FIXTURE, "--interval", "200ms"])
        cooked = termios.tcgetattr(fd)[3] & termios.ICANON
        out, raw, st = b"", None, None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if select.select([fd], [], [], 0.1)[0]:
                    out += os.read(fd, 1 << 16)
            except OSError:
                break
            if raw is None and out.count(b"\x1b[H\x1b[2J") >= 2:
                raw = not termios.tcgetattr(fd)[3] & termios.ICANON
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 70, 0, 0))
                time.sleep(0.3)
                if how == "q":
                    os.write(fd, b"q")
                else:
                    os.kill(pid, how)
            if raw is not None:
                p, st = os.waitpid(pid, os.WNOHANG)
                if p:
                    break
        if st is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        try:
            while select.select([fd], [], [], 0.2)[0]:
                out += os.read(fd, 1 << 16)
        except OSError:
            pass
        restored = termios.tcgetattr(fd)[3] & termios.ICANON
        os.close(fd)
        frames = out.split(b"\x1b[H\x1b[2J")
        check(cooked and raw and restored and st is not None and os.waitstatus_to_exitcode(st) == 0,
              "top in a terminal: raw mode while it runs, %s ends it (exit 0), terminal "
              "restored" % ("q" if how == "q" else signal.Signals(how).name))
        check(out.rstrip().endswith(b"\x1b[?25h") and b"IN FLIGHT (1)" in frames[-1],
              "... the cursor comes back; frames are redrawn in place")
        last = frames[-1].split(b"\x1b[?25h")[0].split(b"\r\n")
        check(len(last) <= 20 and max(len(l) for l in last) <= 70,
              "... after SIGWINCH a frame fits the new 70x20 terminal (%d lines, widest %d)"
              % (len(last), max(len(l) for l in last)))


def check_live():
    with tb.Testbed(["--scenario", tb.scenario("preprocess-bound"), "--port", "0",
                     "--markers"]) as t:
        d = lc.Daemon(["--port", str(t.port)])
        try:
            load = subprocess.Popen([tb.LOAD, "--url", t.url(), "--concurrency", "2",
                                     "--requests", "4", "--stream", "--id-prefix", "cv-"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seen_open = None
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and load.poll() is None:
                r = run(["top", "--once"], sock=d.sock)
                head, rows = section(r.stdout, "IN FLIGHT")
                if r.returncode == 0 and head and head != "IN FLIGHT (0)":
                    seen_open = (head, rows)
                    break
                time.sleep(0.3)
            check(seen_open is not None and any(" cv-" in " " + r for r in seen_open[1]),
                  "live top --once lists a load request in flight: %s" % (seen_open,))
            check(load.wait(60) == 0, "the load succeeded")
            spans = d.wait_spans(4)
            r = run(["top", "--once"], sock=d.sock)
            head, rows = section(r.stdout, "RECENT")
            ids = sorted(x.split()[0] for x in rows[1:])
            check(r.returncode == 0 and ids == ["cv-0", "cv-1", "cv-2", "cv-3"],
                  "live top --once lists the finished requests: %s" % ids)
            check("\x1b" not in r.stdout, "live top --once has no escape byte")
            sp = run(["spans", "--json"], sock=d.sock)
            line = [l for l in sp.stdout.splitlines() if '"request_id":"cv-2"' in l]
            r = run(["show", "cv-2", "--json"], sock=d.sock)
            check(r.returncode == 0 and line and r.stdout.rstrip("\n") == line[-1],
                  "show --json from the daemon = spans --json's line")
            r = run(["show", "cv-2"], sock=d.sock)
            check(r.returncode == 0 and r.stdout.startswith("request  cv-2\n") and
                  "tokenize" in r.stdout, "show from the daemon draws the waterfall")
            r = run(["show", "nope"], sock=d.sock)
            check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1,
                  "show of an unknown id from the daemon: one line, exit 1")
            check(len(spans) >= 4, "the daemon has the spans")
        finally:
            check(d.stop() == 0, "reqtraced exits 0")


def check_demo():
    t0 = time.monotonic()
    r = run(["demo", "preprocess-bound", "--requests", "6"],
            env={"RT_CONFIG_DIR": os.path.join(lc.SRC, "configs")}, timeout=120)
    log(r.stdout[-3000:])
    check(r.returncode == 0, "demo exits 0 (%d: %s)" % (r.returncode, r.stderr[-500:]))
    check("markers are on" in r.stdout, "demo says markers are on")
    check("---- top," in r.stdout and "IN FLIGHT" in r.stdout, "demo shows top frames")
    check("== the client's view" in r.stdout and "requests 6: ok 6" in r.stdout,
          "demo prints the client's view")
    check(r.stdout.count("-- slowest #") == 3, "demo shows the 3 slowest requests")
    check(re.search(r"^- tokenize is \d+% of p50 latency", r.stdout, re.M) is not None and
          re.search(r"^tokenize .*<- dominates p50", r.stdout, re.M) is not None,
          "the verdict names tokenize as dominant")
    left = subprocess.run(["pgrep", "-f", "reqtrace-demo-"], capture_output=True, text=True)
    check(left.stdout.strip() == "", "no demo process left behind")
    log("demo took %.1f s" % (time.monotonic() - t0))


def main():
    lc.require_root()
    if not check(os.path.exists(FIXTURE), "fixture " + FIXTURE):
        lc.finish()
    spans, raw, n_open = replay_spans()
    check(len(spans) >= 3, "the fixture has finished spans (%d)" % len(spans))
    check_show_file(spans, raw)
    check_top_file(spans, n_open)
    check_why_file(spans)
    check_top_tty()
    check_live()
    check_demo()
    lc.finish()


if __name__ == "__main__":
    main()
