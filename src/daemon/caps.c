// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capability drop with capget/capset and prctl directly: about what
 * libcap's cap_set_proc() and cap_drop_bound() do, without a library for
 * two syscalls and a loop. The calling thread is the only one when this
 * runs (libuv starts its pool lazily; reqtraced never uses it), so the
 * whole process is covered.
 */
#include "daemon/caps.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* capability(7)'s names in number order, as systemd and setpriv spell them */
static const char *const names[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};
#define N_NAMES ((int)(sizeof(names) / sizeof(names[0])))

const char *rt_cap_name(int c)
{
	return c >= 0 && c < N_NAMES ? names[c] : NULL;
}

int rt_cap_from_name(const char *name)
{
	for (int c = 0; c < N_NAMES; c++)
		if (!strcmp(names[c], name))
			return c;
	return -EINVAL;
}

int rt_caps_parse(const char *list, uint64_t *mask, const char **bad)
{
	static char word[64];
	uint64_t m = 0;
	const char *p = list;

	while (*p) {
		size_t n;
		int c;

		p += strspn(p, " \t");
		n = strcspn(p, " \t\r\n");
		if (!n)
			break;
		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		memcpy(word, p, n);
		word[n] = '\0';
		c = rt_cap_from_name(word);
		if (c < 0) {
			if (bad)
				*bad = word;
			return -EINVAL;
		}
		m |= RT_CAP_BIT(c);
		p += strcspn(p, " \t\r\n");
		if (*p == '\r' || *p == '\n')
			break;
	}
	*mask = m;
	return 0;
}

static int get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, d) ? -errno : 0;
}

uint64_t rt_caps_permitted(void)
{
	struct __user_cap_data_struct d[2];

	if (get(d))
		return 0;
	return (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
}

int rt_caps_drop_to(uint64_t keep)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	uint64_t perm;
	int c, r, err;

	/*
	 * First, while CAP_SETPCAP may still be ours: no execve could hand
	 * back what we drop. no_new_privs alone already ensures that (a
	 * non-root run without CAP_SETPCAP cannot shrink its bounding set),
	 * so a bounding-set EPERM is tolerated once it is set.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	for (c = 0; c < 64; c++) {
		r = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
		if (r < 0)
			break; /* EINVAL past the kernel's last capability */
		if (r == 1 && !(keep & RT_CAP_BIT(c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) &&
		    errno != EPERM)
			return -errno;
	}
	err = get(d);
	if (err)
		return err;
	for (int i = 0; i < 2; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));

		d[i].permitted &= k;
		d[i].effective = d[i].permitted;
		d[i].inheritable = 0; /* which clears the ambient set too */
	}
	if (syscall(SYS_capset, &h, d))
		return -errno;
	/* kernels before 4.3 have no ambient set: EINVAL is fine there */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	err = get(d);
	if (err)
		return err;
	perm = (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
	return perm & ~keep ? -EPERM : 0;
}
