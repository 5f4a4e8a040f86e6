// SPDX-License-Identifier: MIT
/*
 * dump_srclocs.c - SLOC section <-> the source lines of a struct
 * bt_dump_stacks (see dump_stacks.h, layout in docs/dump-format.md).
 *
 *   header   u32 version (1), u32 nlocs, u64 nlines, u64 strtab_len
 *   locs     nlocs x { u32 map, u32 nlines, u64 off }, sorted by (map, off)
 *   lines    nlines x { u32 file, u32 func (NO_STR: none), u32 line, u32 col }
 *   strtab   NUL-terminated strings, the offsets above point into it
 *
 * A loc's lines follow the previous loc's, so `first` is not stored. The
 * decoder trusts nothing: exact length, bounded counts, sorted unique
 * locs, every mapping and string offset checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "string_set.h"

#define SLOC_VERSION 1
#define NO_STR BT_STRSET_NONE

struct shdr {
	uint32_t version, nlocs;
	uint64_t nlines, strtab_len;
};
struct rloc {
	uint32_t map, nlines;
	uint64_t off;
};
struct rline {
	uint32_t file, func, line, col;
};
_Static_assert(sizeof(struct shdr) == 24 && sizeof(struct rloc) == 16 && sizeof(struct rline) == 16,
	       "SLOC record sizes");

int64_t bt_dump_srclocs_encode(const struct bt_dump_stacks *s, uint8_t **out)
{
	struct bt_strset st = { 0 };
	struct rline *rl = calloc(s->nlines ? s->nlines : 1, sizeof(*rl));
	uint8_t *p = NULL;
	int64_t ret;

	if (!rl) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < s->nlines; i++) {
		const struct bt_dump_srcline *l = &s->lines[i];
		rl[i] = (struct rline){ bt_strset_add(&st, l->file ? l->file : "?"), bt_strset_add(&st, l->func), l->line,
					l->col };
	}
	if (st.err) {
		ret = st.err;
		goto out;
	}
	struct shdr h = { SLOC_VERSION, s->nlocs, s->nlines, st.len };
	uint64_t len = sizeof(h) + sizeof(struct rloc) * (uint64_t)s->nlocs + sizeof(*rl) * s->nlines + st.len;
	p = malloc(len);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	uint8_t *o = p;
	memcpy(o, &h, sizeof(h));
	o += sizeof(h);
	uint64_t first = 0;
	for (uint32_t i = 0; i < s->nlocs; i++) {
		const struct bt_dump_srcloc *l = &s->locs[i];
		struct rloc r = { l->map, l->nlines, l->off };
		if (l->first != first) { /* lines not in loc order */
			ret = -EINVAL;
			goto out;
		}
		first += l->nlines;
		memcpy(o, &r, sizeof(r));
		o += sizeof(r);
	}
	if (first != s->nlines) {
		ret = -EINVAL;
		goto out;
	}
	memcpy(o, rl, sizeof(*rl) * s->nlines);
	o += sizeof(*rl) * s->nlines;
	if (st.len)
		memcpy(o, st.p, st.len);
	*out = p;
	p = NULL;
	ret = (int64_t)len;
out:
	free(p);
	free(rl);
	bt_strset_release(&st, 0);
	return ret;
}

#define bad(err, errlen, ...) bt_dump_corrupt(err, errlen, "source lines", __VA_ARGS__)

static void srclocs_release(struct bt_dump_stacks *s)
{
	free(s->locs);
	free(s->lines);
	free(s->loc_strtab);
	s->locs = NULL;
	s->lines = NULL;
	s->loc_strtab = NULL;
	s->nlocs = 0;
	s->nlines = 0;
}

