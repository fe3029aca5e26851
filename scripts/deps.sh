#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what reqtrace needs to build, test and run on Debian 12.
# Idempotent: skips apt when everything is already there.
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
      libuv1-dev libcjson-dev libinih-dev libcmocka-dev libcurl4-openssl-dev python3 procps iproute2
      util-linux clang-format binutils openssl passwd prometheus systemd
      dpkg-dev groff-base man-db
      libgomp1)
# the vLLM-style test server (tests/engines/vllm) and the zmq capture test:
# pyzmq and msgpack, as Debian ships them
pkgs+=(python3-zmq python3-msgpack)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "deps: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
