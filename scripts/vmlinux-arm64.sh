#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Regenerates bpf/vmlinux/arm64/vmlinux.h from a Debian arm64 kernel's BTF.
# There is no arm64 machine here to read /sys/kernel/btf/vmlinux from, but
# Debian's kernels are built with CONFIG_DEBUG_INFO_BTF and the arm64 boot
# Image is uncompressed, so its .BTF blob can be cut out of the file by its
# header and dumped with bpftool. The cloud flavour is the small download
# (~21 MB); the types the programs use are the same in every flavour, and
# CO-RE relocates the field offsets on the machine that loads them anyway.
# Usage: scripts/vmlinux-arm64.sh [debian package name]
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${1:-$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
	sed -n 's/.*Depends: \(linux-image-.*-cloud-arm64\)\(:arm64\)\{0,1\}$/\1-unsigned/p' | head -1)}
[ -n "$pkg" ] || { echo "vmlinux-arm64: no arm64 kernel package (dpkg --add-architecture arm64; apt-get update)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$pkg:arm64" >/dev/null)
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
python3 - "$tmp"/x/boot/vmlinuz-* "$tmp/vmlinux.btf" <<'PY'
import struct, sys
img = open(sys.argv[1], 'rb').read()
# struct btf_header: magic 0xeb9f, version 1, flags, hdr_len, type_off, type_len, str_off, str_len
i = 0
while True:
    i = img.find(b'\x9f\xeb\x01\x00', i)
    if i < 0:
        sys.exit('vmlinux-arm64: no BTF in ' + sys.argv[1])
    hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from('<5I', img, i + 4)
    if hdr_len == 24 and type_off == 0 and str_off == type_len and str_len > 65536:
        break
    i += 1
open(sys.argv[2], 'wb').write(img[i:i + hdr_len + str_off + str_len])
PY
bpftool btf dump file "$tmp/vmlinux.btf" format c > bpf/vmlinux/arm64/vmlinux.h
echo "bpf/vmlinux/arm64/vmlinux.h from $pkg ($(wc -l < bpf/vmlinux/arm64/vmlinux.h) lines)"
