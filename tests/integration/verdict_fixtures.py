#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The findings from the committed recordings, without root: every
tests/fixtures/verdict/<scenario>-<zero|markers>.rtrace through
`reqtrace why --json --file` gives the scenario's first finding with its key
evidence (verdict_scenarios.check_first, the same check as the live test);
the text output leads with the same finding."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict_scenarios as vs  # noqa: E402
import testbed_common as tb  # noqa: E402

REQTRACE = os.path.join(tb.BIN, "reqtrace")
FIX = os.path.join(tb.SRC, "tests", "fixtures", "verdict")


def main():
    for name in vs.SCENARIOS:
        for mode in vs.MODES:
            key = "%s-%s" % (name, mode)
            path = os.path.join(FIX, key + ".rtrace")
            if not tb.check(os.path.exists(path), "%s exists" % path):
                continue
            r = subprocess.run([REQTRACE, "why", "--json", "--file", path], capture_output=True,
                               text=True, timeout=120)
            if not tb.check(r.returncode == 0, "%s: why --json exits 0 (%d: %s)" %
                            (key, r.returncode, r.stderr.strip())):
                continue
            doc = json.loads(r.stdout)
            vs.check_first(doc, name, mode, key)
            t = subprocess.run([REQTRACE, "why", "--file", path], capture_output=True, text=True,
                               timeout=120)
            lines = t.stdout.splitlines()
            tb.check(t.returncode == 0 and len(lines) > 1 and
                     lines[1] == "1. [%s] %s" % (doc["findings"][0]["kind"],
                                                 doc["findings"][0]["claim"]),
                     "%s: the text output leads with the same finding" % key)
    tb.finish()


if __name__ == "__main__":
    main()
