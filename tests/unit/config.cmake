# SPDX-License-Identifier: BSD-2-Clause
# test_config compiles the daemon program's config parser in (it fills
# daemon.h's options, so it is no part of the rt_daemon library).
if(TARGET test_config)
	target_sources(test_config PRIVATE ${CMAKE_SOURCE_DIR}/src/daemon/config.c)
	target_link_libraries(test_config PRIVATE PkgConfig::INIH)
	rt_test_private(test_config daemon)
endif()
# SIGHUP's reload plan and the jsonl_* keys: the same parser compiled in
if(TARGET test_config_reload)
	target_sources(test_config_reload PRIVATE ${CMAKE_SOURCE_DIR}/src/daemon/config.c)
	target_link_libraries(test_config_reload PRIVATE PkgConfig::INIH)
	rt_test_private(test_config_reload daemon)
endif()
# reqtraced refuses a bad file before it needs any privilege
if(TARGET reqtraced)
	rt_script_test(config_cli LABEL unit TIMEOUT 60
		COMMAND ${CMAKE_SOURCE_DIR}/tests/unit/config_cli.sh $<TARGET_FILE:reqtraced>)
endif()
