#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Compares `reqtrace replay F.rtrace --json` with F.truth.jsonl for fixtures.

Timestamps (arrival_ns too), counts, outcome and flags must be equal;
backlog_ms to the printed precision (arrival and start are both exact
instants of the simulator's clock); other phases, TTFT and ITL within
0.1 ms (the issue's tolerance); CPU per thread within 2 us (replay
prints 3 decimals). Prints every difference; exit 1 when there is one.

The timeline (docs/spans.md, "Timeline") is checked too: its invariants on
every span, probe intervals equal to the truth's instants, marker
intervals equal to the recorded marker pairs.

usage: compare_replay.py PATH/TO/reqtrace [FIXTURE_DIR | F.rtrace ...]
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_truth  # noqa: E402  (the records' reader and the phase order)

TOL_MS = 0.1
EXACT_MS = 0.0005  # replay prints 3 decimals
CPU_TOL_MS = 0.002


def near(a, b, tol):
    return (a is None) == (b is None) and (a is None or abs(a - b) <= tol)


def length(ivs):
    return sum(b - a for a, b in ivs)


def overlap(a, b):
    return sum(max(0, min(y, d) - max(x, c)) for x, y in a for c, d in b)


CUT = ("prefill", "pre_first_token", "decode")  # comm wait is taken out of these


def timeline(g):
    """The invariants docs/spans.md states for intervals and slices, on one replayed span."""
    out = []
    origin = g["arrival_ns"] or g["start_ns"]
    end = g["end_ns"]
    ivs, src = g["intervals"], g["phase_source"]
    if [(i["start_ns"], i["end_ns"]) for i in ivs] != sorted((i["start_ns"], i["end_ns"])
                                                            for i in ivs):
        out.append("intervals not in start order")
    by = {}
    for i in ivs:
        a, b, p = i["start_ns"], i["end_ns"], i["phase"]
        if not origin <= a < b <= end:
            out.append(f"interval {i} outside [{origin}, {end}] or empty")
        if p == "other" or src.get(p) != i["source"] or g["phases"].get(p + "_ms") is None:
            out.append(f"interval {i}: phase_source {src.get(p)}")
        by.setdefault(p, []).append((a, b))
    for p, l in by.items():
        if any(l[k][1] > l[k + 1][0] for k in range(len(l) - 1)):
            out.append(f"{p}: intervals overlap")
    if g["intervals_dropped"] == 0:
        comm = by.get("comm_wait", [])
        for k, v in g["phases"].items():
            p = k[:-3]
            if v is None or p == "other":
                continue
            mine = by.get(p, [])
            want = length(mine)
            if p in CUT:  # containment: the comm wait inside it is not its time
                want = max(0, want - overlap(comm, mine))
            if abs(want / 1e6 - v) > EXACT_MS + 1e-6:  # v is rounded to 3 decimals
                out.append(f"{p}: {v} ms, intervals give {want / 1e6} ms")
    sl = g["cpu"]["slices"]
    if [x["start_ns"] for x in sl] != sorted(x["start_ns"] for x in sl):
        out.append("slices not in start order")
    threads = {t["tid"]: t for t in g["cpu"]["threads"]}
    for tid in {x["tid"] for x in sl}:
        mine = [(x["start_ns"], x["end_ns"], x["shared"]) for x in sl if x["tid"] == tid]
        if any(not origin <= a < b <= end for a, b, _ in mine):
            out.append(f"slices of {tid} outside [{origin}, {end}] or empty")
        if any(mine[k][1] > mine[k + 1][0] for k in range(len(mine) - 1)):
            out.append(f"slices of {tid} overlap")
        t = threads.get(tid)
        if not t:
            if len(threads) < 16:  # the list is bounded, the rest only summed
                out.append(f"slice of {tid}, not among the threads")
            continue
        excl = sum(b - a for a, b, sh in mine if not sh) / 1e6
        if excl > t["on_cpu_ms"] + EXACT_MS + 1e-6:
            out.append(f"slices of {tid}: {excl} ms exclusive, on_cpu_ms {t['on_cpu_ms']}")
        # time charged before origin (a handler woken for the request, up to
        # its read) is not drawn: microseconds in the simulator
        if not t["shared"] and not g["cpu"]["slices_dropped"] and \
                t["on_cpu_ms"] - excl > CPU_TOL_MS + 0.01:
            out.append(f"slices of {tid}: {excl} ms, on_cpu_ms {t['on_cpu_ms']}")
    return out


def marker_truth(rtrace):
    """Recorded marker pairs: {(request id, phase name): [(begin, end)]}, end None: open."""
    out, open_ = {}, {}
    for r in check_truth.read(rtrace):
        key = (r.get("id"), r.get("phase"))
        if r["kind"] == check_truth.MBEGIN and key not in open_:
            open_[key] = r["ts"]
        elif r["kind"] == check_truth.MEND and key in open_:
            out.setdefault((key[0], check_truth.PHASES[key[1]]), []).append(
                (open_.pop(key), r["ts"]))
    for (rid, ph), ts in open_.items():
        out.setdefault((rid, check_truth.PHASES[ph]), []).append((ts, None))
    return out


def timeline_truth(g, t, marks):
    """Intervals against the truth: probe phases at its instants, marker phases at the records'."""
    out = []
    ivs = {}
    for i in g["intervals"]:
        ivs.setdefault((i["phase"], i["source"]), []).append((i["start_ns"], i["end_ns"]))
    s, rcv, ft, lt, end = (t["start_ns"], t["received_ns"], t["first_token_ns"],
                           t["last_token_ns"], t["end_ns"])
    probe = {"backlog": (t["arrival_ns"], s), "receive": (s, rcv)}
    if ft:
        probe.update(pre_first_token=(rcv, ft), decode=(ft, lt), postprocess=(lt, end))
    for p, (a, b) in probe.items():
        if g["phase_source"].get(p) == "probe":
            want = [(a, b)] if a is not None and b > a else []
            if ivs.get((p, "probe"), []) != want:
                out.append(f"{p} intervals: replay {ivs.get((p, 'probe'))}, truth {want}")
    if g["intervals_dropped"]:
        return out
    for p in check_truth.PHASES:
        if g["phase_source"].get(p) != "marker" or p == "other":
            continue
        want = []
        for a, b in marks.get((g["request_id"], p), []):
            a, b = max(a, s), min(end if b is None else b, end)
            if b > a:
                want.append((a, b))
        if ivs.get((p, "marker"), []) != sorted(want):
            out.append(f"{p} intervals: replay {ivs.get((p, 'marker'))}, truth {sorted(want)}")
    return out


def compare(reqtrace, rtrace):
    truth = [json.loads(line) for line in open(rtrace[:-len(".rtrace")] + ".truth.jsonl")]
    r = subprocess.run([reqtrace, "replay", rtrace, "--json"], capture_output=True, text=True)
    if r.returncode:
        return [f"replay exited {r.returncode}: {r.stderr.strip()}"]
    got = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        got[d["request_id"]] = d
    out = [f"{rid}: {d}" for rid, g in got.items() for d in timeline(g)]
    marks = marker_truth(rtrace)
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
        if g.get("phase_source") != t["phase_source"]:
            out.append(f"{rid}: phase_source: replay {g.get('phase_source')}, "
                       f"truth {t['phase_source']}")
        # engine packs (pack mode): the join and the exact step counts
        for k in ("steps_source", "pack"):
            if k in t and g.get(k) != t[k]:
                out.append(f"{rid}: {k}: replay {g.get(k)}, truth {t[k]}")
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
            # compute pools: a thread charged as a pool's (the truth lists only true)
            if gt[tid].get("pool", False) != tt[tid].get("pool", False):
                out.append(f"{rid}: cpu {tid} pool: replay {gt[tid].get('pool')}, "
                           f"truth {tt[tid].get('pool', False)}")
        if "pool_ms" in t["cpu"]:
            # only pool scenarios state it; an estimate flagged as one
            if not near(g["cpu"].get("pool_ms"), t["cpu"]["pool_ms"], CPU_TOL_MS):
                out.append(f"{rid}: pool_ms: replay {g['cpu'].get('pool_ms')}, "
                           f"truth {t['cpu']['pool_ms']}")
            if g["cpu"].get("estimated") != (t["cpu"]["pool_ms"] is not None):
                out.append(f"{rid}: estimated: replay {g['cpu'].get('estimated')}")
        elif g["cpu"].get("pool_ms") is not None:
            out.append(f"{rid}: pool_ms: replay {g['cpu']['pool_ms']}, no pool in the truth")
        if not near(g["cpu"]["off_cpu_ms"], t["cpu"]["off_cpu_ms"], CPU_TOL_MS):
            out.append(f"{rid}: off_cpu_ms: replay {g['cpu']['off_cpu_ms']}, "
                       f"truth {t['cpu']['off_cpu_ms']}")
        out += [f"{rid}: {d}" for d in timeline_truth(g, t, marks)]
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
