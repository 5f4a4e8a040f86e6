// SPDX-License-Identifier: MIT
/*
 * report_stacks.c - call stacks in `report` (see report_stacks.h).
 *
 * A sample's full stack, outermost first, is its user stack (reversed) then
 * its kernel stack (reversed): the kernel runs on behalf of the user code
 * below it. Self is the innermost frame; total counts a function once per
 * sample however often it recurses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "dump_stacks.h"
#include "event_names.h"
#include "report_stacks.h"
#include "util.h"

#define TOP_FUNCS 25

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static const struct bt_dump_sym *frame_sym(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	return f->sym && f->sym <= s->nsyms ? &s->syms[f->sym - 1] : NULL;
}

static const char *frame_map_name(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	if (f->map == BT_DMAP_KERNEL)
		return "kernel";
	if (f->map == BT_DMAP_NONE)
		return bt_frame_origin(s, f); /* "jit", or none */
	if (f->map > s->nmaps)
		return NULL;
	return base_name(s->maps[f->map - 1].path);
}

/* Names in a dump come from other users' files and processes: escaped
 * where printed (a name must not move the cursor nor forge a line). */
#define NAME_MAX_SHOWN 1024
#define ESC(s, b) bt_escape_text((s), NAME_MAX_SHOWN, (b), sizeof(b))

/* " file.c:75" (the path's last part: the dump keeps it whole) */
static void src_text(const struct bt_dump_srcline *l, char *buf, size_t len)
{
	char e[BT_ESCAPED_LEN(NAME_MAX_SHOWN)];

	if (l->line)
		snprintf(buf, len, " %s:%u", ESC(base_name(l->file), e), l->line);
	else
		snprintf(buf, len, " %s", ESC(base_name(l->file), e));
}

/* A symbol's name as shown: without its ELF version unless verbose. */
static const char *sym_text(const struct bt_dump_sym *y, int verbose, char *buf, size_t len)
{
	char n[NAME_MAX_SHOWN + 1];

	snprintf(n, sizeof(n), "%.*s", verbose ? NAME_MAX_SHOWN : (int)bt_sym_name_len(y->name), y->name);
	return bt_escape_text(n, NAME_MAX_SHOWN, buf, len);
}

/* "func+0x1a (libfoo.so.1)", "[unknown] (libfoo.so.1+0x1234)" without a
 * symbol, "[unknown] (anonymous) 0x7f12..." outside every file; verbose:
 * the symbol's version and the file offset too ("func@@V+0x1a
 * (libfoo.so.1+0x1234)"). f_index 0 = innermost (a return address
 * otherwise: the call is the byte before). */
static void bt_frame_text(const struct bt_dump_stacks *s, const struct bt_dump_frame *f, int f_index, int verbose,
			  char *buf, size_t len)
{
	const struct bt_dump_sym *y = frame_sym(s, f);
	const char *m = frame_map_name(s, f);
	const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(s, f, (uint32_t)f_index);
	char src[BT_ESCAPED_LEN(NAME_MAX_SHOWN) + 16] = "", ey[BT_ESCAPED_LEN(NAME_MAX_SHOWN)],
		em[BT_ESCAPED_LEN(NAME_MAX_SHOWN)];

	if (l)
		src_text(&s->lines[l->first + l->nlines - 1], src, sizeof(src));
	if (m)
		m = ESC(m, em);
	if (y && f->map == BT_DMAP_NONE && (f->off & BT_FRAME_PY_BIT))
		snprintf(buf, len, "%s [py]", sym_text(y, 0, ey, sizeof(ey))); /* "hot (/tmp/x.py:3) [py]" */
	else if (y && f->map == BT_DMAP_KERNEL)
		snprintf(buf, len, "%s+0x%" PRIx64, sym_text(y, verbose, ey, sizeof(ey)), f->off - y->start);
	else if (y && verbose)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s+0x%" PRIx64 ")%s", sym_text(y, 1, ey, sizeof(ey)),
			 f->off - y->start, m ? m : "?", f->off, src);
	else if (y)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)%s", sym_text(y, 0, ey, sizeof(ey)), f->off - y->start,
			 m ? m : "?", src);
	else if (m && f->map != BT_DMAP_KERNEL)
		snprintf(buf, len, "[unknown] (%s+0x%" PRIx64 ")%s", m, f->off, src);
	else if (f->map == BT_DMAP_KERNEL)
		snprintf(buf, len, "[unknown] (kernel) 0x%" PRIx64, f->off);
	else
		snprintf(buf, len, BT_ANON_FRAME_NAME " 0x%" PRIx64, f->off);
}

