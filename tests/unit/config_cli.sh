#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# config_cli.sh REQTRACED: a bad config file or a bad flag over a good file
# stops reqtraced with exit status 2 and a message naming file, line and
# key, before it loads BPF or opens a socket (so it needs no privileges).
set -euo pipefail
rtd=$1
src=${RT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

expect() { # expect WANT_STDERR ARGS...
	local want=$1 rc=0
	shift
	timeout 20 "$rtd" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 2 ] || [ "$(cat "$tmp/err")" != "$want" ]; then
		echo "FAIL: reqtraced $*: rc $rc (want 2)"
		echo "  got:  $(cat "$tmp/err")"
		echo "  want: $want"
		fail=1
	else
		echo "ok: reqtraced $*"
	fi
}

printf '[daemon]\nlog_level = info\n\n[limits]\nring_size = 8Q\n' >"$tmp/bad.conf"
expect "reqtraced: $tmp/bad.conf:5: key 'ring_size': bad size '8Q' (want a number with optional K/M/G, 4096 to 1G)" \
	--config "$tmp/bad.conf"
printf '[exporters]\nmetrics_listen = 127.0.0.1:99999\n' >"$tmp/addr.conf"
expect "reqtraced: $tmp/addr.conf:2: key 'metrics_listen': bad address '127.0.0.1:99999' (port not in 1..65535)" \
	--config "$tmp/addr.conf" --pid 1
expect "reqtraced: $tmp/none.conf: No such file or directory" --config "$tmp/none.conf"
# a good file and a bad flag: the flag's message, same wording as the key's
expect "reqtraced: --ring-size: bad size '8Q' (want a number with optional K/M/G, 4096 to 1G)" \
	--config "$src/configs/reqtraced.conf" --ring-size 8Q
expect "reqtraced: --max-vllm-requests: bad number '0' (want 1 to 10000000, or auto)" \
	--config "$src/configs/reqtraced.conf" --max-vllm-requests 0
printf '[limits]\nmax_vllm_requests = -3\n' >"$tmp/vllm.conf"
expect "reqtraced: $tmp/vllm.conf:2: key 'max_vllm_requests': bad number '-3' (want 1 to 10000000, or auto)" \
	--config "$tmp/vllm.conf"
expect "reqtraced: --config given twice" --config "$tmp/bad.conf" --config "$tmp/bad.conf"
exit $fail
