// SPDX-License-Identifier: MIT
/*
 * unwind_procs.c - binaries' unwind tables and processes' mappings for the
 * BPF unwinder (see unwind_procs.h).
 *
 * Rows are appended to the mmap'ed array and never moved or freed: a
 * binary's run stays valid for every process naming it, so the BPF side
 * needs no lock. The bound is --unwind-mem; past it a binary gets no table
 * (its frames follow frame pointers, counted on both sides). A process's
 * entry is written whole with one map update after its rows are in place.
 */
#include <bpf/bpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "debug_file.h"
#include "unwind_cache.h"
#include "unwind_procs.h"
#include "unwind_table.h"
#include "elf_symbols.h"
#include "trusted_file.h"
#include "util.h"

#define POLL_NS 10000000ull      /* requests looked at every 10 ms without want_seq */
#define KICK_WAIT_NS 1000000000ull /* with it, at most this long between looks without a kick */
#define RELOAD_NS 100000000ull   /* a process re-read at most every 100 ms */
#define MAX_PHDRS 8
#define RECENT_SLOTS 4096u

struct bin {
	uint64_t dev, ino;
	uint8_t build_id[BT_BUILD_ID_MAX];
	uint32_t build_id_len; /* 0: none, or the file is not trusted (see bin_get) */
	uint32_t src_crc;      /* bt_unwind_source_crc: shared by build-id only if this agrees too */
	uint32_t first, count, kind; /* as in struct bt_unwind_map */
	uint32_t nph;
	struct { uint64_t off, vaddr, filesz; } ph[MAX_PHDRS]; /* executable PT_LOADs */
};

