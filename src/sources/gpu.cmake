# SPDX-License-Identifier: BSD-2-Clause
# GPU probes (docs/gpu.md): the ELF export reader always (the tests use it),
# the uprobe loader with BPF. The probe table is src/probes/.
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_elf.c)
target_link_libraries(reqtrace_core PUBLIC PkgConfig::LIBELF)
if(RT_WITH_BPF)
	target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/bpf_gpu.c)
endif()
