#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Compares what libreqtrace_cupti.so recorded (a reqtraced --record .rtrace)
with what cupti_bench measured itself, and prints the table run.sh ends with.

usage: cupti_check.py RECORDING.rtrace BENCH.jsonl [SPANS.jsonl [STEPS.jsonl TRUTH.jsonl]]

Checks (the issue's limits):
  kernel and copy durations vs CUDA events   within 5% or 10 us
  blocking sync duration vs the CPU's clock  within 5% or 10 us
  launch time: CUPTI DRIVER record entry vs the CPU clock just before the
  launch, and vs the BPF uprobe record of the same launch   within 50 us
  no CUPTI record arrives behind its source's watermark (none late)
  testbed (SPANS.jsonl): every span has device time, no more than its duration
  testbed with its step log and truth (REQTRACE_TB_CUDA_TRUTH, --truth; run
  with --markers): each request's kernel_ms = its steps' spin kernels (cost_ns)
  split equally among each step's requests, within 1 ms or 3%; the kernel time
  of all steps conserved in the spans within 3%; memcpy_ms present
Exit status 0 when every check that could run passed.
"""
import json
import os
import struct
import sys

HDR = struct.Struct("<HHIQII")  # kind, size, source, ts_ns, pid, tid (event.h)
KIND_API_ENTER, KIND_API_EXIT = 30, 31
KIND_KERNEL, KIND_MEMCPY, KIND_SYNC, KIND_SOURCE_INFO = 40, 41, 43, 61
KIND_LOSS, KIND_WATERMARK = 50, 51
CLASS_LAUNCH, CLASS_SYNC = 1, 6
COPY_H2D, COPY_D2H = 1, 2
SYNC_CONTEXT = 4
SRC_CUPTI = 2


def read_rtrace(path):
    data = open(path, "rb").read()
    if data[:8] != b"RTRACE\r\n":
        sys.exit(f"{path}: not an .rtrace file")
    (header_size,) = struct.unpack_from("<I", data, 12)
    off, out = header_size, []
    while off + HDR.size <= len(data):
        kind, size, source, ts, pid, tid = HDR.unpack_from(data, off)
        if size < HDR.size or off + size > len(data):
            break
        out.append((kind, source, ts, pid, tid, data[off + HDR.size:off + size]))
        off += size
    return out


def within(measured_us, ref_us, pct=5.0, abs_us=10.0):
    return abs(measured_us - ref_us) <= max(ref_us * pct / 100.0, abs_us)


def device_rows(row, spans, steps_path, truth_path):
    """kernel_ms per request through the daemon vs the spin kernels of its steps."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "integration"))
    import gpu_live  # noqa: E402  (its request -> steps mapping)
    steps = [json.loads(l) for l in open(steps_path) if l.strip()]
    truth = [json.loads(l) for l in open(truth_path) if l.strip()]
    by_id = {s["request_id"]: s for s in spans}
    per = gpu_live.steps_of([t for t in truth if t["request_id"] in by_id], steps)
    bad, worst = [], 0.0
    for rid, ss in per.items():
        g = by_id[rid].get("gpu") or {}
        want = sum(x["cost_ns"] / x["batch"] for x in ss) / 1e6
        got = g.get("kernel_ms")
        if got is None or g.get("memcpy_ms") is None:
            bad.append(rid)
            continue
        worst = max(worst, abs(got - want))
        if abs(got - want) > max(1.0, 0.03 * want):
            bad.append(rid)
    row("testbed: kernel_ms vs its steps' kernels", len(per), f"{worst:.3f} ms", "1 ms or 3%",
        bool(per) and len(per) == len(truth) and not bad)
    total = sum(x["cost_ns"] for x in steps) / 1e6
    got = sum((s.get("gpu") or {}).get("kernel_ms") or 0 for s in spans)
    row("testbed: kernel time conserved", len(steps), f"{got:.1f} of {total:.1f} ms", "3%",
        bool(steps) and abs(got - total) <= 0.03 * total)


def main():
    recs = read_rtrace(sys.argv[1])
    bench = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
    pid = next(b["pid"] for b in bench if b["op"] == "start")
    cupti_sources = set()
    kernels, copies, syncs, launches, bpf_launches = [], [], [], [], []
    wm, behind, cupti_recs = {}, 0, 0
    for kind, source, ts, rpid, tid, body in recs:
        if source in cupti_sources and kind not in (KIND_SOURCE_INFO, KIND_LOSS):
            if kind == KIND_WATERMARK:
                wm[source] = max(wm.get(source, 0), ts)
            else:
                cupti_recs += 1
                behind += ts < wm.get(source, 0)
        if kind == KIND_SOURCE_INFO:
            sid, stype = struct.unpack_from("<II", body)
            if stype == SRC_CUPTI:
                cupti_sources.add(sid)
            continue
        if rpid != pid:
            continue
        if kind == KIND_KERNEL:
            end, corr = struct.unpack_from("<QQ", body)
            kernels.append((corr, ts, end))
        elif kind == KIND_MEMCPY:
            end, corr, nbytes = struct.unpack_from("<QQQ", body)
            (ck,) = struct.unpack_from("<B", body, 40)
            copies.append((corr, ts, end, nbytes, ck))
        elif kind == KIND_SYNC:
            end, corr, stype = struct.unpack_from("<QQI", body)
            syncs.append((corr, ts, end, stype))
        elif kind in (KIND_API_ENTER, KIND_API_EXIT):
            enter, _stream, _nbytes, corr, _api, _ret, cls = struct.unpack_from("<QQQQIiH", body)
            if cls != CLASS_LAUNCH:
                continue
            if kind == KIND_API_EXIT and source in cupti_sources:
                launches.append((corr, enter))
            elif kind == KIND_API_ENTER and source not in cupti_sources:
                bpf_launches.append(ts)
    kernels.sort()
    copies.sort()
    launches.sort()
    bpf_launches.sort()

    rows, ok = [], True

    def row(name, n, worst, limit, passed):
        nonlocal ok
        ok &= passed is not False
        rows.append((name, str(n), worst, limit,
                     "n/a" if passed is None else ("PASS" if passed else "FAIL")))

    bk = [b for b in bench if b["op"] == "kernel"]
    if len(kernels) != len(bk):
        row("kernel records", len(kernels), f"expected {len(bk)}", "all", False)
    timed = [(b, k) for b, k in zip(bk, kernels) if not b["warmup"]]
    worst = max((abs((k[2] - k[1]) / 1000.0 - b["event_us"]) for b, k in timed), default=0)
    row("kernel duration vs CUDA events", len(timed), f"{worst:.1f} us", "5% or 10 us",
        bool(timed) and all(within((k[2] - k[1]) / 1000.0, b["event_us"]) for b, k in timed))

    bc = [b for b in bench if b["op"] in ("h2d", "d2h")]
    pairs = list(zip(bc, copies))
    good = len(pairs) == len(bc) and all(
        c[3] == b["bytes"] and c[4] == (COPY_H2D if b["op"] == "h2d" else COPY_D2H)
        for b, c in pairs)
    worst = max((abs((c[2] - c[1]) / 1000.0 - b["event_us"]) for b, c in pairs), default=0)
    row("copy duration vs CUDA events", len(pairs), f"{worst:.1f} us", "5% or 10 us",
        good and all(within((c[2] - c[1]) / 1000.0, b["event_us"]) for b, c in pairs))

    bs = [b for b in bench if b["op"] == "sync"]
    ctx = [s for s in syncs if s[3] == SYNC_CONTEXT]
    if bs and ctx:
        d = (ctx[-1][2] - ctx[-1][1]) / 1000.0
        row("device sync vs CPU clock", 1, f"{abs(d - bs[0]['cpu_us']):.1f} us", "5% or 10 us",
            within(d, bs[0]["cpu_us"]))
    else:
        row("device sync vs CPU clock", 0, "no SYNC record", "", False)

    timed_l = [(b, l) for b, l in zip(bk, launches) if not b["warmup"]]
    diffs = [(l[1] - b["cpu_launch_ns"]) / 1000.0 for b, l in timed_l]
    row("launch: CUPTI entry vs CPU clock", len(diffs),
        f"{max(diffs, default=0):.1f} us", "0..50 us",
        len(timed_l) == len(timed) and all(0 <= d <= 50 for d in diffs))

    if bpf_launches:
        n = min(len(bpf_launches), len(launches))
        d = [abs(a - l[1]) / 1000.0 for a, l in zip(bpf_launches[-n:], launches[-n:])]
        row("launch: CUPTI vs BPF uprobe", n, f"{max(d):.1f} us", "50 us", all(x <= 50 for x in d))
    else:
        row("launch: CUPTI vs BPF uprobe", 0, "no uprobe records", "50 us", None)

    row("CUPTI records behind their watermark", cupti_recs, f"{behind} late", "0",
        cupti_recs > 0 and behind == 0)

    if len(sys.argv) > 3:
        spans = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
        with_gpu = [s for s in spans if s.get("gpu") and s["gpu"].get("kernel_ms")]
        fits = all(s["gpu"]["kernel_ms"] <= s["duration_ms"] + 1 for s in with_gpu)
        row("testbed: requests with device time", len(spans),
            f"{len(with_gpu)} with kernel_ms", "all", bool(spans) and len(with_gpu) == len(spans) and fits)
        if len(sys.argv) > 5:
            device_rows(row, spans, sys.argv[4], sys.argv[5])

    w = [max(len(r[i]) for r in rows + [("check", "n", "worst", "limit", "result")]) for i in range(5)]
    print()
    for r in [("check", "n", "worst", "limit", "result")] + rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
