# SPDX-License-Identifier: BSD-2-Clause
# The verdict's findings (docs/verdict.md): from the committed recordings
# (no root), and live over every testbed scenario (root).
find_program(RT_VERDICT_PYTHON NAMES python3 REQUIRED)
rt_script_test(verdict_fixtures LABEL unit TIMEOUT 120
	COMMAND ${RT_VERDICT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/verdict_fixtures.py)
rt_script_test(verdict_live LABEL root TIMEOUT 300
	COMMAND ${RT_VERDICT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/verdict_live.py)
