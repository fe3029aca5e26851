# SPDX-License-Identifier: BSD-2-Clause
# rt_bpf_skeleton(<name>): bpf/<name>.bpf.c -> <build>/bpf/<name>.bpf.o -> <name>.skel.h
# Skeletons and objects live in the build folder only.
find_program(RT_CLANG clang REQUIRED)
find_program(RT_BPFTOOL bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(RT_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${RT_BPF_OUT})

function(rt_bpf_skeleton name)
	set(src ${CMAKE_SOURCE_DIR}/bpf/${name}.bpf.c)
	set(obj ${RT_BPF_OUT}/${name}.bpf.o)
	set(skel ${RT_BPF_OUT}/${name}.skel.h)
	file(GLOB bpf_headers ${CMAKE_SOURCE_DIR}/bpf/*.h ${CMAKE_SOURCE_DIR}/include/reqtrace/*.h)
	add_custom_command(OUTPUT ${obj}
		COMMAND ${RT_CLANG} -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_x86
			-I${CMAKE_SOURCE_DIR}/bpf -I${CMAKE_SOURCE_DIR}/include
			-c ${src} -o ${obj}
		DEPENDS ${src} ${bpf_headers}
		COMMENT "BPF ${name}.bpf.c")
	add_custom_command(OUTPUT ${skel}
		COMMAND ${RT_BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
		DEPENDS ${obj}
		COMMENT "skeleton ${name}.skel.h")
	set_property(GLOBAL APPEND PROPERTY RT_BPF_SKELETONS ${skel})
endfunction()
