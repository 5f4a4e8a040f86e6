// SPDX-License-Identifier: MIT
/*
 * stack_symbols.c - symbolization of a stack-table snapshot at dump time
 * (see stack_symbols.h), from what symbol_cache.c loaded beforehand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stack_symbols.h"
#include "stack_table.h"
#include "kallsyms.h"
#include "elf_symbols.h"
#include "stack_srclines.h"
#include "symbol_cache.h"
#include "perf_maps.h"
#include "py_codes.h"
#include "util.h"

struct bt_symbolizer {
	struct bt_symcache *cache; /* files loaded ahead of the dumps */
	struct bt_perfmaps *jit;   /* names of anonymous code, the table's */
	struct bt_pycodes *py;     /* names of Python code objects, the table's */
	int source_lines;
};

struct bt_symbolizer *bt_symbolizer_new(struct bt_stack_table *t, const char *debug_dirs, int source_lines,
					uint64_t cache_bytes)
{
	struct bt_symbolizer *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->source_lines = source_lines;
	z->jit = bt_stack_table_perfmaps(t);
	z->py = bt_stack_table_pycodes(t);
	z->cache = bt_symcache_new(t, debug_dirs, source_lines, cache_bytes);
	if (!z->cache) {
		free(z);
		return NULL;
	}
	return z;
}

void bt_symbolizer_free(struct bt_symbolizer *z)
{
	if (!z)
		return;
	bt_symcache_free(z->cache);
	free(z);
}

int bt_symbolizer_settle(struct bt_symbolizer *z, unsigned timeout_ms)
{
	return bt_symcache_settle(z->cache, timeout_ms);
}

void bt_symbolizer_boost(struct bt_symbolizer *z, int on)
{
	bt_symcache_boost(z->cache, on);
}

void bt_symbolizer_stats(struct bt_symbolizer *z, struct bt_symcache_stats *out)
{
	bt_symcache_stats(z->cache, out);
}

/* The function of file offset off in l: the .symtab of the binary, else
 * of its debug file (looked up by address: a debug file's segments have
 * other file offsets), else .dynsym. *start: its first byte's file offset. */
static const char *func_of(const struct bt_symfile *l, uint64_t off, uint64_t *start, uint64_t *size)
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

/* The source lines of (map, off) into ls, asked of the file's DWARF (open
 * in the cache) the first time in this dump. */
static int srclines_of(struct bt_srclines *ls, uint32_t map, const struct bt_symfile *l, uint64_t off,
		       uint64_t *entry, const char **func)
{
	uint64_t vaddr;

	if (bt_srclines_find(ls, map, off, entry, func))
		return 1;
	if (!l->ef || !l->dw || bt_elf_offset_to_vaddr(l->ef, off, &vaddr))
		return 0;
	return bt_srclines_add(ls, l->dw, map, off, vaddr, entry, func);
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
		/* anonymous code: the same address is other code in another process */
		if (y->map == map && y->start == start && (map != BT_DMAP_NONE || strcmp(y->name, name) == 0))
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

/* The frames a thread starts in: nothing above the outermost of them is
 * real. A run of them is kept whole (__libc_start_call_main called by
 * __libc_start_main called by _start), whatever its version suffix. */
static int is_thread_root(const char *name)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "__libc_start_main_impl", "start_thread", "clone", "clone3",
					     "__clone", "__clone3", "__clone_internal", "thread_start" };
	size_t n = bt_sym_name_len(name);
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (strlen(roots[i]) == n && strncmp(name, roots[i], n) == 0)
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

