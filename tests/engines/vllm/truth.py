# SPDX-License-Identifier: BSD-2-Clause
"""The test server's own truth log: one JSON line per event of a request.

Each line: {"rid": engine (internal) request id, "ev": name, "ns":
CLOCK_MONOTONIC ns (time.monotonic_ns(), the clock bpf_ktime_get_ns reads),
"proc": "api"|"engine", ...extra}. Both processes append to the same file
(O_APPEND, one write per line, so lines never interleave). merge() folds the
lines into one record per request.
"""

import json
import os
import threading


class Log:
    def __init__(self, path, proc):
        self.proc = proc
        self.lock = threading.Lock()
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else -1

    def ev(self, rid, name, ns, **extra):
        if self.fd < 0:
            return
        d = {"rid": rid, "ev": name, "ns": ns, "proc": self.proc}
        d.update(extra)
        line = (json.dumps(d, separators=(",", ":")) + "\n").encode()
        with self.lock:
            os.write(self.fd, line)

    def ev_many(self, evs):
        """Several events [(rid, name, ns, extra)] in one write."""
        if self.fd < 0 or not evs:
            return
        buf = b"".join((json.dumps(dict({"rid": rid, "ev": name, "ns": ns, "proc": self.proc},
                                        **extra), separators=(",", ":")) + "\n").encode()
                       for rid, name, ns, extra in evs)
        with self.lock:
            os.write(self.fd, buf)


def read(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def merge(lines):
    """{internal id: {"http_id", "events": {name: [ns...]}, "tokenize_cpu_ns",
    "detok_cpu_ns", ...}} from the raw lines."""
    out = {}
    for d in lines:
        r = out.setdefault(d["rid"], {"events": {}, "tokenize_cpu_ns": 0, "detok_cpu_ns": 0})
        r["events"].setdefault(d["ev"], []).append(d["ns"])
        if "start" in d and d["ev"] in ("sse_write", "end"):
            r.setdefault("brackets", {}).setdefault(d["ev"], []).append((d["start"], d["ns"]))
        if "http_id" in d:
            r["http_id"] = d["http_id"]
        if d["ev"] == "tokenize_end":
            r["tokenize_cpu_ns"] += d.get("cpu_ns", 0)
            r["tokenize_batch"] = d.get("batch")
            r["tokenize_tid"] = d.get("tid")
        if d["ev"] == "exec_cpu":
            r["exec_cpu_ns"] = r.get("exec_cpu_ns", 0) + d["cpu_ns"]
        if d["ev"] == "sse_write":
            r["sse_cpu_ns"] = r.get("sse_cpu_ns", 0) + d.get("cpu_ns", 0)
        if d["ev"] in ("loop_cpu", "batch_loop_cpu", "out_loop_cpu"):
            r[d["ev"] + "_ns"] = r.get(d["ev"] + "_ns", 0) + d.get("cpu_ns", 0)
        if d["ev"] == "detok":
            r["detok_cpu_ns"] += d.get("cpu_ns", 0)
    return out