int bt_dump_srclocs_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	struct shdr h;
	int r;

	if (len < sizeof(h))
		return bad(err, errlen, "%" PRIu64 " bytes, shorter than its header", len);
	memcpy(&h, p, sizeof(h));
	if (h.version != SLOC_VERSION)
		return 0; /* a newer writer's: skipped like an unknown optional section */
	if (h.nlocs > BT_STACKS_MAX_COUNT * 4u || h.nlines > (uint64_t)h.nlocs * BT_SRCLOC_MAX_DEPTH ||
	    h.strtab_len >= NO_STR)
		return bad(err, errlen, "counts out of range (%u locations, %" PRIu64 " lines)", h.nlocs, h.nlines);
	uint64_t need = sizeof(h) + sizeof(struct rloc) * (uint64_t)h.nlocs + sizeof(struct rline) * h.nlines +
			h.strtab_len;
	if (need != len)
		return bad(err, errlen, "%" PRIu64 " bytes, its counts need %" PRIu64, len, need);
	if (h.strtab_len && p[len - 1] != '\0')
		return bad(err, errlen, "string table not NUL-terminated");
	if (h.nlocs && !h.strtab_len)
		return bad(err, errlen, "%u locations and no strings", h.nlocs);
	const uint8_t *rlocs = p + sizeof(h), *rlines = rlocs + sizeof(struct rloc) * (uint64_t)h.nlocs;
	const char *strs = (const char *)(rlines + sizeof(struct rline) * h.nlines);

	srclocs_release(s);
	s->locs = calloc(h.nlocs ? h.nlocs : 1, sizeof(*s->locs));
	s->lines = calloc(h.nlines ? h.nlines : 1, sizeof(*s->lines));
	s->loc_strtab = malloc(h.strtab_len ? h.strtab_len : 1);
	if (!s->locs || !s->lines || !s->loc_strtab) {
		srclocs_release(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (h.strtab_len)
		memcpy(s->loc_strtab, strs, h.strtab_len);
	uint64_t first = 0;
	for (uint32_t i = 0; i < h.nlocs; i++) {
		struct rloc l;
		memcpy(&l, rlocs + i * sizeof(l), sizeof(l));
		if (l.map < 1 || l.map > s->nmaps || l.nlines < 1 || l.nlines > BT_SRCLOC_MAX_DEPTH ||
		    l.nlines > h.nlines - first) {
			r = bad(err, errlen, "location %u: mapping %u (of %u) or %u lines out of range", i, l.map, s->nmaps,
				l.nlines);
			goto fail;
		}
		if (i && (l.map < s->locs[i - 1].map || (l.map == s->locs[i - 1].map && l.off <= s->locs[i - 1].off))) {
			r = bad(err, errlen, "location %u out of order", i);
			goto fail;
		}
		s->locs[i] = (struct bt_dump_srcloc){ l.map, l.nlines, l.off, first };
		first += l.nlines;
	}
	if (first != h.nlines) {
		r = bad(err, errlen, "locations hold %" PRIu64 " lines, the header says %" PRIu64, first, h.nlines);
		goto fail;
	}
	for (uint64_t i = 0; i < h.nlines; i++) {
		struct rline l;
		memcpy(&l, rlines + i * sizeof(l), sizeof(l));
		if (l.file >= h.strtab_len || (l.func != NO_STR && l.func >= h.strtab_len)) {
			r = bad(err, errlen, "line %" PRIu64 ": string offset out of range", i);
			goto fail;
		}
		s->lines[i] = (struct bt_dump_srcline){ s->loc_strtab + l.file,
							l.func == NO_STR ? NULL : s->loc_strtab + l.func, l.line, l.col };
	}
	s->nlocs = h.nlocs;
	s->nlines = h.nlines;
	return 0;
fail:
	srclocs_release(s);
	return r;
}

const struct bt_dump_srcloc *bt_dump_srcloc_find(const struct bt_dump_stacks *s, uint32_t map, uint64_t off)
{
	size_t lo = 0, hi = s ? s->nlocs : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bt_dump_srcloc *l = &s->locs[mid];
		if (l->map == map && l->off == off)
			return l;
		if (l->map < map || (l->map == map && l->off < off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct bt_dump_srcloc *bt_dump_frame_srcloc(const struct bt_dump_stacks *s, const struct bt_dump_frame *f,
						  uint32_t f_index)
{
	if (!s->nlocs || f->map == BT_DMAP_KERNEL || f->map == BT_DMAP_NONE)
		return NULL;
	return bt_dump_srcloc_find(s, f->map, bt_frame_lookup_off(f->off, f_index));
}
