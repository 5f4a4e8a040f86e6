// SPDX-License-Identifier: MIT
/*
 * export_perfetto_stacks.c - call stacks for the Perfetto trace (see
 * export_perfetto_stacks.h). Field numbers are Perfetto's
 * (protos/perfetto/trace/interned_data/interned_data.proto,
 * profiling/profile_common.proto).
 *
 * Interning: function name iid = 1 + symbol index (written without its
 * symbol version); unknown functions share one "[unknown]" name per
 * mapping (nsyms + mapping iid); then the inlined functions' names; then
 * the two labels of a sample without a usable stack. Mapping iid = 1 +
 * mapping index, then the kernel, then "anonymous". Callstack iid = 1 +
 * index of the (kstack, ustack) pair in the order first used by a CPU
 * sample, off-CPU block or waker.
 *
 * Frames: trace processor keeps one frame per (mapping, rel_pc, name), the
 * first one's source line winning, so a Frame is written once per such key
 * (frame iids in the order first needed). rel_pc is the offset the frame's
 * symbol and line were looked up at (bt_frame_lookup_off: a return address
 * minus one, the call), so a line is a function of the key. Each call the
 * compiler inlined at a frame's address is a Frame of its own (the inlined
 * function's name and line, same mapping and rel_pc) stacked on it in the
 * callstack, so flame graphs and the call chart show inlined functions as
 * calls.
 *
 * A sample whose stack is lost (table full, not taken, frames never came)
 * keeps its place: its callstack starts with a "[stack lost]" frame (what
 * is left of it above), or is "[no stack]" alone; never empty (trace
 * processor counts an empty callstack as an error and drops the sample).
 *
 * Build-ids are raw bytes: trace processor reads InternedData.build_ids
 * with BuildId::FromRaw and shows them as hex.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"
#include "dump_stacks.h"
#include "events.h"
#include "export_names.h"
#include "export_perfetto_stacks.h"
#include "hash_mix.h"
#include "util.h"

/* InternedData */
#define ID_FUNCTION_NAMES 5
#define ID_FRAMES 6
#define ID_CALLSTACKS 7
#define ID_BUILD_IDS 16
#define ID_MAPPING_PATHS 17
#define ID_SOURCE_PATHS 18
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
#define FR_SOURCE_PATH_IID 5
#define FR_LINE_NUMBER 6
/* Callstack */
#define CSK_IID 1
#define CSK_FRAME_IDS 2

/* levels of a sample drawn in the call chart: trace processor keeps 512
 * levels of slices; a deeper sample's last one is "[deeper frames]" */
#define CHART_DEPTH 511
#define MAX_LEVELS BT_SRCLOC_MAX_DEPTH /* interned frames of one stack frame: itself and its inlined calls */
/* frames of one callstack: both stacks, each frame with its inlined calls, and a label */
#define MAX_CS_FRAMES (2 * BT_STACKS_MAX_FRAMES * MAX_LEVELS + 1)
#define NO_LINE UINT64_MAX

/* What one interned Frame is: trace processor's key, and its source line
 * (index into lines) or NO_LINE. */
struct level {
	uint64_t map, rel_pc, name, li;
};

struct chart {
	uint32_t tid, tgid;
	uint64_t last_ts;
	uint32_t depth;
	uint64_t open[CHART_DEPTH]; /* frame keys of the open slices, outermost first */
};

/* Strings interned once each: a path repeats in every line of its file. */
struct sset {
	const char **str; /* iid - 1 (in its own numbering) -> string */
	uint32_t n;
	uint32_t *slot;   /* open addressing: 1 + index into str */
	size_t nslots;
};

/* One interned Frame: trace processor's key and our iid for it. */
struct fkey {
	uint64_t rel_pc, name;
	uint32_t map, iid; /* iid 0: free slot */
};

