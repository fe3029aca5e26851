# SPDX-License-Identifier: BSD-2-Clause
# test_mark_ring drives the marker library's ring producer and record
# writers (src/marker/mring.c, mwrite.c: libc only) against the daemon's
# consumer (sources/mark_ring.h) on plain memory, many threads at once.
# test_mark_shm runs the real library against an in-process inject server.
if(TARGET test_mark_ring)
	target_sources(test_mark_ring PRIVATE
		${CMAKE_SOURCE_DIR}/src/marker/mring.c ${CMAKE_SOURCE_DIR}/src/marker/mwrite.c)
	rt_test_private(test_mark_ring marker)
	target_link_libraries(test_mark_ring PRIVATE Threads::Threads)
	# the many-writer test is what ThreadSanitizer is for (clean, by hand)
	set_tests_properties(test_mark_ring PROPERTIES LABELS "unit;tsan")
endif()
if(TARGET test_mark_shm)
	# and a hostile peer of its own: the handshake client and the producer
	# (hidden inside the library, so compiled in again here)
	target_sources(test_mark_shm PRIVATE ${CMAKE_SOURCE_DIR}/src/cupti/proto.c
		${CMAKE_SOURCE_DIR}/src/cupti/ring.c ${CMAKE_SOURCE_DIR}/src/marker/mring.c)
	target_include_directories(test_mark_shm PRIVATE ${CMAKE_SOURCE_DIR}/src/cupti
		${CMAKE_SOURCE_DIR}/src/marker)
	target_link_libraries(test_mark_shm PRIVATE reqtrace_marker Threads::Threads)
endif()
