# SPDX-License-Identifier: BSD-2-Clause
# issue 12: the JSONL exporter under load (rotation, no line lost or doubled)
# and SIGHUP reloads (a new jsonl_path applies, a bad file changes nothing).
# Root (BPF); fails instead of skipping when CI=true and it cannot run.
find_program(RT_JSONL_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(jsonl_export LABEL root TIMEOUT 240
	COMMAND ${RT_JSONL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/jsonl_export.py)
