# SPDX-License-Identifier: BSD-2-Clause
# Operator experience (issue 5): targets in every shape, control-socket
# access, connections reqtrace cannot read. Label root: they start a real
# reqtraced, create cgroups, namespaces and users, and fail instead of
# skipping when CI=true.
find_program(RT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(rt_operator ${CMAKE_CURRENT_LIST_DIR})
foreach(t targets access unreadable)
	rt_script_test(operator_${t} LABEL root TIMEOUT 180
		COMMAND ${RT_PYTHON3} ${rt_operator}/${t}.py)
endforeach()
