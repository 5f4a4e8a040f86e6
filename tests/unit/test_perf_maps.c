// SPDX-License-Identifier: MIT
/*
 * test_perf_maps.c - JIT names from perf maps (user/stacks/perf_maps.c): the
 * format perf reads, lines appended between reads, a later entry winning,
 * names kept after the process exits, and a file that is not the process
 * owner's own regular file (a symbolic link, another user's) refused. The
 * maps are written for this process's pid in a directory of the test's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "perf_maps.h"

static char dir[64], path[128];

static void write_map(const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The name at addr, or "" */
static const char *name_at(struct bt_perfmaps *pm, uint64_t addr)
{
	static char buf[BT_PERFMAP_NAME_MAX + 1];
	uint64_t start, size;

	if (!bt_perfmaps_find(pm, (uint32_t)getpid(), addr, &start, &size, buf, sizeof(buf)))
		return "";
	return buf;
}

static void test_format_and_appends(void)
{
	struct bt_perfmaps *pm = bt_perfmaps_new(dir);
	struct bt_perfmap_stats st;
	char longname[400];

	REQUIRE(pm, "new");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	unlink(path);
	write_map("w", "1000 100 JS:*hot /app.js:3\n"
		       "0x2000 0x10 LazyCompile:~cold\n"
		       "zz 10 not a line\n"
		       "3000 0 empty\n"
		       "4000 10 esc\033[2Jape\n");
	write_map("a", "5000 10 ");
	write_map("a", longname);
	write_map("a", "\n6000 10 unfinish");
	bt_perfmaps_want(pm, (uint32_t)getpid());
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x1000), "JS:*hot /app.js:3") == 0, "start: '%s'", name_at(pm, 0x1000));
	CHECK(strcmp(name_at(pm, 0x10ff), "JS:*hot /app.js:3") == 0, "last byte: '%s'", name_at(pm, 0x10ff));
	CHECK(!*name_at(pm, 0x1100), "past the end: '%s'", name_at(pm, 0x1100));
	CHECK(strcmp(name_at(pm, 0x2008), "LazyCompile:~cold") == 0, "0x: '%s'", name_at(pm, 0x2008));
	CHECK(!*name_at(pm, 0x3000), "a size of 0 is no entry");
	CHECK(strcmp(name_at(pm, 0x4000), "esc?[2Jape") == 0, "control bytes replaced: '%s'", name_at(pm, 0x4000));
	CHECK(strlen(name_at(pm, 0x5000)) == BT_PERFMAP_NAME_MAX, "long name cut: %zu", strlen(name_at(pm, 0x5000)));
	CHECK(!*name_at(pm, 0x6000), "an unfinished line is not read yet");
	bt_perfmaps_stats(pm, &st);
	CHECK(st.bad == 2 && st.entries == 4 && st.procs == 1, "bad %lu entries %lu procs %lu",
	      (unsigned long)st.bad, (unsigned long)st.entries, (unsigned long)st.procs);
	/* the runtime goes on: the line finished, a newer entry over hot */
	write_map("a", "ed\n1000 80 JS:*hot2 /app.js:3\n");
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x6000), "unfinished") == 0, "finished line: '%s'", name_at(pm, 0x6000));
	CHECK(strcmp(name_at(pm, 0x1010), "JS:*hot2 /app.js:3") == 0, "the later entry wins: '%s'",
	      name_at(pm, 0x1010));
	CHECK(strcmp(name_at(pm, 0x10f0), "JS:*hot /app.js:3") == 0, "the older one past its end: '%s'",
	      name_at(pm, 0x10f0));
	/* exited: read once more, then kept and no longer read; forgotten at exec */
	write_map("a", "8000 10 last_words\n");
	bt_perfmaps_exited(pm, (uint32_t)getpid());
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x8000), "last_words") == 0, "read once more at exit: '%s'", name_at(pm, 0x8000));
	unlink(path);
	write_map("w", "7000 10 after\n");
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x1000), "JS:*hot2 /app.js:3") == 0, "kept after exit");
	CHECK(!*name_at(pm, 0x7000), "not read after exit");
	bt_perfmaps_forget(pm, (uint32_t)getpid());
	CHECK(!*name_at(pm, 0x1000), "forgotten");
	bt_perfmaps_free(pm);
}

static void test_replaced_file(void)
{
	struct bt_perfmaps *pm = bt_perfmaps_new(dir);

	REQUIRE(pm, "new");
	unlink(path);
	write_map("w", "1000 10 first_one_with_a_long_name\n2000 10 second\n");
	bt_perfmaps_want(pm, (uint32_t)getpid());
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x2000), "second") == 0, "read");
	unlink(path);
	write_map("w", "3000 10 new\n"); /* another file, shorter */
	bt_perfmaps_refresh(pm);
	CHECK(strcmp(name_at(pm, 0x3000), "new") == 0, "the new file read from its start: '%s'", name_at(pm, 0x3000));
	CHECK(!*name_at(pm, 0x2000), "the old file's names gone");
	bt_perfmaps_free(pm);
}

static void test_refused(void)
{
	struct bt_perfmaps *pm = bt_perfmaps_new(dir);
	struct bt_perfmap_stats st;
	char real[128];

	REQUIRE(pm, "new");
	snprintf(real, sizeof(real), "%s/real.map", dir);
	unlink(path);
	FILE *f = fopen(real, "w");
	REQUIRE(f, "real");
	fputs("1000 10 secret\n", f);
	fclose(f);
	REQUIRE(symlink(real, path) == 0, "symlink");
	bt_perfmaps_want(pm, (uint32_t)getpid());
	bt_perfmaps_refresh(pm);
	CHECK(!*name_at(pm, 0x1000), "a symbolic link is not followed");
	bt_perfmaps_stats(pm, &st);
	CHECK(st.refused == 1, "refused %lu", (unsigned long)st.refused);
	unlink(path);
	if (geteuid() == 0) { /* another user's file under this process's pid */
		write_map("w", "1000 10 planted\n");
		CHECK(chown(path, 65534, 65534) == 0, "chown");
		bt_perfmaps_refresh(pm);
		CHECK(!*name_at(pm, 0x1000), "another user's file is not read: '%s'", name_at(pm, 0x1000));
		bt_perfmaps_stats(pm, &st);
		CHECK(st.refused == 2, "refused %lu", (unsigned long)st.refused);
	} else {
		printf("# another user's file: not checked (needs root)\n");
	}
	unlink(real);
	bt_perfmaps_free(pm);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_perf_maps.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
	RUN(test_format_and_appends);
	RUN(test_replaced_file);
	RUN(test_refused);
	unlink(path);
	rmdir(dir);
	return h_nfail_tests ? 1 : 0;
}
