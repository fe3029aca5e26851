# SPDX-License-Identifier: BSD-2-Clause
# issue 12: a real Prometheus (Debian's `prometheus`, scripts/deps.sh) scrapes
# reqtraced's --metrics-listen while the testbed serves load. Root (BPF);
# fails instead of skipping when CI=true and it cannot run.
find_program(RT_PROM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
rt_script_test(prom_scrape LABEL root TIMEOUT 240
	COMMAND ${RT_PROM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/prom_scrape.py)