struct bt_unwinder {
	int rows_fd, procs_fd, want_fd;
	struct bt_unwind_cache *cache; /* tables on disk by build-id; NULL: none */
	const uint64_t *want_seq; /* the BPF side's request count (.bss), NULL: none */
	uint64_t start_ns;
	struct bt_unwind_row *rows; /* mmap of rows_fd */
	uint32_t max_rows;
	pthread_t thread;
	int started;
	pthread_mutex_t lock; /* stats, ready, kicked */
	pthread_cond_t cond;
	pthread_cond_t wake;  /* kicked or stop, for the worker */
	int kicked;
	uint64_t kicked_seq;  /* the kicking thread's */
	atomic_int stop; /* set by bt_unwinder_stop; polled by the worker, also inside a table's build */
	int ready;
	struct bt_unwinder_stats st;
	/* worker thread only */
	struct bin *bins;
	size_t nbins, cap;
	struct bin vdso;
	int have_vdso;
	struct { uint32_t tgid; uint64_t ns; } recent[RECENT_SLOTS];
	struct bt_unwind_proc proc; /* scratch */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Rows of elf (from the cache if it has this build) into the array, and
 * its executable segments. */
static void bin_build(struct bt_unwinder *u, struct bin *b, Elf *elf)
{
	struct bt_unwind_rows r;
	size_t nph = 0;
	GElf_Phdr ph;
	uint64_t t0 = now_ns(), hit = 0, stored = 0, bad = 0;
	int ret;

	b->kind = BT_UMAP_NOTABLE;
	if (elf_getphdrnum(elf, &nph))
		nph = 0;
	for (size_t i = 0; i < nph && b->nph < MAX_PHDRS; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			b->ph[b->nph++] = (typeof(b->ph[0])){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	ret = b->build_id_len ? bt_unwind_cache_load(u->cache, b->build_id, b->build_id_len, b->src_crc, u->max_rows, &r)
			      : -ENOENT;
	hit = !ret;
	bad = ret == -EBADMSG;
	if (ret) {
		/* Rules only in a debug file's .debug_frame (code built without
		 * unwind tables, then stripped): found by build-id. */
		int dfd = -1;
		Elf *dbg = NULL;
		if (b->build_id_len && !bt_unwind_has_debug_frame(elf) &&
		    (dfd = bt_debug_file_open(NULL, b->build_id, b->build_id_len, NULL, 0, NULL, NULL)) >= 0)
			dbg = elf_begin(dfd, ELF_C_READ, NULL);
		ret = bt_unwind_rows_build(elf, dbg, &r, &u->stop);
		if (dbg)
			elf_end(dbg);
		if (dfd >= 0)
			close(dfd);
		stored = !ret && b->build_id_len && u->cache &&
			 bt_unwind_cache_store(u->cache, b->build_id, b->build_id_len, b->src_crc, &r) == 0;
	}
	/* Only this thread writes rows and st.rows: the copy (megabytes for
	 * a big binary, faulting in the array) is made without the stats'
	 * lock, which a dump takes (bt_unwinder_stats). */
	int fits = !ret && r.n <= u->max_rows - u->st.rows;
	if (fits)
		memcpy(u->rows + u->st.rows, r.rows, r.n * sizeof(*r.rows));
	pthread_mutex_lock(&u->lock);
	u->st.cache_hits += hit;
	u->st.cache_stored += stored;
	u->st.cache_bad += bad;
	if (ret == -ECANCELED) {
		/* stopping: nothing counted */
	} else if (ret) {
		u->st.no_eh_frame++;
	} else if (!fits) {
		u->st.mem_full++;
	} else {
		b->first = (uint32_t)u->st.rows;
		b->count = r.n;
		b->kind = BT_UMAP_ROWS;
		u->st.rows += r.n;
		u->st.binaries++;
	}
	u->st.build_ns += now_ns() - t0;
	pthread_mutex_unlock(&u->lock);
	bt_unwind_rows_free(&r);
}

/* The table of the file (dev, ino) mapped at range in tgid; NULL if none can be had. */
static struct bin *bin_get(struct bt_unwinder *u, uint32_t tgid, const char *range, uint64_t dev, uint64_t ino,
			   const char *path)
{
	char mf[96];
	struct stat st;
	struct bin *b;
	Elf *elf;
	int fd;

	for (size_t i = 0; i < u->nbins; i++)
		if (u->bins[i].dev == dev && u->bins[i].ino == ino)
			return &u->bins[i];
	if (u->nbins == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		void *p = realloc(u->bins, cap * sizeof(*u->bins));
		if (!p)
			return NULL;
		u->bins = p;
		u->cap = cap;
	}
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%s", tgid, range);
	fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fd = bt_open_regular(path);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != ino) {
		close(fd);
		return NULL;
	}
	b = &u->bins[u->nbins];
	memset(b, 0, sizeof(*b));
	b->dev = dev;
	b->ino = ino;
	/* A build-id is a note anyone can write: a file is known by it only
	 * with the CRC of its call-frame information, so a program claiming
	 * libc's build-id cannot give libc its rows, in this run or through
	 * the cache on disk; and only a file no other user can have written
	 * (bt_file_root_only) is, so users' programs cannot crowd root's
	 * tables out of the cache. Others are known by device and inode,
	 * their tables compiled in each run. */
	if (bt_file_root_only(fd))
		b->build_id_len = bt_elf_build_id(fd, b->build_id, BT_BUILD_ID_MAX);
	/* Read, not mapped: another user's file may shrink under us. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	int shared = 0;
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		b->kind = BT_UMAP_NOTABLE;
		b->build_id_len = 0;
	} else if (b->build_id_len) {
		b->src_crc = bt_unwind_source_crc(elf);
		/* The same build elsewhere (another container's copy), the same
		 * call-frame information: share its rows. */
		for (size_t i = 0; i < u->nbins && !shared; i++)
			if (u->bins[i].build_id_len == b->build_id_len && u->bins[i].src_crc == b->src_crc &&
			    !memcmp(u->bins[i].build_id, b->build_id, b->build_id_len)) {
				struct bin same = u->bins[i];
				same.dev = dev;
				same.ino = ino;
				*b = same;
				shared = 1;
			}
	}
	if (elf && elf_kind(elf) == ELF_K_ELF && !shared)
		bin_build(u, b, elf);
	if (elf)
		elf_end(elf);
	close(fd);
	return &u->bins[u->nbins++];
}

/* Our own vDSO: the kernel maps the same image into every process. */
static void vdso_load(struct bt_unwinder *u)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	uint64_t len = 0;
	FILE *f;

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &s, &e) == 2 && s == base)
			len = e - s;
	}
	if (f)
		fclose(f);
	if (!len || len > (16u << 20))
		return;
	void *copy = malloc(len);
	if (!copy)
		return;
	memcpy(copy, (void *)base, len);
	Elf *elf = elf_memory(copy, len);
	if (elf) {
		bin_build(u, &u->vdso, elf);
		elf_end(elf);
		u->have_vdso = 1;
	}
	free(copy);
}

