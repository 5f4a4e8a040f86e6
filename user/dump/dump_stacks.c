// SPDX-License-Identifier: MIT
/*
 * dump_stacks.c - the stack table's sections <-> struct bt_dump_stacks (see
 * dump_stacks.h, layouts in docs/dump-format.md): STKP, written now, keeps
 * stacks and frames as variable-length integers, a frame's offset from its
 * symbol's start (3-4 bytes a frame instead of 16); STCK, fixed records,
 * what earlier recorders wrote, is still read. The decoder trusts nothing:
 * counts are bounded by the bytes that hold them, the length must be exact,
 * every index and string offset is checked, so a hostile section is refused
 * with one line, never read past. STKW, after them, says why truncated
 * stacks were cut (optional: earlier readers skip it).
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
	uint64_t stream_len; /* STKP only: its stacks and frames */
};
#define HDR_FIXED 32u  /* STCK's header: no stream_len */
#define HDR_PACKED 40u
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
_Static_assert(sizeof(struct hdr) == HDR_PACKED && sizeof(struct rmap) == 48 && sizeof(struct rsym) == 24 &&
		       sizeof(struct rstack) == 16 && sizeof(struct bt_dump_frame) == 16,
	       "STCK record sizes");

/* ---- encode ---------------------------------------------------------------- */

static uint8_t *put_varint(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

/* STKP's stacks and frames into a malloc'd *out (its length), or -errno.
 * A stack: tgid, kind | flags << 1, nframes. A frame: sym << 1 | absolute,
 * then off - the symbol's start (relative), or the map (absolute and no
 * symbol) and off. A symbol's frames take its map. */
static int64_t pack_stream(const struct bt_dump_stacks *s, uint8_t **out)
{
	/* at most: a stack 5 + 1 + 5 bytes (kind and flags checked below), a
	 * frame 5 + 5 + 10 */
	uint8_t *p = malloc(13ull * s->nstacks + 20 * s->nframes + 1), *o = p;
	uint64_t total = 0;

	if (!p)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct bt_dump_stack *k = &s->stacks[i];
		/* (frames[] may hold more than nframes: a stack's `first` can
		 * skip frames a dump left out, stack_symbols.c) */
		total += k->nframes;
		/* (a reason in bits 8..15 goes to STKW) */
		if (total > s->nframes || k->kind > BT_STACK_USER || (k->flags & ~BT_STACK_F_ALL & 0xff)) {
			free(p);
			return -EINVAL;
		}
		o = put_varint(o, k->tgid);
		o = put_varint(o, (uint64_t)k->kind | (uint64_t)(k->flags & BT_STACK_F_ALL) << 1);
		o = put_varint(o, k->nframes);
		for (uint32_t f = 0; f < k->nframes; f++) {
			const struct bt_dump_frame *fr = &s->frames[k->first + f];
			const struct bt_dump_sym *y = fr->sym && fr->sym <= s->nsyms ? &s->syms[fr->sym - 1] : NULL;
			if (fr->sym && (!y || y->map != fr->map)) { /* the decoder would give it another map */
				free(p);
				return -EINVAL;
			}
			if (y && fr->off >= y->start) {
				o = put_varint(o, (uint64_t)fr->sym << 1);
				o = put_varint(o, fr->off - y->start);
				continue;
			}
			o = put_varint(o, (uint64_t)fr->sym << 1 | 1);
			if (!y)
				o = put_varint(o, fr->map);
			o = put_varint(o, fr->off);
		}
	}
	if (total != s->nframes) { /* the decoder checks the sum */
		free(p);
		return -EINVAL;
	}
	*out = p;
	return o - p;
}

