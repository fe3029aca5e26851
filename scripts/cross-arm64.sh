#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/cross-arm64.sh [BUILD_DIR]: cross-builds reqtrace for arm64 into
# build-arm64 (docs/architecture.md, "Architectures"): the daemon and CLI
# with Debian's aarch64 gcc and arm64 multiarch libraries, the BPF objects
# with -D__TARGET_ARCH_arm64 and their skeletons with the host's bpftool.
# Nothing here runs on arm64; a build that compiles and links is the check.
# Installs its packages like scripts/deps.sh: apt only when one is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-arm64}

pkgs=(file gcc-aarch64-linux-gnu libc6-dev-arm64-cross libbpf-dev:arm64 libelf-dev:arm64
      zlib1g-dev:arm64 libuv1-dev:arm64 libcjson-dev:arm64 libinih-dev:arm64
      libcurl4-openssl-dev:arm64)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "cross-arm64: installing ${missing[*]}"
	dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUPTI library only where the toolkit has arm64 (sbsa) headers: an
# x86-64 toolkit's target folder says nothing about arm64's.
cupti=(-DRT_WITH_CUPTI=OFF)
for t in sbsa-linux aarch64-linux; do
	if [ -f "/usr/local/cuda/targets/$t/include/cupti.h" ]; then
		cupti=(-DRT_WITH_CUPTI=ON "-DRT_CUDA_ROOT=/usr/local/cuda/targets/$t")
		break
	fi
done

# tests off: cmocka executables could not run here; the x86 BPF objects are
# the native build's, so they are not compile-checked a second time
cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DRT_BPF_CHECK_ARCHES= \
	"${cupti[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"

for exe in "$dir/reqtraced" "$dir/reqtrace"; do
	file -b "$exe" | grep -q 'ARM aarch64' || { echo "cross-arm64: $exe is not arm64: $(file -b "$exe")" >&2; exit 1; }
done
echo "cross-arm64: $dir: $(file -b "$dir/reqtraced" | cut -d, -f1-2)"