/* The ELF address of a mapping's start (file offset pgoff), or -1. */
static int64_t elf_start_of(const struct bin *b, uint64_t pgoff)
{
	for (uint32_t i = 0; i < b->nph; i++)
		if (pgoff >= b->ph[i].off - (b->ph[i].off & 0xfff) && pgoff < b->ph[i].off + b->ph[i].filesz)
			return (int64_t)(pgoff - b->ph[i].off + b->ph[i].vaddr);
	return b->nph ? -1 : (int64_t)pgoff;
}

static uint64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts); /* bpf_ktime_get_boot_ns()'s clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read tgid's executable mappings into the per-process map. 0, or -1 if
 * the process exec'd while they were read (the entry is taken back: its
 * stacks walk frame pointers until the reload its exec asked for). */
static int proc_load(struct bt_unwinder *u, uint32_t tgid)
{
	struct bt_unwind_proc *p = &u->proc;
	char path[64], line[4352];
	uint64_t dropped = 0, t0 = boot_ns(), asked;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	memset(p, 0, sizeof(*p));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], range[64];
		struct bt_unwind_map m = { 0 };
		const struct bin *b = NULL;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino,
			   &pos) < 7 || perms[2] != 'x')
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = '\0';
		if (end <= start || end - start > UINT32_MAX || start >= (1ull << 47))
			continue; /* [vsyscall], or beyond what a row holds */
		m.start = start;
		m.len = (uint32_t)(end - start);
		if (name[0] == '/' && ino) {
			snprintf(range, sizeof(range), "%llx-%llx", start, end);
			b = bin_get(u, tgid, range, ((uint64_t)maj << 20) | min, ino, name);
		} else if (strcmp(name, "[vdso]") == 0 && u->have_vdso) {
			b = &u->vdso;
			pgoff = 0;
		}
		if (b) {
			int64_t es = elf_start_of(b, pgoff);
			if (es < 0 || es > UINT32_MAX) {
				m.kind = BT_UMAP_NOTABLE;
			} else {
				m.elf_start = (uint32_t)es;
				m.first = b->first;
				m.count = b->count;
				m.kind = b->kind;
			}
		} else if (name[0] == '/') {
			m.kind = BT_UMAP_NOTABLE; /* a file we could not open */
		} else {
			m.kind = BT_UMAP_ANON; /* JIT, or a trampoline page */
		}
		if (p->n == BT_UNWIND_MAPS) {
			dropped++;
			continue;
		}
		p->m[p->n++] = m;
	}
	fclose(f);
	int r = bpf_map_update_elem(u->procs_fd, &tgid, p, BPF_ANY) ? -errno : 0;
	/* An exec since t0 (odd time, bpf/unwind_walk.bpf.h): what was read
	 * may be the old image's; its entry may have been deleted before our
	 * update. Taken back, and loaded again from its want. */
	if (!r && bpf_map_lookup_elem(u->want_fd, &tgid, &asked) == 0 && (asked & 1) && asked >= t0) {
		bpf_map_delete_elem(u->procs_fd, &tgid);
		return -1;
	}
	pthread_mutex_lock(&u->lock);
	u->st.maps_dropped += dropped;
	if (r == -E2BIG || r == -ENOMEM)
		u->st.procs_full++;
	else if (!r)
		u->st.procs++;
	pthread_mutex_unlock(&u->lock);
	return 0;
}

