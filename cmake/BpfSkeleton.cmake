# SPDX-License-Identifier: BSD-2-Clause
# rt_bpf_skeleton(<name>): bpf/<name>.bpf.c -> <build>/bpf/<name>.bpf.o -> <name>.skel.h
# Skeletons and objects live in the build folder only.
#
# RT_BPF_ARCH is the kernel the objects are for: it picks bpf_tracing.h's
# register names (-D__TARGET_ARCH_<arch>), the uprobe argument ABI
# (<reqtrace/uprobe_args.h>) and bpf/vmlinux/<arch>/vmlinux.h. The objects of
# every other arch in RT_BPF_CHECK_ARCHES are compiled too (rt_bpf_check_<arch>,
# part of `all`), never loaded: an x86 build then fails on an arm64 regression.
find_program(RT_CLANG clang REQUIRED)
# the host's bpftool even when cross-compiling: a skeleton embeds the object as bytes
find_program(RT_BPFTOOL bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

set(rt_bpf_arches x86 arm64)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
	set(rt_bpf_default arm64)
else()
	set(rt_bpf_default x86)
endif()
set(RT_BPF_ARCH ${rt_bpf_default} CACHE STRING "Kernel arch of the BPF objects: x86 or arm64")
set_property(CACHE RT_BPF_ARCH PROPERTY STRINGS ${rt_bpf_arches})
if(NOT RT_BPF_ARCH IN_LIST rt_bpf_arches)
	message(FATAL_ERROR "RT_BPF_ARCH=${RT_BPF_ARCH}: not one of ${rt_bpf_arches}")
endif()
set(rt_bpf_others ${rt_bpf_arches})
list(REMOVE_ITEM rt_bpf_others ${RT_BPF_ARCH})
set(RT_BPF_CHECK_ARCHES ${rt_bpf_others} CACHE STRING
	"Other archs whose BPF objects are compiled (not loaded) to catch regressions")
message(STATUS "reqtrace: BPF arch=${RT_BPF_ARCH} compile-checked=${RT_BPF_CHECK_ARCHES}")

set(RT_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${RT_BPF_OUT})

# rt_bpf_object(<name> <arch> <out .o>): compile bpf/<name>.bpf.c for one arch
function(rt_bpf_object name arch obj)
	set(src ${CMAKE_SOURCE_DIR}/bpf/${name}.bpf.c)
	file(GLOB bpf_headers ${CMAKE_SOURCE_DIR}/bpf/*.h ${CMAKE_SOURCE_DIR}/include/reqtrace/*.h)
	add_custom_command(OUTPUT ${obj}
		COMMAND ${RT_CLANG} -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_${arch}
			-I${CMAKE_SOURCE_DIR}/bpf/vmlinux/${arch} -I${CMAKE_SOURCE_DIR}/bpf
			-I${CMAKE_SOURCE_DIR}/include -c ${src} -o ${obj}
		DEPENDS ${src} ${bpf_headers} ${CMAKE_SOURCE_DIR}/bpf/vmlinux/${arch}/vmlinux.h
		COMMENT "BPF ${name}.bpf.c (${arch})")
endfunction()

function(rt_bpf_skeleton name)
	set(obj ${RT_BPF_OUT}/${name}.bpf.o)
	set(skel ${RT_BPF_OUT}/${name}.skel.h)
	rt_bpf_object(${name} ${RT_BPF_ARCH} ${obj})
	add_custom_command(OUTPUT ${skel}
		COMMAND ${RT_BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
		DEPENDS ${obj}
		COMMENT "skeleton ${name}.skel.h")
	set_property(GLOBAL APPEND PROPERTY RT_BPF_SKELETONS ${skel})
	foreach(arch ${RT_BPF_CHECK_ARCHES})
		file(MAKE_DIRECTORY ${RT_BPF_OUT}/${arch})
		rt_bpf_object(${name} ${arch} ${RT_BPF_OUT}/${arch}/${name}.bpf.o)
		set_property(GLOBAL APPEND PROPERTY RT_BPF_CHECK_${arch} ${RT_BPF_OUT}/${arch}/${name}.bpf.o)
	endforeach()
endfunction()
