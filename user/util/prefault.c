// SPDX-License-Identifier: MIT
/*
 * prefault.c - memory backed now (prefault.h). A memset does the same by
 * writing every byte and taking a page fault per page: for the cold
 * tier's 48 MiB that was a third of a default recorder's start without
 * stacks; the kernel populates pages without either.
 *
 * Then one write a page from here all the same: in a guest whose
 * hypervisor shadows the page tables, what the kernel populated is not
 * yet in the shadow of our mapping, and the first write to each page
 * from user space costs a trap to the hypervisor (about 7 us a page on
 * the development VM, MAP_POPULATE or not: 15 ms for each 8 MiB). Paid
 * here, at the start, rather than by the drain and the compressor on
 * their first round of the buffer, where it was 13-50 ns a traced call
 * of a 4 s run and stalled the drain while its rings filled. Elsewhere
 * the writes hit populated pages: a cache miss each.
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

	/* before 5.14 (EINVAL), or less than a page: the writes alone */
	if (a < b && madvise((void *)a, b - a, MADV_POPULATE_WRITE) && errno != EINVAL)
		return -ENOMEM;
	for (c = p; (uintptr_t)c < end; c = (volatile char *)(((uintptr_t)c & ~(pg - 1)) + pg))
		*c = *c;
	return 0;
}
