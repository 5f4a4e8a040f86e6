// SPDX-License-Identifier: MIT
/*
 * debug_file.c - finding a stripped file's debug file (see debug_file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "debug_file.h"
#include "elf_symbols.h"
#include "trusted_file.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

/* Open a candidate: a regular file, with the build-id wanted if one is
 * (a debug link names a file, not which build). Trusted fd or -1. */
static int try_open(const char *cand, const uint8_t *build_id, uint32_t len, char **found)
{
	int fd = bt_open_regular(cand);
	uint8_t bid[20];

	if (fd < 0)
		return -1;
	if (len && (bt_elf_build_id(fd, bid, sizeof(bid)) != len || memcmp(bid, build_id, len) != 0)) {
		close(fd);
		return -1;
	}
	int t = bt_trusted_fd(fd);
	close(fd);
	if (t < 0)
		return -1;
	if (!(*found = strdup(cand))) {
		close(t);
		return -1;
	}
	return t;
}

/* Each directory of the list, then the system's; f() on each until it
 * gives a descriptor. */
static int each_dir(const char *debug_dirs, int (*f)(const char *dir, void *arg), void *arg)
{
	const char *p = debug_dirs;
	char dir[4096];
	int fd;

	while (p && *p) {
		size_t n = strcspn(p, ":");
		if (n && n < sizeof(dir)) {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if ((fd = f(dir, arg)) >= 0)
				return fd;
		}
		p += n + (p[n] == ':');
	}
	return f(SYSTEM_DEBUG_DIR, arg);
}

struct want {
	const char *path, *debuglink;
	const uint8_t *build_id;
	uint32_t len;
	char **found;
};

static int by_build_id(const char *dir, void *arg)
{
	struct want *w = arg;
	char cand[4200];
	int n = snprintf(cand, sizeof(cand), "%s/.build-id/%02x/", dir, w->build_id[0]);

	for (uint32_t i = 1; i < w->len && n > 0 && (size_t)n + 3 < sizeof(cand); i++)
		n += snprintf(cand + n, sizeof(cand) - (size_t)n, "%02x", w->build_id[i]);
	if (n <= 0 || (size_t)n + 7 > sizeof(cand))
		return -1;
	snprintf(cand + n, sizeof(cand) - (size_t)n, ".debug");
	return try_open(cand, w->build_id, w->len, w->found);
}

/* DIR/<binary's directory>/LINK under a debug directory. */
static int by_link_under(const char *dir, void *arg)
{
	struct want *w = arg;
	const char *slash = strrchr(w->path, '/');
	char cand[8400];

	if (!slash || w->path[0] != '/')
		return -1;
	snprintf(cand, sizeof(cand), "%s%.*s/%s", dir, (int)(slash - w->path), w->path, w->debuglink);
	return try_open(cand, w->build_id, w->len, w->found);
}

int bt_debug_file_open(const char *path, const uint8_t *build_id, uint32_t len, const char *debuglink,
		       const char *debug_dirs, char **found)
{
	struct want w = { path, debuglink, build_id, len > 20 ? 20 : len, found };
	int fd;

	*found = NULL;
	if (w.len >= 2 && (fd = each_dir(debug_dirs, by_build_id, &w)) >= 0)
		return fd;
	/* A debug link is the binary's word: a plain name only (no "../"), and
	 * what it names must be a regular file (never a FIFO: no open blocks). */
	if (!debuglink || !*debuglink || strchr(debuglink, '/') || !strcmp(debuglink, ".") ||
	    !strcmp(debuglink, ".."))
		return -ENOENT;
	const char *slash = strrchr(path, '/');
	if (slash && path[0] == '/') {
		char cand[8400];
		int dl = (int)(slash - path);
		snprintf(cand, sizeof(cand), "%.*s/%s", dl, path, debuglink);
		if (strcmp(cand, path) != 0 && (fd = try_open(cand, w.build_id, w.len, found)) >= 0)
			return fd;
		snprintf(cand, sizeof(cand), "%.*s/.debug/%s", dl, path, debuglink);
		if ((fd = try_open(cand, w.build_id, w.len, found)) >= 0)
			return fd;
	}
	fd = each_dir(debug_dirs, by_link_under, &w);
	return fd >= 0 ? fd : -ENOENT;
}