int bt_symbolize(struct bt_symbolizer *z, struct bt_dump_stacks *s, uint64_t lines_ns)
{
	uint64_t lines_end = lines_ns ? bt_now_ns() + lines_ns : UINT64_MAX, lines_late = 0;
	struct symset ss = { 0 };
	struct bt_srclines *ls = z->source_lines ? bt_srclines_new() : NULL;
	uint64_t truncated = 0, nf = 0, pending_frames = 0, jit_named = 0, jit_unnamed = 0, py_named = 0,
		 py_unnamed = 0;
	uint32_t cap = s->nframes > UINT32_MAX / 4 ? UINT32_MAX / 4 : (uint32_t)s->nframes;
	uint8_t *pending_map = calloc(s->nmaps + 1, 1); /* [map]: its file not loaded yet */
	struct bt_kallsyms *ks;
	int ks_pending;

	ss.cap = cap ? cap : 1;
	ss.nslots = 16;
	while (ss.nslots < 2ull * ss.cap)
		ss.nslots *= 2;
	ss.syms = calloc(ss.cap, sizeof(*ss.syms));
	ss.slot = calloc(ss.nslots, sizeof(*ss.slot));
	ss.names = calloc(ss.cap, sizeof(*ss.names));
	if (!ss.syms || !ss.slot || !ss.names || (z->source_lines && !ls) || !pending_map) {
		if (ls)
			bt_srclines_finish(ls, NULL);
		free(pending_map);
		free(ss.syms);
		free(ss.slot);
		free(ss.names);
		return -ENOMEM;
	}
	/* Lookups only: what the cache has loaded; nothing is read from a
	 * file here, whatever its size. */
	bt_perfmaps_refresh(z->jit); /* what runtimes wrote since the loader's last read */
	bt_symcache_hold(z->cache);
	ks = bt_symcache_kallsyms(z->cache, &ks_pending);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct bt_dump_stack *k = &s->stacks[i];
		struct bt_dump_frame *fr = s->frames + k->first;
		uint32_t keep = k->nframes, skip = 0;
		int rooted = 0, unknown = 0;

		for (uint32_t f = 0; f < k->nframes; f++) {
			uint64_t start = 0, size = 0, dwarf_entry = 0;
			const char *name = NULL, *dwarf_name = NULL;
			char jit_name[BT_PERFMAP_NAME_MAX + 1], py_name[sizeof(((struct bt_raw_py_code *)0)->name) +
							      sizeof(((struct bt_raw_py_code *)0)->file) + 32];
			int was_unknown = unknown;

			if (fr[f].map == BT_DMAP_KERNEL) {
				name = bt_kallsyms_find(ks, bt_frame_lookup_off(fr[f].off, f), &start, &size);
				pending_frames += ks_pending;
				if (name && f == skip && is_tracing_frame(name)) {
					skip++; /* the recorder's program and its caller: not the traced code */
					continue;
				}
			} else if (fr[f].map != BT_DMAP_NONE && fr[f].map <= s->nmaps) {
				const struct bt_symfile *l = NULL;
				uint64_t off = bt_frame_lookup_off(fr[f].off, f);
				int got = bt_symcache_get(z->cache, fr[f].map, &l);

				if (got == 0) { /* still loading: this dump goes without it */
					pending_frames++;
					pending_map[fr[f].map] = 1;
					unknown = 1;
				}
				if (got == 1)
					name = func_of(l, off, &start, &size);
				/* The clock is read only for frames that still need DWARF. */
				int lines_known = got == 1 && ls && bt_srclines_find(ls, fr[f].map, off, &dwarf_entry,
										      &dwarf_name);
				if (got == 1 && ls && !lines_known && l->dw && lines_end != UINT64_MAX &&
				    (lines_late || bt_now_ns() > lines_end)) {
					lines_late++; /* out of time: this dump goes without them */
				} else if (got == 1 && ls && !lines_known) {
					lines_known = srclines_of(ls, fr[f].map, l, off, &dwarf_entry, &dwarf_name);
				}
				if (lines_known && !name && dwarf_name && dwarf_entry) {
					name = dwarf_name; /* no symbol covers it: DWARF's name for its function */
					start = dwarf_entry;
				}
			} else if (fr[f].map == BT_DMAP_NONE && k->kind == BT_STACK_USER && (fr[f].off & BT_FRAME_PY_BIT)) {
				/* a Python frame: its code object's names, as the BPF side sent them */
				if (bt_pycodes_find(z->py, k->tgid, fr[f].off, py_name, sizeof(py_name))) {
					py_named++;
				} else {
					snprintf(py_name, sizeof(py_name), "[python code not interned]");
					py_unnamed++;
				}
				name = py_name;
				start = fr[f].off;
				size = 1;
			} else if (fr[f].map == BT_DMAP_NONE && k->kind == BT_STACK_USER) {
				/* anonymous code: JIT, named from its runtime's perf map */
				if (bt_perfmaps_find(z->jit, k->tgid, bt_frame_lookup_off(fr[f].off, f), &start, &size,
						     jit_name, sizeof(jit_name))) {
					name = jit_name;
					jit_named++;
				} else {
					jit_unnamed++;
				}
			}
			int root = name && k->kind == BT_STACK_USER && is_thread_root(name);
			if (rooted && !root) {
				/* The walk's last frame right after them, unnamed, in a
				 * file: the program's entry (_start of a stripped
				 * binary), kept. Anything else is past the start. */
				if (!name && f + 1 == k->nframes && k->kind == BT_STACK_USER &&
				    fr[f].map != BT_DMAP_NONE && !(k->flags & BT_STACK_F_TRUNCATED))
					keep = f + 1;
				unknown = was_unknown; /* its file's loading does not matter */
				break;
			}
			if (name)
				fr[f].sym = sym_add(&ss, fr[f].map, start, size, name);
			if (k->kind == BT_STACK_USER && f + 1 == k->nframes && !name && ends_in_libc(s, &fr[f]))
				rooted = 1; /* see ends_in_libc() */
			if (root) {
				keep = f + 1;
				rooted = 1;
			}
		}
		if (skip) {
			k->first += skip;
			k->nframes -= skip;
			keep -= skip;
		}
		/* A file not loaded yet: where the thread's root is is unknown. */
		if (k->kind == BT_STACK_USER && !(k->flags & BT_STACK_F_UNDEFINED) && !unknown) {
			/* Frames past the root were never walked for real: drop them
			 * (the pool keeps them, unreferenced). */
			k->nframes = keep;
			if (!rooted && !(k->flags & BT_STACK_F_TRUNCATED))
				k->flags |= BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_WHY_NO_ROOT);
		}
		if (k->flags & BT_STACK_F_TRUNCATED)
			truncated++;
		nf += k->nframes;
	}
	bt_symcache_release(z->cache);
	int lr = ls ? bt_srclines_finish(ls, s) : 0;
	if (lr)
		bt_warn("source lines left out of the dump: %s", strerror(-lr));
	/* The encoder writes each stack's frames from `first`: s->nframes is
	 * what it writes. */
	s->nframes = nf;
	s->syms = ss.syms;
	s->nsyms = ss.n;
	s->counters[BT_STKC_TRUNCATED] = truncated;
	/* a degraded capability shows in the dump: no kallsyms once it is loaded */
	s->counters[BT_STKC_NO_KSYMS] = !ks && !ks_pending;
	s->counters[BT_STKC_NOT_LOADED_FRAMES] = pending_frames;
	s->counters[BT_STKC_LINES_LATE] = lines_late;
	s->counters[BT_STKC_JIT_NAMED] = jit_named;
	s->counters[BT_STKC_JIT_UNNAMED] = jit_unnamed;
	s->counters[BT_STKC_PY_NAMED] = py_named;
	s->counters[BT_STKC_PY_UNNAMED] = py_unnamed;
	for (uint32_t m = 1; m <= s->nmaps; m++)
		s->counters[BT_STKC_NOT_LOADED_FILES] += pending_map[m];
	s->counters[BT_STKC_NOT_LOADED_FILES] += ks_pending;
	free(pending_map);
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
