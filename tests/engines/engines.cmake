# SPDX-License-Identifier: BSD-2-Clause
# Real inference engines (issue 13): node-llama-cpp from npm, installed by
# the tests themselves into a cache outside the tree (llama/install.sh).
# engines_llama_install fails under CI=true when npm or Node >= 20 is
# missing; the live test installs too (cached), so it runs on its own.
find_program(RT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(rt_engines ${CMAKE_CURRENT_LIST_DIR})
rt_script_test(engines_llama_install LABEL root TIMEOUT 900
	COMMAND ${rt_engines}/llama/install_test.sh)
rt_script_test(engines_llama_zero_code LABEL root TIMEOUT 900
	COMMAND ${RT_PYTHON3} ${rt_engines}/llama/llama_zero_code.py)
set_tests_properties(engines_llama_zero_code PROPERTIES RUN_SERIAL TRUE)
set_tests_properties(engines_llama_install engines_llama_zero_code PROPERTIES
	SKIP_RETURN_CODE 77)
# the llama.cpp pack on node-llama-cpp: phases and steps against the
# server's own step log, per-thread CPU against /proc (issue 13)
rt_script_test(engines_llama_pack LABEL root TIMEOUT 900
	COMMAND ${RT_PYTHON3} ${rt_engines}/llama/llama_pack.py)
set_tests_properties(engines_llama_pack PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
