// SPDX-License-Identifier: MIT
/*
 * unwind_cache.c - compiled unwind tables on disk by build-id (see
 * unwind_cache.h). Used by the unwinder's thread only: no locking, but
 * for the failure counters, which status and dumps read.
 */
#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "unwind_cache.h"
#include "elf_symbols.h"
#include "util.h"

#define MAGIC "BTUWTAB"
#define SUFFIX ".uw"
#define TMP_PREFIX ".uw-tmp-"
#define TMP_STALE_S 3600 /* a temporary file this old is a crashed writer's */

struct file_hdr {
	char magic[8];
	uint32_t version;  /* BT_UNWIND_ROWS_VERSION */
	uint32_t row_size; /* sizeof(struct bt_unwind_row) */
	uint32_t nrows, fdes, unsupported;
	uint32_t bidlen;
	uint8_t bid[BT_BUILD_ID_MAX];
	uint32_t src_crc; /* bt_unwind_source_crc of the binary compiled */
	uint32_t crc;     /* zlib crc32 of this header (crc 0) and the rows */
};

struct bt_unwind_cache {
	int dirfd;
	uint64_t budget, total; /* bytes allowed, bytes in our files */
	atomic_uint_least64_t store_failed; /* tables not stored (full disk, budget, I/O error) */
	atomic_int last_err;                /* errno of the latest */
};

static void name_of(char *name, size_t len, const uint8_t *bid, uint32_t bidlen)
{
	size_t k = 0;

	for (uint32_t i = 0; i < bidlen && k + 3 < len; i++)
		k += (size_t)snprintf(name + k, len - k, "%02x", bid[i]);
	snprintf(name + k, len - k, SUFFIX);
}

/* One of our table files' names: lower-case hex, then the suffix. */
static int is_table_name(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 2 && n <= 2 * BT_BUILD_ID_MAX && strcmp(s + n, SUFFIX) == 0;
}

struct seen {
	char name[2 * BT_BUILD_ID_MAX + 8];
	uint64_t size;
	int64_t mtime;
};

static int by_mtime(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Sum our files; remove stale temporaries and, if need more bytes would
 * not fit in the budget, the least recently used tables until they fit in
 * 3/4 of it (a hysteresis: not a scan per store). */
static void scan_prune(struct bt_unwind_cache *c, uint64_t need)
{
	int fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct seen *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	c->total = 0;
	while ((de = readdir(d))) {
		if (fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
			if (now - st.st_mtime > TMP_STALE_S)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (!is_table_name(de->d_name))
			continue;
		c->total += (uint64_t)st.st_size;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			void *p = realloc(v, nc * sizeof(*v));
			if (!p)
				break;
			v = p;
			cap = nc;
		}
		memcpy(v[n].name, de->d_name, strlen(de->d_name) + 1); /* is_table_name bounds it */
		v[n].size = (uint64_t)st.st_size;
		v[n].mtime = (int64_t)st.st_mtime;
		n++;
	}
	closedir(d);
	if (c->total + need > c->budget) {
		qsort(v, n, sizeof(*v), by_mtime);
		for (size_t i = 0; i < n && c->total + need > c->budget / 4 * 3; i++)
			if (unlinkat(c->dirfd, v[i].name, 0) == 0)
				c->total -= v[i].size;
	}
	free(v);
}

struct bt_unwind_cache *bt_unwind_cache_open(const char *dir, uint64_t budget, char *err, size_t errlen)
{
	struct stat st;
	int e, fd;

	if (dir[0] != '/') {
		snprintf(err, errlen, "%s: not an absolute path", dir);
		return NULL;
	}
	e = bt_mkdir_p(dir, 0700);
	if (!e) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		e = fd < 0 || fstat(fd, &st) ? -errno : 0;
		if (e && fd >= 0)
			close(fd);
	}
	if (e) {
		snprintf(err, errlen, "%s: %s", dir, strerror(-e));
		return NULL;
	}
	/* Ours, and no one else's to read or write: a shared directory (a
	 * 0755 /var/cache) is not taken over. Each message says which. */
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, not by the recorder's uid %u: not used", dir,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return NULL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: mode %03o, open to its group or others (a shared directory?): not used; "
			 "a cache directory must be 0700 (chmod 700 %s)", dir, (unsigned)(st.st_mode & 0777), dir);
		close(fd);
		return NULL;
	}
	struct bt_unwind_cache *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	c->dirfd = fd;
	c->budget = budget;
	scan_prune(c, 0);
	return c;
}

void bt_unwind_cache_close(struct bt_unwind_cache *c)
{
	if (!c)
		return;
	close(c->dirfd);
	free(c);
}

static uint32_t crc_of(const struct file_hdr *h, const struct bt_unwind_row *rows, uint32_t n)
{
	struct file_hdr z = *h;
	uLong crc;

	z.crc = 0;
	crc = crc32(0L, (const Bytef *)&z, sizeof(z));
	return (uint32_t)crc32(crc, (const Bytef *)rows, (uInt)n * sizeof(*rows));
}

static int read_all(int fd, void *buf, size_t len, off_t off)
{
	for (size_t got = 0; got < len;) {
		ssize_t r = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EBADMSG;
		got += (size_t)r;
	}
	return 0;
}

/* Remove name if it is still the file st describes (not one another
 * recorder renamed into place since). */
