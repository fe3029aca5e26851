#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The test command: installs dependencies, builds the normal, the
# ASan+UBSan and (for the threads of the CUPTI injection library) the TSan
# trees, and runs every test: unit and root labels in the first two, the
# tsan label in the third. gpu-labelled tests need an NVIDIA device and are
# not run here (tests/gpu/run.sh).
# With CI=true, tests that need BPF fail instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
./scripts/build.sh build
./scripts/build.sh build-asan -DRT_SANITIZE=ON
# TSan: only what the tsan-labelled tests need (BPF is not under test there)
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_TSAN=ON -DRT_WITH_BPF=OFF >/dev/null
tsan_targets=$(cd build-tsan && ctest -N -L tsan | sed -n 's/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p' |
	sed 's/^cupti_lib_.*/cupti_lib_test/' | sort -u)
cmake --build build-tsan -j"$(nproc)" --target reqtrace_cupti rt_mock_cupti $tsan_targets

echo "== format check"
./scripts/check-format.sh

jobs=$(nproc)
echo "== tests (normal build)"
(cd build && ctest --output-on-failure -j"$jobs" -LE gpu)
echo "== tests (ASan+UBSan build)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --output-on-failure -j"$jobs" -LE gpu)
echo "== tests (TSan build: the injection library's threads)"
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	ctest --output-on-failure -j"$jobs" -L tsan)
echo "== all tests passed"
