# SPDX-License-Identifier: BSD-2-Clause
# reqtrace export on the committed recordings: Trace Event JSON checked
# against replay --json, jsonl byte for byte, --since through a fake daemon
# socket. Needs neither root nor BPF, so label unit.
find_program(RT_EXPORT_PYTHON NAMES python3 REQUIRED)
rt_script_test(export_cli LABEL unit TIMEOUT 300
	COMMAND ${RT_EXPORT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/export_cli.py)
