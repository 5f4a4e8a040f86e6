/* SPDX-License-Identifier: MIT */
/*
 * sd_notify.h - tell systemd how the service is doing (Type=notify): the
 * sd_notify(3) datagram protocol on $NOTIFY_SOCKET, without libsystemd.
 */
#ifndef BTRACE_SD_NOTIFY_H
#define BTRACE_SD_NOTIFY_H

/* Send "READY=1", "STOPPING=1", "STATUS=...", ... (newline-separated
 * assignments). 1 sent, 0 not under systemd (no NOTIFY_SOCKET), -errno. */
int bt_sd_notify(const char *state);
int bt_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
