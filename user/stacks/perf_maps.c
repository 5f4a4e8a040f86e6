// SPDX-License-Identifier: MIT
/*
 * perf_maps.c - JIT code's names from /tmp/perf-PID.map (see perf_maps.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "perf_maps.h"
#include "trusted_file.h"

#define MAX_PROCS 1024u /* processes with names kept (more: the exited go first) */
#define LOOK_BACK 64u   /* entries starting below addr looked at for one holding it */

struct pm_entry {
	uint64_t start, size;
	uint32_t name; /* offset in names */
	uint32_t seq;  /* order in the file: a later entry at the same code wins */
};

struct pm_proc {
	uint32_t tgid;
	int wanted, exited, last_read; /* last_read: exited, its file read once more */
	int64_t uid;                   /* the process's owner, when first wanted; -1 unknown */
	uint64_t gen;            /* bumped by forget: a read in flight is dropped */
	uint64_t dev, ino, done; /* the file read, and its bytes parsed so far */
	struct pm_entry *e;
	size_t n, cap, nsorted;
	char *names;
	size_t nlen, ncap;
};

struct bt_perfmaps {
	pthread_mutex_t lock;
	char dir[256];
	struct pm_proc *p;
	size_t np;
	uint64_t gen;
	struct bt_perfmap_stats st;
	/* the reader thread: wanted processes' maps while they live */
	pthread_t thread;
	pthread_cond_t cond;
	int started, quit, due; /* due: a process wanted or exited since the last pass */
};

struct bt_perfmaps *bt_perfmaps_new(const char *dir)
{
	struct bt_perfmaps *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->p = calloc(MAX_PROCS, sizeof(*pm->p));
	if (!pm->p) {
		free(pm);
		return NULL;
	}
	snprintf(pm->dir, sizeof(pm->dir), "%s", dir ? dir : "/tmp");
	pthread_mutex_init(&pm->lock, NULL);
	pthread_cond_init(&pm->cond, NULL);
	return pm;
}

/* Whether a pass has work: a live process wanted, or an exited one's last read. */
static int work_left(const struct bt_perfmaps *pm)
{
	for (size_t i = 0; i < pm->np; i++)
		if (pm->p[i].wanted && (!pm->p[i].exited || pm->p[i].last_read))
			return 1;
	return 0;
}

/* The reader: every READ_MS while a wanted process lives, at once when
 * one is wanted or exits; asleep when none is. Its own thread, so a slow
 * symbol load cannot keep it from a short-lived process's map. */
#define READ_MS 200
static void *reader_main(void *arg)
{
	struct bt_perfmaps *pm = arg;

	pthread_setname_np(pthread_self(), "btrace-perfmap");
	pthread_mutex_lock(&pm->lock);
	while (!pm->quit) {
		if (!pm->due && !work_left(pm)) {
			pthread_cond_wait(&pm->cond, &pm->lock);
			continue;
		}
		pm->due = 0;
		pthread_mutex_unlock(&pm->lock);
		bt_perfmaps_refresh(pm);
		pthread_mutex_lock(&pm->lock);
		if (pm->quit || pm->due)
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += READ_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&pm->cond, &pm->lock, &ts);
	}
	pthread_mutex_unlock(&pm->lock);
	return NULL;
}

int bt_perfmaps_start(struct bt_perfmaps *pm)
{
	int r = pthread_create(&pm->thread, NULL, reader_main, pm);
	if (r == 0)
		pm->started = 1;
	return -r;
}

static void proc_clear(struct pm_proc *p)
{
	free(p->e);
	free(p->names);
	memset(p, 0, sizeof(*p));
}

void bt_perfmaps_free(struct bt_perfmaps *pm)
{
	if (!pm)
		return;
	if (pm->started) {
		pthread_mutex_lock(&pm->lock);
		pm->quit = 1;
		pthread_cond_signal(&pm->cond);
		pthread_mutex_unlock(&pm->lock);
		pthread_join(pm->thread, NULL);
	}
	for (size_t i = 0; i < pm->np; i++)
		proc_clear(&pm->p[i]);
	free(pm->p);
	pthread_mutex_destroy(&pm->lock);
	pthread_cond_destroy(&pm->cond);
	free(pm);
}

static struct pm_proc *proc_of(struct bt_perfmaps *pm, uint32_t tgid)
{
	for (size_t i = 0; i < pm->np; i++)
		if (pm->p[i].tgid == tgid)
			return &pm->p[i];
	return NULL;
}

/* A slot for tgid: a new one, else the first exited process's. */
static struct pm_proc *proc_new(struct bt_perfmaps *pm, uint32_t tgid)
{
	struct pm_proc *p = NULL;

