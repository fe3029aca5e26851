// SPDX-License-Identifier: BSD-2-Clause
// A small OpenAI-compatible completions server on node-llama-cpp, for
// tracing a real llama.cpp engine in CI.
//
// POST /v1/completions {prompt, max_tokens, stream}: SSE chunks with id
// "cmpl-N", one per generated token, then a usage chunk and [DONE] (or one
// JSON body when stream is false). The x-request-id header is echoed.
//
// One LlamaContext with --sequences sequences: requests that overlap run on
// different sequences, and node-llama-cpp puts their tokens into the same
// llama_decode call. Prompts are tokenized here on the JS main thread.
//
// Truth: one JSON line per request in --truth: token_write_start_ns[i] and
// token_write_ns[i] bracket the write(2) of token i's event, end_start_ns and
// end_ns the response's last write; all instants from
// process.hrtime.bigint() (libuv's uv_hrtime: CLOCK_MONOTONIC on Linux, the
// clock the daemon's events use).
// steps: the server's own step log, one [start_ns, end_ns, n_tokens,
// n_outputs, first_pos, runq_ns] per engine step that fed the request's
// sequence (below, "step log"); seq_id is llama.cpp's sequence id of the
// request.
//
// usage: node server.mjs --model M.gguf --modules DIR [--port 0]
//                        [--truth FILE] [--threads 2] [--sequences 2]
// DIR is the directory holding node_modules/node-llama-cpp (install.sh).
// Prints "listening on 127.0.0.1:PORT" once the model is loaded.

import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {pathToFileURL} from "node:url";

function parseArgs(argv) {
	const o = {port: 0, threads: 2, sequences: 2, truth: null, model: null, modules: null};
	for (let i = 2; i < argv.length; i++) {
		const k = argv[i], v = argv[i + 1];
		if (k === "--model") o.model = v;
		else if (k === "--modules") o.modules = v;
		else if (k === "--port") o.port = Number(v);
		else if (k === "--truth") o.truth = v;
		else if (k === "--threads") o.threads = Number(v);
		else if (k === "--sequences") o.sequences = Number(v);
		else if (k === "--runtime-load") o.runtimeLoad = Number(v);
		else throw new Error("unknown argument " + k);
		i++;
	}
	if (!o.model || !o.modules) throw new Error("--model and --modules are required");
	return o;
}

const now = () => process.hrtime.bigint();
const opts = parseArgs(process.argv);
const entry = path.join(opts.modules, "node_modules", "node-llama-cpp", "dist", "index.js");
const {getLlama} = await import(pathToFileURL(entry).href);

// gpu: false and build: "never": only the CPU prebuilt binary, no probing for
// CUDA/Vulkan and no fallback to compiling llama.cpp from source
const llama = await getLlama({gpu: false, build: "never", maxThreads: opts.threads,
	logLevel: "warn"});
const model = await llama.loadModel({modelPath: opts.model});
// Batching: node-llama-cpp puts the evaluations queued by several sequences
// into one llama_decode, but only those queued when a batch is assembled.
// Two requests' generation loops drift out of phase (each samples in its own
// async worker and queues its next token when that ends), and then every
// step holds one sequence (seen with a uprobe on llama_decode). So the
// generating requests meet at a barrier after each token and ask for the
// next one in the same tick: their next tokens go into one batch. A
// request waits at most BATCH_WAIT_MS for the others.
const BATCH_WAIT_MS = 100;
let generating = 0;
let round = {waiters: []};

function release(r) {
	if (round !== r) return;
	round = {waiters: []};
	for (const w of r.waiters) w(r.waiters.length);
}

function stepBarrier() {
	return new Promise((resolve) => {
		const r = round;
		r.waiters.push(resolve);
		if (r.waiters.length >= generating) release(r);
		else if (r.waiters.length === 1) setTimeout(() => release(r), BATCH_WAIT_MS);
	});
}

const context = await model.createContext({
	contextSize: 1024,
	sequences: opts.sequences,
	batchSize: 256,
	threads: {ideal: opts.threads, min: opts.threads},
});

