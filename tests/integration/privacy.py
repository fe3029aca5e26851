#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Privacy on live capture and on recordings (docs/privacy.md).

A testbed is traced live with --record while clients send an Authorization
header, a cookie, an API key and prompts carrying a secret word. None of
them, and none of the completion's words, may appear in:

  - the recording's bytes (reqtraced --record, and `reqtrace record`),
  - `reqtrace spans --json`, `reqtrace replay FILE --json`, `reqtrace show ID`,
    `reqtrace status`, the daemon's log;

the recordings are mode 0600, and the redacted recording still replays into
the spans the daemon served live. Then the same load with --capture-bodies:
the secrets are in that recording, so the checks above can see them.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check

TAG = uuid.uuid4().hex[:10]
TOKEN = "sk-SECRET%sTOKEN" % TAG
COOKIE = "COOKIE%sVALUE" % TAG
APIKEY = "APIKEY%sVALUE" % TAG
WORD = "zebrafin%sword" % TAG  # the prompt's secret word
SECRETS = [TOKEN, COOKIE, APIKEY, WORD]
# reqtrace-testbed writes these words (src/testbed/conn.c) and never the prompt
COMPLETION_WORDS = ["quick", "brown", "jumps", "lazy"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def load(port, prefix, stream=True, requests=6):
    args = ["--concurrency", 2, "--requests", requests, "--max-tokens", 12,
            "--id-prefix", prefix,
            "--header", "Authorization: Bearer " + TOKEN,
            "--header", "Cookie: session=%s; theme=dark" % COOKIE,
            "--header", "x-api-key: " + APIKEY,
            "--prompt-text", "Tell me everything about the %s, in detail." % WORD]
    if stream:
        args.append("--stream")
    got, r = lc.run_load(port, *args)
    check(r.returncode == 0 and len(got) == requests,
          "load %s: %d requests answered (%s)" % (prefix, len(got), r.stderr.strip()[-200:]))
    return {x["request_id"] for x in got}


def cli(daemon, *args):
    r = subprocess.run([lc.REQTRACE, "--socket", daemon.sock] + list(args),
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def leaks(text, what):
    """The secrets (and completion words) found in text."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    found = [s for s in SECRETS if s in text]
    if what == "recording":
        found += [w for w in COMPLETION_WORDS if w in text]
    return found


def traced(daemon, pid):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if any(t["active"] and pid in t["pids"] for t in daemon.status()["targets"]):
            return True
        time.sleep(0.05)
    return False


def redacted_run(d, port, server):
    rec = os.path.join(d, "live.rtrace")
    rec2 = os.path.join(d, "cli.rtrace")
    daemon = lc.Daemon(["--port", str(port), "--record", rec])
    outputs = {}
    try:
        check(traced(daemon, server.pid), "testbed traced")
        ids = load(port, "priv-s-") | load(port, "priv-j-", stream=False)
        spans = {s["request_id"]: s for s in daemon.wait_spans(0, ids=ids)}
        check(ids <= set(spans), "a span for each request (%d of %d)"
              % (len(ids & set(spans)), len(ids)))

        live = {i: spans[i] for i in ids if i in spans}

        for name, args in (("spans --json", ["spans", "--json"]), ("status", ["status"]),
                           ("status --json", ["status", "--json"]),
                           ("show", ["show", sorted(ids)[0]]),
                           ("show --json", ["show", sorted(ids)[-1], "--json"])):
            rc, out = cli(daemon, *args)
            check(rc == 0 and out.strip(), "reqtrace %s answers" % name)
            outputs[name] = out
        outputs["control spans"] = json.dumps(list(spans.values()))
    finally:
        code = daemon.stop()
    check(code == 0, "reqtraced exits 0 on SIGTERM")
    outputs["daemon log"] = open(daemon.err_path).read()
    check("redacted" in outputs["daemon log"], "the daemon says the recording was redacted")

    # a recording made over the control socket goes through the same redactor
    daemon = lc.Daemon(["--port", str(port)])
    try:
        check(traced(daemon, server.pid), "testbed traced (no --record)")
        holder = {}

        def record():
            holder["r"] = cli(daemon, "record", "-o", rec2, "--duration", "3s")
        th = threading.Thread(target=record)
        th.start()
        time.sleep(0.5)
        load(port, "priv-r-", requests=4)
        th.join(30)
        rc, out = holder.get("r", (-1, "did not finish"))
        check(rc == 0, "reqtrace record exits 0: " + out.strip()[-200:])
    finally:
        daemon.stop()
    outputs["daemon log, reqtrace record"] = open(daemon.err_path).read()

    for path in (rec, rec2):
        mode = os.stat(path).st_mode & 0o777
        check(mode == 0o600, "%s is mode 0600 (%o)" % (os.path.basename(path), mode))
        with open(path, "rb") as f:
            data = f.read()
        check(b"POST /v1/completions HTTP/1.1" in data,
              "%s holds the request lines (framing kept)" % os.path.basename(path))
        found = leaks(data, "recording")
        check(not found, "no secret or completion word in %s (found %s)"
              % (os.path.basename(path), found))
        r = subprocess.run([lc.REQTRACE, "replay", path, "--json"], capture_output=True,
                           text=True)
        check(r.returncode == 0, "replay of %s exits 0" % os.path.basename(path))
        outputs["replay " + os.path.basename(path)] = r.stdout + r.stderr
    r = subprocess.run([lc.REQTRACE, "show", sorted(ids)[0], "--file", rec],
                       capture_output=True, text=True)
    outputs["show --file"] = r.stdout + r.stderr

    for name, text in outputs.items():
        found = leaks(text, name)
        check(not found, "no secret in %s (found %s)" % (name, found))

    # the redacted recording replays into the live spans
    replayed = {}
    for line in outputs["replay live.rtrace"].splitlines():
        if line.startswith("{"):
            s = json.loads(line)
            replayed[s["request_id"]] = s
    diffs = []
    for rid, s in live.items():
        o = replayed.get(rid)
        if o is None:
            diffs.append((rid, "missing"))
            continue
        for k in ("start_ns", "received_ns", "first_token_ns", "end_ns", "events_out",
                  "tokens_out", "server_reported", "outcome", "phases", "status", "flags",
                  "method", "path", "trace_id"):
            if s.get(k) != o.get(k):
                diffs.append((rid, k, s.get(k), o.get(k)))
    check(live and not diffs, "replay of the redacted recording equals the %d live spans "
          "(diffs: %s)" % (len(live), diffs[:3]))
    streamed = [s for s in live.values() if s["request_id"].startswith("priv-s-")]
    check(streamed and all(s["events_out"] > 0 and s["tokens_out"] for s in streamed),
          "streamed spans have events and token counts")


def capture_run(d, port, server):
    rec = os.path.join(d, "capture.rtrace")
    daemon = lc.Daemon(["--port", str(port), "--record", rec, "--capture-bodies"])
    try:
        check(traced(daemon, server.pid), "testbed traced (--capture-bodies)")
        load(port, "cap-")
        time.sleep(0.5)
    finally:
        daemon.stop()
    check((os.stat(rec).st_mode & 0o777) == 0o600, "a --capture-bodies recording is mode 0600")
    with open(rec, "rb") as f:
        data = f.read().decode("latin-1")
    missing = [s for s in SECRETS + COMPLETION_WORDS if s not in data]
    check(not missing, "with --capture-bodies the secrets, the prompt and the completion are in "
          "the recording (missing: %s)" % missing)


def main():
    lc.require_root()
    d = tb.tmpdir()
    port = free_port()
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", str(port),
                         "--set", "decode_base_ms=5"])
    try:
        redacted_run(d, port, server)
        capture_run(d, port, server)
    finally:
        server.stop()
    lc.finish()


if __name__ == "__main__":
    main()