	if (pm->np < MAX_PROCS) {
		p = &pm->p[pm->np++];
	} else {
		for (size_t i = 0; i < pm->np && !p; i++)
			if (pm->p[i].exited)
				p = &pm->p[i];
		if (!p)
			return NULL;
		pm->st.procs -= p->n || p->done;
		pm->st.entries -= p->n;
		proc_clear(p);
	}
	p->tgid = tgid;
	p->uid = -1;
	p->gen = ++pm->gen;
	return p;
}

void bt_perfmaps_want(struct bt_perfmaps *pm, uint32_t tgid)
{
	pthread_mutex_lock(&pm->lock);
	struct pm_proc *p = proc_of(pm, tgid);
	if (!p)
		p = proc_new(pm, tgid);
	if (p && !p->exited && !p->wanted) {
		/* its owner now: the map may be read after it exits */
		char proc[32];
		struct stat ps;
		snprintf(proc, sizeof(proc), "/proc/%u", tgid);
		p->uid = stat(proc, &ps) == 0 ? (int64_t)ps.st_uid : -1;
		p->wanted = 1;
		pm->due = 1;
		pthread_cond_signal(&pm->cond);
	}
	pthread_mutex_unlock(&pm->lock);
}

void bt_perfmaps_forget(struct bt_perfmaps *pm, uint32_t tgid)
{
	pthread_mutex_lock(&pm->lock);
	struct pm_proc *p = proc_of(pm, tgid);
	if (p) {
		pm->st.procs -= p->n || p->done;
		pm->st.entries -= p->n;
		free(p->e);
		free(p->names);
		uint32_t t = p->tgid;
		memset(p, 0, sizeof(*p));
		p->tgid = t;
		p->uid = -1;
		p->gen = ++pm->gen;
	}
	pthread_mutex_unlock(&pm->lock);
}

void bt_perfmaps_exited(struct bt_perfmaps *pm, uint32_t tgid)
{
	pthread_mutex_lock(&pm->lock);
	struct pm_proc *p = proc_of(pm, tgid);
	if (p && !p->exited) {
		p->exited = 1;
		p->last_read = p->wanted; /* what it wrote before it ended */
		pm->due |= p->wanted;
		pthread_cond_signal(&pm->cond);
	}
	pthread_mutex_unlock(&pm->lock);
}

/* "HEX" (an optional 0x) into *v; the byte after it, or NULL. */
static const char *hex(const char *s, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	int n = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && n <= 16; s++, n++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (d < 0)
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (!n || n > 16)
		return NULL;
	*v = x;
	return s;
}

/* One line [s, end) into p: 0, or -1 if it is not "START SIZE name"
 * (-ENOMEM: out of memory). */
