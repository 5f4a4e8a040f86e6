// SPDX-License-Identifier: MIT
/*
 * test_mapping_capture.c - user addresses made durable (mapping_capture.h),
 * on a real child process (a fork of this test: the same libc, the same
 * vDSO at the same addresses):
 *   - an exited process keeps its maps for the stacks sampled while it
 *     ends (do_exit runs after sched_process_exit), even once reaped;
 *     forgotten at exec or when a new process takes its pid;
 *   - a frame in the vDSO is named by the file "[vdso]": the kernel's image,
 *     copied, with its build-id; its symbols are those of the image;
 *   - an address in anonymous executable memory (JIT code) is known to
 *     have no file: the maps are not read again for every such frame, as
 *     they are (at most every 200 ms) for an address outside them;
 *   - a stack taken before an exec (its process's maps no longer hold any
 *     of its frames) is named from its parent's maps, whether its fork is
 *     applied after it (the same drain pass) or before; junk is not;
 *   - a deleted binary first met in a forked child's frame is opened
 *     through a mapping of it (the child's, or its parent's once the
 *     child is gone), not kept by its path, which opens nothing.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/types.h>
#include "harness.h"
#include "events.h"
#include "mapping_capture.h"
#include "stack_table.h"

static pid_t child(void)
{
	pid_t p = fork();

	if (p == 0) {
		pause();
		_exit(0);
	}
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void test_exited_keeps_maps(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint64_t addr = (uint64_t)(uintptr_t)&getpid, off, off2;
	pid_t p = child();
	size_t n;

	REQUIRE(m && p > 0, "mapcap and a child");
	uint32_t id = bt_mapcap_resolve(m, (uint32_t)p, addr, &off);
	CHECK(id != BT_MAP_NONE, "the child's libc resolves");
	const struct bt_mapfile *f = bt_mapcap_files(m, &n);
	CHECK(id != BT_MAP_NONE && id <= n && strstr(f[id - 1].path, "libc"), "to libc (%s)",
	      id != BT_MAP_NONE && id <= n ? f[id - 1].path : "none");
	bt_mapcap_exited(m, (uint32_t)p);
	reap(p); /* gone: /proc/PID/maps no longer exists */
	CHECK(bt_mapcap_resolve(m, (uint32_t)p, addr, &off2) == id && off2 == off,
	      "after its exit and reaping, a late stack still resolves (the exit grace)");
	bt_mapcap_forget(m, (uint32_t)p); /* what a fork reusing the pid, or exec, does */
	CHECK(bt_mapcap_resolve(m, (uint32_t)p, addr, &off2) == BT_MAP_NONE, "forgotten: nothing to read");
	bt_mapcap_free(m);
}

static void test_exit_storm_bounded(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint64_t addr = (uint64_t)(uintptr_t)&getpid, off;
	pid_t first = child(), p;

	REQUIRE(m && first > 0, "mapcap and a child");
	CHECK(bt_mapcap_resolve(m, (uint32_t)first, addr, &off) != BT_MAP_NONE, "first child resolves");
	bt_mapcap_exited(m, (uint32_t)first);
	reap(first);
	/* 300 more exits than the 256 held: the oldest, the first, goes */
	for (int i = 0; i < 300; i++) {
		p = child();
		REQUIRE(p > 0, "fork");
		bt_mapcap_resolve(m, (uint32_t)p, addr, &off);
		bt_mapcap_exited(m, (uint32_t)p);
		reap(p);
	}
	CHECK(bt_mapcap_resolve(m, (uint32_t)first, addr, &off) == BT_MAP_NONE,
	      "a storm of exits forgets the oldest exited first");
	CHECK(bt_mapcap_resolve(m, (uint32_t)p, addr, &off) != BT_MAP_NONE, "the newest exited still resolves");
	bt_mapcap_free(m);
}

