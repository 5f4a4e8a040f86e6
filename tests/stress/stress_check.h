/* SPDX-License-Identifier: MIT */
/*
 * stress_check.h - what the block-buffer stress tests (stress_buffer.c,
 * stress_cold.c) share: the failure counter that prints the first 20
 * failures, and the FNV-1a checksum every entry's payload carries.
 * Each test seeds the checksum with its own entry header fields.
 */
#ifndef BT_STRESS_CHECK_H
#define BT_STRESS_CHECK_H
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

static atomic_int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&failures, 1) < 20) {
		va_start(ap, fmt);
		fprintf(stderr, "  FAIL: ");
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

/* FNV-1a over fill[0..n), starting from seed ^ the FNV offset basis. */
static inline uint32_t stress_csum(uint32_t seed, const uint8_t *fill, uint32_t n)
{
	uint32_t h = 2166136261u ^ seed;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ fill[i]) * 16777619u;
	return h;
}
#endif
