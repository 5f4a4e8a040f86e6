// SPDX-License-Identifier: MIT
/*
 * count_hooks.c - an independent reference for test_funcs_lua.sh: preloaded
 * into a -finstrument-functions build that has no libbtrace (its hooks are
 * glibc's, reached through the PLT), it counts the entries of every
 * function and, at exit, writes "OFFSET COUNT" lines (OFFSET: 16 hex digits, as nm prints them: the address
 * less the executable's load base) to $COUNT_HOOKS_OUT. One thread only.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOI __attribute__((no_instrument_function))
#define SLOTS 8192 /* a power of two, well over Lua's functions */

static uintptr_t key[SLOTS];
static unsigned long cnt[SLOTS];

NOI void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	uintptr_t a = (uintptr_t)fn;
	for (unsigned i = (unsigned)(a >> 4) & (SLOTS - 1);; i = (i + 1) & (SLOTS - 1)) {
		if (key[i] == a || !key[i]) {
			key[i] = a;
			cnt[i]++;
			return;
		}
	}
}

NOI void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

static NOI int first_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr; /* the first object is the executable */
	return 1;
}

__attribute__((destructor)) static NOI void write_counts(void)
{
	const char *path = getenv("COUNT_HOOKS_OUT");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	uintptr_t base = 0;
	dl_iterate_phdr(first_base, &base);
	for (unsigned i = 0; i < SLOTS; i++)
		if (key[i])
			fprintf(f, "%016lx %lu\n", (unsigned long)(key[i] - base), cnt[i]);
	fclose(f);
}
