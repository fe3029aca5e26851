#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The test command: installs dependencies, builds the normal, the
# ASan+UBSan and (for the threads of the CUPTI injection library) the TSan
# trees and the arm64 cross build (scripts/cross-arm64.sh, not run), and
# runs every test: unit and root labels in the first two, the tsan label in
# the third. gpu-labelled tests need an NVIDIA device and are
# not run here (tests/gpu/run.sh).
# With CI=true, tests that need BPF fail instead of skipping.
# With RT_TEST_STRESS=1 every ctest run has two CPU hogs and a memory
# churner beside it (scripts/stress.sh): the suite as a slow, busy machine
# of the same kind would run it. RT_TEST_REGEX limits ctest to matching tests.
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
# arm64 (docs/architecture.md, "Architectures"): compiled and linked, not run;
# the native build has already compiled the arm64 BPF objects
echo "== arm64 cross build"
./scripts/cross-arm64.sh build-arm64

echo "== format check"
./scripts/check-format.sh

jobs=$(nproc)
wrap=()
[ "${RT_TEST_STRESS:-0}" = 1 ] && wrap=(../scripts/stress.sh)
only=()
[ -n "${RT_TEST_REGEX:-}" ] && only=(-R "$RT_TEST_REGEX")
echo "== tests (normal build)"
(cd build && "${wrap[@]}" ctest --output-on-failure -j"$jobs" -LE gpu "${only[@]}")
echo "== tests (ASan+UBSan build)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	"${wrap[@]}" ctest --output-on-failure -j"$jobs" -LE gpu "${only[@]}")
echo "== tests (TSan build: the injection library's threads)"
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	"${wrap[@]}" ctest --output-on-failure -j"$jobs" -L tsan "${only[@]}")
echo "== all tests passed"
