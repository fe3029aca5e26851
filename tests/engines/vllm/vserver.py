#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A protocol-faithful vLLM V1-style two-process test server.

Written from vllm-project/vllm at commit 364631ab07d283c4f08db0544a2653c5b415a427
(vllm/v1/engine/{__init__,core,core_client,async_llm,output_processor}.py,
vllm/v1/serial_utils.py, the OpenAI completion/chat handlers; our notes:
docs/engines/vllm-v1.md). Nothing of vLLM's code is copied; the wire bytes and
the threading are reproduced with Debian's python3-zmq and python3-msgpack.

API-server process (this one): an asyncio HTTP/1.1 server for POST
/v1/completions and /v1/chat/completions (stream and non-stream, vLLM's SSE
shapes); tokenization in a single-thread executor that micro-batches up to 32
prompts or 2 ms; a ROUTER (bind) that sends EngineCoreRequest frames
[identity, type, payload]; a PULL (bind) whose output-handler task decodes
EngineCoreOutputs and detokenizes per output on the event-loop thread.

Engine-core process (engine.py, a child started here): input thread, busy loop,
output thread.

usage: vserver.py --port N [--truth FILE] [--log-stats] [--tok-rounds R]
       [--detok-rounds R] [--step-us U] [--token-us U] [--gpu-us U]
       [--gpu-token-us U] [--max-num-seqs S]
       [--max-batched-tokens T] [--force-include-usage] [--omit-trailing-defaults]
       [--die-after-steps N] [--meter-loop]
Prints "listening on 127.0.0.1:PORT" and "engine pid N" when ready.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid

import zmq
import zmq.asyncio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402
import vmsg  # noqa: E402

EOS = 2
MAX_BATCH = 32
BATCH_WAIT_S = 0.002
MODEL = "toy-vllm"


def random_uuid():
    return uuid.uuid4().hex


# ---- a toy tokenizer that does a measurable amount of work per char ----
def tokenize(text, rounds):
    ids = []
    h = 0
    for i, ch in enumerate(text):
        c = ord(ch)
        for _ in range(rounds):
            h = (h * 1000003 ^ c) & 0xFFFFFFFF
        if i % 4 == 3:
            ids.append(3 + h % 32000)
            h = 0
    if h or not ids:
        ids.append(3 + h % 32000)
    return ids


def detokenize(ids, rounds):
    parts = []
    for t in ids:
        h = t
        for _ in range(rounds):
            h = (h * 2654435761 + 7) & 0xFFFFFFFF
        parts.append(" w%d" % (h % 997))
    return "".join(parts)


