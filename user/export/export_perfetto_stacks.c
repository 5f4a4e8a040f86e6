// SPDX-License-Identifier: MIT
/*
 * export_perfetto_stacks.c - call stacks for the Perfetto trace (see
 * export_perfetto_stacks.h). Field numbers are Perfetto's
 * (protos/perfetto/trace/interned_data/interned_data.proto,
 * profiling/profile_common.proto).
 *
 * Interning: function name iid = 1 + symbol index (unknown functions share
 * one "[unknown]" name per mapping: iid nsyms + 1 + mapping slot); mapping
 * iid = 1 + mapping index, then the kernel, then "anonymous"; frame iid =
 * 1 + index into the table's frames; callstack iid = 1 + index of the
 * (kstack, ustack) pair in the order first used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"
#include "dump_stacks.h"
#include "events.h"
#include "export_perfetto_stacks.h"
#include "report_stacks.h"

/* InternedData */
#define ID_FUNCTION_NAMES 5
#define ID_FRAMES 6
#define ID_CALLSTACKS 7
#define ID_BUILD_IDS 16
#define ID_MAPPING_PATHS 17
#define ID_MAPPINGS 19
/* InternedString */
#define IS_IID 1
#define IS_STR 2
/* Mapping */
#define MP_IID 1
#define MP_BUILD_ID 2
#define MP_START 4
#define MP_END 5
#define MP_PATH_STRING_IDS 7
/* Frame */
#define FR_IID 1
#define FR_FUNCTION_NAME_ID 2
#define FR_MAPPING_ID 3
#define FR_REL_PC 4
/* Callstack */
#define CSK_IID 1
#define CSK_FRAME_IDS 2

#define CHART_DEPTH 256 /* frames of a sample drawn in the call chart */

struct chart {
	uint32_t tid, tgid;
	uint64_t last_ts;
	uint32_t depth;
	uint64_t open[CHART_DEPTH]; /* frame keys of the open slices, outermost first */
};

struct bt_pf_stacks {
	const struct bt_dump_stacks *s;
	uint64_t *pairs; /* kstack << 32 | ustack, by iid - 1 */
	size_t npairs, cap;
	uint32_t *slot; /* open addressing: 1 + pair index */
	size_t nslots;
	struct chart *charts;
	size_t ncharts, ccap;
};

static uint64_t mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	return v ^ (v >> 33);
}

static size_t find(const struct bt_pf_stacks *ps, uint64_t key)
{
	size_t i = mix(key) & (ps->nslots - 1);
	while (ps->slot[i] && ps->pairs[ps->slot[i] - 1] != key)
		i = (i + 1) & (ps->nslots - 1);
	return i;
}

static const struct bt_dump_stack *stack_of(const struct bt_dump_stacks *s, uint32_t id)
{
	return id && id != BT_STACK_LOST && id <= s->nstacks ? &s->stacks[id - 1] : NULL;
}

struct bt_pf_stacks *bt_pf_stacks_new(const struct bt_dump_stacks *s, const struct bt_dump_event *ev, size_t n,
				      int *err)
{
	struct bt_pf_stacks *ps = calloc(1, sizeof(*ps));
	size_t nsamples = 0;

	*err = -ENOMEM;
	if (!ps)
		return NULL;
	ps->s = s;
	for (size_t i = 0; i < n; i++)
		nsamples += ev[i].ev->type == BT_EV_CPU_SAMPLE;
	ps->nslots = 64;
	while (ps->nslots < 2 * nsamples + 2)
		ps->nslots *= 2;
	ps->slot = calloc(ps->nslots, sizeof(*ps->slot));
	ps->pairs = malloc((nsamples + 1) * sizeof(*ps->pairs));
	if (!ps->slot || !ps->pairs)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].ev->type != BT_EV_CPU_SAMPLE)
			continue;
		const struct bt_ev_sample *e = (const void *)ev[i].ev;
		if (!stack_of(s, e->kstack) && !stack_of(s, e->ustack))
			continue;
		uint64_t key = (uint64_t)e->kstack << 32 | e->ustack;
		size_t k = find(ps, key);
		if (!ps->slot[k]) {
			ps->pairs[ps->npairs++] = key;
			ps->slot[k] = (uint32_t)ps->npairs;
		}
	}
	*err = 0;
	return ps;
fail:
	bt_pf_stacks_free(ps);
	return NULL;
}

void bt_pf_stacks_free(struct bt_pf_stacks *ps)
{
	if (!ps)
		return;
	free(ps->pairs);
	free(ps->slot);
	free(ps->charts);
	free(ps);
}

