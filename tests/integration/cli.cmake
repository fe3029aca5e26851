# SPDX-License-Identifier: BSD-2-Clause
# The CLI's views (show, top, why, demo) on the committed recording and live:
# starts reqtraced, so label root.
find_program(RT_CLI_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_CLI_PYTHON)
	find_program(RT_CLI_PYTHON python3 REQUIRED)
endif()
rt_script_test(cli_views LABEL root TIMEOUT 180
	COMMAND ${RT_CLI_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/cli_views.py)

# Where demo finds its programs: the build tree, an installed copy, a symlink
# (starts nothing: an unknown scenario stops it after the search).
if(TARGET reqtraced)
	rt_script_test(demo_locate LABEL unit TIMEOUT 60
		COMMAND ${CMAKE_CURRENT_LIST_DIR}/demo_locate.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
endif()
