#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# deb_package.sh BUILD_DIR SOURCE_DIR (root): the Debian package, as
# docs/install.md builds it, on a machine where systemd is not running.
#  1. configure BUILD/deb-package with the prefix /usr (no tests, no
#     sanitizers), build, `cpack -G DEB`; check the control data: name,
#     computed Depends, the conffile, the maintainer scripts
#  2. dpkg -i: docs/install.md's layout under /usr and /etc, the programs run
#     from /usr/bin and /usr/sbin, the unit enabled by deb-systemd-helper
#  3. dpkg -r: the programs go, the edited conffile stays, the unit is masked
#  4. dpkg --purge: every file, /etc/reqtrace, /var/lib/reqtrace and the
#     enablement state gone, and dpkg knows nothing of reqtrace
# A trap purges the package whatever happens. Not root: skip (77), or fail
# under CI=true. It refuses to run where reqtrace is already installed or
# /etc/reqtrace or /var/lib/reqtrace exist: it would remove them.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
. "$src/tests/integration/install_rows.sh"

cannot_run() {
	if [[ ${CI:-} =~ ^(1|true|yes)$ ]]; then
		echo "FAIL (CI=true, so this is not skipped): $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" -eq 0 ] || cannot_run "needs root for dpkg -i"
for t in dpkg-shlibdeps cpack dpkg-deb; do
	command -v "$t" >/dev/null || cannot_run "$t missing (scripts/deps.sh: dpkg-dev, cmake)"
done
if dpkg-query -W reqtrace >/dev/null 2>&1; then
	echo "FAIL: a reqtrace package is installed here already; not touching it" >&2
	exit 1
fi
for d in /etc/reqtrace /var/lib/reqtrace; do
	if [ -e "$d" ]; then
		echo "FAIL: $d exists without the package; the purge would remove it" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
installed=0
cleanup() {
	if [ "$installed" = 1 ] && dpkg-query -W reqtrace >/dev/null 2>&1; then
		dpkg --purge reqtrace >/dev/null 2>&1 || echo "cleanup: dpkg --purge reqtrace failed" >&2
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# 1. build the package
pkg=$build/deb-package
cmake -S "$src" -B "$pkg" -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_SANITIZE=OFF -DRT_TSAN=OFF \
	-DRT_WITH_CUPTI="$(cache_value "$build" RT_WITH_CUPTI)" \
	-DRT_CUDA_ROOT="$(cache_value "$build" RT_CUDA_ROOT)" >"$tmp/configure.log" ||
	{ cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$pkg" -j"$(nproc)" >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log" >&2; exit 1; }
rm -f "$pkg"/reqtrace_*.deb
(cd "$pkg" && cpack -G DEB) >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; exit 1; }
deb=$(ls "$pkg"/reqtrace_*.deb)
echo "built $deb ($(stat -c %s "$deb") bytes)"
libdir=$(cache_value "$pkg" CMAKE_INSTALL_LIBDIR)
cuda=0
[ -e "$pkg/src/cupti/libreqtrace_cupti.so" ] && cuda=1

info=$(dpkg-deb -f "$deb")
grep -qx 'Package: reqtrace' <<<"$info" || fail "control: not Package: reqtrace"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libbpf1 libuv1 libcjson1 libinih1; do
	grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
dpkg-deb -e "$deb" "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/reqtrace/reqtraced.conf ] ||
	fail "conffiles: '$(cat "$tmp/control/conffiles")'"
for s in postinst prerm postrm; do
	[ -x "$tmp/control/$s" ] || fail "no executable $s in the package"
	sh -n "$tmp/control/$s" || fail "$s: syntax"
done
contents=$(dpkg-deb -c "$deb")
for bad in test_ bench_ bpf_capture marker_record mock_cupti fake_cuda; do
	! grep -q "$bad" <<<"$contents" || fail "package holds a test file ($bad)"
done

