#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-check of a generated fixture: recomputes the truth from the recorded
events alone, the way an outside observer (the correlator) has to, using the
definitions of tests/fixtures/README.md, and compares with the .truth.jsonl
the generator wrote from its own bookkeeping.

It takes from the truth file only what identifies a request (its connection,
start and end instants); every other value is derived from the records.

usage: check_truth.py FILE.rtrace FILE.truth.jsonl | --dir DIR   (exit 0: consistent)
"""
import bisect
import glob
import os
import json
import re
import struct
import sys

SWITCH, WAKING, ACCEPT, CONNECT, RECV, SEND, ARRIVAL = 1, 2, 10, 11, 12, 13, 16
ARR_LEFT_UNREAD = 0x1
MBEGIN, MEND, STEP_B, STEP_M, STEP_E = 20, 21, 22, 23, 24
TASK_NEW, PACK_CALL, PACK_REGION = 3, 34, 6
PACK_BATCH, PACK_TOKENIZE, PACK_DECODE, PACK_SEQ_RM = 35, 1, 3, 5
# enum rt_phase order (marker records carry the index); backlog is never marked
PHASES = ["receive", "queue", "tokenize", "prefill", "pre_first_token", "decode",
          "comm_wait", "postprocess", "other", "backlog"]
TEXT_RE = re.compile(rb'"(?:text|content)":"((?:[^"\\]|\\.)*)"')
TOL_NS = 1000  # equal splits round down to the ns on both sides
NEVER = 1 << 64  # an instant after every other
BRIEF_NS = 100000  # a handed burst shorter than this on CPU took a lock (RT_HANDOFF_BRIEF_NS)
# rule 1: phases whose MARK_BEGIN claims the calling thread (the others wait, or are
# engine work that step markers attribute)
CLAIMS = {"receive", "tokenize", "pre_first_token", "postprocess", "other"}


def read(path):
    b = open(path, "rb").read()
    if b[:8] != b"RTRACE\r\n":
        raise SystemExit(f"{path}: not an .rtrace file")
    off = struct.unpack_from("<I", b, 12)[0]
    recs = []
    while off < len(b):
        kind, size, src, ts, pid, tid = struct.unpack_from("<HHIQII", b, off)
        recs.append(dict(kind=kind, src=src, ts=ts, pid=pid, tid=tid, raw=b[off:off + size],
                         i=len(recs)))
        off += size
    for r in recs:
        decode(r)
    # the merge's order: ts, then arrival
    recs.sort(key=lambda r: (r["ts"], r["i"]))
    return recs


def cstr(b):
    return b.split(b"\0")[0].decode()


def decode(r):
    raw, k = r["raw"], r["kind"]
    if k == SWITCH:
        (r["prev_pid"], r["prev"], r["next_pid"], r["next"], r["state"],
         r["cpu"]) = struct.unpack_from("<IIIIII", raw, 24)
    elif k == WAKING:
        r["target_pid"], r["target"] = struct.unpack_from("<II", raw, 24)
    elif k in (ACCEPT, CONNECT):
        _, _, r["fd"], _ = struct.unpack_from("<Qqii", raw, 24)
        r["peer_port"] = struct.unpack_from("<H", raw, 24 + 24 + 24 + 16)[0]
    elif k in (RECV, SEND):
        r["enter"], r["ret"], r["fd"], _, _, hl, tl = struct.unpack_from("<QqiHHHH", raw, 24)
        r["data"] = raw[104:104 + hl + tl]
    elif k == ARRIVAL:
        r["data_ns"], r["established"], r["fd"], r["flags"] = struct.unpack_from("<QQiI", raw, 24)
    elif k in (MBEGIN, MEND):
        r["phase"], n = struct.unpack_from("<II", raw, 24)
        r["id"] = raw[32:32 + n].decode()
    elif k in (STEP_B, STEP_M, STEP_E):
        r["step"], r["n"], r["index"] = struct.unpack_from("<QII", raw, 24)
        r["id"] = cstr(raw[40:104])
    elif k == TASK_NEW:
        r["child_pid"], r["child"] = struct.unpack_from("<II", raw, 24)
    elif k == PACK_CALL:
        _, r["role"], r["ret"] = struct.unpack_from("<IHH", raw, 24)
        r["args"] = struct.unpack_from("<qqqq", raw, 32)
        r["retval"] = struct.unpack_from("<q", raw, 64)[0]
    elif k == PACK_BATCH:
        n, flags = struct.unpack_from("<I", raw, 36)[0], struct.unpack_from("<I", raw, 44)[0]
        r["flags"] = flags
        # (seq_id, n_tokens, pos_min, pos_max, n_logits)
        r["seqs"] = [struct.unpack_from("<iIiiI", raw, 48 + 24 * j) for j in range(min(n, 32))]


def content_events(data):
    """Content-bearing SSE events in a write's captured bytes."""
    n = 0
    for m in re.finditer(rb"data: ([^\n]*)", data):
        ev = m.group(1)
        if ev.startswith(b"[DONE]"):
            continue
        texts = TEXT_RE.findall(ev)
        if any(t for t in texts):
            n += 1
    return n


NUM = rb"(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"


