// SPDX-License-Identifier: MIT
/* test_util.c - strict size/duration/integer parsing, mkdir -p (user/util.c),
 * prefaulting (user/util/prefault.c). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "harness.h"
#include "prefault.h"
#include "util.h"

static void test_size_valid(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "1", 1 },
		{ "4096", 4096 },
		{ "1B", 1 },
		{ "1K", 1024 },
		{ "1k", 1024 },
		{ "64M", 64ull << 20 },
		{ "64m", 64ull << 20 },
		{ "64MB", 64ull << 20 },
		{ "64MiB", 64ull << 20 },
		{ "64mib", 64ull << 20 },
		{ "2G", 2ull << 30 },
		{ "1T", 1ull << 40 },
		{ "007", 7 },
		{ "16777215T", 16777215ull << 40 },       /* just fits */
		{ "18446744073709551615", UINT64_MAX },     /* largest plain value */
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 0;
		int r = parse_size(ok[i].s, &v);

		CHECK(r == 0, "parse_size(\"%s\") = %d", ok[i].s, r);
		CHECK(v == ok[i].v, "parse_size(\"%s\") gave %llu, want %llu", ok[i].s,
		      (unsigned long long)v, (unsigned long long)ok[i].v);
	}
}

static void test_size_invalid(void)
{
	static const char *const bad[] = {
		"", "0", "0K", "-5", "+5", " 5", "5 ", "12Q", "1.5G", "0x10", "K", "M64",
		"64MQ", "64iB", "64KBB", "64 M", "1e6", "--1", "5\n", "１",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 12345;
		int r = parse_size(bad[i], &v);

		CHECK(r == -EINVAL, "parse_size(\"%s\") = %d, want -EINVAL", bad[i], r);
		CHECK(v == 12345, "parse_size(\"%s\") touched *out", bad[i]);
	}
	uint64_t v = 12345;
	CHECK(parse_size(NULL, &v) == -EINVAL, "NULL");
}

static void test_size_overflow(void)
{
	static const char *const big[] = {
		"18446744073709551616", /* UINT64_MAX + 1 */
		"99999999999999999999999",
		"16777216T", /* 2^64 */
		"17179869184G",
		"18446744073709551615K",
	};
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		uint64_t v = 12345;
		int r = parse_size(big[i], &v);

		CHECK(r == -ERANGE, "parse_size(\"%s\") = %d, want -ERANGE", big[i], r);
		CHECK(v == 12345, "parse_size(\"%s\") touched *out", big[i]);
	}
	/* A malformed suffix wins over the overflow: the input is not a size. */
	uint64_t v;
	CHECK(parse_size("99999999999999999999999Q", &v) == -EINVAL, "overflow + bad suffix");
}

static void test_duration(void)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = {
		{ "10s", 10000000000ull }, { "500ms", 500000000ull }, { "2m", 120000000000ull },
		{ "2min", 120000000000ull }, { "1h", 3600000000000ull }, { "10", 10000000000ull },
		{ "250us", 250000ull }, { "7ns", 7 }, { "1.5s", 1500000000ull }, { "0.25ms", 250000ull },
		{ "10S", 10000000000ull }, { "0.5", 500000000ull }, { "1.5m", 90000000000ull },
	};
	static const char *const bad[] = {
		"", "0", "0s", "-1s", "10x", "s", "10 s", " 10s", "1d", "ms", "1.s", ".5s", "0.0s", "10M", "1.5.2s",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 0;
		int r = parse_duration(ok[i].s, &v);

		CHECK(r == 0 && v == ok[i].ns, "parse_duration(\"%s\") = %d, %llu", ok[i].s, r,
		      (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 1;
		int r = parse_duration(bad[i], &v);

		CHECK(r == -EINVAL && v == 1, "parse_duration(\"%s\") = %d, want -EINVAL", bad[i], r);
	}
	uint64_t v = 1;
	CHECK(parse_duration("5124096h", &v) == -ERANGE, "hours overflow");
	CHECK(parse_duration("99999999999999999999ns", &v) == -ERANGE, "digits overflow");
	CHECK(parse_duration("5124095h", &v) == 0, "largest hours");
}

static void test_uint(void)
{
	uint64_t v = 0;

	CHECK(parse_uint("0", 9, &v) == 0 && v == 0, "0");
	CHECK(parse_uint("9", 9, &v) == 0 && v == 9, "9");
	CHECK(parse_uint("10", 9, &v) == -ERANGE, "above max");
	CHECK(parse_uint("-1", 9, &v) == -EINVAL, "sign");
	CHECK(parse_uint("1K", UINT64_MAX, &v) == -EINVAL, "suffix");
	CHECK(parse_uint("", 9, &v) == -EINVAL, "empty");
	CHECK(parse_uint("18446744073709551616", UINT64_MAX, &v) == -ERANGE, "overflow");
}

static void test_format_size(void)
{
	char b[32];

	CHECK(!strcmp(format_size(12, b, sizeof(b)), "12 B"), "%s", b);
	CHECK(!strcmp(format_size(64ull << 20, b, sizeof(b)), "64 MiB"), "%s", b);
	CHECK(!strcmp(format_size(1536, b, sizeof(b)), "1.5 KiB"), "%s", b);
	CHECK(!strcmp(format_size(1ull << 30, b, sizeof(b)), "1 GiB"), "%s", b);
}

/* Durations as users write them (limit=1h printed 3.6e+03s). */
static void test_format_duration(void)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} c[] = { { 3600000000000ull, "1h" }, { 90000000000ull, "1.5m" }, { 120000000000ull, "2m" },
		  { 1500000000ull, "1.5s" }, { 250000000ull, "250ms" }, { 0, "0s" }, { 7200500000000ull, "2h" },
		  { 1234ull, "1.234us" }, { 1, "1ns" } };
	char b[32];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		CHECK(!strcmp(format_duration(c[i].ns, b, sizeof(b)), c[i].want), "%llu ns: %s, want %s",
		      (unsigned long long)c[i].ns, b, c[i].want);
}

