/* SPDX-License-Identifier: MIT */
/* prefault.h - memory backed now, not at its first write. */
#ifndef BTRACE_PREFAULT_H
#define BTRACE_PREFAULT_H
#include <stddef.h>

/* Back [p, p + len) with memory now (written pages: no fault later, and
 * memory the machine lacks fails here): the kernel populates the whole
 * pages in one call (MADV_POPULATE_WRITE, 5.14), then each page is
 * written once from user space (a hypervisor's shadow of the mapping).
 * Contents are kept: no other thread may write them meanwhile. 0, or
 * -ENOMEM. */
int bt_prefault(void *p, size_t len);

#endif
