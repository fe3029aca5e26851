#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/repeat.sh N REGEX [BUILD_DIR]: runs the ctest tests matching REGEX
# N times in BUILD_DIR (default build), each run under scripts/stress.sh when
# RT_TEST_STRESS=1, and prints every run's time and result. A failed run's
# output is kept (its path is printed). Exits 1 if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then
	echo "usage: $0 N REGEX [BUILD_DIR]" >&2
	exit 2
fi
n=$1 regex=$2 dir=${3:-build}
wrap=()
[ "${RT_TEST_STRESS:-0}" = 1 ] && wrap=("$PWD/scripts/stress.sh")
pass=0 fail=0
for i in $(seq "$n"); do
	out=$(mktemp -t rt-repeat-XXXXXX.log)
	start=$(date +%s)
	(cd "$dir" && "${wrap[@]}" ctest --output-on-failure -R "$regex") >"$out" 2>&1
	rc=$?
	dur=$(($(date +%s) - start))
	summary=$(grep -E 'tests passed|tests failed' "$out" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "run $i: pass in ${dur}s ($summary)"
		rm -f "$out"
	else
		fail=$((fail + 1))
		echo "run $i: FAIL in ${dur}s ($summary); output kept in $out"
		grep -E '^FAIL:|\*\*\*Failed' "$out" | head -n 10 | sed 's/^/    /'
	fi
done
echo "repeat (stress ${RT_TEST_STRESS:-0}): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
