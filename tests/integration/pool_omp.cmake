# SPDX-License-Identifier: BSD-2-Clause
# issue 13: per-thread truth on the testbed's OpenMP backend (pool_omp.py),
# zero-code and markers, OMP_WAIT_POLICY passive and active. Off until the
# correlator charges compute-pool threads (src/correlate/cpu.c): its check
# (b) fails before that rule lands. Turn it on with -DRT_POOL_TEST=ON.
option(RT_POOL_TEST "Register pool_omp (needs the compute-pool CPU rule)" OFF)
if(RT_POOL_TEST)
	find_program(RT_POOL_PYTHON NAMES python3 REQUIRED)
	rt_script_test(pool_omp LABEL root TIMEOUT 400
		COMMAND ${RT_POOL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pool_omp.py)
	# CPU shares: nothing else may run meanwhile (live.cmake says why)
	set_tests_properties(pool_omp PROPERTIES RUN_SERIAL TRUE)
endif()
