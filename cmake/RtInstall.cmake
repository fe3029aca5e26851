# SPDX-License-Identifier: BSD-2-Clause
# What `cmake --install` lays out besides the programs and libraries (their
# rules sit beside their targets in src/*/CMakeLists.txt). docs/install.md
# lists the whole layout; tests/integration/install_layout.sh checks it.
include(GNUInstallDirs)

# The config file belongs in /etc for a /usr install (GNUInstallDirs' own
# rule for CMAKE_INSTALL_FULL_SYSCONFDIR), in PREFIX/etc otherwise. The
# relative form keeps `cmake --install --prefix DIR` inside DIR.
set(RT_INSTALL_SYSCONFDIR ${CMAKE_INSTALL_SYSCONFDIR})
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT IS_ABSOLUTE "${RT_INSTALL_SYSCONFDIR}")
	set(RT_INSTALL_SYSCONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR})
endif()
set(RT_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
	"Where the systemd unit is installed (relative: under the prefix)")

# The tree's unit names the Debian package's paths; an install elsewhere
# gets a copy naming its own daemon, config and docs.
set(rt_unit_src ${CMAKE_SOURCE_DIR}/configs/reqtraced.service)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${rt_unit_src})
if(IS_ABSOLUTE "${RT_INSTALL_SYSCONFDIR}")
	set(rt_full_sysconf ${RT_INSTALL_SYSCONFDIR})
else()
	set(rt_full_sysconf ${CMAKE_INSTALL_PREFIX}/${RT_INSTALL_SYSCONFDIR})
endif()
file(READ ${rt_unit_src} rt_unit)
string(REPLACE "/usr/sbin/reqtraced " "${CMAKE_INSTALL_FULL_SBINDIR}/reqtraced " rt_unit "${rt_unit}")
string(REPLACE "/etc/reqtrace/" "${rt_full_sysconf}/reqtrace/" rt_unit "${rt_unit}")
string(REPLACE "file:/usr/share/doc/reqtrace/" "file:${CMAKE_INSTALL_FULL_DOCDIR}/" rt_unit
	"${rt_unit}")
file(WRITE ${CMAKE_BINARY_DIR}/install/reqtraced.service "${rt_unit}")

# 0640: exporter keys may carry credentials (OTLP headers); only root's
# daemon reads the file
install(FILES ${CMAKE_SOURCE_DIR}/configs/reqtraced.conf
	DESTINATION ${RT_INSTALL_SYSCONFDIR}/reqtrace
	PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
install(FILES ${CMAKE_BINARY_DIR}/install/reqtraced.service DESTINATION ${RT_SYSTEMD_UNITDIR})

# The marker API: the header and the one it includes (include/reqtrace/marker.h)
install(FILES ${CMAKE_SOURCE_DIR}/include/reqtrace/marker.h
	${CMAKE_SOURCE_DIR}/include/reqtrace/phase.h
	DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/reqtrace)
install(FILES ${CMAKE_SOURCE_DIR}/src/marker/python/reqtrace_marker.py
	DESTINATION ${CMAKE_INSTALL_DATADIR}/reqtrace/python)

# Engine packs (docs/packs.md): reqtraced's default pack_dir
file(GLOB rt_packs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/configs/packs/*.conf)
install(FILES ${rt_packs} DESTINATION ${CMAKE_INSTALL_DATADIR}/reqtrace/configs/packs)

# Fleet pieces: the Grafana dashboard and the Collector example (docs/deploy.md)
install(FILES ${CMAKE_SOURCE_DIR}/configs/grafana/reqtrace.json
	DESTINATION ${CMAKE_INSTALL_DATADIR}/reqtrace/grafana)
install(FILES ${CMAKE_SOURCE_DIR}/configs/otel-collector.yaml
	DESTINATION ${CMAKE_INSTALL_DATADIR}/reqtrace/examples)

# Docs: every page, the README and the licences. `copyright` is the name
# Debian looks for; the tree's LICENSE says which licence covers which file.
file(GLOB rt_doc_pages CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${rt_doc_pages} ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/LICENSES DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Man pages, compressed as Debian policy wants them (man reads .gz as is).
# -n: no name or time stamp in the header, so the output is reproducible.
find_program(RT_GZIP gzip REQUIRED)
set(rt_man_gz)
foreach(page reqtrace.1 reqtraced.8)
	string(REGEX REPLACE ".*\\.([0-9])$" "\\1" sec ${page})
	set(out ${CMAKE_BINARY_DIR}/install/man/${page}.gz)
	add_custom_command(OUTPUT ${out}
		COMMAND ${RT_GZIP} -9nc ${CMAKE_SOURCE_DIR}/docs/man/${page} > ${out}
		DEPENDS ${CMAKE_SOURCE_DIR}/docs/man/${page}
		COMMENT "man page ${page}")
	install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sec})
	list(APPEND rt_man_gz ${out})
endforeach()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/install/man)
add_custom_target(rt_man_pages ALL DEPENDS ${rt_man_gz})
