// SPDX-License-Identifier: MIT
/*
 * test_dump_tmp.c - temporaries of a dump writer killed mid-dump: named
 * after their writer (pid, start time), removed by bt_dump_clean_stale()
 * once that writer is gone, and nothing else ever removed: not a live
 * writer's, not another user's, not a link or a directory, not a file of
 * another name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"

static char tmpdir[256];

static void touch(const char *name)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd >= 0)
		close(fd);
}

static int exists(const char *name)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return lstat(p, &st) == 0;
}

/* A pid that ran and is gone. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

static void test_rules(void)
{
	char dead[128], reused[128], live[128], other_user[128], link_n[128], dir_n[128], err[256];
	uint64_t me = bt_proc_start_time(getpid());
	pid_t gone = dead_pid();

	REQUIRE(me > 0, "start time of self");
	snprintf(dead, sizeof(dead), BT_DUMP_TMP_PREFIX "%d.123.btrace-h-1.btd.AbCdEf", (int)gone);
	/* the parent's pid, but another start time: a reused pid */
	snprintf(reused, sizeof(reused), BT_DUMP_TMP_PREFIX "%d.%" PRIu64 ".btrace-h-2.btd.AbCdEf", (int)getppid(),
		 bt_proc_start_time(getppid()) + 1);
	/* a live writer: the parent of this test (pid and start time right) */
	snprintf(live, sizeof(live), BT_DUMP_TMP_PREFIX "%d.%" PRIu64 ".btrace-h-3.btd.AbCdEf", (int)getppid(),
		 bt_proc_start_time(getppid()));
	snprintf(other_user, sizeof(other_user), BT_DUMP_TMP_PREFIX "%d.123.other.btd.AbCdEf", (int)gone);
	snprintf(link_n, sizeof(link_n), BT_DUMP_TMP_PREFIX "%d.123.link.btd.AbCdEf", (int)gone);
	snprintf(dir_n, sizeof(dir_n), BT_DUMP_TMP_PREFIX "%d.123.dir.btd.AbCdEf", (int)gone);
	touch(dead);
	touch(reused);
	touch(live);
	touch(other_user);
	touch(".btrace-h-4.btd.AbCdEf");        /* an older recorder's: cannot tell whose */
	touch(BT_DUMP_TMP_PREFIX "notanumber"); /* not a name we make */
	touch("keep.btd");
	char p[600], q[600];
	snprintf(p, sizeof(p), "%s/%s", tmpdir, link_n);
	snprintf(q, sizeof(q), "%s/keep.btd", tmpdir);
	REQUIRE(symlink(q, p) == 0, "symlink");
	snprintf(p, sizeof(p), "%s/%s", tmpdir, dir_n);
	REQUIRE(mkdir(p, 0700) == 0, "mkdir");
	int own = 0;
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, other_user);
		own = chown(p, 65534, 65534) == 0;
	}

	int n = bt_dump_clean_stale(tmpdir, err, sizeof(err));
	CHECK(n == (own ? 2 : 3), "removed %d: %s", n, err);
	CHECK(!exists(dead), "a dead writer's temporary stays");
	CHECK(!exists(reused), "a reused pid's temporary stays");
	CHECK(exists(live), "a live writer's temporary was removed");
	if (own)
		CHECK(exists(other_user), "another user's file was removed");
	CHECK(exists(".btrace-h-4.btd.AbCdEf") && exists(BT_DUMP_TMP_PREFIX "notanumber") && exists("keep.btd"),
	      "a file of another name was removed");
	CHECK(exists(link_n) && exists(dir_n), "a link or a directory was removed");
	CHECK(bt_dump_clean_stale("/nonexistent/dir", err, sizeof(err)) == 0, "missing dir");
}

/* A writer killed mid-dump leaves a temporary named after it; cleaning
 * removes it once the writer is gone, and the next dump is fine. */
static void test_killed_writer(void)
{
	char dir[300], err[256];
	snprintf(dir, sizeof(dir), "%s/killed", tmpdir);
	REQUIRE(mkdir(dir, 0700) == 0, "mkdir");
	struct bt_config cfg = { .size = 32 << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(b, "buffer: %s", err);
	/* fill it with incompressible-ish events so a zlib 9 dump takes a while */
	uint32_t x = 12345;
	for (uint32_t i = 0; i < 600000; i++) {
		struct bt_ev_syscall e = { .h = { .ts_ns = 1000 + i, .seq = i / 2, .tid = 77, .tgid = 77,
						  .cpu = (uint16_t)(i & 1), .type = BT_EV_SYS_ENTER } };
		x = x * 1103515245u + 12345u;
		e.id = (int64_t)(x >> 3);
		uint8_t batch[BT_COMPACT_MAX];
		uint32_t n = bt_compact_batch_put(batch, &e.h, sizeof(e), NULL);
		bt_write(b, e.h.cpu, batch, n);
	}
	uint64_t drops[2 * BT_GROUP_MAX] = { 0 };
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .dump_seq = 1,
				     .reason = "test", .groups_enabled = 1 };
	pid_t w = fork();
	if (w == 0) {
		for (;;)
			bt_dump_write(b, &info, dir, NULL, 9, NULL, 0, NULL, err, sizeof(err));
	}
	/* wait for its temporary, then kill it */
	char found[300] = "";
	for (int i = 0; i < 500 && !found[0]; i++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (!strncmp(e->d_name, BT_DUMP_TMP_PREFIX, strlen(BT_DUMP_TMP_PREFIX)))
				snprintf(found, sizeof(found), "%s", e->d_name);
		if (d)
			closedir(d);
		if (!found[0])
			usleep(10000);
	}
	kill(w, SIGKILL);
	waitpid(w, NULL, 0);
	REQUIRE(found[0], "no temporary seen");
	char want[64];
	snprintf(want, sizeof(want), BT_DUMP_TMP_PREFIX "%d.", (int)w);
	CHECK(!strncmp(found, want, strlen(want)), "temporary %s is not named after its writer %d", found, (int)w);
	/* left behind: SIGKILL runs no cleanup */
	int left = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		left += !strncmp(e->d_name, BT_DUMP_TMP_PREFIX, strlen(BT_DUMP_TMP_PREFIX));
	if (d)
		closedir(d);
	CHECK(left == 1, "%d temporaries after the kill", left);
	CHECK(bt_dump_clean_stale(dir, err, sizeof(err)) == 1, "cleaned: %s", err);
	d = opendir(dir);
	left = 0;
	while (d && (e = readdir(d)))
		left += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	CHECK(left == 0, "%d hidden files left", left);
	bt_buffer_destroy(b);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_dump_tmp.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_rules);
	RUN(test_killed_writer);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return h_done();
}
