// SPDX-License-Identifier: MIT
/*
 * debug_file.c - finding a stripped file's debug file (see debug_file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "debug_file.h"
#include "elf_symbols.h"
#include "trusted_file.h"
#include <zlib.h>

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
/* A debug link without a build-id is matched by the CRC of the whole
 * candidate file: only ELF files of at most this size are read for it (a
 * link naming a 64 GiB sparse file made every dump read 64 GiB). */
#define DEBUGLINK_CRC_MAX (1ull << 30)

struct want {
	const char *path, *debuglink;
	const uint8_t *build_id;
	uint32_t len;
	uint32_t crc;
	int has_crc;
	char **found;
	int no_links; /* the candidate is in a directory a user may control */
};

/* The CRC-32 of a whole file (what .gnu_debuglink records); 0 and *ok 0
 * if it cannot be read, is not ELF or is over DEBUGLINK_CRC_MAX. */
static uint32_t file_crc(int fd, int *ok)
{
	unsigned char buf[1 << 16];
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;
	struct stat st;

	*ok = 0;
	if (fstat(fd, &st) || (uint64_t)st.st_size > DEBUGLINK_CRC_MAX || pread(fd, buf, 4, 0) != 4 ||
	    memcmp(buf, "\177ELF", 4))
		return 0;
	while (off < st.st_size &&
	       (n = pread(fd, buf, (size_t)(st.st_size - off) < sizeof(buf) ? (size_t)(st.st_size - off) : sizeof(buf),
			  off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	*ok = off == st.st_size; /* not past the size measured: it may grow */
	return (uint32_t)crc;
}

/* Open a candidate: a regular file (nothing else is ever opened), of the
 * build wanted: the build-id if there is one, else the debug link's CRC.
 * fd or -1. */
static int try_open(const char *cand, const struct want *w)
{
	int fd = w->no_links ? bt_open_regular_nolinks(cand) : bt_open_regular(cand), ok;

	if (fd < 0)
		return -1;
	if (w->len ? !bt_elf_build_id_is(fd, w->build_id, w->len) : !w->has_crc || file_crc(fd, &ok) != w->crc || !ok) {
		close(fd);
		return -1;
	}
	if (w->found && !(*w->found = strdup(cand))) {
		close(fd);
		return -1;
	}
	return fd;
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
	return try_open(cand, w);
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
	return try_open(cand, w);
}

int bt_debug_file_open(const char *path, const uint8_t *build_id, uint32_t len, const char *debuglink,
		       uint32_t crc, const char *debug_dirs, char **found)
{
	struct want w = { path, debuglink, build_id, len > BT_BUILD_ID_MAX ? BT_BUILD_ID_MAX : len, crc,
			  debuglink != NULL, found, 0 };
	int fd;

	if (found)
		*found = NULL;
	if (w.len >= 2 && (fd = each_dir(debug_dirs, by_build_id, &w)) >= 0)
		return fd;
	/* A debug link is the binary's word: a plain name only (no "../"), and
	 * what it names must be a regular file (never a FIFO: no open blocks). */
	if (!path || !debuglink || !*debuglink || strchr(debuglink, '/') || !strcmp(debuglink, ".") ||
	    !strcmp(debuglink, ".."))
		return -ENOENT;
	const char *slash = strrchr(path, '/');
	if (slash && path[0] == '/') {
		char cand[8400];
		int dl = (int)(slash - path);
		w.no_links = 1; /* the binary's own directory: its owner's */
		snprintf(cand, sizeof(cand), "%.*s/%s", dl, path, debuglink);
		if (strcmp(cand, path) != 0 && (fd = try_open(cand, &w)) >= 0)
			return fd;
		snprintf(cand, sizeof(cand), "%.*s/.debug/%s", dl, path, debuglink);
		if ((fd = try_open(cand, &w)) >= 0)
			return fd;
		w.no_links = 0;
	}
	fd = each_dir(debug_dirs, by_link_under, &w);
	return fd >= 0 ? fd : -ENOENT;
}
