// SPDX-License-Identifier: MIT
/*
 * test_dump_dir.c - the dump directory's quota and free-space check
 * (dump_dir.c) on real files: only our dumps are counted and removed, the
 * oldest first; the limit holds after every one of 50 dumps; a dump that
 * does not fit the free space is refused before any old dump is removed; a
 * file replaced after it was counted is left alone; dumps of an earlier run
 * are adopted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "dump_dir.h"
#include "dump_format.h"

static char dir[] = "/tmp/btrace-dumpdir-XXXXXX";

static void path_of(char *p, size_t len, int i)
{
	snprintf(p, len, "%s/btrace-host-20260101-000000-%d.btd", dir, i);
}

/* A "dump" of size bytes (magic first) and, if msize, a manifest. mtime_s
 * orders them as the directory scan sees them. */
static void make_dump(int i, size_t size, size_t msize, time_t mtime_s)
{
	char p[512], m[520];
	char *buf = calloc(1, size > 64 ? size : 64);
	struct timespec ts[2] = { { mtime_s, 0 }, { mtime_s, 0 } };

	path_of(p, sizeof(p), i);
	memcpy(buf, BTD_MAGIC, BTD_MAGIC_LEN);
	FILE *f = fopen(p, "w");
	fwrite(buf, 1, size, f);
	fclose(f);
	utimensat(AT_FDCWD, p, ts, 0);
	if (msize) {
		snprintf(m, sizeof(m), "%s%s", p, BT_MANIFEST_SUFFIX);
		memset(buf, ' ', msize);
		memcpy(buf, BT_MANIFEST_HEAD, strlen(BT_MANIFEST_HEAD));
		f = fopen(m, "w");
		fwrite(buf, 1, msize, f);
		fclose(f);
	}
	free(buf);
}

static void write_file(const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

static int exists(const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static int dump_exists(int i)
{
	char p[512];
	path_of(p, sizeof(p), i);
	return access(p, F_OK) == 0;
}

/* Bytes of our dumps and manifests in the directory. */
static uint64_t dir_bytes(int *ndumps)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t sum = 0;
	*ndumps = 0;
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;
		if (strncmp(e->d_name, "btrace-host-", 12))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
			sum += (uint64_t)st.st_size;
			*ndumps += strstr(e->d_name, ".json") == NULL;
		}
	}
	closedir(d);
	return sum;
}

static void clear_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[512];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p))
			rmdir(p);
	}
	closedir(d);
}

static void test_only_ours_adopted(void)
{
	char err[256];
	clear_dir();
	make_dump(1, 1000, 100, 1000);
	make_dump(2, 2000, 0, 2000);
	write_file("btrace-foreign.btd", "not a dump at all");   /* our name, not our magic */
	write_file("notes.txt", "operator's notes");
	write_file("btrace-host-x.btd.json", "{\"btrace_manifest\": orphan");
	char p[512], t[512];
	path_of(p, sizeof(p), 1);
	snprintf(t, sizeof(t), "%s/btrace-link.btd", dir);
	CHECK(symlink(p, t) == 0, "symlink");
	snprintf(t, sizeof(t), "%s/btrace-dir.btd", dir);
	CHECK(mkdir(t, 0700) == 0, "mkdir");

	struct bt_dump_dir_opts o = { .dir = dir, .max_dumps = 1, .keep_free = 0 };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	struct bt_dump_dir_stats st;
	bt_dump_dir_get_stats(d, &st);
	CHECK(st.count == 2 && st.adopted == 2 && st.bytes == 3100, "count %lu bytes %lu", (unsigned long)st.count,
	      (unsigned long)st.bytes);
	/* A new dump: --max-dumps 1 removes both older ones, oldest first. */
	make_dump(3, 500, 50, 3000);
	path_of(p, sizeof(p), 3);
	CHECK(bt_dump_dir_prepare(d, 500, err, sizeof(err)) == 0, "%s", err);
	CHECK(bt_dump_dir_added(d, p) == 2, "two removed");
	CHECK(!dump_exists(1) && !dump_exists(2) && dump_exists(3), "kept only the newest");
	CHECK(!exists("btrace-host-20260101-000000-1.btd.json"), "the manifest went with its dump");
	CHECK(exists("btrace-foreign.btd") && exists("notes.txt") && exists("btrace-host-x.btd.json") &&
		      exists("btrace-link.btd") && exists("btrace-dir.btd"),
	      "nothing that is not ours was removed");
	bt_dump_dir_get_stats(d, &st);
	CHECK(st.removed == 2 && st.removed_bytes == 3100 && st.count == 1 && st.bytes == 550, "stats");
	bt_dump_dir_close(d);
}