int64_t bt_dump_stacks_encode(const struct bt_dump_stacks *s, int packed, uint8_t **out)
{
	struct bt_strset st = { 0 };
	struct rmap *maps = calloc(s->nmaps ? s->nmaps : 1, sizeof(*maps));
	struct rsym *syms = calloc(s->nsyms ? s->nsyms : 1, sizeof(*syms));
	uint8_t *p = NULL, *stream = NULL;
	int64_t ret, slen = 0;

	if (!maps || !syms) {
		ret = -ENOMEM;
		goto out;
	}
	if (packed && (slen = pack_stream(s, &stream)) < 0) {
		ret = slen;
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
	struct hdr h = { s->nstacks, s->nmaps, s->nsyms, BT_STKC_MAX, s->nframes, st.len, (uint64_t)slen };
	uint64_t hlen = packed ? HDR_PACKED : HDR_FIXED;
	uint64_t body = packed ? (uint64_t)slen
			       : sizeof(struct rstack) * (uint64_t)s->nstacks + sizeof(struct bt_dump_frame) * s->nframes;
	uint64_t len = hlen + 8ull * BT_STKC_MAX + sizeof(*maps) * (uint64_t)s->nmaps +
		       sizeof(*syms) * (uint64_t)s->nsyms + body + st.len;
	p = malloc(len);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	uint8_t *o = p;
#define PUT(src, n) (memcpy(o, (src), (n)), o += (n))
	PUT(&h, hlen);
	PUT(s->counters, 8ull * BT_STKC_MAX);
	PUT(maps, sizeof(*maps) * s->nmaps);
	PUT(syms, sizeof(*syms) * s->nsyms);
	if (packed) {
		PUT(stream, (size_t)slen);
	} else {
		uint64_t total = 0;
		for (uint32_t i = 0; i < s->nstacks; i++)
			total += s->stacks[i].nframes;
		if (total != s->nframes) { /* would write past p */
			free(p);
			p = NULL;
			ret = -EINVAL;
			goto out;
		}
		for (uint32_t i = 0; i < s->nstacks; i++) {
			struct rstack r = { s->stacks[i].tgid, s->stacks[i].kind, s->stacks[i].flags & BT_STACK_F_ALL,
					    s->stacks[i].nframes, 0 };
			PUT(&r, sizeof(r));
		}
		for (uint32_t i = 0; i < s->nstacks; i++)
			PUT(s->frames + s->stacks[i].first, sizeof(struct bt_dump_frame) * s->stacks[i].nframes);
	}
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
	free(stream);
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
	free(s->lost);
	free(s->lost_strtab);
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	memset(s, 0, sizeof(*s));
}

/* STKP's stream, read with bounds: each read past its end, or a varint of
 * more than 64 bits, sets bad. */
struct stream {
	const uint8_t *p;
	uint64_t len, at;
	int bad;
};

static uint64_t get_varint(struct stream *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->at >= r->len)
			break;
		uint8_t b = r->p[r->at++];
		if (shift == 63 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

/* The next stack record: from STCK's fixed records, or STKP's stream. */
static int next_stack(const uint8_t *rstacks, struct stream *r, uint32_t i, struct rstack *k)
{
	if (!r) {
		memcpy(k, rstacks + i * sizeof(*k), sizeof(*k));
		return 0;
	}
	uint64_t tgid = get_varint(r), kf = get_varint(r), nf = get_varint(r);
	if (r->bad || tgid > UINT32_MAX || kf > 0xffff || nf > UINT32_MAX)
		return -1;
	*k = (struct rstack){ (uint32_t)tgid, (uint16_t)(kf & 1), (uint16_t)(kf >> 1), (uint32_t)nf, 0 };
	return 0;
}

/* The next frame: STCK's record at index fi, or STKP's next (its map and
 * absolute offset worked out from its symbol). -1: a number cut short or
 * too wide; -2: a symbol beyond the table or a relative frame without one. */
static int next_frame(const uint8_t *rframes, struct stream *r, uint64_t fi, const struct bt_dump_stacks *s,
		      struct bt_dump_frame *fr)
{
	if (!r) {
		memcpy(fr, rframes + fi * sizeof(*fr), sizeof(*fr));
		return 0;
	}
	uint64_t v = get_varint(r), sym = v >> 1;
	if (r->bad)
		return -1;
	if (sym > s->nsyms || (!(v & 1) && !sym))
		return -2; /* a symbol beyond the table, or relative to none */
	const struct bt_dump_sym *y = sym ? &s->syms[sym - 1] : NULL;
	uint64_t map = y ? y->map : get_varint(r), off = get_varint(r);
	if (r->bad || map > UINT32_MAX || (!(v & 1) && off > UINT64_MAX - y->start))
		return -1;
	*fr = (struct bt_dump_frame){ (uint32_t)map, (uint32_t)sym, v & 1 ? off : y->start + off };
	return 0;
}

int bt_dump_stacks_decode(const uint8_t *p, uint64_t len, int packed, uint64_t decoded_max, struct bt_dump_stacks *s,
			  char *err, size_t errlen)
{
	struct hdr h = { 0 };
	uint32_t hlen = packed ? HDR_PACKED : HDR_FIXED;
	int r;

	if (len < hlen)
		return bad(err, errlen, "%" PRIu64 " bytes, shorter than its header", len);
	memcpy(&h, p, hlen);
	/* STKP: a stack takes 3 bytes of the stream at least, a frame 2, so
	 * the stream's length bounds what a hostile header makes us allocate. */
	if (h.nstacks > BT_STACKS_MAX_COUNT || h.nmaps > BT_STACKS_MAX_COUNT || h.nsyms > BT_STACKS_MAX_COUNT ||
	    h.ncounters > 1024 || h.nframes > (uint64_t)BT_STACKS_MAX_COUNT * 16 || h.strtab_len > (1ull << 32) ||
	    (packed && (h.stream_len > (1ull << 40) || 3ull * h.nstacks + 2 * h.nframes > h.stream_len)))
		return bad(err, errlen, "counts out of range (%u stacks, %u mappings, %u symbols, %" PRIu64 " frames)",
			   h.nstacks, h.nmaps, h.nsyms, h.nframes);
	/* A packed frame of 2 bytes is 16 decoded: the body's bound does not
	 * cover what it decodes to, so that has the same bound of its own. */
	uint64_t decoded = sizeof(*s->frames) * h.nframes + sizeof(*s->stacks) * (uint64_t)h.nstacks;
	if (packed && decoded > decoded_max)
		return bad(err, errlen, "%u stacks and %" PRIu64 " frames take %" PRIu64 " MiB decoded, more than %" PRIu64
			   " MiB (BTRACE_DUMP_MAX_BODY)", h.nstacks, h.nframes, decoded >> 20, decoded_max >> 20);
	uint64_t body = packed ? h.stream_len
			       : sizeof(struct rstack) * (uint64_t)h.nstacks + sizeof(struct bt_dump_frame) * h.nframes;
	uint64_t need = hlen + 8ull * h.ncounters + sizeof(struct rmap) * (uint64_t)h.nmaps +
			sizeof(struct rsym) * (uint64_t)h.nsyms + body + h.strtab_len;
	if (need != len)
		return bad(err, errlen, "%" PRIu64 " bytes, its counts need %" PRIu64, len, need);
	if (h.strtab_len && p[len - 1] != '\0')
		return bad(err, errlen, "string table not NUL-terminated");
	const uint8_t *o = p + hlen;
	for (uint32_t i = 0; i < h.ncounters; i++, o += 8)
		if (i < BT_STKC_MAX)
			memcpy(&s->counters[i], o, 8);
	const uint8_t *rmaps = o, *rsyms = rmaps + sizeof(struct rmap) * (uint64_t)h.nmaps;
	const uint8_t *rstacks = rsyms + sizeof(struct rsym) * (uint64_t)h.nsyms;
	const uint8_t *rframes = rstacks + sizeof(struct rstack) * (uint64_t)h.nstacks;
	const char *strs = (const char *)(rstacks + body);
	struct stream stream = { rstacks, h.stream_len, 0, 0 }, *rs = packed ? &stream : NULL;

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
		/* map NONE: JIT code named from a perf map, a Python function */
		if (y.name_off >= h.strtab_len || (y.map != BT_DMAP_KERNEL && y.map != BT_DMAP_NONE && y.map > h.nmaps)) {
			r = bad(err, errlen, "symbol %u: bad name offset or mapping %u", i, y.map);
			goto fail;
		}
		s->syms[i] = (struct bt_dump_sym){ s->strtab + y.name_off, y.map, y.start, y.size };
	}
	uint64_t first = 0;
	for (uint32_t i = 0; i < h.nstacks; i++) {
		struct rstack k;
		if (next_stack(rstacks, rs, i, &k) < 0) {
			r = bad(err, errlen, "stack %u: cut short or a number out of range", i + 1);
			goto fail;
		}
		if (k.kind > BT_STACK_USER || (k.flags & ~BT_STACK_F_ALL) || k.nframes > BT_STACKS_MAX_FRAMES ||
		    k.nframes > h.nframes - first || ((k.flags & BT_STACK_F_UNDEFINED) && k.nframes)) {
			r = bad(err, errlen, "stack %u: bad kind %u, flags 0x%x or %u frames", i + 1, k.kind, k.flags,
				k.nframes);
			goto fail;
		}
		s->stacks[i] = (struct bt_dump_stack){ k.tgid, k.kind, k.flags, k.nframes, first };
		for (uint32_t f = 0; f < k.nframes; f++) {
			struct bt_dump_frame fr;
			int nr = next_frame(rframes, rs, first + f, s, &fr);
			if (nr < 0) {
				r = bad(err, errlen, "stack %u frame %u: %s", i + 1, f,
					nr == -2 ? "symbol beyond the table, or relative to none"
						 : "cut short or a number out of range");
				goto fail;
			}
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
	if (packed && stream.at != stream.len) {
		r = bad(err, errlen, "%" PRIu64 " bytes of stacks left over", stream.len - stream.at);
		goto fail;
	}
	return 0;
fail:
	bt_dump_stacks_release(s);
	return r;
}

/* ---- STKW: truncation reasons ---------------------------------------------- */

#define STKW_VERSION 1
struct whyhdr {
	uint32_t version, count;
};
struct whyrec {
	uint32_t id, why;
};
_Static_assert(sizeof(struct whyhdr) == 8 && sizeof(struct whyrec) == 8, "STKW record sizes");

int64_t bt_dump_stackwhy_encode(const struct bt_dump_stacks *s, uint8_t **out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nstacks; i++)
		n += BT_STACK_WHY(s->stacks[i].flags) != 0;
	if (!n)
		return 0;
	uint64_t len = sizeof(struct whyhdr) + sizeof(struct whyrec) * (uint64_t)n;
	uint8_t *p = malloc(len), *o = p;
	if (!p)
		return -ENOMEM;
	struct whyhdr h = { STKW_VERSION, n };
	memcpy(o, &h, sizeof(h));
	o += sizeof(h);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		struct whyrec w = { i + 1, BT_STACK_WHY(s->stacks[i].flags) };
		if (!w.why)
			continue;
		memcpy(o, &w, sizeof(w));
		o += sizeof(w);
	}
	*out = p;
	return (int64_t)len;
}

int bt_dump_stackwhy_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	struct whyhdr h;
	uint32_t prev = 0;

	if (len < sizeof(h))
		return bt_dump_corrupt(err, errlen, "truncation reasons", "%" PRIu64 " bytes, shorter than its header",
				       len);
	memcpy(&h, p, sizeof(h));
	if (h.version != STKW_VERSION)
		return 0; /* a newer writer's: skipped like an unknown optional section */
	if (len != sizeof(h) + sizeof(struct whyrec) * (uint64_t)h.count)
		return bt_dump_corrupt(err, errlen, "truncation reasons", "%" PRIu64 " bytes for %u reasons", len,
				       h.count);
	/* checked whole first: a refused section changes no stack */
	for (uint32_t i = 0; i < h.count; i++) {
		struct whyrec w;
		memcpy(&w, p + sizeof(h) + i * sizeof(w), sizeof(w));
		if (w.id <= prev || w.id > s->nstacks || !w.why || w.why > 0xff)
			return bt_dump_corrupt(err, errlen, "truncation reasons",
					       "reason %u: stack %u (of %u, after %u) or reason %u out of range", i,
					       w.id, s->nstacks, prev, w.why);
		prev = w.id;
	}
	for (uint32_t i = 0; i < h.count; i++) {
		struct whyrec w;
		memcpy(&w, p + sizeof(h) + i * sizeof(w), sizeof(w));
		struct bt_dump_stack *k = &s->stacks[w.id - 1];
		k->flags = (uint16_t)((k->flags & BT_STACK_F_ALL) | BT_STACK_F_WHY(w.why));
	}
	return 0;
}
