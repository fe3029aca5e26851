#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Fault: the disk fills up while the daemon records.

A `record` request writes to a 512 KiB tmpfs while the traced testbed is
under load, so the write fails with ENOSPC part-way through a record.

  - the `record` client gets an error line naming the cause, the recording
    stops (status: recording null, drops.recording_errors counted), and the
    daemon goes on tracing: every request of the load has its span;
  - `reqtrace replay` of the cut file says where it is truncated and still
    replays every whole record before the cut: spans come out, each equal
    in its boundaries, events, status and outcome to the span served live.
    A response the recording began inside (the load races the record
    request) replays as a span flagged started_before_trace, with no start:
    it must be the live span of the same response id, ending when it did.
"""

import atexit
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
FS_KB = 512


def main():
    lc.require_root()
    mnt = os.path.join(tb.tmpdir(), "small")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk,mode=0700" % FS_KB, "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode:
        lc.cannot_run("cannot mount a tmpfs: " + r.stderr.strip())
    atexit.register(subprocess.run, ["umount", "-l", mnt], capture_output=True)
    rec = os.path.join(mnt, "cut.rtrace")
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--set",
                         "decode_base_ms=5"])
    daemon = lc.Daemon(["--pid", str(server.pid)])
    answer = {}

    def record():
        try:
            answer["end"] = daemon.call({"cmd": "record", "path": rec, "duration": "120s"},
                                        timeout=120)
        except (RuntimeError, OSError) as e:
            answer["error"] = str(e)

    try:
        rt = threading.Thread(target=record)
        rt.start()
        out, lr = lc.run_load(server.port, "--concurrency", 4, "--requests", 200, "--stream",
                              "--max-tokens", 16, "--id-prefix", "df-")
        rt.join(60)
        check(lr.returncode == 0, "the load is served")
        log("record answer: %s" % answer)
        check("error" in answer and "No space left on device" in answer["error"],
              "the record client gets an error naming ENOSPC")
        st = daemon.status()
        check(st["recording"] is None, "the recording stopped (status: recording null)")
        check(st["drops"]["recording_errors"] >= 1,
              "drops.recording_errors counts it (%d)" % st["drops"]["recording_errors"])
        ids = {x["request_id"] for x in out}
        live = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ids)}
        check(len(ids) == 200 and ids <= set(live),
              "the daemon traced on: every request has its span (%d of %d)"
              % (len(ids & set(live)), len(ids)))
        check(daemon.alive(), "the daemon runs on")
    finally:
        server.stop()
        code = daemon.stop()
    check(code == 0, "reqtraced exits 0 on SIGTERM")

    size = os.path.getsize(rec)
    r = subprocess.run([lc.REQTRACE, "replay", rec, "--json"], capture_output=True, text=True)
    log("recording cut at %d bytes; replay rc %d: %s" % (size, r.returncode, r.stderr.strip()))
    check("truncated" in r.stderr, "replay says the recording is truncated")
    replayed = {}
    for line in r.stdout.splitlines():
        s = json.loads(line)
        replayed[s["request_id"]] = s
    check(len(replayed) > 0, "the records before the cut replay into spans (%d)" % len(replayed))
    diffs = []
    by_response = {s.get("response_id"): s for s in live.values() if s.get("response_id")}
    cut_starts = 0
    for rid, o in replayed.items():
        s = live.get(rid)
        keys = ("start_ns", "received_ns", "first_token_ns", "end_ns", "events_out",
                "outcome", "status", "pid")
        if s is None and "started_before_trace" in o["flags"]:
            # the recording began inside this response (the load raced the record
            # command): the replay's span has what the recording holds, no start, and
            # is the live span of the same response on what it has
            cut_starts += 1
            s = by_response.get(o.get("response_id"))
            if s is None or o["start_ns"] is not None:
                diffs.append((rid, "cut, not live", o.get("response_id")))
                continue
            keys = ("end_ns", "pid")
        if s is None:
            diffs.append((rid, "not live"))
            continue
        for k in keys:
            if s[k] != o[k]:
                diffs.append((rid, k, s[k], o[k]))
    check(not diffs, "each replayed span equals the live one (diffs: %s; %d began before the "
          "recording)" % (diffs[:3], cut_starts))
    subprocess.run(["umount", mnt])
    lc.finish()


if __name__ == "__main__":
    main()
