#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Device time per request, live, through the real injection path (docs/gpu.md,
"Device time (CUPTI)").

reqtrace-testbed runs its cuda backend on the fake libcuda.so.1 and
libnccl.so.2 (tests/fixtures/fake_cuda) with CUDA_INJECTION64_PATH naming
libreqtrace_cupti.so and REQTRACE_CUPTI_LIB the mock libcupti
(tests/fixtures/mock_cupti). The fake driver loads the library in cuInit, as
libcuda does, and plays CUPTI through the mock: every launch, copy, memset
and sync writes a DRIVER record, and each piece of virtual device work a
device record with the same correlation id once it completes. reqtraced
(--pid of the testbed, --inject-socket in a temporary directory, started
after the testbed: the library finds it on its retries) hands the library a
sealed ring through the real handshake, and the correlator joins the device
records to requests. Ground truth: the fakes' configured work (the same
knobs as gpu_live.py) and the backend's per-step log (REQTRACE_TB_CUDA_TRUTH).

  markers  (--markers, concurrency 4, grouped NCCL) per request: kernel_ms and
           memcpy_ms = its steps' kernel and copy time, each split equally
           among the step's requests, within 1 ms or 3%; launches the equal
           split of gpu.c; everything conserved
  zero     (no markers, concurrency 1, plain NCCL) per request: kernel_ms and
           memcpy_ms = its steps' work within 1 ms or 3%; launches exact
  Both: `reqtrace status` lists the testbed as injected (status ok) with
  records flowing, none invalid, none lost, a watermark; no drops.
  refused  a second testbed loading the library with the mock, OUTSIDE every
           target group, is refused on the inject socket: the daemon logs the
           refusal, status has no injected entry for it, and it serves
           requests as usual (the traced one still works meanwhile).

usage: cupti_live.py --mode markers|zero|refused --fakes DIR --lib LIB --mock MOCK
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_live as gl  # noqa: E402
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
MS = 1e6


def env_for(a, d, steps_path=None, nccl=0):
    env = dict(os.environ, LD_LIBRARY_PATH=a.fakes, CUDA_INJECTION64_PATH=a.lib,
               REQTRACE_SOCKET=os.path.join(d, "inject.sock"), REQTRACE_CUPTI_LIB=a.mock,
               REQTRACE_CUPTI_DEBUG="1",
               RT_FAKE_CUDA_COPY_NS=str(gl.COPY_NS), RT_FAKE_CUDA_COPY_GBPS=str(gl.COPY_GBPS),
               RT_FAKE_NCCL_NS=str(gl.NCCL_NS), RT_FAKE_NCCL_GBPS=str(gl.NCCL_GBPS),
               REQTRACE_TB_CUDA_NCCL=str(nccl), REQTRACE_TB_CUDA_NCCL_COUNT=str(gl.NCCL_COUNT))
    if steps_path:
        env["REQTRACE_TB_CUDA_TRUTH"] = steps_path
    return env


def testbed(env, markers=False, truth=None):
    args = ["--scenario", tb.scenario("healthy"), "--port", "0", "--backend", "cuda",
            "--set", "decode_base_ms=4", "--set", "prefill_base_ms=5"]
    if truth:
        args += ["--truth", truth]
    if markers:
        args.append("--markers")
    # SCHED_FIFO keeps the backend's clock reads next to its calls (live_fidelity.py)
    return tb.Testbed(args, env=env, wrap=["chrt", "-f", "10"])


def injected(daemon, pid):
    return [x for x in daemon.status().get("injected", []) if x["pid"] == pid]


def wait_injected(daemon, pid, timeout=15):
    """The library retries with backoff (0.5, 1, 2, 4 s): the session comes within ~4 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = injected(daemon, pid)
        if got and got[0]["status"] == "ok" and got[0]["watermark_ns"]:
            return got[0]
        time.sleep(0.2)
    return None


def step_device(s):
    """The fakes' device time of a step: kernels (its spin kernel, its collective) and copies."""
    _, comm = gl.step_work(s)
    kernel = s["cost_ns"] + comm
    copies = gl.copy_ns(s["h2d_bytes"]) + gl.copy_ns(s["d2h_bytes"])
    return kernel, copies


