// SPDX-License-Identifier: MIT
/*
 * test_symbol_cache.c - which files the background symbol loader reads, and
 * through what (symbol_cache.c), on a real child process.
 *
 * Reading a process's maps names every library it mapped, but a file is
 * opened (by /proc/PID/map_files, the very inode) only when a frame first
 * lands in it. The loader must wait for that: a file read earlier by its
 * path fails once the path is deleted, and stayed failed after its frames
 * came (CI saw a workload whose binary was deleted right after start go
 * unnamed: its maps were read through a frame in libc first).
 *
 * The child is a fork of this test that shares a private copy of this
 * test's binary mapped executable; the copy is deleted before any frame
 * lands in it. Needs root (map_files wants CAP_SYS_ADMIN).
 *
 * And the source lines of a new stack's frames are resolved by the loader
 * before any dump asks: the dump that follows decodes no DWARF unit itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "self_maps.h"
#include "events.h"
#include "stack_symbols.h"
#include "stack_table.h"
#include "symbol_cache.h"

#define SETTLE_MS 10000

/* The frame the test names: its own symbol, not inlined away. */
__attribute__((noinline)) int sc_named_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

/* A user stack of tgid with one frame at ip, defined as the drain does. */
static void define_user(struct bt_stack_table *t, uint32_t tgid, uint64_t hash, uint64_t ip)
{
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + 8) / 8];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.h.tgid = tgid;
	m.d.h.tid = tgid;
	m.d.hash = hash;
	m.d.nframes = 1;
	m.d.flags = BT_STACKDEF_USER;
	m.d.ips[0] = ip;
	bt_stack_table_define(t, &m.d, sizeof(m));
}

/* The name the snapshot gives stack id's first frame, or "". */
static const char *frame_name(const struct bt_dump_stacks *s, uint32_t id)
{
	if (id < 1 || id > s->nstacks || !s->stacks[id - 1].nframes)
		return "";
	const struct bt_dump_frame *fr = &s->frames[s->stacks[id - 1].first];
	return fr->sym ? s->syms[fr->sym - 1].name : "";
}

static void test_deleted_before_first_frame(void)
{
	char dir[] = "/tmp/btrace-symcache-XXXXXX", copy[64];
	int64_t off = h_exe_offset((uintptr_t)&sc_named_target);
	size_t len;
	unsigned char *img = h_read_file("/proc/self/exe", &len);

	REQUIRE(off > 0 && img && mkdtemp(dir), "this binary, its offset of sc_named_target");
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	int fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	REQUIRE(fd >= 0 && write(fd, img, len) == (ssize_t)len, "a private copy");
	close(fd);
	free(img);
	fd = open(copy, O_RDONLY | O_CLOEXEC);
	void *map = fd >= 0 ? mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	REQUIRE(map != MAP_FAILED, "the copy mapped executable");
	close(fd);
	pid_t p = h_paused_child();
	REQUIRE(p > 0, "a child");

	struct bt_stack_table *t = bt_stack_table_new(64);
	struct bt_symbolizer *z = t ? bt_symbolizer_new(t, NULL, 0, 0) : NULL;
	CHECK(t && z, "table and symbolizer");
	if (z) {
		/* A frame in libc reads the child's maps: the copy is named, not
		 * opened, and deleted before the loader looks. */
		define_user(t, (uint32_t)p, 0x1111, (uint64_t)(uintptr_t)&getpid);
		unlink(copy);
		CHECK(bt_symbolizer_settle(z, SETTLE_MS) == 0, "settled after the libc frame");
		/* Its first frame: opened through the mapping, deleted or not. */
		define_user(t, (uint32_t)p, 0x2222, (uint64_t)(uintptr_t)map + (uint64_t)off);
		CHECK(bt_symbolizer_settle(z, SETTLE_MS) == 0, "settled after the copy's frame");

		struct bt_dump_stacks s;
		struct bt_symcache_stats st;
		memset(&s, 0, sizeof(s));
		REQUIRE(bt_stack_table_snapshot(t, &s) == 0, "a snapshot");
		CHECK(bt_symbolize(z, &s, 0) == 0, "symbolized");
		uint32_t id2 = bt_stack_table_ref(t, 0x2222);
		CHECK(strcmp(frame_name(&s, id2), "sc_named_target") == 0,
		      "the deleted copy's frame is named sc_named_target, not '%s'", frame_name(&s, id2));
		CHECK(strcmp(frame_name(&s, bt_stack_table_ref(t, 0x1111)), "getpid") == 0 ||
			      strstr(frame_name(&s, bt_stack_table_ref(t, 0x1111)), "getpid") != NULL,
		      "the libc frame is named (%s)", frame_name(&s, bt_stack_table_ref(t, 0x1111)));
		bt_symbolizer_stats(z, &st);
		/* The child maps this binary, its libraries, ld.so, the vDSO and
		 * the copy: read are the two with a frame, and the vDSO's copy
		 * (made, from memory, when the maps are read). */
		CHECK(st.files == 3 && st.loaded == 3 && st.failed == 0,
		      "files read: %" PRIu64 " (want 3: libc, the copy, the vDSO), loaded %" PRIu64 ", failed %" PRIu64,
		      st.files, st.loaded, st.failed);
		bt_stack_snapshot_free(&s);
	}
	bt_symbolizer_free(z);
	bt_stack_table_free(t);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	munmap(map, len);
	unlink(copy);
	rmdir(dir);
}

static void test_lines_ahead(void)
{
	pid_t p = h_paused_child();

	REQUIRE(p > 0, "a child");
	struct bt_stack_table *t = bt_stack_table_new(64);
	struct bt_symbolizer *z = t ? bt_symbolizer_new(t, NULL, 1, 0) : NULL;
	struct bt_symcache_stats st = { 0 };
	CHECK(t && z, "table and symbolizer");
	if (z) {
		/* the child is a fork: this test's addresses are its own */
		define_user(t, (uint32_t)p, 0x3333, (uint64_t)(uintptr_t)&sc_named_target);
		CHECK(bt_symbolizer_settle(z, SETTLE_MS) == 0, "settled");
		for (int i = 0; i < SETTLE_MS / 10 && !st.lines_ahead; i++) {
			bt_symbolizer_stats(z, &st);
			if (!st.lines_ahead)
				usleep(10000);
		}
		CHECK(st.lines_ahead == 1, "the frame's lines resolved ahead (%" PRIu64 ")", st.lines_ahead);

		struct bt_dump_stacks s;
		memset(&s, 0, sizeof(s));
		REQUIRE(bt_stack_table_snapshot(t, &s) == 0, "a snapshot");
		CHECK(bt_symbolize(z, &s, 0) == 0, "symbolized");
		int found = 0;
		for (uint64_t i = 0; i < s.nlines; i++)
			found |= s.lines[i].file && strstr(s.lines[i].file, "test_symbol_cache.c") != NULL;
		CHECK(found, "the dump has the frame's source line (%" PRIu64 " lines)", s.nlines);
		bt_symbolizer_stats(z, &st);
		CHECK(st.dump_units == 0, "the dump decoded no DWARF unit itself (%" PRIu64 ")", st.dump_units);
		bt_stack_snapshot_free(&s);
	}
	bt_symbolizer_free(z);
	bt_stack_table_free(t);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("ok 1 - deleted before its first frame # SKIP needs root (/proc/PID/map_files)\n");
		return 0;
	}
	RUN(test_deleted_before_first_frame);
	RUN(test_lines_ahead);
	return h_done();
}