uint64_t bt_pf_stacks_iid(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack)
{
	size_t k = find(ps, (uint64_t)kstack << 32 | ustack);
	return ps->slot[k];
}

/* mapping iid of a frame's map */
static uint64_t map_iid(const struct bt_dump_stacks *s, uint32_t map)
{
	if (map == BT_DMAP_KERNEL)
		return s->nmaps + 1;
	if (map == BT_DMAP_NONE || map > s->nmaps)
		return s->nmaps + 2;
	return map;
}

static uint64_t name_iid(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	if (f->sym && f->sym <= s->nsyms)
		return f->sym;
	return s->nsyms + map_iid(s, f->map); /* "[unknown]" of that mapping */
}

static void istr(struct pbw *w, uint32_t field, uint64_t iid, const char *str)
{
	pbw_begin(w, field);
	pbw_uint(w, IS_IID, iid);
	pbw_string(w, IS_STR, str);
	pbw_end(w);
}

void bt_pf_stacks_interned(struct bt_pf_stacks *ps, struct pbw *w, uint32_t field)
{
	const struct bt_dump_stacks *s = ps->s;
	char buf[64];

	pbw_begin(w, field);
	for (uint32_t i = 0; i < s->nsyms; i++)
		istr(w, ID_FUNCTION_NAMES, i + 1, s->syms[i].name);
	for (uint32_t m = 1; m <= s->nmaps + 2; m++)
		istr(w, ID_FUNCTION_NAMES, s->nsyms + m, "[unknown]");
	for (uint32_t i = 0; i < s->nmaps; i++) {
		istr(w, ID_MAPPING_PATHS, i + 1, s->maps[i].path);
		if (s->maps[i].build_id_len) {
			size_t o = 0;
			for (uint32_t k = 0; k < s->maps[i].build_id_len && o + 3 < sizeof(buf); k++)
				o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%02x", s->maps[i].build_id[k]);
			istr(w, ID_BUILD_IDS, i + 1, buf);
		}
	}
	istr(w, ID_MAPPING_PATHS, s->nmaps + 1, "[kernel.kallsyms]");
	istr(w, ID_MAPPING_PATHS, s->nmaps + 2, "[anonymous]");
	for (uint32_t m = 1; m <= s->nmaps + 2; m++) {
		pbw_begin(w, ID_MAPPINGS);
		pbw_uint(w, MP_IID, m);
		if (m <= s->nmaps && s->maps[m - 1].build_id_len)
			pbw_uint(w, MP_BUILD_ID, m);
		pbw_uint(w, MP_START, 0);
		pbw_uint(w, MP_END, UINT64_MAX);
		pbw_uint(w, MP_PATH_STRING_IDS, m);
		pbw_end(w);
	}
	for (uint64_t i = 0; i < s->nframes; i++) {
		const struct bt_dump_frame *f = &s->frames[i];
		pbw_begin(w, ID_FRAMES);
		pbw_uint(w, FR_IID, i + 1);
		pbw_uint(w, FR_FUNCTION_NAME_ID, name_iid(s, f));
		pbw_uint(w, FR_MAPPING_ID, map_iid(s, f->map));
		pbw_uint(w, FR_REL_PC, f->off);
		pbw_end(w);
	}
	for (size_t p = 0; p < ps->npairs; p++) {
		const struct bt_dump_stack *ids[2] = { stack_of(s, (uint32_t)ps->pairs[p]),
						       stack_of(s, (uint32_t)(ps->pairs[p] >> 32)) };
		pbw_begin(w, ID_CALLSTACKS);
		pbw_uint(w, CSK_IID, p + 1);
		/* bottom first: outermost user frame ... innermost kernel frame */
		for (int k = 0; k < 2; k++)
			for (uint32_t i = ids[k] ? ids[k]->nframes : 0; i-- > 0;)
				pbw_uint(w, CSK_FRAME_IDS, ids[k]->first + i + 1);
		pbw_end(w);
	}
	pbw_end(w);
}

/* ---- call chart -------------------------------------------------------------- */

static struct chart *chart_of(struct bt_pf_stacks *ps, uint32_t tid, uint32_t tgid)
{
	for (size_t i = 0; i < ps->ncharts; i++)
		if (ps->charts[i].tid == tid)
			return &ps->charts[i];
	if (ps->ncharts == ps->ccap) {
		size_t cap = ps->ccap ? ps->ccap * 2 : 16;
		void *p = realloc(ps->charts, cap * sizeof(*ps->charts));
		if (!p)
			return NULL;
		ps->charts = p;
		ps->ccap = cap;
	}
	struct chart *c = &ps->charts[ps->ncharts++];
	memset(c, 0, sizeof(*c));
	c->tid = tid;
	c->tgid = tgid;
	return c;
}