/* The function alone, for aggregation: "func" (its version dropped, as
 * the exporters do: one function, one name), "[unknown] (lib)",
 * "[unknown] (anonymous)"; a Python function with the line it runs
 * ("hot (/tmp/x.py:12) [py]", as py-spy's flame graphs) unless
 * py_lines is 0 ("hot (/tmp/x.py) [py]": --profile's functions). */
static void frame_func(const struct bt_dump_stacks *s, const struct bt_dump_frame *f, int py_lines, char *buf,
		       size_t len)
{
	const struct bt_dump_sym *y = frame_sym(s, f);
	const char *m = frame_map_name(s, f);
	char e[BT_ESCAPED_LEN(NAME_MAX_SHOWN)];

	if (y && f->map == BT_DMAP_NONE && (f->off & BT_FRAME_PY_BIT)) {
		sym_text(y, 0, e, sizeof(e));
		if (!py_lines)
			bt_py_drop_line(e);
		/* the marker kept whole: a longest name gives way to it */
		snprintf(buf, len, "%.*s [py]", (int)(len > 6 ? len - 6 : 0), e);
	} else if (y) {
		snprintf(buf, len, "%s", sym_text(y, 0, e, sizeof(e)));
	} else if (m) {
		snprintf(buf, len, "[unknown] (%s)", ESC(m, e));
	} else {
		snprintf(buf, len, "%s", BT_ANON_FRAME_NAME);
	}
}

/* "[truncated: no mapping]": the marker of a stack cut short, or
 * "[truncated]" when the dump does not say why (an earlier recorder). */
static const char *trunc_mark(const struct bt_dump_stack *k, char *buf, size_t len)
{
	char w[32];
	const char *why = bt_stack_why_text(BT_STACK_WHY(k->flags), w, sizeof(w));

	if (why)
		snprintf(buf, len, "[truncated: %s]", why);
	else
		snprintf(buf, len, "[truncated]");
	return buf;
}

static const struct bt_dump_stack *stack_of(const struct bt_dump_stacks *s, uint32_t id)
{
	return s && id && !BT_STACK_ID_GONE(id) && id <= s->nstacks ? &s->stacks[id - 1] : NULL;
}

void bt_print_stack(FILE *out, const struct bt_dump_stacks *s, uint32_t id, const char *indent, int verbose)
{
	const struct bt_dump_stack *k = stack_of(s, id);
	char b[8192], src[BT_ESCAPED_LEN(NAME_MAX_SHOWN) + 16], e[BT_ESCAPED_LEN(NAME_MAX_SHOWN)];

	if (id == BT_STACK_LOST) {
		fprintf(out, "%s[stack lost: see report --stats]\n", indent);
		return;
	}
	if (id == BT_STACK_RECLAIMED) {
		fprintf(out, "%s[stack reclaimed: the stack table was full, newer stacks took its entry]\n", indent);
		return;
	}
	if (!k)
		return;
	if (k->flags & BT_STACK_F_UNDEFINED) {
		fprintf(out, "%s[stack frames never arrived]\n", indent);
		return;
	}
	for (uint32_t i = 0; i < k->nframes; i++) {
		const struct bt_dump_frame *f = &s->frames[k->first + i];
		const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(s, f, i);
		/* calls the compiler inlined here, innermost first */
		for (uint32_t q = 0; l && q + 1 < l->nlines; q++) {
			const struct bt_dump_srcline *sl = &s->lines[l->first + q];
			src_text(sl, src, sizeof(src));
			fprintf(out, "%s[inlined] %s%s\n", indent, sl->func ? ESC(sl->func, e) : "?", src);
		}
		bt_frame_text(s, f, (int)i, verbose, b, sizeof(b));
		fprintf(out, "%s%s\n", indent, b);
	}
	if (k->flags & BT_STACK_F_TRUNCATED)
		fprintf(out, "%s%s\n", indent, trunc_mark(k, b, sizeof(b)));
}

