/* SPDX-License-Identifier: MIT */
/*
 * sd_notify.h - tell systemd how the service is doing (Type=notify) and
 * hand it fds to keep (the fd store), take them back at start: the
 * sd_notify(3) datagram protocol on $NOTIFY_SOCKET, without libsystemd.
 */
#ifndef BTRACE_SD_NOTIFY_H
#define BTRACE_SD_NOTIFY_H

/* Send "READY=1", "STOPPING=1", "STATUS=...", ... (newline-separated
 * assignments). 1 sent, 0 not under systemd (no NOTIFY_SOCKET), -errno. */
int bt_sd_notify(const char *state);
int bt_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with fd attached (SCM_RIGHTS): "FDSTORE=1\nFDNAME=..." hands
 * systemd's fd store a copy of fd, given back at the next start. */
int bt_sd_notify_fd(const char *state, int fd);
/* The fd systemd passed named `name` (LISTEN_FDS, LISTEN_FDNAMES; only
 * when LISTEN_PID is this process), -1 if none. The variables are then
 * unset; the other passed fds are marked close-on-exec. */
int bt_sd_listen_fd(const char *name);
/* The same for n names at once: fds[i] the fd named names[i], or -1. */
void bt_sd_listen_fds(const char *const *names, int *fds, int n);
#endif
