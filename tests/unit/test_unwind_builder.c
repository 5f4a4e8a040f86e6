// SPDX-License-Identifier: MIT
/*
 * test_unwind_builder.c - the builder's threads (user/stacks/unwind_builder.c)
 * never let a big table hold back an ordinary one: while a hostile
 * binary's table (build/tests/gen_hostile_elf, 4 M FDEs) is being built,
 * an ordinary table submitted after it is built within a second or two; a
 * second big job waits for the first rather than taking the worker the
 * ordinary tables need; a stop interrupts the build in progress.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "unwind_builder.h"

static char tmp[] = "/tmp/btrace-uwbuild-XXXXXX";

static void nothing(void *arg)
{
	(void)arg;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A job on FD with the given declared size, keyed by ino. */
static struct bt_unwind_job job(int fd, uint64_t ino, uint64_t size)
{
	struct bt_unwind_job j;

	memset(&j, 0, sizeof(j));
	j.fd = fd;
	j.ino = ino;
	j.budget_ns = 60ull * 1000000000ull;
	j.room = 1u << 24;
	j.size = size;
	return j;
}

/* A big job: HOSTILE's 4 M FDEs, past the big bound, a build of seconds
 * (ino KEY). */
static int big_job(struct bt_unwind_builder *b, const char *hostile, uint64_t key)
{
	int fd = open(hostile, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	struct bt_unwind_job j = job(fd, key, BT_UNWIND_BIG_JOB + 1);
	return bt_unwind_builder_submit(b, &j);
}

/* Waits up to ms for the result of ino; its ret, or 1 on timeout. */
static int wait_result(struct bt_unwind_builder *b, uint64_t ino, uint64_t ms, uint64_t *took)
{
	uint64_t t0 = mono_ms();
	struct bt_unwind_built r;

	while (mono_ms() - t0 < ms) {
		while (bt_unwind_builder_take(b, &r)) {
			if (!r.ret)
				bt_unwind_rows_free(&r.rows);
			if (r.ino == ino) {
				*took = mono_ms() - t0;
				return r.ret;
			}
		}
		usleep(2000);
	}
	return 1;
}

static void test_ordinary_beside_big(void)
{
	char hostile[160];
	char cmd[400];

	snprintf(hostile, sizeof(hostile), "%s/hfdes", tmp);
	snprintf(cmd, sizeof(cmd), "build/tests/gen_hostile_elf fdes 4194303 '%s' 30", hostile);
	REQUIRE(system(cmd) == 0, "%s (make tests)", cmd);

	struct bt_unwind_builder *b = bt_unwind_builder_start(0, nothing, NULL);
	uint64_t took = 0;

	REQUIRE(b, "builder starts: %s", strerror(errno));
	CHECK(big_job(b, hostile, 1) == 0, "first big job queued");
	CHECK(big_job(b, hostile, 2) == 0, "second big job queued");
	usleep(200000); /* both workers have looked at the queue */
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct bt_unwind_job j = job(fd, 3, 4096);
	CHECK(bt_unwind_builder_submit(b, &j) == 0, "ordinary job queued");
	int ret = wait_result(b, 3, 20000, &took);
	uint32_t pending = bt_unwind_builder_pending(b);
	printf("# ordinary table: ret %d after %llu ms, %u big jobs pending\n", ret, (unsigned long long)took,
	       pending);
	CHECK(ret == 0 && took < 5000, "this binary's table built beside a hostile one (ret %d after %llu ms)", ret,
	      (unsigned long long)took);
	CHECK(pending == 2, "both big jobs still pending then: one built, one waiting (%u)", pending);
	uint64_t t0 = mono_ms();
	bt_unwind_builder_stop(b);
	took = mono_ms() - t0;
	printf("# stop mid-build: %llu ms\n", (unsigned long long)took);
	CHECK(took < 5000, "stop interrupts the build in progress (%llu ms)", (unsigned long long)took);
}

int main(void)
{
	char cmd[256];

	elf_version(EV_CURRENT);
	if (!mkdtemp(tmp))
		return 1;
	RUN(test_ordinary_beside_big);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp);
	return h_done();
}
