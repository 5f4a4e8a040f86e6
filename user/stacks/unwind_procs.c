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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "debug_file.h"
#include "unwind_builder.h"
#include "unwind_cache.h"
#include "unwind_procs.h"
#include "unwind_table.h"
#include "elf_symbols.h"
#include "py_offsets.h"
#include "trusted_file.h"
#include "util.h"

#define POLL_NS 10000000ull      /* requests looked at every 10 ms without want_seq */
#define KICK_WAIT_NS 1000000000ull /* with it, at most this long between looks without a kick */
#define RELOAD_NS 100000000ull   /* a process re-read at most every 100 ms */
#define MAX_PHDRS 8
/* A table's build budget: a binary whose first build takes longer goes
 * (unpublished: its frames end the walk, counted) to the builder thread
 * (unwind_builder.c, nice BUILDER_NICE), which gives it SLOW_NS while this
 * thread goes on serving every other file and process; past that it is
 * refused and named. So one huge or hostile binary delays other processes'
 * tables by at most FIRST_NS. Its size budget: the rows --unwind-mem has
 * left, checked as it is built. */
#define FIRST_NS 500000000ull
#define SLOW_NS 30000000000ull
#define BUILDER_NICE 10
/* Bytes of call-frame information a binary may declare (.eh_frame,
 * .eh_frame_hdr, .debug_frame, and the segment libdw reads .eh_frame
 * from): 64 per FDE at the FDE bound; libxul's is 10 MiB. Checked before
 * any is read: a sparse file can declare gigabytes. */
#define CFI_BYTES_MAX (64ull * BT_UNWIND_MAX_FDES)
#define REFUSED_NAMED BT_UNWINDER_NAMED
#define RECENT_SLOTS 4096u

struct bin {
	uint64_t dev, ino;
	uint8_t build_id[BT_BUILD_ID_MAX];
	uint32_t build_id_len; /* 0: none, or the file is not trusted (see bin_get) */
	uint32_t src_crc;      /* bt_unwind_source_crc: shared by build-id only if this agrees too */
	uint32_t first, count, kind; /* as in struct bt_unwind_file */
	uint32_t nph;
	struct { uint64_t off, vaddr, filesz; } ph[MAX_PHDRS]; /* executable PT_LOADs */
	int slow;           /* its first build ran out of time: with the builder thread */
	int is_py;          /* a CPython interpreter: py, published in py_files */
	struct bt_py_file py;
	char *path;         /* for naming a refusal */
};

struct bt_unwinder {
	int rows_fd, procs_fd, want_fd, files_fd, fwant_fd, py_fd;
	struct bt_unwind_cache *cache; /* tables on disk by build-id; NULL: none */
	const uint64_t *want_seq; /* the BPF side's request count (.bss), NULL: none */
	uint64_t start_ns;
	struct bt_unwind_row *rows; /* rows_fd as the loader mapped it */
	uint32_t max_rows;
	pthread_t thread;
	int started;
	pthread_mutex_t lock; /* stats, ready, kicked */
	pthread_cond_t wake;  /* kicked or stop, for the worker */
	int kicked;
	uint64_t kicked_seq;  /* the kicking thread's */
	atomic_int stop; /* set by bt_unwinder_stop; polled by the worker, also inside a table's build */
	int ready;
	struct bt_unwinder_stats st; /* st.files_waiting: 1 while a table is built */
	/* worker thread only */
	struct bin *bins;
	size_t nbins, cap;
	struct bin vdso;
	int have_vdso;
	struct { uint32_t tgid; uint64_t ns; } recent[RECENT_SLOTS];
	struct bt_unwind_proc proc; /* scratch: a process's mappings as read */
	struct bt_unwind_proc peek; /* scratch: its entry as the BPF side has it (entry_gen) */
	struct bt_unwind_builder *builder; /* slow builds (any thread may kick us from it) */
	/* Paths the tables' files were opened by, for naming frames of
	 * processes gone before their maps were read (bt_unwinder_file_path):
	 * appended by the worker, read by the drain, under paths_lock. */
	pthread_mutex_t paths_lock;
	struct { uint64_t dev, ino; char *path; } *paths;
	size_t npaths, paths_cap;
};

static int stopping(struct bt_unwinder *u)
{
	/* relaxed: the join in bt_unwinder_stop orders everything else */
	return atomic_load_explicit(&u->stop, memory_order_relaxed);
}

