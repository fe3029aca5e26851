#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `reqtrace demo` finds reqtraced, the testbed's programs and the scenarios
# relative to its own binary, in the build tree and in an installed layout
# (also through a symlink). An unknown scenario stops it right after that
# search, naming the layout and the folder it looked in: nothing is started.
# usage: demo_locate.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # binary, layout, the folder that must hold scenarios/
	local out rc=0 dir
	out=$("$1" demo no-such-scenario 2>&1) || rc=$?
	dir=$(sed -nE 's/.*looked in \$RT_CONFIG_DIR and (.*), '"$2"' layout.*/\1/p' <<<"$out")
	if [ "$rc" -ne 2 ] || [ -z "$dir" ] || [ "$(realpath "$dir")" != "$(realpath "$3")" ]; then
		echo "FAIL: $1 demo: rc=$rc, expected the $2 layout and $3: $out" >&2
		exit 1
	fi
}

expect "$build/reqtrace" "build tree" "$src/configs"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
expect "$tmp/prefix/bin/reqtrace" installed "$tmp/prefix/share/reqtrace/configs"
ln -s "$tmp/prefix/bin/reqtrace" "$tmp/reqtrace-link"
expect "$tmp/reqtrace-link" installed "$tmp/prefix/share/reqtrace/configs"
echo "ok: build tree, installed, symlinked"
