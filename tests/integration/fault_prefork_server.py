#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A pre-fork inference server for fault_fork_exec.py: a master binds the
listening socket and forks workers that each accept on it (the kernel hands
each connection to one of them).

  --mode fork   workers are forked copies of the master;
  --mode exec   each forked worker execs this script again (a new image, the
                same pid) and serves on the inherited socket (--serve-fd).

SIGUSR1 to the master forks --workers more (after the daemon started: the
kernel sees them created). Each worker appends "REQUEST_ID PID" to --log for
every request it answers, so a test can tell which process served which
request. Responses are SSE streams of --tokens chunks (what reqtrace-load
expects). Prints "listening on 127.0.0.1:PORT" then "workers PID..." when ready.
"""

import argparse
import http.server
import json
import os
import signal
import socket
import sys
import time


class _Server:
    """What BaseHTTPRequestHandler needs of a server."""


def make_handler(log_fd, token_ms):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(n) or b"{}")
            rid = self.headers.get("x-request-id", "r%d" % time.monotonic_ns())
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("x-request-id", rid)
            self.end_headers()
            count = int(body.get("max_tokens", 4))
            for i in range(count):
                time.sleep(token_ms / 1000.0)
                ev = (b"data: " + json.dumps({"choices": [{"index": 0, "text": "t%d" % i}]})
                      .encode() + b"\n\n")
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            fin = (b"data: " + json.dumps({"choices": [], "usage": {"completion_tokens": count}})
                   .encode() + b"\n\n")
            done = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(fin), fin, len(done),
                                                                   done))
            self.wfile.flush()
            os.write(log_fd, ("%s %d\n" % (rid, os.getpid())).encode())

    return Handler


def serve(lsock, log_path, token_ms):
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    handler = make_handler(log_fd, token_ms)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    while True:
        conn, addr = lsock.accept()
        try:
            handler(conn, addr, _Server())
        except OSError:
            pass
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("fork", "exec"), default="fork")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--token-ms", type=float, default=2.0)
    ap.add_argument("--serve-fd", type=int, default=-1, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve_fd >= 0:  # an exec'd worker
        serve(socket.socket(fileno=a.serve_fd), a.log, a.token_ms)
        return 0

    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", a.port))
    lsock.listen(128)
    lsock.set_inheritable(True)
    workers = []

    def spawn(n):
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                if a.mode == "exec":
                    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__),
                                              "--log", a.log, "--token-ms", str(a.token_ms),
                                              "--serve-fd", str(lsock.fileno())])
                serve(lsock, a.log, a.token_ms)
                os._exit(0)
            workers.append(pid)
        print("workers " + " ".join(str(p) for p in workers), flush=True)

    def stop(*_):
        for p in workers:
            try:
                os.kill(p, signal.SIGTERM)
            except OSError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, lambda *_: spawn(a.workers))
    print("listening on 127.0.0.1:%d" % lsock.getsockname()[1], flush=True)
    spawn(a.workers)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
