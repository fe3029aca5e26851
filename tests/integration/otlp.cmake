# SPDX-License-Identifier: BSD-2-Clause
# issue 12: reqtraced exports by OTLP/HTTP into a loopback receiver that
# validates every payload against the OTLP/JSON rules (otlp_validate.py),
# answers 503 then 200, then 400. Root (BPF); fails instead of skipping
# when CI=true and it cannot run.
find_program(RT_OTLP_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(otlp_export LABEL root TIMEOUT 240
	COMMAND ${RT_OTLP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/otlp_export.py)
# the validator's own self-test (it must reject what OTLP/JSON forbids)
rt_script_test(otlp_validate LABEL unit TIMEOUT 60
	COMMAND ${RT_OTLP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/otlp_validate.py)