struct bt_pf_stacks {
	const struct bt_dump_stacks *s;
	/* source lines, by index into s->lines (none without SLOC): 1 + index
	 * into fns of the inlined function a line is in (the frame's own line:
	 * 0), 1 + index into srcs of its file (0 none) */
	uint32_t *line_fn, *line_src;
	struct sset fns, srcs;
	uint64_t *pairs; /* kstack << 32 | ustack, by iid - 1 */
	size_t npairs;
	uint32_t *slot; /* open addressing: 1 + pair index */
	size_t nslots;
	struct fkey *fk; /* Frames written, open addressing */
	size_t nfk, fkslots;
	int err;         /* -ENOMEM growing fk */
	uint64_t *csf;   /* [MAX_CS_FRAMES]: the frame iids of the callstack being written */
	struct level *lv;/* [MAX_CS_FRAMES]: the interned frames of one sample (pair_levels) */
	char *name;      /* frame_name's text, grown to the longest name */
	size_t namecap;
	struct chart *charts;
	size_t ncharts, ccap;
};


static size_t find(const struct bt_pf_stacks *ps, uint64_t key)
{
	size_t i = bt_u64_mix(key) & (ps->nslots - 1);
	while (ps->slot[i] && ps->pairs[ps->slot[i] - 1] != key)
		i = (i + 1) & (ps->nslots - 1);
	return i;
}

/* Room for n strings: 0 or -ENOMEM. */
static int sset_init(struct sset *t, size_t n)
{
	t->nslots = 64;
	while (t->nslots < 2 * n + 2)
		t->nslots *= 2;
	t->str = malloc((n + 1) * sizeof(*t->str));
	t->slot = calloc(t->nslots, sizeof(*t->slot));
	return t->str && t->slot ? 0 : -ENOMEM;
}

/* 1 + index of p, added if new; 0 for no string (NULL or empty). */
static uint32_t sset_add(struct sset *t, const char *p)
{
	if (!p || !*p)
		return 0;
	size_t i = bt_str_hash(p, 0) & (t->nslots - 1);
	while (t->slot[i] && strcmp(t->str[t->slot[i] - 1], p))
		i = (i + 1) & (t->nslots - 1);
	if (!t->slot[i]) {
		t->str[t->n++] = p;
		t->slot[i] = t->n;
	}
	return t->slot[i];
}

static void sset_free(struct sset *t)
{
	free(t->str);
	free(t->slot);
}

/* Each source line's file, and its function if it is an inlined call's,
 * interned once. 0 or -ENOMEM. */
static int prep_lines(struct bt_pf_stacks *ps)
{
	const struct bt_dump_stacks *s = ps->s;

	if (!s->nlocs || !s->nlines)
		return 0;
	ps->line_fn = calloc(s->nlines, sizeof(*ps->line_fn));
	ps->line_src = calloc(s->nlines, sizeof(*ps->line_src));
	if (!ps->line_fn || !ps->line_src || sset_init(&ps->fns, s->nlines) || sset_init(&ps->srcs, s->nlines))
		return -ENOMEM;
	for (uint32_t k = 0; k < s->nlocs; k++) {
		const struct bt_dump_srcloc *l = &s->locs[k];
		for (uint32_t q = 0; q < l->nlines; q++) {
			ps->line_src[l->first + q] = sset_add(&ps->srcs, s->lines[l->first + q].file);
			if (q + 1 < l->nlines)
				ps->line_fn[l->first + q] = sset_add(&ps->fns, s->lines[l->first + q].func);
		}
	}
	return 0;
}

static int has_stack(uint32_t type)
{
	return type == BT_EV_CPU_SAMPLE || type == BT_EV_OFFCPU || type == BT_EV_WAKER;
}

