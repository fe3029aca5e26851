# SPDX-License-Identifier: BSD-2-Clause
# Installation and fleet pieces (docs/install.md, docs/deploy.md):
#   dashboard_metrics  (unit) the Grafana dashboard's PromQL names only
#                      metrics and labels docs/metrics.md documents
find_program(RT_INSTALL_PYTHON NAMES python3 REQUIRED)
rt_script_test(dashboard_metrics LABEL unit TIMEOUT 60
	COMMAND ${RT_INSTALL_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/dashboard_metrics.py)
