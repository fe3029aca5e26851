# SPDX-License-Identifier: BSD-2-Clause
# The synthetic event generator (tests/fixtures/README.md): a static library
# for tests and the rt-gen command that writes fixtures.
add_library(rt_gen STATIC
	${CMAKE_CURRENT_LIST_DIR}/sim.c
	${CMAKE_CURRENT_LIST_DIR}/sim_rec.c
	${CMAKE_CURRENT_LIST_DIR}/act.c
	${CMAKE_CURRENT_LIST_DIR}/client.c
	${CMAKE_CURRENT_LIST_DIR}/engine.c
	${CMAKE_CURRENT_LIST_DIR}/server.c
	${CMAKE_CURRENT_LIST_DIR}/http_bytes.c
	${CMAKE_CURRENT_LIST_DIR}/scenario.c
	${CMAKE_CURRENT_LIST_DIR}/truth.c
	${CMAKE_CURRENT_LIST_DIR}/truth_cpu.c
	${CMAKE_CURRENT_LIST_DIR}/deliver.c
	${CMAKE_CURRENT_LIST_DIR}/gen.c)
target_include_directories(rt_gen PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(rt_gen PUBLIC reqtrace_core)

add_executable(rt-gen ${CMAKE_CURRENT_LIST_DIR}/rt_gen_main.c)
target_link_libraries(rt-gen PRIVATE rt_gen)
set_target_properties(rt-gen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# tests/unit/test_gen.c is registered by the unit-test glob; it needs the generator
if(TARGET test_gen)
	target_link_libraries(test_gen PRIVATE rt_gen)
endif()

# the committed fixtures' truth, recomputed from their records alone
rt_script_test(gen_check_truth LABEL unit TIMEOUT 120
	COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_truth.py --dir ${CMAKE_SOURCE_DIR}/tests/fixtures)

# The correlator against the generator's truth: the committed fixtures, and
# a sweep of fresh seeds (every phase, TTFT and gap within 0.1 ms; instants,
# counts, outcomes and flags exact; CPU per thread within 2 us).
rt_script_test(replay_fixtures LABEL unit TIMEOUT 120
	COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/compare_replay.py ${CMAKE_BINARY_DIR}/reqtrace
		${CMAKE_SOURCE_DIR}/tests/fixtures)
rt_script_test(replay_sweep LABEL unit TIMEOUT 300
	COMMAND ${CMAKE_CURRENT_LIST_DIR}/sweep_replay.sh ${CMAKE_BINARY_DIR} 6)
rt_script_test(replay_cli LABEL unit TIMEOUT 60
	COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/replay_cli.py)