def server_reported(data):
    """Numbers of the usage and timings objects, and llama.cpp's top-level counts."""
    out = {}
    for obj in (b"usage", b"timings"):
        for m in re.finditer(b'"' + obj + rb'":\{([^{}]*)\}', data):
            for k, v in re.findall(rb'"(\w+)":' + NUM, m.group(1)):
                out[f"{obj.decode()}.{k.decode()}"] = float(v)
    for k, v in re.findall(rb'"(tokens_predicted|tokens_evaluated)":' + NUM, data):
        out[k.decode()] = float(v)
    return out


def overlap(a0, a1, b0, b1):
    return max(0, min(a1, b1) - max(a0, b0))


def nearest_rank(sorted_gaps, q):
    k = max(1, -(-q * len(sorted_gaps) // 100))
    return sorted_gaps[k - 1]


class Check:
    def __init__(self, recs, truth):
        self.recs, self.truth, self.errors = recs, truth, []
        self.id_slot = {}  # request index -> the id_slot its response carried
        self.ids = {t["request_id"]: i for i, t in enumerate(truth)}
        self.fd_of = {}  # request index -> fd
        self.handler = {}  # request index -> tid
        ports = {}
        for r in recs:
            if r["kind"] == ACCEPT:
                ports[r["peer_port"]] = r["fd"]
        for i, t in enumerate(truth):
            port = int(t["conn"].split("->")[0].rsplit(":", 1)[1])
            self.fd_of[i] = ports[port]
        self.peer_fds = {r["fd"] for r in recs if r["kind"] == CONNECT}

    def err(self, rid, what, got, want):
        self.errors.append(f"{rid}: {what}: recomputed {got}, truth {want}")

    # ---- instants and events --------------------------------------------------------------

    def request_io(self):
        """(tid, ts, request) facts for rule 2, and per-request writes."""
        io, writes = [], {i: [] for i in range(len(self.truth))}
        by_fd = {}
        for i in range(len(self.truth)):
            by_fd.setdefault(self.fd_of[i], []).append(i)
        for v in by_fd.values():
            v.sort(key=lambda i: self.truth[i]["start_ns"])
        for r in self.recs:
            if r["kind"] not in (RECV, SEND) or r["fd"] not in by_fd or r["ret"] <= 0:
                continue
            reqs = by_fd[r["fd"]]
            if r["kind"] == RECV:
                for i in reqs:
                    t = self.truth[i]
                    if t["start_ns"] <= r["ts"] <= t["received_ns"]:
                        io.append((r["tid"], r["ts"], i))
                        self.handler[i] = r["tid"]
            else:
                # responses go out first-in first-out
                for i in reqs:
                    if r["ts"] <= self.truth[i]["end_ns"]:
                        io.append((r["tid"], r["ts"], i))
                        writes[i].append(r)
                        break
        return io, writes

    def check_events(self, writes):
        for i, t in enumerate(self.truth):
            rid, tw = t["request_id"], []
            for w in writes[i]:
                tw += [w["enter"]] * content_events(w["data"])
            if tw != t["token_writes_ns"]:
                self.err(rid, "token writes", tw, t["token_writes_ns"])
            body = b"".join(w["data"] for w in writes[i])
            m = re.search(rb'"id_slot":(\d+)', body)
            self.id_slot[i] = int(m.group(1)) if m else None
            rep = server_reported(body)
            want = {k: float(v) for k, v in t["server_reported"].items()}
            if rep != want:
                self.err(rid, "server_reported", rep, want)
            tok = rep.get("usage.completion_tokens", rep.get("timings.predicted_n"))
            if tok != (None if t["tokens_out"] is None else float(t["tokens_out"])):
                self.err(rid, "tokens_out", tok, t["tokens_out"])
            if len(tw) != t["events_out"]:
                self.err(rid, "events_out", len(tw), t["events_out"])
            if tw and (tw[0] != t["first_token_ns"] or tw[-1] != t["last_token_ns"]):
                self.err(rid, "first/last token", (tw[0], tw[-1]),
                         (t["first_token_ns"], t["last_token_ns"]))
            if t["outcome"] == "ok" and writes[i] and writes[i][-1]["ts"] != t["end_ns"]:
                self.err(rid, "end_ns", writes[i][-1]["ts"], t["end_ns"])
            if t["outcome"] == "aborted":
                zero = [r["ts"] for r in self.recs if r["kind"] == RECV and r["ret"] == 0 and
                        r["fd"] == self.fd_of[i] and r["ts"] >= t["start_ns"]]
                if not zero or zero[0] != t["end_ns"]:
                    self.err(rid, "abort seen", zero[:1], t["end_ns"])
            if len(tw) >= 2:
                g = sorted(b - a for a, b in zip(tw, tw[1:]))
                itl = [nearest_rank(g, 50), nearest_rank(g, 99), g[-1]]
                want = [round(t["itl_ms"][k] * 1e6) for k in ("p50", "p99", "max")]
                if itl != want:
                    self.err(rid, "itl", itl, want)
            exits = {r["ts"] for r in self.recs if r["kind"] == RECV and r["ret"] > 0 and
                     r["fd"] == self.fd_of[i]}
            if t["start_ns"] not in exits or t["received_ns"] not in exits:
                self.err(rid, "start/received are read exits", None, None)

    def end_enter(self, fd, end_ns):
        """Entry of the write on fd that exited at end_ns (a response's end), else end_ns."""
        for r in self.recs:
            if r["kind"] == SEND and r["fd"] == fd and r["ts"] == end_ns:
                return r["enter"]
        return end_ns

    def check_arrival(self):
        """arrival_ns from the ARRIVAL records (docs/spans.md, "Arrival")."""
        arr = {}  # (tid, fd, ts) -> the ARRIVAL written for that read
        for r in self.recs:
            if r["kind"] == ARRIVAL:
                arr[(r["tid"], r["fd"], r["ts"])] = r
        self.arrival = {}
        for i, t in enumerate(self.truth):
            rid, fd, s = t["request_id"], self.fd_of[i], t["start_ns"]
            read = [r for r in self.recs if r["kind"] == RECV and r["fd"] == fd and
                    r["ts"] == s and r["ret"] > 0]
            prev = [u for j, u in enumerate(self.truth) if self.fd_of[j] == fd and
                    u["start_ns"] < s or (self.fd_of[j] == fd and j < i and u["start_ns"] == s)]
            # the request's first byte is the read's first byte: every earlier
            # request on the connection was read completely before this read
            first = all(u["received_ns"] < s for u in prev)
            a = arr.get((read[0]["tid"], fd, s)) if read else None
            got, bound = None, False
            # not before the entry of the write that ended a previous response
            if a and first and a["data_ns"] and a["data_ns"] <= s and \
                    all(a["data_ns"] >= self.end_enter(fd, u["end_ns"]) for u in prev):
                got, bound = a["data_ns"], bool(a["flags"] & ARR_LEFT_UNREAD)
            if got != t["arrival_ns"]:
                self.err(rid, "arrival_ns", got, t["arrival_ns"])
            if bound != ("backlog_lower_bound" in t["flags"]):
                self.err(rid, "backlog_lower_bound", bound, t["flags"])
            self.arrival[i] = got

    # ---- scheduler: bursts and their owners ----------------------------------------------------

    def timelines(self):
        """Per traced tid: bursts [start, end, waker, pieces[(t0, t1, 'on'|'runq')]], sleeps."""
        th, pid = {}, self.truth[0]["pid"]

        def st(tid):
            return th.setdefault(tid, dict(bursts=[], sleeps=[], state=None, since=None))

        for r in self.recs:
            if r["kind"] == TASK_NEW and r["child_pid"] == pid and r["child"] in th:
                # a tid born again after it exited: a new thread, first seen at its switch-in
                th[r["child"]]["state"] = None
            elif r["kind"] == WAKING and r["target_pid"] == pid:
                s = st(r["target"])
                if s["state"] == "sleep":
                    s["sleeps"].append((s["since"], r["ts"]))
                    s["bursts"].append(dict(start=r["ts"], end=None, waker=r["tid"], pieces=[],
                                            wakes=[]))
                    s["state"], s["since"] = "runq", r["ts"]
            elif r["kind"] == SWITCH:
                # untraced threads show only where a traced one is the other side
                if r["prev"] and r["prev_pid"] == pid:
                    s = st(r["prev"])
                    if s["state"] == "on":
                        s["bursts"][-1]["pieces"].append((s["since"], r["ts"], "on"))
                        if r["state"] == 0:
                            s["state"], s["since"] = "runq", r["ts"]
                        else:
                            s["bursts"][-1]["end"] = r["ts"]
                            s["state"], s["since"] = "sleep", r["ts"]
                if r["next"] and r["next_pid"] == pid:
                    s = st(r["next"])
                    if s["state"] == "runq":
                        s["bursts"][-1]["pieces"].append((s["since"], r["ts"], "runq"))
                    elif s["state"] is None:  # first seen
                        s["bursts"].append(dict(start=r["ts"], end=None, waker=-2, pieces=[],
                                                wakes=[]))
                    s["state"], s["since"] = "on", r["ts"]
        for r in self.recs:
            if r["kind"] == WAKING and r["tid"] in th:
                b = self.burst_at(th[r["tid"]], r["ts"])
                if b:
                    b["wakes"].append((r["ts"], r["target"]))
        return th

    @staticmethod
    def burst_at(s, ts):
        for b in s["bursts"]:
            if b["start"] <= ts and (b["end"] is None or ts <= b["end"]):
                return b
        return None

    def marker_intervals(self):
        """Pairs of (id, phase) begin/end: (tid_begin, tid_end, t0, t1, phase, id)."""
        out, open_ = [], {}
        for r in self.recs:
            if r["kind"] == MBEGIN:
                open_[(r["id"], r["phase"])] = r
            elif r["kind"] == MEND and (r["id"], r["phase"]) in open_:
                b = open_.pop((r["id"], r["phase"]))
                out.append((b["tid"], r["tid"], b["ts"], r["ts"], r["phase"], r["id"]))
        for (rid, ph), b in open_.items():
            out.append((b["tid"], None, b["ts"], None, ph, rid))
        return out

    def step_intervals(self):
        """STEP_BEGIN to the STEP_END of that step on the same thread: (tid, t0, t1, members);
        an engine pack's steps (pack_join) too."""
        out, begin = list(getattr(self, "pk_steps", [])), {}
        for r in self.recs:
            if r["kind"] == STEP_B:
                begin[r["step"]] = (r, set())
            elif r["kind"] == STEP_M and r["step"] in begin and r["id"] in self.ids:
                begin[r["step"]][1].add(self.ids[r["id"]])
            elif r["kind"] == STEP_E and r["step"] in begin and \
                    begin[r["step"]][0]["tid"] == r["tid"]:
                b, members = begin.pop(r["step"])
                out.append((b["tid"], b["ts"], r["ts"], members))
        for b, members in begin.values():
            out.append((b["tid"], b["ts"], NEVER, members))
        return out

    def check_cpu(self, io):
        n = len(self.truth)
        ends = [t["end_ns"] for t in self.truth]
        first_io = {}
        for tid, ts, i in io:
            first_io[(tid, i)] = min(first_io.get((tid, i), ts), ts)

        def io_owners(tid, ts):
            """Rule 2 at an instant: I/O at or before it, request not ended."""
            return {i for i in range(n) if first_io.get((tid, i), NEVER) <= ts < ends[i]}

        th = self.timelines()
        # claiming MARK_BEGINs per thread: (ts, request); one for another request
        # ends the burst's hand-off there
        claim_at = {}
        for tb, _, t0, _, ph, rid in self.marker_intervals():
            if PHASES[ph] in CLAIMS and rid in self.ids:
                claim_at.setdefault(tb, []).append((t0, self.ids[rid]))

        engine_busy = self.engine_busy(ends)
        # an engine pack's calls (not a compute pool's regions) name the process's
        # engine threads: in a process that made them, a thread that has not by the
        # wakeup is the runtime's (rule 3)
        first_pack = {}
        for r in self.recs:
            if r["kind"] == PACK_BATCH or (r["kind"] == PACK_CALL and r["role"] != PACK_REGION):
                first_pack[r["tid"]] = min(first_pack.get(r["tid"], NEVER), r["ts"])
        proc_first_pack = min(first_pack.values(), default=NEVER)

        def runtime_thread(tid, ts):
            return proc_first_pack < ts <= first_pack.get(tid, NEVER) and not io_owners(tid, ts)

        def owns_handoff(b, ts):
            return b["handoff"] is not None and b["until"] > ts

        # rules 2-4 per burst, as {request: when the burst gained it}, the hand-off
        # apart (owned from the burst's start until "until"); wakers' bursts first
        for _, tid, k in sorted((b["start"], tid, k) for tid, s in th.items()
                                for k, b in enumerate(s["bursts"])):
            b = th[tid]["bursts"][k]
            start, end = b["start"], NEVER if b["end"] is None else b["end"]
            gain = {}
            for i in range(n):
                f = first_io.get((tid, i), NEVER)
                if f <= end and ends[i] > start:
                    gain[i] = max(f, start)
            b["handoff"], b["until"] = None, NEVER
            wb = (self.burst_at(th[b["waker"]], start)
                  if b["waker"] in th and not io_owners(tid, start)
                  and not runtime_thread(tid, start) else None)
            if wb:
                own = io_owners(b["waker"], start)
                if owns_handoff(wb, start) and ends[wb["handoff"]] > start:
                    own.add(wb["handoff"])
                if engine_busy(b["waker"], start):
                    own = set()  # a waker doing engine work hands over nothing
                if len(own) == 1:
                    b["handoff"] = next(iter(own))
                elif k and th[tid]["bursts"][k - 1]["handoff"] is not None:
                    # a brief handed burst (a lock taken) passes its hand-off on
                    pb = th[tid]["bursts"][k - 1]
                    on = sum(x1 - x0 for x0, x1, kind in pb["pieces"] if kind == "on")
                    if on < BRIEF_NS and ends[pb["handoff"]] > start and pb["until"] == NEVER:
                        b["handoff"] = pb["handoff"]
            if b["handoff"] is not None:
                b["until"] = min([t0 for t0, i in claim_at.get(tid, [])
                                  if start <= t0 <= end and i != b["handoff"] and ends[i] > t0],
                                 default=NEVER)
            for ts, target in b["wakes"]:
                p = io_owners(target, ts) if not runtime_thread(tid, ts) else set()
                if len(p) == 1:
                    i = p.pop()
                    gain[i] = min(gain.get(i, NEVER), ts)
            b["gain"] = gain

        def owners_at(tid, ts):
            """cpu.c's owners of a thread at ts: rule 2, and its burst's hand-off."""
            own = io_owners(tid, ts)
            b = self.burst_at(th[tid], ts) if tid in th else None
            if b and owns_handoff(b, ts) and ends[b["handoff"]] > ts:
                own.add(b["handoff"])
            return own

        self.pack_join(owners_at, ends)
        # rule 1: claiming phases on the thread of their BEGIN, steps on theirs
        iv = {}
        for tb, te, t0, t1, ph, rid in self.marker_intervals():
            if PHASES[ph] in CLAIMS and rid in self.ids:
                iv.setdefault(tb, []).append((t0, NEVER if t1 is None else t1,
                                              {self.ids[rid]}, False))
        for tid, t0, t1, mem in self.step_intervals():
            iv.setdefault(tid, []).append((t0, t1, mem, True))

        def cover(ivs, a, c):
            """Live requests of the intervals covering [a, c), and whether a step does."""
            m, step = set(), False
            for x0, x1, mem, is_step in ivs:
                if x0 <= a and x1 >= c:
                    live = {i for i in mem if ends[i] > a}
                    m |= live
                    step |= is_step and bool(live)
            return m, step

        def pieces(ivs, p0, p1):
            """[p0, p1) cut wherever rule 1's cover or an ownership can change."""
            xs = {p0, p1} | {x for a, c, _, _ in ivs for x in (a, c)} | set(ends)
            xs = sorted(x for x in xs if p0 <= x <= p1)
            return zip(xs, xs[1:])

        cpu, charged, shared = {}, set(), set()
        off = [0] * n
        pool_of = self.pool_bursts(th, ends)
        pool, pool_on = set(), [0] * n
        received = [t["received_ns"] for t in self.truth]
        queued = self.queue_intervals()

        def working_for(eng, a):
            """docs/spans.md: the engine's open step's live members, else the engine set."""
            for t0, t1, mem in self.steps_of.get(eng, []):
                if t0 <= a < t1:
                    live = {i for i in mem if ends[i] > a}
                    if live:
                        return live
            return {i for i in range(n) if received[i] <= a < ends[i] and
                    not any(q0 <= a < q1 for q0, q1 in queued.get(i, []))}

        def pool_charge(eng, tid, kind, p0, p1):
            xs = {p0, p1} | {x for t0, t1, _ in self.steps_of.get(eng, []) for x in (t0, t1)} | \
                set(received) | set(ends) | {x for v in queued.values() for iv in v for x in iv}
            xs = sorted(x for x in xs if p0 <= x <= p1)
            for a, c in zip(xs, xs[1:]):
                m = working_for(eng, a)
                # a pack's step splits by the tokens each member fed, else equally
                w = next((self.pk_tokens.get((eng, t0)) for t0, t1, _ in
                          self.steps_of.get(eng, []) if t0 <= a < t1), None)
                w = {i: (w[i] if w else 1) for i in m}
                for i in m:
                    share = (c - a) * w[i] // sum(w.values())
                    cpu[(i, tid, kind)] = cpu.get((i, tid, kind), 0) + share
                    charged.add((i, tid))
                    shared.add((i, tid))
                    pool.add((i, tid))
                    if kind == "on":
                        pool_on[i] += share

        def charge(owners, tid, kind, ns):
            if not owners or not ns:
                return
            for i in owners:
                cpu[(i, tid, kind)] = cpu.get((i, tid, kind), 0) + ns // len(owners)
                charged.add((i, tid))
                if len(owners) > 1:
                    shared.add((i, tid))

        for tid, s in th.items():
            ivs = iv.get(tid, [])
            for b in s["bursts"]:
                # unmarked time: segments cut at the end_ns of the burst's owners, each
                # charged to the owners it has at the segment's end
                start, end = b["start"], NEVER if b["end"] is None else b["end"]
                own = set(b["gain"]) | ({b["handoff"]} if b["handoff"] is not None else set())
                cuts = sorted({start, end} | {ends[i] for i in own if start < ends[i] < end} |
                              ({b["until"]} if start < b["until"] < end else set()))
                resid = {}
                eng = pool_of.get((tid, b["start"]))
                for p0, p1, kind in b["pieces"]:
                    for a, c in pieces(ivs, p0, p1):
                        m, _ = cover(ivs, a, c)
                        if m:
                            charge(m, tid, kind, c - a)
                        elif eng is not None:
                            pool_charge(eng, tid, kind, a, c)
                        else:
                            j = bisect.bisect_right(cuts, a) - 1
                            resid[(j, kind)] = resid.get((j, kind), 0) + c - a
                for (j, kind), ns in sorted(resid.items()):
                    lo, hi = cuts[j], cuts[j + 1]
                    m = {i for i, g in b["gain"].items() if g <= hi and ends[i] > lo}
                    if owns_handoff(b, lo) and ends[b["handoff"]] > lo:
                        m.add(b["handoff"])
                    charge(m, tid, kind, ns)
            for t0, t1 in s["sleeps"]:
                for a, c in pieces(ivs, t0, t1):
                    m, step = cover(ivs, a, c)
                    if not m:
                        m = io_owners(tid, a)
                    elif step:
                        m = set()
                    if len(m) == 1:
                        off[next(iter(m))] += c - a
        for i, t in enumerate(self.truth):
            rid, tcpu = t["request_id"], t["cpu"]
            got = {tid: {"on": cpu.get((i, tid, "on"), 0), "runq": cpu.get((i, tid, "runq"), 0)}
                   for j, tid in charged if j == i}
            want = {x["tid"]: x for x in tcpu["threads"]}
            if set(got) != set(want):
                self.err(rid, "cpu threads", sorted(got), sorted(want))
                continue
            for tid, g in got.items():
                w = want[tid]
                if abs(g["on"] - round(w["on_cpu_ms"] * 1e6)) > TOL_NS or \
                   abs(g["runq"] - round(w["runq_ms"] * 1e6)) > TOL_NS:
                    self.err(rid, f"cpu tid {tid}", g, (w["on_cpu_ms"], w["runq_ms"]))
                if ((i, tid) in shared) != w["shared"]:
                    self.err(rid, f"cpu tid {tid} shared", (i, tid) in shared, w["shared"])
                if ((i, tid) in pool) != w.get("pool", False):
                    self.err(rid, f"cpu tid {tid} pool", (i, tid) in pool, w.get("pool", False))
            if "pool_ms" in tcpu:
                want = round(tcpu["pool_ms"] * 1e6) if tcpu["pool_ms"] is not None else 0
                if abs(pool_on[i] - want) > TOL_NS:
                    self.err(rid, "pool_ms", pool_on[i], tcpu["pool_ms"])
            elif pool_on[i]:
                self.err(rid, "pool_ms", pool_on[i], None)
            if abs(off[i] - round(tcpu["off_cpu_ms"] * 1e6)) > TOL_NS:
                self.err(rid, "off_cpu", off[i], tcpu["off_cpu_ms"])
        self.th = th

    # ---- phases ---------------------------------------------------------------------------

    # ---- compute pools (docs/spans.md "Compute pools") -----------------------------------------

    def queue_intervals(self):
        """Per request, its open QUEUE marker intervals: out of the engine set."""
        out = {}
        for _, _, t0, t1, ph, rid in self.marker_intervals():
            if PHASES[ph] == "queue" and rid in self.ids:
                out.setdefault(self.ids[rid], []).append((t0, NEVER if t1 is None else t1))
        return out

    def engine_busy(self, ends):
        """busy(tid, ts): tid is doing engine work at ts (a step with live members, or a
        parallel region)."""
        self.steps_of = {}
        for tid, t0, t1, mem in self.step_intervals():
            self.steps_of.setdefault(tid, []).append((t0, t1, mem))
        regions, open_ = {}, {}
        for r in self.recs:
            if r["kind"] == PACK_CALL and r["role"] == PACK_REGION:
                if r["ret"] == 0:
                    open_.setdefault(r["tid"], []).append(r["ts"])
                elif open_.get(r["tid"]):
                    regions.setdefault(r["tid"], []).append((open_[r["tid"]].pop(), r["ts"]))
        for tid, v in open_.items():
            regions.setdefault(tid, []).extend((t0, NEVER) for t0 in v)

        def busy(tid, ts):
            return any(t0 <= ts < t1 and {i for i in mem if ends[i] > ts}
                       for t0, t1, mem in self.steps_of.get(tid, [])) or \
                any(t0 <= ts < t1 for t0, t1 in regions.get(tid, []))
        return busy

    def pool_bursts(self, th, ends):
        """{(tid, burst start): engine tid} for the bursts a compute pool does: a thread
        created by a thread in a step or a parallel region (for its life), a burst woken by
        one (for that burst); only bursts with no owner of their own (rules 2-4)."""
        busy = self.engine_busy(ends)
        life = {}
        for r in self.recs:
            if r["kind"] == TASK_NEW and r["child_pid"] == r["pid"] and busy(r["tid"], r["ts"]):
                life[r["child"]] = r["tid"]
        out = {}
        for tid, s in th.items():
            for b in s["bursts"]:
                if b["gain"] or b["handoff"] is not None:
                    continue
                if tid in life:
                    out[(tid, b["start"])] = life[tid]
                elif b["waker"] in th and b["waker"] != tid and busy(b["waker"], b["start"]):
                    out[(tid, b["start"])] = b["waker"]
        return out

    def comm_waits(self):
        """Blocked peer reads, each for the requests whose handlers the engine wakes next."""
        out = []
        for r in self.recs:
            if r["kind"] != RECV or r["fd"] not in self.peer_fds:
                continue
            s = self.th[r["tid"]]
            nxt = [b for b in s["bursts"] if b["start"] >= r["ts"] or
                   (b["start"] <= r["ts"] and (b["end"] is None or b["end"] >= r["ts"]))]
            owners = set()
            for b in nxt:
                if b["start"] < r["ts"]:
                    continue
                for ts, target in b["wakes"]:
                    owners |= {i for i, h in self.handler.items() if h == target and
                               self.truth[i]["start_ns"] <= ts <= self.truth[i]["end_ns"]}
                if owners:
                    break
            out.append((r["enter"], r["ts"], owners))
        return out

    # ---- engine packs (docs/packs.md ("Phases: the correlator's rules")) ---------------------------------------------

    def pack_join(self, owners_at, ends):
        """docs/packs.md ("Phases: the correlator's rules")'s rules from the pack records: tokenize calls to requests,
        sequences to requests (hand-off order, freed by SEQ_RM), steps and their members.
        Sets self.pk (per request) and self.pk_steps, self.pk_tokens ((tid, t0): {i: tokens})."""
        n = len(self.truth)
        rcv = [t["received_ns"] for t in self.truth]
        pk = {}  # request -> facts
        seqs = {}  # seq id -> dict(req, pos_max, rm)
        tok_pending, batch, open_step = {}, {}, {}
        tok_seen = False
        self.pk, self.pk_steps, self.pk_tokens = pk, [], {}

        def facts(i):
            return pk.setdefault(i, dict(seq=None, tok_calls=0, tok_from=0, tok_to=0, first=0,
                                         prefilled=False, prefill_steps=0, decode_steps=0,
                                         prompt_tokens=0, prefill_end=0, last_end=0))

        def unjoined(i):
            return i not in pk or (pk[i]["seq"] is None and not pk[i]["first"])

        def live(i, ts):
            return i is not None and ends[i] > ts

        def next_waiting(ts):
            c = [i for i in range(n) if rcv[i] <= ts and live(i, ts) and unjoined(i) and
                 (not tok_seen or (i in pk and pk[i]["tok_calls"]))]
            return min(c, key=lambda i: pk[i]["tok_from"] if tok_seen else rcv[i], default=None)

        def seq_request(e, logits, ts):
            sid, ntok, pmin, pmax, _ = e
            q = seqs.setdefault(sid, dict(req=None, pos_max=-1, rm=False))
            r = q["req"] if live(q["req"], ts) else None
            start = r is None
            prompt = logits == 0 or (logits == 1 and ntok > 1)
            if r is not None and pk[r]["prefilled"] and prompt:
                if (q["rm"] and pmin <= q["pos_max"]) or pmin == 0:
                    start = True
            if start and r is None and not prompt and pmin > 0 and not q["rm"]:
                start = False  # met in the middle of its decode: nobody's
            if start:
                r = next_waiting(ts)
                q["req"] = r
                if r is not None:
                    facts(r)["seq"] = sid
            q["rm"] = False
            q["pos_max"] = pmax if start else max(q["pos_max"], pmax)
            return r

        for r in self.recs:
            ts, tid = r["ts"], r["tid"]
            if r["kind"] == PACK_BATCH:
                batch[tid] = r
            if r["kind"] != PACK_CALL:
                continue
            if r["role"] == PACK_TOKENIZE:
                tok_seen = True
                if r["ret"] == 0:
                    own = owners_at(tid, ts)
                    c = [i for i in range(n) if rcv[i] <= ts and live(i, ts) and unjoined(i) and
                         (self.handler.get(i) == tid or i in own)]
                    tok_pending[tid] = (max(c, key=lambda i: rcv[i], default=None), ts)
                    continue
                i, t0 = tok_pending.pop(tid, (None, 0))
                if live(i, ts) and not facts(i)["first"] and ts >= t0:
                    k = pk[i]
                    if not k["tok_calls"] or t0 < k["tok_from"]:
                        k["tok_from"] = t0
                    k["tok_to"] = max(k["tok_to"], ts)
                    k["tok_calls"] += 1
            elif r["role"] == PACK_SEQ_RM and r["ret"] == 0:
                q = seqs.get(r["args"][0])
                if q is not None:
                    if r["args"][1] <= 0 and r["args"][2] < 0:
                        q["req"], q["pos_max"] = None, -1
                    q["rm"] = True
            elif r["role"] == PACK_DECODE and r["ret"] == 0:
                b = batch.pop(tid, None)
                mem = {}  # request -> [tokens, prefill, prefilled]
                for e in (b["seqs"] if b else []):
                    if not e[1]:
                        continue
                    i = seq_request(e, e[4], ts)
                    if i is None:
                        continue
                    pre = not pk[i]["prefilled"]
                    m = mem.setdefault(i, [0, False, False])
                    m[0] += e[1]
                    m[1] |= pre
                    m[2] |= pre and e[4] > 0
                open_step[tid] = (ts, mem)
            elif r["role"] == PACK_DECODE and tid in open_step:
                t0, mem = open_step.pop(tid)
                if r["retval"] == 0:
                    for i, (tok, pre, done) in mem.items():
                        if not live(i, ts):
                            continue
                        k = pk[i]
                        k["first"] = k["first"] or t0
                        if pre:
                            k["prefill_steps"] += 1
                            k["prompt_tokens"] += tok
                            k["prefill_end"] = ts
                            k["prefilled"] |= done
                        else:
                            k["decode_steps"] += 1
                        k["last_end"] = ts
                if mem:
                    self.pk_steps.append((tid, t0, ts, set(mem)))
                    self.pk_tokens[(tid, t0)] = {i: m[0] for i, m in mem.items()}

    def check_pack(self):
        """The span's pack object and steps_source (pack mode only)."""
        for i, t in enumerate(self.truth):
            if "pack" not in t:
                continue
            k = self.pk.get(i)
            got = None
            if k and (k["tok_calls"] or k["first"] or k["seq"] is not None):
                slot = self.id_slot.get(i)
                join = None if k["seq"] is None else "hand-off" if slot is None else \
                    "id_slot" if k["seq"] in (slot, slot + 1) else "mismatch"
                got = dict(seq=k["seq"], join=join,
                           tokenize_calls=k["tok_calls"], prefill_steps=k["prefill_steps"],
                           decode_steps=k["decode_steps"], prompt_tokens=k["prompt_tokens"])
            if got != t["pack"]:
                self.err(t["request_id"], "pack", got, t["pack"])
            src = "pack" if k and k["first"] else None
            if src != t.get("steps_source"):
                self.err(t["request_id"], "steps_source", src, t.get("steps_source"))

    def pack_phases(self, i, got, probe, cin):
        """docs/spans.md "Packs": tokenize, queue, prefill, decode replace pre_first_token
        and the probe decode; receive and postprocess stay unless they overlap them."""
        k, t = self.pk.get(i), self.truth[i]
        if not k or not k["first"]:
            return
        s, end = t["start_ns"], t["end_ns"]
        ivs, tok_end = [], t["received_ns"]
        if k["tok_calls"] and k["tok_to"] <= k["first"]:
            ivs.append(("tokenize", k["tok_from"], k["tok_to"]))
            tok_end = k["tok_to"]
        ivs.append(("queue", tok_end, k["first"]))
        ivs.append(("prefill", k["first"], k["prefill_end"]))
        ivs.append(("decode", k["prefill_end"],
                    k["last_end"] if k["decode_steps"] else k["prefill_end"]))
        ivs = [(p, min(max(a, s), end), min(max(b, min(max(a, s), end)), end)) for p, a, b in ivs]
        got["pre_first_token"] = None
        got["decode"] = None
        for p in ("receive", "postprocess"):
            if p in probe and any(overlap(a, b, c, d) for a, b in probe[p][1]
                                  for _, c, d in ivs):
                got[p] = None
        for p, a, b in ivs:
            got[p] = b - a
        ft, lt = t["first_token_ns"], t["last_token_ns"]
        if got["comm_wait"] is not None and ft:
            got["prefill"] = max(0, got["prefill"] - cin(t["received_ns"], ft))
            got["decode"] = max(0, got["decode"] - cin(ft, lt))

    def check_phases(self):
        comm = self.comm_waits()
        marks = self.marker_intervals()
        for i, t in enumerate(self.truth):
            rid = t["request_id"]
            s, rcv, end = t["start_ns"], t["received_ns"], t["end_ns"]
            ft, lt = t["first_token_ns"], t["last_token_ns"]
            cw = [(a, b) for a, b, o in comm if i in o]

            def cin(lo, hi):
                return sum(overlap(a, b, lo, hi) for a, b in cw)

            if ft is None:  # non-streamed: up to the first write of the response
                fw = min(w["enter"] for w in self.writes[i])
                probe = dict(receive=(rcv - s, [(s, rcv)]),
                             pre_first_token=(fw - rcv - cin(rcv, fw), [(rcv, fw)]),
                             postprocess=(end - fw, [(fw, end)]))
                hi = fw
            else:
                probe = dict(receive=(rcv - s, [(s, rcv)]),
                             pre_first_token=(ft - rcv - cin(rcv, ft), [(rcv, ft)]),
                             decode=(lt - ft - cin(ft, lt), [(ft, lt)]),
                             postprocess=(end - lt, [(lt, end)]))
                hi = lt
            if cw and cin(rcv, hi):
                probe["comm_wait"] = (cin(rcv, hi), cw)
            origin = self.arrival[i] or s
            if self.arrival[i]:
                probe["backlog"] = (s - origin, [(origin, s)])
            got = {p: None for p in PHASES}
            mine = []
            for tb, te, t0, t1, ph, mid in marks:
                if mid != rid:
                    continue
                t1 = end if t1 is None else t1
                a, b = max(t0, s), min(t1, end)
                mine.append((max(a, s), max(a, b)))
                name = PHASES[ph]
                got[name] = (got[name] or 0) + max(0, b - a)
            with_marks = {p for p in PHASES if got[p] is not None}
            for p, (v, ivs) in probe.items():
                if p in with_marks:
                    continue
                if p == "pre_first_token" and with_marks & {"queue", "tokenize", "prefill"}:
                    continue
                # comm wait lies inside prefill/decode by nature: it stays
                if p != "comm_wait" and any(overlap(a, b, c, d) for a, b in ivs
                                            for c, d in mine):
                    continue
                got[p] = v
            if "comm_wait" not in with_marks and got["comm_wait"] is not None and ft:
                if "prefill" in with_marks:
                    got["prefill"] -= cin(rcv, ft)
                if "decode" in with_marks:
                    got["decode"] -= cin(ft, lt)
            if not with_marks:
                self.pack_phases(i, got, probe, cin)
            got["other"] = (end - origin) - sum(v for p, v in got.items() if v is not None and
                                           p != "other")
            for p in PHASES:
                want = t["phases"][p + "_ms"]
                g = got[p]
                if (g is None) != (want is None) or \
                   (g is not None and abs(g - round(want * 1e6)) > 1):
                    self.err(rid, f"phase {p}", g, want)
            total = sum(v for v in t["phases"].values() if v is not None)
            if abs(total - t["duration_ms"]) > 0.001:
                self.err(rid, "phases sum", total, t["duration_ms"])

    def run(self):
        io, self.writes = self.request_io()
        self.check_arrival()
        self.check_events(self.writes)
        self.check_cpu(io)
        self.check_phases()
        self.check_pack()
        return self.errors


def check(rtrace, truth_path):
    truth = [json.loads(line) for line in open(truth_path)]
    errors = Check(read(rtrace), truth).run()
    for e in errors:
        print(f"{truth_path}: {e}")
    return len(errors)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--dir":
        pairs = sorted(glob.glob(os.path.join(sys.argv[2], "*.truth.jsonl")))
        if not pairs:
            print(f"check_truth.py: no *.truth.jsonl in {sys.argv[2]}", file=sys.stderr)
            return 1
        bad = sum(check(p[:-len(".truth.jsonl")] + ".rtrace", p) for p in pairs)
        print(f"check_truth.py: {len(pairs)} fixtures, {bad} mismatches")
        return 1 if bad else 0
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    return 1 if check(sys.argv[1], sys.argv[2]) else 0


if __name__ == "__main__":
    sys.exit(main())
