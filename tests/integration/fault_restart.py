#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fault: the daemon SIGKILLed and restarted while its target is under load.

A testbed (--port target) serves a steady stream of streaming requests, four
at a time: two over connections kept open throughout, two over a new
connection each. The daemon is
killed with SIGKILL mid-load and a new one started with the same options.

  - the load never notices (every request answered);
  - the daemon's tracepoint links are pinned in bpffs (docs/deploy.md,
    "Restart"): the killed daemon's pins are removed by the new one once its
    own are in place, and a clean exit removes its own;
  - the new daemon traces the running target again (the resume time is
    measured and printed: kill -> target traced, kill -> first new span; the
    check only asks that it happens, within a generous limit);
  - every request that started after the target showed as traced has a span;
  - spans cut by the restart (requests that began before the new daemon
    started, and requests on connections it did not see open) are flagged
    started_before_trace or incomplete;
  - a request in flight across the restart, whose request the new daemon
    never saw, still has a span: flagged started_before_trace, start,
    duration, TTFT and phases null, matched to the load's request only by
    the id its response carries (the testbed's "cmpl-<request id>"), never
    to a request that also has a whole span, with no more events than the
    request had; several are in flight at the kill (two keep-alive
    connections, 10 ms per token), at least one must be found;
  - no span is wrong: each names the testbed's pid and a request the load
    sent, its instants are in the order causality sets against the client's
    (sent < first read returns <= request read whole < response read whole;
    first-token write begins < client sees it), it has its status, and when
    unflagged its outcome ok and exactly its events.
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
RESUME_LIMIT_S = 30.0  # generous: only that it resumes; the time itself is printed
CUT_FLAGS = {"started_before_trace", "incomplete"}
PIN_ROOT = "/sys/fs/bpf/reqtrace"  # the default pin_dir (docs/deploy.md, "Restart")


def pin_dirs(pid):
    """The daemon's directories of pinned links: <pid>-<start time>-<source>."""
    try:
        return [os.path.join(PIN_ROOT, n) for n in os.listdir(PIN_ROOT)
                if n.split("-", 1)[0] == str(pid)]
    except OSError:
        return []


def links_pinned(daemon):
    return [x for x in daemon.status()["sources"] if x["name"] == "bpf"][0]["links_pinned"]


def wait_traced(daemon, pid, timeout):
    """Monotonic time at which pid shows as traced in status, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for t in daemon.status()["targets"]:
                if t["active"] and pid in t["pids"]:
                    return time.monotonic()
        except (OSError, RuntimeError):
            pass
        time.sleep(0.01)
    return None


def main():
    lc.require_root()
    d = tb.tmpdir()
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--set",
                         "decode_base_ms=10"])
    port = server.port
    args = ["--port", str(port)]
    # RT_RESTART_PIN=0: links not pinned, to measure the restart without
    # (docs/benchmarks.md); the pin checks are then left out
    pin = os.environ.get("RT_RESTART_PIN", "1") != "0"
    if not pin:
        conf = os.path.join(d, "nopin.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\npin_dir =\n")
        args = ["--config", conf] + args
    a = lc.Daemon(args, name="reqtraced-a")
    b = None
    out = os.path.join(d, "load.jsonl")
    loads = []
    try:
        check(wait_traced(a, server.pid, 10) is not None, "first daemon traces the testbed")
        # two connections kept open throughout (they predate the new daemon), two
        # that carry one request each
        loads = [subprocess.Popen(
            [tb.LOAD, "--url", "http://127.0.0.1:%d/v1/completions" % port, "--concurrency", "2",
             "--requests", "120", "--stream", "--max-tokens", "8", "--keepalive", ka,
             "--id-prefix", "rs%s-" % ka, "--out", out + ka],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for ka in ("0", "1")]
        # kill once the first daemon has served some of the load
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(a.spans()) < 20:
            time.sleep(0.05)
        check(len(a.spans()) >= 20, "first daemon traced the load before the kill")
        # its tracepoint links pinned, so that its death does not wait on their detach
        n_pinned = links_pinned(a)
        a_dirs = pin_dirs(a.proc.pid)
        check(not pin or n_pinned > 0 and len(a_dirs) == 1 and len(os.listdir(a_dirs[0])) == n_pinned,
              "the first daemon pinned its links: %d in status, %s"
              % (n_pinned, [(x, len(os.listdir(x))) for x in a_dirs]))
        t_kill = time.monotonic_ns()
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        t_spawn = time.monotonic_ns()
        b = lc.Daemon(args, name="reqtraced-b")
        t_up = time.monotonic_ns()
        t_traced = wait_traced(b, server.pid, RESUME_LIMIT_S)
        check(t_traced is not None, "the restarted daemon traces the running testbed again")
        t_traced_ns = int((t_traced or 0) * 1e9)
        first_new = None
        deadline = time.monotonic() + RESUME_LIMIT_S
        while time.monotonic() < deadline and first_new is None:
            new = [s for s in b.spans() if "started_before_trace" not in s["flags"]
                   and s["start_ns"] > t_traced_ns]
            if new:
                first_new = min(s["end_ns"] for s in new)
            else:
                time.sleep(0.01)
        check(first_new is not None, "the restarted daemon makes new spans")
        # the new daemon removes the killed one's pins once its own are in place
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(os.path.exists(x) for x in a_dirs):
            time.sleep(0.05)
        check(not pin or (a_dirs and not any(os.path.exists(x) for x in a_dirs)
                          and links_pinned(b) > 0 and len(pin_dirs(b.proc.pid)) == 1),
              "the new daemon removed the killed daemon's pins (%s) and pinned its own (%d)"
              % (a_dirs, links_pinned(b)))
        log("resume: kill -> old daemon reaped %.3f s, -> new daemon answering %.3f s, "
            "-> target traced %.3f s (%.3f s after the new one started), -> first whole new "
            "span ended %.3f s after the kill"
            % ((t_spawn - t_kill) / 1e9, (t_up - t_kill) / 1e9, (t_traced_ns - t_kill) / 1e9,
               (t_traced_ns - t_spawn) / 1e9,
               ((first_new or t_kill) - t_kill) / 1e9))
        for load in loads:
            _, err = load.communicate(timeout=120)
            check(load.returncode == 0, "every request of the load was answered (rc %d) %s"
                  % (load.returncode, err[-300:]))
        time.sleep(0.5)  # the last spans finish
        spans = b.spans()
        check(b.alive() and server.alive(), "the new daemon and the testbed run on")
    finally:
        for load in loads:
            if load.poll() is None:
                load.kill()
        server.stop()
        if a.alive():
            a.proc.kill()
        code = b.stop() if b else None
    check(code == 0, "the restarted daemon exits 0 on SIGTERM")
    check(b is not None and not pin_dirs(b.proc.pid),
          "a clean exit leaves no pins (%s)" % (pin_dirs(b.proc.pid) if b else None))

    truth = {r["request_id"]: r for ka in ("0", "1") for r in lc.read_jsonl(out + ka)}
    check(len(truth) == 240, "load wrote 240 results (%d)" % len(truth))
    known = [s for s in spans if s["request_id"] in truth]
    unknown = [s for s in spans if s["request_id"] not in truth]
    cut = [s for s in known if truth[s["request_id"]]["start_ns"] < t_spawn]
    flagged = [s for s in spans if CUT_FLAGS & set(s["flags"])]
    log("second daemon: %d spans, %d of known requests, %d without a known id, %d flagged, "
        "%d of requests begun before it started"
        % (len(spans), len(known), len(unknown), len(flagged), len(cut)))

    check(all(s["pid"] == server.pid for s in spans),
          "every span names the testbed's pid (%d)" % server.pid)
    bad = [(s["request_id"], s["flags"]) for s in unknown if not CUT_FLAGS & set(s["flags"])]
    check(not bad, "a span without a request id the load sent is flagged as cut (off: %s)"
          % bad[:4])
    bad = [(s["request_id"], s["flags"]) for s in cut if not CUT_FLAGS & set(s["flags"])]
    check(not bad, "spans of requests begun before the new daemon started are flagged "
          "(%d of them; off: %s)" % (len(cut), bad[:4]))

    after = {i for i, r in truth.items() if r["start_ns"] > t_traced_ns}
    got = {s["request_id"] for s in known}
    check(after and after <= got, "every request begun after the target showed traced has a "
          "span (%d of %d)" % (len(after & got), len(after)))
    whole = [s for s in known if not CUT_FLAGS & set(s["flags"])]
    check(len(whole) > 0, "unflagged spans after the restart (%d)" % len(whole))

    # only what causality orders: the server's first read returns after the client sent,
    # its last read (the request whole) before the client has the response, and the
    # write carrying the first token begins before the client sees it (a write's exit,
    # end_ns, may come after the client's last read returns)
    wrong = []
    for s in known:
        r = truth[s["request_id"]]
        ft, ttft = s["first_token_ns"], r["ttft_ns"]
        rcv = s["received_ns"] if s["received_ns"] is not None else s["start_ns"]
        if not (r["start_ns"] <= s["start_ns"] <= rcv <= r["end_ns"]) or \
                (ft is not None and ttft is not None and ft > ttft) or s["end_ns"] < s["start_ns"]:
            wrong.append((s["request_id"], "interval", r["start_ns"], s["start_ns"],
                          s["received_ns"], ft, ttft, s["end_ns"], r["end_ns"], s["flags"]))
        elif s["status"] is not None and s["status"] != r["status"]:
            wrong.append((s["request_id"], "status", s["status"], r["status"]))
    check(not wrong, "every span's instants are ordered with its request's client-side "
          "instants, with its status (off: %s)" % wrong[:4])
    wrong = [(s["request_id"], s["outcome"], s["events_out"], truth[s["request_id"]]["events"])
             for s in whole if s["outcome"] != "ok"
             or s["events_out"] != truth[s["request_id"]]["events"]
             or s["status"] != truth[s["request_id"]]["status"]]
    check(not wrong, "every unflagged span is ok with its request's status and events "
          "(off: %s)" % wrong[:4])
    check_unseen(spans, truth, known, t_kill, t_spawn, t_traced_ns)
    lc.finish()


def check_unseen(spans, truth, known, t_kill, t_spawn, t_traced_ns):
    """Spans of requests whose start the new daemon did not see (docs/spans.md)."""
    unseen = [s for s in spans if s["start_ns"] is None]
    in_flight = [i for i, r in truth.items() if r["start_ns"] < t_kill < r["end_ns"]]
    bad = [(s["request_id"], s["flags"], s["duration_ms"], s["ttft_ms"], s["arrival_ns"],
            s["received_ns"]) for s in unseen
           if "started_before_trace" not in s["flags"] or s["duration_ms"] is not None
           or s["ttft_ms"] is not None or s["arrival_ns"] is not None
           or s["received_ns"] is not None or s["intervals"]
           or any(v is not None for v in s["phases"].values())]
    check(not bad, "a span without a start is flagged started_before_trace, with null "
          "duration, TTFT, arrival, receipt and phases (off: %s)" % bad[:4])
    bad = [s["request_id"] for s in spans
           if "started_before_trace" in s["flags"] and s["start_ns"] is not None]
    check(not bad, "started_before_trace is set only on spans without a start (off: %s)"
          % bad[:4])
    # the testbed's response id is "cmpl-" + the request's x-request-id
    matched = {}
    for s in unseen:
        rid = s["response_id"] or ""
        if rid.startswith("cmpl-") and rid[5:] in truth:
            matched.setdefault(rid[5:], []).append(s)
    log("in flight at the kill: %d requests; spans without a start: %d, %d of them matched "
        "to a load request by response id (%s)"
        % (len(in_flight), len(unseen), len(matched),
           ", ".join("%s %d events%s" % (i, v[0]["events_out"],
                                         " first token seen" if v[0]["first_token_ns"] else "")
                     for i, v in sorted(matched.items()))))
    check(len(matched) >= 1, "at least one request in flight across the restart has a span "
          "from the new daemon, flagged (%d of %d in flight at the kill)"
          % (len(matched), len(in_flight)))
    whole_ids = {s["request_id"] for s in known}
    wrong = []
    for i, v in matched.items():
        r = truth[i]
        for s in v:
            if len(v) > 1 or i in whole_ids:
                wrong.append((i, "twice", len(v), i in whole_ids))
            elif not (r["start_ns"] < t_traced_ns and t_spawn < s["end_ns"]):
                # its request was sent before the new daemon traced the target, which
                # then saw its response end
                wrong.append((i, "interval", r["start_ns"], t_traced_ns, t_spawn,
                              s["end_ns"]))
            elif s["events_out"] > r["events"]:
                wrong.append((i, "events", s["events_out"], r["events"]))
            elif s["tokens_out"] is not None and s["tokens_out"] != r["tokens"]:
                wrong.append((i, "tokens", s["tokens_out"], r["tokens"]))
            elif s["status"] is not None and s["status"] != r["status"]:
                wrong.append((i, "status", s["status"], r["status"]))
            elif s["first_token_ns"] is not None and (
                    r["ttft_ns"] is None or s["first_token_ns"] > r["ttft_ns"]):
                wrong.append((i, "first token", s["first_token_ns"], r["ttft_ns"]))
            elif "incomplete" not in s["flags"] and s["outcome"] != "ok":
                wrong.append((i, "outcome", s["outcome"]))
    check(not wrong, "no span without a start is matched to a wrong request or says more "
          "than its request had (off: %s)" % wrong[:4])


if __name__ == "__main__":
    main()