void bt_print_event_stacks(FILE *out, const struct bt_dump *d, const struct bt_event_hdr *h, int verbose)
{
	const struct bt_ev_sample *e = (const void *)h;
	const struct bt_dump_stacks *s = bt_dump_stacks(d);

	if (h->type != BT_EV_CPU_SAMPLE && h->type != BT_EV_OFFCPU && h->type != BT_EV_WAKER &&
	    h->type != BT_EV_PROBE_STACK)
		return;
	bt_print_stack(out, s, e->kstack, "\t", verbose);
	bt_print_stack(out, s, e->ustack, "\t", verbose);
}

/* ---- aggregation: string key (+ tgid) -> two counters ---------------------- */

struct agg_ent {
	char *key;
	uint32_t tgid;
	uint64_t a, b;
};
struct agg {
	struct agg_ent *e;
	size_t n, cap; /* cap: power of two */
};

static struct agg_ent *agg_get(struct agg *g, const char *key, uint32_t tgid)
{
	if (g->n * 2 >= g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 1024;
		struct agg_ent *e = calloc(cap, sizeof(*e));
		if (!e)
			return NULL;
		for (size_t i = 0; i < g->cap; i++) {
			if (!g->e[i].key)
				continue;
			size_t k = bt_str_hash(g->e[i].key, g->e[i].tgid) & (cap - 1);
			while (e[k].key)
				k = (k + 1) & (cap - 1);
			e[k] = g->e[i];
		}
		free(g->e);
		g->e = e;
		g->cap = cap;
	}
	size_t k = bt_str_hash(key, tgid) & (g->cap - 1);
	while (g->e[k].key) {
		if (g->e[k].tgid == tgid && strcmp(g->e[k].key, key) == 0)
			return &g->e[k];
		k = (k + 1) & (g->cap - 1);
	}
	g->e[k].key = strdup(key);
	if (!g->e[k].key)
		return NULL;
	g->e[k].tgid = tgid;
	g->n++;
	return &g->e[k];
}

static void agg_free(struct agg *g)
{
	for (size_t i = 0; i < g->cap; i++)
		free(g->e[i].key);
	free(g->e);
}

/* Entries packed and sorted by cmp. */
static struct agg_ent *agg_sorted(struct agg *g, int (*cmp)(const void *, const void *))
{
	size_t k = 0;
	for (size_t i = 0; i < g->cap; i++)
		if (g->e[i].key)
			g->e[k++] = g->e[i];
	for (size_t i = k; i < g->cap; i++)
		g->e[i] = (struct agg_ent){ 0 };
	if (k) /* g->e is NULL when nothing was added: qsort wants a pointer */
		qsort(g->e, k, sizeof(*g->e), cmp);
	g->cap = 0; /* packed: no more lookups, agg_free still frees keys (n entries) */
	g->n = k;
	return g->e;
}

static void agg_free_sorted(struct agg *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->e[i].key);
	free(g->e);
}

/* ---- walking the selected stack events ------------------------------------- */

static int selected(const struct bt_stack_filter *f, const struct bt_event_hdr *h)
{
	if (h->type != (f && f->offcpu ? BT_EV_OFFCPU : BT_EV_CPU_SAMPLE))
		return 0;
	return !f || !f->keep || f->keep(h, f->ctx);
}

/* Weight of an event: one sample, or its off-CPU time in microseconds. */
static uint64_t weight(const struct bt_stack_filter *f, const struct bt_event_hdr *h)
{
	if (f && f->offcpu)
		return ((const struct bt_ev_offcpu *)h)->offcpu_ns / 1000;
	return 1;
}

/* A frame as aggregated: a frame of the table, or a call inlined into it. */
struct xframe {
	const struct bt_dump_frame *fr;
	const char *inl; /* the inlined function's name, or the truncation marker; NULL: fr's own */
	int kernel;
};
#define MAX_XFRAMES (2 * BT_STACKS_MAX_FRAMES * BT_SRCLOC_MAX_DEPTH + 1) /* every frame with a full inline chain */

/* Frames outermost first into xf (user reversed, then kernel reversed),
 * inlined calls after the frame they are in; their count. A cut stack's
 * marker ("[truncated: why]", the user stack's reason first, in mark) is
 * the outermost frame: where the missing callers would be. *lost: a stack
 * could not be taken; *trunc: one was cut. */
