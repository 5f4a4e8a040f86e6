// SPDX-License-Identifier: MIT
/*
 * test_unwind_cache.c - compiled unwind tables on disk by build-id
 * (user/stacks/unwind_cache.c), with this test's own binary's real table:
 * a stored table reads back the same; a file cut short, flipped, of
 * another format or another build is refused and removed; a table larger
 * than the caller can hold is refused and kept; a symbolic link is never
 * followed; a directory that is not ours is not used; past the budget the
 * least recently used tables go, and nothing that is not ours is touched.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "harness.h"
#include "unwind_cache.h"

static char tmp[] = "/tmp/btrace-uwcache-XXXXXX";
static char dir[128];
static struct bt_unwind_rows R;
static const uint8_t BID[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
#define SRC 0x5eed5eedu /* the call-frame information's CRC the tables stand for */
static const char BID_NAME[] = "deadbeef0102030405060708090a0b0c0d0e0f10.uw";

static void path_of(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", dir, name);
}

static int exists(const char *name)
{
	char p[256];
	struct stat st;
	path_of(p, sizeof(p), name);
	return lstat(p, &st) == 0;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

static struct bt_unwind_cache *open_cache(uint64_t budget)
{
	char err[256] = "";
	struct bt_unwind_cache *c = bt_unwind_cache_open(dir, budget, err, sizeof(err));
	CHECK(c, "open %s: %s", dir, err);
	return c;
}

static void test_build_rows(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	REQUIRE(fd >= 0, "open self");
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	REQUIRE(e, "elf_begin");
	CHECK(bt_unwind_rows_build(e, NULL, &R, NULL) == 0 && R.n > 10, "build: %u rows", R.n);
	elf_end(e);
	close(fd);
}

static void test_round_trip(void)
{
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	struct bt_unwind_rows got;
	struct stat st;
	REQUIRE(c, "cache");
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the directory is made 0700 (%o)", st.st_mode & 0777);
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == -ENOENT, "empty cache: none");
	CHECK(bt_unwind_cache_store(c, BID, 20, SRC, &R) == 0, "store");
	CHECK(exists(BID_NAME), "named by the build-id");
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == 0, "load");
	CHECK(got.n == R.n && got.fdes == R.fdes && !memcmp(got.rows, R.rows, R.n * sizeof(*R.rows)),
	      "the same rows (%u of %u)", got.n, R.n);
	bt_unwind_rows_free(&got);
	CHECK(bt_unwind_cache_load(c, BID, 19, SRC, 1u << 20, &got) == -ENOENT, "a shorter build-id is another file");
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, R.n - 1, &got) == -EFBIG, "more rows than the caller holds: refused");
	CHECK(exists(BID_NAME), "... and kept for a recorder that can hold them");
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC + 1, 1u << 20, &got) == -ESTALE,
	      "another binary claiming the build-id (other call-frame information): not its rows");
	CHECK(exists(BID_NAME), "... and the table stays for the binary it is");
	bt_unwind_cache_close(c);
}

/* Rewrite the stored file with fn applied to its bytes, then load it. */
static int load_damaged(void (*fn)(unsigned char *p, size_t *len))
{
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	struct bt_unwind_rows got;
	char p[256];
	size_t len;
	int r;

	if (!c)
		return 0;
	bt_unwind_cache_store(c, BID, 20, SRC, &R);
	path_of(p, sizeof(p), BID_NAME);
	unsigned char *b = h_read_file(p, &len);
	if (!b) {
		bt_unwind_cache_close(c);
		return 0;
	}
	fn(b, &len);
	unlink(p);
	write_file(p, b, len);
	free(b);
	r = bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got);
	bt_unwind_rows_free(&got);
	bt_unwind_cache_close(c);
	return r;
}

