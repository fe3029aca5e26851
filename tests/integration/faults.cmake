# SPDX-License-Identifier: BSD-2-Clause
# Faults on purpose (issue 16): a real reqtraced, a real target under load, and
# one fault each. Label root; they fail instead of skipping when CI=true and
# BPF cannot run (live_common.py).
#
#   fault_restart        daemon SIGKILLed and restarted mid-load (prints the resume time)
#   fault_control_flood  1000 clients and garbage lines on the control socket
#   fault_disk_full      ENOSPC while recording (a 512 KiB tmpfs): a clean error, the cut file replays
#   fault_ring_overflow  a 64 KiB ring, the daemon SIGSTOPped 1 s: losses counted per stage, spans incomplete
#   fault_fork_exec      a pre-fork server (fault_prefork_server.py), workers forked and exec'd: spans name the right worker
find_program(RT_FAULT_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT RT_FAULT_PYTHON)
	find_program(RT_FAULT_PYTHON python3 REQUIRED)
endif()
foreach(fault restart control_flood disk_full ring_overflow fork_exec)
	rt_script_test(fault_${fault} LABEL root TIMEOUT 180
		COMMAND ${RT_FAULT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/fault_${fault}.py)
	set_tests_properties(fault_${fault} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
