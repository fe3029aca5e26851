# SPDX-License-Identifier: BSD-2-Clause
# `cpack -G DEB` in a build configured with -DCMAKE_INSTALL_PREFIX=/usr makes
# reqtrace_<version>_<arch>.deb (docs/install.md, "Debian package"). The
# maintainer scripts are packaging/deb/, written by hand after debhelper's
# systemd snippets since the package is not built with debhelper.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME reqtrace)
set(CPACK_PACKAGE_VENDOR reqtrace)
set(CPACK_PACKAGE_CONTACT "reqtrace maintainers <reqtrace@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "request-lifecycle tracing daemon for AI inference servers")
# the long description; CPack puts the summary above it
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
	"reqtraced follows each HTTP request through an inference server with eBPF
probes (and, optionally, markers and CUPTI) and says where it waited:
backlog, queue, tokenize, prefill, decode, postprocess. The reqtrace
command queries the daemon and reads recordings; spans leave as Prometheus
metrics, OTLP and Chrome traces.")
# as dh_strip would: the probes attach to the marker library's and the GPU
# libraries' dynamic symbols (.dynsym), which stripping keeps
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# reqtrace_0.1.0_amd64.deb, Debian's file name
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the binaries' ELF needs (dpkg-shlibdeps, package dpkg-dev)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# the testbed's helpers find the marker library next to them, not through
# ld.so's path: tell dpkg-shlibdeps where it is
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
	${CMAKE_BINARY_DIR}/src/marker ${CMAKE_BINARY_DIR}/src/cupti)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Our own postinst/postrm replace CPack's, which would have run ldconfig for
# the libraries in /usr/lib/<arch>: the triggers file does it, as debhelper's
# packages do (packaging/deb/triggers).
# /etc/reqtrace/reqtraced.conf is a conffile: dpkg keeps the admin's edits
# across upgrades and removes it only on purge
configure_file(${CMAKE_SOURCE_DIR}/packaging/deb/conffiles.in
	${CMAKE_BINARY_DIR}/packaging/deb/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
	${CMAKE_BINARY_DIR}/packaging/deb/conffiles
	${CMAKE_SOURCE_DIR}/packaging/deb/postinst
	${CMAKE_SOURCE_DIR}/packaging/deb/prerm
	${CMAKE_SOURCE_DIR}/packaging/deb/postrm
	${CMAKE_SOURCE_DIR}/packaging/deb/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
