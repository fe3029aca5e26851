/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The part of NVML (libnvidia-ml.so.1) that reqtrace uses, declared by hand
 * from NVIDIA's documentation and nvml.h as published (there is no nvml.h on
 * the build machines): the daemon opens the library with dlopen and looks
 * these symbols up (src/sources/nvml.c); the fake NVML for the tests
 * (tests/fixtures/fake_nvml) implements them from the same declarations.
 * Layouts are checked below; field ids are nvml.h's values.
 */
#ifndef RT_SOURCES_NVML_API_H
#define RT_SOURCES_NVML_API_H

#include <stddef.h>

typedef int rt_nvmlReturn_t; /* nvmlReturn_t, an enum (int-sized) */
#define RT_NVML_SUCCESS 0
#define RT_NVML_ERROR_UNINITIALIZED 1
#define RT_NVML_ERROR_INVALID_ARGUMENT 2
#define RT_NVML_ERROR_NOT_SUPPORTED 3
#define RT_NVML_ERROR_NO_PERMISSION 4
#define RT_NVML_ERROR_NOT_FOUND 6
#define RT_NVML_ERROR_LIBRARY_NOT_FOUND 12
#define RT_NVML_ERROR_GPU_IS_LOST 15
#define RT_NVML_ERROR_UNKNOWN 999

typedef struct rt_nvmlDevice_st *rt_nvmlDevice_t; /* nvmlDevice_t: an opaque handle */

/* nvmlValueType_t */
#define RT_NVML_VALUE_TYPE_DOUBLE 0
#define RT_NVML_VALUE_TYPE_UNSIGNED_INT 1
#define RT_NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define RT_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define RT_NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define RT_NVML_VALUE_TYPE_SIGNED_INT 5
#define RT_NVML_VALUE_TYPE_UNSIGNED_SHORT 6

/* nvmlValue_t */
typedef union rt_nvmlValue_st {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} rt_nvmlValue_t;

/* nvmlFieldValue_t: 40 bytes */
typedef struct rt_nvmlFieldValue_st {
	unsigned int fieldId; /* NVML_FI_*, set by the caller */
	unsigned int scopeId; /* NVLink fields: the link, UINT_MAX for all links summed */
	long long timestamp; /* CPU time of the value, µs since 1970 */
	long long latencyUsec;
	int valueType; /* nvmlValueType_t */
	rt_nvmlReturn_t nvmlReturn; /* this field's own result */
	rt_nvmlValue_t value;
} rt_nvmlFieldValue_t;

_Static_assert(sizeof(rt_nvmlValue_t) == 8, "nvmlValue_t is 8 bytes");
_Static_assert(sizeof(rt_nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");
_Static_assert(offsetof(rt_nvmlFieldValue_t, scopeId) == 4, "nvmlFieldValue_t.scopeId");
_Static_assert(offsetof(rt_nvmlFieldValue_t, timestamp) == 8, "nvmlFieldValue_t.timestamp");
_Static_assert(offsetof(rt_nvmlFieldValue_t, latencyUsec) == 16, "nvmlFieldValue_t.latencyUsec");
_Static_assert(offsetof(rt_nvmlFieldValue_t, valueType) == 24, "nvmlFieldValue_t.valueType");
_Static_assert(offsetof(rt_nvmlFieldValue_t, nvmlReturn) == 28, "nvmlFieldValue_t.nvmlReturn");
_Static_assert(offsetof(rt_nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value");

/* Field ids (nvml.h NVML_FI_*) */
#define RT_NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON 90 /* common NVLink speed of active links, MBps */
#define RT_NVML_FI_DEV_NVLINK_LINK_COUNT 91 /* NVLinks present on the device */
#define RT_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* NVLink TX data, KiB, cumulative */
#define RT_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139 /* NVLink RX data, KiB, cumulative */
#define RT_NVML_FI_DEV_PCIE_COUNT_TX_BYTES 197 /* PCIe transmitted bytes; may wrap */
#define RT_NVML_FI_DEV_PCIE_COUNT_RX_BYTES 198 /* PCIe received bytes; may wrap */
#define RT_NVML_SCOPE_ALL_LINKS 0xffffffffu /* scopeId: summed over the links */

/* The functions, as the library exports them. */
typedef rt_nvmlReturn_t (*rt_nvmlInit_v2_fn)(void);
typedef rt_nvmlReturn_t (*rt_nvmlShutdown_fn)(void);
typedef const char *(*rt_nvmlErrorString_fn)(rt_nvmlReturn_t result);
typedef rt_nvmlReturn_t (*rt_nvmlDeviceGetCount_v2_fn)(unsigned int *deviceCount);
typedef rt_nvmlReturn_t (*rt_nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int index,
							       rt_nvmlDevice_t *device);
typedef rt_nvmlReturn_t (*rt_nvmlDeviceGetFieldValues_fn)(rt_nvmlDevice_t device, int valuesCount,
							  rt_nvmlFieldValue_t *values);
typedef rt_nvmlReturn_t (*rt_nvmlDeviceGetMaxPcieLinkGeneration_fn)(rt_nvmlDevice_t device,
								    unsigned int *maxLinkGen);
typedef rt_nvmlReturn_t (*rt_nvmlDeviceGetMaxPcieLinkWidth_fn)(rt_nvmlDevice_t device,
							       unsigned int *maxLinkWidth);

#endif /* RT_SOURCES_NVML_API_H */
