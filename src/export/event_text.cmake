target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/event_text.c)
