# SPDX-License-Identifier: BSD-2-Clause
# issue 12: reqtraced exports by OTLP/HTTP into a loopback receiver that
# validates every payload against the OTLP/JSON rules (otlp_validate.py),
# answers 503 then 200, then 400. Root (BPF); fails instead of skipping
# when CI=true and it cannot run.
find_program(RT_OTLP_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(otlp_export LABEL root TIMEOUT 240
	COMMAND ${RT_OTLP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/otlp_export.py)
# the validator's self-test (it must reject what OTLP/JSON forbids), then the
# encoder's sample file (written by test_otlp_json) through it
rt_script_test(otlp_validate LABEL unit TIMEOUT 60
	COMMAND ${RT_OTLP_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/otlp_validate.py
		--parent=00f067aa0ba902b7 ${CMAKE_BINARY_DIR}/otlp_sample.jsonl)
if(TARGET test_otlp_json)
	set_tests_properties(test_otlp_json PROPERTIES FIXTURES_SETUP otlp_sample)
	set_tests_properties(otlp_validate PROPERTIES FIXTURES_REQUIRED otlp_sample)
endif()
