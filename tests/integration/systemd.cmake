# SPDX-License-Identifier: BSD-2-Clause
# configs/reqtraced.service: systemd-analyze accepts it (no root, no BPF),
# and reqtraced under the unit's capability set still traces (root).
find_program(RT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(systemd_verify LABEL unit TIMEOUT 60
	COMMAND ${CMAKE_CURRENT_LIST_DIR}/systemd_verify.sh ${CMAKE_BINARY_DIR})
rt_script_test(systemd_caps LABEL root TIMEOUT 300
	COMMAND ${RT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/systemd_caps.py)
