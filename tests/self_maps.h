/* SPDX-License-Identifier: MIT */
/* self_maps.h - a test's own binary as mapped (for tests that make stacks of
 * their own addresses) and a paused fork of the test, whose addresses are
 * the same. */
#ifndef BT_TEST_SELF_MAPS_H
#define BT_TEST_SELF_MAPS_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Each mapping of /proc/self/exe: fn(start, end, file offset, perms, arg);
 * a non-zero return stops. -1 if the maps cannot be read. */
static inline int h_exe_maps(int (*fn)(uint64_t, uint64_t, uint64_t, const char *, void *), void *arg)
{
	char line[4352], exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "re");

	if (n <= 0 || !f) {
		if (f)
			fclose(f);
		return -1;
	}
	exe[n] = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, pg;
		char perms[8], path[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &pg, path) == 5 &&
		    strcmp(path, exe) == 0 && fn(s, e, pg, perms, arg))
			break;
	}
	fclose(f);
	return 0;
}

struct h_off_q {
	uint64_t addr;
	int64_t off;
};
static inline int h_off_of(uint64_t s, uint64_t e, uint64_t pg, const char *perms, void *arg)
{
	struct h_off_q *q = arg;
	(void)perms;
	if (q->addr >= s && q->addr < e)
		q->off = (int64_t)(q->addr - s + pg);
	return q->off >= 0;
}

/* File offset of addr in this binary, -1 if it is not in it. */
static inline int64_t h_exe_offset(uintptr_t addr)
{
	struct h_off_q q = { addr, -1 };
	h_exe_maps(h_off_of, &q);
	return q.off;
}

static inline int h_text_of(uint64_t s, uint64_t e, uint64_t pg, const char *perms, void *arg)
{
	uint64_t *r = arg;
	(void)pg;
	if (perms[2] == 'x') {
		r[0] = s;
		r[1] = e;
	}
	return perms[2] == 'x';
}

/* This binary's executable mapping into *lo, *hi: 0, or -1 if none. */
static inline int h_exe_text(uint64_t *lo, uint64_t *hi)
{
	uint64_t r[2] = { 0, 0 };
	h_exe_maps(h_text_of, r);
	*lo = r[0];
	*hi = r[1];
	return r[1] > r[0] ? 0 : -1;
}

/* A fork of this test that waits to be killed: its addresses are ours. */
static inline pid_t h_paused_child(void)
{
	pid_t p = fork();
	if (p == 0) {
		pause();
		_exit(0);
	}
	return p;
}
#endif
