#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The fake libcuda.so.1 and libnccl.so.2 export what the real ones export.

  gpu_fake_exports.py [--nm NM] FAKE_CUDA REAL_CUDA FAKE_NCCL REAL_NCCL

REAL_* is the real library or a saved `nm -D --defined-only` output. Checks:
the same function names, nothing more; the real soname; and the same alias
structure (names that share an address in the real library share one in the
fake: NCCL's ncclX and pncclX), with the same binding (T or W).
"""

import argparse
import subprocess
import sys


def nm(path, tool):
    with open(path, "rb") as f:
        elf = f.read(4) == b"\x7fELF"
    if elf:
        text = subprocess.run([tool, "-D", "--defined-only", path], stdout=subprocess.PIPE,
                              text=True, check=True).stdout
    else:
        with open(path) as f:
            text = f.read()
    out = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in ("T", "W", "i"):
            out[p[2]] = (int(p[0], 16), p[1])
    return out


def soname(path):
    r = subprocess.run(["readelf", "-d", path], stdout=subprocess.PIPE, text=True)
    for line in r.stdout.splitlines():
        if "(SONAME)" in line:
            return line.split("[", 1)[1].rstrip("]")
    return None


def groups(syms):
    by = {}
    for name, (addr, _) in syms.items():
        by.setdefault(addr, set()).add(name)
    return {frozenset(v) for v in by.values() if len(v) > 1}


def compare(label, fake, real, want_soname, tool):
    bad = []
    f, r = nm(fake, tool), nm(real, tool)
    extra, missing = sorted(set(f) - set(r)), sorted(set(r) - set(f))
    if extra:
        bad.append("%s exports %d names the real one does not: %s" % (label, len(extra),
                                                                      extra[:8]))
    if missing:
        bad.append("%s lacks %d exports: %s" % (label, len(missing), missing[:8]))
    if groups(f) != groups(r):
        bad.append("%s aliases differ: fake %s, real %s" % (label, sorted(map(sorted, groups(f)))[:4],
                                                            sorted(map(sorted, groups(r)))[:4]))
    kinds = [n for n in set(f) & set(r) if f[n][1] != r[n][1]]
    if kinds:
        bad.append("%s binding differs for %s" % (label, sorted(kinds)[:8]))
    if soname(fake) != want_soname:
        bad.append("%s soname %s, want %s" % (label, soname(fake), want_soname))
    print("%s: %d exports, %d alias groups: %s" % (label, len(f), len(groups(f)),
                                                   "ok" if not bad else "FAIL"))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nm", default="nm")
    ap.add_argument("fake_cuda")
    ap.add_argument("real_cuda")
    ap.add_argument("fake_nccl")
    ap.add_argument("real_nccl")
    a = ap.parse_args()
    bad = compare("libcuda", a.fake_cuda, a.real_cuda, "libcuda.so.1", a.nm)
    bad += compare("libnccl", a.fake_nccl, a.real_nccl, "libnccl.so.2", a.nm)
    for b in bad:
        print("FAIL: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