static uint32_t full_stack(const struct bt_dump_stacks *s, const struct bt_ev_sample *e, struct xframe *xf,
			   int *lost, int *trunc, char *mark, size_t marklen)
{
	uint32_t n = 0;
	uint32_t ids[2] = { e->ustack, e->kstack };

	*lost = *trunc = 0;
	for (int k = 0; k < 2; k++) {
		const struct bt_dump_stack *st = stack_of(s, ids[k]);
		if (BT_STACK_ID_GONE(ids[k]) || (st && (st->flags & BT_STACK_F_UNDEFINED)))
			*lost = 1;
		if (!st)
			continue;
		if ((st->flags & BT_STACK_F_TRUNCATED) && !*trunc) {
			*trunc = 1;
			if (n == MAX_XFRAMES)
				n--; /* room for the marker */
			memmove(xf + 1, xf, n * sizeof(*xf));
			xf[0] = (struct xframe){ NULL, trunc_mark(st, mark, marklen), k };
			n++;
		}
		for (uint32_t i = st->nframes; i-- > 0 && n < MAX_XFRAMES;) {
			const struct bt_dump_frame *f = &s->frames[st->first + i];
			const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(s, f, i);
			xf[n++] = (struct xframe){ f, NULL, k };
			for (uint32_t q = l ? l->nlines - 1 : 0; q-- > 0 && n < MAX_XFRAMES;)
				xf[n++] = (struct xframe){ f, s->lines[l->first + q].func ? s->lines[l->first + q].func : "?", k };
		}
	}
	return n;
}

static void xframe_func(const struct bt_dump_stacks *s, const struct xframe *x, int py_lines, char *buf,
			size_t len)
{
	char e[BT_ESCAPED_LEN(NAME_MAX_SHOWN)];

	if (x->inl && !x->fr)
		snprintf(buf, len, "%s", x->inl); /* the truncation marker: our own words */
	else if (x->inl)
		snprintf(buf, len, "%s", ESC(x->inl, e));
	else
		frame_func(s, x->fr, py_lines, buf, len);
}

/* The process's name, escaped (in a static buffer: one use at a time). */
static const char *proc_name(const struct bt_dump *d, uint32_t tgid)
{
	static char e[BT_ESCAPED_LEN(BT_TASK_COMM_LEN)];
	size_t nt;
	const struct bt_task *t = bt_dump_tasks(d, &nt);
	const struct bt_task *x = bt_tasks_find(t, nt, tgid);
	return x ? bt_escape_text(x->comm, BT_TASK_COMM_LEN, e, sizeof(e)) : "?";
}

/* ---- --profile -------------------------------------------------------------- */

struct proc_tot {
	uint32_t tgid;
	uint64_t w, lost, trunc;
};