static void unlink_same(struct bt_unwind_cache *c, const char *name, const struct stat *st)
{
	struct stat now;

	if (fstatat(c->dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st->st_dev &&
	    now.st_ino == st->st_ino)
		unlinkat(c->dirfd, name, 0);
}

int bt_unwind_cache_load(struct bt_unwind_cache *c, const uint8_t *bid, uint32_t bidlen, uint32_t src_crc,
			 uint32_t max_rows, struct bt_unwind_rows *out)
{
	char name[2 * BT_BUILD_ID_MAX + 8];
	struct file_hdr h;
	struct stat st;
	int fd, ret;

	memset(out, 0, sizeof(*out));
	if (!c || !bidlen || bidlen > BT_BUILD_ID_MAX)
		return -ENOENT;
	name_of(name, sizeof(name), bid, bidlen);
	fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		ret = -EPERM; /* not a file we wrote: left alone */
		goto out;
	}
	ret = -EBADMSG;
	if ((uint64_t)st.st_size < sizeof(h))
		goto out;
	if ((uint64_t)st.st_size > sizeof(h) + sizeof(struct bt_unwind_row) * (uint64_t)max_rows) {
		ret = -EFBIG; /* more than this recorder's --unwind-mem holds: kept for one that can */
		goto out;
	}
	if (read_all(fd, &h, sizeof(h), 0) || memcmp(h.magic, MAGIC, sizeof(MAGIC)) ||
	    h.version != BT_UNWIND_ROWS_VERSION || h.row_size != sizeof(struct bt_unwind_row) || !h.nrows ||
	    (uint64_t)st.st_size != sizeof(h) + (uint64_t)h.nrows * sizeof(struct bt_unwind_row) ||
	    h.bidlen != bidlen || memcmp(h.bid, bid, bidlen))
		goto out;
	if (h.src_crc != src_crc) {
		ret = -ESTALE; /* another binary claiming this build-id: not its rows, and not removed */
		goto out;
	}
	out->rows = malloc((size_t)h.nrows * sizeof(*out->rows));
	if (!out->rows) {
		ret = -ENOMEM;
		goto out;
	}
	if (read_all(fd, out->rows, (size_t)h.nrows * sizeof(*out->rows), sizeof(h)) ||
	    crc_of(&h, out->rows, h.nrows) != h.crc)
		goto out;
	for (uint32_t i = 1; i < h.nrows; i++)
		if (out->rows[i].pc <= out->rows[i - 1].pc)
			goto out; /* the walker's binary search needs them in order */
	out->n = h.nrows;
	out->fdes = h.fdes;
	out->unsupported = h.unsupported;
	futimens(fd, NULL); /* used: the last to be pruned */
	ret = 0;
out:
	close(fd);
	if (ret) {
		bt_unwind_rows_free(out);
		if (ret == -EBADMSG)
			unlink_same(c, name, &st);
	}
	return ret;
}

static int store(struct bt_unwind_cache *c, const uint8_t *bid, uint32_t bidlen, uint32_t src_crc,
		 const struct bt_unwind_rows *r)
{
	char name[2 * BT_BUILD_ID_MAX + 8], tmp[sizeof(name) + 32];
	struct file_hdr h = { .version = BT_UNWIND_ROWS_VERSION, .row_size = sizeof(struct bt_unwind_row) };
	uint64_t size = sizeof(h) + (uint64_t)r->n * sizeof(*r->rows);
	int fd, ret = 0;

	if (!c || !bidlen || bidlen > BT_BUILD_ID_MAX || !r->n)
		return -EINVAL;
	if (c->total + size > c->budget) {
		scan_prune(c, size);
		if (c->total + size > c->budget)
			return -ENOSPC;
	}
	memcpy(h.magic, MAGIC, sizeof(MAGIC));
	h.nrows = r->n;
	h.fdes = r->fdes;
	h.unsupported = r->unsupported;
	h.bidlen = bidlen;
	memcpy(h.bid, bid, bidlen);
	h.src_crc = src_crc;
	h.crc = crc_of(&h, r->rows, r->n);
	name_of(name, sizeof(name), bid, bidlen);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* a crashed writer's file of the same pid is not in the way */
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-%lx-%s", (int)getpid(), (unsigned long)ts.tv_nsec, name);
	fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = bt_write_full(fd, &h, sizeof(h));
	if (!ret)
		ret = bt_write_full(fd, r->rows, (size_t)r->n * sizeof(*r->rows));
	if (close(fd) && !ret)
		ret = -errno;
	/* No fsync: a file cut short by a crash fails its checks and is
	 * built again, which is all a cache owes. */
	struct stat old;
	int replaced = fstatat(c->dirfd, name, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
	if (!ret && renameat(c->dirfd, tmp, c->dirfd, name))
		ret = -errno;
	if (ret) {
		unlinkat(c->dirfd, tmp, 0);
	} else {
		c->total += size;
		if (replaced && is_table_name(name) && old.st_uid == geteuid())
			c->total -= (uint64_t)old.st_size < c->total ? (uint64_t)old.st_size : c->total;
	}
	return ret;
}

int bt_unwind_cache_store(struct bt_unwind_cache *c, const uint8_t *bid, uint32_t bidlen, uint32_t src_crc,
			  const struct bt_unwind_rows *r)
{
	int ret = store(c, bid, bidlen, src_crc, r);

	/* -EINVAL: nothing to store (no build-id, no rows), not a failure */
	if (ret && ret != -EINVAL && c) {
		atomic_fetch_add(&c->store_failed, 1);
		atomic_store(&c->last_err, -ret);
	}
	return ret;
}

uint64_t bt_unwind_cache_failures(const struct bt_unwind_cache *c, int *last_err)
{
	if (last_err)
		*last_err = c ? atomic_load(&c->last_err) : 0;
	return c ? atomic_load(&c->store_failed) : 0;
}
