#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs node-llama-cpp 3.21.1 (CPU prebuilt binaries only) into a cache
# directory outside the source tree, once; later runs find it there.
#
# usage: install.sh [DIR]
#   DIR defaults to $RT_ENGINE_CACHE/node-llama-cpp-3.21.1, with
#   RT_ENGINE_CACHE defaulting to /var/cache/reqtrace-tests when that is
#   writable, else $RT_BINARY_DIR/engines (else build/engines).
# Prints the directory (the one holding node_modules) as its last line.
#
# Node: node-llama-cpp needs Node >= 20. This script does NOT install Node.
# Debian 12's own nodejs is 18.x (18.20.4 in bookworm-security), so
# `apt-get install nodejs` is not enough; the CI image carries Node 20 from
# NodeSource. With node missing or older than 20 the script says so and
# exits 2 (the test that calls it fails under CI=true and skips elsewhere).
# Exit codes: 0 installed or cached, 2 node/npm missing or too old,
# 3 npm install failed (network), 4 the installed binaries do not load.
set -euo pipefail

VERSION=3.21.1
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v node >/dev/null 2>&1; then
	echo "install.sh: node not found; node-llama-cpp $VERSION needs Node >= 20" \
		"(Debian 12's nodejs 18 is too old: install Node 20+, e.g. from NodeSource)" >&2
	exit 2
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
	echo "install.sh: node $(node --version) is too old; node-llama-cpp $VERSION needs" \
		"Node >= 20 (Debian 12's nodejs 18 is not enough: install Node 20+, e.g. from" \
		"NodeSource); not installing Node here" >&2
	exit 2
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "install.sh: npm not found (it ships with Node 20+ from NodeSource)" >&2
	exit 2
fi

case "$(uname -m)" in
x86_64) plat=linux-x64 ;;
aarch64) plat=linux-arm64 ;;
*)
	echo "install.sh: no node-llama-cpp CPU prebuilt for $(uname -m)" >&2
	exit 2
	;;
esac

if [ -n "${1:-}" ]; then
	dir=$1
else
	if [ -z "${RT_ENGINE_CACHE:-}" ]; then
		if mkdir -p /var/cache/reqtrace-tests 2>/dev/null && [ -w /var/cache/reqtrace-tests ]; then
			RT_ENGINE_CACHE=/var/cache/reqtrace-tests
		else
			RT_ENGINE_CACHE=${RT_BINARY_DIR:-$here/../../../build}/engines
		fi
	fi
	dir=$RT_ENGINE_CACHE/node-llama-cpp-$VERSION
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp=$dir/.installed
bins=$dir/node_modules/@node-llama-cpp/$plat/bins/$plat

# the normal and ASan test trees may run this at the same time
exec 9>"$dir/.lock"
flock 9

smoke() {
	# gpu: false and build: "never" load only the CPU prebuilt: no CUDA or
	# Vulkan probing, no fallback to compiling llama.cpp. A file, not node -e:
	# node-llama-cpp tests its binding in a child started with our execArgv,
	# and --input-type would break that child.
	cat >"$dir/smoke.mjs" <<'JS'
import {getLlama} from "node-llama-cpp";
const l = await getLlama({gpu: false, build: "never", logLevel: "error"});
if (l.gpu !== false || l.buildType !== "prebuilt")
	throw new Error("not the CPU prebuilt: gpu=" + l.gpu + " build=" + l.buildType);
console.log("node-llama-cpp: gpu=" + l.gpu + " build=" + l.buildType +
	" llama.cpp=" + l.llamaCppRelease.release);
await l.dispose();
JS
	(cd "$dir" && node smoke.mjs)
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$VERSION $plat" ] && [ -d "$bins" ]; then
	echo "install.sh: node-llama-cpp $VERSION already in $dir" >&2
else
	echo "install.sh: npm i -E node-llama-cpp@$VERSION (+ @node-llama-cpp/$plat) into $dir" >&2
	rm -f "$stamp"
	t0=$SECONDS
	[ -f "$dir/package.json" ] || echo '{"name":"reqtrace-engine-llama","private":true}' >"$dir/package.json"
	# --omit=optional skips the CUDA/Vulkan/other-platform binary packages
	# (about 650 MB); the one CPU package is named explicitly instead.
	# --ignore-scripts: node-llama-cpp's postinstall would try to download or
	# build llama.cpp when no prebuilt fits; here a missing prebuilt is an error.
	if ! (cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm i -E --no-audit --no-fund \
		--ignore-scripts --omit=optional --loglevel=error \
		"node-llama-cpp@$VERSION" "@node-llama-cpp/$plat@$VERSION" >&2); then
		echo "install.sh: npm install failed (is registry.npmjs.org reachable?)" >&2
		exit 3
	fi
	echo "install.sh: npm took $((SECONDS - t0)) s" >&2
fi
lib=$(ls "$bins"/libllama*.so 2>/dev/null | grep -v common | head -1 || true)
if [ -z "$lib" ]; then
	echo "install.sh: no libllama in $bins" >&2
	exit 4
fi
# (no grep -q: under pipefail nm's SIGPIPE would fail the pipe)
if command -v nm >/dev/null 2>&1 &&
	[ "$(nm -D --defined-only "$lib" | grep -c ' T llama_decode$')" != 1 ]; then
	echo "install.sh: $lib does not export llama_decode" >&2
	exit 4
fi
if ! smoke >&2; then
	echo "install.sh: the prebuilt node-llama-cpp binaries do not load" >&2
	exit 4
fi
echo "$VERSION $plat" >"$stamp"
echo "install.sh: libllama: $lib" >&2
echo "$dir"
