#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/build.sh [BUILD_DIR] [cmake args...]: configure and build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
