# SPDX-License-Identifier: BSD-2-Clause
# Markers through shared memory (docs/markers.md), live: the same fidelity
# checks as live_fidelity_markers with the markers forced through the ring
# (no uprobe fallback) and forced through the uprobes (no ring).
foreach(path shm uprobe)
	rt_script_test(live_fidelity_markers_${path} LABEL root TIMEOUT 300
		COMMAND ${RT_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/live_fidelity.py --markers
			--marker-path ${path})
	set_tests_properties(live_fidelity_markers_${path} PROPERTIES RUN_SERIAL TRUE)
endforeach()
