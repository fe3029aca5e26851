#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Live capture through a server's life: aborts, a killed server, a restart,
and a recording that replays into the same spans.

  - a client that hangs up mid-stream gives outcome "aborted";
  - killing the testbed mid-request gives its in-flight spans
    "server_exit", the daemon keeps running, and a testbed restarted on the
    same port is traced again within 1 s;
  - `reqtraced --record` then `reqtrace replay` gives the spans the daemon
    served live.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_traced(daemon, pid, timeout):
    """Seconds until pid shows as traced in status, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        for t in daemon.status()["targets"]:
            if t["active"] and pid in t["pids"]:
                return time.monotonic() - t0
        time.sleep(0.02)
    return None


def main():
    lc.require_root()
    d = tb.tmpdir()
    rec = os.path.join(d, "live.rtrace")
    port = free_port()
    scen = ["--scenario", tb.scenario("healthy"), "--port", str(port), "--set",
            "decode_base_ms=20"]
    server = tb.Testbed(scen)
    daemon = lc.Daemon(["--port", str(port), "--record", rec])
    try:
        check(wait_traced(daemon, server.pid, 2) is not None, "testbed found by --port")

        # 1. aborts: every client hangs up after 3 content events
        ab, r = lc.run_load(port, "--concurrency", 4, "--requests", 8, "--stream",
                            "--max-tokens", 32, "--abort-after-events", 3,
                            "--id-prefix", "ab-")
        ab_ids = {x["request_id"] for x in ab}
        spans = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ab_ids)}
        check(ab_ids <= set(spans), "a span for each aborted request (%d)" % len(ab_ids))
        bad = [(i, spans[i]["outcome"], spans[i]["events_out"]) for i in ab_ids & set(spans)
               if spans[i]["outcome"] != "aborted" or spans[i]["events_out"] < 3]
        check(not bad, "client abort mid-stream -> outcome aborted (off: %s)" % bad[:4])

        # normal traffic for the recording comparison
        ok, r = lc.run_load(port, "--concurrency", 4, "--requests", 24, "--stream",
                            "--id-prefix", "ok-")
        check(r.returncode == 0, "normal load ok")

        # 2. kill the testbed with requests in flight (long decodes)
        long_run = subprocess.Popen(
            [tb.LOAD, "--url", "http://127.0.0.1:%d/v1/completions" % port, "--concurrency", "3",
             "--requests", "3", "--stream", "--max-tokens", "200", "--id-prefix", "kill-",
             "--out", os.path.join(d, "kill.jsonl")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # the kill- requests themselves: on a busy machine the daemon may still be
        # finishing the ok- requests (in flight in its view), and a starved load
        # generator may not have connected yet
        def killable():
            return {x["request_id"] for x in daemon.call({"cmd": "inflight"})[0]
                    if x["request_id"].startswith("kill-")}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(killable()) < 3:
            time.sleep(0.05)
        inflight = killable()
        check(len(inflight) >= 3, "3 kill- requests in flight before the kill (%s)"
              % sorted(inflight))
        old_pid = server.pid
        os.kill(old_pid, signal.SIGKILL)
        server.proc.wait()
        long_run.wait(20)
        time.sleep(0.5)
        spans = {s["request_id"]: s for s in daemon.spans()}
        killed = [spans.get(i) for i in inflight]
        check(all(s and s["outcome"] == "server_exit" for s in killed),
              "in-flight spans of the killed testbed end server_exit: %s"
              % [(s or {}).get("outcome") for s in killed])
        check(daemon.alive(), "the daemon keeps running after the target died")

        # 3. restart on the same port: traced again within 1 s
        server = tb.Testbed(scen)
        took = wait_traced(daemon, server.pid, 3)
        check(took is not None and took <= 1.0,
              "restarted testbed (pid %d) traced again in %.3f s <= 1 s" % (server.pid,
                                                                         took or -1))
        again, r = lc.run_load(port, "--concurrency", 2, "--requests", 6, "--stream",
                               "--id-prefix", "again-")
        ids = {x["request_id"] for x in again}
        got = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ids)}
        check(ids <= set(got) and all(got[i]["outcome"] == "ok" and got[i]["pid"] == server.pid
                                      for i in ids),
              "requests to the restarted testbed are traced (%d of %d)"
              % (len(ids & set(got)), len(ids)))
        live = {s["request_id"]: s for s in daemon.spans()}
    finally:
        server.stop()
        code = daemon.stop()
    check(code == 0, "reqtraced exits 0 on SIGTERM")

    # 4. the recording replays into the same spans
    st = os.stat(rec)
    check((st.st_mode & 0o777) == 0o600, "recording is mode 0600 (%o)" % (st.st_mode & 0o777))
    r = subprocess.run([lc.REQTRACE, "replay", rec, "--json"], capture_output=True, text=True)
    check(r.returncode == 0, "replay of the live recording exits 0: " + r.stderr.strip()[-300:])
    replayed = {}
    for line in r.stdout.splitlines():
        s = json.loads(line)
        replayed[s["request_id"]] = s  # the last revision wins, as in the store
    diffs = []
    for rid, s in live.items():
        o = replayed.get(rid)
        if o is None:
            diffs.append((rid, "missing"))
            continue
        for k in ("start_ns", "received_ns", "first_token_ns", "end_ns", "events_out",
                  "outcome", "phases", "cpu", "status", "flags"):
            if s[k] != o[k]:
                diffs.append((rid, k, s[k], o[k]))
    check(not diffs and len(live) > 0,
          "replay of the recording equals the %d live spans (diffs: %s)" % (len(live), diffs[:3]))
    lc.finish()


if __name__ == "__main__":
    main()
