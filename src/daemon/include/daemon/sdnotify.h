/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The service manager's readiness protocol (sd_notify(3)), written by hand
 * so reqtraced needs no libsystemd: one datagram of "KEY=VALUE\n" lines to
 * the AF_UNIX socket named in $NOTIFY_SOCKET.
 */
#ifndef RT_SDNOTIFY_H
#define RT_SDNOTIFY_H

/*
 * Send state (e.g. "READY=1\nSTATUS=tracing 2 targets") to $NOTIFY_SOCKET.
 * A name starting with '@' is an abstract socket. Returns 1 when sent, 0
 * when $NOTIFY_SOCKET is unset (not started by systemd, or Type= is not
 * notify), -EINVAL for a name that is neither absolute nor abstract or is
 * too long, or the -errno of socket()/sendto().
 */
int rt_sd_notify(const char *state);

#endif
