// SPDX-License-Identifier: MIT
/*
 * fd_pass.c - a line with a file descriptor attached (see fd_pass.h). No
 * dependency beyond libc: libbtrace links it into applications.
 */
#include <string.h>
#include <sys/socket.h>
#include "fd_pass.h"

int bt_send_fd_line(int s, const char *line, int fd, int flags)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { .iov_base = (void *)line, .iov_len = strlen(line) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&mh);

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	return sendmsg(s, &mh, MSG_NOSIGNAL | flags) == (ssize_t)iov.iov_len ? 0 : -1;
}
