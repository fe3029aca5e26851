# SPDX-License-Identifier: BSD-2-Clause
# GPU probes (docs/gpu.md): the probe table and the ELF export reader
# always (the correlator and the tests use them), the uprobe loader with BPF.
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
target_sources(reqtrace_core PRIVATE
	${CMAKE_CURRENT_LIST_DIR}/gpu_probes.c
	${CMAKE_CURRENT_LIST_DIR}/gpu_elf.c)
target_link_libraries(reqtrace_core PUBLIC PkgConfig::LIBELF)
if(RT_WITH_BPF)
	target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bpf_gpu.c)
endif()