def check_device(mode, spans, truth, steps):
    per = gl.steps_of(truth, steps)
    check(len(per) == len(truth), "%s: steps of every request found (%d of %d)"
          % (mode, len(per), len(truth)))
    bad_k, bad_m, bad_l, worst = [], [], [], [0.0, 0.0]
    for rid, ss in per.items():
        g = (spans.get(rid) or {}).get("gpu")
        if not g or g.get("kernel_ms") is None or g.get("memcpy_ms") is None:
            bad_k.append((rid, "no device time", g))
            continue
        # each step's device time split equally among its requests (batch 1 when zero-code)
        kern = sum(step_device(x)[0] / x["batch"] for x in ss)
        mem = sum(step_device(x)[1] / x["batch"] for x in ss)
        worst[0] = max(worst[0], abs(g["kernel_ms"] - kern / MS))
        worst[1] = max(worst[1], abs(g["memcpy_ms"] - mem / MS))
        if not gl.close(g["kernel_ms"], kern):
            bad_k.append((rid, g["kernel_ms"], round(kern / MS, 3)))
        if not gl.close(g["memcpy_ms"], mem):
            bad_m.append((rid, g["memcpy_ms"], round(mem / MS, 3)))
        launches = [1 + (1 if x["nccl_calls"] else 0) for x in ss]
        if mode == "zero":
            ok = g["launches"] == sum(launches)
        else:
            lo = sum(n // x["batch"] for n, x in zip(launches, ss))
            hi = sum(n // x["batch"] + n % x["batch"] for n, x in zip(launches, ss))
            ok = lo <= g["launches"] <= hi
        if not ok:
            bad_l.append((rid, g["launches"], sum(launches)))
    check(not bad_k, "%s: per-request kernel_ms = the kernel time the fakes ran for it, within "
          "1 ms or 3%% (worst %.4f ms; off: %s)" % (mode, worst[0], bad_k[:4]))
    check(not bad_m, "%s: per-request memcpy_ms = its copies' time within 1 ms or 3%% "
          "(worst %.4f ms; off: %s)" % (mode, worst[1], bad_m[:4]))
    check(not bad_l, "%s: launches as gpu.c counts them (off: %s)" % (mode, bad_l[:4]))
    # conservation: the device time of all steps is in the spans, nothing twice
    total_k = sum(step_device(x)[0] for x in steps)
    total_m = sum(step_device(x)[1] for x in steps)
    got_k = sum(s["gpu"]["kernel_ms"] * MS for s in spans.values()
                if s.get("gpu") and s["gpu"].get("kernel_ms") is not None)
    got_m = sum(s["gpu"]["memcpy_ms"] * MS for s in spans.values()
                if s.get("gpu") and s["gpu"].get("memcpy_ms") is not None)
    check(abs(got_k - total_k) <= max(MS, 0.01 * total_k) and
          abs(got_m - total_m) <= max(MS, 0.01 * total_m),
          "%s: device time conserved: kernels %.3f of %.3f ms, copies %.3f of %.3f ms"
          % (mode, got_k / MS, total_k / MS, got_m / MS, total_m / MS))


def check_status(daemon, pid, st):
    mine = [x for x in st.get("injected", []) if x["pid"] == pid]
    check(len(mine) == 1, "status lists the testbed (pid %d) as injected: %s"
          % (pid, st.get("injected")))
    if not mine:
        return
    e = mine[0]
    check(e["status"] == "ok" and e["records"] > 0 and e["watermark_ns"] > 0,
          "its session is ok with records flowing through the sealed ring: %d records, "
          "watermark %d" % (e["records"], e["watermark_ns"]))
    check(e["invalid"] == 0 and e["lost"] == 0,
          "no invalid or lost records (%d invalid, %d lost)" % (e["invalid"], e["lost"]))
    check(all(v == 0 for v in st["drops"].values()),
          "zero drops: %s" % {k: v for k, v in st["drops"].items() if v})
    check("connected: source" in daemon.log_text(),
          "the daemon handed the library a ring (its log says so)")


def run_traced(a):
    d = tb.tmpdir()
    truth_path, steps_path = os.path.join(d, "truth.jsonl"), os.path.join(d, "steps.jsonl")
    markers = a.mode == "markers"
    nccl = 2 if markers else 1
    conc = 4 if markers else 1
    nreq = a.requests or (16 if markers else 8)
    server = testbed(env_for(a, d, steps_path, nccl), markers, truth_path)
    daemon = lc.Daemon(["--pid", str(server.pid), "--inject-socket",
                        os.path.join(d, "inject.sock")])
    try:
        check(gl.wait_attached(daemon, ("libcuda.so.1", "libnccl.so.2")),
              "reqtraced attached the GPU uprobes to both fakes")
        t0 = time.monotonic()
        sess = wait_injected(daemon, server.pid)
        check(sess is not None, "the library, started before the daemon, got a session "
              "(%.1f s after the daemon came up)" % (time.monotonic() - t0))
        _, r = lc.run_load(server.port, "--concurrency", conc, "--requests", nreq, "--stream",
                           "--max-tokens", 8)
        check(r.returncode == 0, "load ok: " + r.stderr.strip()[-300:])
        time.sleep(0.5)
        truth = lc.read_jsonl(truth_path)
        ids = {t["request_id"] for t in truth}
        spans = {s["request_id"]: s for s in daemon.wait_spans(len(truth), ids=ids)}
        check(ids <= set(spans) and len(truth) == nreq,
              "a span for each of the %d requests" % nreq)
        check_status(daemon, server.pid, daemon.status())
    finally:
        code = server.stop()
        dcode = daemon.stop()
    check(code == 0 and dcode == 0, "testbed and reqtraced exit cleanly (%s, %s)" % (code, dcode))
    check("daemon refused us" not in server.stderr(), "the library was not refused")
    steps = lc.read_jsonl(steps_path)
    check(len(steps) >= nreq, "%d steps" % len(steps))
    check_device(a.mode, spans, [t for t in truth if t["request_id"] in spans], steps)


def run_refused(a):
    d = tb.tmpdir()
    traced = testbed(env_for(a, d))
    daemon = lc.Daemon(["--pid", str(traced.pid), "--inject-socket",
                        os.path.join(d, "inject.sock")])
    outsider = None
    try:
        check(wait_injected(daemon, traced.pid) is not None, "the traced testbed is injected")
        # same library, same mock, same socket: only its target group differs
        outsider = testbed(env_for(a, d))
        deadline = time.monotonic() + 20
        want = "inject: refused pid %d" % outsider.pid
        while time.monotonic() < deadline and want not in daemon.log_text():
            time.sleep(0.1)
        check(want in daemon.log_text(), "the daemon logs the refusal: %r" % want)
        _, r = lc.run_load(outsider.port, "--concurrency", 2, "--requests", 6, "--stream",
                           "--max-tokens", 4)
        check(r.returncode == 0, "the refused process serves requests as usual: "
              + r.stderr.strip()[-300:])
        check(outsider.alive(), "the refused process runs on")
        st = daemon.status()
        check(not injected(daemon, outsider.pid) and
              not [x for x in st.get("injected", []) if x["pid"] == outsider.pid],
              "status has no injected entry for the refused process: %s" % st.get("injected"))
        check(len(injected(daemon, traced.pid)) == 1, "the traced process is still injected")
        _, r = lc.run_load(traced.port, "--concurrency", 1, "--requests", 3, "--stream",
                           "--max-tokens", 4)
        check(r.returncode == 0, "the traced process serves requests")
    finally:
        ocode = outsider.stop() if outsider else None
        code = traced.stop()
        dcode = daemon.stop()
    check(ocode == 0 and code == 0 and dcode == 0,
          "both testbeds and reqtraced exit cleanly (%s, %s, %s)" % (ocode, code, dcode))
    check("daemon refused us" in outsider.stderr() if outsider else False,
          "the library says it was refused (REQTRACE_CUPTI_DEBUG)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True, choices=("markers", "zero", "refused"))
    ap.add_argument("--fakes", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--mock", required=True)
    ap.add_argument("--requests", type=int, default=0)
    a = ap.parse_args()
    lc.require_root()
    for f in (os.path.join(a.fakes, "libcuda.so.1"), os.path.join(a.fakes, "libnccl.so.2"),
              a.lib, a.mock):
        if not os.path.exists(f):
            lc.cannot_run("%s is not built" % f)
    if a.mode == "refused":
        run_refused(a)
    else:
        run_traced(a)
    lc.finish()


if __name__ == "__main__":
    main()
