#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtraced's OTLP/HTTP export into a loopback receiver (docs/otlp.md).

A receiver (http.server on 127.0.0.1) takes the POSTs to /v1/traces,
gunzips them and checks each with otlp_validate.py, written from the
OTLP/JSON specification. The testbed serves load with a traceparent;
reqtraced traces it and exports. Checked:
  - every payload validates (hex ids, integer enums, string 64-bit
    integers, required fields, parent links to the traceparent's span);
  - the request spans' times agree with the load client's own clock
    (its monotonic send time converted by the test): within 1 s;
  - the first POST is answered 503 (Retry-After: 1), later ones 200:
    every request is delivered exactly once (none lost, none twice);
  - with every POST answered 400, no request is delivered, none is
    retried, and `status` counts each as dropped (otlp.dropped.rejected,
    drops.otlp_rejected);
  - OTEL_SERVICE_NAME and --otlp-headers reach the collector;
  - stopping with a POST in flight (a collector that hangs) exits 0;
  - https configured by the environment alone (OTEL_EXPORTER_OTLP_ENDPOINT
    as a base URL, _CERTIFICATE, _COMPRESSION=none): a self-signed
    collector the CA names gets every request once; one it does not gets
    nothing (the batch retried, last_error names the certificate).
"""

import gzip
import http.server
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import subprocess
import tempfile
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import otlp_validate as ov  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
N = 16  # requests answered 503 then 200
M = 6  # requests whose POSTs are answered 400
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = "00f067aa0ba902b7"
WAIT_S = 40


class Receiver:
    """POSTs recorded with their receipt time and the status they got."""

    def __init__(self, tls=None):
        self.lock = threading.Lock()
        self.posts = []  # dicts: t, status, headers, body (parsed), raw
        self.plan = []  # statuses for the next POSTs, in order
        self.default = 200
        self.hung = threading.Event()
        rx = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as collectors do

            def log_message(self, *a):
                pass

            def do_POST(self):
                t = time.time_ns()
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                data = raw
                if self.headers.get("Content-Encoding") == "gzip":
                    data = gzip.decompress(raw)
                try:
                    body = json.loads(data)
                except ValueError as e:
                    body = {"_unparsable": str(e)}
                with rx.lock:
                    status = rx.plan.pop(0) if rx.plan else rx.default
                if status == "hang":  # a collector that never answers
                    rx.hung.set()
                    time.sleep(60)
                    return
                with rx.lock:
                    rx.posts.append({"t": t, "status": status, "path": self.path,
                                     "headers": dict(self.headers), "body": body,
                                     "raw": raw})
                out = b'{"partialSuccess":{}}' if status == 200 else b'{"error":"test"}'
                self.send_response(status)
                if status == 503:
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.srv = S(("127.0.0.1", 0), H)
        if tls:  # (cert, key): an https collector
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return list(self.posts)

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def request_ids(post):
    """reqtrace.request_id of each SERVER span of a POST."""
    out = []
    for _, s in ov.all_spans(post["body"]):
        if s.get("kind") == 2:
            out.append(ov.attr(s.get("attributes"), "reqtrace.request_id"))
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_cert(d, name):
    """A self-signed certificate for 127.0.0.1: (cert, key) paths."""
    cert, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


def check_tls(server):
    """https through the environment alone: OTEL_EXPORTER_OTLP_ENDPOINT (a base
    URL) and OTEL_EXPORTER_OTLP_CERTIFICATE; a wrong CA is refused."""
    d = tempfile.mkdtemp(prefix="rt-otlp-tls-")
    tb._tmpdirs.append(d)
    good, other = make_cert(d, "collector"), make_cert(d, "other")
    rx = Receiver(tls=good)
    for ca, want in ((other[0], False), (good[0], True)):
        env = os.environ.copy()
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:%d/" % rx.port,
                    "OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
                    "OTEL_EXPORTER_OTLP_COMPRESSION": "none"})
        d2 = lc.Daemon(["--pid", str(server.pid), "--otlp-batch-delay", "200ms"], env=env)
        try:
            n0 = len(rx.snapshot())
            pre = "otlp-tls-%d-" % want
            out, _ = lc.run_load(server.port, "--concurrency", 1, "--requests", 3,
                                 "--max-tokens", 2, "--id-prefix", pre)
            ids = {x["request_id"] for x in out if x.get("ok")}
            if want:
                wait_for(lambda: ids <= {i for p in rx.snapshot() for i in request_ids(p)},
                         WAIT_S)
                posts = rx.snapshot()[n0:]
                got = sorted(i for p in posts for i in request_ids(p) if i in ids)
                check(len(ids) == 3 and got == sorted(ids),
                      "https with OTEL_EXPORTER_OTLP_CERTIFICATE: %d of 3 delivered once"
                      % len(got))
                check(all(p["path"] == "/v1/traces" and "Content-Encoding" not in p["headers"]
                          for p in posts),
                      "the base URL got /v1/traces; OTEL_EXPORTER_OTLP_COMPRESSION=none")
                check(not any(ov.validate(p["body"]) for p in posts),
                      "the https payloads validate")
            else:
                wait_for(lambda: d2.status()["otlp"]["retries"] >= 1, WAIT_S)
                st = d2.status()["otlp"]
                check(st["exported"] == 0 and st["retries"] >= 1 and len(rx.snapshot()) == n0
                      and "certificate" in (st["last_error"] or "").lower(),
                      "a collector the CA does not vouch for gets nothing, the batch is "
                      "retried (%s)" % st["last_error"])
        finally:
            code = d2.stop()
        check(code == 0, "reqtraced (https, %s CA) exits cleanly (%s)"
              % ("right" if want else "wrong", code))
    rx.close()


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return pred()


def check_reload(server):
    """SIGHUP moves the exporter to a new collector; queue and counters carry over."""
    rx_a, rx_b = Receiver(), Receiver()
    d = tempfile.mkdtemp(prefix="rt-otlp-reload-")
    conf = os.path.join(d, "reqtraced.conf")

    def write_conf(endpoint, queue):
        with open(conf, "w") as f:
            f.write("[exporters]\notlp_endpoint = %s\notlp_batch_delay = 200ms\n"
                    "otlp_queue = %d\n" % (endpoint, queue))

    def wait_log(pattern):
        return wait_for(lambda: re.search(pattern, daemon.log_text()) is not None, WAIT_S)

    def delivered(rx):
        return [i for p in rx.snapshot() if p["status"] == 200 for i in request_ids(p)]

    url_a = "http://127.0.0.1:%d/v1/traces" % rx_a.port
    url_b = "http://127.0.0.1:%d/v1/traces" % rx_b.port
    write_conf(url_a, 2048)
    daemon = lc.Daemon(["--config", conf, "--pid", str(server.pid)])
    try:
        out, _ = lc.run_load(server.port, "--concurrency", 2, "--requests", 6,
                             "--max-tokens", 2, "--id-prefix", "otlp-r1-")
        first = {x["request_id"] for x in out if x.get("ok")}
        wait_for(lambda: first <= set(delivered(rx_a)), WAIT_S)
        check(len(first) == 6 and first <= set(delivered(rx_a)),
              "reload: 6 requests delivered to the first collector")

        write_conf(url_b, 64)
        os.kill(daemon.proc.pid, signal.SIGHUP)
        check(wait_log(re.escape("SIGHUP: OTLP export %s" % url_b)),
              "reload: SIGHUP moved the exporter to the second collector")
        st = daemon.status()["otlp"]
        check(st and st["endpoint"] == url_b and st["exported"] == 6,
              "reload: status names the new endpoint and keeps the count (%s)" % st)
        out, _ = lc.run_load(server.port, "--concurrency", 2, "--requests", 6,
                             "--max-tokens", 2, "--id-prefix", "otlp-r2-")
        second = {x["request_id"] for x in out if x.get("ok")}
        wait_for(lambda: second <= set(delivered(rx_b)), WAIT_S)
        check(len(second) == 6 and second <= set(delivered(rx_b)),
              "reload: the next 6 requests reach the second collector")
        check(not (second & set(delivered(rx_a))) and not (first & set(delivered(rx_b))),
              "reload: none went to both collectors")
        st = daemon.status()["otlp"]
        check(st["exported"] == 12 and sum(st["dropped"].values()) == 0,
              "reload: exported %d across the reload, no loss (%s)"
              % (st["exported"], st["dropped"]))

        write_conf("off", 64)
        os.kill(daemon.proc.pid, signal.SIGHUP)
        check(wait_log(r"SIGHUP: OTLP export off"), "reload: otlp_endpoint = off stops it")
        st = daemon.status()
        check(st["otlp"] is None and st["drops"].get("otlp_queue_full") == 0,
              "reload: status otlp null once stopped, its drop counters stay (%s)"
              % st["drops"].get("otlp_queue_full"))
    finally:
        daemon.stop()
        rx_a.close()
        rx_b.close()


def main():
    lc.require_root()
    rx = Receiver()
    rx.plan = [503]
    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--port", "0"])
    env = os.environ.copy()
    env["OTEL_SERVICE_NAME"] = "rt-otlp-test"
    # the flag wins over the environment (docs/otlp.md, precedence)
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9/nowhere"
    mport = free_port()
    daemon = lc.Daemon(["--pid", str(server.pid), "--metrics-listen", "127.0.0.1:%d" % mport,
                        "--otlp-endpoint", "http://127.0.0.1:%d/v1/traces" % rx.port,
                        "--otlp-batch-delay", "200ms", "--otlp-headers", "x-test=a%2Cb",
                        "--otlp-timeout", "60s"],
                       env=env)
    # monotonic -> wall for the load client's send times (the same clocks)
    mono_off = time.time_ns() - time.monotonic_ns()
    try:
        st = daemon.status()
        check(st.get("otlp") and st["otlp"]["endpoint"].endswith(":%d/v1/traces" % rx.port),
              "status shows the exporter and its endpoint (%s)" % st.get("otlp"))

        # ---- 503 then 200: exactly one delivery each ----
        out, r = lc.run_load(server.port, "--concurrency", 2, "--requests", N, "--stream",
                             "--max-tokens", 4, "--id-prefix", "otlp-a-", "--header",
                             "traceparent: 00-%s-%s-01" % (TRACE, CALLER))
        ok = {x["request_id"]: x for x in out if x.get("ok")}
        check(r.returncode == 0 and len(ok) == N, "the testbed served %d requests (%d ok)"
              % (N, len(ok)))

        def delivered():
            return [i for p in rx.snapshot() if p["status"] == 200 for i in request_ids(p)]

        wait_for(lambda: set(ok) <= set(delivered()), WAIT_S)
        posts = rx.snapshot()
        got = delivered()
        check(posts and posts[0]["status"] == 503, "the first POST was answered 503")
        check(sorted(i for i in got if i in ok) == sorted(ok),
              "503 then 200: each of the %d requests delivered exactly once (%d deliveries, "
              "%d distinct)" % (N, sum(1 for i in got if i in ok), len(set(got) & set(ok))))
        first_ids = set(request_ids(posts[0])) if posts else set()
        retried = [p for p in posts[1:] if p["status"] == 200 and p["raw"] == posts[0]["raw"]]
        check(first_ids and len(retried) == 1,
              "the 503'd batch (%d requests) was sent again byte for byte, once (%d)"
              % (len(first_ids), len(retried)))

        bad = 0
        for k, p in enumerate(posts):
            errs = ov.validate(p["body"], external_parents=[CALLER])
            for e in errs[:5]:
                log("payload %d: %s" % (k, e))
            bad += bool(errs)
        check(bad == 0, "all %d payloads pass the OTLP/JSON validator (%d fail)"
              % (len(posts), bad))
        check(all(p["path"] == "/v1/traces" for p in posts), "POSTs go to /v1/traces")
        check(all(p["headers"].get("Content-Encoding") == "gzip" for p in posts),
              "bodies are gzip (Content-Encoding: gzip)")
        check(all(p["headers"].get("x-test") == "a,b" for p in posts),
              "--otlp-headers reach the collector, percent-decoded")
        check(all(p["headers"].get("Content-Type") == "application/json" for p in posts),
              "Content-Type: application/json")

        # times: the request span against the client's wall clock
        worst = 0.0
        n_server = n_children = late = 0
        wrong_parent, wrong_service, no_resp_id = [], set(), []
        for p in posts:
            if p["status"] != 200:
                continue
            for rs, s in ov.all_spans(p["body"]):
                # exported after it ended: no later than the POST (50 ms for the
                # two clock conversions)
                late += int(s["endTimeUnixNano"]) > p["t"] + 50_000_000
                if s.get("kind") != 2:
                    n_children += 1
                    continue
                rid = ov.attr(s.get("attributes"), "reqtrace.request_id")
                if rid not in ok:
                    continue
                n_server += 1
                sname = ov.attr(rs["resource"]["attributes"], "service.name")
                if sname != "rt-otlp-test":
                    wrong_service.add(sname)
                if s["traceId"] != TRACE or s.get("parentSpanId") != CALLER:
                    wrong_parent.append(rid)
                # the testbed's events carry "id": "cmpl-<n>" (src/testbed/resp.c)
                if not str(ov.attr(s.get("attributes"), "gen_ai.response.id")).startswith("cmpl-"):
                    no_resp_id.append(rid)
                client_send = ok[rid]["send_ns"] + mono_off
                worst = max(worst, abs(int(s["startTimeUnixNano"]) - client_send) / 1e9)
        check(n_server == N, "one SERVER span per request (%d of %d)" % (n_server, N))
        check(not wrong_parent, "every request span continues the caller's trace "
              "(traceparent; wrong: %s)" % wrong_parent)
        check(not wrong_service, "resource service.name from OTEL_SERVICE_NAME, the flag's "
              "endpoint over OTEL_EXPORTER_OTLP_ENDPOINT (other names: %s)" % wrong_service)
        check(not no_resp_id, "gen_ai.response.id is the response's own id (missing: %s)"
              % no_resp_id)
        check(worst < 1.0, "span starts within 1 s of the client's wall-clock send time "
              "(worst %.6f s)" % worst)
        check(late == 0, "no span ends after the POST that carries it (%d do)" % late)
        log("children (phase intervals, threads): %d" % n_children)
        st = daemon.status()["otlp"]
        check(st["exported"] == N and st["retries"] >= 1 and st["queued"] == 0,
              "status: exported %d, retries %d, queued %d" % (st["exported"], st["retries"],
                                                               st["queued"]))
        check(sum(st["dropped"].values()) == 0, "no loss counted (%s)" % st["dropped"])

        # ---- 400: no delivery, no retry, a counted drop each ----
        n_posts = len(rx.snapshot())
        retries_before = st["retries"]
        rx.default = 400
        out, r = lc.run_load(server.port, "--concurrency", 2, "--requests", M,
                             "--max-tokens", 4, "--id-prefix", "otlp-b-")
        ok_b = {x["request_id"] for x in out if x.get("ok")}
        check(len(ok_b) == M, "the testbed served %d more (%d ok)" % (M, len(ok_b)))
        wait_for(lambda: daemon.status()["otlp"]["dropped"]["rejected"] >= M, WAIT_S)
        time.sleep(1.5)  # a retry, were there one, would come after 0.5 s at the least
        st_all = daemon.status()
        st = st_all["otlp"]
        later = rx.snapshot()[n_posts:]
        sent_b = [i for p in later for i in request_ids(p) if i in ok_b]
        check(sorted(sent_b) == sorted(ok_b),
              "400: each request POSTed once, never retried (%d POSTed of %d)"
              % (len(sent_b), M))
        check(not any(p["status"] == 200 for p in later), "400: nothing delivered")
        check(st["dropped"]["rejected"] == M and st_all["drops"].get("otlp_rejected") == M,
              "400: %d counted drops (otlp.dropped.rejected %d, drops.otlp_rejected %s)"
              % (M, st["dropped"]["rejected"], st_all["drops"].get("otlp_rejected")))
        check(st["retries"] == retries_before and st["last_status"] == 400,
              "400: no retry (%d before, %d after), last_status %d"
              % (retries_before, st["retries"], st["last_status"]))
        check(st["exported"] == N, "exported stays %d" % st["exported"])
        bad = sum(bool(ov.validate(p["body"])) for p in later)
        check(bad == 0, "the 400'd payloads validate too (%d fail)" % bad)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10) as resp:
            body = resp.read().decode()
        for line in ('reqtrace_exported_spans_total{exporter="otlp"} %d' % N,
                     'reqtrace_dropped_total{stage="otlp_rejected"} %d' % M):
            check(line in body.splitlines(), "/metrics: %s" % line)

        # ---- a collector that never answers: stopping with a POST in flight ----
        rx.default = "hang"
        lc.run_load(server.port, "--concurrency", 1, "--requests", 2, "--max-tokens", 2,
                    "--id-prefix", "otlp-c-")
        check(rx.hung.wait(WAIT_S), "a POST is in flight to a collector that does not answer")
        st = daemon.status()["otlp"]
        check(st["queued"] >= 1, "status: %d queued while it hangs" % st["queued"])
    finally:
        code = daemon.stop()
        rx.close()
    check(code == 0, "reqtraced exits cleanly with a POST in flight (%s)" % code)
    check("still queued at exit, dropped" in daemon.log_text(),
          "what was queued at exit is counted and logged")
    try:
        check_tls(server)
        check_reload(server)
    finally:
        server.stop()
    lc.finish()


if __name__ == "__main__":
    main()
