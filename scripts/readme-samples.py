#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Regenerates the sample output in README.md and docs/cli.md.

A sample is a fenced block right after a `<!-- sample -->` line whose first
line is `$ reqtrace ARGS`: the rest of the block is replaced by what
`BUILD/reqtrace ARGS` prints now (stdout), run from the repository root on
the committed fixtures, so the samples cannot drift from the code and the
fixtures.

usage: readme-samples.py [--build DIR] [--check] [FILE...]
  --check  change nothing; print a diff and exit 1 if a sample is stale
"""
import argparse
import difflib
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "<!-- sample -->"


def regenerate(text, reqtrace):
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i].strip() != MARK:
            i += 1
            continue
        if i + 2 >= len(lines) or not lines[i + 1].startswith("```") or \
                not lines[i + 2].startswith("$ reqtrace "):
            sys.exit(f"line {i + 1}: {MARK} must precede a fence whose first line is $ reqtrace ...")
        end = i + 3
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            sys.exit(f"line {i + 2}: unterminated sample block")
        cmd = lines[i + 2][2:]
        args = shlex.split(cmd)[1:]
        # the width and colour a pipe gets whatever the caller's terminal is
        env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
        res = subprocess.run([reqtrace] + args, cwd=ROOT, capture_output=True, text=True,
                             check=False, env=env)
        if res.returncode != 0:
            sys.exit(f"{cmd}: exit {res.returncode}: {res.stderr.strip()}")
        out += [lines[i + 1], lines[i + 2]] + res.stdout.rstrip("\n").split("\n") + [lines[end]]
        i = end + 1
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("files", nargs="*", default=["README.md", "docs/cli.md"])
    a = ap.parse_args()
    reqtrace = os.path.join(os.path.abspath(a.build), "reqtrace")
    stale = False
    for f in a.files:
        path = os.path.join(ROOT, f)
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
        new = regenerate(old, reqtrace)
        if new == old:
            continue
        if a.check:
            stale = True
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), f, f + " (regenerated)"))
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
            print(f"updated {f}")
    if stale:
        print("samples are stale: run scripts/readme-samples.py --build BUILD_DIR",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
