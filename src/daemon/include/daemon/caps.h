/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The capabilities reqtraced keeps once set up, and the drop to them.
 *
 * The list lives in configs/reqtraced.service (CapabilityBoundingSet=);
 * RT_CAPS_KEEP must name the same set, which test_caps checks against the
 * unit file, and tests/integration/systemd_caps.py reads the same line.
 */
#ifndef RT_CAPS_H
#define RT_CAPS_H

#include <stdint.h>

#include <linux/capability.h>

/* headers older than Linux 5.8 */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define RT_CAP_BIT(c) (1ULL << (c))
/*
 * CAP_BPF, CAP_PERFMON: maps, programs, tracepoint perf events.
 * CAP_SYS_ADMIN: uprobes (markers, GPU libraries; they attach whenever a
 * target starts or restarts): perf_uprobe_event_init() wants it again since
 * Linux 6.16 and the stable kernels that took ba677dbe77af ("perf: Revert
 * to requiring CAP_SYS_ADMIN for uprobes"); also setns() into targets'
 * network namespaces for sock_diag, and mounting tracefs when it is absent.
 * CAP_SYS_PTRACE: /proc/PID/{root,fd,maps,ns} of targets of any user.
 * CAP_DAC_READ_SEARCH: tracefs (mode 0700) for tracepoint ids, target files.
 */
#define RT_CAPS_KEEP                                                                               \
	(RT_CAP_BIT(CAP_BPF) | RT_CAP_BIT(CAP_PERFMON) | RT_CAP_BIT(CAP_SYS_ADMIN) |               \
	 RT_CAP_BIT(CAP_SYS_PTRACE) | RT_CAP_BIT(CAP_DAC_READ_SEARCH))

/* "CAP_SYS_PTRACE" → 19; -EINVAL for an unknown name. */
int rt_cap_from_name(const char *name);
/* The name of capability c, NULL past the last one known. */
const char *rt_cap_name(int c);
/*
 * A space-separated list of names (a unit's CapabilityBoundingSet= value)
 * as a mask in *mask; -EINVAL names the first unknown one in *bad (when
 * bad is not NULL) and leaves *mask unset.
 */
int rt_caps_parse(const char *list, uint64_t *mask, const char **bad);
/*
 * Drop every capability not in keep from the bounding set and from the
 * effective, permitted, inheritable and ambient sets, and set
 * no_new_privs (reqtraced never executes anything). 0, or -errno when a
 * capability outside keep could not be dropped: the caller must not go on.
 */
int rt_caps_drop_to(uint64_t keep);
/* The calling thread's permitted set (for tests and logs), or 0 on error. */
uint64_t rt_caps_permitted(void);

#endif
