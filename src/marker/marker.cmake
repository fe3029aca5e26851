# SPDX-License-Identifier: BSD-2-Clause
# libreqtrace_marker.so.1: the marker ABI (include/reqtrace/marker.h). Not part
# of reqtrace_core: it is loaded into the traced program, never the daemon.
add_library(reqtrace_marker SHARED ${CMAKE_CURRENT_LIST_DIR}/marker.c)
target_include_directories(reqtrace_marker PUBLIC ${CMAKE_SOURCE_DIR}/include)
set_target_properties(reqtrace_marker PROPERTIES
	OUTPUT_NAME reqtrace_marker
	VERSION 1.0.0
	SOVERSION 1
	C_VISIBILITY_PRESET hidden
	LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/src/marker
	LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/marker.map)
target_link_options(reqtrace_marker PRIVATE
	"LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/marker.map")

# Test double: same symbols, records every call (LD_PRELOAD it; see the file).
add_library(reqtrace_marker_record SHARED ${CMAKE_CURRENT_LIST_DIR}/record/marker_record.c)
target_include_directories(reqtrace_marker_record PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(reqtrace_marker_record PRIVATE Threads::Threads)
set_target_properties(reqtrace_marker_record PROPERTIES
	C_VISIBILITY_PRESET hidden
	LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/src/marker)

# The marker libraries are loaded into other people's processes (a Python
# engine through ctypes): a sanitizer runtime dependency would make them
# unloadable there, and their bodies are empty anyway. Keep sanitizer flags
# of a RT_SANITIZE/RT_TSAN build off them.
foreach(t reqtrace_marker reqtrace_marker_record)
	foreach(p COMPILE_OPTIONS LINK_OPTIONS)
		get_target_property(opts ${t} ${p})
		if(opts)
			list(FILTER opts EXCLUDE REGEX "sanitize")
			set_target_properties(${t} PROPERTIES ${p} "${opts}")
		endif()
	endforeach()
endforeach()
