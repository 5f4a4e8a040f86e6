// SPDX-License-Identifier: MIT
/*
 * stack_symbols.c - symbolization of a stack-table snapshot at dump time
 * (see stack_symbols.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>
#include "stack_symbols.h"
#include "stack_table.h"
#include "kallsyms.h"
#include "elf_symbols.h"
#include "dwarf_lines.h"
#include "debug_file.h"
#include "trusted_file.h"
#include "stack_srclines.h"
#include "util.h"

/* A file's DWARF is opened the first time a dump needs it and closed
 * after that dump: it holds the file's debug information in memory (~20
 * MiB for a system's worth of debug packages, measured), which an
 * always-on recorder should not keep between dumps that may be hours
 * apart; reading it again costs ~0.1 s per dump. */
enum { DW_UNTRIED, DW_OPEN, DW_NONE };

struct loaded {
	int tried;
	struct bt_elf_file *ef;  /* the mapped file's symbols (NULL: not ELF, or gone) */
	struct bt_elf_file *dbg; /* its separate debug file's, when it has no .symtab */
	struct bt_dwarf *dw;     /* its DWARF when dw_state is DW_OPEN (this dump) */
	int dw_state;            /* DW_NONE: none found (not asked again) */
};

struct bt_symbolizer {
	struct bt_kallsyms *ks;
	int ks_tried;
	struct loaded *files; /* [map id] */
	size_t nfiles;
	char *debug_dirs; /* --debug-dir, searched before /usr/lib/debug */
	int source_lines;
};

struct bt_symbolizer *bt_symbolizer_new(const char *debug_dirs, int source_lines)
{
	struct bt_symbolizer *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->source_lines = source_lines;
	if (debug_dirs && !(z->debug_dirs = strdup(debug_dirs))) {
		free(z);
		return NULL;
	}
	return z;
}

static void elf_drop(struct bt_elf_file *ef)
{
	if (ef) {
		bt_elf_free(ef);
		free(ef);
	}
}

void bt_symbolizer_free(struct bt_symbolizer *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->nfiles; i++) {
		elf_drop(z->files[i].ef);
		elf_drop(z->files[i].dbg);
		bt_dwarf_close(z->files[i].dw);
	}
	free(z->files);
	free(z->debug_dirs);
	bt_kallsyms_free(z->ks);
	free(z);
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

/* A descriptor of map id `map`'s file: the one the recorder kept (an
 * exited process, a deleted binary), else the path if it still is the same
 * regular file (*own: close it after). -1 if neither. */
static int map_fd(struct bt_stack_table *t, const struct bt_dump_map *m, uint32_t map, int *own)
{
	int fd = bt_stack_table_map_fd(t, map);
	struct stat st;

	*own = -1;
	if (fd >= 0)
		return fd;
	if ((fd = bt_open_regular(m->path)) < 0) /* never a FIFO or a device */
		return -1;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != m->ino) {
		close(fd);
		return -1;
	}
	return *own = fd;
}

/* The DWARF of l (map id `map`), opened on its first use in a dump; NULL
 * if none is found. */
static struct bt_dwarf *dwarf_of(struct bt_symbolizer *z, struct bt_stack_table *t, const struct bt_dump_stacks *s,
				 uint32_t map, struct loaded *l)
{
	const struct bt_dump_map *m = &s->maps[map - 1];

	if (l->dw_state != DW_UNTRIED)
		return l->dw;
	int own, fd = map_fd(t, m, map, &own);
	l->dw = fd >= 0 ? bt_dwarf_open(fd, m->path, m->build_id, m->build_id_len, z->debug_dirs) : NULL;
	if (own >= 0)
		close(own);
	l->dw_state = l->dw ? DW_OPEN : DW_NONE;
	return l->dw;
}

