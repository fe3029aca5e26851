# SPDX-License-Identifier: BSD-2-Clause
# issue 13: per-thread truth on the testbed's OpenMP backend (pool_omp.py),
# with markers, OMP_WAIT_POLICY passive and active (about 30 s, also under
# scripts/stress.sh; the timeout only stops a hung run). Zero-code waits for
# the libgomp pack: without RT_PACK_REGION records nothing tells the
# correlator that the engine thread is doing engine work, so no worker is
# ever linked (pool_omp.py --mode zero-code shows it).
find_program(RT_POOL_PYTHON NAMES python3 REQUIRED)
rt_script_test(pool_omp LABEL root TIMEOUT 180
	COMMAND ${RT_POOL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pool_omp.py --mode markers --policy both)
# CPU shares: nothing else may run meanwhile (live.cmake says why)
set_tests_properties(pool_omp PROPERTIES RUN_SERIAL TRUE)
