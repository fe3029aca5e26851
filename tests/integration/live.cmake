# SPDX-License-Identifier: BSD-2-Clause
# Live capture: a real reqtraced (BPF loaded and attached) tracing real
# servers under real load. Label root; they fail instead of skipping when
# CI=true and BPF cannot run (live_common.py).
find_program(RT_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(rt_live ${CMAKE_CURRENT_LIST_DIR})
foreach(io readwrite vector socket msg split)
	rt_script_test(live_fidelity_${io} LABEL root TIMEOUT 300
		COMMAND ${RT_PYTHON3} ${rt_live}/live_fidelity.py --io ${io})
endforeach()
rt_script_test(live_fidelity_markers LABEL root TIMEOUT 300
	COMMAND ${RT_PYTHON3} ${rt_live}/live_fidelity.py --markers)
rt_script_test(live_fidelity_asyncio LABEL root TIMEOUT 300
	COMMAND ${RT_PYTHON3} ${rt_live}/live_fidelity.py --server asyncio)
rt_script_test(live_lifecycle LABEL root TIMEOUT 300
	COMMAND ${RT_PYTHON3} ${rt_live}/live_lifecycle.py)
foreach(part keepalive big loss)
	rt_script_test(live_scale_${part} LABEL root TIMEOUT 400
		COMMAND ${RT_PYTHON3} ${rt_live}/live_scale.py ${part})
endforeach()
# issue 17: the wait in the accept queue / receive buffer, in every span
foreach(case accept park)
	rt_script_test(live_backlog_${case} LABEL root TIMEOUT 300
		COMMAND ${RT_PYTHON3} ${rt_live}/live_backlog.py ${case})
endforeach()
rt_script_test(live_twoproc LABEL root TIMEOUT 120
	COMMAND ${RT_PYTHON3} ${rt_live}/live_twoproc.py)
# Sub-millisecond comparisons and CPU shares: nothing else may run meanwhile
# on a 2-core machine (a parallel unit test stealing a core shows up as
# runqueue wait in exactly the numbers these tests check).
set_tests_properties(live_fidelity_readwrite live_fidelity_vector live_fidelity_socket
	live_fidelity_msg live_fidelity_split live_fidelity_markers live_fidelity_asyncio
	live_scale_keepalive live_scale_big live_twoproc live_backlog_accept live_backlog_park
	PROPERTIES RUN_SERIAL TRUE)
