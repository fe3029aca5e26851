target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/pipeline.c)
