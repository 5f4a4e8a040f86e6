/* SPDX-License-Identifier: MIT */
/*
 * fd_pass.h - a line with a file descriptor attached (SCM_RIGHTS): how the
 * recorder hands an application its buffer, and an application hands the
 * recorder the buffer it wrote before it was attached.
 */
#ifndef BTRACE_FD_PASS_H
#define BTRACE_FD_PASS_H

/* The whole line on unix socket s with fd attached to its first byte;
 * flags for sendmsg (MSG_NOSIGNAL always). 0, or -1 (errno set, or a
 * short send). */
int bt_send_fd_line(int s, const char *line, int fd, int flags);
#endif
