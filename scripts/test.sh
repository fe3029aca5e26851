#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The test command: installs dependencies, builds the normal and the
# ASan+UBSan trees, and runs every test (unit, root) in both.
# With CI=true, tests that need BPF fail instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
./scripts/build.sh build
./scripts/build.sh build-asan -DRT_SANITIZE=ON

echo "== format check"
./scripts/check-format.sh

echo "== tests (normal build)"
(cd build && ctest --output-on-failure -j"$(nproc)" -LE gpu)
echo "== tests (ASan+UBSan build)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --output-on-failure -j"$(nproc)" -LE gpu)
echo "== all tests passed"