/* --max-dumps removes the oldest, whatever the order of the names. */
static void test_max_dumps_oldest_first(void)
{
	char err[256], p[512];
	clear_dir();
	make_dump(7, 1000, 0, 1000); /* oldest, despite its number */
	make_dump(2, 1000, 0, 2000);
	make_dump(5, 1000, 0, 3000);
	struct bt_dump_dir_opts o = { .dir = dir, .max_dumps = 3, .keep_free = 0 };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	make_dump(9, 1000, 0, 4000);
	path_of(p, sizeof(p), 9);
	CHECK(bt_dump_dir_prepare(d, 1000, err, sizeof(err)) == 0, "%s", err);
	CHECK(bt_dump_dir_added(d, p) == 1, "one removed");
	CHECK(!dump_exists(7) && dump_exists(2) && dump_exists(5) && dump_exists(9), "the oldest (7) removed");
	make_dump(1, 1000, 0, 5000);
	path_of(p, sizeof(p), 1);
	CHECK(bt_dump_dir_prepare(d, 1000, err, sizeof(err)) == 0, "%s", err);
	CHECK(bt_dump_dir_added(d, p) == 1, "one removed");
	CHECK(!dump_exists(2) && dump_exists(5) && dump_exists(9) && dump_exists(1), "then the next oldest (2)");
	bt_dump_dir_close(d);
}

/* 50 dumps of varying size under a byte quota: after each, the directory
 * holds at most the quota, the dumps kept are the newest ones, and each
 * removal took the oldest. */
static void test_quota_50_dumps(void)
{
	char err[256], p[512];
	const uint64_t quota = 2000000;
	clear_dir();
	struct bt_dump_dir_opts o = { .dir = dir, .max_bytes = quota, .keep_free = 0 };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	int oldest_kept = 1, bad_order = 0, over = 0;
	srand(7);
	for (int i = 1; i <= 50; i++) {
		size_t size = 50000 + (size_t)(rand() % 250000), msize = 300 + (size_t)(rand() % 200);
		/* The estimate is raw * last ratio; "raw" twice the size, but
		 * every 4th dump compresses worse than the estimate says, so
		 * the quota must also remove old dumps after the write. */
		CHECK(bt_dump_dir_prepare(d, i % 4 ? 2 * size : size / 8, err, sizeof(err)) == 0, "dump %d: %s", i,
		      err);
		make_dump(i, size, msize, 10000 + i);
		path_of(p, sizeof(p), i);
		int r = bt_dump_dir_added(d, p);
		CHECK(r >= 0, "dump %d: %d", i, r);
		int n;
		uint64_t b = dir_bytes(&n);
		if (b > quota)
			over++;
		/* Kept: a contiguous newest range [oldest_kept, i]. */
		while (oldest_kept < i && !dump_exists(oldest_kept))
			oldest_kept++;
		for (int j = oldest_kept; j <= i; j++)
			bad_order += !dump_exists(j);
		for (int j = 1; j < oldest_kept; j++)
			bad_order += dump_exists(j);
		struct bt_dump_dir_stats st;
		bt_dump_dir_get_stats(d, &st);
		CHECK(st.bytes == b && st.count == (uint64_t)n, "dump %d: counted %lu/%lu, in dir %lu/%d", i,
		      (unsigned long)st.bytes, (unsigned long)st.count, (unsigned long)b, n);
	}
	CHECK(over == 0, "quota exceeded after %d of 50 dumps", over);
	CHECK(bad_order == 0, "%d dumps kept or removed out of age order", bad_order);
	CHECK(oldest_kept > 30, "old dumps were removed (oldest kept %d)", oldest_kept);
	int n;
	dir_bytes(&n);
	CHECK(n >= 4, "the quota holds several dumps, not just the last (%d)", n);
	bt_dump_dir_close(d);
}

