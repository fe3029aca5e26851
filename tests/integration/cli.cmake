# SPDX-License-Identifier: BSD-2-Clause
# The CLI's views (show, top, why, demo) on the committed recording and live:
# starts reqtraced, so label root.
find_program(RT_CLI_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_CLI_PYTHON)
	find_program(RT_CLI_PYTHON python3 REQUIRED)
endif()
rt_script_test(cli_views LABEL root TIMEOUT 180
	COMMAND ${RT_CLI_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/cli_views.py)