# 2. install
[ ! -d /run/systemd/system ] || echo "note: systemd runs here; the unit will be started"
installed=1
dpkg -i "$deb" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "dpkg -i"; }
status=$(dpkg-query -W -f='${Status}' reqtrace 2>/dev/null || true)
[ "$status" = "install ok installed" ] || fail "after dpkg -i: status '$status'"
version=$(dpkg-query -W -f='${Version}' reqtrace)
n=0
while read -r p; do
	n=$((n + 1))
	f=$(at /usr "$p")
	[ -e "$f" ] || fail "installed package lacks $f"
	grep -qxF "$f" <(dpkg -L reqtrace) || fail "$f is not the package's (dpkg -L)"
done < <(install_rows "$src" "$libdir" /etc "$cuda")
out=$(/usr/sbin/reqtraced --version) || fail "/usr/sbin/reqtraced --version exit $?"
grep -q "$version" <<<"$out" || fail "reqtraced --version '$out', package $version"
out=$(/usr/bin/reqtrace --version) || fail "/usr/bin/reqtrace --version exit $?"
[ "$out" = "reqtrace $version" ] || fail "reqtrace --version '$out', package $version"
/usr/libexec/reqtrace/reqtrace-testbed --help >/dev/null 2>&1 || fail "reqtrace-testbed --help"
grep -q '^ExecStart=/usr/sbin/reqtraced --config /etc/reqtrace/reqtraced.conf ' \
	/usr/lib/systemd/system/reqtraced.service || fail "installed unit's ExecStart"
wants=/etc/systemd/system/multi-user.target.wants/reqtraced.service
# deb-systemd-helper links /lib/... where /lib is /usr/lib (merged /usr)
[ -L "$wants" ] && [ "$(readlink -f "$wants")" = "$(readlink -f /usr/lib/systemd/system/reqtraced.service)" ] ||
	fail "unit not enabled: $wants -> '$(readlink "$wants" 2>/dev/null)'"
ldconfig -p | grep -q 'libreqtrace_marker.so.1 ' || fail "ldconfig does not know libreqtrace_marker.so.1"

# 3. remove: the admin's edit and the recordings stay until purge
echo "; edited by deb_package.sh" >>/etc/reqtrace/reqtraced.conf
mkdir -p /var/lib/reqtrace && echo x >/var/lib/reqtrace/run.rtrace
dpkg -r reqtrace >"$tmp/remove.log" 2>&1 || { cat "$tmp/remove.log" >&2; fail "dpkg -r"; }
[ ! -e /usr/sbin/reqtraced ] || fail "dpkg -r left /usr/sbin/reqtraced"
grep -q 'edited by deb_package.sh' /etc/reqtrace/reqtraced.conf 2>/dev/null ||
	fail "dpkg -r removed or replaced the edited conffile"
[ "$(readlink /etc/systemd/system/reqtraced.service 2>/dev/null)" = /dev/null ] ||
	fail "dpkg -r did not mask the unit's enablement"

# 4. purge
dpkg --purge reqtrace >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; fail "dpkg --purge"; }
left=$(dpkg -l reqtrace 2>/dev/null | grep -E '^[a-z]{2} +reqtrace ' || true)
[ -z "$left" ] || fail "dpkg -l still lists: $left"
while read -r p; do
	f=$(at /usr "$p")
	[ ! -e "$f" ] || fail "purge left $f"
done < <(install_rows "$src" "$libdir" /etc "$cuda")
for f in /etc/reqtrace /var/lib/reqtrace /run/reqtrace /etc/systemd/system/reqtraced.service \
	"$wants" /usr/share/doc/reqtrace /usr/share/reqtrace /usr/libexec/reqtrace \
	/usr/include/reqtrace; do
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "purge left $f"
done
state=$(grep -rl reqtraced /var/lib/systemd/deb-systemd-helper-enabled \
	/var/lib/systemd/deb-systemd-helper-masked 2>/dev/null || true)
state+=$(find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
	-name '*reqtraced*' 2>/dev/null || true)
[ -z "$state" ] || fail "deb-systemd-helper state left: $state"
installed=0

if [ "$fails" -ne 0 ]; then
	echo "deb_package: $fails failure(s)" >&2
	exit 1
fi
echo "ok: $(basename "$deb") built (Depends computed), installed ($n documented paths," \
	"programs run, unit enabled), removed (conffile kept, unit masked), purged (nothing left)"
