#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Compares `reqtrace replay F.rtrace --json` with F.truth.jsonl for fixtures.

Timestamps (arrival_ns too), counts, outcome and flags must be equal;
backlog_ms to the printed precision (arrival and start are both exact
instants of the simulator's clock); other phases, TTFT and ITL within
0.1 ms (the issue's tolerance); CPU per thread within 2 us (replay
prints 3 decimals). Prints every difference; exit 1 when there is one.

usage: compare_replay.py PATH/TO/reqtrace [FIXTURE_DIR | F.rtrace ...]
"""
import glob
import json
import os
import subprocess
import sys

TOL_MS = 0.1
EXACT_MS = 0.0005  # replay prints 3 decimals
CPU_TOL_MS = 0.002


def near(a, b, tol):
    return (a is None) == (b is None) and (a is None or abs(a - b) <= tol)


def compare(reqtrace, rtrace):
    truth = [json.loads(line) for line in open(rtrace[:-len(".rtrace")] + ".truth.jsonl")]
    r = subprocess.run([reqtrace, "replay", rtrace, "--json"], capture_output=True, text=True)
    if r.returncode:
        return [f"replay exited {r.returncode}: {r.stderr.strip()}"]
    got = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        got[d["request_id"]] = d
    out = []
    for t in truth:
        rid, g = t["request_id"], got.get(t["request_id"])
        if not g:
            out.append(f"{rid}: missing from replay (it has {sorted(got)})")
            continue
        for k in ("arrival_ns", "start_ns", "received_ns", "first_token_ns", "end_ns", "events_out",
                  "tokens_out", "status", "outcome", "conn", "method", "path"):
            if g.get(k) != t.get(k):
                out.append(f"{rid}: {k}: replay {g.get(k)}, truth {t.get(k)}")
        if sorted(g.get("flags", [])) != sorted(t["flags"]):
            out.append(f"{rid}: flags: replay {g.get('flags')}, truth {t['flags']}")
        for k in ("duration_ms", "ttft_ms"):
            if not near(g.get(k), t[k], TOL_MS):
                out.append(f"{rid}: {k}: replay {g.get(k)}, truth {t[k]}")
        gi, ti = g.get("itl_ms"), t["itl_ms"]
        if (gi is None) != (ti is None) or \
           (ti and any(not near(gi[k], ti[k], TOL_MS) for k in ("p50", "p99", "max"))):
            out.append(f"{rid}: itl_ms: replay {gi}, truth {ti}")
        if list(g["phases"])[:1] != ["backlog_ms"]:
            out.append(f"{rid}: phases: backlog_ms is not the first key ({list(g['phases'])})")
        if g.get("phase_source", {}).get("backlog") != \
                ("probe" if t["phases"]["backlog_ms"] is not None else None):
            out.append(f"{rid}: phase_source.backlog: {g.get('phase_source')}")
        for k, v in t["phases"].items():
            if not near(g["phases"].get(k), v, EXACT_MS if k == "backlog_ms" else TOL_MS):
                out.append(f"{rid}: {k}: replay {g['phases'].get(k)}, truth {v}")
        gt = {x["tid"]: x for x in g["cpu"]["threads"]}
        tt = {x["tid"]: x for x in t["cpu"]["threads"]}
        if set(gt) != set(tt):
            out.append(f"{rid}: cpu threads: replay {sorted(gt)}, truth {sorted(tt)}")
        for tid in sorted(set(gt) & set(tt)):
            for k in ("on_cpu_ms", "runq_ms"):
                if not near(gt[tid][k], tt[tid][k], CPU_TOL_MS):
                    out.append(f"{rid}: cpu {tid} {k}: replay {gt[tid][k]}, truth {tt[tid][k]}")
            if gt[tid]["shared"] != tt[tid]["shared"]:
                out.append(f"{rid}: cpu {tid} shared: replay {gt[tid]['shared']}, "
                           f"truth {tt[tid]['shared']}")
        if not near(g["cpu"]["off_cpu_ms"], t["cpu"]["off_cpu_ms"], CPU_TOL_MS):
            out.append(f"{rid}: off_cpu_ms: replay {g['cpu']['off_cpu_ms']}, "
                       f"truth {t['cpu']['off_cpu_ms']}")
        if g.get("server_reported") != t["server_reported"]:
            out.append(f"{rid}: server_reported: replay {g.get('server_reported')}, "
                       f"truth {t['server_reported']}")
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    args = sys.argv[2:] or [os.path.join(os.path.dirname(__file__), "..", "fixtures")]
    files = []
    for a in args:
        files += sorted(glob.glob(os.path.join(a, "*.rtrace"))) if os.path.isdir(a) else [a]
    bad = 0
    for f in files:
        diffs = compare(sys.argv[1], f)
        print(f"{os.path.basename(f)}: {'ok' if not diffs else f'{len(diffs)} differences'}")
        for d in diffs:
            print(f"    {d}")
        bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
