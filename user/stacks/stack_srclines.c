// SPDX-License-Identifier: MIT
/*
 * stack_srclines.c - source lines gathered for a dump (see
 * stack_srclines.h). Lines are kept as string offsets while gathering (the
 * string table grows) and become pointers into it at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "dwarf_lines.h"
#include "string_set.h"
#include "stack_srclines.h"

struct gline {
	uint32_t file, func, line, col;
};

struct bt_srclines {
	struct bt_dump_srcloc *locs; /* in the order found; sorted at the end */
	uint64_t *entry;             /* [loc]: file offset of its function's entry, 0 unknown */
	uint32_t n, cap;
	struct gline *lines;
	uint64_t nlines, lcap;
	uint32_t *slot; /* 1 + loc index, open addressing over (map, off) */
	uint32_t nslots;
	struct bt_strset strs;
	int err;
};

struct bt_srclines *bt_srclines_new(void)
{
	return calloc(1, sizeof(struct bt_srclines));
}

static void srclines_free(struct bt_srclines *ls)
{
	free(ls->locs);
	free(ls->entry);
	free(ls->lines);
	free(ls->slot);
	bt_strset_release(&ls->strs, 0);
	free(ls);
}

static uint32_t loc_hash(uint32_t map, uint64_t off, uint32_t nslots)
{
	return (uint32_t)(((off * 0x9e3779b97f4a7c15ull) ^ map) >> 32) & (nslots - 1);
}

static int grow(struct bt_srclines *ls)
{
	uint32_t nslots = ls->nslots ? ls->nslots * 2 : 1024;
	uint32_t *slot = calloc(nslots, sizeof(*slot));
	void *locs = realloc(ls->locs, nslots / 2 * sizeof(*ls->locs));
	if (locs)
		ls->locs = locs;
	void *entry = realloc(ls->entry, nslots / 2 * sizeof(*ls->entry));
	if (entry)
		ls->entry = entry;
	if (!slot || !locs || !entry) {
		free(slot);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ls->n; i++) {
		uint32_t k = loc_hash(ls->locs[i].map, ls->locs[i].off, nslots);
		while (slot[k])
			k = (k + 1) & (nslots - 1);
		slot[k] = i + 1;
	}
	free(ls->slot);
	ls->slot = slot;
	ls->nslots = nslots;
	ls->cap = nslots / 2;
	return 0;
}

/* The slot of (map, off): its loc, or the empty one where it goes. */
static uint32_t *slot_of(struct bt_srclines *ls, uint32_t map, uint64_t off)
{
	uint32_t k = loc_hash(map, off, ls->nslots);
	for (; ls->slot[k]; k = (k + 1) & (ls->nslots - 1))
		if (ls->locs[ls->slot[k] - 1].map == map && ls->locs[ls->slot[k] - 1].off == off)
			break;
	return &ls->slot[k];
}

static void known(struct bt_srclines *ls, uint32_t i, uint64_t *entry, const char **func)
{
	const struct gline *last = &ls->lines[ls->locs[i].first + ls->locs[i].nlines - 1];
	*func = last->func == BT_STRSET_NONE ? NULL : ls->strs.p + last->func;
	*entry = ls->entry[i];
}

int bt_srclines_find(struct bt_srclines *ls, uint32_t map, uint64_t off, uint64_t *entry, const char **func)
{
	uint32_t *slot = ls->nslots ? slot_of(ls, map, off) : NULL;

	if (!slot || !*slot)
		return 0;
	known(ls, *slot - 1, entry, func);
	return 1;
}

int bt_srclines_add(struct bt_srclines *ls, struct bt_dwarf *dw, uint32_t map, uint64_t off, uint64_t vaddr,
		    uint64_t *entry, const char **func)
{
	struct bt_src_line src[BT_SRCLOC_MAX_DEPTH];
	uint64_t evaddr = 0;

	if (ls->err)
		return 0;
	if (ls->n == ls->cap && (ls->err = grow(ls)))
		return 0;
	uint32_t *slot = slot_of(ls, map, off);
	if (*slot) {
		known(ls, *slot - 1, entry, func);
		return 1;
	}
	int n = bt_dwarf_lookup(dw, vaddr, src, BT_SRCLOC_MAX_DEPTH, &evaddr);
	if (n <= 0)
		return 0; /* not remembered: asked again if met again (no DWARF for it: cheap) */
	if (ls->nlines + (uint64_t)n > ls->lcap) {
		uint64_t cap = ls->lcap ? ls->lcap * 2 : 4096;
		void *p = realloc(ls->lines, cap * sizeof(*ls->lines));
		if (!p) {
			ls->err = -ENOMEM;
			return 0;
		}
		ls->lines = p;
		ls->lcap = cap;
	}
	uint32_t i = ls->n;
	ls->entry[i] = evaddr && evaddr <= vaddr ? off - (vaddr - evaddr) : 0;
	ls->locs[i] = (struct bt_dump_srcloc){ map, (uint32_t)n, off, ls->nlines };
	for (int k = 0; k < n; k++)
		ls->lines[ls->nlines++] = (struct gline){ bt_strset_add(&ls->strs, src[k].file ? src[k].file : "?"),
							  bt_strset_add(&ls->strs, src[k].func), src[k].line,
							  src[k].col };
	if (ls->strs.err) {
		ls->err = ls->strs.err;
		return 0;
	}
	*slot = ++ls->n;
	known(ls, i, entry, func);
	return 1;
}

static int by_map_off(const void *a, const void *b)
{
	const struct bt_dump_srcloc *x = a, *y = b;
	if (x->map != y->map)
		return x->map < y->map ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int bt_srclines_finish(struct bt_srclines *ls, struct bt_dump_stacks *s)
{
	int err = ls->err;

	if (err || !ls->n || !s) {
		srclines_free(ls);
		return err;
	}
	qsort(ls->locs, ls->n, sizeof(*ls->locs), by_map_off);
	struct bt_dump_srcline *lines = malloc(ls->nlines * sizeof(*lines));
	if (!lines) {
		srclines_free(ls);
		return -ENOMEM;
	}
	const char *t = ls->strs.p;
	uint64_t o = 0;
	for (uint32_t i = 0; i < ls->n; i++) { /* each loc's lines after the previous loc's */
		for (uint32_t k = 0; k < ls->locs[i].nlines; k++) {
			const struct gline *g = &ls->lines[ls->locs[i].first + k];
			lines[o + k] = (struct bt_dump_srcline){ t + g->file, g->func == BT_STRSET_NONE ? NULL : t + g->func,
								 g->line, g->col };
		}
		ls->locs[i].first = o;
		o += ls->locs[i].nlines;
	}
	s->locs = ls->locs;
	s->nlocs = ls->n;
	s->lines = lines;
	s->nlines = o;
	s->loc_strtab = ls->strs.p; /* owned by s now */
	ls->locs = NULL;
	bt_strset_release(&ls->strs, 1);
	srclines_free(ls);
	return 0;
}