/* A refused binary named in the stats (under u->lock). */
static void refusal_note(struct bt_unwinder *u, const struct bin *b, const char *why)
{
	struct bt_unwinder_refusal *x = &u->st.refusals[u->st.nrefusals++ % REFUSED_NAMED];

	snprintf(x->path, sizeof(x->path), "%s", b->path ? b->path : "(a file of a process gone)");
	snprintf(x->why, sizeof(x->why), "%s", why);
}

/* A table's rules the walker cannot follow, or only in the leaf frame,
 * counted and the binaries with the most named (under u->lock). */
static void unsupported_note(struct bt_unwinder *u, const struct bin *b, const struct bt_unwind_rows *r)
{
	struct bt_unwinder_unsupported x = { .ranges = r->unsupported, .leaf_rows = bt_unwind_rows_leaf_only(r) };
	const size_t n = sizeof(u->st.unsupp) / sizeof(u->st.unsupp[0]);

	u->st.unsupported += x.ranges;
	u->st.leaf_rows += x.leaf_rows;
	if (!x.ranges && !x.leaf_rows)
		return;
	u->st.unsupported_bins += x.ranges > 0;
	snprintf(x.path, sizeof(x.path), "%s", b->path ? b->path : "(a file of a process gone)");
	for (size_t i = 0; i < n; i++) {
		struct bt_unwinder_unsupported *y = &u->st.unsupp[i];
		if (y->path[0] && y->ranges + y->leaf_rows >= x.ranges + x.leaf_rows)
			continue;
		memmove(y + 1, y, (n - 1 - i) * sizeof(*y));
		*y = x;
		return;
	}
}

/* The first build's budgets, for its stop callback. */
struct first_budget {
	struct bt_unwinder *u;
	uint64_t deadline;
	uint32_t room;                     /* rows --unwind-mem has left */
	const struct bt_unwind_rows *rows; /* as the build fills it */
	int over;                          /* stopped for its size */
};

/* Whether the first build must stop: the recorder stops, its time is up
 * (then the builder thread takes it), or its rows are over the room. */
static int build_stop(void *arg)
{
	struct first_budget *g = arg;

	if (g->rows->n > g->room)
		g->over = 1;
	return g->over || stopping(g->u) || bt_now_ns() > g->deadline;
}

/* A binary that lost its table for want of rows, named. */
static void mem_full_note(struct bt_unwinder *u, const struct bin *b, uint32_t room)
{
	char why[64];

	u->st.mem_full++;
	snprintf(why, sizeof(why), "--unwind-mem full (its table is over the %u rows left)", room);
	refusal_note(u, b, why);
}

/* Rows of elf (from the cache if it has this build) into the array, and
 * its executable segments. -ECANCELED: cut short (out of time or
 * stopping), or not in the cache and cache_only; nothing counted. */
