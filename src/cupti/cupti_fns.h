/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUPTI entry points the library uses, resolved with dlopen/dlsym so the
 * library loads (and stays idle) where libcupti is absent. Never linked.
 */
#ifndef RT_CUPTI_FNS_H
#define RT_CUPTI_FNS_H

#include <cupti.h>

#define RT_CUPTI_LIB_ENV "REQTRACE_CUPTI_LIB"
#define RT_CUPTI_LIB_DEFAULT "libcupti.so"

struct rt_cupti_fns {
	void *handle;
	__typeof__(&cuptiGetVersion) get_version;
	__typeof__(&cuptiSubscribe) subscribe;
	__typeof__(&cuptiUnsubscribe) unsubscribe;
	__typeof__(&cuptiEnableCallback) enable_callback;
	__typeof__(&cuptiActivityRegisterTimestampCallback) register_timestamp;
	__typeof__(&cuptiSetThreadIdType) set_thread_id_type;
	__typeof__(&cuptiActivityRegisterCallbacks) register_callbacks;
	__typeof__(&cuptiActivityEnable) enable;
	__typeof__(&cuptiActivityFlushPeriod) flush_period;
	__typeof__(&cuptiActivityFlushAll) flush_all;
	__typeof__(&cuptiActivityGetNextRecord) next_record;
	__typeof__(&cuptiActivityGetNumDroppedRecords) num_dropped;
	/* optional: NULL when this libcupti lacks them */
	__typeof__(&cuptiActivityEnableDriverApi) enable_driver_api;
	__typeof__(&cuptiGetResultString) result_string;
};

/*
 * dlopen()s path (REQTRACE_CUPTI_LIB, else libcupti.so through the normal
 * search, then the toolkit's lib64) and resolves every entry point.
 * Returns 0, -ENOENT (no library) or -ENOSYS (a required symbol is missing;
 * the library is closed again).
 */
int rt_cupti_fns_load(struct rt_cupti_fns *f, const char *path);

/* CUPTI's name for a result, or "CUPTI error". */
const char *rt_cupti_fns_errstr(const struct rt_cupti_fns *f, CUptiResult res);

#endif /* RT_CUPTI_FNS_H */