class MicrobatchTokenizer:
    """vLLM's AsyncMicrobatchTokenizer in miniature: encode calls are queued,
    batched up to 32 or 2 ms after the first, and run on one executor thread."""

    def __init__(self, tl, rounds):
        self.tl = tl
        self.rounds = rounds
        self.q = asyncio.Queue()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.task = None
        # with --meter-loop: (the thread's CPU clock at the last batch's run start, [(rid, own
        # CPU)]) until the next run ends its window (log_exec)
        self.prev = None

    async def encode(self, rid, text):
        if self.task is None:
            self.meter = Meter()
            self.task = asyncio.get_running_loop().create_task(self.meter.wrap(self.batcher()))
        fut = asyncio.get_running_loop().create_future()
        self.q.put_nowait((rid, text, fut))
        return await fut

    async def batcher(self):
        loop = asyncio.get_running_loop()
        m0 = self.meter.now()
        while True:
            batch = [await self.q.get()]
            deadline = loop.time() + BATCH_WAIT_S
            while len(batch) < MAX_BATCH:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self.q.get(), timeout))
                except asyncio.TimeoutError:
                    break
            res = await loop.run_in_executor(self.pool, self.run, [(r, t) for r, t, _ in batch])
            for (_, _, fut), ids in zip(batch, res):
                if not fut.done():
                    fut.set_result(ids)
            # the event loop's batching work since the last batch, split among its members
            cpu, m0 = self.meter.now() - m0, self.meter.now()
            for rid, _, _ in batch if Meter.on else ():
                self.tl.ev(rid, "batch_loop_cpu", time.monotonic_ns(), cpu_ns=cpu // len(batch))

    def run(self, items):
        """On the executor thread: the batch's thread CPU is split among its
        members in proportion to the CPU each one's own tokenization took."""
        tid = threading.get_native_id()
        b0, c0 = time.monotonic_ns(), time.thread_time_ns()
        if Meter.on and self.prev is not None:
            # the last batch's window ends here (exec_cpu, below)
            self.log_exec(tid, c0)
        res, own = [], []
        for rid, text in items:
            m0 = time.thread_time_ns()
            res.append(tokenize(text, self.rounds))
            own.append(max(time.thread_time_ns() - m0, 1))
        b1, c1 = time.monotonic_ns(), time.thread_time_ns()
        total = sum(own)
        members = [rid for rid, _ in items]
        for (rid, _), w in zip(items, own):
            self.tl.ev(rid, "tokenize_start", b0, tid=tid)
            self.tl.ev(rid, "tokenize_end", b1, tid=tid, cpu_ns=(c1 - c0) * w // total,
                       own_cpu_ns=w, batch=len(items), batch_cpu_ns=c1 - c0,
                       members=members if len(members) <= MAX_BATCH else None)
        if Meter.on:
            self.prev = (c0, list(zip(members, own)))
        return res

    def log_exec(self, tid, c_next):
        """exec_cpu for the last batch's members: the executor thread's whole
        CPU from the start of that batch's run to the start of the next one
        (its run, its truth lines, its results' hand-back, the return to the
        work queue), split by own tokenize CPU. The windows tile the thread's
        CPU; each holds the work the thread did for that batch, as the
        thread's bursts do (a window ending at a run's end gave a batch's
        logging and hand-back to the next batch: a batch of 15 after one of 1
        was +8%, the one after it -29%). Written in one write, at the next
        run's start."""
        c_start, mem = self.prev
        whole, total = c_next - c_start, sum(w for _, w in mem)
        now = time.monotonic_ns()
        self.tl.ev_many([(rid, "exec_cpu", now, {"tid": tid, "cpu_ns": whole * w // total})
                         for rid, w in mem])
        self.prev = None


class LoopAcct:
    """The event loop's CPU outside the metered task steps (selecting,
    reader callbacks: the sockets' reads, pyzmq's event handling, the
    executor's wake-up) goes to the meters whose steps ran next: from one
    iteration with metered steps to the next, the loop's unmetered CPU is
    split among that iteration's meters by their step CPU. An iteration's
    callbacks only make tasks ready for the next one, so what a read cost
    lands on the step that consumes it."""

    def __init__(self):
        self.pending, self.ran = 0, {}

    def install(self, loop):
        orig = loop._run_once

        def run_once():
            c0 = time.thread_time_ns()
            orig()
            d = time.thread_time_ns() - c0
            stepped = sum(self.ran.values())
            self.pending += d - stepped
            if stepped > 0:
                for m, c in self.ran.items():
                    m.total += self.pending * c // stepped
                self.pending, self.ran = 0, {}
        loop._run_once = run_once


ACCT = LoopAcct()


class Meter:
    """The thread CPU of the coroutine steps it drives (the event loop's work
    for one connection: HTTP parsing, the handler, the ADD send, SSE writes),
    plus its share of the loop's unmetered CPU (LoopAcct). Off unless
    --meter-loop: then wrap() returns the coroutine itself and now() is 0."""

    on = False

    def __init__(self):
        self.total, self.c0 = 0, None

    def now(self):
        if not Meter.on:
            return 0
        return self.total + (time.thread_time_ns() - self.c0 if self.c0 is not None else 0)

    def _stop(self):
        d = time.thread_time_ns() - self.c0
        self.total += d
        ACCT.ran[self] = ACCT.ran.get(self, 0) + d
        self.c0 = None

    @types.coroutine
    def _drive(self, coro):
        send, exc = None, None
        while True:
            self.c0 = time.thread_time_ns()
            try:
                fut = coro.throw(exc) if exc is not None else coro.send(send)
            except StopIteration as e:
                self._stop()
                return e.value
            except BaseException:
                self._stop()
                raise
            self._stop()
            try:
                send, exc = (yield fut), None
            except BaseException as e:  # cancellation goes into the coroutine
                send, exc = None, e

    async def _run(self, coro):
        return await self._drive(coro)

    def wrap(self, coro):
        """The coroutine metered, or itself when metering is off (the
        server's tasks then are exactly what they are without a meter)."""
        return self._run(coro) if Meter.on else coro


class ReqState:
    __slots__ = ("rid", "index", "q", "prompt_tokens", "out_tokens", "text")

    def __init__(self, rid, index, q):
        self.rid, self.index, self.q = rid, index, q
        self.prompt_tokens = 0
        self.out_tokens = 0
        self.text = []


class StampedSocket(zmq.Socket):
    """The synchronous shadow an asyncio socket makes its libzmq calls through
    (pyzmq's `_shadow_sock`), stamping each call: the truth's bracket of the
    zmq_msg_send/zmq_msg_recv calls the tracer's probes see. A stamp taken
    after `await` returns is late by whatever ran, or preempted the thread,
    between the call and the coroutine's resume; this bracket is not.
    Sends are keyed by the frame list's id (several tasks send), the receive
    is the last one (one task receives)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        # the sugar Socket's __setattr__ takes names as socket options
        object.__setattr__(self, "rt_calls", {"sent": {}, "recv": None})

    @classmethod
    def install(cls, asock):
        asock._shadow_sock = cls.shadow(asock.underlying)
        return asock._shadow_sock.rt_calls

    def send_multipart(self, msg_parts, *a, **k):
        t0 = time.monotonic_ns()
        r = super().send_multipart(msg_parts, *a, **k)
        self.rt_calls["sent"][id(msg_parts)] = (t0, time.monotonic_ns())
        return r

    def recv_multipart(self, *a, **k):
        t0 = time.monotonic_ns()
        r = super().recv_multipart(*a, **k)
        self.rt_calls["recv"] = (t0, time.monotonic_ns())
        return r


class ApiServer:
    def __init__(self, a):
        self.a = a
        self.tl = truth.Log(a.truth, "api")
        self.sync_ctx = zmq.Context(io_threads=2)
        self.ctx = zmq.asyncio.Context.shadow(self.sync_ctx.underlying)
        self.reqs = {}
        self.identity = (0).to_bytes(2, "little")
        self.dead = False

    # ---- startup: bind, start the engine, handshake ----
    def start_engine(self):
        d = self.ipc_dir = tempfile.mkdtemp(prefix="vserver-")
        self.input_addr = "ipc://%s/input.ipc" % d
        self.output_addr = "ipc://%s/output.ipc" % d
        hs_addr = "ipc://%s/handshake.ipc" % d
        hs = self.sync_ctx.socket(zmq.ROUTER)
        hs.bind(hs_addr)
        self.input = self.ctx.socket(zmq.ROUTER)
        self.input.bind(self.input_addr)
        self.input_calls = StampedSocket.install(self.input)
        self.output = self.ctx.socket(zmq.PULL)
        self.output.bind(self.output_addr)
        self.output_calls = StampedSocket.install(self.output)
        cmd = [sys.executable, os.path.abspath(__file__), "--role", "engine",
               "--handshake", hs_addr, "--input-addr", self.input_addr,
               "--output-addr", self.output_addr, "--step-us", str(self.a.step_us),
               "--token-us", str(self.a.token_us), "--gpu-us", str(self.a.gpu_us),
               "--gpu-token-us", str(self.a.gpu_token_us), "--max-num-seqs", str(self.a.max_num_seqs),
               "--max-batched-tokens", str(self.a.max_batched_tokens)]
        if self.a.truth:
            cmd += ["--truth", self.a.truth]
        if self.a.log_stats:
            cmd.append("--log-stats")
        if self.a.omit_trailing_defaults:
            cmd.append("--omit-trailing-defaults")
        if self.a.die_after_steps:
            cmd += ["--die-after-steps", str(self.a.die_after_steps)]
        self.engine = subprocess.Popen(cmd)
        # HELLO -> init message -> READY, as msgpack maps on the handshake socket
        ident, msg = hs.recv_multipart()
        assert vmsg.unpackb(msg)["status"] == "HELLO"
        hs.send_multipart([ident, vmsg.packb({"addresses": {"inputs": [self.input_addr],
                                                            "outputs": [self.output_addr]},
                                              "parallel_config": {}})])
        ident, msg = hs.recv_multipart()
        assert vmsg.unpackb(msg)["status"] == "READY"
        hs.close()

    async def wait_engine_identity(self):
        ident, empty = await self.input.recv_multipart()
        assert ident == self.identity and empty == b""

    # ---- engine outputs (the output-handler task, event-loop thread) ----
    def output_handler(self):
        meter = Meter()
        return meter.wrap(self.outputs(meter))

    async def outputs(self, meter):
        tid = threading.get_native_id()
        k0 = meter.now()
        while True:
            frames = await self.output.recv_multipart(copy=False)
            t_recv = time.monotonic_ns()
            recv_br = self.output_calls["recv"]
            if len(frames) == 1 and frames[0].bytes == vmsg.ENGINE_CORE_DEAD:
                self.dead = True
                for st in list(self.reqs.values()):
                    st.q.put_nowait((st, None, "error", 0))
                continue
            outs = vmsg.decode_outputs(frames[0].buffer)
            n = len(outs["outputs"])
            mine = []
            for o in outs["outputs"]:
                st = self.reqs.get(o["request_id"])
                if st is None:
                    continue
                c0, m0 = time.thread_time_ns(), time.monotonic_ns()
                text = detokenize(o["new_token_ids"], self.a.detok_rounds)
                c1, m1 = time.thread_time_ns(), time.monotonic_ns()
                self.tl.ev(st.rid, "detok", m1, start=m0, cpu_ns=c1 - c0, recv_ns=t_recv,
                           recv_br=recv_br, tid=tid, batch=n, engine_ts=outs["timestamp"])
                fr = o["finish_reason"]
                fin = None if fr is None else ("stop", "length", "abort", "error")[fr]
                st.out_tokens += len(o["new_token_ids"])
                st.q.put_nowait((st, text, fin, len(o["new_token_ids"])))
                if fin is not None:
                    self.reqs.pop(st.rid, None)
                mine.append((st.rid, c1 - c0))
            # the loop's work on this message (receive, decode, hand-out) but
            # detokenize, logged apart: split among the outputs it carried
            cpu, k0 = meter.now() - k0, meter.now()
            rest = cpu - sum(d for _, d in mine)
            for rid, _ in mine if Meter.on else ():
                self.tl.ev(rid, "out_loop_cpu", time.monotonic_ns(), cpu_ns=rest // len(mine))

    async def send_add(self, rid, external, ids, max_tokens, stream, temperature):
        req = {"request_id": rid, "prompt_token_ids": ids, "mm_features": None,
               "sampling_params": vmsg.sampling_params(
                   max_tokens, vmsg.DELTA if stream else vmsg.FINAL_ONLY, EOS, temperature),
               "pooling_params": None, "eos_token_id": EOS, "arrival_time": time.time(),
               "lora_request": None, "cache_salt": None, "data_parallel_rank": None,
               "external_req_id": external}
        payload = vmsg.encode_request(req)
        frames = [self.identity, vmsg.ADD, payload]
        t0 = time.monotonic_ns()
        await self.input.send_multipart(frames, copy=False)
        done = time.monotonic_ns()
        self.tl.ev(rid, "handed", t0, done=done, br=self.input_calls["sent"].pop(id(frames), None),
                   tid=threading.get_native_id(), bytes=len(payload))

    async def send_abort(self, rids):
        if rids:
            await self.input.send_multipart([self.identity, vmsg.ABORT, vmsg.encode_abort(rids)],
                                            copy=False)

    # ---- HTTP ----
    def handle_conn(self, reader, writer):
        meter = Meter()
        return meter.wrap(self.conn(reader, writer, meter))

    async def conn(self, reader, writer, meter):
        # the loop's read of each chunk, stamped in the same loop iteration as
        # its recv() (the protocol's data_received): the tracer's "received" is
        # that read's return, while the coroutine below resumes only when the
        # loop gets to it, later under load
        proto = writer.transport.get_protocol()
        fed = proto.data_received
        last_read = [0]
        # and a stamp before the read: the transport's read callback does the
        # recv() and then data_received, so [before, data_received] brackets
        # the read system call (asyncio's selector transport, Python 3.11;
        # without that attribute the bracket is absent)
        tr = writer.transport
        read_cb = getattr(tr, "_read_ready_cb", None)
        read_br = [None, None]

        def before_read():
            read_br[0] = time.monotonic_ns()
            read_cb()
        if read_cb is not None:
            tr._read_ready_cb = before_read

        def stamped(data):
            last_read[0] = time.monotonic_ns()
            read_br[1] = (read_br[0], last_read[0]) if read_br[0] else None
            fed(data)
        proto.data_received = stamped
        try:
            while True:
                m0 = meter.now()
                line = await reader.readline()
                if not line:
                    return
                t_first = time.monotonic_ns()
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, v = h.decode("latin-1").split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                t_recv = time.monotonic_ns()
                t_read = last_read[0] or t_recv
                t_read_br = read_br[1]
                keep = headers.get("connection", "keep-alive").lower() != "close"
                if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
                    await self.respond(writer, 404, {"error": "not found"}, keep)
                else:
                    await self.serve(writer, path, headers, json.loads(body), t_first, t_recv,
                                     keep, meter, m0, t_read, t_read_br)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def respond(self, writer, code, obj, keep):
        body = json.dumps(obj).encode()
        writer.write(("HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                      "connection: %s\r\n\r\n" % (code, "OK" if code == 200 else "Error",
                                                 len(body), "keep-alive" if keep else "close")
                      ).encode() + body)
        await writer.drain()

    async def serve(self, writer, path, headers, body, t_first, t_recv, keep, meter, m0,
                    t_read=None, t_read_br=None):
        chat = path.endswith("chat/completions")
        base = headers.get("x-request-id") or random_uuid()
        stream = bool(body.get("stream"))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        include_usage = self.a.force_include_usage or bool(
            (body.get("stream_options") or {}).get("include_usage"))
        if chat:
            request_id = "chatcmpl-%s" % base
            prompts = ["".join("<|%s|>%s\n" % (m.get("role", "user"), m.get("content", ""))
                               for m in body.get("messages", [])) + "<|assistant|>"]
            externals = [request_id]
        else:
            request_id = "cmpl-%s" % base
            p = body.get("prompt", "")
            prompts = p if isinstance(p, list) else [p]
            externals = ["%s-%d" % (request_id, i) for i in range(len(prompts))]
        # parallel sampling (n > 1): one ADD per child, "<k>_<parent internal id>",
        # all with the parent's external id; the prompt is tokenized once
        n = max(1, int(body.get("n") or 1))
        parents = ["%s-%s" % (e, random_uuid()[:8]) for e in externals]
        tid = threading.get_native_id()
        q = asyncio.Queue()
        states, groups = [], []
        for i, parent in enumerate(parents):
            kids = [parent] if n == 1 else ["%d_%s" % (k, parent) for k in range(n)]
            g = []
            for k, rid in enumerate(kids):
                self.tl.ev(rid, "http_first_byte", t_first, http_id=headers.get("x-request-id"),
                           response_id=request_id, tid=tid, parent=parent)
                self.tl.ev(rid, "http_recv", t_recv)
                self.tl.ev(rid, "http_read", t_read or t_recv, br=t_read_br)
                g.append(ReqState(rid, i * n + k, q))
            states += g
            groups.append(g)
        created = int(time.time())

        async def one(g, text, external, parent):
            for st in g:
                self.tl.ev(st.rid, "tokenize_enqueue", time.monotonic_ns())
            ids = await self.tok.encode(parent, text)
            for st in g:
                st.prompt_tokens = len(ids)
                self.reqs[st.rid] = st
                await self.send_add(st.rid, external, ids, max_tokens, stream,
                                    body.get("temperature"))

        await asyncio.gather(*(meter.wrap(one(g, t, e, p))
                               for g, t, e, p in zip(groups, prompts, externals, parents)))
        left = len(states)
        obj = "chat.completion.chunk" if chat else "text_completion"
        try:
            if stream:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8"
                             b"\r\ntransfer-encoding: chunked\r\nconnection: " +
                             (b"keep-alive" if keep else b"close") + b"\r\n\r\n")
                if chat:
                    await self.sse(writer, {"id": request_id, "object": obj, "created": created,
                                            "model": MODEL, "choices": [{
                                                "index": 0, "delta": {"role": "assistant",
                                                                      "content": ""},
                                                "logprobs": None, "finish_reason": None}]},
                                   None)
            while left:
                st, text, fin, _ = await q.get()
                if fin is not None:
                    left -= 1
                if text is None:
                    text = ""
                st.text.append(text)
                if not stream:
                    continue
                if chat:
                    ch = {"index": st.index, "delta": {"content": text}, "logprobs": None,
                          "finish_reason": fin}
                else:
                    ch = {"index": st.index, "text": text, "logprobs": None,
                          "finish_reason": fin, "stop_reason": None}
                await self.sse(writer, {"id": request_id, "object": obj, "created": created,
                                        "model": MODEL, "choices": [ch]}, st.rid)
            pt = sum(g[0].prompt_tokens for g in groups)
            ct = sum(s.out_tokens for s in states)
            usage = {"prompt_tokens": pt, "total_tokens": pt + ct, "completion_tokens": ct}
            if stream:
                if include_usage:
                    await self.sse(writer, {"id": request_id, "object": obj, "created": created,
                                            "model": MODEL, "choices": [], "usage": usage}, None)
                t_last = time.monotonic_ns()
                writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                t_end = time.monotonic_ns()
                await writer.drain()
            else:
                if chat:
                    choices = [{"index": s.index, "message": {"role": "assistant",
                                                              "content": "".join(s.text)},
                                "logprobs": None, "finish_reason": "length"} for s in states]
                    o = "chat.completion"
                else:
                    choices = [{"index": s.index, "text": "".join(s.text), "logprobs": None,
                                "finish_reason": "length", "stop_reason": None} for s in states]
                    o = "text_completion"
                await self.respond(writer, 200, {"id": request_id, "object": o,
                                                 "created": created, "model": MODEL,
                                                 "choices": choices, "usage": usage}, keep)
            if not stream:
                t_last = t_end = time.monotonic_ns()
            for st in states:
                self.tl.ev(st.rid, "end", t_end, start=t_last)
            # the loop's work for this request, its output handling (detok) apart
            cpu = meter.now() - m0
            for st in states if Meter.on else ():
                self.tl.ev(st.rid, "loop_cpu", time.monotonic_ns(), cpu_ns=cpu // len(states))
        except ConnectionError:
            alive = [s.rid for s in states if s.rid in self.reqs]
            for rid in alive:
                self.reqs.pop(rid, None)
                self.tl.ev(rid, "client_gone", time.monotonic_ns())
            await self.send_abort(alive)
            raise

    async def sse(self, writer, obj, rid):
        data = ("data: " + json.dumps(obj, separators=(", ", ": ")) + "\n\n").encode()
        c0 = time.thread_time_ns()
        t0 = time.monotonic_ns()
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        t = time.monotonic_ns()
        await writer.drain()
        if rid is not None:
            # the write system call happens inside transport.write when the
            # socket buffer has room: [start, ns] brackets it
            self.tl.ev(rid, "sse_write", t, start=t0, cpu_ns=time.thread_time_ns() - c0)

    async def main(self):
        if self.a.meter_loop:
            Meter.on = True
            ACCT.install(asyncio.get_running_loop())
        self.tok = MicrobatchTokenizer(self.tl, self.a.tok_rounds)
        await self.wait_engine_identity()
        asyncio.get_running_loop().create_task(self.output_handler())
        srv = await asyncio.start_server(self.handle_conn, "127.0.0.1", self.a.port)
        port = srv.sockets[0].getsockname()[1]
        print("listening on 127.0.0.1:%d" % port, flush=True)
        print("engine pid %d" % self.engine.pid, flush=True)
        async with srv:
            await srv.serve_forever()


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--role", default="api", choices=("api", "engine"))
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--truth", default="")
    p.add_argument("--log-stats", action="store_true")
    p.add_argument("--tok-rounds", type=int, default=40)
    p.add_argument("--detok-rounds", type=int, default=2000)
    p.add_argument("--step-us", type=float, default=300)
    p.add_argument("--token-us", type=float, default=2)
    p.add_argument("--gpu-us", type=float, default=1500)
    p.add_argument("--gpu-token-us", type=float, default=5)
    p.add_argument("--max-num-seqs", type=int, default=64)
    p.add_argument("--max-batched-tokens", type=int, default=256)
    p.add_argument("--force-include-usage", action="store_true")
    p.add_argument("--omit-trailing-defaults", action="store_true")
    # the event loop's CPU per request in the truth (loop_cpu, batch_loop_cpu,
    # out_loop_cpu): it changes the loop's timing (README.md, "CPU per request")
    p.add_argument("--meter-loop", action="store_true")
    p.add_argument("--die-after-steps", type=int, default=0)
    p.add_argument("--handshake", default="")
    p.add_argument("--input-addr", default="")
    p.add_argument("--output-addr", default="")
    return p.parse_args(argv)


def engine_main(a):
    import engine  # noqa: E402

    ctx = zmq.Context()
    hs = ctx.socket(zmq.DEALER)
    hs.connect(a.handshake)
    hs.send(vmsg.packb({"status": "HELLO", "local": True, "headless": False}))
    init = vmsg.unpackb(hs.recv())
    a.input_addr = init["addresses"]["inputs"][0]
    a.output_addr = init["addresses"]["outputs"][0]
    hs.send(vmsg.packb({"status": "READY", "local": True, "headless": False,
                        "num_gpu_blocks": 1024, "dp_stats_address": None}))
    hs.close(linger=1000)
    engine.main(a)


def main():
    a = parse(sys.argv[1:])
    vmsg.OMIT_TRAILING_DEFAULTS = a.omit_trailing_defaults
    if a.role == "engine":
        engine_main(a)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = ApiServer(a)
    s.start_engine()
    try:
        asyncio.run(s.main())
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        s.engine.terminate()
        s.engine.wait(10)
        shutil.rmtree(s.ipc_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
