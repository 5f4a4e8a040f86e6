// SPDX-License-Identifier: MIT
/*
 * sd_notify.c - the sd_notify(3) protocol: one datagram of "KEY=VALUE\n..."
 * to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" for the
 * abstract namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "sd_notify.h"

/* The socket address of $NOTIFY_SOCKET: its length, 0 if unset, -EINVAL. */
static int notify_addr(struct sockaddr_un *sa, socklen_t *salen)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa->sun_path))
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len);
	if (path[0] == '@')
		sa->sun_path[0] = '\0';
	*salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	return 1;
}

int bt_sd_notify_fd(const char *state, int fd)
{
	struct sockaddr_un sa;
	socklen_t salen;
	int r = notify_addr(&sa, &salen), s, e;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)state, strlen(state) };
	struct msghdr mh = { .msg_name = &sa, .msg_namelen = salen, .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };

	if (r <= 0)
		return r;
	memset(&ctl, 0, sizeof(ctl));
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	ssize_t n = sendmsg(s, &mh, MSG_NOSIGNAL);
	e = errno;
	close(s);
	return n < 0 ? -e : 1;
}

void bt_sd_listen_fds(const char *const *want, int *fds, int nwant)
{
	const char *pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS"), *names = getenv("LISTEN_FDNAMES");
	char *end;

	for (int k = 0; k < nwant; k++)
		fds[k] = -1;
	if (!pid || !nfds)
		return;
	errno = 0;
	unsigned long p = strtoul(pid, &end, 10);
	if (errno || *end || p != (unsigned long)getpid())
		return; /* meant for another process (inherited through exec) */
	unsigned long n = strtoul(nfds, &end, 10);
	if (*end || n > 4096)
		return;
	/* Names are colon-separated, one per fd from 3 on. */
	const char *q = names ? names : "";
	for (unsigned long i = 0; i < n; i++) {
		const char *colon = strchr(q, ':');
		size_t len = colon ? (size_t)(colon - q) : strlen(q);
		int k = 0;

		while (k < nwant && (fds[k] >= 0 || len != strlen(want[k]) || memcmp(q, want[k], len)))
			k++;
		if (k < nwant)
			fds[k] = 3 + (int)i;
		else
			fcntl(3 + (int)i, F_SETFD, FD_CLOEXEC); /* not ours: not inherited further */
		q = colon ? colon + 1 : q + len;
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

int bt_sd_listen_fd(const char *name)
{
	int fd;

	bt_sd_listen_fds(&name, &fd, 1);
	return fd;
}

int bt_sd_notify(const char *state)
{
	struct sockaddr_un sa;
	socklen_t salen;
	int r = notify_addr(&sa, &salen), fd, e;
	ssize_t n;

	if (r <= 0)
		return r;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	e = errno;
	close(fd);
	return n < 0 ? -e : 1;
}

int bt_sd_notifyf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return bt_sd_notify(buf);
}
