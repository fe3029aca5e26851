// SPDX-License-Identifier: BSD-2-Clause
/*
 * sd_notify(3) without libsystemd. The protocol is small and stable
 * (systemd's docs call it a stable interface): an AF_UNIX datagram to the
 * path in $NOTIFY_SOCKET, '@' standing for the abstract namespace's NUL.
 */
#include "daemon/sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int rt_sd_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t salen;
	ssize_t n;
	int fd, err = 0;

	if (!name || !*name)
		return 0;
	len = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || len < 2 || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, name, len);
	/* an abstract name is exactly len bytes long: no trailing NUL counted */
	if (name[0] == '@') {
		sa.sun_path[0] = '\0';
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	} else {
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* MSG_NOSIGNAL: a vanished manager must not kill us with SIGPIPE */
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != strlen(state))
		err = -EMSGSIZE;
	close(fd);
	return err ? err : 1;
}
