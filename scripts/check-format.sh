#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when a C file differs from .clang-format (vmlinux.h is generated).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' | grep -v '^bpf/vmlinux/.*/vmlinux.h$' || true)
[ -n "$files" ] || exit 0
bad=0
for f in $files; do
	if ! clang-format --style=file "$f" | cmp -s - "$f"; then
		echo "format: $f differs from .clang-format (run: clang-format -i $f)"
		bad=1
	fi
done
exit $bad
