// SPDX-License-Identifier: MIT
/*
 * symbol_cache.c - symbols and DWARF of the stack table's files, loaded
 * in the background (see symbol_cache.h).
 *
 * Locking: `lock` guards the entries, the map-id index and the counters.
 * The thread takes it to pick a file and to publish or evict one, never
 * while reading a file, and for one source-line lookup at a time (see
 * warm_lines); a dump holds it for its lookups, so an entry it got is
 * neither evicted nor freed under it. Entries are keyed by
 * build-id (device and inode for files without one): two processes, or two
 * paths, of one build share one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "debug_file.h"
#include "dwarf_lines.h"
#include "elf_symbols.h"
#include "kallsyms.h"
#include "prefault.h"
#include "stack_table.h"
#include "symbol_cache.h"
#include "trusted_file.h"
#include "util.h"

#define POLL_MS 2000 /* the longest sleep: the drain wakes it for new work (stack_table.h) */
#define WARM_BATCH 512      /* new frames taken from the table at a time */
#define WARM_PASS_NS 20000000ull /* ... and looked up for this long at most, between loads */
#define WARM_SLOTS (1u << 17) /* addresses remembered as resolved (1 MiB; forgotten when 3/4 full) */
#define PEND_MAX 65536u     /* frames kept back until their file is loaded */

enum { E_QUEUED, E_LOADING, E_READY, E_FAILED, E_EVICTED };

struct entry {
	uint8_t build_id[BT_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t dev, ino;
	uint32_t map; /* a map id to read it through */
	int state;
	struct bt_symfile f;
	uint64_t bytes;    /* estimated memory it holds */
	uint64_t cap;      /* the most it is charged: see charge_cap() */
	uint64_t last_use; /* `stamp` of the last dump that used it */
};

struct bt_symcache {
	struct bt_stack_table *t;
	char *debug_dirs;
	int source_lines;
	uint64_t max_bytes;

	pthread_mutex_t lock;
	pthread_cond_t cond;  /* the thread's: a poll is due, or quit */
	pthread_cond_t idle;  /* settle's: a file was published, or nothing is left to load */
	_Atomic pid_t tid;    /* the thread's (raised to a dump's priority while it is written) */
	int boosted;          /* bt_symcache_boost's depth: its callers are serialized (one dump at a time) */
	int quit;
	int kicked; /* the drain saw new work since the thread last looked */
	struct entry *e;
	size_t ne, cap;
	uint32_t *by_map; /* [map id - 1]: entry index + 1, 0 not seen yet (or waiting) */
	size_t nmap;
	uint32_t *waiting; /* map ids no frame has landed in yet (the thread's only) */
	size_t nwaiting, capwaiting;
	size_t tried_seen; /* the table's tried count every waiting id was checked at */
	struct bt_kallsyms *ks;
	int ks_tried;
	uint64_t stamp, bytes, loaded, failed, evicted;
	/* source lines resolved ahead of the dumps (warm_lines) */
	uint64_t *warmed;          /* (map, off) keys looked up; 0 empty (the thread's) */
	size_t nwarmed;
	struct bt_frame_ref *pend; /* frames whose file is not loaded yet (the thread's) */
	size_t npend;
	uint64_t lines_ahead, lines_dropped; /* under lock */
	uint64_t dump_units, hold_units;     /* under lock: units dumps decoded themselves */
	uint64_t table_dropped;              /* the table's dropped count last seen */
	size_t trimmed_free;                 /* free heap after the last trim (the thread's) */
	_Atomic int want;                    /* dumps waiting for or holding the lock */
	pthread_t th;
};

static void elf_drop(struct bt_elf_file *ef)
{
	if (ef) {
		bt_elf_free(ef);
		free(ef);
	}
}

static void symfile_free(struct bt_symfile *f)
{
	elf_drop(f->ef);
	elf_drop(f->dbg);
	bt_dwarf_close(f->dw);
	memset(f, 0, sizeof(*f));
}

static struct bt_elf_file *try_load(const char *attach, const char *path)
{
	struct bt_elf_file *ef = calloc(1, sizeof(*ef));
	char *err = NULL;

