// SPDX-License-Identifier: MIT
/*
 * prefault.c - memory backed now (prefault.h). A memset does the same by
 * writing every byte and taking a page fault per page: for the cold
 * tier's 48 MiB that was a third of a default recorder's start without
 * stacks; the kernel populates pages without either.
 */
#include "prefault.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* linux/mman.h of 5.14 */
#endif

int bt_prefault(void *p, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p, end = start + len;
	uintptr_t a = (start + pg - 1) & ~(pg - 1), b = end & ~(pg - 1);
	volatile char *c;

	if (a < b && madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0) {
		/* the partial pages at the edges, written as the loop below does */
		if (start < a)
			*(volatile char *)start = *(volatile char *)start;
		if (b < end)
			*(volatile char *)b = *(volatile char *)b;
		return 0;
	}
	if (a < b && errno != EINVAL)
		return -ENOMEM;
	/* before 5.14 (EINVAL), or less than a page: a write to each page */
	for (c = p; (uintptr_t)c < end; c = (volatile char *)(((uintptr_t)c & ~(pg - 1)) + pg))
		*c = *c;
	return 0;
}
