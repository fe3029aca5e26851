# SPDX-License-Identifier: BSD-2-Clause
# test_otlp_conf reaches the otlp_* config keys and OTEL_* precedence, so it
# compiles the daemon program's config parser in, as test_config does.
if(TARGET test_otlp_conf)
	target_sources(test_otlp_conf PRIVATE ${CMAKE_SOURCE_DIR}/src/daemon/config.c)
	target_link_libraries(test_otlp_conf PRIVATE PkgConfig::INIH)
	rt_test_private(test_otlp_conf daemon)
endif()
