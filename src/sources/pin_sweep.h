/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The directories of pinned links in bpffs (bpf_pin.c) as plain files:
 * naming a daemon, telling a dead one's from a live one's, removing them.
 * No libbpf here, so that it is unit-tested on any directory.
 */
#ifndef RT_SOURCES_PIN_SWEEP_H
#define RT_SOURCES_PIN_SWEEP_H

/*
 * A process's start time (/proc/PID/stat field 22, clock ticks since
 * boot): with the pid it names one process for the machine's uptime.
 * 0 when there is no such process or its stat does not parse.
 */
unsigned long long rt_pin_start_time(long pid);

/* Removes every entry of dir, then dir. Returns the entries removed. */
unsigned rt_pin_remove_dir(const char *dir);

/*
 * Removes, under root, the directories named "<pid>-<start time>-..." of
 * processes that are gone (no such pid, or another start time), except
 * own (a full path, or ""). Others are left. Returns the directories
 * removed; each is logged with the count of its pins.
 */
unsigned rt_pin_sweep(const char *root, const char *own);

#endif /* RT_SOURCES_PIN_SWEEP_H */