struct bt_pf_stacks *bt_pf_stacks_new(const struct bt_dump_stacks *s, const struct bt_dump_event *ev, size_t n,
				      int *err)
{
	struct bt_pf_stacks *ps = calloc(1, sizeof(*ps));
	size_t nuse = 0;

	*err = -ENOMEM;
	if (!ps)
		return NULL;
	ps->s = s;
	if (prep_lines(ps))
		goto fail;
	for (size_t i = 0; i < n; i++)
		nuse += ev[i].app < 0 && has_stack(ev[i].ev->type);
	ps->nslots = 64;
	while (ps->nslots < 2 * nuse + 2)
		ps->nslots *= 2;
	ps->slot = calloc(ps->nslots, sizeof(*ps->slot));
	ps->pairs = malloc((nuse + 1) * sizeof(*ps->pairs));
	ps->csf = malloc(MAX_CS_FRAMES * sizeof(*ps->csf));
	ps->lv = malloc(MAX_CS_FRAMES * sizeof(*ps->lv));
	if (!ps->slot || !ps->pairs || !ps->csf || !ps->lv)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].app >= 0 || !has_stack(ev[i].ev->type))
			continue;
		const struct bt_ev_sample *e = (const void *)ev[i].ev;
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
	free(ps->fk);
	free(ps->csf);
	free(ps->lv);
	free(ps->name);
	free(ps->charts);
	free(ps->line_fn);
	free(ps->line_src);
	sset_free(&ps->fns);
	sset_free(&ps->srcs);
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
#define ANON_MAP(s) ((uint64_t)(s)->nmaps + 2)

static uint64_t name_iid(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	if (f->sym && f->sym <= s->nsyms)
		return f->sym;
	return s->nsyms + map_iid(s, f->map); /* "[unknown]" of that mapping */
}

/* function name iid of the first inlined function: after the "[unknown]"s */
static uint64_t fn_base(const struct bt_dump_stacks *s)
{
	return (uint64_t)s->nsyms + s->nmaps + 2;
}

/* the labels of a sample without a usable stack, after the inlined functions */
enum { LABEL_LOST = 1, LABEL_NONE = 2, LABEL_DEEP = 3 };
static const char *const label_names[] = { NULL, "[stack lost]", "[no stack]", "[deeper frames]" };
static uint64_t label_iid(const struct bt_pf_stacks *ps, int label)
{
	return fn_base(ps->s) + ps->fns.n + (uint64_t)label;
}

/* A frame's key for "the same function at this depth" (call chart): its
 * mapping and function name. */
static uint64_t name_key(uint64_t map, uint64_t name)
{
	return map << 32 | (uint32_t)name;
}

static uint64_t inl_name_iid(const struct bt_pf_stacks *ps, const struct bt_dump_frame *f, uint64_t li)
{
	if (ps->line_fn[li])
		return fn_base(ps->s) + ps->line_fn[li];
	return ps->s->nsyms + map_iid(ps->s, f->map); /* "[unknown]" of that mapping */
}

/* The interned frames frame i of st stands for, outermost first: itself,
 * then each call inlined at its address (MAX_LEVELS at most); how many. */
static uint32_t frame_levels(const struct bt_pf_stacks *ps, const struct bt_dump_stack *st, uint32_t i,
			     struct level *lv)
{
	const struct bt_dump_stacks *s = ps->s;
	const struct bt_dump_frame *f = &s->frames[st->first + i];
	const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(ps->s, f, i);
	uint64_t map = map_iid(s, f->map), pc = bt_frame_lookup_off(f->off, i);
	uint32_t n = 0;

	lv[n++] = (struct level){ map, pc, name_iid(s, f), l ? l->first + l->nlines - 1 : NO_LINE };
	for (uint32_t q = l ? l->nlines - 1 : 0; q-- > 0 && n < MAX_LEVELS;)
		lv[n++] = (struct level){ map, pc, inl_name_iid(ps, f, l->first + q), l->first + q };
	return n;
}

/* Room for one more Frame in the table: 0 or -ENOMEM. */
static int fk_grow(struct bt_pf_stacks *ps)
{
	if (2 * (ps->nfk + 1) <= ps->fkslots)
		return 0;
	size_t ns = ps->fkslots ? ps->fkslots * 2 : 1024;
	struct fkey *t = calloc(ns, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < ps->fkslots; i++) {
		if (!ps->fk[i].iid)
			continue;
		const struct fkey *k = &ps->fk[i];
		size_t j = bt_u64_mix(k->rel_pc ^ bt_u64_mix(k->name << 20 ^ k->map)) & (ns - 1);
		while (t[j].iid)
			j = (j + 1) & (ns - 1);
		t[j] = *k;
	}
	free(ps->fk);
	ps->fk = t;
	ps->fkslots = ns;
	return 0;
}

