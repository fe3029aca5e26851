# SPDX-License-Identifier: BSD-2-Clause
# The vLLM V1-style two-process test server (tests/engines/vllm, issue 14):
# its encoder against the hand-derived golden vectors (unit), the committed
# recording replayed (unit), and zero-code tracing of the live server (root).
find_program(RT_VLLM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_VLLM_PYTHON)
	find_program(RT_VLLM_PYTHON python3 REQUIRED)
endif()
set(rt_vllm ${CMAKE_SOURCE_DIR}/tests/engines/vllm)
rt_script_test(vllm_messages LABEL unit TIMEOUT 60
	COMMAND ${RT_VLLM_PYTHON} ${rt_vllm}/test_vmsg.py)
rt_script_test(vllm_zero_code LABEL root TIMEOUT 300
	COMMAND ${RT_VLLM_PYTHON} ${rt_vllm}/vllm_zero_code.py)
# TTFT/total against the client to 2 ms: nothing else may steal a core meanwhile
set_tests_properties(vllm_zero_code PROPERTIES RUN_SERIAL TRUE)
# the committed recording (tests/fixtures/vllm, re-record with
# vllm_zero_code.py --fixture tests/fixtures/vllm) replayed without the server
rt_script_test(vllm_replay LABEL unit TIMEOUT 120
	COMMAND ${RT_VLLM_PYTHON} ${rt_vllm}/replay_vllm.py)
