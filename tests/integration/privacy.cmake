# SPDX-License-Identifier: BSD-2-Clause
# Privacy (docs/privacy.md): secrets sent to a traced testbed reach no
# recording, span, CLI output or log. Starts reqtraced: label root.
find_program(RT_PRIVACY_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_PRIVACY_PYTHON)
	find_program(RT_PRIVACY_PYTHON python3 REQUIRED)
endif()
rt_script_test(privacy LABEL root TIMEOUT 240
	COMMAND ${RT_PRIVACY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/privacy.py)
