#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtraced reads PCIe/NVLink counters from the fake NVML (docs/gpu.md, "Links").

The fake libnvidia-ml.so.1 (tests/fixtures/fake_nvml) is named by
REQTRACE_NVML_LIB; its counters grow at set rates on CLOCK_MONOTONIC. The
status's nvml object must say "ok", the device's maximum PCIe generation
and width, link bytes that match the rates over the sampled window, and
utilisation against each link's maximum (PCIe gen 4 x16: 31.504 GB/s per
direction, driven at half; 18 NVLinks at 25000 MB/s, at a fifth); the
Prometheus counter reqtrace_gpu_link_bytes_total has the same totals. A
daemon whose NVML is missing says "absent" and serves as usual. Root (the
daemon loads BPF); fails instead of skipping when CI=true and it cannot run.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402

log, check = lc.log, lc.check
FAKE = os.path.join(lc.BIN, "tests", "fake_nvml", "libnvidia-ml.so.1")
PCIE_TX, PCIE_RX = 15752000000, 7876000000  # half and a quarter of 31504 MB/s
NV_TX, NV_RX = 90000000000, 45000000000  # a fifth and a tenth of 18 x 25000 MB/s


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def near(got, want, rel):
    return got is not None and abs(got - want) <= rel * want


def wait_samples(daemon, n, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        st = daemon.status()
        devs = (st.get("nvml") or {}).get("devices") or []
        pcie = devs[0].get("pcie") if devs else None
        if (pcie and pcie["samples"] >= n) or time.monotonic() > deadline:
            return st
        time.sleep(0.2)


def main():
    lc.require_root()
    if not os.path.exists(FAKE):
        lc.cannot_run("%s is not built" % FAKE)
    env = os.environ.copy()
    env.update({"REQTRACE_NVML_LIB": FAKE, "RT_FAKE_NVML_DEVICES": "1",
                "RT_FAKE_NVML_PCIE_GEN": "4", "RT_FAKE_NVML_PCIE_WIDTH": "16",
                "RT_FAKE_NVML_NVLINKS": "18", "RT_FAKE_NVML_NVLINK_MBPS": "25000",
                "RT_FAKE_NVML_PCIE_TX_BPS": str(PCIE_TX), "RT_FAKE_NVML_PCIE_RX_BPS": str(PCIE_RX),
                "RT_FAKE_NVML_NVLINK_TX_BPS": str(NV_TX),
                "RT_FAKE_NVML_NVLINK_RX_BPS": str(NV_RX)})
    mport = free_port()
    rec = os.path.join(tempfile.mkdtemp(prefix="rt-nvml-"), "links.rtrace")
    lc.tb._tmpdirs.append(os.path.dirname(rec))
    daemon = lc.Daemon(["--port", str(free_port()), "--no-inject", "--record", rec,
                        "--metrics-listen", "127.0.0.1:%d" % mport], env=env)
    try:
        st = wait_samples(daemon, 5)
        nv = st.get("nvml") or {}
        log("status nvml: %s" % nv)
        check(nv.get("state") == "ok", "nvml state ok (%s)" % nv.get("state"))
        check(nv.get("library") == FAKE, "the library REQTRACE_NVML_LIB names")
        check(nv.get("error") is None and nv.get("read_errors") == 0, "no error, no failed read")
        devs = nv.get("devices") or []
        check(len(devs) == 1 and nv.get("devices_total") == 1, "one device")
        d = devs[0] if devs else {}
        check(d.get("pcie_gen") == 4 and d.get("pcie_width") == 16, "PCIe gen 4 x16")
        check(d.get("nvlink_links") == 18, "18 NVLinks")
        p, n = d.get("pcie") or {}, d.get("nvlink") or {}
        check(p.get("max_bytes_per_s") == 31504000000, "PCIe maximum 31.504 GB/s per direction")
        check(n.get("max_bytes_per_s") == 450000000000, "NVLink maximum 18 x 25000 MB/s")
        check(p.get("samples", 0) >= 5 and p.get("window_ms", 0) >= 3000,
              "sampled every second (%s samples over %s ms)" % (p.get("samples"),
                                                                p.get("window_ms")))
        win = p.get("window_ms", 0) / 1000.0
        # the counters and the daemon read the same clock: bytes = rate x time, to the ms
        check(near(p.get("tx_bytes_per_s"), PCIE_TX, 0.01),
              "PCIe TX %s B/s = %d within 1%%" % (p.get("tx_bytes_per_s"), PCIE_TX))
        check(near(p.get("rx_bytes_per_s"), PCIE_RX, 0.01),
              "PCIe RX %s B/s = %d within 1%%" % (p.get("rx_bytes_per_s"), PCIE_RX))
        check(near(p.get("utilization"), 0.5, 0.01),
              "PCIe utilisation %s = 0.5 within 1%%" % p.get("utilization"))
        check(near(p.get("utilization_peak"), 0.5, 0.05),
              "PCIe peak %s = 0.5 within 5%% (one interval)" % p.get("utilization_peak"))
        check(p.get("tx_bytes", 0) >= PCIE_TX * win * 0.99,
              "PCIe TX bytes %s >= the rate over the window" % p.get("tx_bytes"))
        check(near(n.get("tx_bytes_per_s"), NV_TX, 0.01) and near(n.get("utilization"), 0.2, 0.01),
              "NVLink TX %s B/s, utilisation %s = 0.2" % (n.get("tx_bytes_per_s"),
                                                         n.get("utilization")))
        check(near(n.get("rx_bytes_per_s"), NV_RX, 0.01), "NVLink RX at its rate")
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as r:
            text = r.read().decode()
        st = daemon.status()
        p = st["nvml"]["devices"][0]["pcie"]
        m = re.search(r'^reqtrace_gpu_link_bytes_total\{device="0",link="pcie",'
                      r'direction="tx"\} (\d+)$', text, re.M)
        check(m is not None, "reqtrace_gpu_link_bytes_total{device,link,direction} exposed")
        # the scrape came before this status: at most a few samples behind
        check(m is not None and int(m.group(1)) <= p["tx_bytes"] and
              int(m.group(1)) >= p["tx_bytes"] - 3 * PCIE_TX,
              "the counter is the status's total (%s vs %s)" % (m and m.group(1), p["tx_bytes"]))
        check(re.search(r'^reqtrace_gpu_link_bytes_total\{device="0",link="nvlink",'
                        r'direction="rx"\} \d+$', text, re.M) is not None, "NVLink RX counter")
    finally:
        check(daemon.stop() == 0, "reqtraced stops cleanly")
    # the samples are records: a recording carries them for `why --file`
    out = subprocess.run([lc.REQTRACE, "replay", rec, "--events"], capture_output=True,
                            text=True, timeout=60).stdout
    tx = [int(m) for m in re.findall(r"LINK_SAMPLE.* device=0 link=all type=pcie tx=(\d+)", out)]
    check(len(tx) >= 5 and tx == sorted(tx) and tx[0] == 0,
          "the recording holds the PCIe samples, growing from 0 (%d)" % len(tx))
    check(len(tx) >= 5 and tx[-1] >= p["tx_bytes"], "the last one at least the status's total")
    check(re.search(r"LINK_SAMPLE.* type=nvlink tx=\d+ rx=\d+ max_mbps=450000", out) is not None,
          "NVLink samples with the link maximum")

    env["REQTRACE_NVML_LIB"] = "/nonexistent/libnvidia-ml.so.1"
    daemon = lc.Daemon(["--port", str(free_port()), "--no-inject"], env=env)
    try:
        time.sleep(1.5)
        nv = daemon.status().get("nvml") or {}
        check(nv.get("state") == "absent" and nv.get("devices") == [] and nv.get("error"),
              "no library: state absent with dlopen's reason (%s)" % nv.get("error"))
    finally:
        check(daemon.stop() == 0, "reqtraced without NVML stops cleanly")
    lc.finish()


if __name__ == "__main__":
    main()
