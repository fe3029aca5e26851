#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Holds `reqtrace replay` to the engine-pack rules where the truth cannot be
reached: in the scenarios whose pack joins are ambiguous by design
(tests/fixtures/README.md, "Engine-pack mode"), every span's `pack` object
must be what docs/packs.md ("Phases: the correlator's rules")'s rules give from the records alone
(check_truth.py's pack_join), even where that differs from the truth.

usage: pack_rules.py PATH/TO/reqtrace F.rtrace ...   (exit 0: replay follows the rules)
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_truth  # noqa: E402


def rules_pack(k):
    if not k or not (k["tok_calls"] or k["first"] or k["seq"] is not None):
        return None
    return dict(seq=k["seq"], join="hand-off" if k["seq"] is not None else None,
                tokenize_calls=k["tok_calls"], prefill_steps=k["prefill_steps"],
                decode_steps=k["decode_steps"], prompt_tokens=k["prompt_tokens"])


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bad = spans = 0
    for f in sys.argv[2:]:
        truth = [json.loads(line) for line in open(f[:-len(".rtrace")] + ".truth.jsonl")]
        c = check_truth.Check(check_truth.read(f), truth)
        c.run()  # its differences from the truth are expected here
        r = subprocess.run([sys.argv[1], "replay", f, "--json"], capture_output=True, text=True)
        if r.returncode:
            print(f"{os.path.basename(f)}: replay exited {r.returncode}")
            bad += 1
            continue
        got = {}
        for line in r.stdout.splitlines():
            d = json.loads(line)
            got[d["request_id"]] = d
        for i, t in enumerate(truth):
            spans += 1
            want, g = rules_pack(c.pk.get(i)), got.get(t["request_id"], {}).get("pack")
            if g != want:
                print(f"{os.path.basename(f)}: {t['request_id']}: pack: replay {g}, rules {want}")
                bad += 1
    print(f"pack_rules.py: {len(sys.argv) - 2} recordings, {spans} spans, {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