static int by_total(const void *a, const void *b)
{
	const struct agg_ent *x = a, *y = b;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	/* by total, as perf report --children: a caller before its callees */
	if (x->b != y->b)
		return x->b > y->b ? -1 : 1;
	if (x->a != y->a)
		return x->a > y->a ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int by_weight(const void *a, const void *b)
{
	const struct proc_tot *x = a, *y = b;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

static void print_counters(const struct bt_dump *d, FILE *out)
{
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	uint64_t lost;

	if (!s)
		return;
	lost = s->counters[BT_STKC_OVERFLOW] + s->counters[BT_STKC_KERNEL_ERR] + s->counters[BT_STKC_USER_ERR] +
	       s->counters[BT_STKC_DEF_DROPS] + s->counters[BT_STKC_UNDEFINED];
	if (lost)
		fprintf(out, "stacks not taken or not stored: %" PRIu64 " (report --stats has the causes)\n", lost);
	else
		fprintf(out, "no stack was lost\n");
}

int bt_report_profile(const struct bt_dump *d, const struct bt_stack_filter *f, FILE *out)
{
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	size_t n, np = 0, capp = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	static struct xframe xf[MAX_XFRAMES];
	struct proc_tot *pt = NULL;
	struct agg g = { 0 }, seen = { 0 };
	char name[4096];
	int r = 0;
	const char *unit = f && f->offcpu ? "off-CPU us" : "samples";

	if (!s) {
		fprintf(out, "this dump has no call stacks (record with --sample HZ or --stacks switch)\n");
		return 0;
	}
	for (size_t i = 0; i < n && !r; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		if (!selected(f, h))
			continue;
		int lost, trunc;
		char mark[64];
		uint32_t nf = full_stack(s, (const void *)h, xf, &lost, &trunc, mark, sizeof(mark));
		uint64_t w = weight(f, h);
		size_t p;
		for (p = 0; p < np && pt[p].tgid != h->tgid; p++)
			;
		if (p == np) {
			if (np == capp) {
				capp = capp ? capp * 2 : 64;
				void *x = realloc(pt, capp * sizeof(*pt));
				if (!x) {
					r = -ENOMEM;
					break;
				}
				pt = x;
			}
			pt[np++] = (struct proc_tot){ .tgid = h->tgid };
		}
		pt[p].w += w;
		pt[p].lost += lost ? w : 0;
		pt[p].trunc += trunc ? w : 0;
		/* total: each function once per event (seen keyed by event index) */
		for (uint32_t k = 0; k < nf; k++) {
			xframe_func(s, &xf[k], 0, name, sizeof(name));
			struct agg_ent *a = agg_get(&g, name, h->tgid);
			if (!a) {
				r = -ENOMEM;
				break;
			}
			struct agg_ent *sn = agg_get(&seen, name, (uint32_t)i);
			if (!sn) {
				r = -ENOMEM;
				break;
			}
			if (!sn->a) {
				sn->a = 1;
				a->b += w;
			}
			if (k == nf - 1)
				a->a += w;
		}
		if (!nf) {
			struct agg_ent *a = agg_get(&g, lost ? "[stack lost]" : "[no stack]", h->tgid);
			if (!a) {
				r = -ENOMEM;
				break;
			}
			a->a += w;
			a->b += w;
		}
		if (seen.n > 1u << 16) { /* keep the per-event set small */
			agg_free(&seen);
			seen = (struct agg){ 0 };
		}
	}
	agg_free(&seen);
	if (r) {
		agg_free(&g);
		free(pt);
		return r;
	}
	if (np)
		qsort(pt, np, sizeof(*pt), by_weight);
	struct agg_ent *e = agg_sorted(&g, by_total);
	uint64_t all = 0;
	for (size_t p = 0; p < np; p++)
		all += pt[p].w;
	fprintf(out, "%s profile: %" PRIu64 " %s in %zu processes", f && f->offcpu ? "off-CPU" : "CPU", all, unit,
		np);
	if (!(f && f->offcpu) && s->counters[BT_STKC_SAMPLE_HZ])
		fprintf(out, " (%" PRIu64 " Hz per CPU)", s->counters[BT_STKC_SAMPLE_HZ]);
	fputc('\n', out);
	print_counters(d, out);
	for (size_t p = 0; p < np; p++) {
		fprintf(out, "\nprocess %u (%s): %" PRIu64 " %s (%.1f%%)", pt[p].tgid, proc_name(d, pt[p].tgid), pt[p].w,
			unit, all ? 100.0 * (double)pt[p].w / (double)all : 0.0);
		if (pt[p].lost)
			fprintf(out, ", %" PRIu64 " with a stack lost", pt[p].lost);
		if (pt[p].trunc)
			fprintf(out, ", %" PRIu64 " truncated", pt[p].trunc);
		fprintf(out, "\n  %7s %7s  %s\n", "self", "total", "function");
		size_t shown = 0;
		for (size_t i = 0; i < g.n; i++) {
			if (e[i].tgid != pt[p].tgid || shown == TOP_FUNCS)
				continue;
			fprintf(out, "  %6.1f%% %6.1f%%  %s\n", 100.0 * (double)e[i].a / (double)pt[p].w,
				100.0 * (double)e[i].b / (double)pt[p].w, e[i].key);
			shown++;
		}
	}
	agg_free_sorted(&g);
	free(pt);
	return 0;
}

/* ---- --folded --------------------------------------------------------------- */

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct agg_ent *)a)->key, ((const struct agg_ent *)b)->key);
}