static uint32_t recent_slot(uint32_t tgid)
{
	return (tgid * 2654435761u) & (RECENT_SLOTS - 1);
}

static int recently_loaded(struct bt_unwinder *u, uint32_t tgid, uint64_t now)
{
	uint32_t i = recent_slot(tgid);

	if (u->recent[i].tgid == tgid && now - u->recent[i].ns < RELOAD_NS)
		return 1;
	u->recent[i].tgid = tgid;
	u->recent[i].ns = now;
	return 0;
}

/* Load tgid unless it was loaded in the last RELOAD_NS. */
static void proc_load_once(struct bt_unwinder *u, uint32_t tgid, uint64_t now)
{
	if (!recently_loaded(u, tgid, now) && proc_load(u, tgid))
		u->recent[recent_slot(tgid)].tgid = 0; /* exec'd meanwhile: its next ask is served at once */
}

static int stopping(struct bt_unwinder *u)
{
	/* relaxed: the join in bt_unwinder_stop orders everything else */
	return atomic_load_explicit(&u->stop, memory_order_relaxed);
}

/* The processes the BPF side asked for (each at most every RELOAD_NS).
 * Returns 1 if there may be more than it took. */
static int serve_wants(struct bt_unwinder *u)
{
	uint32_t keys[256], key, next, n = 0, *prev = NULL;

	while (n < 256 && bpf_map_get_next_key(u->want_fd, prev, &next) == 0) {
		keys[n++] = next;
		key = next;
		prev = &key;
	}
	uint64_t now = now_ns(), asked;
	for (uint32_t i = 0; i < n; i++) {
		/* An exec's mark alone (odd) is no request: a process is loaded
		 * once it is sampled. */
		int exec_only = bpf_map_lookup_elem(u->want_fd, &keys[i], &asked) == 0 && (asked & 1);
		bpf_map_delete_elem(u->want_fd, &keys[i]);
		if (!exec_only)
			proc_load_once(u, keys[i], now);
	}
	return n == 256;
}

/* Every process running at start; the ones being sampled go first. */
static void load_all(struct bt_unwinder *u)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d)) && !stopping(u)) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		if (!isdigit((unsigned char)de->d_name[0]) || *end || !pid || pid > UINT32_MAX)
			continue;
		serve_wants(u);
		proc_load_once(u, (uint32_t)pid, now_ns());
	}
	if (d)
		closedir(d);
}

static void *worker(void *arg)
{
	struct bt_unwinder *u = arg;
	uint64_t t0 = u->start_ns;

	vdso_load(u);
	load_all(u);
	pthread_mutex_lock(&u->lock);
	u->ready = 1;
	u->st.ready_ns = now_ns() - t0;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	uint64_t seen = 0;
	int more = 1;
	while (!stopping(u)) {
		/* Acquire: pairs with the atomic add in bt_uw_ask() and
		 * handle_unwind_exec(), made after the entry went into the map,
		 * so a bump seen means its entry is there to walk. */
		uint64_t seq = u->want_seq ? __atomic_load_n(u->want_seq, __ATOMIC_ACQUIRE) : seen + 1;

		if (seq != seen || more) {
			seen = seq;
			more = serve_wants(u);
		}
		if (more || !u->want_seq) { /* more queued than one look takes, or nothing to be kicked by */
			struct timespec ts = { 0, (long)POLL_NS };
			nanosleep(&ts, NULL);
			continue;
		}
		struct timespec dl;
		bt_deadline_after(CLOCK_MONOTONIC, KICK_WAIT_NS, &dl);
		pthread_mutex_lock(&u->lock);
		while (!u->kicked && !stopping(u))
			if (pthread_cond_timedwait(&u->wake, &u->lock, &dl) == ETIMEDOUT)
				break;
		u->kicked = 0;
		pthread_mutex_unlock(&u->lock);
	}
	return NULL;
}