static void test_free_space(void)
{
	char err[256], why[512], p[512];
	struct statvfs sv;
	clear_dir();
	make_dump(1, 40000, 0, 1000);
	REQUIRE(statvfs(dir, &sv) == 0, "statvfs");
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	/* Asking to keep all the free space: every dump is refused, and the
	 * quota removes nothing for a dump that is not written. */
	struct bt_dump_dir_opts o = { .dir = dir, .max_bytes = 50000, .keep_free = avail };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	int r = bt_dump_dir_prepare(d, 30000, why, sizeof(why));
	CHECK(r == -ENOSPC, "refused: %d", r);
	CHECK(strstr(why, "not enough space") && strstr(why, "--keep-free"), "why: %s", why);
	CHECK(dump_exists(1), "no old dump removed for a refused dump");
	struct bt_dump_dir_stats st;
	bt_dump_dir_get_stats(d, &st);
	CHECK(st.skipped_space == 1 && st.removed == 0, "skip counted");
	bt_dump_dir_close(d);
	/* The same with room: the old dump makes way for the quota. */
	o.keep_free = 0;
	d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	CHECK(bt_dump_dir_prepare(d, 30000, why, sizeof(why)) == 0, "%s", why);
	CHECK(!dump_exists(1), "the quota made room before the dump");
	make_dump(2, 30000, 0, 2000);
	path_of(p, sizeof(p), 2);
	CHECK(bt_dump_dir_added(d, p) == 0, "added");
	/* Default keep-free: 5% of the file system, at most 1 GiB. */
	bt_dump_dir_close(d);
	o.keep_free = BT_KEEP_FREE_AUTO;
	o.max_bytes = 0;
	d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize, keep = total / 20 < (1ull << 30) ? total / 20 : 1ull << 30;
	r = bt_dump_dir_prepare(d, avail - keep + (1 << 20), why, sizeof(why));
	CHECK(r == -ENOSPC, "a dump eating into the default reserve is refused (%d)", r);
	/* 64 MiB to spare: other programs write to the same disk meanwhile. */
	if (avail > keep + (128 << 20))
		CHECK(bt_dump_dir_prepare(d, avail - keep - (64 << 20), why, sizeof(why)) == 0, "%s", why);
	bt_dump_dir_close(d);
}

static void test_replaced_file_kept(void)
{
	char err[256], p[512], tmp[520];
	clear_dir();
	make_dump(1, 1000, 0, 1000);
	struct bt_dump_dir_opts o = { .dir = dir, .max_dumps = 1, .keep_free = 0 };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	/* Someone puts another file in its place after the scan. */
	path_of(p, sizeof(p), 1);
	snprintf(tmp, sizeof(tmp), "%s.new", p);
	FILE *f = fopen(tmp, "w");
	fputs("the operator's own file", f);
	fclose(f);
	rename(tmp, p);
	make_dump(2, 1000, 0, 2000);
	path_of(p, sizeof(p), 2);
	CHECK(bt_dump_dir_prepare(d, 1000, err, sizeof(err)) == 0, "%s", err);
	bt_dump_dir_added(d, p);
	CHECK(dump_exists(1), "a file replaced since the scan is not removed");
	bt_dump_dir_close(d);
}

static void test_larger_than_quota(void)
{
	char err[256], p[512];
	clear_dir();
	make_dump(1, 1000, 0, 1000);
	struct bt_dump_dir_opts o = { .dir = dir, .max_bytes = 50000, .keep_free = 0 };
	struct bt_dump_dir *d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	CHECK(bt_dump_dir_prepare(d, 80000, err, sizeof(err)) == 0, "%s", err);
	CHECK(dump_exists(1), "no room made for a dump that cannot fit anyway");
	make_dump(2, 80000, 0, 2000);
	path_of(p, sizeof(p), 2);
	CHECK(bt_dump_dir_added(d, p) == -EFBIG, "over quota by itself");
	CHECK(!dump_exists(2) && dump_exists(1), "the too large dump removed, the older one kept");
	struct bt_dump_dir_stats st;
	bt_dump_dir_get_stats(d, &st);
	CHECK(st.over_quota == 1 && st.count == 1, "counted");
	bt_dump_dir_close(d);
	/* Not created yet (the recorder creates it once nothing can fail): no dumps. */
	o.dir = "/nonexistent/btrace";
	d = bt_dump_dir_open(&o, err, sizeof(err));
	REQUIRE(d, "%s", err);
	bt_dump_dir_get_stats(d, &st);
	CHECK(st.count == 0 && st.bytes == 0, "a directory not created yet holds no dumps");
	bt_dump_dir_close(d);
	snprintf(p, sizeof(p), "%s/not-a-directory", dir);
	FILE *f = fopen(p, "w");
	REQUIRE(f, "%s: %s", p, strerror(errno));
	fclose(f);
	o.dir = p;
	err[0] = 0;
	CHECK(!bt_dump_dir_open(&o, err, sizeof(err)) && strstr(err, "cannot read") && strstr(err, "not-a-directory"),
	      "%s", err);
	unlink(p);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(test_only_ours_adopted);
	RUN(test_max_dumps_oldest_first);
	RUN(test_quota_50_dumps);
	RUN(test_free_space);
	RUN(test_replaced_file_kept);
	RUN(test_larger_than_quota);
	clear_dir();
	rmdir(dir);
	return h_done();
}
