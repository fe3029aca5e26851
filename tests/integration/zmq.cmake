# SPDX-License-Identifier: BSD-2-Clause
# ZeroMQ frames at zmq_msg_send/zmq_msg_recv (docs/events.md "ZeroMQ"):
#
#   zmq_capture  (root) a python3-zmq program's multi-frame messages over ipc
#                and tcp, recorded by reqtraced, reassemble to the bytes sent,
#                on the right threads, CUT past the bound; ZMTP is no peer
# Debian's own python3, the one python3-zmq installs into (RT_PYTHON3 may be
# another found first, e.g. a pyenv shim)
find_program(RT_DEB_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(RT_WITH_BPF)
	rt_script_test(zmq_capture LABEL root TIMEOUT 180
		COMMAND ${RT_DEB_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/zmq_capture.py)
	set_tests_properties(zmq_capture PROPERTIES SKIP_RETURN_CODE 77)
endif()
