#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# systemd_verify.sh BUILD_DIR: `systemd-analyze verify` accepts
# configs/reqtraced.service, warnings included. verify insists that
# ExecStart's binary exists, so the check runs on a copy pointing at the
# build's reqtraced; nothing else in the unit changes.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: systemd_verify.sh BUILD_DIR}" && pwd)
if ! command -v systemd-analyze >/dev/null; then
	echo "systemd-analyze missing (Debian package systemd; scripts/deps.sh)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s#^ExecStart=/usr/sbin/reqtraced #ExecStart=$build/reqtraced #" \
	"$src/configs/reqtraced.service" >"$tmp/reqtraced.service"
grep -q "^ExecStart=$build/reqtraced " "$tmp/reqtraced.service" || {
	echo "configs/reqtraced.service: ExecStart is not /usr/sbin/reqtraced" >&2
	exit 1
}
out=$(systemd-analyze verify "$tmp/reqtraced.service" 2>&1) || {
	echo "$out" >&2
	exit 1
}
# verify exits 0 on many warnings (unknown keys, bad values): any output fails
if [ -n "$out" ]; then
	echo "$out" >&2
	exit 1
fi
echo "systemd-analyze verify: clean"
systemd-analyze security --offline=yes "$tmp/reqtraced.service" | tail -1
