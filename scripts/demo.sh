#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The demo: installs dependencies, builds, then runs reqtraced + the testbed
# + load for SCENARIO and shows the live view, the slowest requests and the
# verdict. usage: sudo ./scripts/demo.sh [SCENARIO] [reqtrace demo options]
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-preprocess-bound}
shift || true
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root (reqtraced loads eBPF programs): sudo $0 $scenario" >&2
	exit 1
fi
./scripts/deps.sh
./scripts/build.sh build
exec ./build/reqtrace demo "$scenario" "$@"
