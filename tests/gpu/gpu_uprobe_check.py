#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/gpu/run.sh, section "GPU uprobes": the testbed's cuda backend ran on
a real GPU under reqtraced (no CUPTI); were its calls seen? (docs/gpu.md)

  gpu_uprobe_check.py REC.rtrace STEPS.jsonl TRUTH.jsonl SPANS.jsonl

STEPS is the backend's step log (REQTRACE_TB_CUDA_TRUTH), TRUTH the
testbed's request truth, SPANS `reqtrace spans --json`. Checks that every
step's launch, H2D copy, stream syncs and blocking D2H copy (with their
bytes and direction) are in the recording on the engine thread, and, with
markers, that each request's sync_wait_ms matches the waits the backend
measured around its steps' calls within 1 ms or 3%. Prints a short table.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import gpu_live as gl  # noqa: E402


def jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    recs, lost = gl.read_rtrace(sys.argv[1])
    steps, truth, spans = jsonl(sys.argv[2]), jsonl(sys.argv[3]), jsonl(sys.argv[4])
    spans = {s["request_id"]: s for s in spans if "request_id" in s}
    table = gl.probe_table()
    rows = []

    def row(what, got, want, ok):
        rows.append((what, str(got), str(want), "ok" if ok else "FAIL"))

    if not steps:
        row("steps run on the GPU", 0, "> 0", False)
    tid = steps[0]["tid"] if steps else 0
    mine = [r for r in recs if r["tid"] == tid]

    def named(fn, kind=None):
        return [r for r in mine if r["kind"] != gl.EV_NCCL_ENTER and
                table.get(r["api"], ("?",))[0] == fn and (kind is None or r["kind"] == kind)]

    n = len(steps)
    nccl_steps = sum(1 for s in steps if s["nccl_calls"])
    row("steps (engine thread %d)" % tid, n, "> 0", n > 0)
    row("records lost", lost, 0, lost == 0)
    row("cuLaunchKernel records", len(named("cuLaunchKernel")), n, len(named("cuLaunchKernel")) == n)
    h2d = named("cuMemcpyHtoDAsync_v2")
    row("cuMemcpyHtoDAsync_v2 records, bytes", "%d, %d" % (len(h2d), sum(r["bytes"] for r in h2d)),
        "%d, %d" % (n, sum(s["h2d_bytes"] for s in steps)),
        len(h2d) == n and sum(r["bytes"] for r in h2d) == sum(s["h2d_bytes"] for s in steps)
        and all(r["copy"] == 1 for r in h2d))
    d2h = named("cuMemcpyDtoH_v2", gl.EV_CUDA_EXIT)
    row("cuMemcpyDtoH_v2 records, bytes", "%d, %d" % (len(d2h), sum(r["bytes"] for r in d2h)),
        "%d, %d" % (n, sum(s["d2h_bytes"] for s in steps)),
        len(d2h) == n and sum(r["bytes"] for r in d2h) == sum(s["d2h_bytes"] for s in steps)
        and all(r["copy"] == 2 for r in d2h))
    syncs = named("cuStreamSynchronize", gl.EV_CUDA_EXIT)
    # the backend's fini syncs once more
    row("cuStreamSynchronize records", len(syncs), "%d (+1)" % (n + nccl_steps),
        n + nccl_steps <= len(syncs) <= n + nccl_steps + 1)
    wait = sum(r["ts"] - r["enter"] for r in syncs + d2h) / gl.MS
    measured = sum(s["sync_ns"] for s in steps) / gl.MS
    row("sync wait recorded vs measured (ms)", "%.1f" % wait, "%.1f" % measured,
        abs(wait - measured) <= max(1.0, 0.03 * measured))
    if nccl_steps:
        nccl = [r for r in mine if r["kind"] == gl.EV_NCCL_ENTER]
        want = sum(s["nccl_calls"] for s in steps)
        row("NCCL_ENTER records (once per call)", len(nccl), want, len(nccl) == want)

    per = gl.steps_of(truth, steps)
    with_gpu = [rid for rid in per if (spans.get(rid) or {}).get("gpu")]
    row("spans with a gpu object", len(with_gpu), len(per), len(per) > 0 and len(with_gpu) == len(per))
    off = []
    for rid in with_gpu:
        want = sum(s["sync_ns"] for s in per[rid])
        got = spans[rid]["gpu"]["sync_wait_ms"]
        if not gl.close(got, want):
            off.append(rid)
    row("sync_wait_ms = measured waits of its steps", len(with_gpu) - len(off), len(with_gpu),
        not off)

    w = max(len(r[0]) for r in rows)
    print("%-*s  %14s  %14s  %s" % (w, "GPU uprobes (issue 6)", "seen", "expected", ""))
    for r in rows:
        print("%-*s  %14s  %14s  %s" % (w, r[0], r[1], r[2], r[3]))
    sys.exit(0 if all(r[3] == "ok" for r in rows) else 1)


if __name__ == "__main__":
    main()
