# SPDX-License-Identifier: BSD-2-Clause
# Engine packs (docs/packs.md). Fixtures in <build>/tests/fake_llama/, from
# tests/fixtures/fake_llama/:
#   libllama.so              the mid-2025 API (llama_memory_seq_rm), .dynsym
#   old/libllama.so          the spring-2025 API (llama_kv_self_seq_rm and the
#                            deprecated llama_kv_cache_seq_rm wrapping it)
#   static/llama-server      the functions linked into a program: .symtab only
#   stripped/llama-server    the same, stripped: matched by name, cannot attach
# test_pack_conf (unit) parses configs/packs and matches these; the root test
# pack_uprobes (tests/integration/packs.cmake) runs them under the probes.
set(rt_fl_src ${CMAKE_SOURCE_DIR}/tests/fixtures/fake_llama)
set(rt_fl_out ${CMAKE_BINARY_DIR}/tests/fake_llama)
find_program(RT_STRIP strip REQUIRED)

add_library(rt_fake_llama SHARED ${rt_fl_src}/fake_llama.c)
add_library(rt_fake_llama_old SHARED ${rt_fl_src}/fake_llama.c)
# the old API has no llama_memory_seq_rm: its code stays, under another name
target_compile_definitions(rt_fake_llama_old PRIVATE FAKE_LLAMA_2024
	llama_memory_seq_rm=fake_llama_old_memory_seq_rm)
set_target_properties(rt_fake_llama PROPERTIES OUTPUT_NAME llama
	C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${rt_fl_out})
set_target_properties(rt_fake_llama_old PROPERTIES OUTPUT_NAME llama
	C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${rt_fl_out}/old)

add_executable(rt_fake_llama_server ${rt_fl_src}/fake_server.c ${rt_fl_src}/fake_llama.c)
set_target_properties(rt_fake_llama_server PROPERTIES OUTPUT_NAME llama-server
	RUNTIME_OUTPUT_DIRECTORY ${rt_fl_out}/static)
add_custom_command(OUTPUT ${rt_fl_out}/stripped/llama-server
	COMMAND ${CMAKE_COMMAND} -E make_directory ${rt_fl_out}/stripped
	COMMAND ${RT_STRIP} --strip-all -o ${rt_fl_out}/stripped/llama-server
		$<TARGET_FILE:rt_fake_llama_server>
	DEPENDS rt_fake_llama_server
	COMMENT "stripped fake llama-server")
add_custom_target(rt_fake_llama_stripped ALL DEPENDS ${rt_fl_out}/stripped/llama-server)

if(TARGET test_pack_conf)
	target_compile_definitions(test_pack_conf PRIVATE RT_FAKE_LLAMA_DIR="${rt_fl_out}")
	add_dependencies(test_pack_conf rt_fake_llama rt_fake_llama_old rt_fake_llama_server
		rt_fake_llama_stripped)
endif()
