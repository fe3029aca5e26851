# SPDX-License-Identifier: BSD-2-Clause
"""The engine-core process of the vLLM-style test server (vserver.py starts it).

Threads as in vLLM V1's EngineCoreProc (vllm/v1/engine/core.py at 364631ab):
- input thread: DEALER (identity = engine index, 2 bytes LE) connected to the
  API server's ROUTER; sends one empty frame first, then recv_multipart,
  decodes and puts (type, request) on a queue.Queue;
- main thread: the busy loop, drains the input queue, schedules (waiting ->
  running, a token budget with chunked prefill), runs a step that burns CPU in
  proportion to the tokens scheduled, and queues EngineCoreOutputs with outputs
  only for requests that got new tokens;
- output thread: encodes and sends on a PUSH socket connected to the API
  server's PULL.
libzmq's own I/O thread does the socket system calls.
"""

import collections
import os
import queue
import sys
import threading
import time
import traceback

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402
import vmsg  # noqa: E402


def burn_us(us):
    """Spins for `us` microseconds of this thread's CPU."""
    end = time.thread_time_ns() + int(us * 1000)
    x = 0
    while time.thread_time_ns() < end:
        x += 1
    return x


class Req:
    __slots__ = ("rid", "prompt", "max_tokens", "eos", "done_prefill", "out", "events",
                 "first_sched")

    def __init__(self, d):
        self.rid = d["request_id"]
        self.prompt = d["prompt_token_ids"] or []
        sp = d["sampling_params"] or {}
        self.max_tokens = sp.get("max_tokens", 16)
        self.eos = d["eos_token_id"]
        self.done_prefill = 0
        self.out = 0
        self.events = []
        self.first_sched = True