int bt_report_folded(const struct bt_dump *d, const struct bt_stack_filter *f, FILE *out)
{
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	static struct xframe xf[MAX_XFRAMES];
	struct agg g = { 0 };
	size_t cap = 1 << 16;
	char *line = malloc(cap), name[4096];

	if (!line)
		return -ENOMEM;
	if (!s) {
		free(line);
		bt_err("this dump has no call stacks: record with --sample or --offcpu");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		if (!selected(f, h))
			continue;
		int lost, trunc;
		char mark[64];
		uint32_t nf = full_stack(s, (const void *)h, xf, &lost, &trunc, mark, sizeof(mark));
		size_t o = (size_t)snprintf(line, cap, "%s", proc_name(d, h->tgid));
		/* folded stacks separate frames with ';': none inside a name */
		for (char *c = line; *c; c++)
			if (*c == ';' || *c == ' ')
				*c = '_';
		if (lost && o < cap)
			o += (size_t)snprintf(line + o, cap - o, ";[stack lost]");
		else if (!nf && o < cap) /* counted in --stats: samples with no frame at all */
			o += (size_t)snprintf(line + o, cap - o, ";[no stack]");
		for (uint32_t k = 0; k < nf && o < cap; k++) {
			xframe_func(s, &xf[k], 1, name, sizeof(name));
			for (char *c = name; *c; c++)
				if (*c == ';')
					*c = ':';
			/* flamegraph.pl's annotations: _[k] kernel, _[i] inlined */
			o += (size_t)snprintf(line + o, cap - o, ";%s%s", name,
					      !xf[k].fr ? "" : xf[k].kernel ? "_[k]" : xf[k].inl ? "_[i]" : "");
		}
		struct agg_ent *a = agg_get(&g, line, 0);
		if (!a) {
			agg_free(&g);
			free(line);
			return -ENOMEM;
		}
		a->a += weight(f, h);
	}
	free(line);
	struct agg_ent *e = agg_sorted(&g, by_key);
	for (size_t i = 0; i < g.n; i++)
		if (e[i].a)
			fprintf(out, "%s %" PRIu64 "\n", e[i].key, e[i].a);
	agg_free_sorted(&g);
	return 0;
}

/* ---- --stats ---------------------------------------------------------------- */