// Step log. node-llama-cpp assembles each engine step with its native
// context's initBatch/addToBatch and runs it with decodeBatch: one
// llama_decode (+ llama_synchronize) as N-API async work on a libuv pool
// thread. Wrapping the three (private API of 3.21.1, hence pinned) gives
// the server's own view of every step: the instants are taken on the JS
// thread just before the work is queued and when its completion is
// delivered, so they bracket llama_decode's entry and return.
const bySeq = new Map(); // llama.cpp sequence id -> the request on it
const nativeCtx = context._ctx;
let batchItems = [];
const addToBatch = nativeCtx.addToBatch.bind(nativeCtx);
const decodeBatch = nativeCtx.decodeBatch.bind(nativeCtx);
// the addon's methods are read-only on its prototype: own properties shadow them
const wrap = (name, fn) => Object.defineProperty(nativeCtx, name, {value: fn});
wrap("addToBatch", (seqId, firstPos, tokens, logitIndexes) => {
	batchItems.push([seqId, tokens.length, logitIndexes.length, firstPos]);
	return addToBatch(seqId, firstPos, tokens, logitIndexes);
});
// The server's own threads' runqueue wait (run_delay from the kernel's
// schedstat, per thread) during a step: the work waits for a libuv thread
// to get a CPU, and its completion for the JS thread, so on a busy machine
// the logged step is longer than llama_decode by up to that much (an upper
// bound: the libuv thread's waits inside llama_decode count too).
function runDelays() {
	const out = new Map();
	let tids = [];
	try {
		tids = fs.readdirSync("/proc/self/task");
	} catch {
		return out;
	}
	for (const t of tids) {
		try {
			out.set(t, BigInt(fs.readFileSync("/proc/self/task/" + t + "/schedstat", "utf8")
				.split(" ")[1]));
		} catch {
			// the thread is gone (a ggml compute thread)
		}
	}
	return out;
}

// Threads alive at both ends only: the JS thread, libuv's pool and V8's
// workers. A ggml compute thread lives inside llama_decode, and its waits
// are the step's own, as they are for the span.
function runDelaySince(before, after) {
	let ns = 0n;
	for (const [t, v] of after) {
		if (before.has(t)) ns += v - before.get(t);
	}
	return ns;
}

wrap("decodeBatch", () => {
	const items = batchItems;
	batchItems = [];
	// read outside the two instants: the waits counted cover the step
	const rd0 = runDelays();
	const start = now();
	return decodeBatch().then((v) => {
		const end = now();
		const runq = runDelaySince(rd0, runDelays());
		for (const [seqId, n, outputs, firstPos] of items) {
			const rec = bySeq.get(seqId);
			if (rec) rec.steps.push([start, end, n, outputs, firstPos, runq]);
		}
		return v;
	});
});

const free = [];
for (let i = 0; i < opts.sequences; i++) free.push({index: i, seq: context.getSequence()});
const waiting = [];
const truth = opts.truth ? fs.openSync(opts.truth, "a") : null;
let nextId = 1;

function takeSequence() {
	if (free.length) return Promise.resolve(free.shift());
	return new Promise((resolve) => waiting.push(resolve));
}

async function giveSequence(s) {
	// drops the sequence's KV cells (llama_memory_seq_rm) before reuse
	await s.seq.clearHistory();
	const w = waiting.shift();
	if (w) w(s);
	else free.push(s);
}

function piece(token) {
	// byte-fallback and control tokens of a random model often decode to
	// nothing; every generated token still gets its own (non-empty) event
	const t = model.detokenize([token]);
	return t.length ? t : "\ufffd";
}

function sse(res, obj) {
	res.write("data: " + JSON.stringify(obj) + "\n\n");
}

