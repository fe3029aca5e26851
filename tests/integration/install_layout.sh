#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# install_layout.sh BUILD_DIR SOURCE_DIR (no root): `cmake --install` into a
# temporary prefix gives docs/install.md's layout, every row of its table and
# nothing undocumented (no test binary); the programs run from there; the
# installed unit names the configured paths; the marker header and library
# build and link a program.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/integration/install_rows.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

libdir=$(cache_value "$build" CMAKE_INSTALL_LIBDIR)
cprefix=$(cache_value "$build" CMAKE_INSTALL_PREFIX)
sysconf=$(cache_value "$build" CMAKE_INSTALL_SYSCONFDIR)
version=$(cache_value "$build" CMAKE_PROJECT_VERSION)
[ -n "$version" ] || version=$(sed -nE 's/^project\(reqtrace VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
if [ "$cprefix" = /usr ] && [ "${sysconf#/}" = "$sysconf" ]; then
	sysconf=/etc # GNUInstallDirs' /usr rule, as cmake/RtInstall.cmake applies it
fi
cuda=0
[ -e "$build/src/cupti/libreqtrace_cupti.so" ] && cuda=1

# A build for /usr puts the config in /etc: stage it all under DESTDIR then.
if [ "${sysconf#/}" != "$sysconf" ]; then
	DESTDIR="$tmp/root" cmake --install "$build" --prefix "$cprefix" >"$tmp/log"
	prefix=$tmp/root$cprefix
	etcroot=$tmp/root
else
	cmake --install "$build" --prefix "$tmp/p" >"$tmp/log"
	prefix=$tmp/p
	etcroot=
fi

n=0
declare -A documented=()
while read -r p; do
	n=$((n + 1))
	f=$(at "$prefix" "$p")
	[ "${p#/}" != "$p" ] && f=$etcroot$p
	documented[$f]=1
	[ -e "$f" ] || fail "documented but not installed: $p"
done < <(install_rows "$src" "$libdir" "$sysconf" "$cuda")
[ "$n" -ge 20 ] || fail "docs/install.md's layout table has $n rows: has its format changed?"

# every installed file is documented, by its row or as one of a folder's
# (docs, scenarios, licences) or the marker library's real file
undocumented=0
while read -r f; do
	[ -n "${documented[$f]:-}" ] && continue
	case ${f#"$prefix"/} in
	share/doc/reqtrace/* | share/reqtrace/configs/scenarios/*.conf) continue ;;
	share/reqtrace/configs/packs/*.conf) continue ;;
	"$libdir"/libreqtrace_marker.so.1.0.0) continue ;;
	esac
	fail "installed but not in docs/install.md: $f"
	undocumented=$((undocumented + 1))
done < <(find "$tmp" -path "$tmp/log" -prune -o \( -type f -o -type l \) -print)
for d in README.md deploy.md install.md metrics.md spans.md; do
	[ -f "$prefix/share/doc/reqtrace/$d" ] || fail "share/doc/reqtrace/$d missing"
done
[ "$(find "$prefix/share/reqtrace/configs/scenarios" -name '*.conf' | wc -l)" -eq \
	"$(find "$src/configs/scenarios" -name '*.conf' | wc -l)" ] || fail "not every scenario installed"

# the programs run from the prefix
out=$("$prefix/bin/reqtrace" --version) || fail "reqtrace --version exit $?"
[ "$out" = "reqtrace $version" ] || fail "reqtrace --version: '$out', expected 'reqtrace $version'"
out=$("$prefix/bin/reqtrace" --help) || fail "reqtrace --help exit $?"
grep -q '^usage: reqtrace' <<<"$out" || fail "reqtrace --help: $out"
if [ -e "$build/reqtraced" ]; then
	out=$("$prefix/sbin/reqtraced" --version) || fail "reqtraced --version exit $?"
	grep -q "$version" <<<"$out" || fail "reqtraced --version: '$out', expected $version"
	out=$("$prefix/sbin/reqtraced" --help) || fail "reqtraced --help exit $?"
	grep -q '^usage: reqtraced' <<<"$out" || fail "reqtraced --help: $out"
fi
# RPATH to the installed marker library (the build tree's is not there)
"$prefix/libexec/reqtrace/reqtrace-testbed" --help >/dev/null 2>&1 ||
	fail "reqtrace-testbed --help from the prefix"
"$prefix/libexec/reqtrace/reqtrace-load" --help >/dev/null 2>&1 ||
	fail "reqtrace-load --help from the prefix"

# the installed unit names the configured daemon and config, not the tree's
unit=$(at "$prefix" lib/systemd/system/reqtraced.service)
exec_line=$(grep '^ExecStart=' "$unit")
want="ExecStart=$cprefix/sbin/reqtraced --config $(at "$cprefix" "$sysconf")/reqtrace/reqtraced.conf "
[ "${exec_line#"$want"}" != "$exec_line" ] || fail "unit: '$exec_line', expected '$want...'"
cmp -s <(grep -v '^ExecStart=\|^Documentation=\|^#' "$unit") \
	<(grep -v '^ExecStart=\|^Documentation=\|^#' "$src/configs/reqtraced.service") ||
	fail "installed unit differs from configs/reqtraced.service beyond its paths"

# man pages render from the prefix without warnings
for m in share/man/man1/reqtrace.1.gz share/man/man8/reqtraced.8.gz; do
	w=$(MANWIDTH=80 man --warnings -l "$prefix/$m" 2>&1 >/dev/null) || fail "man -l $m exit"
	[ -z "$w" ] || fail "man -l $m: $w"
done

# the marker API builds and links against the prefix alone
cat >"$tmp/m.c" <<'C'
#include <reqtrace/marker.h>
int main(void)
{
	rt_mark_begin("r1", RT_PHASE_QUEUE);
	rt_mark_end("r1", RT_PHASE_QUEUE);
	return RT_MARKER_ABI_VERSION == 2 ? 0 : 1;
}
C
if cc -std=c11 -Wall -Werror -I"$prefix/include" "$tmp/m.c" -L"$prefix/$libdir" \
	-lreqtrace_marker -o "$tmp/m" 2>"$tmp/cc.log"; then
	LD_LIBRARY_PATH="$prefix/$libdir" "$tmp/m" || fail "marker program exit $?"
	grep -q 'NEEDED.*libreqtrace_marker.so.1' <<<"$(readelf -d "$tmp/m")" ||
		fail "marker program does not need libreqtrace_marker.so.1"
else
	fail "marker program does not build: $(cat "$tmp/cc.log")"
fi

if [ "$fails" -ne 0 ]; then
	echo "install_layout: $fails failure(s)" >&2
	exit 1
fi
echo "ok: $n documented paths installed under a temporary prefix, nothing undocumented; programs run; unit, man pages, marker API checked"
