/* SPDX-License-Identifier: MIT */
/* Tiny TAP-style test harness: each TEST prints "ok N - name" or "not ok N - name";
 * tests/run.sh counts those lines across every test program. */
#ifndef BT_TEST_HARNESS_H
#define BT_TEST_HARNESS_H
#include <stdio.h>
#include <stdlib.h>

static int h_ntests, h_nfail_tests, h_case_failed;

#define CHECK(cond, ...)                                                              \
	do {                                                                          \
		if (!(cond)) {                                                        \
			h_case_failed = 1;                                            \
			fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                 \
			fputc('\n', stderr);                                          \
		}                                                                     \
	} while (0)

/* CHECK that stops the current test (for preconditions later checks rely on). */
#define REQUIRE(cond, ...)                                                            \
	do {                                                                          \
		int h_ok_ = !!(cond); /* evaluated once: cond may have effects */     \
		CHECK(h_ok_ && #cond, __VA_ARGS__);                                   \
		if (!h_ok_)                                                           \
			return;                                                       \
	} while (0)

static inline void h_run(const char *name, void (*fn)(void))
{
	h_case_failed = 0;
	fn();
	h_ntests++;
	if (h_case_failed)
		h_nfail_tests++;
	printf("%sok %d - %s\n", h_case_failed ? "not " : "", h_ntests, name);
	fflush(stdout);
}
#define RUN(fn) h_run(#fn, fn)

/* Whole file into a malloc'd buffer (len set); NULL if unreadable. */
static inline unsigned char *h_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc(n > 0 ? (size_t)n : 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static inline int h_done(void)
{
	printf("# %d passed, %d failed\n", h_ntests - h_nfail_tests, h_nfail_tests);
	return h_nfail_tests ? 1 : 0;
}
#endif
