#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Engine packs under reqtraced (docs/packs.md): the llama.cpp pack on the
fake libllama (tests/fixtures/fake_llama), end to end.

Three targets: pack_llama_prog (linked against the fake libllama.so), the
fake llama-server with the functions linked in (.symtab only) and a
stripped copy of it. `reqtrace status` must say: llama-cpp-2025 matched and
attached on two files (12 uprobes each), llama-cpp-2024 matched by name on
the stripped one and failed with "stripped: no symbol tables". The
program's calls, recorded with --record and printed by `reqtrace replay
--events`, must be exactly its script: tokenize, a 40-token prefill batch
of sequence 0, sync, three two-sequence decode steps, a
llama_batch_get_one batch (pos/seq_id/logits NULL), seq_rm, token_to_piece.
A fourth target, an OpenMP program, gets the libgomp pack on the system's
libgomp: one region entry (2 threads asked) and return per parallel loop.
A directory with a bad pack file stops reqtraced's start, naming FILE:LINE.
Root (the daemon loads BPF); fails instead of skipping when CI=true and it
cannot run.
"""
import argparse
import tempfile
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402

log, check = lc.log, lc.check


def wait_status(d, pred, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        st = d.status()
        if pred(st) or time.monotonic() > deadline:
            return st
        time.sleep(0.2)


def pack_of(st, name):
    for p in (st.get("packs") or {}).get("list") or []:
        if p["name"] == name:
            return p
    return None


def expected(pid, tid, pk, logits_ptr):
    head = "pid=%d tid=%d" % (pid, tid)

    def call(role, ret, args=(0, 0, 0, 0), retval=0):
        s = "PACK_CALL %s pack=%d role=%s %s args=%s" % (
            head, pk, role, "return" if ret else "entry", ",".join(str(a) for a in args))
        return s + (" retval=%d" % retval if ret else "")

    def batch(n, flags, seqs):
        return "PACK_BATCH %s pack=%d n_tokens=%d n_read=%d flags=%s seqs=%d dropped=0 %s" % (
            head, pk, n, n, "%#x" % flags if flags else "0", len(seqs),
            " ".join("%d:%d:%d-%d:%d" % s for s in seqs))

    out = [call("tokenize", 0, (40, 64, 0, 0)), call("tokenize", 1, retval=11),
           batch(40, 0, [(0, 40, 0, 39, 1)]),
           call("decode", 0), call("decode", 1, retval=1040),
           call("sync", 0), call("sync", 1),
           call("sync", 0, (-1, 0, 0, 0)), call("sync", 1, retval=logits_ptr)]
    for k in range(3):
        out += [batch(2, 0, [(0, 1, 40 + k, 40 + k, 1), (1, 1, 12 + k, 12 + k, 1)]),
                call("decode", 0), call("decode", 1, retval=1002)]
    out += [batch(5, 0x7, [(0, 5, -1, -1, 1)]), call("decode", 0),
            call("decode", 1, retval=1005),
            call("seq_rm", 0, (1, -1, -1, 0)), call("seq_rm", 1, retval=1),
            call("detokenize", 0, (7, 0, 0, 0)), call("detokenize", 1, retval=1)]
    return out


def bad_pack_refused(tmp):
    """A bad pack file stops the start, naming its line; a missing directory does not."""
    bad = os.path.join(tmp, "bad-packs")
    os.makedirs(bad)
    with open(os.path.join(bad, "x.conf"), "w") as f:
        f.write("[pack]\nname = x\nversion = 1\nsymbols = f\n[probes]\nf = prefill\n")
    conf = os.path.join(tmp, "bad.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\npack_dir = %s\n" % bad)
    r = subprocess.run([lc.REQTRACED, "--config", conf, "--socket", os.path.join(tmp, "b.sock"),
                        "--no-inject"], capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "x.conf:6: f: unknown role 'prefill'" in r.stderr,
          "a bad pack refuses the start with FILE:LINE: rc %d, %s" % (r.returncode,
                                                                     r.stderr.strip()[-200:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--omp", required=True)
    ap.add_argument("--fakes", required=True)
    a = ap.parse_args()
    lc.require_root()
    for p in (a.prog, a.omp, os.path.join(a.fakes, "static", "llama-server"),
              os.path.join(a.fakes, "stripped", "llama-server")):
        if not os.access(p, os.X_OK):
            lc.cannot_run("%s is not built" % p)

    prog = subprocess.Popen([a.prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(prog.stdout.readline().strip() == "ready", "the fake engine is up")
    omp = subprocess.Popen([a.omp], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(omp.stdout.readline().strip() == "ready", "the OpenMP program is up")
    waiters = [subprocess.Popen([os.path.join(a.fakes, k, "llama-server"), "wait"],
                                stdin=subprocess.PIPE) for k in ("static", "stripped")]
    d = None
    try:

        tmp = tempfile.mkdtemp(prefix="rt-packs-")
        lc.tb._tmpdirs.append(tmp)
        bad_pack_refused(tmp)
        conf = os.path.join(tmp, "reqtraced.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\npack_dir = %s\n" % os.path.join(lc.SRC, "configs", "packs"))
        rec = os.path.join(tmp, "events.rtrace")
        args = ["--config", conf, "--record", rec, "--pid", str(prog.pid), "--pid", str(omp.pid)]
        for w in waiters:
            args += ["--pid", str(w.pid)]
        d = lc.Daemon(args)

        def settled(st):
            p25, p24 = pack_of(st, "llama-cpp-2025"), pack_of(st, "llama-cpp-2024")
            gomp = pack_of(st, "libgomp")
            return (p25 and p24 and gomp and p25["attached"] >= 2 and p24["failed"] >= 1 and
                    gomp["attached"] >= 1)

        st = wait_status(d, settled)
        packs = st.get("packs") or {}
        p25, p24 = pack_of(st, "llama-cpp-2025"), pack_of(st, "llama-cpp-2024")
        check(packs.get("loaded") == 3, "three packs loaded: %s" % packs.get("loaded"))
        check(packs.get("dir") == os.path.join(lc.SRC, "configs", "packs"), "pack_dir shown")
        check(p25 is not None and p25["matched"] == 2 and p25["attached"] == 2 and
              p25["failed"] == 0 and p25["probes"] == 24,
              "llama-cpp-2025 on libllama.so and the static llama-server, 12 uprobes each: %s"
              % p25)
        check(p24 is not None and p24["matched"] == 1 and p24["attached"] == 0 and
              p24["failed"] == 1 and p24["failures"] and
              p24["failures"][0]["reason"] == "stripped: no symbol tables" and
              p24["failures"][0]["file"].endswith("/stripped/llama-server"),
              "the stripped llama-server: matched by name, cannot attach: %s" % p24)
        gomp = pack_of(st, "libgomp")
        check(gomp is not None and gomp["matched"] == 1 and gomp["attached"] == 1 and
              gomp["failed"] == 0 and gomp["probes"] >= 2,
              "libgomp on the system's libgomp.so.1: %s" % gomp)
        check(packs.get("probes") == 24 + (gomp["probes"] if gomp else 0) and
              packs.get("batch_unreadable") == 0, "the uprobes add up, no unreadable batch")

        r = subprocess.run([lc.REQTRACE, "--socket", d.sock, "status"], capture_output=True,
                           text=True)
        check(r.returncode == 0 and
              "pack llama-cpp-2025 2025.06: 2 files matched, 2 attached (24 probes), 0 failed"
              in r.stdout and "/stripped/llama-server: stripped: no symbol tables" in r.stdout,
              "reqtrace status says it in words: %s" % [x for x in r.stdout.splitlines()
                                                        if "pack" in x or "stripped" in x])
        prog.stdin.write("go\n")
        prog.stdin.flush()
        done = prog.stdout.readline().split()
        check(len(done) == 4 and done[0] == "done" and done[3] == "0",
              "the script ran: %s" % done)
        tid, logits_ptr = int(done[1]), int(done[2])
        omp.stdin.write("go\n")
        omp.stdin.flush()
        odone = omp.stdout.readline().split()
        check(len(odone) == 2 and odone[0] == "done", "the OpenMP program ran: %s" % odone)
        time.sleep(1.5)  # drained on the daemon's timer
        check(d.stop() == 0, "reqtraced stops cleanly")
        r = subprocess.run([lc.REQTRACE, "replay", rec, "--events"], capture_output=True,
                           text=True)
        check(r.returncode == 0, "replay --events: exit %d %s" % (r.returncode, r.stderr))
        got = []
        for line in r.stdout.splitlines():
            m = re.match(r"^\d+ src=\d+ (PACK_\w+)\s+(pid=(\d+) .*)$", line)
            if m and int(m.group(3)) == prog.pid:
                got.append(m.group(1) + " " + m.group(2))
        want = expected(prog.pid, tid, p25["id"] if p25 else -1, logits_ptr)
        ogot = [line.split(" src=", 1)[1] for line in r.stdout.splitlines()
                if " PACK_" in line and " pid=%d " % omp.pid in line]
        gid = gomp["id"] if gomp else -1
        region = "PACK_CALL    pid=%d tid=%s pack=%d role=region " % (omp.pid, odone[1], gid)
        owant = [region + "entry args=2,0,0,0", region + "return args=0,0,0,0 retval=0"] * 3
        check([x.split(" ", 1)[1] for x in ogot] == owant,
              "libgomp: three regions of two threads on the OpenMP program's main thread: %s"
              % ogot)
        check(got == want, "the recorded PACK records are the script, exactly (%d of %d)"
              % (len(got), len(want)))
        if got != want:
            for i in range(max(len(got), len(want))):
                g = got[i] if i < len(got) else "-"
                w = want[i] if i < len(want) else "-"
                log(("   " if g == w else " ! ") + "got  " + g)
                if g != w:
                    log("   want " + w)
    finally:
        for p in [prog, omp] + waiters:
            try:
                p.stdin.close()
            except OSError:
                pass
            p.wait(10)
        if d:
            d.stop()
    lc.finish()


if __name__ == "__main__":
    main()
