// SPDX-License-Identifier: MIT
/*
 * test_app_registry.c - the registration limits of in-process tracing
 * (user/apps/app_registry.c), driven through bt_apps_register with socket
 * pairs as the control socket would:
 *   - buffer sizes: 1T refused at creation and by app-resize; all
 *     applications' buffers together must fit in the memory available;
 *   - one process registering 200 times keeps one post-mortem entry and
 *     evicts nobody else's;
 *   - a registrant that exited while another process holds its connection
 *     is shown exited, not live;
 *   - a counter the application writes in its shared memory is bounded
 *     where shown.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "app_registry.h"
#include "app_shm.h"

static struct bt_apps_config base_cfg(void)
{
	return (struct bt_apps_config){ .buffer_size = 64 << 10, .block_size = 1024, .ncores = 2, .max_apps = 8 };
}

static char *status_of(struct bt_apps *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bt_apps_status(r, f);
	fclose(f);
	return buf;
}

/* Register pid as NAME; our end of its connection in *mine, the buffer
 * the recorder handed over in *buf_fd (-1 if none). */
static int reg(struct bt_apps *r, uint32_t pid, const char *name, int *mine, int *buf_fd)
{
	int sv[2];
	char line[64];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { line, sizeof(line) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof(cm.b) };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	bt_apps_register(r, sv[1], pid, name);
	*mine = sv[0];
	*buf_fd = -1;
	if (recvmsg(sv[0], &mh, 0) <= 0 || strncmp(line, "ok", 2))
		return -1;
	struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(buf_fd, CMSG_DATA(h), sizeof(int));
	return 0;
}

static void test_sizes(void)
{
	struct bt_apps_config c = base_cfg();
	char err[256] = "";

	c.buffer_size = 1ull << 40;
	struct bt_apps *r = bt_apps_create(&c, err, sizeof(err));
	CHECK(!r && strstr(err, "larger than"), "--app-buffer-size 1T refused: %s", err);
	bt_apps_destroy(r);
	c.buffer_size = 1ull << 30;
	c.max_apps = 4096;
	r = bt_apps_create(&c, err, sizeof(err));
	CHECK(!r && strstr(err, "memory available"), "4096 apps x 1G refused: %s", err);
	bt_apps_destroy(r);
	c = base_cfg();
	r = bt_apps_create(&c, err, sizeof(err));
	REQUIRE(r, "create: %s", err);
	int n = bt_apps_resize(r, 1ull << 40, err, sizeof(err));
	CHECK(n < 0 && strstr(err, "larger than"), "app-resize 1T refused: %d %s", n, err);
	n = bt_apps_resize(r, 128 << 10, err, sizeof(err));
	CHECK(n == 0, "app-resize 128K accepted: %d %s", n, err);
	bt_apps_destroy(r);
}

static void test_one_process_floods(void)
{
	struct bt_apps_config c = base_cfg();
	char err[256];
	struct bt_apps *r = bt_apps_create(&c, err, sizeof(err));
	REQUIRE(r, "create: %s", err);

	/* another process registers, then exits: its post-mortem entry */
	pid_t other = fork();
	if (other == 0) {
		pause();
		_exit(0);
	}
	int oc, ob;
	REQUIRE(reg(r, (uint32_t)other, "victim", &oc, &ob) == 0, "register the other");
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	close(oc);
	close(ob);
	/* this one registers 200 times (each replaces the one before) */
	int last = -1, fails = 0;
	for (int i = 0; i < 200; i++) {
		int mc, mb;
		if (reg(r, (uint32_t)getpid(), "flood", &mc, &mb))
			fails++;
		if (mb >= 0)
			close(mb);
		if (last >= 0)
			close(last);
		last = mc;
	}
	usleep(300000); /* the registry's thread sees the closed connections */
	char *st = status_of(r);
	char want[64];
	snprintf(want, sizeof(want), "app %d victim exited", (int)other);
	CHECK(!fails && strstr(st, want), "200 registrations of one process: the other's post-mortem kept:\n%s", st);
	size_t n = bt_apps_count(r, NULL);
	CHECK(n == 3, "the table holds the other, this one, its previous: %zu", n);
	free(st);
	close(last);
	bt_apps_destroy(r);
}

static void test_registrant_exited(void)
{
	struct bt_apps_config c = base_cfg();
	char err[256];
	struct bt_apps *r = bt_apps_create(&c, err, sizeof(err));
	REQUIRE(r, "create: %s", err);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	/* its connection lives on here (as in a child it forked) */
	int mc, mb;
	REQUIRE(reg(r, (uint32_t)child, "forker", &mc, &mb) == 0, "register");
	char want[64], *st = NULL;
	snprintf(want, sizeof(want), "app %d forker exited", (int)child);
	for (int i = 0; i < 30; i++) {
		free(st);
		st = status_of(r);
		if (strstr(st, want))
			break;
		usleep(100000);
	}
	CHECK(strstr(st, want), "a registrant gone while its connection is held: exited within 3 s:\n%s", st);
	free(st);

	/* the counters it wrote are its word: bounded where shown */
	struct bt_app_shm *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, mb, 0);
	REQUIRE(sh != MAP_FAILED, "mmap");
	atomic_store_explicit(&sh->stats.dropped, 15575754897364848144ull, memory_order_relaxed);
	st = status_of(r);
	CHECK(!strstr(st, "15575754897364848144") && strstr(st, "implausible"), "a bogus dropped count:\n%s", st);
	free(st);
	munmap(sh, sizeof(*sh));
	close(mb);
	close(mc);
	bt_apps_destroy(r);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_sizes);
	RUN(test_one_process_floods);
	RUN(test_registrant_exited);
	return h_done();
}
