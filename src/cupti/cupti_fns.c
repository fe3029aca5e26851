// SPDX-License-Identifier: BSD-2-Clause
#include "cupti_fns.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "dbg.h"

#ifndef RT_CUPTI_TOOLKIT_LIB
#define RT_CUPTI_TOOLKIT_LIB "/usr/local/cuda/lib64/libcupti.so"
#endif

#define SYM(field, name, required)                                                                 \
	{                                                                                          \
		offsetof(struct rt_cupti_fns, field), #name, required                              \
	}

static const struct {
	size_t off;
	const char *name;
	int required;
} syms[] = {
	SYM(get_version, cuptiGetVersion, 1),
	SYM(subscribe, cuptiSubscribe, 1),
	SYM(unsubscribe, cuptiUnsubscribe, 1),
	SYM(enable_callback, cuptiEnableCallback, 1),
	SYM(register_timestamp, cuptiActivityRegisterTimestampCallback, 1),
	SYM(set_thread_id_type, cuptiSetThreadIdType, 1),
	SYM(register_callbacks, cuptiActivityRegisterCallbacks, 1),
	SYM(enable, cuptiActivityEnable, 1),
	SYM(flush_period, cuptiActivityFlushPeriod, 1),
	SYM(flush_all, cuptiActivityFlushAll, 1),
	SYM(next_record, cuptiActivityGetNextRecord, 1),
	SYM(num_dropped, cuptiActivityGetNumDroppedRecords, 1),
	SYM(enable_driver_api, cuptiActivityEnableDriverApi, 0),
	SYM(result_string, cuptiGetResultString, 0),
};

int rt_cupti_fns_load(struct rt_cupti_fns *f, const char *path)
{
	size_t i;
	void *p;

	memset(f, 0, sizeof(*f));
	/* RTLD_LOCAL: CUPTI's symbols stay out of the host's global namespace;
	 * libcupti is usually not on the loader path, hence the toolkit fallback */
	if (path && *path) {
		f->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	} else {
		f->handle = dlopen(RT_CUPTI_LIB_DEFAULT, RTLD_NOW | RTLD_LOCAL);
		if (!f->handle)
			f->handle = dlopen(RT_CUPTI_TOOLKIT_LIB, RTLD_NOW | RTLD_LOCAL);
	}
	if (!f->handle) {
		rt_cupti_dbg("no libcupti (%s): staying idle", dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		p = dlsym(f->handle, syms[i].name);
		if (!p && syms[i].required) {
			rt_cupti_dbg("libcupti lacks %s: staying idle", syms[i].name);
			dlclose(f->handle);
			memset(f, 0, sizeof(*f));
			return -ENOSYS;
		}
		memcpy((char *)f + syms[i].off, &p, sizeof(p)); /* object to function pointer */
	}
	return 0;
}

const char *rt_cupti_fns_errstr(const struct rt_cupti_fns *f, CUptiResult res)
{
	const char *s = NULL;

	if (f->result_string && f->result_string(res, &s) == CUPTI_SUCCESS && s)
		return s;
	return "CUPTI error";
}
