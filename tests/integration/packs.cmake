# SPDX-License-Identifier: BSD-2-Clause
# Engine packs (docs/packs.md) under BPF:
#   pack_uprobes  (root) the llama.cpp pack on the fake libllama
#                 (tests/unit/packs.cmake builds it): a traced child's
#                 tokenize/decode/sync/seq_rm calls, records checked exactly
#   pack_daemon   (root) the same calls under reqtraced --record, read back
#                 with `reqtrace replay --events`, and `reqtrace status`
#                 (static and stripped llama-server too); the libgomp pack's
#                 region records from an OpenMP program
if(RT_WITH_BPF)
	add_executable(pack_uprobes ${CMAKE_CURRENT_LIST_DIR}/pack_uprobes.c)
	target_include_directories(pack_uprobes PRIVATE ${CMAKE_SOURCE_DIR}/tests/fixtures/fake_llama)
	target_link_libraries(pack_uprobes PRIVATE rt_bpf_test_util rt_fake_llama PkgConfig::CMOCKA
		Threads::Threads)
	target_compile_definitions(pack_uprobes PRIVATE RT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
	rt_script_test(pack_uprobes LABEL root TIMEOUT 120 COMMAND $<TARGET_FILE:pack_uprobes>)
	set_tests_properties(pack_uprobes PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(RT_WITH_BPF)
	add_executable(pack_llama_prog ${CMAKE_CURRENT_LIST_DIR}/pack_llama_prog.c)
	target_include_directories(pack_llama_prog PRIVATE ${CMAKE_SOURCE_DIR}/tests/fixtures/fake_llama)
	target_link_libraries(pack_llama_prog PRIVATE rt_fake_llama)
	find_program(RT_PACK_PYTHON3 python3 REQUIRED)
	rt_script_test(pack_daemon LABEL root TIMEOUT 120
		COMMAND ${RT_PACK_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/pack_daemon.py
			--prog $<TARGET_FILE:pack_llama_prog> --omp $<TARGET_FILE:pack_omp_prog>
			--fakes ${CMAKE_BINARY_DIR}/tests/fake_llama)
	set_tests_properties(pack_daemon PROPERTIES SKIP_RETURN_CODE 77)
	add_dependencies(pack_llama_prog rt_fake_llama_server rt_fake_llama_stripped)
	# the libgomp pack on Debian's libgomp (gcc's own OpenMP runtime)
	find_package(OpenMP REQUIRED COMPONENTS C)
	add_executable(pack_omp_prog ${CMAKE_CURRENT_LIST_DIR}/pack_omp_prog.c)
	target_link_libraries(pack_omp_prog PRIVATE OpenMP::OpenMP_C)
	add_dependencies(pack_llama_prog pack_omp_prog)
endif()
