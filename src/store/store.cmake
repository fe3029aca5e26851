target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/store.c)
