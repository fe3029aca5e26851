# SPDX-License-Identifier: BSD-2-Clause
"""Bad requests get 4xx and the server lives on; a client reset mid-stream is
survived (the request ends as aborted in the truth) and the next request is
served; SIGTERM during a request exits 0 with the truth flushed."""

import os
import socket
import time

import testbed_common as tc

MAX_BODY = 4096


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def bad_requests(port):
    cases = [
        ("malformed JSON", post(b"/v1/completions", b'{"prompt": "hi",'), 400),
        ("body not an object", post(b"/v1/completions", b'[1, 2]'), 400),
        ("prompt missing", post(b"/v1/completions", b'{"max_tokens": 4}'), 400),
        ("prompt not a string", post(b"/v1/completions", b'{"prompt": 5}'), 400),
        ("max_tokens 0", post(b"/v1/completions", b'{"prompt": "a", "max_tokens": 0}'), 400),
        ("max_tokens 2.5", post(b"/v1/completions", b'{"prompt": "a", "max_tokens": 2.5}'), 400),
        ("max_tokens over the limit",
         post(b"/v1/completions", b'{"prompt": "a", "max_tokens": 100000}'), 400),
        ("stream not a boolean", post(b"/v1/completions", b'{"prompt": "a", "stream": "yes"}'),
         400),
        ("body over max_body", post(b"/v1/completions", b'{"prompt": "' + b"a" * MAX_BODY
                                    + b'"}'), 413),
        ("unknown path", post(b"/v2/other", b"{}"), 404),
        ("GET on completions", b"GET /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        ("POST on health", post(b"/health", b"{}"), 405),
        ("malformed request line", b"GARBAGE\r\n\r\n", 400),
        ("bad header line", b"GET /health HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        ("bad Content-Length", b"POST /v1/completions HTTP/1.1\r\nContent-Length: x1\r\n\r\n",
         400),
        ("POST without Content-Length", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", 411),
        ("chunked request body",
         b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
        ("head too large", b"GET /health HTTP/1.1\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n", 431),
        ("x-request-id with a space",
         post(b"/v1/completions", b'{"prompt": "a"}', b"x-request-id: a b\r\n"), 400),
    ]
    for name, data, want in cases:
        got = tc.status_of(tc.http_raw(port, data))
        tc.check(got == want, "%s -> %s (want %d)" % (name, got, want))


def keep_alive_after_400(port):
    """A 400 for a bad body keeps the connection: the next request on it is served."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(post(b"/v1/completions", b"{oops") + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    deadline = time.monotonic() + 10
    while data.count(b"HTTP/1.1 ") < 2 and time.monotonic() < deadline:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    parts = data.split(b"HTTP/1.1 ")[1:]
    tc.check([p[:3] for p in parts] == [b"400", b"200"],
             "400 then 200 on one keep-alive connection (%s)" % [p[:3] for p in parts])


def main():
    d = tc.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    with tc.Testbed(["--scenario", tc.scenario("healthy"), "--port", "0", "--truth", truth_path,
                     "--set", "max_body=%d" % MAX_BODY, "--set", "decode_base_ms=2"]) as tb:
        bad_requests(tb.port)
        keep_alive_after_400(tb.port)
        tc.check(tb.alive(), "server alive after bad requests")
        tc.check(tc.status_of(tc.http_raw(tb.port, b"GET /health HTTP/1.1\r\n\r\n")) == 200,
                 "GET /health -> 200")

        # clients reset (RST) after 2 content events of 64
        rc, res, summ, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", 4, "--stream",
                                                  "--max-tokens", 64, "--abort-after-events", 2,
                                                  "--id-prefix", "abort-"])
        tc.check(rc == 0 and summ["aborted"] == 4, "4 clients reset mid-stream (rc %d)" % rc)
        tc.check(tb.alive(), "server alive after client resets")
        rc, res, summ, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", 4, "--stream",
                                                  "--max-tokens", 8, "--id-prefix", "after-"])
        tc.check(rc == 0 and summ["ok"] == 4, "the next requests are served (rc %d)" % rc)

        # SIGTERM while a long stream is in flight
        s = socket.create_connection(("127.0.0.1", tb.port), timeout=10)
        s.sendall(post(b"/v1/completions", b'{"prompt": "x", "stream": true, "max_tokens": 4000}',
                       b"x-request-id: inflight-1\r\n"))
        got = s.recv(4096)
        tc.check(got.startswith(b"HTTP/1.1 200"), "long stream started")
        t0 = time.monotonic()
        rc = tb.stop()
        tc.check(rc == 0, "SIGTERM mid-stream: exit status %s" % rc)
        tc.check(time.monotonic() - t0 < 5, "stopped within 5 s")
        s.close()
        tc.check("truth_errors 0" in tb.stderr(), "no truth write errors")

    truth = tc.read_truth(truth_path)
    tc.truth_ok_keys(truth)
    by_prefix = {}
    for t in truth:
        by_prefix.setdefault(t["request_id"].split("-")[0], []).append(t)
    aborted = by_prefix.get("abort", [])
    tc.check(len(aborted) == 4 and all(t["outcome"] == "aborted" for t in aborted),
             "the 4 reset requests are in the truth as aborted")
    tc.check(all(2 <= len(t["token_write_ns"]) < 64 and t["end_ns"] for t in aborted),
             "aborted requests stopped early (%s token writes)"
             % [len(t["token_write_ns"]) for t in aborted])
    after = by_prefix.get("after", [])
    tc.check(len(after) == 4 and all(t["outcome"] == "ok" for t in after),
             "the next 4 requests are ok in the truth")
    inflight = by_prefix.get("inflight", [])
    tc.check(len(inflight) == 1 and inflight[0]["outcome"] == "aborted",
             "the request in flight at SIGTERM is flushed to the truth as aborted")
    tc.finish()


if __name__ == "__main__":
    main()