static void cut(unsigned char *p, size_t *len)
{
	(void)p;
	*len -= 5;
}
static void flip_row(unsigned char *p, size_t *len)
{
	p[*len - 3] ^= 0x40;
}
static void other_version(unsigned char *p, size_t *len)
{
	(void)len;
	p[8]++; /* version follows the 8-byte magic */
}
static void other_build(unsigned char *p, size_t *len)
{
	(void)len;
	for (size_t i = 0; i + 4 <= 64; i++)
		if (!memcmp(p + i, BID, 4))
			p[i] ^= 1;
}
static void swap_rows(unsigned char *p, size_t *len)
{
	/* the first two rows swapped, the CRC (the header's last field) made
	 * right again: only the order check can refuse it */
	unsigned char t[8];
	size_t h = *len - (size_t)R.n * 8;
	uint32_t crc = 0;
	memcpy(t, p + h, 8);
	memcpy(p + h, p + h + 8, 8);
	memcpy(p + h + 8, t, 8);
	memset(p + h - 4, 0, 4);
	crc = (uint32_t)crc32(crc32(0L, p, (uInt)h), p + h, (uInt)(*len - h));
	memcpy(p + h - 4, &crc, 4);
}

static void test_damaged_refused(void)
{
	struct { const char *what; void (*fn)(unsigned char *, size_t *); } cases[] = {
		{ "cut short", cut }, { "a flipped bit", flip_row }, { "another format version", other_version },
		{ "another build-id inside", other_build }, { "rows out of order", swap_rows },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = load_damaged(cases[i].fn);
		CHECK(r == -EBADMSG, "%s: refused (%d)", cases[i].what, r);
		CHECK(!exists(BID_NAME), "%s: removed, to be built again", cases[i].what);
	}
}

static void test_symlink_not_followed(void)
{
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	struct bt_unwind_rows got;
	char target[256], link[256];
	size_t len;
	REQUIRE(c, "cache");
	snprintf(target, sizeof(target), "%s/precious", tmp);
	write_file(target, "not ours", 8);
	path_of(link, sizeof(link), BID_NAME);
	unlink(link);
	REQUIRE(symlink(target, link) == 0, "symlink");
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == -ELOOP, "a link is not followed");
	CHECK(bt_unwind_cache_store(c, BID, 20, SRC, &R) == 0, "store over the link");
	unsigned char *b = h_read_file(target, &len);
	CHECK(b && len == 8 && !memcmp(b, "not ours", 8), "the link's target is untouched");
	free(b);
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == 0, "the stored table replaced the link");
	bt_unwind_rows_free(&got);
	bt_unwind_cache_close(c);
}

static void test_file_not_ours(void)
{
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	struct bt_unwind_rows got;
	char p[256];
	REQUIRE(c, "cache");
	CHECK(bt_unwind_cache_store(c, BID, 20, SRC, &R) == 0, "store");
	path_of(p, sizeof(p), BID_NAME);
	if (geteuid() == 0) {
		REQUIRE(chown(p, 65534, 65534) == 0, "chown");
		CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == -EPERM, "another user's file: refused");
		CHECK(exists(BID_NAME), "... and not removed");
		unlink(p);
	}
	REQUIRE(mkfifo(p, 0600) == 0, "mkfifo");
	CHECK(bt_unwind_cache_load(c, BID, 20, SRC, 1u << 20, &got) == -EPERM, "a FIFO: refused without blocking");
	CHECK(exists(BID_NAME), "... and not removed");
	unlink(p);
	bt_unwind_cache_close(c);
}

