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
 *     where shown;
 *   - a buffer passed with the registration (a forked child's own, issue
 *     36): a valid one is read behind the recorder's; a pipe, a file, a
 *     memfd sealed already, a bad header, a size that is not its
 *     geometry's and one larger than allowed are refused, counted
 *     (early_refused=1), and the registration still answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "app_registry.h"
#include "app_shm.h"
#include "dump.h"

static struct bt_apps_config base_cfg(void)
{
	return (struct bt_apps_config){ .buffer_size = 64 << 10, .block_size = 1024, .ncores = 2, .max_apps = 8 };
}

__attribute__((noinline)) static char *status_of(struct bt_apps *r)
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
static int reg_early(struct bt_apps *r, uint32_t pid, const char *name, int funcs, int early, int *mine,
		     int *buf_fd);
static int reg_kind(struct bt_apps *r, uint32_t pid, const char *name, int funcs, int *mine, int *buf_fd)
{
	return reg_early(r, pid, name, funcs, -1, mine, buf_fd);
}

static int reg_early(struct bt_apps *r, uint32_t pid, const char *name, int funcs, int early, int *mine,
		     int *buf_fd)
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
	bt_apps_register(r, sv[1], pid, name, funcs, early, 0);
	*mine = sv[0];
	*buf_fd = -1;
	if (recvmsg(sv[0], &mh, 0) <= 0 || strncmp(line, "ok", 2))
		return -1;
	struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(buf_fd, CMSG_DATA(h), sizeof(int));
	return 0;
}

static int reg(struct bt_apps *r, uint32_t pid, const char *name, int *mine, int *buf_fd)
{
	return reg_kind(r, pid, name, 0, mine, buf_fd);
}

/* A program with the function hooks ("app-register NAME funcs") gets
 * funcs_buffer_size, the others buffer_size. */