/* After a dump: its DWARF handles closed, opened again by the next. */
static void dwarf_close_all(struct bt_symbolizer *z)
{
	for (size_t i = 0; i < z->nfiles; i++)
		if (z->files[i].dw_state == DW_OPEN) {
			bt_dwarf_close(z->files[i].dw);
			z->files[i].dw = NULL;
			z->files[i].dw_state = DW_UNTRIED;
		}
}

/* Map id `map` (1-based) loaded once: its symbols, and its separate debug
 * file's if it is stripped. */
static struct loaded *file_syms(struct bt_symbolizer *z, struct bt_stack_table *t, const struct bt_dump_stacks *s,
				uint32_t map)
{
	if (map > z->nfiles) {
		void *p = realloc(z->files, (map + 64) * sizeof(*z->files));
		if (!p)
			return NULL;
		z->files = p;
		memset(z->files + z->nfiles, 0, (map + 64 - z->nfiles) * sizeof(*z->files));
		z->nfiles = map + 64;
	}
	struct loaded *l = &z->files[map - 1];
	if (l->tried)
		return l;
	l->tried = 1;
	const struct bt_dump_map *m = &s->maps[map - 1];
	int own, fd = map_fd(t, m, map, &own);
	char attach[64];

	if (fd < 0)
		return l;
	/* by path: the file there now must be the build captured */
	if (own >= 0 && m->build_id_len && !bt_elf_build_id_is(fd, m->build_id, m->build_id_len)) {
		close(own);
		return l;
	}
	snprintf(attach, sizeof(attach), "/proc/self/fd/%d", fd);
	l->ef = try_load(attach, m->path);
	if (own >= 0)
		close(own);
	/* Stripped: the separate debug file's symbols (by build-id). */
	char *found = NULL;
	int dfd = l->ef && !l->ef->has_symtab && m->build_id_len
			  ? bt_debug_file_open(m->path, m->build_id, m->build_id_len, NULL, 0, z->debug_dirs, &found)
			  : -1;
	if (dfd >= 0) {
		snprintf(attach, sizeof(attach), "/proc/self/fd/%d", dfd);
		l->dbg = try_load(attach, found);
		close(dfd);
	}
	free(found);
	return l;
}

/* The function of file offset off in l: the .symtab of the binary, else
 * of its debug file (looked up by address: a debug file's segments have
 * other file offsets), else .dynsym. *start: its first byte's file offset. */
static const char *func_of(struct loaded *l, uint64_t off, uint64_t *start, uint64_t *size)
{
	struct bt_elf_func *fn = NULL;
	uint64_t vaddr;

	if (!l->ef || bt_elf_offset_to_vaddr(l->ef, off, &vaddr))
		return NULL;
	if (l->dbg)
		fn = bt_elf_func_at_vaddr(l->dbg, vaddr);
	if (!fn)
		fn = bt_elf_func_at_vaddr(l->ef, vaddr);
	if (!fn)
		return NULL;
	*start = off - (vaddr - fn->vaddr);
	*size = fn->size;
	return bt_elf_func_name(fn);
}

/* The source lines of (map, off) into ls, asked of the file's DWARF the
 * first time in this dump. */
static int srclines_of(struct bt_symbolizer *z, struct bt_stack_table *t, const struct bt_dump_stacks *s,
		       struct bt_srclines *ls, uint32_t map, struct loaded *l, uint64_t off, uint64_t *entry,
		       const char **func)
{
	uint64_t vaddr;
	struct bt_dwarf *dw;

	if (bt_srclines_find(ls, map, off, entry, func))
		return 1;
	if (!l->ef || l->dw_state == DW_NONE || bt_elf_offset_to_vaddr(l->ef, off, &vaddr) ||
	    !(dw = dwarf_of(z, t, s, map, l)))
		return 0;
	return bt_srclines_add(ls, dw, map, off, vaddr, entry, func);
}

/* Symbols the dump carries: (map, start) -> index, open addressing. */
struct symset {
	struct bt_dump_sym *syms;
	uint32_t n, cap;
	uint32_t *slot; /* 1 + index, 0 empty */
	uint32_t nslots;
	char **names; /* owned names, one per sym */
};