static void test_not_ours(void)
{
	char err[256] = "";
	REQUIRE(chmod(dir, 0777) == 0, "chmod");
	struct bt_unwind_cache *c = bt_unwind_cache_open(dir, BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
	CHECK(!c && strstr(err, "mode 777, open to its group or others") && !strstr(err, "owned by"),
	      "a directory others can write is not used: %s", err);
	bt_unwind_cache_close(c);
	REQUIRE(chmod(dir, 0755) == 0, "chmod");
	c = bt_unwind_cache_open(dir, BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
	/* (the message says the mode, not the owner: issue 43) */
	CHECK(!c && strstr(err, "mode 755, open to its group or others") && strstr(err, "must be 0700") &&
		      !strstr(err, "owned by"),
	      "a directory others can read (a shared one, /var/cache) is not used: %s", err);
	bt_unwind_cache_close(c);
	chmod(dir, 0700);
	if (geteuid() == 0) {
		REQUIRE(chown(dir, 65534, 65534) == 0, "chown");
		c = bt_unwind_cache_open(dir, BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
		CHECK(!c && strstr(err, "owned by uid 65534, not by the recorder's uid 0"),
		      "another user's directory is not used: %s", err);
		bt_unwind_cache_close(c);
		CHECK(chown(dir, 0, 0) == 0, "chown back");
	}
	c = bt_unwind_cache_open("relative/dir", BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
	CHECK(!c && strstr(err, "absolute"), "a relative path: %s", err);
	char file[256];
	snprintf(file, sizeof(file), "%s/afile", tmp);
	write_file(file, "x", 1);
	c = bt_unwind_cache_open(file, BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
	CHECK(!c && *err, "a file, not a directory: %s", err);
	bt_unwind_cache_close(c);
}

static void set_age(const char *name, time_t age)
{
	char p[256];
	struct timespec ts[2];
	path_of(p, sizeof(p), name);
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) - age;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
}

static void test_budget(void)
{
	uint64_t one = 64 + (uint64_t)R.n * 8; /* a file's size, give or take its header */
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	uint8_t bid[4][20];
	char foreign[256], tmpf[256];
	REQUIRE(c, "cache");
	path_of(foreign, sizeof(foreign), BID_NAME);
	unlink(foreign); /* the earlier cases' table */
	for (int i = 0; i < 4; i++) {
		memcpy(bid[i], BID, 20);
		bid[i][19] = (uint8_t)(0x80 + i);
		CHECK(bt_unwind_cache_store(c, bid[i], 20, SRC, &R) == 0, "store %d", i);
	}
	bt_unwind_cache_close(c);
	/* not ours: another program's file, an upper-case name, a link */
	path_of(foreign, sizeof(foreign), "README");
	write_file(foreign, "someone's", 9);
	path_of(foreign, sizeof(foreign), "DEADBEEF.uw");
	write_file(foreign, "someone's", 9);
	set_age("README", 86400);
	set_age("DEADBEEF.uw", 86400);
	path_of(tmpf, sizeof(tmpf), ".uw-tmp-1-stale.uw");
	write_file(tmpf, "x", 1);
	set_age(".uw-tmp-1-stale.uw", 7200);
	path_of(tmpf, sizeof(tmpf), ".uw-tmp-2-fresh.uw");
	write_file(tmpf, "x", 1);
	/* ages: table 0 used last, 1 oldest */
	char name[64];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "deadbeef0102030405060708090a0b0c0d0e0f%02x.uw", 0x80 + i);
		set_age(name, i == 0 ? 10 : i == 1 ? 4000 : 3000 - i);
	}
	c = open_cache(3 * one); /* four tables over a budget of three: down to 3/4 of it */
	REQUIRE(c, "cache");
	int left = 0;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "deadbeef0102030405060708090a0b0c0d0e0f%02x.uw", 0x80 + i);
		left += exists(name);
	}
	snprintf(name, sizeof(name), "deadbeef0102030405060708090a0b0c0d0e0f%02x.uw", 0x80);
	CHECK(exists(name), "the most recently used table stays");
	snprintf(name, sizeof(name), "deadbeef0102030405060708090a0b0c0d0e0f%02x.uw", 0x81);
	CHECK(!exists(name), "the least recently used table went");
	CHECK(left == 2, "pruned to 3/4 of the budget: %d tables left", left);
	CHECK(exists("README") && exists("DEADBEEF.uw"), "files not ours are left alone");
	CHECK(!exists(".uw-tmp-1-stale.uw") && exists(".uw-tmp-2-fresh.uw"),
	      "a crashed writer's old temporary file goes, a fresh one (a writer at work) stays");
	/* a store past the budget prunes, or is refused: never grows past it */
	uint8_t big[20];
	memcpy(big, BID, 20);
	big[19] = 0x90;
	CHECK(bt_unwind_cache_store(c, big, 20, SRC, &R) == 0, "a store past the budget prunes and is made");
	CHECK(bt_unwind_cache_store(c, bid[1], 20, SRC, &R) == 0, "and the next");
	bt_unwind_cache_close(c);
	c = open_cache(3 * one);
	REQUIRE(c, "cache");
	uint8_t more[20];
	memcpy(more, BID, 20);
	more[19] = 0x91;
	CHECK(bt_unwind_cache_store(c, more, 20, SRC, &R) == 0, "after a restart too: the cache never stops taking tables");
	uint64_t total = 0;
	for (int i = 0; i < 0x100; i++) {
		char p[256];
		struct stat st;
		snprintf(name, sizeof(name), "deadbeef0102030405060708090a0b0c0d0e0f%02x.uw", i);
		path_of(p, sizeof(p), name);
		if (stat(p, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	CHECK(total <= 3 * one, "within the budget after more stores: %llu of %llu", (unsigned long long)total,
	      (unsigned long long)(3 * one));
	bt_unwind_cache_close(c);
}

/* A full disk (a file size limit here: the same EFBIG/ENOSPC from write):
 * the store fails, leaves no temporary, and is counted with its errno. */
static void test_store_failure_counted(void)
{
	struct bt_unwind_cache *c = open_cache(BT_UNWIND_CACHE_BUDGET);
	struct rlimit old, lim = { .rlim_cur = 1024, .rlim_max = RLIM_INFINITY };
	uint8_t bid[20];
	int err = -1, r;
	DIR *d;
	struct dirent *e;
	int tmps = 0;

	REQUIRE(c, "cache");
	REQUIRE(R.n * sizeof(*R.rows) > 2048, "a table larger than the limit (%u rows)", R.n);
	CHECK(bt_unwind_cache_failures(c, &err) == 0 && err == 0, "none failed yet");
	memcpy(bid, BID, 20);
	bid[19] = 0x42;
	signal(SIGXFSZ, SIG_IGN);
	REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0 && setrlimit(RLIMIT_FSIZE, &lim) == 0, "set RLIMIT_FSIZE");
	r = bt_unwind_cache_store(c, bid, 20, SRC, &R);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	CHECK(r == -EFBIG, "the store failed: %d", r);
	CHECK(bt_unwind_cache_failures(c, &err) == 1 && err == EFBIG, "counted: %" PRIu64 " (errno %d)",
	      bt_unwind_cache_failures(c, NULL), err);
	CHECK(bt_unwind_cache_store(c, bid, 20, SRC, &R) == 0 && bt_unwind_cache_failures(c, NULL) == 1,
	      "a store that works is not counted");
	d = opendir(dir);
	while (d && (e = readdir(d)))
		tmps += strncmp(e->d_name, ".uw-tmp-", 8) == 0 && strcmp(e->d_name, ".uw-tmp-2-fresh.uw");
	if (d)
		closedir(d);
	CHECK(tmps == 0, "no temporary left behind (%d besides test_budget's)", tmps);
	bt_unwind_cache_close(c);
}

int main(void)
{
	char cmd[256];

	elf_version(EV_CURRENT);
	if (!mkdtemp(tmp))
		return 1;
	snprintf(dir, sizeof(dir), "%s/cache/unwind", tmp);
	RUN(test_build_rows);
	RUN(test_round_trip);
	RUN(test_damaged_refused);
	RUN(test_symlink_not_followed);
	RUN(test_file_not_ours);
	RUN(test_not_ours);
	RUN(test_budget);
	RUN(test_store_failure_counted);
	bt_unwind_rows_free(&R);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp);
	return h_done();
}