/* The iid of the Frame for lv, written into w (InternedData open) if new;
 * 0 out of memory. */
static const char *frame_name(struct bt_pf_stacks *ps, uint64_t key);

static uint64_t frame_iid(struct bt_pf_stacks *ps, struct pbw *w, const struct level *lv)
{
	if (ps->err || (ps->err = fk_grow(ps)))
		return 0;
	/* Keyed by the name's text, as the importer merges: a symbol and an
	 * inlined function of the same name have different iids. */
	const char *nm = frame_name(ps, name_key(lv->map, lv->name));
	if (!nm)
		return 0;
	uint64_t nh = bt_str_hash(nm, 0);
	size_t j = bt_u64_mix(lv->rel_pc ^ bt_u64_mix(nh << 20 ^ lv->map)) & (ps->fkslots - 1);
	for (; ps->fk[j].iid; j = (j + 1) & (ps->fkslots - 1))
		if (ps->fk[j].rel_pc == lv->rel_pc && ps->fk[j].name == nh && ps->fk[j].map == lv->map)
			return ps->fk[j].iid;
	ps->fk[j] = (struct fkey){ lv->rel_pc, nh, (uint32_t)lv->map, (uint32_t)++ps->nfk };
	pbw_begin(w, ID_FRAMES);
	pbw_uint(w, FR_IID, ps->nfk);
	pbw_uint(w, FR_FUNCTION_NAME_ID, lv->name);
	pbw_uint(w, FR_MAPPING_ID, lv->map);
	pbw_uint(w, FR_REL_PC, lv->rel_pc);
	/* never 0: trace processor drops a frame whose source path is not interned */
	if (lv->li != NO_LINE && ps->line_src[lv->li])
		pbw_uint(w, FR_SOURCE_PATH_IID, ps->line_src[lv->li]);
	if (lv->li != NO_LINE && ps->s->lines[lv->li].line)
		pbw_uint(w, FR_LINE_NUMBER, ps->s->lines[lv->li].line);
	pbw_end(w);
	return ps->nfk;
}

/* The interned frames of pair (kid, uid), bottom first, in ps->lv: "[stack
 * lost]" if a stack is missing, the outermost user frame ... the innermost
 * kernel frame, each with its inlined calls; "[no stack]" alone if that is
 * nothing. How many. The callstack and the call chart are both drawn from
 * it, so the chart shows what the flame graph counts. */
static size_t pair_levels(struct bt_pf_stacks *ps, uint32_t kid, uint32_t uid)
{
	const struct bt_dump_stacks *s = ps->s;
	const struct bt_dump_stack *ids[2] = { bt_export_stack(s, uid), bt_export_stack(s, kid) };
	struct level *lv = ps->lv;
	size_t n = 0;

	if (bt_export_stack_lost(s, kid) || bt_export_stack_lost(s, uid))
		lv[n++] = (struct level){ ANON_MAP(s), LABEL_LOST, label_iid(ps, LABEL_LOST), NO_LINE };
	for (int k = 0; k < 2; k++)
		for (uint32_t i = ids[k] ? ids[k]->nframes : 0; i-- > 0 && n + MAX_LEVELS <= MAX_CS_FRAMES;)
			n += frame_levels(ps, ids[k], i, lv + n);
	if (!n)
		lv[n++] = (struct level){ ANON_MAP(s), LABEL_NONE, label_iid(ps, LABEL_NONE), NO_LINE };
	return n;
}

