// SPDX-License-Identifier: MIT
/*
 * dump_stacks.c - STCK section <-> struct bt_dump_stacks (see dump_stacks.h,
 * layout in docs/dump-format.md). The decoder trusts nothing: counts are
 * bounded, the length must be exact, every index and string offset is
 * checked, so a hostile section is refused with one line, never read past.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "string_set.h"

struct hdr {
	uint32_t nstacks, nmaps, nsyms, ncounters;
	uint64_t nframes, strtab_len;
};
struct rmap {
	uint32_t path_off, flags;
	uint64_t dev, ino;
	uint32_t build_id_len;
	uint8_t build_id[20];
};
struct rsym {
	uint32_t name_off, map;
	uint64_t start, size;
};
struct rstack {
	uint32_t tgid;
	uint16_t kind, flags;
	uint32_t nframes, reserved;
};
_Static_assert(sizeof(struct hdr) == 32 && sizeof(struct rmap) == 48 && sizeof(struct rsym) == 24 &&
		       sizeof(struct rstack) == 16 && sizeof(struct bt_dump_frame) == 16,
	       "STCK record sizes");

/* ---- encode ---------------------------------------------------------------- */

int64_t bt_dump_stacks_encode(const struct bt_dump_stacks *s, uint8_t **out)
{
	struct bt_strset st = { 0 };
	struct rmap *maps = calloc(s->nmaps ? s->nmaps : 1, sizeof(*maps));
	struct rsym *syms = calloc(s->nsyms ? s->nsyms : 1, sizeof(*syms));
	uint8_t *p = NULL;
	int64_t ret;

	if (!maps || !syms) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < s->nmaps; i++) {
		const struct bt_dump_map *m = &s->maps[i];
		maps[i] = (struct rmap){ .path_off = bt_strset_add(&st, m->path ? m->path : ""), .flags = m->flags, .dev = m->dev,
					 .ino = m->ino, .build_id_len = m->build_id_len > 20 ? 20 : m->build_id_len };
		memcpy(maps[i].build_id, m->build_id, 20);
	}
	for (uint32_t i = 0; i < s->nsyms; i++)
		syms[i] = (struct rsym){ .name_off = bt_strset_add(&st, s->syms[i].name ? s->syms[i].name : ""), .map = s->syms[i].map,
					 .start = s->syms[i].start, .size = s->syms[i].size };
	if (st.err) {
		ret = st.err;
		goto out;
	}
	struct hdr h = { s->nstacks, s->nmaps, s->nsyms, BT_STKC_MAX, s->nframes, st.len };
	uint64_t len = sizeof(h) + 8ull * BT_STKC_MAX + sizeof(*maps) * (uint64_t)s->nmaps +
		       sizeof(*syms) * (uint64_t)s->nsyms + sizeof(struct rstack) * (uint64_t)s->nstacks +
		       sizeof(struct bt_dump_frame) * s->nframes + st.len;
	p = malloc(len);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	uint8_t *o = p;
#define PUT(src, n) (memcpy(o, (src), (n)), o += (n))
	PUT(&h, sizeof(h));
	PUT(s->counters, 8ull * BT_STKC_MAX);
	PUT(maps, sizeof(*maps) * s->nmaps);
	PUT(syms, sizeof(*syms) * s->nsyms);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct rstack r = { s->stacks[i].tgid, s->stacks[i].kind, s->stacks[i].flags, s->stacks[i].nframes, 0 };
		PUT(&r, sizeof(r));
	}
	for (uint32_t i = 0; i < s->nstacks; i++)
		PUT(s->frames + s->stacks[i].first, sizeof(struct bt_dump_frame) * s->stacks[i].nframes);
	if (st.len)
		PUT(st.p, st.len);
#undef PUT
	if ((uint64_t)(o - p) != len) { /* stacks[].first/nframes disagree with nframes */
		free(p);
		p = NULL;
		ret = -EINVAL;
		goto out;
	}
	*out = p;
	ret = (int64_t)len;
out:
	bt_strset_release(&st, 0);
	free(maps);
	free(syms);
	return ret;
}

/* ---- decode ---------------------------------------------------------------- */

int bt_dump_corrupt(char *err, size_t errlen, const char *part, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "corrupt dump: %s: ", part);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}
#define bad(err, errlen, ...) bt_dump_corrupt(err, errlen, "stack table", __VA_ARGS__)

void bt_dump_stacks_release(struct bt_dump_stacks *s)
{
	free(s->stacks);
	free(s->frames);
	free(s->maps);
	free(s->syms);
	free(s->strtab);
	free(s->locs);
	free(s->lines);
	free(s->loc_strtab);
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	memset(s, 0, sizeof(*s));
}

