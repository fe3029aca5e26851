#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The committed recording of the vLLM-style two-process server
(tests/fixtures/vllm/vllm-zero.rtrace, written by vllm_zero_code.py
--fixture) replayed without the server: every request the client sent has
exactly one span, with its X-Request-Id, the server's response id, a 200,
TTFT/total never longer than what the client measured (+0.5 ms; how close
is printed: the client shares the cores), its first-token and end
instants inside the server's own brackets of those writes; no span comes from
the ZeroMQ hop."""

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
# as in vllm_zero_code.py: a client thread woken late lengthens only its own
# numbers, so the span is never later (the rest is printed)
late = [o for o in off if o[1] > o[2] + 0.5 or o[3] > o[4] + 0.5]
check(not late, "no span TTFT or total longer than the client's + 0.5 ms (off: %s)" % late)
print("info: %d of %d within 2 ms or 2%% of the client on TTFT and total (off: %s)"
      % (len(reqs) - len(off), len(reqs), off))
# the server's own brackets around the writes the span's instants name
brackets = {}
with open(os.path.join(FIX, "vllm-zero.server-truth.jsonl")) as f:
    for line in f:
        d = json.loads(line)
        if d["ev"] in ("sse_write", "end"):
            brackets.setdefault((d["rid"], d["ev"]), []).append((d["start"], d["ns"]))
bad = []
for q in reqs:
    s = spans.get(q["id"], [None])[0]
    if s is None:
        continue
    f0, f1 = brackets[(q["engine_request_id"], "sse_write")][0]
    e0, e1 = brackets[(q["engine_request_id"], "end")][0]
    if not (f0 <= s["first_token_ns"] <= f1 and e0 <= s["end_ns"] <= e1):
        bad.append(q["id"])
check(not bad, "first_token_ns and end_ns inside the server's own brackets of those writes "
      "(off: %s)" % bad)
print("FAILED: %d" % len(fails) if fails else "PASS")
sys.exit(1 if fails else 0)
