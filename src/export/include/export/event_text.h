/* SPDX-License-Identifier: BSD-2-Clause */
/* One record as a line of text, for `reqtrace replay --events` and debugging. */
#ifndef RT_EVENT_TEXT_H
#define RT_EVENT_TEXT_H

#include <stdio.h>

#include <reqtrace/event.h>

void rt_event_print(FILE *f, const struct rt_event_hdr *ev);

#endif /* RT_EVENT_TEXT_H */