/* bt_mkdir_p: parents made with the mode, an existing directory kept, a
 * file in the way refused (the recorder and the dump writer share it). */
static void test_mkdir_p(void)
{
	char root[] = "/tmp/test_util.XXXXXX", p[320], f[256];
	struct stat st;

	REQUIRE(mkdtemp(root), "mkdtemp");
	snprintf(p, sizeof(p), "%s/a/b/c/", root);
	CHECK(bt_mkdir_p(p, 0700) == 0, "new nested directory");
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "made with mode 0700");
	CHECK(bt_mkdir_p(p, 0700) == 0, "an existing directory is fine");
	snprintf(f, sizeof(f), "%s/a/file", root);
	FILE *fh = fopen(f, "w");
	REQUIRE(fh, "create %s", f);
	fclose(fh);
	CHECK(bt_mkdir_p(f, 0700) == -ENOTDIR, "a file where the directory should be");
	snprintf(p, sizeof(p), "%s/sub", f);
	CHECK(bt_mkdir_p(p, 0700) == -ENOTDIR, "a file where a parent should be");
	CHECK(bt_mkdir_p("", 0700) == -ENAMETOOLONG, "empty name");
	unlink(f);
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	CHECK(system(p) == 0, "clean up");
}

/* Pages of [p, p + len) resident (mincore). */
static size_t resident(const char *p, size_t len, size_t pg)
{
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	size_t n = ((uintptr_t)p + len - a + pg - 1) / pg, k = 0;
	unsigned char *v = calloc(n, 1);

	if (!v || mincore((void *)a, n * pg, v)) {
		free(v);
		return (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		k += v[i] & 1;
	free(v);
	return k;
}

/* bt_prefault: every page of the range resident afterwards (the first
 * and last partial ones too), none beyond it, the contents kept. */
static void test_prefault(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 64 * pg;
	char *m = mmap(NULL, len + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(m != MAP_FAILED, "mmap");
	CHECK(resident(m, len + 2 * pg, pg) == 0, "a fresh mapping has no page yet");
	char *p = m + pg + 100; /* starts and ends inside a page */
	size_t n = len - 200;
	CHECK(bt_prefault(p, n) == 0, "prefault %zu bytes", n);
	CHECK(resident(p, n, pg) == 64, "all 64 pages it touches are resident (%zu)", resident(p, n, pg));
	CHECK(resident(m, pg, pg) == 0 && resident(m + len + pg, pg, pg) == 0, "the pages around it are not");
	memset(p, 'x', n);
	p[n / 2] = 'b';
	CHECK(bt_prefault(p, n) == 0 && p[0] == 'x' && p[n / 2] == 'b' && p[n - 1] == 'x', "contents kept");
	CHECK(bt_prefault(m + len + pg + 5, 10) == 0 && resident(m + len + pg, pg, pg) == 1, "less than a page");
	munmap(m, len + 2 * pg);
}

int main(void)
{
	RUN(test_size_valid);
	RUN(test_size_invalid);
	RUN(test_size_overflow);
	RUN(test_duration);
	RUN(test_uint);
	RUN(test_format_size);
	RUN(test_format_duration);
	RUN(test_mkdir_p);
	RUN(test_prefault);
	return h_done();
}