/* The callstack of pair p (pair_levels). Frames new to w written there. */
static void put_callstack(struct bt_pf_stacks *ps, struct pbw *w, size_t p)
{
	size_t n = pair_levels(ps, (uint32_t)(ps->pairs[p] >> 32), (uint32_t)ps->pairs[p]);
	for (size_t i = 0; i < n; i++)
		ps->csf[i] = frame_iid(ps, w, &ps->lv[i]);
	pbw_begin(w, ID_CALLSTACKS);
	pbw_uint(w, CSK_IID, p + 1);
	for (size_t i = 0; i < n; i++)
		pbw_uint(w, CSK_FRAME_IDS, ps->csf[i]);
	pbw_end(w);
}

int bt_pf_stacks_lost(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack)
{
	return bt_export_pair_labelled(ps->s, kstack, ustack);
}

/* An interned name (functions, files: bytes of other users' files, escaped
 * as report escapes them: pbw_utf8), or raw bytes (a build-id). */
static void istr_any(struct pbw *w, uint32_t field, uint64_t iid, const void *p, size_t n, int raw)
{
	pbw_begin(w, field);
	pbw_uint(w, IS_IID, iid);
	if (raw)
		pbw_bytes(w, IS_STR, p, n);
	else
		pbw_utf8(w, IS_STR, p, n);
	pbw_end(w);
}

static void istr(struct pbw *w, uint32_t field, uint64_t iid, const char *p, size_t n)
{
	istr_any(w, field, iid, p, n, 0);
}

static void istr_c(struct pbw *w, uint32_t field, uint64_t iid, const char *str)
{
	istr(w, field, iid, str, strlen(str));
}

