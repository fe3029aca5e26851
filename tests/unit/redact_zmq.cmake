# SPDX-License-Identifier: BSD-2-Clause
# The recorder's ZeroMQ frame redaction (src/export/redact_zmq.c): white-box,
# it reaches the frame walker through redact_int.h.
if(TARGET test_redact_zmq)
	rt_test_private(test_redact_zmq export)
endif()
