#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The verdict live (root): every testbed scenario under reqtraced, zero-code
and with markers; `reqtrace why --json` from the daemon gives the scenario's
first finding with its key evidence (verdict_scenarios.check_first, the same
check as the committed recordings get in verdict_fixtures.py):
preprocess-bound -> hot_thread (tb-tokenizer, tokenize), batch1 -> batching,
queue-burst -> queue_growth, comm-bound -> comm_wait, healthy -> none.

Then healthy -> none over a sweep of healthy settings drawn at random (load,
batch size, token counts, prompt length, mode); the seed is printed and
RT_VERDICT_SEED=N repeats a sweep. Each run is a few seconds.
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import verdict_scenarios as vs  # noqa: E402

SWEEP_RUNS = 6


def one(name, mode, what, sets=(), load=None):
    r = vs.Run(name, mode, sets=sets, load=load)
    try:
        missing = set(r.ids) - {s["request_id"] for s in r.spans}
        lc.check(not missing, "%s: the daemon saw all %d requests (missing %s)" %
                 (what, len(r.ids), sorted(missing)[:3]))
        rc, doc = r.why_json()
        if lc.check(rc == 0, "%s: why --json exits 0" % what):
            vs.check_first(doc, name, mode, what)
    finally:
        lc.check(r.stop() == 0, "%s: reqtraced exits 0" % what)


def sweep():
    seed = int(os.environ.get("RT_VERDICT_SEED", random.randrange(1 << 30)))
    lc.log("healthy sweep: seed %d (RT_VERDICT_SEED=%d repeats it)" % (seed, seed))
    rnd = random.Random(seed)
    for i in range(SWEEP_RUNS):
        batch = rnd.choice([4, 8, 16])
        # healthy means every request fits in a step: more clients than the
        # batch holds queue for it (pre_first_token then rightly dominates,
        # seen at concurrency 8 over max_batch 4)
        conc = rnd.randint(1, min(8, batch))
        tokens = rnd.randint(8, 32)
        chars = rnd.choice([64, 256, 1024])
        mode = rnd.choice(vs.MODES)
        sets = ["max_batch=%d" % batch]
        load = ["--concurrency", conc, "--requests", 2 * conc + 4, "--stream", "--max-tokens",
                tokens, "--prompt-chars", chars]
        what = "healthy sweep %d (%s, max_batch %d, concurrency %d, %d tokens, %d chars)" % (
            i, mode, batch, conc, tokens, chars)
        one("healthy", mode, what, sets=sets, load=load)


def main():
    lc.require_root()
    for name in vs.SCENARIOS:
        for mode in vs.MODES:
            one(name, mode, "%s-%s live" % (name, mode))
    sweep()
    lc.finish()


if __name__ == "__main__":
    main()
