/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every event source (BPF, CUPTI injection rings, replay) hands its
 * records to.
 */
#ifndef RT_SOURCES_SOURCE_H
#define RT_SOURCES_SOURCE_H

#include <reqtrace/event.h>

/*
 * Called once per record, in the order the source delivers them (not
 * time-ordered). `ev` is valid only during the call (it may point into a
 * ring that is reused afterwards): copy what you keep. ev->size has been
 * checked against the bytes available. Return 0 to go on, a negative errno
 * to make the source stop and return that error.
 */
typedef int (*rt_event_fn)(const struct rt_event_hdr *ev, void *ctx);

#endif /* RT_SOURCES_SOURCE_H */