struct bt_unwinder *bt_unwinder_start(int rows_fd, uint32_t max_rows, int procs_fd, int want_fd,
				      const uint64_t *want_seq, struct bt_unwind_cache *cache)
{
	struct bt_unwinder *u = calloc(1, sizeof(*u));
	int e;

	if (!u) {
		bt_unwind_cache_close(cache);
		return NULL;
	}
	u->cache = cache;
	u->start_ns = now_ns();
	u->rows_fd = rows_fd;
	u->procs_fd = procs_fd;
	u->want_fd = want_fd;
	u->want_seq = want_seq;
	u->max_rows = max_rows;
	u->st.max_rows = max_rows;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	bt_cond_init_monotonic(&u->wake);
	u->rows = mmap(NULL, (size_t)max_rows * sizeof(struct bt_unwind_row), PROT_READ | PROT_WRITE, MAP_SHARED,
		       rows_fd, 0);
	if (u->rows == MAP_FAILED) {
		e = errno;
		goto fail;
	}
	elf_version(EV_CURRENT);
	e = pthread_create(&u->thread, NULL, worker, u);
	if (e) {
		munmap(u->rows, (size_t)max_rows * sizeof(struct bt_unwind_row));
		goto fail;
	}
	u->started = 1;
	return u;
fail:
	bt_unwind_cache_close(cache);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	pthread_cond_destroy(&u->wake);
	free(u);
	errno = e;
	return NULL;
}

void bt_unwinder_stop(struct bt_unwinder *u)
{
	if (!u)
		return;
	atomic_store_explicit(&u->stop, 1, memory_order_relaxed);
	pthread_mutex_lock(&u->lock);
	pthread_cond_broadcast(&u->cond); /* a bt_unwinder_wait_ready waiter */
	pthread_cond_signal(&u->wake);    /* the worker */
	pthread_mutex_unlock(&u->lock);
	if (u->started)
		pthread_join(u->thread, NULL);
	munmap(u->rows, (size_t)u->max_rows * sizeof(struct bt_unwind_row));
	bt_unwind_cache_close(u->cache);
	free(u->bins);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	pthread_cond_destroy(&u->wake);
	free(u);
}

void bt_unwinder_kick(struct bt_unwinder *u)
{
	uint64_t seq;

	if (!u || !u->want_seq)
		return;
	/* Relaxed: only whether to wake; the worker's acquire load pairs with
	 * the BPF side's add. */
	seq = __atomic_load_n(u->want_seq, __ATOMIC_RELAXED);
	if (seq == u->kicked_seq)
		return;
	u->kicked_seq = seq;
	pthread_mutex_lock(&u->lock);
	u->kicked = 1;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
}

void bt_unwinder_stats(struct bt_unwinder *u, struct bt_unwinder_stats *s)
{
	pthread_mutex_lock(&u->lock);
	*s = u->st;
	pthread_mutex_unlock(&u->lock);
	s->run_ns = now_ns() - u->start_ns;
	/* Entries in the per-process map right now. */
	uint32_t key, next, *prev = NULL;
	uint64_t n = 0;
	while (bpf_map_get_next_key(u->procs_fd, prev, &next) == 0 && n < (1u << 20)) {
		n++;
		key = next;
		prev = &key;
	}
	s->proc_bytes = n * sizeof(struct bt_unwind_proc);
}

void bt_unwinder_wait_ready(struct bt_unwinder *u)
{
	pthread_mutex_lock(&u->lock);
	while (!u->ready && !stopping(u))
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
}