int bt_pf_stacks_interned(struct bt_pf_stacks *ps, struct pbw *w, uint32_t field)
{
	const struct bt_dump_stacks *s = ps->s;

	pbw_begin(w, field);
	for (uint32_t i = 0; i < s->nsyms; i++)
		istr(w, ID_FUNCTION_NAMES, i + 1, s->syms[i].name, bt_export_sym_len(s->syms[i].name));
	for (uint32_t m = 1; m <= s->nmaps + 2; m++)
		istr_c(w, ID_FUNCTION_NAMES, s->nsyms + m, "[unknown]");
	for (uint32_t k = 0; k < ps->fns.n; k++)
		istr(w, ID_FUNCTION_NAMES, fn_base(s) + 1 + k, ps->fns.str[k], bt_export_sym_len(ps->fns.str[k]));
	for (int l = LABEL_LOST; l <= LABEL_DEEP; l++)
		istr_c(w, ID_FUNCTION_NAMES, label_iid(ps, l), label_names[l]);
	for (uint32_t k = 0; k < ps->srcs.n; k++)
		istr_c(w, ID_SOURCE_PATHS, k + 1, ps->srcs.str[k]);
	for (uint32_t i = 0; i < s->nmaps; i++) {
		const struct bt_dump_map *m = &s->maps[i];
		istr_c(w, ID_MAPPING_PATHS, i + 1, m->path);
		/* the note's bytes, not hex: trace processor reads them with BuildId::FromRaw */
		if (m->build_id_len)
			istr_any(w, ID_BUILD_IDS, i + 1, m->build_id,
				 m->build_id_len < sizeof(m->build_id) ? m->build_id_len : sizeof(m->build_id), 1);
	}
	/* trace_processor takes "kernel" at 0..0 with no build-id as the kernel
	 * (its own profiler's form), shown as "/kernel": a path is shown with a
	 * leading '/' whatever it is */
	istr_c(w, ID_MAPPING_PATHS, s->nmaps + 1, "kernel");
	istr_c(w, ID_MAPPING_PATHS, s->nmaps + 2, "[anonymous]");
	for (uint32_t m = 1; m <= s->nmaps + 2; m++) {
		pbw_begin(w, ID_MAPPINGS);
		pbw_uint(w, MP_IID, m);
		if (m <= s->nmaps && s->maps[m - 1].build_id_len)
			pbw_uint(w, MP_BUILD_ID, m);
		pbw_uint(w, MP_START, 0);
		pbw_uint(w, MP_END, m == s->nmaps + 1 ? 0 : UINT64_MAX);
		pbw_uint(w, MP_PATH_STRING_IDS, m);
		pbw_end(w);
	}
	for (size_t p = 0; p < ps->npairs; p++)
		put_callstack(ps, w, p);
	pbw_end(w);
	return ps->err;
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

/* The text of a frame's name as the chart shows it, whole however long (a
 * C++ name can run past 1 KiB): a function without its symbol version, an
 * unnamed frame "[unknown] (PATH)", a label. NULL: out of memory. */
static const char *frame_name(struct bt_pf_stacks *ps, uint64_t key)
{
	const struct bt_dump_stacks *s = ps->s;
	uint32_t nm = (uint32_t)key, m = (uint32_t)(key >> 32);
	const char *name = NULL, *fmt = "%.*s";
	size_t len;
	if (nm >= 1 && nm <= s->nsyms)
		name = s->syms[nm - 1].name;
	else if (nm > fn_base(s) && nm - fn_base(s) <= ps->fns.n)
		name = ps->fns.str[nm - fn_base(s) - 1];
	else if (nm >= label_iid(ps, LABEL_LOST) && nm <= label_iid(ps, LABEL_DEEP))
		name = label_names[nm - label_iid(ps, 0)];
	if (name) {
		len = bt_export_sym_len(name);
	} else {
		fmt = "[unknown] (%.*s)";
		name = m <= s->nmaps ? s->maps[m - 1].path : m == s->nmaps + 1 ? "kernel" : "anonymous";
		len = strlen(name);
	}
	if (len + 16 > ps->namecap) {
		char *p = realloc(ps->name, len + 16);
		if (!p) {
			ps->err = -ENOMEM;
			return NULL;
		}
		ps->name = p;
		ps->namecap = len + 16;
	}
	snprintf(ps->name, ps->namecap, fmt, (int)len, name);
	return ps->name;
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
		       uint32_t ustack, uint64_t period_ns, uint64_t open_from, bt_pf_chart_fn fn, void *ctx)
{
	size_t had = ps->ncharts;
	struct chart *c = chart_of(ps, tid, tgid);
	/* the thread's first sample: its frames were open at the window's start */
	int before = ps->ncharts > had && open_from && open_from < ts;
	uint64_t keys[CHART_DEPTH];
	uint32_t same = 0;
	int r;

	if (!c)
		return -ENOMEM;
	size_t all = pair_levels(ps, kstack, ustack), n = all < CHART_DEPTH ? all : CHART_DEPTH;
	for (size_t i = 0; i < n; i++)
		keys[i] = name_key(ps->lv[i].map, ps->lv[i].name);
	if (all > CHART_DEPTH)
		keys[n - 1] = name_key(ANON_MAP(ps->s), label_iid(ps, LABEL_DEEP));
	/* not running for two periods: what was open ended a period after */
	if (c->depth && ts - c->last_ts > 2 * period_ns && (r = close_to(ps, c, 0, c->last_ts + period_ns, fn, ctx)))
		return r;
	while (same < n && same < c->depth && c->open[same] == keys[same])
		same++;
	if ((r = close_to(ps, c, same, ts, fn, ctx)))
		return r;
	for (uint32_t i = same; i < n; i++) {
		const char *name = frame_name(ps, keys[i]);
		if (!name)
			return -ENOMEM;
		if ((r = before ? fn(ctx, tid, tgid, open_from, BT_PF_CHART_BEFORE, name) : fn(ctx, tid, tgid, ts, 1, name)))
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

const char *bt_pf_stacks_leaf(const struct bt_pf_stacks *ps, uint32_t kstack, uint32_t ustack, size_t *len)
{
	const struct bt_dump_stacks *s = ps->s;
	const struct bt_dump_stack *k = bt_export_stack(s, ustack);
	const char *name = "[unknown]";
	if (!k || !k->nframes)
		k = bt_export_stack(s, kstack);
	if (k && k->nframes) {
		const struct bt_dump_frame *f = &s->frames[k->first];
		if (f->sym && f->sym <= s->nsyms)
			name = s->syms[f->sym - 1].name;
	}
	*len = bt_export_sym_len(name);
	return name;
}