void bt_report_stack_stats(const struct bt_dump *d, FILE *out)
{
	const struct bt_dump_stacks *s = bt_dump_stacks(d);

	if (!s)
		return;
	const uint64_t *c = s->counters;
	fprintf(out, "  call stacks: %" PRIu64 " distinct in the table (at most %" PRIu64 "), %u mapped files, %u symbols",
		c[BT_STKC_STACKS], c[BT_STKC_MAX_STACKS], s->nmaps, s->nsyms);
	if (c[BT_STKC_RECLAIMED] > c[BT_STKC_EVICTED])
		fprintf(out, "; %" PRIu64 " reclaimed (no event in the buffer named them)", c[BT_STKC_RECLAIMED] - c[BT_STKC_EVICTED]);
	if (c[BT_STKC_EVICTED])
		fprintf(out, "; %" PRIu64 " reclaimed while the table was full (their %" PRIu64
			     " stack references in this dump say reclaimed)", c[BT_STKC_EVICTED], c[BT_STKC_RECLAIMED_REFS]);
	if (c[BT_STKC_SAMPLE_HZ])
		fprintf(out, "; sampling at %" PRIu64 " Hz per CPU, %" PRIu64 " samples taken", c[BT_STKC_SAMPLE_HZ],
			c[BT_STKC_SAMPLES]);
	fputc('\n', out);
	if (c[BT_STKC_NO_SRCLINES])
		fprintf(out, "    source lines: off (recorded with --no-source-lines)\n");
	else
		fprintf(out, "    source lines: %u code addresses (%" PRIu64 " lines, inlined calls included)%s\n", s->nlocs,
			s->nlines,
			s->nlocs ? "" : "; none: no DWARF found for the frames' files (install their -dbg/-dbgsym packages)");
	fprintf(out, "    stacks lost: %" PRIu64 " table full (--max-stacks), %" PRIu64 " ring full, %" PRIu64
		     " kernel stack errors, %" PRIu64 " user stack errors, %" PRIu64 " frames never arrived\n",
		c[BT_STKC_OVERFLOW], c[BT_STKC_DEF_DROPS], c[BT_STKC_KERNEL_ERR], c[BT_STKC_USER_ERR],
		c[BT_STKC_UNDEFINED]);
	fprintf(out, "    stacks truncated: %" PRIu64 "; user frames in no file mapping: %" PRIu64
		     "; files kept by path only: %" PRIu64 "; pre-exec stacks named from the parent's maps: %" PRIu64
		     "\n",
		c[BT_STKC_TRUNCATED], c[BT_STKC_UNRESOLVED], c[BT_STKC_NO_FD], c[BT_STKC_PRE_EXEC]);
	/* (counted here from the events: the BPF side's sample program is at
	 * the verifier's bound, a branch there took it over) */
	size_t n, empty = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	for (size_t i = 0; i < n; i++) {
		const struct bt_ev_sample *e = (const void *)ev[i].ev;
		empty += e->h.type == BT_EV_CPU_SAMPLE && !e->kstack && !e->ustack;
	}
	if (empty)
		fprintf(out, "    samples with no frame at all: %zu (neither a kernel nor a user stack could be "
			     "taken: \"[no stack]\" in --profile and --folded)\n", empty);
	/* the truncated stacks by reason (STKW; none from earlier recorders) */
	uint32_t by_why[256] = { 0 };
	for (uint32_t i = 0; i < s->nstacks; i++)
		if (s->stacks[i].flags & BT_STACK_F_TRUNCATED)
			by_why[BT_STACK_WHY(s->stacks[i].flags)]++;
	int shown = 0;
	for (unsigned w = 0; w < 256; w++) {
		char wb[32];
		const char *txt = bt_stack_why_text(w, wb, sizeof(wb));
		if (!by_why[w])
			continue;
		fprintf(out, "%s%u %s", shown++ ? ", " : "    truncated stacks by reason: ", by_why[w],
			txt ? txt : "not said (an earlier recorder)");
	}
	if (shown)
		fputc('\n', out);
	if (c[BT_STKC_NO_KSYMS])
		fprintf(out, "    kernel frames: unnamed (the recorder could not read /proc/kallsyms's addresses: "
			     "it needs CAP_SYSLOG, which ProtectKernelLogs=yes also removes)\n");
	if (c[BT_STKC_UNW_MAX_ROWS])
		fprintf(out, "    unwinding: %" PRIu64 " user stacks walked; ended early: %" PRIu64 " process not loaded yet (leaf only), %"
			     PRIu64 " no executable mapping, %" PRIu64
			     " signal frame, %" PRIu64 " bad frame; frames by frame pointer: %" PRIu64
			     ", in binaries without a table: %" PRIu64 ", in anonymous code (JIT): %" PRIu64 "\n"
			     "    unwind tables: %" PRIu64 " binaries, %" PRIu64 " rows of %" PRIu64 " (--unwind-mem); "
			     "lost: %" PRIu64 " binaries over --unwind-mem, %" PRIu64 " without .eh_frame, %" PRIu64
			     " processes over the map, %" PRIu64 " mappings over the per-process bound; %" PRIu64
			     " not stored in the unwind cache (compiled again at the next start); %" PRIu64
			     " walks ended at a file whose table was being built, %" PRIu64 " files that could not be opened, %"
			     PRIu64 " binaries refused (too many FDEs, or past the build budget)\n",
			c[BT_STKC_UNW_WALKS], c[BT_STKC_UNW_NO_PROC], c[BT_STKC_UNW_NO_MAP],
			c[BT_STKC_UNW_SIGNAL], c[BT_STKC_UNW_BAD], c[BT_STKC_UNW_FP], c[BT_STKC_UNW_NO_TABLE],
			c[BT_STKC_UNW_ANON],
			c[BT_STKC_UNW_BINARIES], c[BT_STKC_UNW_ROWS], c[BT_STKC_UNW_MAX_ROWS], c[BT_STKC_UNW_MEM_FULL],
			c[BT_STKC_UNW_NO_EH], c[BT_STKC_UNW_PROCS_FULL], c[BT_STKC_UNW_MAPS_DROP], c[BT_STKC_UNW_CACHE_FAILED],
			c[BT_STKC_UNW_PENDING], c[BT_STKC_UNW_FILES_UNOPENED], c[BT_STKC_UNW_REFUSED]);
	if (c[BT_STKC_UNW_MAX_ROWS])
		fprintf(out, "    unwind rules: %" PRIu64 " address ranges in %" PRIu64 " binaries not followed (frame "
			     "pointers there), %" PRIu64 " rows with the CFA on a register only the leaf frame has "
			     "(ctl status names the binaries)\n",
			c[BT_STKC_UNW_UNSUPPORTED], c[BT_STKC_UNW_UNSUPPORTED_BINS], c[BT_STKC_UNW_LEAF_ROWS]);
	for (uint32_t i = 0; i < s->nlost; i++) {
		char ep[4 * BT_UNWLOST_STR_MAX], ew[4 * BT_UNWLOST_STR_MAX];
		fprintf(out, "    unwind table refused: %s: %s\n",
			bt_escape_text(s->lost[i].path, strlen(s->lost[i].path), ep, sizeof(ep)),
			bt_escape_text(s->lost[i].why, strlen(s->lost[i].why), ew, sizeof(ew)));
	}
	if (c[BT_STKC_COPY_TAKEN] || c[BT_STKC_COPY_RATE] || c[BT_STKC_COPY_RING] || c[BT_STKC_COPY_OLD])
		fprintf(out, "    stack copies (walks stopped at a table not built yet): %" PRIu64 " taken, %" PRIu64
			     " walked on to the outermost frame, %" PRIu64 " walked on and cut again, %" PRIu64
			     " walked after waiting too long for a table, %" PRIu64 " still waiting at the dump; not copied"
			     " or dropped (their stacks stay cut): %" PRIu64 " over the rate bound, %" PRIu64
			     " ring full, %" PRIu64 " over the recorder's memory bound, %" PRIu64
			     " of processes older than 5 s\n",
			c[BT_STKC_COPY_TAKEN], c[BT_STKC_COPY_DONE], c[BT_STKC_COPY_CUT], c[BT_STKC_COPY_EXPIRED],
			c[BT_STKC_COPY_WAITING], c[BT_STKC_COPY_RATE], c[BT_STKC_COPY_RING], c[BT_STKC_COPY_MEM],
			c[BT_STKC_COPY_OLD]);
	if (c[BT_STKC_JIT_NAMED] || c[BT_STKC_JIT_UNNAMED])
		fprintf(out, "    JIT frames (anonymous code): %" PRIu64 " named from perf maps (/tmp/perf-PID.map), %" PRIu64
			     " without an entry there (shown as " BT_ANON_FRAME_NAME ")\n",
			c[BT_STKC_JIT_NAMED], c[BT_STKC_JIT_UNNAMED]);
	if (c[BT_STKC_PY_INTERPS] || c[BT_STKC_PY_WALKS] || c[BT_STKC_PY_UNKNOWN] || c[BT_STKC_PY_NO_THREAD])
		fprintf(out, "    Python frames: %" PRIu64 " CPython interpreters found (%" PRIu64
			     " of a version without offsets); %" PRIu64 " stacks with Python frames read, %" PRIu64
			     " frames; lost: %" PRIu64 " stacks in an interpreter of an unknown version, %" PRIu64
			     " without a thread state found, %" PRIu64 " walks cut by unreadable memory, %" PRIu64
			     " cut at the frame bound, %" PRIu64 " code objects' names over the ring, %" PRIu64
			     " frames unnamed in the table (of %" PRIu64 " named)\n",
			c[BT_STKC_PY_INTERPS], c[BT_STKC_PY_UNKNOWN_BINS], c[BT_STKC_PY_WALKS], c[BT_STKC_PY_FRAMES],
			c[BT_STKC_PY_UNKNOWN], c[BT_STKC_PY_NO_THREAD], c[BT_STKC_PY_UNREADABLE], c[BT_STKC_PY_CUT],
			c[BT_STKC_PY_CODE_DROPS], c[BT_STKC_PY_UNNAMED], c[BT_STKC_PY_NAMED]);
	if (c[BT_STKC_NOT_LOADED_FILES])
		fprintf(out, "    symbols not loaded yet: %" PRIu64 " frames of %" PRIu64
			     " files were still being read when the dump was written (its wait for them ran out, or"
			     " it was a trigger's, which does not wait): unnamed\n",
			c[BT_STKC_NOT_LOADED_FRAMES], c[BT_STKC_NOT_LOADED_FILES]);
	else
		fprintf(out, "    symbols not loaded yet: none (every file was loaded before the dump)\n");
	if (c[BT_STKC_LINES_LATE])
		fprintf(out, "    source lines left out: %" PRIu64 " frames (the dump's time for DWARF was spent: it did "
			     "not wait)\n", c[BT_STKC_LINES_LATE]);
	if (c[BT_STKC_OFFCPU_SHORT] || c[BT_STKC_OFFCPU_NOMEM])
		fprintf(out, "    off-CPU blocks: %" PRIu64 " below --offcpu-min (not stored, by design), %" PRIu64
			     " not followed (kernel table full)\n",
			c[BT_STKC_OFFCPU_SHORT], c[BT_STKC_OFFCPU_NOMEM]);
}