static int bin_build(struct bt_unwinder *u, struct bin *b, Elf *elf, int cache_only)
{
	struct bt_unwind_rows r = { 0 }; /* freed whatever the path: a cache miss leaves it */
	size_t nph = 0;
	GElf_Phdr ph;
	uint64_t t0 = bt_now_ns(), hit = 0, stored = 0, bad = 0;
	int ret;
	uint32_t room = u->max_rows - (uint32_t)u->st.rows; /* only this thread adds rows */
	struct first_budget g = { u, t0 + FIRST_NS, room, &r, 0 };

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
	if (ret && cache_only) {
		ret = -ECANCELED; /* for the builder thread */
	} else if (ret) {
		/* Rules only in a debug file's .debug_frame (code built without
		 * unwind tables, then stripped): found by build-id. */
		int dfd = -1;
		Elf *dbg = NULL;
		if (b->build_id_len && !bt_unwind_has_debug_frame(elf) &&
		    (dfd = bt_debug_file_open(NULL, b->build_id, b->build_id_len, NULL, 0, NULL, NULL)) >= 0)
			dbg = elf_begin(dfd, ELF_C_READ, NULL);
		ret = bt_unwind_rows_build_within(elf, dbg, &r, build_stop, &g);
		if (ret == -ECANCELED && g.over)
			ret = -E2BIG;
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
	int fits = !ret && r.n <= room;
	if (fits)
		memcpy(u->rows + u->st.rows, r.rows, r.n * sizeof(*r.rows));
	pthread_mutex_lock(&u->lock);
	u->st.cache_hits += hit;
	u->st.cache_stored += stored;
	u->st.cache_bad += bad;
	if (ret == -ECANCELED) {
		/* out of time or stopping: tried again, or refused, by the caller */
	} else if (ret == -EFBIG) {
		u->st.refused++;
		refusal_note(u, b, "more FDEs than any real program has");
	} else if (ret == -E2BIG || (!ret && !fits)) {
		mem_full_note(u, b, room);
	} else if (ret) {
		u->st.no_eh_frame++;
	} else {
		b->first = (uint32_t)u->st.rows;
		b->count = r.n;
		b->kind = BT_UMAP_FILE;
		u->st.rows += r.n;
		u->st.binaries++;
		unsupported_note(u, b, &r);
	}
	u->st.build_ns += bt_now_ns() - t0;
	pthread_mutex_unlock(&u->lock);
	bt_unwind_rows_free(&r);
	return ret == -ECANCELED ? ret : 0;
}

/* b's table where the BPF side looks it up: under (dev, ino). */
static void bin_publish(struct bt_unwinder *u, const struct bin *b)
{
	struct bt_unwind_fkey k = { .ino = b->ino, .dev = (uint32_t)b->dev };
	struct bt_unwind_file f = { .first = b->first, .count = b->count, .kind = b->kind };

	for (uint32_t i = 0; i < b->nph && f.nseg < BT_UNWIND_SEGS; i++) {
		uint64_t lo = b->ph[i].off & ~0xfffull, hi = b->ph[i].off + b->ph[i].filesz;
		if (hi > UINT32_MAX)
			continue; /* beyond what a mapping's offset holds */
		f.seg[f.nseg].lo = (uint32_t)lo;
		f.seg[f.nseg].hi = (uint32_t)hi;
		f.seg[f.nseg].delta = (int64_t)(b->ph[i].vaddr - b->ph[i].off);
		f.nseg++;
	}
	if (b->nph && !f.nseg)
		f.kind = BT_UMAP_NOTABLE;
	/* An interpreter's offsets before its table, which tells the walk to
	 * look them up. */
	if (b->is_py && u->py_fd >= 0) {
		if (bpf_map_update_elem(u->py_fd, &k, &b->py, BPF_ANY) == 0) {
			f.reserved = BT_UNWIND_FILE_PY;
		} else {
			pthread_mutex_lock(&u->lock);
			u->st.py_full++;
			pthread_mutex_unlock(&u->lock);
		}
	}
	if (u->files_fd >= 0 && bpf_map_update_elem(u->files_fd, &k, &f, BPF_ANY)) {
		pthread_mutex_lock(&u->lock);
		u->st.files_full++;
		pthread_mutex_unlock(&u->lock);
	}
}

static struct bin *bin_find(struct bt_unwinder *u, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < u->nbins; i++)
		if (u->bins[i].dev == dev && u->bins[i].ino == ino)
			return &u->bins[i];
	return NULL;
}

/* The table of the file open at fd, known to the kernel as (dev, ino):
 * built (or shared, or read from the cache) and published. Takes fd. */
static void path_keep(struct bt_unwinder *u, uint64_t dev, uint64_t ino, const char *path)
{
	char *copy;

	if (!path || path[0] != '/')
		return;
	pthread_mutex_lock(&u->paths_lock);
	for (size_t i = u->npaths; i-- > 0;)
		if (u->paths[i].dev == dev && u->paths[i].ino == ino && strcmp(u->paths[i].path, path) == 0) {
			pthread_mutex_unlock(&u->paths_lock);
			return; /* kept already */
		}
	pthread_mutex_unlock(&u->paths_lock);
	if (!(copy = strdup(path)))
		return;
	pthread_mutex_lock(&u->paths_lock);
	if (u->npaths == u->paths_cap) {
		size_t cap = u->paths_cap ? u->paths_cap * 2 : 64;
		void *p = realloc(u->paths, cap * sizeof(*u->paths));
		if (!p) {
			pthread_mutex_unlock(&u->paths_lock);
			free(copy);
			return;
		}
		u->paths = p;
		u->paths_cap = cap;
	}
	u->paths[u->npaths].dev = dev;
	u->paths[u->npaths].ino = ino;
	u->paths[u->npaths++].path = copy;
	pthread_mutex_unlock(&u->paths_lock);
}