static void test_funcs_default(void)
{
	struct bt_apps_config c = base_cfg();
	char err[256];
	c.funcs_buffer_size = 512 << 10;
	struct bt_apps *r = bt_apps_create(&c, err, sizeof(err));
	REQUIRE(r, "create: %s", err);
	int ec, eb, fc, fb;
	REQUIRE(reg_kind(r, 1, "events", 0, &ec, &eb) == 0 && eb >= 0, "register an event-only app");
	REQUIRE(reg_kind(r, 2, "funcs", 1, &fc, &fb) == 0 && fb >= 0, "register a function-tracing app");
	struct stat se, sf;
	fstat(eb, &se);
	fstat(fb, &sf);
	CHECK(se.st_size >= 64 << 10 && se.st_size < 512 << 10 && sf.st_size >= 512 << 10,
	      "buffers: %lld B for the event-only app (64 KiB asked), %lld B for the function-tracing one (512 KiB)",
	      (long long)se.st_size, (long long)sf.st_size);
	close(ec), close(eb), close(fc), close(fb);
	bt_apps_destroy(r);
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

/* A memfd with a valid header of this geometry (data bytes), or -1. */
static int early_memfd(uint32_t bsize, uint64_t data, uint32_t ncores, uint64_t extra, unsigned seals)
{
	uint32_t A, N;
	uint64_t mo, co, dof;
	char why[128];
	int fd = memfd_create("early", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || bt_app_geometry(data, bsize, ncores, &A, &N, why, sizeof(why)))
		return -1;
	uint64_t total = bt_app_shm_layout(bsize, A, N, ncores, &mo, &co, &dof);
	if (ftruncate(fd, (off_t)(total + extra)) < 0)
		return -1;
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -1;
	bt_app_shm_init(base, bsize, A, N, ncores, (uint32_t)getpid());
	munmap(base, total);
	if (seals)
		fcntl(fd, F_ADD_SEALS, seals);
	return fd;
}

static void test_early_buffers(void)
{
	struct bt_apps_config c = base_cfg();
	char err[256], path[] = "/tmp/btrace-early-XXXXXX";
	struct bt_apps *r = bt_apps_create(&c, err, sizeof(err));
	REQUIRE(r, "create: %s", err);
	int pfd[2], file = mkstemp(path);
	REQUIRE(pipe(pfd) == 0 && file >= 0, "pipe, file");
	unlink(path);
	CHECK(ftruncate(file, 1 << 20) == 0, "ftruncate");
	struct {
		const char *what;
		int fd, refused;
	} cases[] = {
		{ "a valid memfd of another block size", early_memfd(4096, 64 << 10, 3, 0, 0), 0 },
		{ "a pipe", pfd[0], 1 },
		{ "a regular file", file, 1 },
		{ "a memfd sealed already", early_memfd(1024, 64 << 10, 2, 0, F_SEAL_SEAL), 1 },
		{ "a size its geometry does not have", early_memfd(1024, 64 << 10, 2, 4096, 0), 1 },
		{ "larger than the recorder gives", early_memfd(1024, 8ull << 20, 2, 0, 0), 1 },
		{ "a bad header", memfd_create("zero", MFD_CLOEXEC | MFD_ALLOW_SEALING), 1 },
	};
	CHECK(ftruncate(cases[6].fd, 1 << 20) == 0, "ftruncate");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int mc, mb;
		uint32_t pid = 1000 + (uint32_t)i;
		int got = reg_early(r, pid, "early", 1, cases[i].fd, &mc, &mb);
		char *st = status_of(r), want[96], line[512] = "";
		/* live or exited: the pids are made up, and the I/O thread's
		 * liveness check may have found no such process already */
		snprintf(want, sizeof(want), "app %u early ", pid);
		const char *at = strstr(st, want);
		if (at)
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
		free(st);
		int refused = strstr(line, "early_refused=1") != NULL;
		int two = strstr(line, "buffers=2") != NULL;
		CHECK(got == 0 && line[0] && refused == cases[i].refused && two == !cases[i].refused,
		      "%s: registered, %s: %s", cases[i].what, cases[i].refused ? "refused, counted" : "read too", line);
		close(mc);
		if (mb >= 0)
			close(mb);
	}
	/* The refusals are in a dump too (issue 36: only ctl status said so):
	 * the early_refused counter of each application's row. */
	struct bt_apps_capture *cap = bt_apps_capture(r);
	REQUIRE(cap, "capture");
	char dpath[] = "/tmp/btrace-early-dump-XXXXXX", out[600];
	int dfd = mkstemp(dpath);
	REQUIRE(dfd >= 0, "mkstemp");
	close(dfd);
	struct bt_config kc = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&kc, err, sizeof(err));
	REQUIRE(k, "buffer: %s", err);
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .dump_seq = 1, .reason = "ctl",
				     .groups_enabled = 1, .write_apps = bt_apps_capture_write, .apps_ctx = cap };
	int wr = bt_dump_write(k, &info, NULL, dpath, 1, out, sizeof(out), NULL, err, sizeof(err));
	CHECK(wr == 0, "dump: %s", err);
	struct bt_dump *d = wr == 0 ? bt_dump_open(dpath, err, sizeof(err)) : NULL;
	CHECK(d, "open: %s", err);
	size_t na = 0, seen = 0;
	const struct bt_dump_app *apps = d ? bt_dump_apps(d, &na) : NULL;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t j = 0; j < na; j++)
			if (apps[j].pid == 1000 + i) {
				seen++;
				CHECK(apps[j].counters[BT_APPC_EARLY_REFUSED] == (uint64_t)cases[i].refused,
				      "%s: early_refused %llu in the dump", cases[i].what,
				      (unsigned long long)apps[j].counters[BT_APPC_EARLY_REFUSED]);
			}
	CHECK(seen == sizeof(cases) / sizeof(cases[0]), "every application in the dump (%zu)", seen);
	if (d)
		bt_dump_close(d);
	unlink(dpath);
	bt_buffer_destroy(k);
	bt_apps_capture_free(cap);
	close(pfd[1]);
	bt_apps_destroy(r);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_sizes);
	RUN(test_funcs_default);
	RUN(test_one_process_floods);
	RUN(test_registrant_exited);
	RUN(test_early_buffers);
	return h_done();
}
