# SPDX-License-Identifier: BSD-2-Clause
"""comm-bound with a peer: each request's truth comm wait is at least the
peer's configured delay times the steps it took part in (never less: the
peer sleeps that long before it answers), and at most the time its steps
took (its truth from admission to its last token): a wait counted twice
would exceed it. A busy machine wakes the peer late and the engine really
waits longer (seen: 200-215 ms for 180 ms of delay beside another suite);
the truth is what the engine waited.

A request takes part in one prefill step and one decode step per further
token, so its steps are its completion tokens (checked by reqtrace-load).
Both processes run at nice -19 (see testbed_preprocess.py): on a busy shared
machine a late wake-up of the peer would count as comm wait.
"""

import os

import testbed_common as tc

DELAY_MS = 15.0  # comm_delay_ms in configs/scenarios/comm-bound.conf
TOKENS = 12


def main():
    d = tc.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    with open(tc.scenario("comm-bound")) as f:
        conf = f.read()
    tc.check("comm_delay_ms = %g" % DELAY_MS in conf, "comm-bound sets comm_delay_ms = %g"
             % DELAY_MS)
    with tc.Testbed(["--peer-mode", "--scenario", tc.scenario("comm-bound"), "--port", "0"],
                    name="peer", nice=-19) as peer:
        with tc.Testbed(["--scenario", tc.scenario("comm-bound"), "--port", "0",
                         "--peer", "127.0.0.1:%d" % peer.port, "--truth", truth_path],
                        nice=-19) as tb:
            rc, res, summ, _ = tc.run_load(tb.url(), ["--concurrency", 4, "--requests", 8,
                                                      "--stream", "--max-tokens", TOKENS])
            tc.check(rc == 0 and summ and summ["ok"] == 8, "load: 8 requests ok (rc %d)" % rc)
            tokens = {r["request_id"]: r["tokens"] for r in res}
            # a truth line is written just after the response's last byte: stop first
            tc.check(tb.stop() == 0, "testbed exits 0")
            truth = tc.read_truth(truth_path)
            tc.check(len(truth) == 8, "truth has 8 lines")
            tc.truth_ok_keys(truth)
            for r in truth:
                steps = tokens.get(r["request_id"])
                want = DELAY_MS * 1e6 * (steps or 0)
                span = r["last_token_write_ns"] - r["admitted_ns"]
                tc.check(steps == TOKENS and want <= r["comm_wait_ns"] <= span,
                         "%s: comm wait %.1f ms between %g ms x %s steps and the %.1f ms its "
                         "steps took" % (r["request_id"], r["comm_wait_ns"] / 1e6, DELAY_MS,
                                         steps, span / 1e6))
        tc.check(peer.stop() == 0, "peer exits 0")
        tc.check("peer answered" in peer.stderr(), "peer reports its answers")
    tc.finish()


if __name__ == "__main__":
    main()