int bt_dump_stacks_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	struct hdr h;
	int r;

	if (len < sizeof(h))
		return bad(err, errlen, "%" PRIu64 " bytes, shorter than its header", len);
	memcpy(&h, p, sizeof(h));
	if (h.nstacks > BT_STACKS_MAX_COUNT || h.nmaps > BT_STACKS_MAX_COUNT || h.nsyms > BT_STACKS_MAX_COUNT ||
	    h.ncounters > 1024 || h.nframes > (uint64_t)BT_STACKS_MAX_COUNT * 16 || h.strtab_len > (1ull << 32))
		return bad(err, errlen, "counts out of range (%u stacks, %u mappings, %u symbols, %" PRIu64 " frames)",
			   h.nstacks, h.nmaps, h.nsyms, h.nframes);
	uint64_t need = sizeof(h) + 8ull * h.ncounters + sizeof(struct rmap) * (uint64_t)h.nmaps +
			sizeof(struct rsym) * (uint64_t)h.nsyms + sizeof(struct rstack) * (uint64_t)h.nstacks +
			sizeof(struct bt_dump_frame) * h.nframes + h.strtab_len;
	if (need != len)
		return bad(err, errlen, "%" PRIu64 " bytes, its counts need %" PRIu64, len, need);
	if (h.strtab_len && p[len - 1] != '\0')
		return bad(err, errlen, "string table not NUL-terminated");
	const uint8_t *o = p + sizeof(h);
	for (uint32_t i = 0; i < h.ncounters; i++, o += 8)
		if (i < BT_STKC_MAX)
			memcpy(&s->counters[i], o, 8);
	const uint8_t *rmaps = o, *rsyms = rmaps + sizeof(struct rmap) * (uint64_t)h.nmaps;
	const uint8_t *rstacks = rsyms + sizeof(struct rsym) * (uint64_t)h.nsyms;
	const uint8_t *rframes = rstacks + sizeof(struct rstack) * (uint64_t)h.nstacks;
	const char *strs = (const char *)(rframes + sizeof(struct bt_dump_frame) * h.nframes);

	s->strtab = malloc(h.strtab_len ? h.strtab_len : 1);
	s->maps = calloc(h.nmaps ? h.nmaps : 1, sizeof(*s->maps));
	s->syms = calloc(h.nsyms ? h.nsyms : 1, sizeof(*s->syms));
	s->stacks = calloc(h.nstacks ? h.nstacks : 1, sizeof(*s->stacks));
	s->frames = malloc(h.nframes ? h.nframes * sizeof(*s->frames) : 1);
	if (!s->strtab || !s->maps || !s->syms || !s->stacks || !s->frames) {
		bt_dump_stacks_release(s);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(s->strtab, strs, h.strtab_len);
	s->nmaps = h.nmaps;
	s->nsyms = h.nsyms;
	s->nstacks = h.nstacks;
	s->nframes = h.nframes;
	for (uint32_t i = 0; i < h.nmaps; i++) {
		struct rmap m;
		memcpy(&m, rmaps + i * sizeof(m), sizeof(m));
		if (m.path_off >= h.strtab_len || m.build_id_len > 20 || m.flags & ~BT_DMAP_DELETED) {
			r = bad(err, errlen, "mapping %u: bad path offset, build-id length or flags", i);
			goto fail;
		}
		s->maps[i] = (struct bt_dump_map){ .path = s->strtab + m.path_off, .flags = m.flags, .dev = m.dev,
						   .ino = m.ino, .build_id_len = m.build_id_len };
		memcpy(s->maps[i].build_id, m.build_id, 20);
	}
	for (uint32_t i = 0; i < h.nsyms; i++) {
		struct rsym y;
		memcpy(&y, rsyms + i * sizeof(y), sizeof(y));
		if (y.name_off >= h.strtab_len || (y.map != BT_DMAP_KERNEL && y.map > h.nmaps)) {
			r = bad(err, errlen, "symbol %u: bad name offset or mapping %u", i, y.map);
			goto fail;
		}
		s->syms[i] = (struct bt_dump_sym){ s->strtab + y.name_off, y.map, y.start, y.size };
	}
	uint64_t first = 0;
	for (uint32_t i = 0; i < h.nstacks; i++) {
		struct rstack k;
		memcpy(&k, rstacks + i * sizeof(k), sizeof(k));
		if (k.kind > BT_STACK_USER || (k.flags & ~BT_STACK_F_ALL) || k.nframes > BT_STACKS_MAX_FRAMES ||
		    k.nframes > h.nframes - first || ((k.flags & BT_STACK_F_UNDEFINED) && k.nframes)) {
			r = bad(err, errlen, "stack %u: bad kind %u, flags 0x%x or %u frames", i + 1, k.kind, k.flags,
				k.nframes);
			goto fail;
		}
		s->stacks[i] = (struct bt_dump_stack){ k.tgid, k.kind, k.flags, k.nframes, first };
		for (uint32_t f = 0; f < k.nframes; f++) {
			struct bt_dump_frame fr;
			memcpy(&fr, rframes + (first + f) * sizeof(fr), sizeof(fr));
			int ok = k.kind == BT_STACK_KERNEL ? fr.map == BT_DMAP_KERNEL
							   : (fr.map == BT_DMAP_NONE || (fr.map >= 1 && fr.map <= h.nmaps));
			if (ok && fr.sym)
				ok = fr.sym <= h.nsyms && s->syms[fr.sym - 1].map == fr.map;
			if (!ok) {
				r = bad(err, errlen, "stack %u frame %u: mapping %u or symbol %u out of place", i + 1, f,
					fr.map, fr.sym);
				goto fail;
			}
			s->frames[first + f] = fr;
		}
		first += k.nframes;
	}
	if (first != h.nframes) {
		r = bad(err, errlen, "stacks hold %" PRIu64 " frames, the header says %" PRIu64, first, h.nframes);
		goto fail;
	}
	return 0;
fail:
	bt_dump_stacks_release(s);
	return r;
}