int bt_unwinder_file_path(void *arg, uint64_t dev, uint64_t ino, char *buf, size_t size)
{
	struct bt_unwinder *u = arg;
	int r = -1;

	pthread_mutex_lock(&u->paths_lock);
	for (size_t i = u->npaths; i-- > 0 && r;)
		if (u->paths[i].dev == dev && u->paths[i].ino == ino && strlen(u->paths[i].path) < size) {
			strcpy(buf, u->paths[i].path);
			r = 0;
		}
	pthread_mutex_unlock(&u->paths_lock);
	return r;
}

/* The largest number of call-frame bytes elf makes a reader take in one
 * piece: its sections' declared sizes, PT_GNU_EH_FRAME, and the PT_LOAD
 * that holds it (libdw reads .eh_frame to that segment's end when there
 * are no section headers). */
static uint64_t cfi_declared_bytes(Elf *elf)
{
	static const char *const names[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame" };
	size_t shstrndx, nph = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Phdr ph, hdr = { 0 };
	uint64_t most = 0;
	const char *name;

	if (!elf_getshdrstrndx(elf, &shstrndx))
		while ((scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
			    (name = elf_strptr(elf, shstrndx, sh.sh_name)))
				for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
					if (!strcmp(name, names[i]) && sh.sh_size > most)
						most = sh.sh_size;
	if (elf_getphdrnum(elf, &nph))
		nph = 0;
	for (size_t i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	if (hdr.p_type == PT_GNU_EH_FRAME) {
		most = hdr.p_filesz > most ? hdr.p_filesz : most;
		for (size_t i = 0; i < nph; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && hdr.p_vaddr >= ph.p_vaddr &&
			    hdr.p_vaddr - ph.p_vaddr < ph.p_filesz && ph.p_filesz - (hdr.p_vaddr - ph.p_vaddr) > most)
				most = ph.p_filesz - (hdr.p_vaddr - ph.p_vaddr);
	}
	return most;
}

/* b (its first build out of time) to the builder thread, with the slow
 * time budget and the rows left; size: its call-frame bytes (the smallest
 * job is built first). Takes fd. 0, or -1: refused, named. */
static int slow_submit(struct bt_unwinder *u, struct bin *b, int fd, uint64_t size)
{
	struct bt_unwind_job j = { .dev = b->dev, .ino = b->ino, .fd = fd, .budget_ns = SLOW_NS,
				   .room = u->max_rows - (uint32_t)u->st.rows, .size = size };
	int r = -ENOSPC;

	memcpy(j.build_id, b->build_id, sizeof(j.build_id));
	j.build_id_len = b->build_id_len;
	if (u->builder)
		r = bt_unwind_builder_submit(u->builder, &j);
	else
		close(fd);
	pthread_mutex_lock(&u->lock);
	if (r == 0) {
		b->slow = 1;
		u->st.slow++;
	} else {
		b->kind = BT_UMAP_NOTABLE;
		u->st.refused++;
		refusal_note(u, b, "too many slow builds waiting already");
	}
	pthread_mutex_unlock(&u->lock);
	return r ? -1 : 0;
}

static struct bin *bin_add(struct bt_unwinder *u, int fd, uint64_t dev, uint64_t ino, const char *path)
{
	struct stat st;
	struct bin *b;
	Elf *elf;

	if (u->nbins == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 64;
		void *p = realloc(u->bins, cap * sizeof(*u->bins));
		if (!p) {
			close(fd);
			return NULL;
		}
		u->bins = p;
		u->cap = cap;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != ino) {
		close(fd);
		return NULL;
	}
	b = &u->bins[u->nbins];
	memset(b, 0, sizeof(*b));
	b->dev = dev;
	b->ino = ino;
	pthread_mutex_lock(&u->lock);
	u->st.files_waiting = 1;
	pthread_mutex_unlock(&u->lock);
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
	int shared = 0, big = 0;
	uint64_t cfi_bytes = 0;
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		b->kind = BT_UMAP_NOTABLE;
		b->build_id_len = 0;
	} else if ((big = (cfi_bytes = cfi_declared_bytes(elf)) > CFI_BYTES_MAX)) {
		b->kind = BT_UMAP_NOTABLE;
		b->build_id_len = 0;
	} else if ((b->is_py = bt_py_probe(elf, path, &b->py))) {
		pthread_mutex_lock(&u->lock);
		u->st.py_interps++;
		u->st.py_unknown += !b->py.known;
		pthread_mutex_unlock(&u->lock);
	}
	if (b->kind == BT_UMAP_NOTABLE) {
		/* no table */
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
	/* Own, not the shared bin's (freed with each). */
	b->path = path && path[0] == '/' ? strdup(path) : NULL;
	if (big) {
		pthread_mutex_lock(&u->lock);
		u->st.refused++;
		refusal_note(u, b, "its call-frame information declares over 256 MiB");
		pthread_mutex_unlock(&u->lock);
	}
	/* Too big to be built within the first budget (its FDEs' sort alone,
	 * before the first look at the time, would take longer): straight to
	 * the builder thread unless the cache has it. */
	if (elf && elf_kind(elf) == ELF_K_ELF && !shared && !big &&
	    bin_build(u, b, elf, cfi_bytes > BT_UNWIND_BIG_JOB) == -ECANCELED && !stopping(u)) {
		/* Out of its first budget: to the builder thread, unpublished
		 * meanwhile (serve_built publishes it). */
		elf_end(elf);
		pthread_mutex_lock(&u->lock);
		u->st.files_waiting = 0;
		pthread_mutex_unlock(&u->lock);
		if (slow_submit(u, b, fd, cfi_bytes) == 0)
			return &u->bins[u->nbins++];
		bin_publish(u, b); /* refused, named: frame pointers */
		path_keep(u, dev, ino, path);
		return &u->bins[u->nbins++];
	}
	if (elf)
		elf_end(elf);
	close(fd);
	pthread_mutex_lock(&u->lock);
	u->st.files_waiting = 0;
	pthread_mutex_unlock(&u->lock);
	if (stopping(u))
		return NULL; /* cut short: not a table */
	bin_publish(u, b);
	path_keep(u, dev, ino, path);
	return &u->bins[u->nbins++];
}

/* The table of the file (dev, ino) mapped at range in tgid; NULL if none can be had. */
static struct bin *bin_get(struct bt_unwinder *u, uint32_t tgid, const char *range, uint64_t dev, uint64_t ino,
			   const char *path)
{
	struct bin *b = bin_find(u, dev, ino);
	char mf[96];
	int fd;

	if (b)
		return b;
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%s", tgid, range);
	fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fd = bt_open_regular(path);
	if (fd < 0)
		return NULL;
	return bin_add(u, fd, dev, ino, path);
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
		bin_build(u, &u->vdso, elf, 0);
		elf_end(elf);
		u->have_vdso = 1;
		bin_publish(u, &u->vdso); /* file { 0, 0 } */
	}
	free(copy);
}

/* The BPF side's stamp of tgid's entry: its gen, or -1 without one. */
static int64_t entry_gen(struct bt_unwinder *u, uint32_t tgid)
{
	/* Not u->proc: that holds the mappings being read, between two looks. */
	struct bt_unwind_proc *p = &u->peek;

	return bpf_map_lookup_elem(u->procs_fd, &tgid, p) ? -1 : (int64_t)p->gen;
}

/* Read tgid's executable mappings into u->proc. */
static uint64_t proc_read(struct bt_unwinder *u, uint32_t tgid, FILE *f)
{
	struct bt_unwind_proc *p = &u->proc;
	char line[4352];
	uint64_t dropped = 0;

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
			continue; /* [vsyscall], or beyond what a mapping holds */
		m.start = start;
		m.len = (uint32_t)(end - start);
		if (name[0] == '/' && ino) {
			snprintf(range, sizeof(range), "%llx-%llx", start, end);
			b = bin_get(u, tgid, range, ((uint64_t)maj << 20) | min, ino, name);
		} else if (strcmp(name, "[vdso]") == 0 && u->have_vdso) {
			b = &u->vdso;
			pgoff = 0;
		}
		if (b && pgoff <= UINT32_MAX) {
			m.kind = BT_UMAP_FILE; /* its table: b's, published under (dev, ino) */
			m.off = (uint32_t)pgoff;
			m.ino = b->ino;
			m.dev = (uint32_t)b->dev;
		} else if (name[0] == '/' || b) {
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
	return dropped;
}

/* Read tgid's executable mappings into the per-process map. 0, or -1 if
 * the process exec'd while they were read (the entry is taken back: its
 * stacks walk frame pointers until the reload its exec asked for). The
 * BPF side changes entries itself (an exec, a new mapping): a read it
 * changed the entry during is made again, and one it made first is kept. */
static int proc_load(struct bt_unwinder *u, uint32_t tgid)
{
	char path[64];
	uint64_t dropped = 0, t0 = bt_boottime_ns(), asked;
	int r = 0, tries = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	for (;;) {
		int64_t gen = entry_gen(u, tgid);
		FILE *f = fopen(path, "re");

		if (!f)
			return 0;
		dropped = proc_read(u, tgid, f);
		fclose(f);
		if (entry_gen(u, tgid) == gen || ++tries == 3) {
			/* Without an entry before, only if it still has none:
			 * one the BPF side made since (an exec) is newer. */
			r = bpf_map_update_elem(u->procs_fd, &tgid, &u->proc, gen < 0 ? BPF_NOEXIST : BPF_ANY)
				    ? -errno : 0;
			break;
		}
		pthread_mutex_lock(&u->lock);
		u->st.load_races++;
		pthread_mutex_unlock(&u->lock);
	}
	if (r == -EEXIST)
		return 0;
	/* An exec since t0 (odd time, bpf/unwind_walk.bpf.h, when its hooks
	 * are not live): what was read may be the old image's; its entry may
	 * have been deleted before our update. Taken back, and loaded again
	 * from its want. */
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
	uint64_t now = bt_now_ns(), asked;
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

/* The path of a file the BPF side asked for, from its components
 * (innermost first); 0, or -1 if they do not make a whole path. */
static int fwant_path(const struct bt_unwind_fwant *w, char *out, size_t size)
{
	size_t len = 0;

	if (!w->nparts || w->nparts > BT_UNWIND_PATH_PARTS)
		return -1;
	for (uint32_t i = w->nparts; i-- > 0;) {
		size_t n = strnlen(w->part[i], BT_UNWIND_PART_LEN);
		/* A component that filled its slot may have been cut. */
		if (!n || n >= BT_UNWIND_PART_LEN - 1 || memchr(w->part[i], '/', n) || len + 1 + n + 1 > size)
			return -1;
		out[len++] = '/';
		memcpy(out + len, w->part[i], n);
		len += n;
	}
	out[len] = '\0';
	return 0;
}

/* Tables for the files the BPF side met in new mappings: opened through
 * the mapping while its process lives, else by the path it read (the
 * file checked to be the one asked for). Returns 1 if there may be more. */
static int serve_files(struct bt_unwinder *u)
{
	struct bt_unwind_fkey keys[64], next, *prev = NULL, key;
	struct bt_unwind_fwant w;
	uint32_t n = 0;

	while (n < 64 && bpf_map_get_next_key(u->fwant_fd, prev, &next) == 0) {
		keys[n++] = next;
		key = next;
		prev = &key;
	}
	for (uint32_t i = 0; i < n && !stopping(u); i++) {
		char mf[96], path[BT_UNWIND_PATH_PARTS * BT_UNWIND_PART_LEN + 2];
		int got = bpf_map_lookup_elem(u->fwant_fd, &keys[i], &w) == 0;
		struct bin *b;
		int fd = -1;

		bpf_map_delete_elem(u->fwant_fd, &keys[i]);
		if (!got)
			continue;
		pthread_mutex_lock(&u->lock);
		u->st.files_asked++;
		pthread_mutex_unlock(&u->lock);
		b = bin_find(u, keys[i].dev, keys[i].ino);
		if (b) {
			bin_publish(u, b); /* known: its entry was lost (the map full) */
			continue;
		}
		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", w.tgid, (unsigned long long)w.start,
			 (unsigned long long)w.end);
		fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			struct stat st;
			if (fstat(fd, &st) || (uint64_t)st.st_ino != keys[i].ino) {
				close(fd); /* the range was mapped again since */
				fd = -1;
			}
		}
		if (fd < 0 && fwant_path(&w, path, sizeof(path)) == 0) {
			struct stat st;
			fd = bt_open_regular(path);
			/* The kernel's dev_t is major << 20 | minor. */
			if (fd >= 0 && (fstat(fd, &st) || (uint64_t)st.st_ino != keys[i].ino ||
					(((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev)) != keys[i].dev)) {
				close(fd);
				fd = -1;
			}
		}
		if (fd >= 0 && fwant_path(&w, path, sizeof(path)))
			path[0] = '\0';
		/* Known now, before its table is: a frame of a process gone
		 * meanwhile is named through it (bt_unwinder_file_path). */
		if (fd >= 0)
			path_keep(u, keys[i].dev, keys[i].ino, path);
		if (fd < 0 || !bin_add(u, fd, keys[i].dev, keys[i].ino, path)) {
			pthread_mutex_lock(&u->lock);
			u->st.files_unopened++;
			pthread_mutex_unlock(&u->lock);
		}
	}
	return n == 64;
}

/* The builder thread's results: each table copied into the rows (only
 * this thread writes them), stored in the cache, published, for the bin
 * and every copy of the same build that waited on it; or refused, named.
 * Returns 1 if any was taken. */
static int serve_built(struct bt_unwinder *u)
{
	struct bt_unwind_built r;
	int any = 0;

	while (u->builder && bt_unwind_builder_take(u->builder, &r)) {
		struct bin *b = bin_find(u, r.dev, r.ino);
		uint32_t room = u->max_rows - (uint32_t)u->st.rows;
		int fits = !r.ret && r.rows.n <= room, stored = 0;

		any = 1;
		if (!b || !b->slow) {
			bt_unwind_rows_free(&r.rows);
			continue;
		}
		if (fits)
			memcpy(u->rows + u->st.rows, r.rows.rows, r.rows.n * sizeof(*r.rows.rows));
		if (fits && b->build_id_len && u->cache)
			stored = bt_unwind_cache_store(u->cache, b->build_id, b->build_id_len, b->src_crc, &r.rows) == 0;
		pthread_mutex_lock(&u->lock);
		u->st.build_ns += r.ns;
		u->st.cache_stored += stored;
		if (fits) {
			b->first = (uint32_t)u->st.rows;
			b->count = r.rows.n;
			b->kind = BT_UMAP_FILE;
			u->st.rows += r.rows.n;
			u->st.binaries++;
			unsupported_note(u, b, &r.rows);
		} else if (r.ret == -E2BIG || !r.ret) {
			mem_full_note(u, b, room);
		} else if (r.ret == -ETIMEDOUT) {
			u->st.refused++;
			refusal_note(u, b, "its table took longer than the build budget (30 s)");
		} else if (r.ret == -EFBIG) {
			u->st.refused++;
			refusal_note(u, b, "more FDEs than any real program has");
		} else if (r.ret != -ECANCELED) {
			u->st.no_eh_frame++;
		}
		pthread_mutex_unlock(&u->lock);
		bt_unwind_rows_free(&r.rows);
		for (size_t i = 0; i < u->nbins; i++) {
			struct bin *c = &u->bins[i];
			if (!c->slow || (c != b && (!b->build_id_len || c->build_id_len != b->build_id_len ||
						    c->src_crc != b->src_crc ||
						    memcmp(c->build_id, b->build_id, b->build_id_len))))
				continue;
			c->first = b->first;
			c->count = b->count;
			c->kind = fits ? BT_UMAP_FILE : BT_UMAP_NOTABLE;
			c->slow = 0;
			pthread_mutex_lock(&u->lock);
			u->st.slow -= c == b; /* copies were not counted */
			pthread_mutex_unlock(&u->lock);
			bin_publish(u, c);
			path_keep(u, c->dev, c->ino, c->path);
		}
	}
	return any;
}

/* The builder thread has a result: wake the worker (any thread). */
static void built_kick(void *arg)
{
	struct bt_unwinder *u = arg;

	pthread_mutex_lock(&u->lock);
	u->kicked = 1;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
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
		serve_files(u);
		serve_wants(u);
		serve_built(u);
		proc_load_once(u, (uint32_t)pid, bt_now_ns());
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
	u->st.ready_ns = bt_now_ns() - t0;
	pthread_mutex_unlock(&u->lock);
	uint64_t seen = 0;
	int more = 1;
	while (!stopping(u)) {
		/* Acquire: pairs with the atomic add in bt_uw_ask() and
		 * handle_unwind_exec(), made after the entry went into the map,
		 * so a bump seen means its entry is there to walk. */
		uint64_t seq = u->want_seq ? __atomic_load_n(u->want_seq, __ATOMIC_ACQUIRE) : seen + 1;

		/* Slow tables finished by the builder thread (it kicks). */
		serve_built(u);
		if (seq != seen || more) {
			seen = seq;
			/* Files first: new processes' first samples wait on them. */
			more = serve_files(u);
			more |= serve_wants(u);
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

struct bt_unwinder *bt_unwinder_start(const struct bt_unwind_maps *maps, struct bt_unwind_cache *cache)
{
	struct bt_unwinder *u = calloc(1, sizeof(*u));
	int e;

	if (!u) {
		bt_unwind_cache_close(cache);
		return NULL;
	}
	u->cache = cache;
	u->start_ns = bt_now_ns();
	u->rows_fd = maps->rows_fd;
	u->procs_fd = maps->procs_fd;
	u->want_fd = maps->want_fd;
	u->files_fd = maps->files_fd;
	u->fwant_fd = maps->fwant_fd;
	u->py_fd = maps->py_fd;
	u->want_seq = maps->want_seq;
	u->max_rows = maps->max_rows;
	u->st.max_rows = maps->max_rows;
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->paths_lock, NULL);
	bt_cond_init_monotonic(&u->wake);
	u->rows = maps->rows;
	if (!u->rows) {
		e = EINVAL;
		goto fail;
	}
	elf_version(EV_CURRENT);
	/* Without it (no thread to be had), slow tables are refused, named. */
	u->builder = bt_unwind_builder_start(BUILDER_NICE, built_kick, u);
	e = pthread_create(&u->thread, NULL, worker, u);
	if (e) {
		bt_unwind_builder_stop(u->builder);
		goto fail;
	}
	u->started = 1;
	return u;
fail:
	bt_unwind_cache_close(cache);
	pthread_mutex_destroy(&u->lock);
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
	pthread_cond_signal(&u->wake);    /* the worker */
	pthread_mutex_unlock(&u->lock);
	if (u->started)
		pthread_join(u->thread, NULL);
	/* After the worker, its only user: the build in progress is cut
	 * short (its kicks need u, still whole). */
	bt_unwind_builder_stop(u->builder);
	bt_unwind_cache_close(u->cache);
	for (size_t i = 0; i < u->nbins; i++)
		free(u->bins[i].path);
	free(u->bins);
	for (size_t i = 0; i < u->npaths; i++)
		free(u->paths[i].path);
	free(u->paths);
	pthread_mutex_destroy(&u->paths_lock);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->wake);
	free(u);
}

int bt_unwinder_kick(struct bt_unwinder *u)
{
	uint64_t seq;

	if (!u || !u->want_seq)
		return 0;
	/* Relaxed: only whether to wake; the worker's acquire load pairs with
	 * the BPF side's add. */
	seq = __atomic_load_n(u->want_seq, __ATOMIC_RELAXED);
	if (seq == u->kicked_seq)
		return 0;
	u->kicked_seq = seq;
	pthread_mutex_lock(&u->lock);
	u->kicked = 1;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
	return 1;
}

/* Entries in a hash map right now (keys of key_size bytes), at most max. */
static uint64_t map_entries(int fd, size_t key_size, uint64_t max)
{
	uint8_t key[16], next[16];
	uint64_t n = 0;
	int first = 1;

	if (key_size > sizeof(key))
		return 0;
	while (n < max && bpf_map_get_next_key(fd, first ? NULL : key, next) == 0) {
		n++;
		memcpy(key, next, key_size);
		first = 0;
	}
	return n;
}

void bt_unwinder_stats(struct bt_unwinder *u, struct bt_unwinder_stats *s)
{
	pthread_mutex_lock(&u->lock);
	*s = u->st;
	pthread_mutex_unlock(&u->lock);
	s->run_ns = bt_now_ns() - u->start_ns;
	s->proc_bytes = map_entries(u->procs_fd, sizeof(uint32_t), 1u << 20) * sizeof(struct bt_unwind_proc);
	s->files_waiting += map_entries(u->fwant_fd, sizeof(struct bt_unwind_fkey), 4096);
	if (u->builder)
		s->files_waiting += bt_unwind_builder_pending(u->builder);
}
