#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""libreqtrace_cupti.so is a guest in someone else's process: it must export
InitializeInjection and nothing else (no symbol of ours may interpose on the
host's), and must not link libcupti (it is dlopen()ed) nor reqtrace_core's
dependencies."""
import subprocess
import sys

lib = sys.argv[1]
nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True)
syms = sorted(line.split()[-1] for line in nm.stdout.splitlines()
              if len(line.split()) == 3 and line.split()[1] in "TDBRVWi")
ok = syms == ["InitializeInjection"]
needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
libs = sorted(l.split("[")[1].rstrip("]") for l in needed.splitlines() if "(NEEDED)" in l)
bad = [l for l in libs if not any(l.startswith(p) for p in
       ("libc.so", "libpthread.so", "libdl.so", "libasan.so", "libubsan.so", "libtsan.so",
        "libm.so", "libstdc++.so", "libgcc_s.so"))]
print("exported:", syms)
print("needed:", libs)
if not ok:
    print("FAIL: only InitializeInjection may be exported")
if bad:
    print("FAIL: unexpected dependencies:", bad)
sys.exit(0 if ok and not bad else 1)
