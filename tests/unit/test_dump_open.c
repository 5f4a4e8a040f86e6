// SPDX-License-Identifier: MIT
/*
 * test_dump_open.c - what bt_dump_open() (report, convert) does with files
 * that are not dumps: a FIFO or a device is refused without blocking, a huge
 * file is judged by its header without being read into memory, and header
 * fields that no writer produces are refused.
 *
 * BTRACE_WRITE_SEEDS=DIR writes dumps with one bad header field each (crc
 * fixed) to DIR, as fuzzer seeds (tests/fuzz/seeds/fuzz_dump).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "btrace_buffer.h"
#include "dump.h"
#include "dump_format.h"

static char tmpdir[256];

/* A small valid dump (a few events, zlevel) at path; its image in *img. */
static int write_dump(const char *path, int zlevel, uint8_t **img, size_t *len)
{
	struct bt_config cfg = { .size = 64 << 10, .block_size = 1024, .ncores = 2 };
	char err[256];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	uint64_t drops[2 * BT_GROUP_MAX] = { 0 };
	if (!b)
		return -1;
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .dump_seq = 1, .reason = "test",
		.groups_enabled = 1,
	};
	int r = bt_dump_write(b, &info, NULL, path, zlevel, NULL, 0, NULL, err, sizeof(err));
	bt_buffer_destroy(b);
	if (r)
		return r;
	*img = h_read_file(path, len);
	return *img ? 0 : -1;
}

static void fix_crc(uint8_t *img)
{
	struct btd_header h;
	memcpy(&h, img, sizeof(h));
	h.header_crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), img, offsetof(struct btd_header, header_crc));
	memcpy(img, &h, sizeof(h));
}

/* ---- item: FIFOs and devices ---------------------------------------------- */

/* Opens path in a child that is killed after 5 s: returns 1 if the child
 * finished in time with a refusal whose message contains want. */
