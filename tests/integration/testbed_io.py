# SPDX-License-Identifier: BSD-2-Clause
"""Every --io mode serves streamed and non-streamed completions correctly
(checked by reqtrace-load's own parser), the truth log is consistent with
what the client saw, and (when strace is installed) each mode uses exactly
its system calls: one write-family call per token except in split mode.
"""

import os
import re
import shutil

import testbed_common as tc

MODES = {
    # mode: (read calls, write calls)
    "readwrite": ({"read"}, {"write"}),
    "vector": ({"readv"}, {"writev"}),
    "socket": ({"recvfrom"}, {"sendto"}),
    "msg": ({"recvmsg"}, {"sendmsg"}),
    "split": ({"read"}, {"write"}),
}
TOKENS = 5
REQUESTS = 4
IO_CALLS = {"read", "readv", "recvfrom", "recvmsg", "write", "writev", "sendto", "sendmsg"}


def check_truth(mode, truth, results, stream):
    by_id = {r["request_id"]: r for r in results}
    for t in truth:
        c = by_id.get(t["request_id"])
        if not tc.check(c is not None, "%s: truth %s matches a client request"
                        % (mode, t["request_id"])):
            continue
        order = ["arrival_ns", "received_ns", "tokenize_start_ns", "tokenize_end_ns",
                 "enqueue_ns", "admitted_ns", "first_token_write_ns", "last_token_write_ns",
                 "end_ns"]
        vals = [t[k] for k in order]
        ok = all(v is not None for v in vals) and vals == sorted(vals)
        writes = t["token_write_ns"]
        ok = ok and writes == sorted(writes) and len(writes) == (TOKENS if stream else 1)
        ok = ok and writes[0] == t["first_token_write_ns"] and writes[-1] == t[
            "last_token_write_ns"]
        ok = ok and t["outcome"] == "ok" and t["comm_wait_ns"] == 0
        ok = ok and t["tokenizer_tid"] and t["step_tids"] and t["tokenizer_tid"] not in t[
            "step_tids"]
        # one CLOCK_MONOTONIC on both sides: the client sends before the server reads,
        # and a write starts before its bytes arrive (end_ns, the write's return, may
        # come after the client has the bytes)
        ok = ok and c["start_ns"] <= t["arrival_ns"] and t["last_token_write_ns"] <= c["end_ns"]
        if stream:
            ok = ok and t["first_token_write_ns"] <= c["ttft_ns"]
        if not tc.check(ok, "%s %s: truth stamps ordered and inside the client's view"
                        % (mode, "stream" if stream else "json")):
            tc.log("  truth %s\n  client %s" % (t, c))


def syscalls(path):
    """[(name, fd)] of the I/O calls strace saw on accepted connections.

    An interrupted call shows as "name(fd, <unfinished ...>" and later
    "<... name resumed>": the first line names it, so each call counts once.
    """
    conn_fds, calls = set(), []
    with open(path) as f:
        lines = f.readlines()
    for l in lines:
        # "accept4(3, ...) = 5" or, when threads interleave, "<... accept4 resumed>) = 5"
        m = re.match(r"^\d+\s+(?:<\.\.\. )?accept4\b.*\)\s+=\s+(\d+)", l)
        if m:
            conn_fds.add(int(m.group(1)))
    for l in lines:
        m = re.match(r"^\d+\s+(\w+)\((\d+),", l)
        if m and m.group(1) in IO_CALLS and int(m.group(2)) in conn_fds:
            calls.append((m.group(1), int(m.group(2))))
    return calls


def run_mode(mode, strace):
    d = tc.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    trace = os.path.join(d, "strace.txt")
    wrap, env = None, dict(os.environ)
    if strace:
        wrap = [strace, "-f", "-o", trace, "-e",
                "trace=accept4," + ",".join(sorted(IO_CALLS))]
        # LeakSanitizer cannot run under ptrace (sanitizer builds)
        opts = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "detect_leaks=0"
    with tc.Testbed(["--scenario", tc.scenario("healthy"), "--port", "0", "--io", mode,
                     "--truth", truth_path], wrap=wrap, env=env) as tb:
        rc1, res1, s1, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", REQUESTS,
                                                  "--stream", "--max-tokens", TOKENS,
                                                  "--id-prefix", "s-"])
        rc2, res2, s2, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", REQUESTS,
                                                  "--max-tokens", TOKENS, "--id-prefix", "j-",
                                                  "--keepalive", 1])
        tc.check(rc1 == 0 and s1["ok"] == REQUESTS, "%s: streamed requests pass the checker"
                 % mode)
        tc.check(rc2 == 0 and s2["ok"] == REQUESTS, "%s: non-streamed requests pass the checker"
                 % mode)
        tc.check(all(r["events"] == TOKENS for r in res1), "%s: %d content events per stream"
                 % (mode, TOKENS))
        tc.check(tb.stop() == 0, "%s: testbed exits 0" % mode)
    truth = tc.read_truth(truth_path)
    tc.check(len(truth) == 2 * REQUESTS, "%s: one truth line per request" % mode)
    tc.truth_ok_keys(truth)
    check_truth(mode, [t for t in truth if t["request_id"].startswith("s-")], res1, True)
    check_truth(mode, [t for t in truth if t["request_id"].startswith("j-")], res2, False)
    if not strace:
        return
    calls = syscalls(trace)
    names = {c[0] for c in calls}
    reads, writes = MODES[mode]
    tc.check(names == reads | writes, "%s: socket calls %s are exactly %s"
             % (mode, sorted(names), sorted(reads | writes)))
    nwrites = sum(1 for c in calls if c[0] in writes)
    # per streamed request: headers, one per token, one for usage+[DONE]+last chunk;
    # per JSON request: one. Split: headers, 3 per token, 6 pieces at the end (size,
    # usage event, CRLF, size, [DONE], CRLF + last chunk); JSON: headers and body.
    if mode == "split":
        want = REQUESTS * (1 + 3 * TOKENS + 6) + REQUESTS * 2
    else:
        want = REQUESTS * (TOKENS + 2) + REQUESTS
    tc.check(nwrites == want, "%s: %d write calls, expected %d" % (mode, nwrites, want))


def main():
    strace = shutil.which("strace")
    if not strace:
        tc.log("strace not installed: system calls are not checked")
    for mode in MODES:
        run_mode(mode, strace)
    tc.finish()


if __name__ == "__main__":
    main()
