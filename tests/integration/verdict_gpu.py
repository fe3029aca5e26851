#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""gpu_idle_waiting live (root): reqtrace-testbed's cuda backend on the fake
driver (tests/fixtures/fake_cuda) with a slow CPU stage (one tokenizer
thread, 60 ms a request) under reqtraced, zero-code and with markers, no
CUPTI. `reqtrace why --json` from the daemon leads with gpu_idle_waiting;
its busy fraction is an estimate from the CPU side (labelled so), within 2
points of the fake device's own busy time over the same window: the sum of
the work the backend's steps enqueued (kernel spin + copies, the step log)
over the window's length. The engine launches, then syncs, one step at a
time, so the device's work never overlaps itself.

usage: verdict_gpu.py --fakes DIR
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402
import verdict_scenarios as vs  # noqa: E402

log, check = lc.log, lc.check
COPY_NS, COPY_GBPS = 50000, 1000  # the fake's copy cost: base + bytes / GB/s


def step_work(s):
    return s["cost_ns"] + 2 * COPY_NS + (s["h2d_bytes"] + s["d2h_bytes"]) // COPY_GBPS


def wait_attached(daemon, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any("gpu uprobes:" in x and "libcuda.so.1" in x
               for x in daemon.log_text().splitlines()):
            return True
        time.sleep(0.1)
    return False


def one(fakes, mode):
    d = tb.tmpdir()
    steps_path = os.path.join(d, "steps-%s.jsonl" % mode)
    env = dict(os.environ, LD_LIBRARY_PATH=fakes, RT_FAKE_CUDA_COPY_NS=str(COPY_NS),
               RT_FAKE_CUDA_COPY_GBPS=str(COPY_GBPS), REQTRACE_TB_CUDA_TRUTH=steps_path)
    args = ["--scenario", tb.scenario("healthy"), "--port", "0", "--backend", "cuda",
            "--set", "tokenize_base_ms=60", "--set", "tokenize_ms_per_kchar=0",
            "--set", "decode_base_ms=4", "--set", "prefill_base_ms=5"]
    if mode == "markers":
        args.append("--markers")
    server = tb.Testbed(args, env=env, wrap=["chrt", "-f", "10"])
    daemon = lc.Daemon(["--pid", str(server.pid)])
    what = "gpu slow-cpu %s" % mode
    try:
        check(wait_attached(daemon), "%s: reqtraced attached the GPU uprobes" % what)
        lines, _ = lc.run_load(server.port, "--concurrency", 1, "--requests", 10, "--stream",
                               "--max-tokens", 8, "--id-prefix", "g-")
        ids = {x["request_id"] for x in lines}
        spans = daemon.wait_spans(len(ids), ids=ids)
        check(ids <= {s["request_id"] for s in spans}, "%s: a span for each request" % what)
        r = subprocess.run([lc.REQTRACE, "--socket", daemon.sock, "why", "--json"],
                           capture_output=True, text=True, timeout=60)
        log("why --json: " + r.stdout.strip()[:3000])
        if not check(r.returncode == 0, "%s: why --json exits 0 (%s)" % (what, r.stderr)):
            return
        doc = json.loads(r.stdout)
    finally:
        check(server.stop() == 0 and daemon.stop() == 0, "%s: testbed and reqtraced exit 0" % what)
    if not vs.check_shape(doc, what):
        return
    w0, w1 = doc["window"]["start_ns"], doc["window"]["end_ns"]
    steps = lc.read_jsonl(steps_path)
    # the device's own busy time: work enqueued by steps inside the window
    busy_ns = sum(step_work(s) for s in steps if s["begin_ns"] >= w0 and s["end_ns"] <= w1)
    truth = busy_ns / (w1 - w0)
    f = doc["findings"][0]
    ev = f["evidence"]
    log("%s: first finding %s: %s" % (what, f["kind"], f["claim"]))
    if not check(f["kind"] == "gpu_idle_waiting", "%s: first finding is gpu_idle_waiting (%s)" %
                 (what, [x["kind"] for x in doc["findings"]])):
        return
    check(ev["busy_source"] == "estimate" and ev["estimate"] is True and "estimate" in f["claim"],
          "%s: without CUPTI the busy fraction is an estimate, and says so" % what)
    check(abs(ev["gpu_busy"] - truth) <= 0.02,
          "%s: GPU busy %.3f within 2 points of the fake device's %.3f (%d steps, %.1f ms of "
          "work in %.1f ms)" % (what, ev["gpu_busy"], truth, len(steps), busy_ns / 1e6,
                               (w1 - w0) / 1e6))
    check(ev["waiting_share"] >= 0.5, "%s: waiting share %.2f" % (what, ev["waiting_share"]))


FAKE_NVML = os.path.join(lc.BIN, "tests", "fake_nvml", "libnvidia-ml.so.1")
PCIE_MAX = 31504000000  # gen 4 x16, bytes/s per direction (docs/gpu.md, "Links")


def transfer(doc, what):
    """The transfer_bound finding's link evidence: the fake's PCIe at 80%."""
    f = [x for x in doc["findings"] if x["kind"] == "transfer_bound"]
    if not check(f, "%s: transfer_bound is among the findings (%s)"
                 % (what, [x["kind"] for x in doc["findings"]])):
        return
    links = f[0]["evidence"].get("links") or []
    pcie = [x for x in links if x["device"] == 0 and x["link"] == "pcie"]
    check(pcie and abs(pcie[0]["utilisation"] - 0.8) <= 0.05 and pcie[0]["tx_bytes"] > 0,
          "%s: its evidence has device 0's PCIe at 80%% with the bytes it moved (%s)"
          % (what, links))


def links(fakes):
    """transfer_bound with the fake NVML's link counters, live and from the recording."""
    d = tb.tmpdir()
    rec = os.path.join(d, "links.rtrace")
    env = dict(os.environ, LD_LIBRARY_PATH=fakes, RT_FAKE_CUDA_COPY_NS=str(COPY_NS),
               RT_FAKE_CUDA_COPY_GBPS=str(COPY_GBPS))
    denv = dict(os.environ, REQTRACE_NVML_LIB=FAKE_NVML, RT_FAKE_NVML_DEVICES="1",
                RT_FAKE_NVML_PCIE_GEN="4", RT_FAKE_NVML_PCIE_WIDTH="16",
                RT_FAKE_NVML_PCIE_TX_BPS=str(PCIE_MAX * 8 // 10),
                RT_FAKE_NVML_PCIE_RX_BPS=str(PCIE_MAX // 10))
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0", "--backend",
                         "cuda", "--set", "decode_base_ms=4", "--set", "prefill_base_ms=5"],
                        env=env, wrap=["chrt", "-f", "10"])
    daemon = lc.Daemon(["--pid", str(server.pid), "--record", rec], env=denv)
    what = "gpu links"
    try:
        check(wait_attached(daemon), "%s: reqtraced attached the GPU uprobes" % what)
        lines, _ = lc.run_load(server.port, "--concurrency", 2, "--requests", 10, "--stream",
                               "--max-tokens", 8, "--id-prefix", "l-")
        ids = {x["request_id"] for x in lines}
        daemon.wait_spans(len(ids), ids=ids)
        time.sleep(2.5)  # NVML is read every second: a few samples in the window
        r = subprocess.run([lc.REQTRACE, "--socket", daemon.sock, "why", "--json"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "%s: why --json exits 0 (%s)" % (what, r.stderr))
        live = json.loads(r.stdout) if r.returncode == 0 else None
    finally:
        check(server.stop() == 0 and daemon.stop() == 0, "%s: testbed and reqtraced exit 0" % what)
    if live:
        transfer(live, what + " (live)")
    r = subprocess.run([lc.REQTRACE, "why", "--json", "--file", rec], capture_output=True,
                       text=True, timeout=60)
    if check(r.returncode == 0, "%s: why --json --file exits 0 (%s)" % (what, r.stderr)):
        transfer(json.loads(r.stdout), what + " (recording)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fakes", required=True)
    a = ap.parse_args()
    lc.require_root()
    if not os.path.exists(os.path.join(a.fakes, "libcuda.so.1")):
        lc.cannot_run("libcuda.so.1 is not built in %s" % a.fakes)
    for mode in vs.MODES:
        one(a.fakes, mode)
    if not os.path.exists(FAKE_NVML):
        lc.cannot_run("%s is not built" % FAKE_NVML)
    links(a.fakes)
    lc.finish()


if __name__ == "__main__":
    main()
