# SPDX-License-Identifier: BSD-2-Clause
# issue 13: per-thread truth on the testbed's OpenMP backend (pool_omp.py).
# pool_omp: markers, OMP_WAIT_POLICY passive (a sleeping pool), about 15 s,
# also under scripts/stress.sh (the timeout only stops a hung run).
#
# Behind RT_POOL_TEST (off), until they pass reliably:
# - pool_omp_active (markers, active: a spinning pool) fails about one run
#   in four or five: one request's worker CPU lands 1-10% beyond the 10%
#   around the range the step log allows, while the worker's total on the
#   spans is within 1%. Found so far: the worker's switch-ins go unrecorded
#   now and then (3 in one run; the pieces cut meanwhile were charged as
#   runqueue: put right since, pool.c rt_pool_runq_was_on()); and, likely
#   (the failing runs have not_run_ms of 8 ms, against 1 ms), time stolen
#   from a long stint of the spinning worker (hypervisor, interrupts):
#   cpu.c's not_run() takes it from the stint's last piece only, so the
#   requests of its earlier pieces keep CPU the kernel never counted;
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
