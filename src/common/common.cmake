target_sources(reqtrace_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/log.c ${CMAKE_CURRENT_LIST_DIR}/dur.c ${CMAKE_CURRENT_LIST_DIR}/hmap.c ${CMAKE_CURRENT_LIST_DIR}/jsonw.c)
