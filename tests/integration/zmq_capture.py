#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""ZeroMQ frames at the application boundary, live (docs/events.md "ZeroMQ").

A Python child (Debian's python3-zmq) sends known multi-frame messages from
one thread over a PUSH socket and receives them on another thread over a
PULL socket, once over ipc:// and once over tcp://, under reqtraced
--record. The frames: an empty one, 1 byte, 33 bytes (the most libzmq keeps
inline in the zmq_msg_t), 34 bytes (the first held behind a pointer), 4096
and 4097 bytes (one chunk and one more), 20 000 bytes (past the 16 KiB
capture bound: CUT) and, sent zero-copy, 70 000 bytes. Checks:

  bytes      the ZMQ_MSG records of each thread reassemble, frame by frame,
             to exactly the bytes sent (up to the bound), in order
  threads    sends on the sending thread, receives on the receiving one,
             each with its own socket pointer; never on libzmq's I/O thread
  flags      MORE on every frame but a message's last; CUT exactly on the
             frames past the bound, with frame_len the full length, the
             captured prefix 16 KiB in 4 records; the status counters agree
  loss       no LOSS record, no unreadable layout, no failed read
  messages   the correlator's assembler (zmq_asm) puts every message
             together with no desynchronisation
  peers      the child's PUSH to a PULL in the (untraced) test process, an
             outbound TCP connection that is not HTTP, is ZeroMQ plumbing,
             not a comm peer: status counts it in zmtp_conns, and
             peer_conns stays 0 (the child's own PUSH/PULL pairs are
             internal to the traced group and never peers anyway)

usage: zmq_capture.py                      (the test)
       zmq_capture.py --child OUT PEER_ADDR (the traced program; reads "go")
"""

import json
import os
import random
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CAP = 16384  # RT_ZMQ_CAP_MAX
CHUNK = 4096  # RT_ZMQ_CHUNK_MAX
EV_ZMQ, EV_LOSS, EV_END = 36, 50, 63
SEND, RECV = 1, 2
F_MORE, F_CUT, F_FAULT, F_LAYOUT = 1, 2, 4, 8
SIZES = [0, 1, 33, 34, 4096, 4097, 20000]
BIG = 70000  # sent zero-copy (pyzmq copies below 64 KiB)


def messages(transport):
    """The messages sent over `transport`: lists of (frame bytes, zero-copy)."""
    rnd = random.Random("zmq-capture-" + transport)
    small = [(rnd.randbytes(n), False) for n in SIZES]
    return [
        small[:3],  # three inline frames
        small[3:],  # pointer frames, one past the bound
        [(b"zc", False), (rnd.randbytes(BIG), True)],
        [(rnd.randbytes(5), False)],  # a one-frame message
    ]


def child(out, peer_addr):
    import threading
    import zmq

    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit(2)
    ctx = zmq.Context()
    result = {"pid": os.getpid(), "runs": []}
    for transport in ("ipc", "tcp"):
        push = ctx.socket(zmq.PUSH)
        pull = ctx.socket(zmq.PULL)
        if transport == "ipc":
            addr = "ipc://" + out + ".sock"
            push.bind(addr)
        else:
            port = push.bind_to_random_port("tcp://127.0.0.1")
            addr = "tcp://127.0.0.1:%d" % port
        pull.connect(addr)
        msgs = messages(transport)
        run = {"transport": transport, "push": push.underlying, "pull": pull.underlying,
               "t0": time.monotonic_ns()}
        got = []

        def sender():
            run["send_tid"] = threading.get_native_id()
            for m in msgs:
                for i, (data, zc) in enumerate(m):
                    push.send(data, zmq.SNDMORE if i < len(m) - 1 else 0, copy=not zc)

        def receiver():
            run["recv_tid"] = threading.get_native_id()
            for k in range(len(msgs)):
                got.append([bytes(f) for f in pull.recv_multipart(copy=k % 2 == 0)])

        ts = [threading.Thread(target=receiver), threading.Thread(target=sender)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        run["t1"] = time.monotonic_ns()
        run["received_ok"] = got == [[d for d, _ in m] for m in msgs]
        push.close(linger=1000)
        pull.close()
        result["runs"].append(run)
    # an outbound ZeroMQ connection to a process outside the traced group
    peer = ctx.socket(zmq.PUSH)
    peer.connect(peer_addr)
    peer.send_multipart([b"peer", b"x" * 100])
    peer.close(linger=5000)
    ctx.term()
    with open(out, "w") as f:
        json.dump(result, f)


def read_zmq(path, check):
    """ZMQ_MSG records of a recording, in file order, and the records lost."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"RTRACE\r\n", "recording %s has the .rtrace magic" % path)
    off = struct.unpack_from("<I", data, 12)[0]
    recs, lost, end = [], 0, False
    while off + 24 <= len(data):
        kind, size, _src, ts, pid, tid = struct.unpack_from("<HHIQII", data, off)
        if size < 24 or off + size > len(data):
            break
        if kind == EV_ZMQ:
            enter, msg, sock, flen, coff, n, d, fl = struct.unpack_from("<QQQIIHBB", data,
                                                                        off + 24)
            recs.append(dict(ts=ts, pid=pid, tid=tid, enter=enter, msg=msg, sock=sock,
                             frame_len=flen, offset=coff, len=n, dir=d, flags=fl,
                             data=data[off + 64:off + 64 + n], size=size))
        elif kind == EV_LOSS:
            lost += struct.unpack_from("<Q", data, off + 32)[0]
        elif kind == EV_END:
            end = True
        off += size
    check(end, "recording is complete (TRACE_END)")
    return recs, lost


def frames_of(recs, check, what):
    """Chunks grouped into frames (a thread's chunks of one call share enter_ns)."""
    frames, cur = [], None
    for r in recs:
        if cur is None or r["enter"] != cur["enter"] or r["offset"] == 0:
            cur = dict(enter=r["enter"], ts=r["ts"], frame_len=r["frame_len"], flags=r["flags"],
                       chunks=[], data=b"")
            frames.append(cur)
        cur["chunks"].append(r)
    bad = []
    for f in frames:
        pos = 0
        for c in sorted(f["chunks"], key=lambda c: c["offset"]):
            if c["offset"] != pos or c["frame_len"] != f["frame_len"] or \
               c["flags"] != f["flags"] or c["ts"] != f["ts"] or c["enter"] > c["ts"]:
                bad.append(c)
            f["data"] += c["data"]
            pos += c["len"]
    check(not bad, "%s: chunks are contiguous and agree on frame_len, flags and times (%d bad)"
          % (what, len(bad)))
    return frames


def check_run(run, recs, pid, check, log):
    tr = run["transport"]
    msgs = messages(tr)
    want = []
    for m in msgs:
        for i, (data, _) in enumerate(m):
            want.append((data, i < len(m) - 1))
    check(run["received_ok"], "%s: the receiver got every message intact" % tr)
    for d, tid, sock in ((SEND, run["send_tid"], run["push"]),
                         (RECV, run["recv_tid"], run["pull"])):
        what = "%s %s" % (tr, "send" if d == SEND else "recv")
        # libzmq reuses a closed socket's memory: a pointer names a socket only while it lives
        mine = [r for r in recs if r["pid"] == pid and r["dir"] == d and r["sock"] == sock and
                run["t0"] <= r["enter"] and r["ts"] <= run["t1"]]
        others = {r["tid"] for r in mine if r["tid"] != tid}
        check(mine and not others, "%s: %d records, all on the %s thread %d (others: %s)"
              % (what, len(mine), "sending" if d == SEND else "receiving", tid, others))
        frames = frames_of([r for r in mine if r["tid"] == tid], check, what)
        check(len(frames) == len(want), "%s: %d frames recorded, %d sent"
              % (what, len(frames), len(want)))
        bad = []
        for k, (f, (data, more)) in enumerate(zip(frames, want)):
            cut = len(data) > CAP
            nchunks = max(1, -(-min(len(data), CAP) // CHUNK))
            ok = (f["frame_len"] == len(data) and f["data"] == data[:CAP] and
                  bool(f["flags"] & F_MORE) == more and bool(f["flags"] & F_CUT) == cut and
                  not f["flags"] & (F_FAULT | F_LAYOUT) and len(f["chunks"]) == nchunks)
            if not ok:
                bad.append("frame %d: sent %d B more=%s; recorded frame_len %d, %d B, flags %#x, "
                           "%d chunks" % (k, len(data), more, f["frame_len"], len(f["data"]),
                                          f["flags"], len(f["chunks"])))
        for b in bad:
            log("  " + b)
        check(not bad, "%s: every frame's bytes, length, MORE and CUT as sent (%d frames, "
              "sizes %s)" % (what, len(want), sorted({len(x) for x, _ in want})))
        cut = [f for f in frames if f["flags"] & F_CUT]
        check(len(cut) == 2 and all(len(f["data"]) == CAP for f in cut)
              and sorted(f["frame_len"] for f in cut) == [20000, BIG],
              "%s: the 20 000 and %d B frames are CUT at %d B with their full frame_len"
              % (what, BIG, CAP))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    import live_common as lc
    import testbed_common as tb

    log, check = lc.log, lc.check
    lc.require_root()
    try:
        import zmq
    except ImportError:
        lc.cannot_run("%s has no zmq module: install python3-zmq (scripts/deps.sh)"
                      % sys.executable)

    d = tb.tmpdir()
    out, rec = os.path.join(d, "child.json"), os.path.join(d, "rec.rtrace")
    pctx = zmq.Context()
    peer = pctx.socket(zmq.PULL)
    peer_port = peer.bind_to_random_port("tcp://127.0.0.1")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", out,
                             "tcp://127.0.0.1:%d" % peer_port],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(proc.stdout.readline().strip() == "ready", "child imported zmq")
    daemon = lc.Daemon(["--pid", str(proc.pid), "--record", rec, "--capture-bodies"])
    try:
        deadline = time.monotonic() + 20
        st = daemon.status()
        while (st.get("zmq") or {}).get("libraries", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
            st = daemon.status()
        check((st.get("zmq") or {}).get("libraries", 0) >= 1,
              "reqtraced attached the zmq uprobes: %s" % st.get("zmq"))
        # pinned beside the tracepoints (docs/deploy.md, "Restart"): 4 more
        bpf = [x for x in st["sources"] if x["name"] == "bpf"][0]
        check(bpf["links_pinned"] >= 4 + 40,
              "the zmq uprobes are pinned with the tracepoints (%d pinned)" % bpf["links_pinned"])
        proc.stdin.write("go\n")
        proc.stdin.flush()
        code = proc.wait(120)
        check(code == 0, "child exited cleanly (%s)" % code)
        check(peer.poll(10000) and peer.recv_multipart() == [b"peer", b"x" * 100],
              "the untraced peer got the child's message")
        time.sleep(1.0)  # a drain or two
        st = daemon.status()
    finally:
        if proc.poll() is None:
            proc.kill()
        dcode = daemon.stop()
    check(dcode == 0, "reqtraced exits cleanly (%s)" % dcode)
    peer.close(linger=0)
    pctx.term()
    with open(out) as f:
        res = json.load(f)
    recs, lost = read_zmq(rec, check)
    check(lost == 0, "no records lost (%d)" % lost)
    for run in res["runs"]:
        check_run(run, recs, res["pid"], check, log)

    z, corr = st.get("zmq") or {}, st.get("correlator") or {}
    log("status zmq: %s" % z)
    # 2 cut frames per direction and transport
    check(z.get("cut") == 8 and z.get("cut_bytes") == 4 * ((20000 - CAP) + (BIG - CAP)),
          "status counts the 8 cut frames and their %d uncaptured bytes"
          % (4 * ((20000 - CAP) + (BIG - CAP))))
    check(z.get("layout") == 0 and z.get("fault") == 0 and z.get("calls_full") == 0,
          "no unknown layout, failed read or full call map")
    log("status correlator: zmtp_conns=%s peer_conns=%s" % (corr.get("zmtp_conns"),
                                                            corr.get("peer_conns")))
    check(corr.get("zmtp_conns", 0) >= 1,
          "the outbound ZMTP connection to the untraced peer is recognised as ZeroMQ")
    check(corr.get("peer_conns") == 0, "no connection is a comm peer")
    # 4 messages each way per transport and the one to the peer (pyzmq's GC
    # thread adds its own 8-byte messages for the zero-copy frames)
    log("status correlator: zmq_messages=%s zmq_desyncs=%s zmq_frames_discarded=%s"
        % (corr.get("zmq_messages"), corr.get("zmq_desyncs"), corr.get("zmq_frames_discarded")))
    check(corr.get("zmq_messages", 0) >= 17 and corr.get("zmq_desyncs") == 0 and
          corr.get("zmq_frames_discarded") == 0,
          "the correlator assembled every message (at least 17) without a desync")
    lc.finish()


if __name__ == "__main__":
    main()
