# SPDX-License-Identifier: BSD-2-Clause
# issue 13: per-thread truth on the testbed's OpenMP backend (pool_omp.py).
# pool_omp: markers, OMP_WAIT_POLICY passive (a sleeping pool), about 15 s,
# also under scripts/stress.sh (the timeout only stops a hung run).
#
# Behind RT_POOL_TEST (off), until they pass reliably:
# - pool_omp_active (markers, active: a spinning pool) fails about one run
#   in four: a few requests' worker CPU lands up to 10-15% outside the range
#   the step log allows, while the worker's total on the spans is within 1%.
#   Seen in a recording: the worker's switch-ins go unrecorded now and then
#   (3 in one run, 36 ms apart); until its next switch-out shows it the
#   correlator holds it runnable, so the pieces cut meanwhile (every step
#   and queue change cuts a pool) are charged as runqueue to the requests
#   of that time, and only the last piece is put right (cpu.c, "It leaves
#   a CPU we never saw it take");
# - pool_omp_zero (zero-code) waits for the libgomp pack: without
#   RT_PACK_REGION records nothing says the engine thread does engine work,
#   so no worker is ever linked (0 ms on spans).
find_program(RT_POOL_PYTHON NAMES python3 REQUIRED)
rt_script_test(pool_omp LABEL root TIMEOUT 120
	COMMAND ${RT_POOL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pool_omp.py --mode markers
		--policy passive)
# CPU shares: nothing else may run meanwhile (live.cmake says why)
set_tests_properties(pool_omp PROPERTIES RUN_SERIAL TRUE)
option(RT_POOL_TEST "Register pool_omp_active and pool_omp_zero (not yet reliable)" OFF)
if(RT_POOL_TEST)
	rt_script_test(pool_omp_active LABEL root TIMEOUT 120
		COMMAND ${RT_POOL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pool_omp.py --mode markers
			--policy active)
	rt_script_test(pool_omp_zero LABEL root TIMEOUT 120
		COMMAND ${RT_POOL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pool_omp.py --mode zero-code
			--policy both)
	set_tests_properties(pool_omp_active pool_omp_zero PROPERTIES RUN_SERIAL TRUE)
endif()
