# SPDX-License-Identifier: BSD-2-Clause
# The fake NVML (tests/fixtures/fake_nvml): libnvidia-ml.so.1 in
# <build>/tests/fake_nvml, built from the daemon's own declarations
# (src/sources/include/sources/nvml_api.h). test_nvml opens it by path.
add_library(rt_fake_nvml SHARED ${CMAKE_SOURCE_DIR}/tests/fixtures/fake_nvml/fake_nvml.c)
target_include_directories(rt_fake_nvml PRIVATE ${CMAKE_SOURCE_DIR}/src/sources/include)
target_link_libraries(rt_fake_nvml PRIVATE Threads::Threads)
set_target_properties(rt_fake_nvml PROPERTIES OUTPUT_NAME nvidia-ml SOVERSION 1
	C_VISIBILITY_PRESET hidden
	LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fake_nvml)
if(TARGET test_nvml)
	add_dependencies(test_nvml rt_fake_nvml)
	target_compile_definitions(test_nvml PRIVATE
		RT_FAKE_NVML="$<TARGET_FILE_DIR:rt_fake_nvml>/libnvidia-ml.so.1")
endif()
