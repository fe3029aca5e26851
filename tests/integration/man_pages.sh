#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# man_pages.sh SOURCE_DIR (no root): docs/man/*.[18] render without a
# warning (groff -ww and man-db's --warnings), every subcommand in
# src/cli/main.c's table has its subsection in reqtrace.1, every option the
# daemon's usage names is in reqtraced.8, and the pages' version is the
# project's.
set -euo pipefail
src=$(cd "$1" && pwd)
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
version=$(sed -nE 's/^project\(reqtrace VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
for page in "$src"/docs/man/reqtrace.1 "$src"/docs/man/reqtraced.8; do
	w=$(groff -ww -man -Tutf8 -z "$page" 2>&1) || fail "groff $page exit"
	[ -z "$w" ] || fail "groff -ww $page: $w"
	w=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l $page exit"
	[ -z "$w" ] || fail "man --warnings $page: $w"
	grep -q "^\.TH [A-Z]* [18] [0-9-]* \"reqtrace $version\"" "$page" ||
		fail "$page: .TH does not name reqtrace $version"
done
n=0
for c in $(sed -nE 's/^\s*\{ "([a-z]+)", rt_cmd_[a-z]+,.*/\1/p' "$src/src/cli/main.c"); do
	n=$((n + 1))
	grep -qx "\.SS $c" "$src/docs/man/reqtrace.1" || fail "reqtrace.1: no .SS $c"
done
[ "$n" -ge 8 ] || fail "found $n subcommands in src/cli/main.c: has the table changed?"
m=0
daemon_page=$(sed 's/\\-/-/g' "$src/docs/man/reqtraced.8")
for o in $(grep -oE '^\s+"\s+--[a-z-]+' "$src/src/daemon/main.c" | grep -oE -- '--[a-z-]+' | sort -u); do
	m=$((m + 1))
	grep -qE -- "^\.BI? $o( |$)" <<<"$daemon_page" ||
		fail "reqtraced.8: option $o of reqtraced --help is not described"
done
[ "$m" -ge 15 ] || fail "found $m options in src/daemon/main.c's usage: has it changed?"
if [ "$fails" -ne 0 ]; then
	echo "man_pages: $fails failure(s)" >&2
	exit 1
fi
echo "ok: 2 pages render without warnings; $n subcommands in reqtrace.1, $m daemon options in reqtraced.8"
