/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Validation of untrusted rt_event records (event.h), shared by the .rtrace
 * reader and the consumers of rings that another process writes (the CUPTI
 * injection ring). A record that passes can be used without further bounds
 * checks:
 *
 *   - its kind is known and its size is a multiple of 8, at least the body
 *     this build knows for the kind and at most RT_EVENT_MAX (larger records
 *     are accepted: fields are appended, unknown tails are skipped);
 *   - every string field is NUL-terminated inside its array;
 *   - socket payload lengths are within RT_SOCK_{HEAD,TAIL}_MAX, fit in the
 *     record and do not exceed the bytes transferred;
 *   - enums that consumers index or switch on are in range (prev_state,
 *     phase, copy_kind, api_class, sync_type, nccl op, socket syscall and
 *     address family, target leave flag);
 *   - intervals are not negative (enter_ns <= ts_ns <= end_ns, since_ns <= ts_ns).
 */
#ifndef RT_EVENT_CHECK_H
#define RT_EVENT_CHECK_H

#include <stddef.h>

#include <reqtrace/event.h>

#define RT_EVENT_FAULT_MSG 128

/* Where and why a record is invalid. */
struct rt_event_fault {
	__u32 offset; /* first bad byte, counted from the start of the record */
	char msg[RT_EVENT_FAULT_MSG]; /* one line, no offset, e.g. "unknown kind 77" */
};

/* Size of the body this build knows for `kind` (header included); 0 if unknown. */
size_t rt_event_min_size(unsigned int kind);

/* "SCHED_SWITCH", ...; NULL for an unknown kind. */
const char *rt_event_kind_name(unsigned int kind);

/*
 * Checks a record header alone: kind known, size a multiple of 8 within
 * [rt_event_min_size(kind), RT_EVENT_MAX]. hdr need not be aligned. Returns 0
 * or -EBADMSG and, when fault is not NULL, fills it.
 */
int rt_event_check_hdr(const struct rt_event_hdr *hdr, struct rt_event_fault *fault);

/*
 * Checks the body of a record whose header passed rt_event_check_hdr(). ev
 * must be 8-byte aligned with ev->size readable bytes. Returns 0 or -EBADMSG
 * and, when fault is not NULL, fills it.
 */
int rt_event_check_body(const struct rt_event_hdr *ev, struct rt_event_fault *fault);

/*
 * Both checks for a record at ev (8-byte aligned) with len readable bytes
 * (len may exceed the record). Returns 0, -EBADMSG (invalid) or -ENODATA
 * (the record claims more than len bytes, or len is below a header).
 */
int rt_event_check(const struct rt_event_hdr *ev, size_t len, struct rt_event_fault *fault);

#endif /* RT_EVENT_CHECK_H */
