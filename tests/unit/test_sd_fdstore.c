// SPDX-License-Identifier: MIT
/*
 * Unit tests of the fd store's client (user/ctl/sd_notify.c): an fd sent
 * with FDSTORE=1 arrives as the same file (SCM_RIGHTS) on $NOTIFY_SOCKET,
 * and LISTEN_FDS/LISTEN_FDNAMES give back the named fd only to the process
 * LISTEN_PID names, unset afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "sd_notify.h"
#include "harness.h"

static void test_fdstore_sends_the_fd(void)
{
	char path[] = "/tmp/btrace-sd-XXXXXX", sock[96], buf[256];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int mfd = memfd_create("btrace-buffer", 0), s, got = -1;
	struct stat a, b;

	REQUIRE(mfd >= 0 && mkdtemp(path), "memfd and directory");
	snprintf(sock, sizeof(sock), "%s/notify", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	s = socket(AF_UNIX, SOCK_DGRAM, 0);
	REQUIRE(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "notify socket");
	setenv("NOTIFY_SOCKET", sock, 1);
	CHECK(bt_sd_notify_fd("FDSTORE=1\nFDNAME=btrace-buffer", mfd) == 1, "sent");
	union {
		struct cmsghdr h;
		char c[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.c, .msg_controllen = sizeof(ctl.c) };
	ssize_t n = recvmsg(s, &mh, MSG_DONTWAIT);
	REQUIRE(n > 0, "a datagram");
	buf[n] = '\0';
	CHECK(!strcmp(buf, "FDSTORE=1\nFDNAME=btrace-buffer"), "the state: %s", buf);
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&got, CMSG_DATA(c), sizeof(int));
	CHECK(got >= 0 && fstat(got, &a) == 0 && fstat(mfd, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev,
	      "the same memfd arrives");
	unsetenv("NOTIFY_SOCKET");
	CHECK(bt_sd_notify_fd("FDSTORE=1", mfd) == 0, "not under systemd: nothing sent");
	if (got >= 0)
		close(got);
	close(s);
	unlink(sock);
	rmdir(path);
	close(mfd);
}

static void test_listen_fds(void)
{
	char pid[32];

	/* fds 3 and 4 as systemd would pass them (dup2 of a real file). */
	int f = open("/dev/null", O_RDONLY);
	REQUIRE(f >= 0 && dup2(f, 3) == 3 && dup2(f, 4) == 4, "fds 3 and 4");
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "2", 1);
	setenv("LISTEN_FDNAMES", "ctl:btrace-buffer", 1);
	CHECK(bt_sd_listen_fd("btrace-buffer") == 4, "the second fd is the named one");
	CHECK(!getenv("LISTEN_FDS") && !getenv("LISTEN_PID") && !getenv("LISTEN_FDNAMES"), "the variables are unset");
	CHECK(fcntl(3, F_GETFD) & FD_CLOEXEC, "the other passed fd is not inherited further");
	setenv("LISTEN_PID", "1", 1); /* another process's (inherited through exec) */
	setenv("LISTEN_FDS", "2", 1);
	setenv("LISTEN_FDNAMES", "ctl:btrace-buffer", 1);
	CHECK(bt_sd_listen_fd("btrace-buffer") == -1, "LISTEN_PID of another process: nothing");
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);
	setenv("LISTEN_FDNAMES", "other", 1);
	CHECK(bt_sd_listen_fd("btrace-buffer") == -1, "no fd of that name");
	close(3);
	close(4);
	close(f);
}

int main(void)
{
	RUN(test_fdstore_sends_the_fd);
	RUN(test_listen_fds);
	return h_done();
}
