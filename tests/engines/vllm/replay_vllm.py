#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The committed recording of the vLLM-style two-process server
(tests/fixtures/vllm/vllm-zero.rtrace, written by vllm_zero_code.py
--fixture) replayed without the server: every request the client sent has
exactly one span, with its X-Request-Id, the server's response id, a 200,
TTFT/total never longer than what the client measured (+0.5 ms; how close
is printed: the client shares the cores), its first-token and end
instants inside the server's own brackets of those writes; no span comes from
the ZeroMQ hop. From the recording's ZeroMQ message records (docs/spans.md,
"vLLM"): every span joined to its engine request by its ids, with
tokenize, queue, prefill and decode from pack and the API server's stream
cost, each within 2 ms or 3% of the server's truth, and its outputs counted
exactly."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_zero_code import off_truth, pack_truth  # noqa: E402

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
# the engine's own messages: join, pack phases, stream cost against the truth
with open(os.path.join(FIX, "vllm-zero.server-truth.jsonl")) as f:
    truth = pack_truth([json.loads(line) for line in f if line.strip()])
joined, off = [], []
for q in reqs:
    s, t = spans.get(q["id"], [None])[0], truth.get(q["engine_request_id"])
    if s is None or t is None:
        off.append((q["id"], "no span or truth"))
        continue
    eng = s.get("engine") or {}
    joined.append(eng.get("id") == q["engine_request_id"] and
                  eng.get("join") in ("response_id", "x_request_id")
                  and eng.get("outputs") == t["outputs"] and eng.get("finish_reason") == "length")
    got = {k: s["phases"].get(k + "_ms") for k in ("tokenize", "queue", "prefill", "decode")}
    got["stream"] = eng.get("stream_ms")
    for k, v in got.items():
        if k != "stream" and s["phase_source"].get(k) != "pack":
            off.append((q["id"], k, "source %s" % s["phase_source"].get(k)))
        # within 2 ms or 3% of a value the truth's brackets allow (a truth
        # without brackets: its point values, the stream's SSE writes bracketed)
        elif v is None or t[k] is None or not off_truth(v, t["iv"][k])[1]:
            off.append((q["id"], k, v, t[k] and round(t[k], 3)))
    print("info: %s engine %s outputs %s; tokenize/queue/prefill/decode/stream ms %s, truth %s"
          % (q["id"], eng.get("id"), eng.get("outputs"),
             [got[k] for k in ("tokenize", "queue", "prefill", "decode", "stream")],
             [round(t[k], 3) for k in ("tokenize", "queue", "prefill", "decode", "stream")]))
check(len(joined) == len(reqs) and all(joined),
      "every span joined to its engine request (response id, else X-Request-Id), "
      "outputs counted exactly")
check(not off, "pack phases and stream cost within 2 ms or 3%% of the server's truth (off: %s)"
      % off[:6])
print("FAILED: %d" % len(fails) if fails else "PASS")
sys.exit(1 if fails else 0)
