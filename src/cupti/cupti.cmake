# SPDX-License-Identifier: BSD-2-Clause
# libreqtrace_cupti.so, the CUPTI injection library (src/cupti/). It runs inside
# someone else's CUDA process, so it is kept small and self-contained: libc,
# pthread and dl only, never reqtrace_core, libcupti resolved at run time
# (never linked), hidden visibility with only InitializeInjection exported,
# and -z nodelete because its background thread must outlive a dlclose().
if(RT_HAVE_CUDA)
	set(rt_cupti_dir ${CMAKE_CURRENT_LIST_DIR})
	set(rt_cupti_sources
		${rt_cupti_dir}/inject.c ${rt_cupti_dir}/conn.c ${rt_cupti_dir}/collect.c
		${rt_cupti_dir}/translate.c ${rt_cupti_dir}/cbid.c ${rt_cupti_dir}/cupti_fns.c
		${rt_cupti_dir}/ring.c ${rt_cupti_dir}/proto.c ${rt_cupti_dir}/bufpool.c
		${rt_cupti_dir}/calltrack.c ${rt_cupti_dir}/dbg.c)
	# the tests build pieces of the library into their own executables
	set_property(GLOBAL PROPERTY RT_CUPTI_SOURCES ${rt_cupti_sources})

	add_library(reqtrace_cupti SHARED ${rt_cupti_sources})
	set_target_properties(reqtrace_cupti PROPERTIES C_VISIBILITY_PRESET hidden)
	target_include_directories(reqtrace_cupti PRIVATE
		${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src ${RT_CUDA_ROOT}/include)
	target_compile_definitions(reqtrace_cupti PRIVATE
		RT_CUPTI_TOOLKIT_LIB="${RT_CUDA_ROOT}/lib64/libcupti.so")
	target_link_libraries(reqtrace_cupti PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
	target_link_options(reqtrace_cupti PRIVATE -Wl,-z,nodelete)
	if(NOT RT_SANITIZE AND NOT RT_TSAN)
		# every symbol resolved at link time (sanitizer runtimes live in the host)
		target_link_options(reqtrace_cupti PRIVATE -Wl,-z,defs)
	endif()
endif()