class Engine:
    def __init__(self, a):
        self.a = a
        self.tl = truth.Log(a.truth, "engine")
        self.ctx = zmq.Context(io_threads=1)
        self.inq = queue.Queue()
        self.outq = queue.Queue()
        self.waiting = collections.deque()
        self.running = []
        self.by_id = {}

    # --- input thread ---
    def input_thread(self):
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, (0).to_bytes(2, "little"))
        sock.connect(self.a.input_addr)
        sock.send(b"")  # the engine announces itself on the input socket
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        parent = os.getppid()
        while True:
            if not poller.poll(1000):
                if os.getppid() != parent:
                    os._exit(0)  # the API server is gone
                continue
            t0 = time.monotonic_ns()
            frames = sock.recv_multipart(copy=False)
            now = time.monotonic_ns()
            kind = frames[0].bytes
            if kind == vmsg.ADD:
                req = vmsg.decode_request(frames[1].buffer)
                self.tl.ev(req["request_id"], "engine_recv", now, br=(t0, now),
                           tid=threading.get_native_id(), bytes=len(frames[1].buffer))
                self.inq.put((kind, req))
            elif kind == vmsg.ABORT:
                ids = vmsg.unpackb(frames[1].buffer)
                for rid in ids:
                    self.tl.ev(rid, "engine_abort_recv", now)
                self.inq.put((kind, ids))

    # --- output thread ---
    def output_thread(self):
        sock = self.ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 4000)
        sock.connect(self.a.output_addr)
        while True:
            outs = self.outq.get()
            if outs is None:
                sock.send(vmsg.ENGINE_CORE_DEAD)
                return
            outs["engine_index"] = 0
            buf = vmsg.encode_outputs(outs)
            t0 = time.monotonic_ns()
            sock.send_multipart([buf], copy=False, track=True)
            now = time.monotonic_ns()
            tid = threading.get_native_id()
            for o in outs["outputs"]:
                self.tl.ev(o["request_id"], "engine_send", now, br=(t0, now), tid=tid,
                           bytes=len(buf), batch=len(outs["outputs"]))

    # --- busy loop (main thread) ---
    def add(self, d):
        r = Req(d)
        self.by_id[r.rid] = r
        now = time.monotonic()
        if self.a.log_stats:
            r.events.append(vmsg.event(vmsg.QUEUED, now))
        self.tl.ev(r.rid, "queued", int(now * 1e9), prompt_tokens=len(r.prompt))
        self.waiting.append(r)

    def abort(self, ids):
        for rid in ids:
            r = self.by_id.pop(rid, None)
            if r is None:
                continue
            if r in self.running:
                self.running.remove(r)
            elif r in self.waiting:
                self.waiting.remove(r)
            self.tl.ev(rid, "aborted", time.monotonic_ns())

    def schedule(self):
        """vLLM V1's scheduler in miniature: running requests first (decode 1 token,
        or their next prefill chunk), then waiting ones while batch and budget allow.
        Returns [(req, tokens)]."""
        budget = self.a.max_batched_tokens
        sched = []
        for r in self.running:
            if budget <= 0:
                break
            need = len(r.prompt) - r.done_prefill
            n = min(need, budget) if need > 0 else 1
            sched.append((r, n))
            budget -= n
        now = time.monotonic()
        while self.waiting and budget > 0 and len(self.running) < self.a.max_num_seqs:
            r = self.waiting.popleft()
            n = min(max(len(r.prompt), 1), budget)
            self.running.append(r)
            sched.append((r, n))
            budget -= n
            if self.a.log_stats:
                r.events.append(vmsg.event(vmsg.SCHEDULED, now))
            self.tl.ev(r.rid, "scheduled", int(now * 1e9))
        return sched

    def step(self, sched):
        t0 = time.monotonic_ns()
        ntok = sum(n for _, n in sched)
        # the scheduler/model-runner's Python work holds the GIL; the forward pass
        # waits on the GPU with the GIL released, as a real step's sync does
        burn_us(self.a.step_us + ntok * self.a.token_us)
        time.sleep((self.a.gpu_us + ntok * self.a.gpu_token_us) / 1e6)
        outputs = []
        for r, n in sched:
            if r.done_prefill < len(r.prompt):
                r.done_prefill += n
                if r.done_prefill < len(r.prompt):
                    self.tl.ev(r.rid, "prefill_chunk", t0, tokens=n)
                    continue  # no partial prefill outputs
            tok = 1000 + (hash((r.rid, r.out)) & 0x7FFF)
            r.out += 1
            o = {"request_id": r.rid, "new_token_ids": [tok]}
            if r.events:
                o["events"], r.events = r.events, []
            if r.out >= r.max_tokens:
                o["finish_reason"] = vmsg.LENGTH
            outputs.append(o)
        ts = time.monotonic()
        for o in outputs:
            kind = "first_output" if self.by_id[o["request_id"]].out == 1 else "output"
            self.tl.ev(o["request_id"], kind, int(ts * 1e9), step_start=t0,
                       finished=o.get("finish_reason") is not None)
            if o.get("finish_reason") is not None:
                r = self.by_id.pop(o["request_id"])
                self.running.remove(r)
        return outputs, ts

    def busy_loop(self):
        while True:
            block = not self.running and not self.waiting
            try:
                while True:
                    kind, x = self.inq.get(block=block, timeout=None)
                    block = False
                    if kind == vmsg.ADD:
                        self.add(x)
                    else:
                        self.abort(x)
            except queue.Empty:
                pass
            sched = self.schedule()
            if not sched:
                continue
            self.steps = getattr(self, "steps", 0) + 1
            if self.a.die_after_steps and self.steps > self.a.die_after_steps:
                raise RuntimeError("--die-after-steps %d: the busy loop dies"
                                   % self.a.die_after_steps)
            outputs, ts = self.step(sched)
            if not outputs and not self.a.log_stats:
                continue
            outs = {"outputs": outputs, "timestamp": ts}
            if self.a.log_stats:
                outs["scheduler_stats"] = {"num_running_reqs": len(self.running),
                                           "num_waiting_reqs": len(self.waiting)}
            if outputs or outs.get("scheduler_stats"):
                self.outq.put(outs)

    def run(self):
        threading.Thread(target=self.input_thread, name="EngineCoreInput", daemon=True).start()
        out = threading.Thread(target=self.output_thread, name="EngineCoreOutput", daemon=True)
        out.start()
        try:
            self.busy_loop()
        except Exception:
            traceback.print_exc()
            self.outq.put(None)  # ENGINE_CORE_DEAD on the output socket
            out.join(5)
            raise


def main(a):
    Engine(a).run()
