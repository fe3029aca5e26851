# SPDX-License-Identifier: BSD-2-Clause
# issue 15: reqtraced's NVML link counters on the fake NVML (tests/unit/nvml.cmake
# builds it). Root (the daemon loads BPF); fails instead of skipping when
# CI=true and it cannot run.
find_program(RT_NVML_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(nvml_status LABEL root TIMEOUT 180
	COMMAND ${RT_NVML_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/nvml_status.py)
