# SPDX-License-Identifier: BSD-2-Clause
"""The testbed scenarios the verdict is checked on, and one run of each under
reqtraced (python3 stdlib only). Shared by tests/integration/verdict_live.py
(live, root) and tests/fixtures/verdict/regen.py (the committed recordings),
so that the fixtures are exactly what the live test runs.

Each run is short (a few seconds): enough requests for the finding's
evidence, few enough for a small recording and the CI budget.
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

# scenario -> (load arguments, the first finding's kind)
SCENARIOS = {
    # one tokenizer thread, 680 ms of CPU per request. One client: with two,
    # the tokenizer works through a backlog in one burst, which zero-code
    # attribution charges to the request that woke it alone (docs/spans.md),
    # so the spans understate its busy time and hot_thread cannot fire
    "preprocess-bound": (["--concurrency", 1, "--requests", 4, "--stream"], "hot_thread"),
    # four clients against an engine that takes one request per step
    "batch1": (["--concurrency", 4, "--requests", 12, "--stream"], "batching"),
    # 16 req/s in bursts of 4 against a capacity of about 8 req/s
    "queue-burst": (["--rate", 16, "--burst", 4, "--requests", 32, "--stream"], "queue_growth"),
    # every step waits 15 ms for the peer
    "comm-bound": (["--concurrency", 4, "--requests", 8, "--stream"], "comm_wait"),
    "healthy": (["--concurrency", 4, "--requests", 16, "--stream"], "none"),
}
MODES = ("zero", "markers")
# SCHED_FIFO ahead of whatever else the machine runs (live_fidelity.py does the
# same): the findings are about the server's own stages, and on a crowded CI
# machine its threads otherwise wait for a CPU long enough to be cpu_starved
# (seen: healthy with 21% of request time in the runqueue at load 31 on 2 CPUs)
FIFO = ["chrt", "-f", "10"]


def free_low_port():
    """A free TCP port below the ephemeral range: a connection to it that was
    opened before tracing started is still known as outbound (the
    correlator's guess, rt_stream_guess_outbound), as a peer rank's port is."""
    for port in range(23000 + os.getpid() % 4000, 32000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port below 32000")


class Run:
    """A scenario under reqtraced: testbed (and peer), daemon, load."""

    def __init__(self, name, mode, record=None, sets=(), load=None, id_prefix="v-"):
        self.name, self.mode = name, mode
        self.peer = None
        args = ["--scenario", tb.scenario(name), "--port", "0"]
        for s in sets:
            args += ["--set", s]
        if mode == "markers":
            args.append("--markers")
        if name == "comm-bound":
            self.peer = tb.Testbed(["--peer-mode", "--scenario", tb.scenario(name), "--port",
                                    str(free_low_port())], name="peer", wrap=FIFO)
            args += ["--peer", "127.0.0.1:%d" % self.peer.port]
        self.server = tb.Testbed(args, name="testbed-%s-%s" % (name, mode), wrap=FIFO)
        dargs = ["--pid", str(self.server.pid)]
        if record:
            if os.path.exists(record):
                os.unlink(record)
            dargs += ["--record", record]
        self.daemon = lc.Daemon(dargs, name="reqtraced-%s-%s" % (name, mode))
        time.sleep(0.3)  # the probes are attached once status answers; let the first switches in
        largs = list(load if load is not None else SCENARIOS[name][0])
        largs += ["--id-prefix", id_prefix]
        lines, _ = lc.run_load(self.server.port, *largs)
        self.ids = [l["request_id"] for l in lines]
        self.spans = self.daemon.wait_spans(len(self.ids), timeout=30, ids=set(self.ids))

    def why_json(self):
        import json
        import subprocess
        r = subprocess.run([lc.REQTRACE, "--socket", self.daemon.sock, "why", "--json"],
                           capture_output=True, text=True, timeout=60)
        lc.log("why --json: rc %d, %s%s" % (r.returncode, r.stdout.strip()[:3000],
                                            r.stderr.strip()[:500]))
        return r.returncode, json.loads(r.stdout) if r.returncode == 0 else None

    def stop(self):
        rc = self.daemon.stop()
        self.server.stop()
        if self.peer:
            self.peer.stop()
        return rc


KINDS = {"phase_dominant", "hot_thread", "cpu_starved", "gpu_idle_waiting", "batching",
         "queue_growth", "comm_wait", "transfer_bound", "server_slower_than_engine", "none"}


def check_shape(doc, what):
    """`why --json`: {"window": {...}, "findings": [{"kind", "claim", "evidence"}, ...]}."""
    ok = tb.check(isinstance(doc, dict) and set(doc) == {"window", "findings"},
                  "%s: why --json has exactly window and findings" % what)
    if not ok:
        return False
    w = doc["window"]
    ok = tb.check(set(w) == {"start_ns", "end_ns", "duration_ms", "requests"} and
                  w["end_ns"] >= w["start_ns"], "%s: window %s" % (what, w))
    fs = doc["findings"]
    ok &= tb.check(isinstance(fs, list) and len(fs) >= 1, "%s: at least one finding" % what)
    for f in fs:
        ok &= tb.check(set(f) == {"kind", "claim", "evidence"} and f["kind"] in KINDS and
                       isinstance(f["claim"], str) and f["claim"] and
                       isinstance(f["evidence"], dict),
                       "%s: finding %s has kind, a one-line claim and evidence" %
                       (what, f.get("kind")))
        ok &= tb.check("\n" not in f["claim"], "%s: claim is one line" % what)
    kinds = [f["kind"] for f in fs]
    ok &= tb.check(kinds.count("none") == 0 or kinds == ["none"],
                   "%s: none only alone (%s)" % (what, kinds))
    return ok


def check_first(doc, name, mode, what):
    """The first finding is the scenario's, with its key evidence."""
    if not check_shape(doc, what):
        return False
    want = SCENARIOS[name][1]
    f = doc["findings"][0]
    ev = f["evidence"]
    tb.log("%s: first finding %s: %s" % (what, f["kind"], f["claim"]))
    if not tb.check(f["kind"] == want, "%s: first finding is %s (got %s; all: %s)" %
                    (what, want, f["kind"], [x["kind"] for x in doc["findings"]])):
        return False
    if want == "hot_thread":
        # zero-code cannot split tokenize out of pre_first_token (docs/spans.md)
        phases = ("tokenize",) if mode == "markers" else ("pre_first_token",)
        return tb.check(ev["thread"]["comm"] == "tb-tokenizer" and ev["thread"]["tid"] > 0 and
                        ev["phase"] in phases and ev["busy"] >= 0.5,
                        "%s: hot thread %s in phase %s, busy %.2f (want tb-tokenizer in %s)" %
                        (what, ev["thread"], ev["phase"], ev["busy"], phases))
    if want == "batching":
        sizes = ev["step_sizes"]
        return tb.check(ev["engine_thread"]["comm"] == "tb-engine" and
                        ev["mean_step_size"] <= 1.5 and sizes.get("1", 0) * 2 > ev["steps"] and
                        ev["mean_waiting_for_engine"] >= 2 and ev["max_throughput_gain"] >= 2,
                        "%s: engine %s, %d steps, sizes %s, mean %.2f, %.2f waiting" %
                        (what, ev["engine_thread"], ev["steps"], sizes, ev["mean_step_size"],
                         ev["mean_waiting_for_engine"]))
    if want == "queue_growth":
        return tb.check(ev["arrival_rate_per_s"] > 1.1 * ev["completion_rate_per_s"] and
                        ev["in_system_last_quarter"] >= ev["in_system_first_quarter"] + 3 and
                        ev["wait_last_quarter_ms"] > ev["wait_first_quarter_ms"],
                        "%s: arrivals %.1f/s > completions %.1f/s, in system %.1f -> %.1f, "
                        "wait %.0f -> %.0f ms" %
                        (what, ev["arrival_rate_per_s"], ev["completion_rate_per_s"],
                         ev["in_system_first_quarter"], ev["in_system_last_quarter"],
                         ev["wait_first_quarter_ms"], ev["wait_last_quarter_ms"]))
    if want == "comm_wait":
        return tb.check(ev["phase"] == "comm_wait" and ev["share"] >= 0.25 and
                        ev["source"] == ("marker" if mode == "markers" else "probe"),
                        "%s: comm_wait share %.2f from %s" % (what, ev["share"], ev["source"]))
    if want == "none":
        return tb.check(len(doc["findings"]) == 1, "%s: none is the only finding" % what)
    return True