	if (ef && bt_elf_load(attach, path, ef, &err) == 0)
		return ef;
	free(err);
	elf_drop(ef);
	return NULL;
}

/* A descriptor of m's file: fd (the recorder's copy), else the path if it
 * is still the same regular file (never a FIFO or a device) with the
 * captured build. -1 if neither. The caller closes it. */
static int open_map(const struct bt_dump_map *m, int fd)
{
	struct stat st;

	if (fd >= 0)
		return fd;
	if (m->path[0] != '/') /* "[vdso]": its copy or nothing */
		return -1;
	if ((fd = bt_open_regular(m->path)) < 0)
		return -1;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != m->ino ||
	    (m->build_id_len && !bt_elf_build_id_is(fd, m->build_id, m->build_id_len))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Memory in use by malloc now (the loads' cost is measured as its growth).
 * Every thread's: what other threads allocate meanwhile is charged too,
 * and a table build beside a slow load (~600 MiB for a binary of 4 M
 * FDEs) made a 4 MiB file look 600 MiB and closed every other file for
 * room (their frames unnamed in the next dump): charge_cap() bounds it. */
static uint64_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Free heap kept for the next loads. What loads free goes back to the
 * system past it: trimming after every load handed back pages the next
 * load faulted in again, a third of the loader's CPU in a VM (a first
 * touch there costs ~7 us a page). */
#define TRIM_SLACK (8u << 20)

static void trim_heap(struct bt_symcache *c)
{
	/* Measured from the last trim's: a trim hands back the pages of free
	 * chunks inside the heap but keeps them free, so fordblks stays up;
	 * growth past it is what the loads freed since. */
	size_t f = mallinfo2().fordblks;

	if (f > c->trimmed_free + TRIM_SLACK) {
		malloc_trim(0);
		c->trimmed_free = mallinfo2().fordblks;
	} else if (f < c->trimmed_free) {
		c->trimmed_free = f;
	}
}

/* The most a file is charged, for a load and its units' decoding: a
 * multiple of the bytes its files hold on disk (loads measured on Debian's
 * binaries, symbols and DWARF: 1-1.5x; at 2x the bound did not bind on
 * a quiet machine). */
static uint64_t charge_cap(uint64_t file_bytes)
{
	return 2 * file_bytes + (1u << 20);
}

/* The recorder is stopping: a load in progress gives up between its steps
 * (the final dump is written; nothing will look the file up). */
static int quitting(struct bt_symcache *c)
{
	pthread_mutex_lock(&c->lock);
	int q = c->quit;
	pthread_mutex_unlock(&c->lock);
	return q;
}

/* Read map id `map`'s file: its symbols, its separate debug file's if it is
 * stripped, its DWARF. Slow (tens of MB for big binaries): no lock held. */
static int load(struct bt_symcache *c, uint32_t map, struct bt_symfile *f, uint64_t *bytes, uint64_t *cap)
{
	char path[PATH_MAX], attach[64], *found = NULL;
	struct bt_dump_map m;
	uint64_t h0 = heap_bytes(), h1, on_disk = 0;
	struct stat st;
	int kept, fd, dfd;

	memset(f, 0, sizeof(*f));
	if (bt_stack_table_map_copy(c->t, map, &m, path, sizeof(path), &kept) || (fd = open_map(&m, kept)) < 0)
		return -1;
	if (fstat(fd, &st) == 0)
		on_disk += (uint64_t)st.st_size;
	snprintf(attach, sizeof(attach), "/proc/self/fd/%d", fd);
	f->ef = try_load(attach, m.path);
	if (quitting(c)) {
		close(fd);
		return -1;
	}
	/* Stripped: the separate debug file's symbols (by build-id). */
	dfd = f->ef && !f->ef->has_symtab && m.build_id_len
		      ? bt_debug_file_open(m.path, m.build_id, m.build_id_len, NULL, 0, c->debug_dirs, &found)
		      : -1;
	if (dfd >= 0) {
		if (fstat(dfd, &st) == 0)
			on_disk += (uint64_t)st.st_size;
		snprintf(attach, sizeof(attach), "/proc/self/fd/%d", dfd);
		f->dbg = try_load(attach, found);
		close(dfd);
	}
	free(found);
	if (f->ef && c->source_lines && !quitting(c))
		f->dw = bt_dwarf_open(fd, m.path, m.build_id, m.build_id_len, c->debug_dirs);
	close(fd);
	if (quitting(c))
		return -1;
	/* The address index is built on first lookup: build it here, not in a dump. */
	if (f->ef)
		bt_elf_func_at_vaddr(f->ef, 0);
	if (f->dbg)
		bt_elf_func_at_vaddr(f->dbg, 0);
	h1 = heap_bytes();
	*cap = charge_cap(on_disk + bt_dwarf_debug_bytes(f->dw));
	*bytes = h1 > h0 + 4096 ? h1 - h0 : 4096;
	if (*bytes > *cap)
		*bytes = *cap;
	return f->ef ? 0 : -1;
}

static int same_file(const struct entry *e, const struct bt_dump_map *m)
{
	if (e->build_id_len || m->build_id_len)
		return e->build_id_len == m->build_id_len && memcmp(e->build_id, m->build_id, m->build_id_len) == 0;
	return e->dev == m->dev && e->ino == m->ino;
}

/* Under lock: the entry of m (map id map), added queued if new. -1 out of memory. */
static long entry_of(struct bt_symcache *c, const struct bt_dump_map *m, uint32_t map)
{
	for (size_t i = 0; i < c->ne; i++)
		if (same_file(&c->e[i], m))
			return (long)i;
	if (c->ne == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void *p = realloc(c->e, cap * sizeof(*c->e));
		if (!p)
			return -1;
		c->e = p;
		c->cap = cap;
	}
	struct entry *e = &c->e[c->ne];
	memset(e, 0, sizeof(*e));
	memcpy(e->build_id, m->build_id, sizeof(e->build_id));
	e->build_id_len = m->build_id_len;
	e->dev = m->dev;
	e->ino = m->ino;
	e->map = map;
	e->state = E_QUEUED;
	return (long)c->ne++;
}

/* Map id `map` (copied in m) gets its entry, queued if new. -1 out of memory. */
static int add_map(struct bt_symcache *c, uint32_t map, const struct bt_dump_map *m)
{
	pthread_mutex_lock(&c->lock);
	long i = entry_of(c, m, map);
	if (i >= 0)
		c->by_map[map - 1] = (uint32_t)i + 1;
	pthread_mutex_unlock(&c->lock);
	return i < 0 ? -1 : 0;
}

/* Map id `map` is looked at again once a frame lands in its file. */
static int add_waiting(struct bt_symcache *c, uint32_t map)
{
	if (c->nwaiting == c->capwaiting) {
		size_t cap = c->capwaiting ? 2 * c->capwaiting : 64;
		uint32_t *p = realloc(c->waiting, cap * sizeof(*p));
		if (!p)
			return -1;
		c->waiting = p;
		c->capwaiting = cap;
	}
	c->waiting[c->nwaiting++] = map;
	return 0;
}

/* New map ids of the table get their entry once a frame has landed in
 * their file. Until then they wait: reading a process's maps names every
 * library it mapped, most never hold a frame, and one not opened yet could
 * only be read by its path, which may be deleted (or name another file)
 * before its first frame opens the very inode. The table's lock and ours
 * are taken in turn, never one inside the other. */
static void scan_maps(struct bt_symcache *c)
{
	size_t tried, n = bt_stack_table_nmaps(c->t, &tried);
	char path[PATH_MAX];
	struct bt_dump_map m;
	int fd, r, oom = 0;

	for (size_t map = c->nmap + 1; map <= n; map++) {
		pthread_mutex_lock(&c->lock);
		uint32_t *p = realloc(c->by_map, map * sizeof(*p));
		if (p) {
			c->by_map = p;
			p[map - 1] = 0;
		}
		pthread_mutex_unlock(&c->lock);
		if (!p)
			return; /* out of memory: tried again at the next poll */
		r = bt_stack_table_map_copy(c->t, (uint32_t)map, &m, path, sizeof(path), &fd);
		if (r == -EAGAIN) {
			if (add_waiting(c, (uint32_t)map))
				return;
		} else if (r) {
			return;
		} else {
			if (fd >= 0)
				close(fd);
			if (add_map(c, (uint32_t)map, &m))
				return;
		}
		pthread_mutex_lock(&c->lock);
		c->nmap = map;
		pthread_mutex_unlock(&c->lock);
	}
	if (tried == c->tried_seen)
		return;
	size_t nt = bt_stack_table_tried_first(c->t, c->waiting, c->nwaiting), k = 0;
	for (size_t i = 0; i < nt; i++) {
		uint32_t map = c->waiting[i];

		if (bt_stack_table_map_copy(c->t, map, &m, path, sizeof(path), &fd) == 0) {
			if (fd >= 0)
				close(fd);
			if (add_map(c, map, &m) == 0)
				continue;
			oom = 1;
		}
		c->waiting[k++] = map;
	}
	/* the ones still without a frame follow those kept */
	memmove(c->waiting + k, c->waiting + nt, (c->nwaiting - nt) * sizeof(*c->waiting));
	c->nwaiting = k + (c->nwaiting - nt);
	if (!oom) {
		pthread_mutex_lock(&c->lock);
		c->tried_seen = tried;
		pthread_mutex_unlock(&c->lock);
	}
}

/* Under lock: close least recently used files until within the bound
 * (never `keep`, the one just loaded). */
static void evict(struct bt_symcache *c, size_t keep)
{
	while (c->bytes > c->max_bytes) {
		size_t v = SIZE_MAX;

		for (size_t i = 0; i < c->ne; i++)
			if (i != keep && c->e[i].state == E_READY && (v == SIZE_MAX || c->e[i].last_use < c->e[v].last_use))
				v = i;
		if (v == SIZE_MAX)
			return;
		symfile_free(&c->e[v].f);
		c->bytes -= c->e[v].bytes;
		c->e[v].bytes = 0;
		c->e[v].state = E_EVICTED;
		c->evicted++;
	}
}

/* ---- source lines ahead of the dumps ----------------------------------------
 * A frame's source lines cost DWARF work the first time its unit is met
 * (its line table and functions decoded, its pages read): done here, at
 * the loader's priority, for the user frames of new stacks once their file
 * is loaded, so that a dump only searches what is decoded. Best effort: a
 * dump still decodes what is not (within its time bound). The lookups hold
 * the lock (a dump's share the decoder), one at a time, and give way to a
 * dump that wants it (`want`); a pass does a bounded amount, then the
 * thread goes back to the files, so a flood of new stacks cannot keep it
 * from loading them. What a unit's decoding allocates counts against
 * --symbol-cache. */

static int warmed_add(struct bt_symcache *c, uint64_t key)
{
	if (!c->warmed)
		return 0; /* not allocated: no source lines, or no memory at the start */
	if (c->nwarmed >= WARM_SLOTS / 4 * 3) { /* full: forget (a lookup again costs little) */
		memset(c->warmed, 0, WARM_SLOTS * sizeof(*c->warmed));
		c->nwarmed = 0;
	}
	uint32_t i = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 47) & (WARM_SLOTS - 1);
	while (c->warmed[i]) {
		if (c->warmed[i] == key)
			return 0;
		i = (i + 1) & (WARM_SLOTS - 1);
	}
	c->warmed[i] = key;
	c->nwarmed++;
	return 1;
}

/* A dump waits for the lock: the lookups stop for it. Relaxed: a hint,
 * the lock orders what matters (pairs with bt_symcache_hold/release). */
static int dump_wants(struct bt_symcache *c)
{
	return atomic_load_explicit(&c->want, memory_order_relaxed) != 0;
}

/* One frame: looked up in its file's DWARF, or kept back while its file
 * is not loaded. */
static void warm_one(struct bt_symcache *c, const struct bt_frame_ref *fr)
{
	uint64_t key = ((uint64_t)fr->map << 40) | (fr->off & ((1ull << 40) - 1)), vaddr, entry;
	struct bt_src_line out[16];

	pthread_mutex_lock(&c->lock);
	uint32_t ei = fr->map >= 1 && fr->map <= c->nmap ? c->by_map[fr->map - 1] : 0;
	struct entry *e = ei ? &c->e[ei - 1] : NULL;
	if (!e || e->state == E_QUEUED || e->state == E_LOADING) {
		if (c->npend < PEND_MAX)
			c->pend[c->npend++] = *fr;
		else
			c->lines_dropped++;
	} else if (e->state == E_READY && e->f.ef && e->f.dw && warmed_add(c, key) &&
		   bt_elf_offset_to_vaddr(e->f.ef, fr->off, &vaddr) == 0) {
		/* Memory is measured only around a unit's first lookup: mallinfo2
		 * walks the heap (24 us on a fragmented one), a search does not
		 * allocate. */
		int cold = !bt_dwarf_decoded_at(e->f.dw, vaddr);
		uint64_t u0 = bt_dwarf_units_indexed(e->f.dw), h0 = cold ? heap_bytes() : 0;

		bt_dwarf_lookup(e->f.dw, vaddr, out, 16, &entry);
		c->lines_ahead++;
		if (cold && bt_dwarf_units_indexed(e->f.dw) != u0) { /* a unit decoded: its memory is the file's */
			uint64_t h1 = heap_bytes(), grew = h1 > h0 ? h1 - h0 : 0;

			if (grew > e->cap - e->bytes) /* e->bytes <= e->cap: see load() */
				grew = e->cap - e->bytes;
			e->bytes += grew;
			c->bytes += grew;
			evict(c, ei - 1);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/* The frames kept back, then the table's new ones: for WARM_PASS_NS at
 * most, or until a dump wants the lock or the recorder stops. 1 if frames
 * are left. */
static int warm_lines(struct bt_symcache *c)
{
	struct bt_frame_ref fr[WARM_BATCH];
	size_t n, left = 0;
	uint64_t dropped, end = bt_now_ns() + WARM_PASS_NS;

	if (!c->pend && !(c->pend = malloc(PEND_MAX * sizeof(*c->pend))))
		return 0;
	n = c->npend;
	c->npend = 0;
	for (size_t i = 0; i < n; i++) { /* kept back again if still not loaded */
		if (dump_wants(c) || quitting(c)) { /* the rest stays kept back */
			memmove(c->pend + c->npend, c->pend + i, (n - i) * sizeof(*c->pend));
			c->npend += n - i;
			return 1;
		}
		warm_one(c, &c->pend[i]);
	}
	do {
		if (dump_wants(c) || quitting(c))
			return 1;
		n = bt_stack_table_take_frames(c->t, fr, WARM_BATCH, &left, &dropped);
		for (size_t i = 0; i < n; i++)
			warm_one(c, &fr[i]);
		pthread_mutex_lock(&c->lock);
		c->lines_dropped += dropped - c->table_dropped;
		c->table_dropped = dropped;
		pthread_mutex_unlock(&c->lock);
	} while (left && bt_now_ns() < end);
	return left != 0;
}

/* Under lock: units decoded in every loaded file so far. */
static uint64_t units_indexed(struct bt_symcache *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < c->ne; i++)
		if (c->e[i].state == E_READY)
			n += bt_dwarf_units_indexed(c->e[i].f.dw);
	return n;
}

/* Under lock: the thread has nothing left (every file of the table that
 * holds a frame seen and tried, kallsyms tried once stacks exist). */
static int caught_up(struct bt_symcache *c)
{
	struct bt_stack_counts sc;
	size_t tried;

	if (c->nmap < bt_stack_table_nmaps(c->t, &tried) || tried != c->tried_seen)
		return 0;
	bt_stack_table_counts(c->t, &sc);
	if (sc.stacks && !c->ks_tried)
		return 0;
	for (size_t i = 0; i < c->ne; i++)
		if (c->e[i].state == E_QUEUED || c->e[i].state == E_LOADING)
			return 0;
	return 1;
}

/* Lowest priority: the loads use CPU time the machine's work leaves. Nice
 * 19, not SCHED_IDLE: under a load of several tasks per CPU an idle-class
 * thread may not run for minutes, and the dumps would never get names. */
static void lowest_priority(void)
{
	bt_thread_nice(19, "symbol loader");
}

static void *loader_main(void *arg)
{
	struct bt_symcache *c = arg;

	pthread_setname_np(pthread_self(), "btrace-symbols");
	lowest_priority();
	/* After the nice 19 above, which must not undo a raise. Relaxed: an
	 * id, read by bt_symcache_boost; a load that misses it (0) only
	 * skips the raise. */
	atomic_store_explicit(&c->tid, (pid_t)syscall(SYS_gettid), memory_order_relaxed);
	for (;;) {
		struct bt_symfile f;
		uint64_t bytes = 0, cap = 0, nstacks;
		struct bt_stack_counts sc;
		size_t pick = SIZE_MAX;
		int ks_due;

		/* kallsyms once stacks arrive: the recorder's programs (which
		 * head every stack from a tracepoint) are loaded by then */
		bt_stack_table_counts(c->t, &sc);
		nstacks = sc.stacks;
		pthread_mutex_lock(&c->lock);
		ks_due = !c->ks_tried && nstacks && !c->quit;
		pthread_mutex_unlock(&c->lock);
		if (ks_due) {
			struct bt_kallsyms *ks = bt_kallsyms_load();

			if (!ks)
				bt_warn("cannot read kernel symbols (/proc/kallsyms: %s): kernel frames show addresses",
					strerror(errno));
			pthread_mutex_lock(&c->lock);
			c->ks = ks;
			c->ks_tried = 1;
			pthread_mutex_unlock(&c->lock);
		}
		scan_maps(c);
		pthread_mutex_lock(&c->lock);
		if (c->quit) { /* the files still queued are not needed any more */
			pthread_mutex_unlock(&c->lock);
			break;
		}
		for (size_t i = 0; i < c->ne && pick == SIZE_MAX; i++)
			if (c->e[i].state == E_QUEUED)
				pick = i;
		if (pick == SIZE_MAX) {
			struct timespec ts;

			int more = 0;

			if (c->source_lines) { /* nothing to load: the new frames' lines */
				pthread_mutex_unlock(&c->lock);
				more = warm_lines(c);
				pthread_mutex_lock(&c->lock);
			}
			if (caught_up(c)) /* settle returns, frames left or not */
				pthread_cond_broadcast(&c->idle);
			int queued = 0;
			for (size_t i = 0; i < c->ne && !queued; i++)
				queued = c->e[i].state == E_QUEUED;
			/* frames left, or a file queued since (a dump's wanted
			 * again): no wait, unless a dump wants the lock */
			if (c->source_lines && (more || queued) && !c->quit && !dump_wants(c)) {
				pthread_mutex_unlock(&c->lock);
				continue;
			}
			if (c->quit) {
				pthread_mutex_unlock(&c->lock);
				break;
			}
			if (c->kicked) { /* new work came while this pass ran */
				c->kicked = 0;
				pthread_mutex_unlock(&c->lock);
				continue;
			}
			bt_deadline_after(CLOCK_MONOTONIC, POLL_MS * 1000000ull, &ts);
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
			c->kicked = 0; /* this pass looks at it */
			int q = c->quit;
			pthread_mutex_unlock(&c->lock);
			if (q)
				break;
			continue;
		}
		uint32_t map = c->e[pick].map;
		c->e[pick].state = E_LOADING;
		pthread_mutex_unlock(&c->lock);

		int r = load(c, map, &f, &bytes, &cap);

		pthread_mutex_lock(&c->lock);
		struct entry *e = &c->e[pick]; /* the array may have moved */
		if (r) {
			symfile_free(&f);
			e->state = E_FAILED;
			c->failed++;
		} else {
			e->f = f;
			e->bytes = bytes;
			e->cap = cap;
			e->last_use = c->stamp;
			e->state = E_READY;
			c->bytes += bytes;
			c->loaded++;
			evict(c, pick);
		}
		pthread_cond_broadcast(&c->idle);
		pthread_mutex_unlock(&c->lock);
		trim_heap(c);
	}
	return NULL;
}

/* The drain, after a pass with new frames or files: never waits (a dump
 * holds the lock for its whole length); 0 tells it to try again. A wake
 * every 100 ms cost ~115 us each in a VM, 0.12% of a CPU on an idle
 * machine, with nothing to do. */
static int wake_loader(void *arg)
{
	struct bt_symcache *c = arg;

	if (pthread_mutex_trylock(&c->lock))
		return 0;
	c->kicked = 1;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 1;
}

struct bt_symcache *bt_symcache_new(struct bt_stack_table *t, const char *debug_dirs, int source_lines,
				    uint64_t max_bytes)
{
	struct bt_symcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->t = t;
	c->source_lines = source_lines;
	/* Backed now, at the start: its slots are read before they are
	 * written, and each first read of a fresh page maps the zero page,
	 * whose first write then flushes the TLB on every CPU the recorder
	 * ran on. On a VM that was 25-40 ms of this thread, and IPIs to the
	 * traced CPUs, whenever a new program's frames came in. */
	if (source_lines && (c->warmed = calloc(WARM_SLOTS, sizeof(*c->warmed))))
		bt_prefault(c->warmed, WARM_SLOTS * sizeof(*c->warmed));
	c->max_bytes = max_bytes ? max_bytes : BT_SYMCACHE_DEFAULT_BYTES;
	if (debug_dirs && !(c->debug_dirs = strdup(debug_dirs))) {
		free(c->warmed);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	bt_cond_init_monotonic(&c->cond);
	bt_cond_init_monotonic(&c->idle);
	if (pthread_create(&c->th, NULL, loader_main, c)) {
		pthread_cond_destroy(&c->idle);
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		free(c->debug_dirs);
		free(c->warmed);
		free(c);
		return NULL;
	}
	bt_stack_table_set_waker(t, wake_loader, c); /* before the drain starts */
	/* the frames whose lines are resolved ahead (without: a dump decodes
	 * them); once the thread runs, so none pile up for nobody */
	if (source_lines && bt_stack_table_keep_new_frames(t))
		bt_warn("out of memory: source lines are looked up when a dump asks");
	return c;
}

void bt_symcache_free(struct bt_symcache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->quit = 1;
	pthread_cond_signal(&c->cond);
	/* A load in progress ends at its next step; at nice 19 on a busy
	 * machine that step took 12 s of a stop (test_trigger_pressure):
	 * it finishes at the recorder's priority. */
	if (c->tid)
		setpriority(PRIO_PROCESS, (id_t)c->tid, getpriority(PRIO_PROCESS, 0));
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->th, NULL);
	bt_stack_table_set_waker(c->t, NULL, NULL); /* the drain is gone (recorder_teardown) */
	for (size_t i = 0; i < c->ne; i++)
		symfile_free(&c->e[i].f);
	bt_kallsyms_free(c->ks);
	free(c->e);
	free(c->by_map);
	free(c->waiting);
	free(c->warmed);
	free(c->pend);
	free(c->debug_dirs);
	pthread_cond_destroy(&c->idle);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int bt_symcache_settle(struct bt_symcache *c, unsigned timeout_ms)
{
	struct timespec dl;
	int r = 0;

	if (!timeout_ms)
		return 0;
	bt_deadline_after(CLOCK_MONOTONIC, timeout_ms * 1000000ull, &dl);
	/* The loads a dump waits for run at the waiting thread's priority. */
	bt_symcache_boost(c, 1);
	pthread_mutex_lock(&c->lock);
	pthread_cond_signal(&c->cond);
	while (!caught_up(c) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&c->idle, &c->lock, &dl);
	r = caught_up(c) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&c->lock);
	bt_symcache_boost(c, 0);
	return r;
}

void bt_symcache_boost(struct bt_symcache *c, int on)
{
	/* Relaxed: pairs with the store in loader_main (an id only). */
	pid_t tid = atomic_load_explicit(&c->tid, memory_order_relaxed);

	if (on ? c->boosted++ : --c->boosted)
		return; /* nested: the outermost call sets and restores */
	if (tid)
		setpriority(PRIO_PROCESS, (id_t)tid, on ? getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)) : 19);
}

void bt_symcache_hold(struct bt_symcache *c)
{
	/* Relaxed: a hint to the lookups ahead (dump_wants), which give way. */
	atomic_fetch_add_explicit(&c->want, 1, memory_order_relaxed);
	pthread_mutex_lock(&c->lock);
	c->stamp++;
	c->hold_units = units_indexed(c);
}

void bt_symcache_release(struct bt_symcache *c)
{
	c->dump_units += units_indexed(c) - c->hold_units; /* nothing is evicted under the hold */
	c->kicked = 1; /* the loader gave way to the dump (dump_wants) and may have work left */
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_sub_explicit(&c->want, 1, memory_order_relaxed); /* pairs with bt_symcache_hold */
}

int bt_symcache_get(struct bt_symcache *c, uint32_t map, const struct bt_symfile **out)
{
	struct entry *e;

	if (map < 1 || map > c->nmap || !c->by_map[map - 1])
		return 0; /* not seen by the thread yet */
	e = &c->e[c->by_map[map - 1] - 1];
	switch (e->state) {
	case E_READY:
		e->last_use = c->stamp;
		*out = &e->f;
		return 1;
	case E_FAILED:
		return -1;
	case E_EVICTED:
		e->state = E_QUEUED; /* wanted again: loaded for the next dump */
		c->kicked = 1;
		pthread_cond_signal(&c->cond);
		return 0;
	default:
		return 0;
	}
}

struct bt_kallsyms *bt_symcache_kallsyms(struct bt_symcache *c, int *pending)
{
	*pending = !c->ks_tried;
	return c->ks;
}

void bt_symcache_stats(struct bt_symcache *c, struct bt_symcache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = (struct bt_symcache_stats){ c->ne, c->loaded, c->failed, c->evicted, c->bytes, c->max_bytes,
					   c->lines_ahead, c->dump_units, c->lines_dropped };
	pthread_mutex_unlock(&c->lock);
}
