/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA driver calls the library records, by CUPTI callback id (cbid.c). */
#ifndef RT_CUPTI_CBID_H
#define RT_CUPTI_CBID_H

#include <reqtrace/event.h>

/* 1 and the call's class and copy direction if cbid is recorded, else 0. */
int rt_cupti_cbid_info(__u32 cbid, __u8 *api_class, __u8 *copy_kind);

/* Every recorded cbid is below this. */
__u32 rt_cupti_cbid_limit(void);

/*
 * 1 for calls that block the calling thread until the device is done (syncs,
 * non-async copies): their records start at entry but exist only after the
 * return, so the watermark waits for them (calltrack.h).
 */
int rt_cupti_cbid_blocking(__u32 cbid);

/* 1 for calls whose callbacks the library enables (blocking ones, stream waits). */
int rt_cupti_cbid_callback(__u32 cbid);

#endif /* RT_CUPTI_CBID_H */
