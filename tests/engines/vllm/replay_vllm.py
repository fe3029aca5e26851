#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The committed recording of the vLLM-style two-process server
(tests/fixtures/vllm/vllm-zero.rtrace, written by vllm_zero_code.py
--fixture) replayed without the server: every request the client sent has
exactly one span, with its X-Request-Id, the server's response id, a 200,
and TTFT/total within 2 ms or 2% of what the client measured; no span comes
from the ZeroMQ hop."""

import json
import os
import subprocess
import sys

SRC = os.environ.get("RT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.environ.get("RT_BINARY_DIR", os.path.join(SRC, "build"))
FIX = os.path.join(SRC, "tests", "fixtures", "vllm")
fails = []


def check(cond, msg):
    print(("ok:   " if cond else "FAIL: ") + msg)
    if not cond:
        fails.append(msg)


def close(a, b):
    return a is not None and abs(a - b) <= max(2.0, 0.02 * abs(b))


with open(os.path.join(FIX, "vllm-zero.requests.json")) as f:
    reqs = json.load(f)
r = subprocess.run([os.path.join(BIN, "reqtrace"), "replay", os.path.join(FIX, "vllm-zero.rtrace"),
                    "--json"], capture_output=True, text=True, timeout=120)
check(r.returncode == 0, "replay exits 0 (%s)" % r.stderr.strip()[-300:])
last = {}
for line in r.stdout.splitlines():
    s = json.loads(line)
    key = (s["request_id"], s["start_ns"])
    if key not in last or s["revision"] >= last[key]["revision"]:
        last[key] = s
spans = {}
for (rid, _), s in last.items():
    spans.setdefault(rid, []).append(s)
ids = [q["id"] for q in reqs]
check(len(reqs) >= 6, "the fixture lists %d requests" % len(reqs))
check(all(len(spans.get(i, [])) == 1 for i in ids), "exactly one span per request")
check(set(spans) == set(ids), "no other span (none from the ZeroMQ hop): %s"
      % sorted(set(spans) - set(ids)))
check(all(spans[i][0]["status"] == 200 and spans[i][0]["outcome"] == "ok" for i in ids
          if i in spans), "every span is a 200, outcome ok")
check(all(spans[q["id"]][0].get("response_id") == q["response_id"] for q in reqs
          if q["id"] in spans), "response ids: cmpl-<id> / chatcmpl-<id>")
off = [(q["id"], spans[q["id"]][0]["ttft_ms"], q["client_ttft_ms"],
        spans[q["id"]][0]["duration_ms"], q["client_total_ms"]) for q in reqs
       if q["id"] in spans and not (close(spans[q["id"]][0]["ttft_ms"], q["client_ttft_ms"]) and
                                    close(spans[q["id"]][0]["duration_ms"], q["client_total_ms"]))]
check(not off, "TTFT and total within 2 ms or 2%% of the client's (off: %s)" % off[:4])
print("FAILED: %d" % len(fails) if fails else "PASS")
sys.exit(1 if fails else 0)
