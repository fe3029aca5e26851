#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Connections reqtrace cannot read are counted, never turned into spans
(design: "Connections reqtrace cannot read").

A traced python3 server (tests/fixtures/unreadable_server.py) gets, on
loopback:
  - TLS connections (python3 ssl client, a throwaway self-signed certificate
    made with openssl), each carrying an HTTP/1.1 request inside TLS;
  - HTTP/2 prior-knowledge connections (h2c: the "PRI * HTTP/2.0" preface
    and a SETTINGS frame);
  - plain HTTP/1.1 requests, so that tracing is shown to work.

`reqtrace status` counts the TLS and HTTP/2 connections in the target's
"unreadable" (JSON and text), and the only spans are the plain requests'.
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
SERVER = os.path.join(lc.SRC, "tests", "fixtures", "unreadable_server.py")
N_TLS, N_H2, N_PLAIN = 3, 2, 2
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def make_cert(d):
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    r = subprocess.run([shutil.which("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode:
        raise RuntimeError("openssl req: " + r.stderr)
    return cert, key


def request(rid, path):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: %s\r\n"
            "Authorization: Bearer not-for-spans\r\n\r\n" % (path, rid)).encode()


def read_all(s):
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            return data
        data += b


def tls_call(port, cert, rid):
    ctx = ssl.create_default_context(cafile=cert)
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as s:
            s.sendall(request(rid, "/tls-secret"))
            return read_all(s)


def h2_call(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(H2_PREFACE + H2_SETTINGS)
        return read_all(s)


def plain_call(port, rid):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request(rid, "/plain"))
        return read_all(s)


def unreadable(daemon):
    return daemon.status()["targets"][0]["unreadable"]


def main():
    lc.require_root()
    if not shutil.which("openssl"):
        lc.cannot_run("openssl is not installed (it makes the test's certificate)")
    d = tb.tmpdir()
    cert, key = make_cert(d)
    err = open(os.path.join(d, "server.stderr"), "w")
    server = subprocess.Popen([sys.executable, SERVER, cert, key], stdout=subprocess.PIPE,
                              stderr=err, text=True)
    daemon = None
    try:
        words = server.stdout.readline().split()
        if len(words) != 4:
            raise RuntimeError("server did not start: %r" % words)
        tls_port, plain_port = int(words[1]), int(words[3])
        daemon = lc.Daemon(["--pid", str(server.pid), "--no-inject"])
        check(unreadable(daemon) == {"tls": 0, "http2": 0, "malformed": 0},
              "nothing unreadable before any traffic")
        # The server sat in accept() before the daemon started: a connection
        # accepted by that call looks joined mid-stream (its accept's entry was
        # never seen). An empty connection to each listener uses those calls up.
        for port in (tls_port, plain_port):
            socket.create_connection(("127.0.0.1", port), timeout=10).close()

        for i in range(N_TLS):
            resp = tls_call(tls_port, cert, "tls-%d" % i)
            check(resp.startswith(b"HTTP/1.1 200"), "TLS request %d answered inside TLS" % i)
        for i in range(N_H2):
            resp = h2_call(plain_port)
            check(resp[3:4] == b"\x04", "h2c preface %d answered with SETTINGS" % i)
        for i in range(N_PLAIN):
            resp = plain_call(plain_port, "plain-%d" % i)
            check(resp.startswith(b"HTTP/1.1 200"), "plain request %d answered" % i)

        plain_ids = {"plain-%d" % i for i in range(N_PLAIN)}
        spans = daemon.wait_spans(0, ids=plain_ids)
        check(plain_ids <= {s["request_id"] for s in spans},
              "the plain requests give spans (tracing works)")
        want = {"tls": N_TLS, "http2": N_H2, "malformed": 0}
        deadline = time.monotonic() + 10
        got = unreadable(daemon)
        while got != want and time.monotonic() < deadline:
            time.sleep(0.1)
            got = unreadable(daemon)
        st = daemon.status()
        check(got == want, "status counts the unreadable connections by reason (%s, want %s; "
              "drops %s, late events %d)" % (got, want, {k: v for k, v in st["drops"].items() if v},
                                             st["correlator"]["late_events"]))

        time.sleep(0.5)  # anything the unreadable connections could still make
        spans = daemon.spans()
        extra = [(s["request_id"], s["path"]) for s in spans if s["request_id"] not in plain_ids]
        check(not extra, "no span from a TLS or HTTP/2 connection (extra: %s)" % extra[:4])
        check("not-for-spans" not in json.dumps(spans), "no Authorization value in a span")
        r = subprocess.run([lc.REQTRACE, "--socket", daemon.sock, "status"], capture_output=True,
                           text=True, timeout=30)
        line = "%d connections unreadable: %d TLS, %d HTTP/2, 0 other" % (N_TLS + N_H2, N_TLS,
                                                                          N_H2)
        check(r.returncode == 0 and line in r.stdout, "reqtrace status says %r" % line)
        check(daemon.alive(), "daemon still running")
    finally:
        rc = daemon.stop() if daemon else 0
        server.kill()
        server.wait()
        err.close()
    check(rc == 0, "daemon exits 0 on SIGTERM (got %s)" % rc)
    lc.finish()


if __name__ == "__main__":
    main()
