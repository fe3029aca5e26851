# SPDX-License-Identifier: BSD-2-Clause
"""preprocess-bound under load: the hot tokenizer thread is real.

Truth's mean tokenize time is 680 ms +-5%; the tokenizer thread's CPU time in
/proc/PID/task/TID/stat agrees with the truth within 5%; while it works it is
at >= 90% of a core and >= 70% of the process's CPU (sampled from /proc).

CTest runs this test alone (RUN_SERIAL); the testbed also runs at nice -19 (in a
session of its own, so autogroup scheduling honours it) so that processes
outside CTest on a shared machine cannot take the tokenizer's
core. Every thread of the testbed has the same priority, so contention inside
the testbed (handlers burning CPU next to the tokenizer) still shows.
"""

import os
import threading
import time

import testbed_common as tc

REQUESTS = 10


def sampler(pid, samples, stop):
    while not stop.is_set():
        t = time.monotonic_ns()
        try:
            per_tid = {}
            for tid in os.listdir("/proc/%d/task" % pid):
                try:
                    per_tid[int(tid)] = tc.thread_cpu_s(pid, int(tid))
                except OSError:
                    pass
            samples.append((t, tc.process_cpu_s(pid), per_tid))
        except OSError:
            return
        stop.wait(0.1)


def main():
    d = tc.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    with tc.Testbed(["--scenario", tc.scenario("preprocess-bound"), "--port", "0",
                     "--truth", truth_path], nice=-19) as tb:
        samples, stop = [], threading.Event()
        th = threading.Thread(target=sampler, args=(tb.pid, samples, stop))
        th.start()
        rc, res, summ, _ = tc.run_load(tb.url(), ["--concurrency", 2, "--requests", REQUESTS,
                                                  "--stream", "--duration-limit", 60])
        stop.set()
        th.join()
        # CPU of every thread now, while the process lives; the truth once it stopped
        final_cpu = {}
        for tid in os.listdir("/proc/%d/task" % tb.pid):
            final_cpu[int(tid)] = tc.thread_cpu_s(tb.pid, int(tid))
        tc.check(tb.stop() == 0, "testbed exits 0 on SIGTERM")
        truth = tc.read_truth(truth_path)
        tc.check(rc == 0 and summ and summ["ok"] == REQUESTS,
                 "load: %d requests ok (rc %d)" % (REQUESTS, rc))
        tc.check(len(truth) == REQUESTS, "truth has %d lines" % len(truth))
        tc.truth_ok_keys(truth)

        tok_ms = [(r["tokenize_end_ns"] - r["tokenize_start_ns"]) / 1e6 for r in truth]
        mean = sum(tok_ms) / len(tok_ms)
        tc.check(tc.within(mean, 680, 0.05), "mean tokenize %.1f ms is 680 ms +-5%%" % mean)

        tids = {r["tokenizer_tid"] for r in truth}
        tc.check(len(tids) == 1, "one tokenizer thread (%s)" % tids)
        tid = tids.pop()
        step_tids = {t for r in truth for t in r["step_tids"]}
        tc.check(tid not in step_tids, "the tokenizer is not the step worker")
        proc_cpu = final_cpu.get(tid, 0.0)
        truth_cpu = sum(tok_ms) / 1e3
        tc.check(tc.within(proc_cpu, truth_cpu, 0.05),
                 "tokenizer CPU in /proc %.2f s agrees with truth %.2f s within 5%%"
                 % (proc_cpu, truth_cpu))

        # the window in which the tokenizer worked: first start to last end
        t0 = min(r["tokenize_start_ns"] for r in truth)
        t1 = max(r["tokenize_end_ns"] for r in truth)
        inside = [s for s in samples if t0 <= s[0] <= t1 and tid in s[2]]
        if tc.check(len(inside) >= 10, "%d /proc samples inside the tokenizer's busy window"
                    % len(inside)):
            a, b = inside[0], inside[-1]
            wall = (b[0] - a[0]) / 1e9
            thr = b[2][tid] - a[2][tid]
            procd = b[1] - a[1]
            tc.log("window %.2f s: tokenizer %.2f s CPU, process %.2f s CPU" % (wall, thr, procd))
            tc.check(thr / wall >= 0.90, "tokenizer at %.0f%% of a core (>= 90%%)"
                     % (100 * thr / wall))
            tc.check(procd > 0 and thr / procd >= 0.70,
                     "tokenizer is %.0f%% of the process's CPU (>= 70%%)"
                     % (100 * thr / max(procd, 1e-9)))
    tc.finish()


if __name__ == "__main__":
    main()