static int add_line(struct pm_proc *p, const char *s, const char *end)
{
	uint64_t start, size;
	const char *q = hex(s, end, &start);

	if (!q || q == end || *q != ' ' || !(q = hex(q + 1, end, &size)) || q == end || *q != ' ' || q + 1 == end)
		return -1;
	if (!size || start + size < start || start >= (1ull << 47))
		return -1;
	q++;
	size_t len = (size_t)(end - q) < BT_PERFMAP_NAME_MAX ? (size_t)(end - q) : BT_PERFMAP_NAME_MAX;
	if (p->n == p->cap) {
		size_t c = p->cap ? p->cap * 2 : 256;
		struct pm_entry *e = realloc(p->e, c * sizeof(*e));
		if (!e)
			return -ENOMEM;
		p->e = e;
		p->cap = c;
	}
	while (p->nlen + len + 1 > p->ncap) {
		size_t c = p->ncap ? p->ncap * 2 : 4096;
		char *n = realloc(p->names, c);
		if (!n)
			return -ENOMEM;
		p->names = n;
		p->ncap = c;
	}
	char *dst = p->names + p->nlen;
	for (size_t i = 0; i < len; i++) /* a name must not move a cursor nor end a field */
		dst[i] = (unsigned char)q[i] < 0x20 || q[i] == 0x7f ? '?' : q[i];
	dst[len] = 0;
	p->e[p->n] = (struct pm_entry){ start, size, (uint32_t)p->nlen, (uint32_t)p->n };
	p->n++;
	p->nlen += len + 1;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* What was read of a process's file, to be added under the lock. */
struct pm_read {
	uint32_t tgid;
	int64_t uid; /* the process's owner */
	uint64_t gen, dev, ino, from; /* from: the bytes parsed before; 0 with a new file */
	char *buf;
	size_t len;
	int refused, capped;
};

/* Reads tgid's file from r->from (0 if it is another file or shrank):
 * no lock held. */
static void read_map(const char *dir, struct pm_read *r)
{
	char path[320];
	struct stat st;

	snprintf(path, sizeof(path), "%s/perf-%u.map", dir, r->tgid);
	int fd = bt_open_regular_nolinks(path);
	if (fd < 0) {
		r->refused = fd == -ELOOP || fd == -ENOEXEC;
		return;
	}
	/* the process's owner wrote it, or root: not a file another user
	 * planted under its pid */
	if (fstat(fd, &st) != 0 || r->uid < 0 || ((int64_t)st.st_uid != r->uid && st.st_uid != 0)) {
		r->refused = 1;
		close(fd);
		return;
	}
	if ((uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino || (uint64_t)st.st_size < r->from)
		r->from = 0;
	r->dev = (uint64_t)st.st_dev;
	r->ino = (uint64_t)st.st_ino;
	uint64_t size = (uint64_t)st.st_size, end = size < BT_PERFMAP_MAX_BYTES ? size : BT_PERFMAP_MAX_BYTES;
	r->capped = size > BT_PERFMAP_MAX_BYTES;
	if (end > r->from && (r->buf = malloc(end - r->from))) {
		ssize_t got = pread(fd, r->buf, end - r->from, (off_t)r->from);
		r->len = got > 0 ? (size_t)got : 0;
	}
	close(fd);
}

void bt_perfmaps_refresh(struct bt_perfmaps *pm)
{
	struct pm_read *rs;
	size_t nr = 0;

	pthread_mutex_lock(&pm->lock);
	rs = calloc(pm->np ? pm->np : 1, sizeof(*rs));
	for (size_t i = 0; rs && i < pm->np; i++) {
		struct pm_proc *p = &pm->p[i];
		if (p->wanted && (!p->exited || p->last_read)) {
			rs[nr++] = (struct pm_read){ .tgid = p->tgid, .uid = p->uid, .gen = p->gen, .dev = p->dev,
						     .ino = p->ino, .from = p->done };
			p->last_read = 0;
		}
	}
	pthread_mutex_unlock(&pm->lock);
	if (!rs)
		return;
	for (size_t i = 0; i < nr; i++)
		read_map(pm->dir, &rs[i]);
	pthread_mutex_lock(&pm->lock);
	for (size_t i = 0; i < nr; i++) {
		struct pm_read *r = &rs[i];
		struct pm_proc *p = proc_of(pm, r->tgid);

		pm->st.refused += r->refused;
		if (!p || p->gen != r->gen || (!r->buf && r->from == p->done && r->dev == p->dev))
			continue; /* forgotten meanwhile, or nothing new */
		int had = p->n || p->done;
		if (!r->from) { /* another file, or it shrank: read again whole */
			pm->st.entries -= p->n;
			p->n = p->nsorted = p->nlen = 0;
		}
		p->dev = r->dev;
		p->ino = r->ino;
		p->done = r->from;
		size_t at = 0, n0 = p->n;
		for (size_t k = 0; k < r->len; k++) {
			if (r->buf[k] != '\n')
				continue;
			int a = add_line(p, r->buf + at, r->buf + k);
			if (a == -ENOMEM)
				break;
			pm->st.bad += a != 0;
			at = k + 1;
		}
		/* an unfinished last line is read again next time; one that
		 * fills the cap is not a line */
		p->done += at;
		if (r->capped && !(p->done < BT_PERFMAP_MAX_BYTES))
			pm->st.capped++;
		pm->st.entries += p->n - n0;
		pm->st.procs += !had && (p->n || p->done);
		if (p->n != p->nsorted) {
			qsort(p->e, p->n, sizeof(*p->e), by_start);
			p->nsorted = p->n;
		}
	}
	pthread_mutex_unlock(&pm->lock);
	for (size_t i = 0; i < nr; i++)
		free(rs[i].buf);
	free(rs);
}

int bt_perfmaps_find(struct bt_perfmaps *pm, uint32_t tgid, uint64_t addr, uint64_t *start, uint64_t *size,
		     char *buf, size_t len)
{
	int found = 0;

	pthread_mutex_lock(&pm->lock);
	struct pm_proc *p = proc_of(pm, tgid);
	if (p && p->n) {
		size_t lo = 0, hi = p->n; /* the first entry starting above addr */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (p->e[mid].start <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		const struct pm_entry *best = NULL;
		for (size_t k = lo, seen = 0; k-- > 0 && seen < LOOK_BACK; seen++) {
			const struct pm_entry *x = &p->e[k];
			if (addr - x->start < x->size && (!best || x->seq > best->seq))
				best = x;
		}
		if (best) {
			*start = best->start;
			*size = best->size;
			snprintf(buf, len, "%s", p->names + best->name);
			found = 1;
		}
	}
	pthread_mutex_unlock(&pm->lock);
	return found;
}

void bt_perfmaps_stats(struct bt_perfmaps *pm, struct bt_perfmap_stats *out)
{
	pthread_mutex_lock(&pm->lock);
	*out = pm->st;
	pthread_mutex_unlock(&pm->lock);
}