static uint32_t sym_add(struct symset *ss, uint32_t map, uint64_t start, uint64_t size, const char *name)
{
	uint64_t h = (start * 0x9e3779b97f4a7c15ull) ^ map;
	uint32_t i = (uint32_t)(h >> 32) & (ss->nslots - 1);

	while (ss->slot[i]) {
		const struct bt_dump_sym *y = &ss->syms[ss->slot[i] - 1];
		if (y->map == map && y->start == start)
			return ss->slot[i];
		i = (i + 1) & (ss->nslots - 1);
	}
	if (ss->n == ss->cap)
		return 0; /* cannot happen: cap = frames */
	char *nm = strdup(name);
	if (!nm)
		return 0;
	ss->names[ss->n] = nm;
	ss->syms[ss->n] = (struct bt_dump_sym){ nm, map, start, size };
	ss->slot[i] = ++ss->n;
	return ss->n;
}

/* The frame a thread starts in: nothing above it is real. */
static int is_thread_root(const char *name)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "__libc_start_main_impl", "start_thread", "clone", "clone3",
					     "__clone", "__clone3", "__clone_internal", "thread_start" };
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (strcmp(name, roots[i]) == 0)
			return 1;
	return 0;
}

/* Frames of the tracing machinery itself: the BPF program that took the
 * stack and the kernel function that ran it. */
static int is_tracing_frame(const char *name)
{
	return strncmp(name, "bpf_prog_", 9) == 0 || strncmp(name, "bpf_trace_run", 13) == 0 ||
	       strncmp(name, "__bpf_trace_", 12) == 0 || strncmp(name, "__traceiter_", 12) == 0 ||
	       strncmp(name, "bpf_overflow_handler", 20) == 0 || strncmp(name, "__perf_event_overflow", 21) == 0;
}

/* A walk that ends at an unnamed frame of the C library or the dynamic
 * loader most likely ended at a thread's start there (glibc keeps no frame
 * pointers, so the walk cannot go past its frames, and its internal
 * symbols are not exported): not marked truncated. A mark means the stack is
 * known to be cut (depth limit, junk address, a walk ending elsewhere). */
static int ends_in_libc(const struct bt_dump_stacks *s, const struct bt_dump_frame *fr)
{
	if (fr->map == BT_DMAP_NONE || fr->map == BT_DMAP_KERNEL || fr->map > s->nmaps)
		return 0;
	const char *p = s->maps[fr->map - 1].path, *b = strrchr(p, '/');
	b = b ? b + 1 : p;
	return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0 || strncmp(b, "ld-linux", 8) == 0 ||
	       strncmp(b, "libpthread", 10) == 0;
}