async function complete(req, res, body, rec) {
	const stream = body.stream === true;
	const maxTokens = Number.isInteger(body.max_tokens) ? body.max_tokens : 16;
	const prompt = typeof body.prompt === "string" ? body.prompt : "";
	const id = "cmpl-" + nextId++;
	rec.response_id = id;

	rec.tokenize_start_ns = now();
	const tokens = model.tokenize(prompt);
	rec.tokenize_end_ns = now();
	if (model.tokens.bos != null) tokens.unshift(model.tokens.bos);
	rec.prompt_tokens = tokens.length;

	const s = await takeSequence();
	rec.admitted_ns = now();
	rec.sequence = s.index;
	rec.seq_id = s.seq._sequenceId;
	rec.steps = [];
	bySeq.set(rec.seq_id, rec);
	const headers = {"X-Request-Id": rec.request_id};
	if (stream) {
		headers["Content-Type"] = "text/event-stream";
		headers["Cache-Control"] = "no-cache";
	} else {
		headers["Content-Type"] = "application/json";
	}
	res.writeHead(200, headers);
	const created = Math.floor(Date.now() / 1000);
	const texts = [];
	rec.token_ns = [];
	rec.shared_steps = 0;
	rec.token_write_start_ns = [];
	rec.token_write_ns = [];
	try {
		if (maxTokens > 0) {
			rec.prefill_start_ns = now();
			const gen = s.seq.evaluate(tokens, {temperature: 0.8, seed: 13});
			generating++;
			try {
				for await (const token of gen) {
					const t = now();
					if (rec.first_token_ns == null) rec.first_token_ns = t;
					rec.token_ns.push(t);
					const text = piece(token);
					texts.push(text);
					if (stream) {
						rec.token_write_start_ns.push(now());
						sse(res, {id, object: "text_completion", created, model: "tiny",
							choices: [{index: 0, text, logprobs: null,
								finish_reason: texts.length >= maxTokens ? "length" : null}]});
						// res.write corks the socket until the next tick; uncork now
						// so the write(2) happens between the two instants logged
						res.socket?.uncork();
						rec.token_write_ns.push(now());
					}
					if (texts.length >= maxTokens) break;
					// shared_steps: next tokens asked for together with another request
					if ((await stepBarrier()) > 1) rec.shared_steps++;
				}
			} finally {
				generating--;
				// the others may be waiting only for this request
				if (round.waiters.length && round.waiters.length >= generating) release(round);
			}
		}
	} finally {
		bySeq.delete(rec.seq_id);
		await giveSequence(s);
	}
	const usage = {prompt_tokens: tokens.length, completion_tokens: texts.length,
		total_tokens: tokens.length + texts.length};
	if (stream) {
		sse(res, {id, object: "text_completion", created, model: "tiny", choices: [], usage});
		// res.end flushes the corked usage chunk, [DONE] and the chunked
		// terminator in one write, before it returns
		rec.end_start_ns = now();
		res.end("data: [DONE]\n\n");
	} else {
		rec.end_start_ns = now();
		res.end(JSON.stringify({id, object: "text_completion", created, model: "tiny",
			choices: [{index: 0, text: texts.join(""), logprobs: null,
				finish_reason: "length"}], usage}));
	}
	rec.completion_tokens = texts.length;
	rec.end_ns = now();
}

function num(x) {
	if (typeof x === "bigint") return Number(x);
	return Array.isArray(x) ? x.map(num) : x;
}

function writeTruth(rec) {
	if (truth == null) return;
	const out = {};
	for (const [k, v] of Object.entries(rec)) {
		if (typeof v === "bigint") out[k] = Number(v);
		else if (Array.isArray(v)) out[k] = v.map(num);
		else out[k] = v;
	}
	fs.writeSync(truth, JSON.stringify(out) + "\n");
}

const server = http.createServer({noDelay: true, keepAliveTimeout: 30000}, (req, res) => {
	const rec = {request_id: req.headers["x-request-id"] || null, arrival_ns: now(),
		tokenize_tid: process.pid};
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		rec.received_ns = now();
		if (req.method !== "POST" || req.url !== "/v1/completions") {
			res.writeHead(404, {"Content-Type": "application/json"});
			res.end('{"error":"not found"}');
			return;
		}
		let body;
		try {
			body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
		} catch {
			res.writeHead(400, {"Content-Type": "application/json"});
			res.end('{"error":"bad json"}');
			return;
		}
		complete(req, res, body, rec).then(() => writeTruth(rec), (e) => {
			rec.error = String(e);
			writeTruth(rec);
			if (!res.headersSent) res.writeHead(500);
			res.end();
		});
	});
});

// --runtime-load MS: every MS ms, work for nobody: garbage for V8's
// parallel scavenger (its platform workers) and a pbkdf2 on libuv's pool,
// as a server's timers, metrics and caches do
if (opts.runtimeLoad > 0) {
	let keep = null;
	setInterval(() => {
		const junk = [];
		for (let i = 0; i < 20000; i++) junk.push({i, s: "x" + i});
		keep = junk;
		crypto.pbkdf2("reqtrace", "salt", 2000, 32, "sha256", () => {});
	}, opts.runtimeLoad).unref();
	void keep;
}

server.listen(opts.port, "127.0.0.1", () => {
	process.stdout.write("listening on 127.0.0.1:" + server.address().port + "\n");
});
for (const sig of ["SIGTERM", "SIGINT"]) {
	process.on(sig, () => {
		server.close();
		process.exit(0);
	});
}
