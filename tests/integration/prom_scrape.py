#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtraced --metrics-listen scraped by a real Prometheus server.

The testbed serves streamed requests; reqtraced traces it and serves
/metrics; Debian's `prometheus` (started here on loopback with a temporary
config and storage) scrapes it every second. Prometheus's HTTP API must then
report the TTFT and request-duration histograms and the phase histograms with
exactly as many observations as the load made streamed requests. The
listener's answers to bad requests (404, 405, oversized head) are checked
directly. docs/metrics.md.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
N = 24  # streamed requests
WAIT_S = 30  # for Prometheus to have scraped what the daemon saw


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw(port, data, timeout=10):
    """Bytes sent as they are; the whole answer (the server closes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def query(prom_port, expr):
    """Sum of an instant vector's values, or None when it is empty."""
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (prom_port,
                                                    urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.loads(r.read())
    if body.get("status") != "success":
        raise RuntimeError("prometheus: %s" % body)
    res = body["data"]["result"]
    if not res:
        return None
    return sum(float(x["value"][1]) for x in res)


def start_prometheus(target_port):
    prom = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.access(prom, os.X_OK):
        lc.cannot_run("Debian's prometheus is not installed (scripts/deps.sh installs it)")
    d = tempfile.mkdtemp(prefix="rt-prom-")
    tb._tmpdirs.append(d)
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: reqtraced\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % target_port)
    port = free_port()
    err = open(os.path.join(d, "prometheus.log"), "w")
    cmd = [prom, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(d, "data"),
           "--web.listen-address=127.0.0.1:%d" % port]
    log("start: " + " ".join(cmd))
    proc = subprocess.Popen(cmd, stdout=err, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("prometheus exited with %d; see %s" % (proc.returncode, err.name))
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("prometheus did not become ready; see %s" % err.name)


def check_listener(mport):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as r:
        ctype = r.headers.get("Content-Type")
        body = r.read().decode()
    check(ctype == "text/plain; version=0.0.4; charset=utf-8",
          "GET /metrics answers text format 0.0.4 (%s)" % ctype)
    check("# TYPE gen_ai_server_time_to_first_token_seconds histogram" in body
          and "reqtrace_dropped_total{stage=\"bpf_ring\"}" in body,
          "the exposition has the GenAI histograms and the drop counters")
    a = raw(mport, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
    check(a.startswith(b"HTTP/1.1 404 "), "another path: 404 (%r)" % a[:40])
    a = raw(mport, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    check(a.startswith(b"HTTP/1.1 405 ") and b"Allow: GET" in a, "another method: 405 (%r)" % a[:40])
    a = raw(mport, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 8192 + b"\r\n\r\n")
    check(a.startswith(b"HTTP/1.1 431 "), "an oversized request head: 431 (%r)" % a[:40])
    a = raw(mport, b"garbage\r\n\r\n")
    check(a.startswith(b"HTTP/1.1 400 "), "not HTTP: 400 (%r)" % a[:40])
    return body


def main():
    lc.require_root()
    if not (shutil.which("prometheus") or os.access("/usr/bin/prometheus", os.X_OK)):
        lc.cannot_run("Debian's prometheus is not installed (scripts/deps.sh installs it)")
    mport = free_port()
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0"])
    daemon = lc.Daemon(["--pid", str(server.pid), "--metrics-listen", "127.0.0.1:%d" % mport])
    prom = None
    try:
        check_listener(mport)
        prom, pport = start_prometheus(mport)
        out, r = lc.run_load(server.port, "--concurrency", 3, "--requests", N, "--stream",
                             "--max-tokens", 8, "--id-prefix", "prom-")
        ok = [x for x in out if x.get("ok")]
        check(r.returncode == 0 and len(ok) == N, "the testbed served %d streamed requests (%d ok)"
              % (N, len(ok)))
        ids = {x["request_id"] for x in ok}
        spans = [s for s in daemon.wait_spans(N, ids=ids) if s["request_id"] in ids]
        check(len(spans) == N, "reqtraced made a span per request (%d of %d)" % (len(spans), N))
        with_ttft = sum(1 for s in spans if s.get("ttft_ms") is not None)
        check(with_ttft == N, "every span has a TTFT (%d of %d)" % (with_ttft, N))

        want = {
            "sum(gen_ai_server_time_to_first_token_seconds_count{job=\"reqtraced\"})": N,
            "sum(gen_ai_server_request_duration_seconds_count{job=\"reqtraced\"})": N,
            "sum(reqtrace_requests_total{job=\"reqtraced\",outcome=\"ok\"})": N,
            "sum(gen_ai_server_time_to_first_token_seconds_bucket"
            "{job=\"reqtraced\",le=\"+Inf\"})": N,
        }
        got = {}
        deadline = time.monotonic() + WAIT_S
        while True:
            got = {q: query(pport, q) for q in want}
            phases = query(pport, "sum by (phase) (reqtrace_phase_seconds_count{job=\"reqtraced\"})")
            if all(got[q] == v for q, v in want.items()) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for q, v in want.items():
            check(got[q] == v, "prometheus: %s == %d (got %s)" % (q, v, got[q]))
        check(query(pport, "up{job=\"reqtraced\"}") == 1, "prometheus sees the target up")
        check(phases is not None and phases > 0, "phase histograms have observations (%s)" % phases)
        # every span of these requests has receive and decode: one observation each
        for ph in ("receive", "decode"):
            n_spans = sum(1 for s in spans if (s.get("phases") or {}).get(ph + "_ms") is not None)
            v = query(pport, "sum(reqtrace_phase_seconds_count{job=\"reqtraced\",phase=\"%s\"})"
                      % ph)
            check(v == n_spans and n_spans > 0,
                  "prometheus: phase %s observed once per span that has it (%s, %d spans)"
                  % (ph, v, n_spans))
        # the operation from the path: /v1/completions is text_completion
        v = query(pport, "sum(gen_ai_server_time_to_first_token_seconds_count{job=\"reqtraced\","
                  "gen_ai_operation_name=\"text_completion\",gen_ai_provider_name=\"unknown\"})")
        check(v == N, "labels: gen_ai_operation_name=text_completion, provider unknown (%s)" % v)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as resp:
            body = resp.read().decode()
        check(not any(i in body for i in ids), "no request id appears in any label")
    finally:
        if prom:
            prom.terminate()
            try:
                prom.wait(20)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        code = daemon.stop()
        server.stop()
    check(code == 0, "reqtraced exits cleanly with the listener open (%s)" % code)
    lc.finish()


if __name__ == "__main__":
    main()