int bt_symbolize(struct bt_symbolizer *z, struct bt_stack_table *t, struct bt_dump_stacks *s)
{
	struct symset ss = { 0 };
	struct bt_srclines *ls = z->source_lines ? bt_srclines_new() : NULL;
	uint64_t truncated = 0, nf = 0;
	uint32_t cap = s->nframes > UINT32_MAX / 4 ? UINT32_MAX / 4 : (uint32_t)s->nframes;

	/* At the first dump, not at start: the recorder's own programs (their
	 * frames head every stack taken from a tracepoint) are loaded by then. */
	if (!z->ks && !z->ks_tried) {
		z->ks_tried = 1;
		z->ks = bt_kallsyms_load();
		if (!z->ks)
			bt_warn("cannot read kernel symbols (/proc/kallsyms: %s): kernel frames show addresses",
				strerror(errno));
	}
	ss.cap = cap ? cap : 1;
	ss.nslots = 16;
	while (ss.nslots < 2ull * ss.cap)
		ss.nslots *= 2;
	ss.syms = calloc(ss.cap, sizeof(*ss.syms));
	ss.slot = calloc(ss.nslots, sizeof(*ss.slot));
	ss.names = calloc(ss.cap, sizeof(*ss.names));
	if (!ss.syms || !ss.slot || !ss.names || (z->source_lines && !ls)) {
		if (ls)
			bt_srclines_finish(ls, NULL);
		free(ss.syms);
		free(ss.slot);
		free(ss.names);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct bt_dump_stack *k = &s->stacks[i];
		struct bt_dump_frame *fr = s->frames + k->first;
		uint32_t keep = k->nframes, skip = 0;
		int rooted = 0;

		for (uint32_t f = 0; f < k->nframes; f++) {
			uint64_t start = 0, size = 0, dwarf_entry = 0;
			const char *name = NULL, *dwarf_name = NULL;

			if (fr[f].map == BT_DMAP_KERNEL) {
				name = bt_kallsyms_find(z->ks, bt_frame_lookup_off(fr[f].off, f), &start, &size);
				if (name && f == skip && is_tracing_frame(name)) {
					skip++; /* the recorder's program and its caller: not the traced code */
					continue;
				}
			} else if (fr[f].map != BT_DMAP_NONE && fr[f].map <= s->nmaps) {
				struct loaded *l = file_syms(z, t, s, fr[f].map);
				uint64_t off = bt_frame_lookup_off(fr[f].off, f);
				if (l)
					name = func_of(l, off, &start, &size);
				if (l && ls && srclines_of(z, t, s, ls, fr[f].map, l, off, &dwarf_entry, &dwarf_name) &&
				    !name && dwarf_name && dwarf_entry) {
					name = dwarf_name; /* no symbol covers it: DWARF's name for its function */
					start = dwarf_entry;
				}
			}
			if (name)
				fr[f].sym = sym_add(&ss, fr[f].map, start, size, name);
			if (k->kind == BT_STACK_USER && f + 1 == k->nframes && !name && ends_in_libc(s, &fr[f]))
				rooted = 1; /* see ends_in_libc() */
			if (name && k->kind == BT_STACK_USER && is_thread_root(name)) {
				keep = f + 1;
				rooted = 1;
				break;
			}
		}
		if (skip) {
			k->first += skip;
			k->nframes -= skip;
			keep -= skip;
		}
		if (k->kind == BT_STACK_USER && !(k->flags & BT_STACK_F_UNDEFINED)) {
			/* Frames past the root were never walked for real: drop them
			 * (the pool keeps them, unreferenced). */
			k->nframes = keep;
			if (!rooted)
				k->flags |= BT_STACK_F_TRUNCATED;
		}
		if (k->flags & BT_STACK_F_TRUNCATED)
			truncated++;
		nf += k->nframes;
	}
	int lr = ls ? bt_srclines_finish(ls, s) : 0;
	dwarf_close_all(z);
	malloc_trim(0); /* what the DWARF took goes back to the system, not only to malloc */
	if (lr)
		bt_warn("source lines left out of the dump: %s", strerror(-lr));
	/* The encoder writes each stack's frames from `first`: s->nframes is
	 * what it writes. */
	s->nframes = nf;
	s->syms = ss.syms;
	s->nsyms = ss.n;
	s->counters[BT_STKC_TRUNCATED] = truncated;
	s->counters[BT_STKC_NO_KSYMS] = !z->ks; /* a degraded capability shows in the dump */
	/* names become owned by s */
	char **own = realloc(s->owned, (s->nowned + ss.n + 1) * sizeof(*own));
	if (!own) {
		for (uint32_t i = 0; i < ss.n; i++)
			free(ss.names[i]);
		free(ss.names);
		free(ss.slot);
		s->nsyms = 0;
		return -ENOMEM;
	}
	memcpy(own + s->nowned, ss.names, ss.n * sizeof(*own));
	s->owned = own;
	s->nowned += ss.n;
	free(ss.names);
	free(ss.slot);
	return 0;
}
