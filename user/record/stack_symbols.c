// SPDX-License-Identifier: MIT
/*
 * stack_symbols.c - symbolization of a stack-table snapshot at dump time
 * (see stack_symbols.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "stack_symbols.h"
#include "stack_table.h"
#include "kallsyms.h"
#include "elf_symbols.h"
#include "util.h"

struct loaded {
	int tried;
	struct bt_elf_file *ef; /* NULL: no symbols */
};

struct bt_symbolizer {
	struct bt_kallsyms *ks;
	int ks_tried;
	struct loaded *files; /* [map id] */
	size_t nfiles;
};

struct bt_symbolizer *bt_symbolizer_new(void)
{
	struct bt_symbolizer *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	return z;
}

void bt_symbolizer_free(struct bt_symbolizer *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->nfiles; i++)
		if (z->files[i].ef) {
			bt_elf_free(z->files[i].ef);
			free(z->files[i].ef);
		}
	free(z->files);
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
	if (ef) {
		bt_elf_free(ef);
		free(ef);
	}
	return NULL;
}

/* The symbols of map id `map` (1-based), loaded once. */
static struct bt_elf_file *file_syms(struct bt_symbolizer *z, struct bt_stack_table *t, const struct bt_dump_stacks *s,
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
		return l->ef;
	l->tried = 1;
	const struct bt_dump_map *m = &s->maps[map - 1];
	int fd = bt_stack_table_map_fd(t, map);
	char attach[64];
	struct stat st;

	if (fd >= 0) {
		snprintf(attach, sizeof(attach), "/proc/self/fd/%d", fd);
		l->ef = try_load(attach, m->path);
	} else if (stat(m->path, &st) == 0 && (uint64_t)st.st_ino == m->ino) {
		l->ef = try_load(m->path, m->path);
	}
	if (l->ef && !l->ef->has_symtab && m->build_id_len >= 2) {
		/* Stripped: the separate debug file, by build-id. */
		char dbg[128];
		int n = snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%02x/", m->build_id[0]);
		for (uint32_t i = 1; i < m->build_id_len && n < 120; i++)
			n += snprintf(dbg + n, sizeof(dbg) - (size_t)n, "%02x", m->build_id[i]);
		snprintf(dbg + n, sizeof(dbg) - (size_t)n, ".debug");
		struct bt_elf_file *d = access(dbg, R_OK) == 0 ? try_load(dbg, dbg) : NULL;
		if (d) {
			bt_elf_free(l->ef);
			free(l->ef);
			l->ef = d;
		}
	}
	return l->ef;
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
	if (!ss.syms || !ss.slot || !ss.names) {
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
			uint64_t start = 0, size = 0;
			const char *name = NULL;

			if (fr[f].map == BT_DMAP_KERNEL) {
				name = bt_kallsyms_find(z->ks, f ? fr[f].off - 1 : fr[f].off, &start, &size);
				if (name && f == skip && is_tracing_frame(name)) {
					skip++; /* the recorder's program and its caller: not the traced code */
					continue;
				}
			} else if (fr[f].map != BT_DMAP_NONE && fr[f].map <= s->nmaps) {
				struct bt_elf_file *ef = file_syms(z, t, s, fr[f].map);
				/* return addresses: the call is the byte before (f > 0) */
				struct bt_elf_func *fn =
					ef ? bt_elf_func_at_offset(ef, f ? fr[f].off - 1 : fr[f].off, &start) : NULL;
				if (fn) {
					name = bt_elf_func_name(fn);
					size = fn->size;
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
	/* The encoder writes each stack's frames from `first`: s->nframes is
	 * what it writes. */
	s->nframes = nf;
	s->syms = ss.syms;
	s->nsyms = ss.n;
	s->counters[BT_STKC_TRUNCATED] = truncated;
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
