#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtrace replay as an operator meets it: good files print the span
contract's fields, damaged files end with one line naming the byte offset
and exit 2 (run under ASan+UBSan in the sanitizer tree), --version/--help."""

import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("RT_BINARY_DIR", "build")
SRC = os.environ.get("RT_SOURCE_DIR", ".")
REQTRACE = os.path.join(BIN, "reqtrace")
FIX = os.path.join(SRC, "tests", "fixtures", "basic-zero.rtrace")
FIELDS = ["request_id", "group", "pid", "comm", "conn", "method", "path", "status", "start_ns",
          "received_ns", "first_token_ns", "end_ns", "duration_ms", "ttft_ms", "events_out",
          "tokens_out", "itl_ms", "phases", "phase_source", "cpu", "gpu", "server_reported",
          "outcome", "flags", "revision"]
fails = []


def check(cond, msg):
    print(("ok:   " if cond else "FAIL: ") + msg)
    if not cond:
        fails.append(msg)


def run(*args):
    return subprocess.run([REQTRACE] + list(args), capture_output=True, text=True, timeout=60)


r = run("replay", FIX, "--json")
spans = [json.loads(l) for l in r.stdout.splitlines()]
check(r.returncode == 0 and len(spans) == 5, "replay --json of a fixture: 5 spans, exit 0")
check(all(all(k in s for k in FIELDS) for s in spans), "every span has the contract's fields")
check(all(isinstance(s["start_ns"], int) and isinstance(s["end_ns"], int) for s in spans),
      "nanosecond instants are JSON integers")
r = run("replay", FIX, "--request", "basic-3", "--json")
check(r.returncode == 0 and [json.loads(l)["request_id"] for l in r.stdout.splitlines()]
      == ["basic-3"], "--request ID selects one span")
r = run("replay", FIX)
check(r.returncode == 0 and "REQUEST" in r.stdout.splitlines()[0], "table output has a header")

data = open(FIX, "rb").read()
d = tempfile.mkdtemp(prefix="rt-replay-")
for name, blob in (("truncated", data[:len(data) // 2 + 3]),
                   ("header-only", data[:100]),
                   ("bad-size", data[:178] + b"\x03\x00" + data[180:]),
                   ("flipped-kind", data[:176] + b"\x4d" + data[177:]),
                   ("empty", b"")):
    p = os.path.join(d, name + ".rtrace")
    open(p, "wb").write(blob)
    r = run("replay", p, "--json")
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 2 and len(lines) == 1 and "offset" in lines[0],
          "%s file: exit 2 and one line naming the offset (rc %d, %r)"
          % (name, r.returncode, lines[-1:]))
r = run("replay", os.path.join(d, "missing.rtrace"))
check(r.returncode != 0 and "No such file" in r.stderr, "missing file: a clear error")
r = run("--version")
check(r.returncode == 0 and r.stdout.startswith("reqtrace "), "--version")
r = run("--help")
check(r.returncode == 0 and "replay" in r.stdout and "status" in r.stdout, "--help lists commands")
r = run("frobnicate")
check(r.returncode == 2 and "unknown command" in r.stderr, "unknown command: exit 2")
sys.exit(1 if fails else 0)