/* A frame's key for "the same function at this depth": its function. */
static uint64_t frame_key(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	return (uint64_t)map_iid(s, f->map) << 32 | (uint32_t)name_iid(s, f);
}

static const char *frame_name(const struct bt_dump_stacks *s, uint64_t key, char *buf, size_t len)
{
	uint32_t nm = (uint32_t)key;
	if (nm >= 1 && nm <= s->nsyms)
		return s->syms[nm - 1].name;
	uint32_t m = (uint32_t)(key >> 32);
	snprintf(buf, len, "[unknown] (%s)",
		 m <= s->nmaps ? s->maps[m - 1].path : m == s->nmaps + 1 ? "kernel" : "anonymous");
	return buf;
}

static int close_to(struct bt_pf_stacks *ps, struct chart *c, uint32_t depth, uint64_t ts, bt_pf_chart_fn fn,
		    void *ctx)
{
	while (c->depth > depth) {
		c->depth--;
		int r = fn(ctx, c->tid, c->tgid, ts, 0, NULL);
		if (r)
			return r;
	}
	return 0;
}

int bt_pf_chart_sample(struct bt_pf_stacks *ps, uint32_t tid, uint32_t tgid, uint64_t ts, uint32_t kstack,
		       uint32_t ustack, uint64_t period_ns, bt_pf_chart_fn fn, void *ctx)
{
	const struct bt_dump_stacks *s = ps->s;
	struct chart *c = chart_of(ps, tid, tgid);
	uint64_t keys[CHART_DEPTH];
	uint32_t n = 0, same = 0;
	char buf[512];
	int r;

	if (!c)
		return -ENOMEM;
	const struct bt_dump_stack *ids[2] = { stack_of(s, ustack), stack_of(s, kstack) };
	for (int k = 0; k < 2; k++)
		for (uint32_t i = ids[k] ? ids[k]->nframes : 0; i-- > 0 && n < CHART_DEPTH;)
			keys[n++] = frame_key(s, &s->frames[ids[k]->first + i]);
	/* not running for two periods: what was open ended a period after */
	if (c->depth && ts - c->last_ts > 2 * period_ns && (r = close_to(ps, c, 0, c->last_ts + period_ns, fn, ctx)))
		return r;
	while (same < n && same < c->depth && c->open[same] == keys[same])
		same++;
	if ((r = close_to(ps, c, same, ts, fn, ctx)))
		return r;
	for (uint32_t i = same; i < n; i++) {
		if ((r = fn(ctx, tid, tgid, ts, 1, frame_name(s, keys[i], buf, sizeof(buf)))))
			return r;
		c->open[c->depth++] = keys[i];
	}
	c->last_ts = ts;
	return 0;
}

int bt_pf_chart_finish(struct bt_pf_stacks *ps, uint64_t period_ns, bt_pf_chart_fn fn, void *ctx)
{
	for (size_t i = 0; i < ps->ncharts; i++) {
		int r = close_to(ps, &ps->charts[i], 0, ps->charts[i].last_ts + period_ns, fn, ctx);
		if (r)
			return r;
	}
	return 0;
}

/* ---- off-CPU names ------------------------------------------------------------ */

const char *bt_pf_stacks_leaf(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack)
{
	const struct bt_dump_stacks *s = ps->s;
	const struct bt_dump_stack *k = stack_of(s, ustack);
	if (!k || !k->nframes)
		k = stack_of(s, kstack);
	if (!k || !k->nframes)
		return "[unknown]";
	const struct bt_dump_frame *f = &s->frames[k->first];
	return f->sym && f->sym <= s->nsyms ? s->syms[f->sym - 1].name : "[unknown]";
}

char *bt_pf_stacks_text(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack)
{
	const struct bt_dump_stacks *s = ps->s;
	size_t cap = 4096, o = 0;
	char *out = malloc(cap), line[600];
	uint32_t ids[2] = { kstack, ustack };

	if (!out)
		return NULL;
	out[0] = 0;
	for (int k = 0; k < 2; k++) {
		const struct bt_dump_stack *st = stack_of(s, ids[k]);
		for (uint32_t i = 0; st && i < st->nframes; i++) {
			bt_frame_text(s, &s->frames[st->first + i], (int)i, line, sizeof(line));
			size_t l = strlen(line);
			if (o + l + 2 > cap) {
				char *p = realloc(out, cap * 2 + l);
				if (!p)
					return out;
				out = p;
				cap = cap * 2 + l;
			}
			memcpy(out + o, line, l);
			o += l;
			out[o++] = '\n';
			out[o] = 0;
		}
	}
	return out;
}
