# SPDX-License-Identifier: BSD-2-Clause
# The verdict's findings (docs/verdict.md): from the committed recordings
# (no root), and live over every testbed scenario (root).
find_program(RT_VERDICT_PYTHON NAMES python3 REQUIRED)
rt_script_test(verdict_fixtures LABEL unit TIMEOUT 120
	COMMAND ${RT_VERDICT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/verdict_fixtures.py)
rt_script_test(verdict_live LABEL root TIMEOUT 300
	COMMAND ${RT_VERDICT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/verdict_live.py)
# gpu_idle_waiting on the testbed's cuda backend over the fake driver (gpu.cmake builds it)
if(RT_WITH_BPF AND TARGET rt_fake_cuda)
	rt_script_test(verdict_gpu LABEL root TIMEOUT 180
		COMMAND ${RT_VERDICT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/verdict_gpu.py
			--fakes ${rt_fake_out})
	set_tests_properties(verdict_gpu PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