static int refused_quickly(const char *path, const char *want)
{
	int pfd[2];
	if (pipe(pfd))
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		char err[256] = "";
		alarm(5);
		struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
		int ok = !d && strstr(err, want) != NULL;
		if (write(pfd[1], err, strlen(err) + 1) < 0)
			_exit(3);
		_exit(ok ? 0 : 1);
	}
	close(pfd[1]);
	int st = 0;
	waitpid(pid, &st, 0);
	char msg[256] = "";
	if (read(pfd[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = 0;
	close(pfd[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "  %s: %s (status %#x)\n", path, msg, st);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_not_regular(void)
{
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
	REQUIRE(mkfifo(fifo, 0600) == 0, "mkfifo");
	/* Before the fix, open() waited for a writer forever. */
	CHECK(refused_quickly(fifo, "not a regular file (a FIFO)"), "FIFO");
	CHECK(refused_quickly("/dev/null", "character device"), "/dev/null");
	CHECK(refused_quickly(tmpdir, "directory"), "directory");
	unlink(fifo);
}

/* ---- item: memory bounded by the header ------------------------------------ */

/* Opens path in a child; returns its peak RSS in KiB (-1 if it crashed or
 * the open succeeded), the refusal in msg. */
static long open_peak_rss(const char *path, char *msg, size_t msglen)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char err[256] = "";
		alarm(60);
		struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
		if (write(pfd[1], err, strlen(err) + 1) < 0)
			_exit(3);
		_exit(d ? 1 : 0);
	}
	close(pfd[1]);
	int st = 0;
	struct rusage ru;
	wait4(pid, &st, 0, &ru);
	ssize_t n = read(pfd[0], msg, msglen - 1);
	msg[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return ru.ru_maxrss;
}

/* A sparse file of size bytes starting with head (hlen bytes): refused with
 * want by a reader whose peak RSS stays under 64 MiB (the old reader took
 * the whole file). */
static int sparse_refused(const uint8_t *head, size_t hlen, uint64_t size, const char *want, char *msg, size_t mlen)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/sparse", tmpdir);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	int ok = fd >= 0 && (!hlen || write(fd, head, hlen) == (ssize_t)hlen) && ftruncate(fd, (off_t)size) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok) {
		snprintf(msg, mlen, "cannot make the sparse file");
		return 0;
	}
	long kb = open_peak_rss(path, msg, mlen);
	unlink(path);
	size_t l = strlen(msg);
	snprintf(msg + l, mlen - l, " (peak RSS %ld KiB)", kb);
	return kb > 0 && kb < (64 << 10) && strstr(msg, want) != NULL;
}

static void test_huge_files(void)
{
	const uint64_t big = 4ull << 30;
	char path[300], msg[256];
	uint8_t *img;
	size_t len;

	snprintf(path, sizeof(path), "%s/small.btd", tmpdir);
	REQUIRE(write_dump(path, 0, &img, &len) == 0, "dump");

	/* 4 GiB of nothing: not a dump, known from its first bytes */
	CHECK(sparse_refused(NULL, 0, big, "bad magic", msg, sizeof(msg)), "zeros: %s", msg);
	/* a valid dump with 4 GiB after it: the header says how long it is */
	CHECK(sparse_refused(img, len, big, "unexpected bytes after the body", msg, sizeof(msg)), "trailing: %s", msg);

	/* a header that declares a 1 GiB body of zeros (1 GiB: quicker to
	 * stream): read in chunks, the checksum refuses it, never all of it
	 * in memory */
	struct btd_header h;
	memcpy(&h, img, sizeof(h));
	h.body_len = h.body_raw_len = (big >> 2) - BTD_HEADER_SIZE;
	h.nsections = 4;
	h.nblocks_stored = h.nevents_stored = 0;
	memcpy(img, &h, sizeof(h));
	fix_crc(img);
	CHECK(sparse_refused(img, BTD_HEADER_SIZE, big >> 2, "body checksum", msg, sizeof(msg)), "declared: %s", msg);
	/* the same, compressed: the stream fails at its first bytes */
	h.compression = BTD_COMP_ZLIB;
	h.zlevel = 1;
	h.body_raw_len = 1ull << 30; /* within deflate's ratio of the stored size */
	memcpy(img, &h, sizeof(h));
	fix_crc(img);
	CHECK(sparse_refused(img, BTD_HEADER_SIZE, big >> 2, "body checksum", msg, sizeof(msg)), "declared zlib: %s",
	      msg);

	/* and a real one still opens from the file */
	snprintf(path, sizeof(path), "%s/small.btd", tmpdir);
	char err[256];
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	CHECK(d, "valid dump: %s", err);
	bt_dump_close(d);
	free(img);
}

/* ---- item: a small file whose zlib body declares more than a reader takes -- */

/* path: a dump header (from img) and a real zlib stream of raw zero bytes,
 * made of one full-flush segment of 1 MiB of zeros repeated (so it costs
 * the test nothing to make): ~1.5 MiB on disk, raw bytes inflated. */
static int write_bomb(const char *path, const uint8_t *img, uint64_t raw)
{
	static uint8_t zeros[1 << 20], seg[1 << 14];
	z_stream z = { 0 };
	uint8_t tail[64], head[2];
	size_t nseg, ntail;
	int ok = 0;

	if (deflateInit(&z, 9) != Z_OK)
		return 0;
	z.next_out = head, z.avail_out = 2; /* the zlib header alone first */
	z.next_in = zeros, z.avail_in = 0;
	deflate(&z, Z_NO_FLUSH);
	z.next_in = zeros, z.avail_in = sizeof(zeros);
	z.next_out = seg, z.avail_out = sizeof(seg);
	deflate(&z, Z_FULL_FLUSH); /* no reference back: the segment repeats */
	nseg = sizeof(seg) - z.avail_out;
	z.next_in = zeros, z.avail_in = 0;
	z.next_out = tail, z.avail_out = sizeof(tail);
	deflate(&z, Z_FINISH); /* the final block and a checksum (wrong: refused after) */
	ntail = sizeof(tail) - z.avail_out;
	deflateEnd(&z);

	struct btd_header h;
	memcpy(&h, img, sizeof(h));
	h.compression = BTD_COMP_ZLIB;
	h.zlevel = 9;
	h.body_raw_len = raw;
	h.body_len = 2 + nseg * (raw >> 20) + ntail;
	uLong crc = crc32(0, Z_NULL, 0);
	crc = crc32(crc, head, 2);
	for (uint64_t i = 0; i < raw >> 20; i++)
		crc = crc32(crc, seg, (uInt)nseg);
	h.body_crc = (uint32_t)crc32(crc, tail, (uInt)ntail);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	uint8_t hb[BTD_HEADER_SIZE];
	memcpy(hb, img, sizeof(hb));
	memcpy(hb, &h, sizeof(h));
	fix_crc(hb);
	ok = fwrite(hb, 1, sizeof(hb), f) == sizeof(hb) && fwrite(head, 1, 2, f) == 2;
	for (uint64_t i = 0; ok && i < raw >> 20; i++)
		ok = fwrite(seg, 1, nseg, f) == nseg;
	ok = ok && fwrite(tail, 1, ntail, f) == ntail;
	return fclose(f) == 0 && ok;
}

static void test_zlib_bomb(void)
{
	char path[300], msg[512];
	uint8_t *img;
	size_t len;

	snprintf(path, sizeof(path), "%s/small.btd", tmpdir);
	REQUIRE(write_dump(path, 0, &img, &len) == 0, "dump");
	snprintf(path, sizeof(path), "%s/bomb.btd", tmpdir);
	/* 1.5 GiB declared, ~1.5 MiB stored: within deflate's ratio. The old
	 * reader took 1.5 GiB and inflated it all before any refusal. */
	REQUIRE(write_bomb(path, img, 1536ull << 20), "bomb");
	long kb = open_peak_rss(path, msg, sizeof(msg));
	CHECK(kb > 0 && kb < (64 << 10) && strstr(msg, "BTRACE_DUMP_MAX_BODY"),
	      "a 1.5 MiB dump declaring a 1.5 GiB body: refused by its header (peak RSS %ld KiB): %s", kb, msg);
	/* the limit is the reader's to set: lowered, the small dump is refused */
	snprintf(path, sizeof(path), "%s/small.btd", tmpdir);
	setenv("BTRACE_DUMP_MAX_BODY", "64", 1);
	char err[256] = "";
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	CHECK(!d && strstr(err, "BTRACE_DUMP_MAX_BODY"), "BTRACE_DUMP_MAX_BODY=64 refuses a small dump: %s", err);
	bt_dump_close(d);
	unsetenv("BTRACE_DUMP_MAX_BODY");
	d = bt_dump_open(path, err, sizeof(err));
	CHECK(d, "and opens without it: %s", err);
	bt_dump_close(d);
	snprintf(path, sizeof(path), "%s/bomb.btd", tmpdir);
	unlink(path);
	free(img);
}

/* ---- item: header fields no writer produces -------------------------------- */

/* Name, what the refusal must say, and the damage (by index). */
static const struct {
	const char *name, *want;
} bad_fields[] = {
	{ "clock", "clock id 1" },
	{ "flags", "flags 0x4" },
	{ "block-size-0", "block size 0" },
	{ "block-size-odd", "block size 3000" },
	{ "block-size-huge", "block size 131072" },
	{ "nblocks-0", "0 blocks" },
	{ "active-over", "active" },
	{ "buffer-size", "buffer of" },
	{ "groups", "groups 0x40 enabled" },
	{ "ngroups-0", "0 groups" },
	{ "dump-seq-0", "dump #0" },
	{ "overlap-self", "overlapping #1" },
	{ "nsections", "sections" },
	{ "nevents", "events in a body" },
	{ "nblocks-stored", "blocks" },
};

static void bad_field(size_t i, struct btd_header *h)
{
	switch (i) {
	case 0: h->clock_id = 1; break;
	case 1: h->flags = 4; break;
	case 2: h->block_size = 0; break;
	case 3: h->block_size = 3000; break;
	case 4: h->block_size = 131072; break;
	case 5: h->nblocks = 0; break;
	case 6: h->active = h->nblocks + 1; break;
	case 7: h->buffer_size += 1; break;
	case 8: h->groups_enabled = 0x40; break;
	case 9: h->ngroups = 0; break;
	case 10: h->dump_seq = 0; break;
	case 11: h->overlaps_dump = h->dump_seq; break;
	case 12: h->nsections = 1ull << 40; break;
	case 13: h->nevents_stored = 1ull << 40; break;
	case 14: h->nblocks_stored = h->nsections + 1; break;
	}
}

static void test_header_fields(void)
{
	char path[300], err[256];
	uint8_t *img;
	size_t len;
	snprintf(path, sizeof(path), "%s/fields.btd", tmpdir);
	REQUIRE(write_dump(path, 0, &img, &len) == 0, "dump");
	struct bt_dump *d = bt_dump_open_mem(img, len, err, sizeof(err));
	REQUIRE(d, "intact: %s", err);
	bt_dump_close(d);
	uint8_t *cp = malloc(len);
	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		struct btd_header h;
		memcpy(cp, img, len);
		memcpy(&h, cp, sizeof(h));
		bad_field(i, &h);
		memcpy(cp, &h, sizeof(h));
		fix_crc(cp);
		err[0] = 0;
		d = bt_dump_open_mem(cp, len, err, sizeof(err));
		CHECK(!d && strstr(err, "corrupt dump header (") && strstr(err, bad_fields[i].want), "%s: %s",
		      bad_fields[i].name, d ? "accepted" : err);
		bt_dump_close(d);
		/* the fuzzer's path (no crc checks) refuses them too */
		d = bt_dump_open_mem_flags(cp, len, BT_DUMP_OPEN_NOCRC, err, sizeof(err));
		CHECK(!d, "%s accepted without crc checks", bad_fields[i].name);
		bt_dump_close(d);
	}
	free(cp);
	free(img);
}

static void write_seeds(const char *dir)
{
	char path[600];
	uint8_t *img;
	size_t len;
	snprintf(path, sizeof(path), "%s/base.btd", tmpdir);
	if (write_dump(path, 1, &img, &len))
		return;
	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		struct btd_header h;
		uint8_t *cp = malloc(len);
		memcpy(cp, img, len);
		memcpy(&h, cp, sizeof(h));
		bad_field(i, &h);
		memcpy(cp, &h, sizeof(h));
		fix_crc(cp);
		snprintf(path, sizeof(path), "%s/seed-badhdr-%s.btd", dir, bad_fields[i].name);
		FILE *f = fopen(path, "wb");
		if (f) {
			fwrite(cp, 1, len, f);
			fclose(f);
		}
		free(cp);
	}
	free(img);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_dump_open.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	const char *seeds = getenv("BTRACE_WRITE_SEEDS");
	if (seeds) {
		write_seeds(seeds);
	} else {
		RUN(test_not_regular);
		RUN(test_huge_files);
		RUN(test_zlib_bomb);
		RUN(test_header_fields);
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return seeds ? 0 : h_done();
}
