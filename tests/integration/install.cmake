# SPDX-License-Identifier: BSD-2-Clause
# Installation and fleet pieces (docs/install.md, docs/deploy.md):
#   install_layout     (unit) cmake --install into a temporary prefix gives
#                      docs/install.md's layout; the programs run from it
#   man_pages          (unit) docs/man render without warnings, cover every
#                      subcommand and daemon option
#   dashboard_metrics  (unit) the Grafana dashboard's PromQL names only
#                      metrics and labels docs/metrics.md documents
#   deb_package        (root) cpack's .deb: dpkg -i, check, dpkg --purge
find_program(RT_INSTALL_PYTHON NAMES python3 REQUIRED)
rt_script_test(install_layout LABEL unit TIMEOUT 120
	COMMAND ${CMAKE_CURRENT_LIST_DIR}/install_layout.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
rt_script_test(man_pages LABEL unit TIMEOUT 60
	COMMAND ${CMAKE_CURRENT_LIST_DIR}/man_pages.sh ${CMAKE_SOURCE_DIR})
rt_script_test(dashboard_metrics LABEL unit TIMEOUT 60
	COMMAND ${RT_INSTALL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/dashboard_metrics.py)
if(RT_WITH_BPF)
	# builds its own /usr-prefixed tree (BUILD/deb-package): minutes on 2 cores
	rt_script_test(deb_package LABEL root TIMEOUT 1800
		COMMAND ${CMAKE_CURRENT_LIST_DIR}/deb_package.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
	set_tests_properties(deb_package PROPERTIES SKIP_RETURN_CODE 77 RESOURCE_LOCK dpkg)
endif()