static void test_vdso_named(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint64_t base = getauxval(AT_SYSINFO_EHDR), off;
	pid_t p = child();
	size_t n;

	REQUIRE(m && p > 0, "mapcap and a child");
	if (!base) {
		CHECK(1, "no vDSO here: nothing to name");
		reap(p);
		bt_mapcap_free(m);
		return;
	}
	uint32_t id = bt_mapcap_resolve(m, (uint32_t)p, base + 0x10, &off);
	const struct bt_mapfile *f = bt_mapcap_files(m, &n);
	CHECK(id != BT_MAP_NONE && id <= n && strcmp(f[id - 1].path, "[vdso]") == 0 && off == 0x10,
	      "a vDSO address resolves to [vdso] at its offset (id %u, off 0x%llx)", id, (unsigned long long)off);
	CHECK(id != BT_MAP_NONE && id <= n && f[id - 1].fd >= 0 && f[id - 1].build_id_len > 0,
	      "the vDSO's copy is held, with its build-id");
	CHECK(bt_mapcap_resolve(m, (uint32_t)getpid(), base + 0x10, &off) == id, "one [vdso] file for every process");
	reap(p);
	bt_mapcap_free(m);
}

static void test_jit_code_no_reread(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint8_t *jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec nap = { 0, 250 * 1000000L };
	uint32_t me = (uint32_t)getpid();
	uint64_t off;

	REQUIRE(m && jit != MAP_FAILED, "mapcap and an executable anonymous page");
	CHECK(bt_mapcap_resolve(m, me, (uint64_t)(uintptr_t)jit + 16, &off) == BT_MAP_NONE, "JIT code has no file");
	CHECK(bt_mapcap_maps_reads(m) == 1, "read once (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	for (int i = 0; i < 100; i++)
		bt_mapcap_resolve(m, me, (uint64_t)(uintptr_t)jit + 16 + i, &off);
	CHECK(bt_mapcap_maps_reads(m) == 1, "100 JIT frames later: still read once (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	/* An address in no mapping at all (a dlopen since?) does look again. */
	CHECK(bt_mapcap_resolve(m, me, 0x1000, &off) == BT_MAP_NONE, "an unmapped address has no file");
	CHECK(bt_mapcap_maps_reads(m) == 2, "and reads the maps again (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	munmap(jit, 4096);
	bt_mapcap_free(m);
}

/* Maps read in a process's first moments may predate a library the loader
 * maps next: a frame in it, sampled after that read, reads them again at
 * once; a frame sampled before the read does not, nor once the maps held
 * were read past the young window (the 200 ms rule then). */
static uint64_t boot_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *map_exe(int fd)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void test_young_maps_reread(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint32_t me = (uint32_t)getpid();
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct timespec nap = { 0, 120 * 1000000L };
	uint64_t off, t0 = boot_now();
	uint8_t *a, *b, *c;

	REQUIRE(m && fd >= 0, "mapcap and our executable");
	CHECK(bt_mapcap_resolve_at(m, me, (uint64_t)(uintptr_t)&test_young_maps_reread, t0, &off) != BT_MAP_NONE,
	      "first read names our code");
	a = map_exe(fd); /* "the loader maps a library" after that read */
	REQUIRE(a, "a new executable mapping");
	CHECK(bt_mapcap_resolve_at(m, me, (uint64_t)(uintptr_t)a + 16, boot_now(), &off) != BT_MAP_NONE,
	      "a frame in it sampled after the young read: read again, named (reads %llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	CHECK(bt_mapcap_maps_reads(m) == 2, "two reads (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	b = map_exe(fd);
	REQUIRE(b, "another one");
	CHECK(bt_mapcap_resolve_at(m, me, (uint64_t)(uintptr_t)b + 16, t0, &off) == BT_MAP_NONE &&
		      bt_mapcap_maps_reads(m) == 2,
	      "sampled before the maps held were read: no read (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	CHECK(bt_mapcap_resolve_at(m, me, (uint64_t)(uintptr_t)b + 16, boot_now(), &off) != BT_MAP_NONE &&
		      bt_mapcap_maps_reads(m) == 3,
	      "the maps held were read young: a later sample reads again (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	c = map_exe(fd);
	REQUIRE(c, "a third one");
	CHECK(bt_mapcap_resolve_at(m, me, (uint64_t)(uintptr_t)c + 16, boot_now(), &off) == BT_MAP_NONE &&
		      bt_mapcap_maps_reads(m) == 3,
	      "maps read past the young window: the 200 ms rule (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	munmap(a, 4096);
	munmap(b, 4096);
	munmap(c, 4096);
	close(fd);
	bt_mapcap_free(m);
}

/* A junk address (no mapping) re-reads the maps at most every 200 ms, that
 * interval doubling with each read that finds nothing new (to 1.6 s), and
 * back to 200 ms once a read finds a new mapping. */
static void test_junk_backs_off(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint32_t me = (uint32_t)getpid();
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct timespec nap = { 0, 220 * 1000000L }, twice = { 0, 420 * 1000000L };
	uint64_t off, junk = 0x1000;
	uint8_t *a;

	REQUIRE(m && fd >= 0, "mapcap and our executable");
	bt_mapcap_resolve(m, me, junk, &off);
	nanosleep(&nap, NULL);
	bt_mapcap_resolve(m, me, junk, &off);
	CHECK(bt_mapcap_maps_reads(m) == 2, "a junk address 220 ms on: read again (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	bt_mapcap_resolve(m, me, junk, &off);
	CHECK(bt_mapcap_maps_reads(m) == 2, "nothing new in it: 220 ms later, no read (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	bt_mapcap_resolve(m, me, junk, &off);
	CHECK(bt_mapcap_maps_reads(m) == 3, "440 ms later, read (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	a = map_exe(fd); /* a library dlopen'ed */
	REQUIRE(a, "a new executable mapping");
	nanosleep(&twice, NULL);
	bt_mapcap_resolve(m, me, junk, &off);
	CHECK(bt_mapcap_maps_reads(m) == 3, "nothing new twice: 420 ms later, no read (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&twice, NULL);
	CHECK(bt_mapcap_resolve(m, me, (uint64_t)(uintptr_t)a + 16, &off) != BT_MAP_NONE &&
		      bt_mapcap_maps_reads(m) == 4,
	      "840 ms later: read, the new mapping named (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	bt_mapcap_resolve(m, me, junk, &off);
	CHECK(bt_mapcap_maps_reads(m) == 5, "after a read that found it: 200 ms again (%llu)",
	      (unsigned long long)bt_mapcap_maps_reads(m));
	munmap(a, 4096);
	close(fd);
	bt_mapcap_free(m);
}

/* A process whose maps were read young (before its loader mapped a
 * library) and whose later frames all fall in what was known: the tick
 * reads its maps once more, so a frame in the library sampled as it ends,
 * resolved after it is gone, is named; and a read that finds the process
 * gone keeps what was known. */
static void test_young_read_again_by_tick(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), go[2], back[2];
	struct timespec nap = { 0, 120 * 1000000L }, nap2 = { 0, 210 * 1000000L };
	uint64_t off, a = 0;
	char c;

	REQUIRE(m && fd >= 0 && pipe(go) == 0 && pipe(back) == 0, "setup");
	pid_t pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		if (read(go[0], &c, 1) == 1) {
			void *p = map_exe(fd); /* the loader maps a library */
			uint64_t v = (uint64_t)(uintptr_t)p;
			if (write(back[1], &v, sizeof(v)) != (ssize_t)sizeof(v))
				_exit(1);
		}
		pause();
		_exit(0);
	}
	uint32_t child = (uint32_t)pid;
	CHECK(bt_mapcap_resolve_at(m, child, (uint64_t)(uintptr_t)&test_young_read_again_by_tick, boot_now(), &off) !=
		      BT_MAP_NONE,
	      "the first (young) read names its code");
	CHECK(write(go[1], "g", 1) == 1 && read(back[0], &a, sizeof(a)) == (ssize_t)sizeof(a) && a, "the child mapped");
	bt_mapcap_tick(m);
	CHECK(bt_mapcap_maps_reads(m) == 1, "still young: no read yet (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	nanosleep(&nap, NULL);
	bt_mapcap_tick(m);
	CHECK(bt_mapcap_maps_reads(m) == 2, "grown up: read once more (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	bt_mapcap_tick(m);
	CHECK(bt_mapcap_maps_reads(m) == 2, "only once (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(bt_mapcap_resolve_at(m, child, a + 16, boot_now(), &off) != BT_MAP_NONE,
	      "a frame in the library, resolved after the process is gone, is named");
	nanosleep(&nap2, NULL);
	CHECK(bt_mapcap_resolve_at(m, child, 1ull << 40, boot_now(), &off) == BT_MAP_NONE, "a junk address: no name");
	CHECK(bt_mapcap_maps_reads(m) == 3, "... it read the maps again (%llu)", (unsigned long long)bt_mapcap_maps_reads(m));
	CHECK(bt_mapcap_resolve_at(m, child, a + 16, boot_now(), &off) != BT_MAP_NONE,
	      "that read found the process gone and kept what was known");
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
	close(fd);
	bt_mapcap_free(m);
}

/* A user stack of tgid with frames ips, defined in t; its id. */
static uint32_t define(struct bt_stack_table *t, uint32_t tgid, uint64_t hash, const uint64_t *ips, uint32_t n)
{
	union {
		struct bt_raw_stack_def d;
		uint8_t b[sizeof(struct bt_raw_stack_def) + 8 * 4];
	} u = { .d = { .h = { .tgid = tgid, .tid = tgid, .type = BT_RAW_STACK_DEF }, .hash = hash, .nframes = n,
		       .flags = BT_STACKDEF_USER } };
	memcpy(u.d.ips, ips, 8ull * n);
	bt_stack_table_define(t, &u.d, (uint32_t)(sizeof(u.d) + 8ull * n));
	return bt_stack_table_ref(t, hash);
}

/* Whether every frame of stack id is in a file. */
static int named(struct bt_stack_table *t, uint32_t id, uint64_t *pre_exec)
{
	struct bt_dump_stacks s = { 0 };
	int all = 0;
	if (bt_stack_table_snapshot(t, &s) == 0 && id >= 1 && id <= s.nstacks) {
		const struct bt_dump_stack *k = &s.stacks[id - 1];
		all = k->nframes > 0;
		for (uint32_t f = 0; f < k->nframes; f++)
			all &= s.frames[k->first + f].map != BT_DMAP_NONE;
		*pre_exec = s.counters[BT_STKC_PRE_EXEC];
	}
	bt_stack_snapshot_free(&s);
	return all;
}

static void test_pre_exec_named_from_parent(void)
{
	struct bt_stack_table *t = bt_stack_table_new(64);
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0); /* gone, as a short child is when its stacks are named */
	uint64_t ips[2] = { (uint64_t)(uintptr_t)&getpid, (uint64_t)(uintptr_t)&define + 4 };
	char *heap = malloc(64);
	uint64_t junk[2] = { (uint64_t)(uintptr_t)heap, ips[1] }, pre = 0;
	REQUIRE(t && c > 0 && heap, "table, child");
	uint32_t a = define(t, (uint32_t)c, 0x1000, ips, 2);
	uint32_t j = define(t, (uint32_t)c, 0x1001, junk, 2);
	CHECK(!named(t, a, &pre) && pre == 0, "before its fork is known: unnamed");
	struct bt_ev_task fork_ev = { .h = { .type = BT_EV_PROCESS_FORK, .tgid = (uint32_t)getpid(),
					     .tid = (uint32_t)getpid() },
				      .tid = (uint32_t)c, .tgid = (uint32_t)c };
	bt_stack_table_task_event(t, &fork_ev.h);
	CHECK(named(t, a, &pre) && pre == 1, "its fork applied after it: named from the parent's maps (%llu)",
	      (unsigned long long)pre);
	CHECK(!named(t, j, &pre), "a stack with a frame in no file of the parent either: left unnamed");
	uint64_t ips2[2] = { ips[0] + 1, ips[1] };
	uint32_t b = define(t, (uint32_t)c, 0x1002, ips2, 2);
	CHECK(named(t, b, &pre) && pre == 2, "its fork applied before it: named at once (%llu)", (unsigned long long)pre);
	free(heap);
	bt_stack_table_free(t);
}

/* A deleted file mapped by us, known from our maps, not opened yet. */
static void *deleted_exe(char *path, size_t len, struct stat *st)
{
	int fd, ok;
	void *p;

	snprintf(path, len, "/tmp/test_mapcap.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	ok = ftruncate(fd, 4096) == 0 && fstat(fd, st) == 0;
	p = ok ? map_exe(fd) : NULL;
	close(fd);
	unlink(path);
	return p;
}

/* The first frame in a deleted binary comes from a forked child whose maps
 * were never read (its parent's were: the file is known): it is opened
 * through the child's mapping; and for a child already gone, through its
 * parent's. Kept by path only, a deleted file has no symbols for anyone
 * (kernel/test_stacks: the workload's child ran first, every frame of the
 * binary '[unknown]'). */
static void test_deleted_first_in_child(void)
{
	struct bt_mapcap *m = bt_mapcap_new();
	uint32_t me = (uint32_t)getpid();
	char pa[64], pb[64];
	struct stat sa, sb;
	void *a = deleted_exe(pa, sizeof(pa), &sa), *b = deleted_exe(pb, sizeof(pb), &sb);
	uint64_t off;
	size_t n;

	REQUIRE(m && a && b, "mapcap and two deleted executable mappings");
	pid_t c1 = child(), c2 = child();
	REQUIRE(c1 > 0 && c2 > 0, "two children");
	CHECK(bt_mapcap_resolve(m, me, (uint64_t)(uintptr_t)&getpid, &off) != BT_MAP_NONE, "our maps read");
	uint32_t da = (uint32_t)(major(sa.st_dev) << 20 | minor(sa.st_dev)), db = (uint32_t)(major(sb.st_dev) << 20 | minor(sb.st_dev));
	uint32_t ia = bt_mapcap_resolve_file(m, (uint32_t)c1, da, sa.st_ino);
	const struct bt_mapfile *f = bt_mapcap_files(m, &n);
	REQUIRE(ia != BT_MAP_NONE && ia <= n, "the child's frame in it resolves (%u)", ia);
	CHECK((f[ia - 1].flags & BT_MAPFILE_DELETED) && f[ia - 1].fd >= 0,
	      "a deleted file first met in a child whose maps were not read: opened through its mapping (fd %d)",
	      f[ia - 1].fd);
	bt_mapcap_forked(m, (uint32_t)c2, me);
	reap(c2);
	bt_mapcap_exited(m, (uint32_t)c2);
	uint32_t ib = bt_mapcap_resolve_file(m, (uint32_t)c2, db, sb.st_ino);
	f = bt_mapcap_files(m, &n);
	REQUIRE(ib != BT_MAP_NONE && ib <= n, "the gone child's frame resolves (%u)", ib);
	CHECK(f[ib - 1].fd >= 0, "first met in a child already gone: opened through its parent's mapping (fd %d)",
	      f[ib - 1].fd);
	reap(c1);
	munmap(a, 4096);
	munmap(b, 4096);
	bt_mapcap_free(m);
}

int main(void)
{
	RUN(test_exited_keeps_maps);
	RUN(test_exit_storm_bounded);
	RUN(test_vdso_named);
	RUN(test_jit_code_no_reread);
	RUN(test_young_maps_reread);
	RUN(test_junk_backs_off);
	RUN(test_young_read_again_by_tick);
	RUN(test_pre_exec_named_from_parent);
	RUN(test_deleted_first_in_child);
	printf("# %d passed, %d failed\n", h_ntests - h_nfail_tests, h_nfail_tests);
	return h_nfail_tests != 0;
}
