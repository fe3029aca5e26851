# SPDX-License-Identifier: BSD-2-Clause
# Cross-compiling for arm64 (Grace Hopper / Grace Blackwell nodes) on a
# Debian x86-64 host with Debian's cross gcc and the arm64 multiarch -dev
# packages (scripts/cross-arm64.sh installs them). Multiarch keeps the arm64
# libraries in /usr/lib/aarch64-linux-gnu beside the host's, where the
# cross gcc and ld already look, so no sysroot: only pkg-config must be
# told to read the arm64 .pc files instead of the host's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64) # also picks RT_BPF_ARCH=arm64 (cmake/BpfSkeleton.cmake)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# LIBDIR replaces pkg-config's default search path (PKG_CONFIG_PATH would add to it)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# programs (clang, bpftool, python) are the host's; libraries and headers the target's
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
