# SPDX-License-Identifier: BSD-2-Clause
# rt_module(<name> SOURCES <files...> [PUBLIC <libs...>] [PRIVATE <libs...>])
#
# One static library per module folder, rt_<name>, with the layout
#
#   src/<name>/include/<name>/*.h   public: what other modules may include,
#                                   as "<name>/x.h"
#   src/<name>/*.h                  private: included by the module's own
#                                   files only, as "x.h"
#
# Only the include/ folder (and the wire format in include/reqtrace/) is on
# the include path of a module's users, so a cross-module include of a
# private header, or of a module that is not a declared dependency, does
# not compile. Dependencies are other rt_<module> targets or imported
# libraries; PUBLIC when a public header includes theirs, else PRIVATE.
function(rt_module name)
	cmake_parse_arguments(M "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
	add_library(rt_${name} STATIC ${M_SOURCES})
	target_include_directories(rt_${name}
		PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/include
		PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
	target_link_libraries(rt_${name} PUBLIC ${M_PUBLIC} PRIVATE ${M_PRIVATE})
	# unit tests and the CUPTI test daemon link modules into shared objects too
	set_target_properties(rt_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
