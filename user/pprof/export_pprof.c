// SPDX-License-Identifier: MIT
/*
 * export_pprof.c - a dump's call stacks as a pprof profile (profile.proto of
 * github.com/google/pprof, gzipped by the sink), which go tool pprof,
 * Pyroscope, Parca and Grafana read.
 *
 * CPU profile: sample types samples/count and cpu/nanoseconds (count x the
 * sampling period, 1 s / --sample rate), period type cpu/nanoseconds. With
 * o->offcpu, the off-CPU blocks: blocks/count and off_cpu/microseconds (each
 * block's time in whole microseconds, as report --profile --offcpu sums it).
 *
 * One Sample per (kernel stack, user stack, thread) with labels pid, tid and
 * comm; its locations leaf first: kernel frames, then user frames, then a
 * "[stack lost]" root when a stack is lost or its frames never arrived
 * ("[no stack]" alone when there is no frame at all), so every sample is
 * counted and report --profile's totals are the profile's.
 *
 * A Location per (mapping, looked-up offset) (bt_frame_lookup_off: a return
 * address minus one, where its line was found); its Lines innermost first,
 * one per call the compiler inlined there, the frame's own function last. A
 * Function per (name, file); names as report --profile prints them (symbol
 * versions dropped, "[unknown] (libfoo.so)" without a symbol). Mappings:
 * each file with its build-id (hex) at an address range of its own (the
 * location's address is start + file offset), the kernel, and one for
 * anonymous code and the labels ("[stack lost]", "[no stack]", and a cut
 * stack's "[truncated: why]" at its root, as report --profile counts it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "export.h"
#include "export_names.h"
#include "export_pprof_int.h"
#include "pbwriter.h"
#include "string_set.h"
#include "u64map.h"

/* profile.proto field numbers */
#define PR_SAMPLE_TYPE 1
#define PR_SAMPLE 2
#define PR_MAPPING 3
#define PR_LOCATION 4
#define PR_FUNCTION 5
#define PR_STRING_TABLE 6
#define PR_TIME_NANOS 9
#define PR_DURATION_NANOS 10
#define PR_PERIOD_TYPE 11
#define PR_PERIOD 12
#define PR_COMMENT 13
#define PR_DEFAULT_SAMPLE_TYPE 14
#define VT_TYPE 1
#define VT_UNIT 2
#define SM_LOCATION_ID 1
#define SM_VALUE 2
#define SM_LABEL 3
#define LB_KEY 1
#define LB_STR 2
#define LB_NUM 3
#define MA_ID 1
#define MA_MEMORY_START 2
#define MA_MEMORY_LIMIT 3
#define MA_FILE_OFFSET 4
#define MA_FILENAME 5
#define MA_BUILD_ID 6
#define MA_HAS_FUNCTIONS 7
#define MA_HAS_FILENAMES 8
#define MA_HAS_LINE_NUMBERS 9
#define MA_HAS_INLINE_FRAMES 10
#define LO_ID 1
#define LO_MAPPING_ID 2
#define LO_ADDRESS 3
#define LO_LINE 4
#define LN_FUNCTION_ID 1
#define LN_LINE 2
#define LN_COLUMN 3
#define FN_ID 1
#define FN_NAME 2
#define FN_SYSTEM_NAME 3
#define FN_FILENAME 4

#define MAP_SPAN (1ull << 40) /* address range of each file's mapping */
#define KERNEL_START 0xffff000000000000ull

static uint64_t mix(uint64_t v)
{
	return bt_u64_mix(v);
}

struct pp {
	const struct bt_export_prep *p;
	const struct bt_dump_stacks *s;
	struct pbw out, strs, w; /* the profile; its string table; a scratch message */
	struct bt_strset set;   /* strings -> offset; offset -> index in idx */
	struct bt_u64map idx;
	uint32_t nstr;
	struct bt_u64map fns, locs; /* (name, file) -> function id; location key -> id */
	uint32_t nfns, nlocs;
	struct pp_agg *agg;
	size_t nagg;
	struct pp_maps maps;    /* the mappings written, the main one first */
	struct bt_u64map aggix; /* hash of the key -> 1 + index, chained by probing on a hash of the key */
	int err;
};

/* The string table index of str ("" is 0), added if new. */
static int64_t str_ix(struct pp *x, const char *str, size_t len)
{
	char buf[4096];
	if (!len)
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)len, str);
	size_t n0 = x->set.n;
	uint32_t off = bt_strset_add(&x->set, buf);
	if (x->set.err) {
		x->err = x->set.err;
		return 0;
	}
	uint32_t *v = bt_u64map_slot(&x->idx, (uint64_t)off + 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (x->set.n != n0 || !*v) {
		*v = ++x->nstr;
		pbw_utf8(&x->strs, PR_STRING_TABLE, buf, SIZE_MAX);
	}
	return *v;
}

static int64_t str_c(struct pp *x, const char *s)
{
	return str_ix(x, s, strlen(s));
}

/* The function id of (name, file), its Function written if new. A label
 * (an unnamed frame's "[unknown] (libfoo.so)", "[stack lost]", a process
 * root) has no system name: pprof then shows the name as it is, where it
 * would cut "(libfoo.so)" off a name that looks like demangled C++ (and
 * merge the unnamed frames of every library into one "[unknown]"). */
static uint64_t fn_id(struct pp *x, int64_t name, int64_t file, int label)
{
	uint32_t *v = bt_u64map_slot(&x->fns, ((uint64_t)name << 32 | (uint32_t)file) + 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (*v)
		return *v;
	*v = ++x->nfns;
	pbw_begin(&x->out, PR_FUNCTION);
	pbw_uint(&x->out, FN_ID, *v);
	pbw_int(&x->out, FN_NAME, name);
	if (!label)
		pbw_int(&x->out, FN_SYSTEM_NAME, name);
	if (file)
		pbw_int(&x->out, FN_FILENAME, file);
	pbw_end(&x->out);
	return *v;
}

/* The mapping id a frame's mapping is written as. */
static uint64_t map_id(const struct pp *x, uint32_t map)
{
	return x->maps.id[pp_slot(x->s, map)];
}

/* Where a mapping's addresses start: the kernel's are its own, each other
 * mapping has a range of its own (the location's address is start + offset). */
static uint64_t map_start(const struct pp *x, uint64_t id)
{
	return x->maps.slot[id - 1] == PP_SLOT_KERNEL(x->s) ? KERNEL_START : id * MAP_SPAN;
}

/* The frame's own function name, as report --profile prints it; *label:
 * no symbol, "[unknown] (...)". */
static int64_t own_name(struct pp *x, const struct bt_dump_frame *f, int *label, int *py_line)
{
	const struct bt_dump_stacks *s = x->s;
	char buf[600];
	*label = !f->sym || f->sym > s->nsyms;
	if (!*label && f->map == BT_DMAP_NONE && (f->off & BT_FRAME_PY_BIT)) {
		/* one function whichever line runs, "hot (/tmp/x.py)" (its file
		 * "[py]": report's "hot (/tmp/x.py) [py]"); the line is the
		 * location's (py_line) */
		char *n = strdup(s->syms[f->sym - 1].name);
		if (!n) {
			x->err = -ENOMEM;
			return 0;
		}
		*py_line = bt_py_drop_line(n);
		int64_t ix = str_ix(x, n, bt_export_sym_len(n));
		free(n);
		return ix;
	}
	if (!*label)
		return str_ix(x, s->syms[f->sym - 1].name, bt_export_sym_len(s->syms[f->sym - 1].name));
	if (f->map == BT_DMAP_KERNEL)
		return str_c(x, "[unknown] (kernel)");
	if (f->map == BT_DMAP_NONE || f->map > s->nmaps)
		return str_c(x, "[unknown] (anonymous)");
	snprintf(buf, sizeof(buf), "[unknown] (%s)", bt_export_base_name(s->maps[f->map - 1].path));
	return str_c(x, buf);
}

/* The location of frame i of st, written if new. */
static uint64_t loc_id(struct pp *x, const struct bt_dump_stack *st, uint32_t i)
{
	const struct bt_dump_stacks *s = x->s;
	const struct bt_dump_frame *f = &s->frames[st->first + i];
	uint64_t off = bt_frame_lookup_off(f->off, i), mid = map_id(x, f->map);
	uint64_t addr = f->map == BT_DMAP_KERNEL ? off : map_start(x, mid) + (off & (MAP_SPAN - 1));
	/* the address is unique per (mapping, offset): files below 2^63,
	 * the kernel above */
	uint32_t *v = bt_u64map_slot(&x->locs, addr + 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (*v)
		return *v;
	*v = ++x->nlocs;
	uint64_t id = *v;
	const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(s, f, i);
	struct pbw *w = &x->w;
	pbw_reset(w);
	pbw_begin(w, PR_LOCATION);
	pbw_uint(w, LO_ID, id);
	pbw_uint(w, LO_MAPPING_ID, mid);
	pbw_uint(w, LO_ADDRESS, addr);
	for (uint32_t q = 0; l && q + 1 < l->nlines; q++) {
		const struct bt_dump_srcline *sl = &s->lines[l->first + q];
		const char *nm = sl->func ? sl->func : "?";
		uint64_t fid = fn_id(x, str_ix(x, nm, bt_export_sym_len(nm)), str_c(x, sl->file), 0);
		pbw_begin(w, LO_LINE);
		pbw_uint(w, LN_FUNCTION_ID, fid);
		pbw_int(w, LN_LINE, sl->line);
		if (sl->col)
			pbw_int(w, LN_COLUMN, sl->col);
		pbw_end(w);
	}
	const struct bt_dump_srcline *own = l ? &s->lines[l->first + l->nlines - 1] : NULL;
	pbw_begin(w, LO_LINE);
	int label, py_line = 0;
	int64_t name = own_name(x, f, &label, &py_line);
	/* JIT code: marked as the function's file */
	pbw_uint(w, LN_FUNCTION_ID,
		 fn_id(x, name, own ? str_c(x, own->file) : bt_frame_origin(s, f) ? str_c(x, (f->off & BT_FRAME_PY_BIT) ? "[py]" : "[jit]") : 0, label));
	if (own)
		pbw_int(w, LN_LINE, own->line);
	else if (py_line)
		pbw_int(w, LN_LINE, py_line);
	pbw_end(w);
	pbw_end(w);
	pbw_raw(&x->out, pbw_data(w), pbw_len(w));
	return id;
}

/* A location of one line, function fid, at addr of mapping mid: the
 * labels' and process roots' (no code of theirs is in any file). */
static void put_label_location(struct pp *x, uint64_t id, uint64_t mid, uint64_t addr, uint64_t fid)
{
	pbw_begin(&x->out, PR_LOCATION);
	pbw_uint(&x->out, LO_ID, id);
	pbw_uint(&x->out, LO_MAPPING_ID, mid);
	pbw_uint(&x->out, LO_ADDRESS, addr);
	pbw_begin(&x->out, LO_LINE);
	pbw_uint(&x->out, LN_FUNCTION_ID, fid);
	pbw_end(&x->out);
	pbw_end(&x->out);
}

/* The location of a label in the anonymous mapping: "[stack lost]" (0),
 * "[no stack]" (1), or 2 + why: a cut stack's "[truncated: no mapping]"
 * (as report names it: "[truncated]" when the dump does not say why). */
static uint64_t label_loc(struct pp *x, int which)
{
	static const char *const names[] = { "[stack lost]", "[no stack]" };
	char name[64], wb[32];
	const char *why = which >= 2 ? bt_stack_why_text((unsigned)which - 2, wb, sizeof(wb)) : NULL;
	if (which >= 2)
		snprintf(name, sizeof(name), why ? "[truncated: %s]" : "[truncated]", why);
	uint64_t mid = x->maps.id[PP_SLOT_ANON(x->s)], addr = map_start(x, mid) + (uint64_t)which;
	uint32_t *v = bt_u64map_slot(&x->locs, 0xb7ab000000000000ull | (uint64_t)which << 1 | 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (!*v) {
		*v = ++x->nlocs;
		put_label_location(x, *v, mid, addr, fn_id(x, str_c(x, which >= 2 ? name : names[which]), 0, 1));
	}
	return *v;
}

/* "NAME (ID)" of thread id (a process: its main thread's name); "ID" when
 * the dump names neither. */
static int64_t named_id(struct pp *x, uint32_t id, const struct bt_xthread *fallback)
{
	const struct bt_xthread *t = bt_export_thread(x->p, id);
	char buf[BT_TASK_COMM_LEN + 16];
	if (!t || !t->name[0])
		t = fallback;
	if (t && t->name[0])
		snprintf(buf, sizeof(buf), "%.*s (%u)", (int)strnlen(t->name, sizeof(t->name)), t->name, id);
	else
		snprintf(buf, sizeof(buf), "%u", id);
	return str_c(x, buf);
}

/* convert --process-root: the root location of process tgid's samples,
 * "NAME (PID)", so a flame graph (speedscope) keeps processes apart. */
static uint64_t process_loc(struct pp *x, uint32_t tgid, const struct bt_xthread *t)
{
	uint64_t mid = x->maps.id[PP_SLOT_ANON(x->s)], addr = map_start(x, mid) + (1ull << 32) + tgid;
	uint32_t *v = bt_u64map_slot(&x->locs, 0xb7ac000000000000ull | (uint64_t)tgid << 1 | 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (!*v) {
		*v = ++x->nlocs;
		put_label_location(x, *v, mid, addr, fn_id(x, named_id(x, tgid, t), 0, 1));
	}
	return *v;
}

/* ---- aggregation ---------------------------------------------------------------- */

static int add_sample(struct pp *x, const struct bt_event_hdr *h, uint32_t k, uint32_t u, uint64_t w)
{
	uint64_t key = mix((uint64_t)k << 32 | u) ^ mix(h->tid + 0x9e3779b97f4a7c15ull);
	for (;; key = mix(key + 1)) {
		uint32_t *v = bt_u64map_slot(&x->aggix, key | 1);
		if (!v)
			return -ENOMEM;
		if (!*v) {
			if (!(x->nagg & (x->nagg + 1)) || !x->agg) {
				void *p = realloc(x->agg, (x->nagg + 1) * 2 * sizeof(*x->agg));
				if (!p)
					return -ENOMEM;
				x->agg = p;
			}
			x->agg[x->nagg] = (struct pp_agg){ k, u, h->tid, h->tgid, 0, 0 };
			*v = (uint32_t)++x->nagg;
		}
		struct pp_agg *a = &x->agg[*v - 1];
		if (a->kstack == k && a->ustack == u && a->tid == h->tid) {
			a->n++;
			a->w += w;
			return 0;
		}
	}
}

static void label_num(struct pbw *w, int64_t key, int64_t num)
{
	pbw_begin(w, SM_LABEL);
	pbw_int(w, LB_KEY, key);
	pbw_int(w, LB_NUM, num);
	pbw_end(w);
}

static void label_str(struct pbw *w, int64_t key, int64_t str)
{
	pbw_begin(w, SM_LABEL);
	pbw_int(w, LB_KEY, key);
	pbw_int(w, LB_STR, str);
	pbw_end(w);
}

static void put_sample(struct pp *x, const struct pp_agg *a, uint64_t period, int process_root)
{
	const struct bt_dump_stacks *s = x->s;
	const struct bt_dump_stack *ids[2] = { bt_export_stack(s, a->kstack), bt_export_stack(s, a->ustack) };
	const struct bt_xthread *t = bt_export_thread(x->p, a->tid);
	int lost = bt_export_stack_lost(s, a->kstack) || bt_export_stack_lost(s, a->ustack);
	struct pbw *w = &x->w;
	size_t nloc = 0;
	uint64_t *locs = malloc((2 * (size_t)BT_STACKS_MAX_FRAMES + 3) * sizeof(*locs));

	if (!locs) {
		x->err = -ENOMEM;
		return;
	}
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; ids[k] && i < ids[k]->nframes; i++)
			locs[nloc++] = loc_id(x, ids[k], i);
	/* a cut stack's marker at the root, the user stack's reason first, as
	 * report --profile counts it */
	const struct bt_dump_stack *cut = ids[1] && (ids[1]->flags & BT_STACK_F_TRUNCATED) ? ids[1]
					  : ids[0] && (ids[0]->flags & BT_STACK_F_TRUNCATED) ? ids[0] : NULL;
	if (cut)
		locs[nloc++] = label_loc(x, 2 + (int)BT_STACK_WHY(cut->flags));
	if (lost || !nloc)
		locs[nloc++] = label_loc(x, lost ? 0 : 1);
	if (process_root)
		locs[nloc++] = process_loc(x, a->tgid, t);
	int64_t kpid = str_c(x, "pid"), ktid = str_c(x, "tid"), kcomm = str_c(x, "comm");
	int64_t kproc = str_c(x, "process"), kthread = str_c(x, "thread");
	int64_t comm = t ? str_ix(x, t->name, strnlen(t->name, sizeof(t->name))) : 0;
	int64_t proc = named_id(x, a->tgid, t), thread = named_id(x, a->tid, NULL);
	pbw_reset(w);
	pbw_begin(w, PR_SAMPLE);
	pbw_begin(w, SM_LOCATION_ID);
	for (size_t i = 0; i < nloc; i++)
		pbw_raw_varint(w, locs[i]);
	pbw_end(w);
	pbw_begin(w, SM_VALUE);
	pbw_raw_varint(w, a->n);
	pbw_raw_varint(w, period ? a->n * period : a->w);
	pbw_end(w);
	label_num(w, kpid, a->tgid);
	label_num(w, ktid, a->tid);
	if (comm)
		label_str(w, kcomm, comm);
	label_str(w, kproc, proc);
	label_str(w, kthread, thread);
	pbw_end(w);
	pbw_raw(&x->out, pbw_data(w), pbw_len(w));
	free(locs);
}

static void value_type(struct pp *x, uint32_t field, const char *type, const char *unit)
{
	int64_t t = str_c(x, type), u = str_c(x, unit);
	pbw_begin(&x->out, field);
	pbw_int(&x->out, VT_TYPE, t);
	pbw_int(&x->out, VT_UNIT, u);
	pbw_end(&x->out);
}

static void put_mappings(struct pp *x)
{
	const struct bt_dump_stacks *s = x->s;
	char hex[2 * sizeof(s->maps[0].build_id) + 1];
	for (uint64_t id = 1; id <= x->maps.n; id++) {
		uint32_t sl = x->maps.slot[id - 1];
		const struct bt_dump_map *m = sl < s->nmaps ? &s->maps[sl] : NULL;
		/* no main binary: the first mapping (the anonymous one) has no file */
		const char *path = m ? m->path : sl == PP_SLOT_KERNEL(s) ? "[kernel.kallsyms]" : id == 1 ? "" : "[anonymous]";
		int64_t file = str_c(x, path), bid = 0;
		if (m && m->build_id_len) {
			size_t n = m->build_id_len < sizeof(m->build_id) ? m->build_id_len : sizeof(m->build_id);
			for (size_t i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
			bid = str_ix(x, hex, 2 * n);
		}
		pbw_begin(&x->out, PR_MAPPING);
		pbw_uint(&x->out, MA_ID, id);
		pbw_uint(&x->out, MA_MEMORY_START, map_start(x, id));
		pbw_uint(&x->out, MA_MEMORY_LIMIT, sl == PP_SLOT_KERNEL(s) ? UINT64_MAX : map_start(x, id) + MAP_SPAN);
		pbw_uint(&x->out, MA_FILE_OFFSET, 0);
		if (file)
			pbw_int(&x->out, MA_FILENAME, file);
		if (bid)
			pbw_int(&x->out, MA_BUILD_ID, bid);
		pbw_bool(&x->out, MA_HAS_FUNCTIONS, 1);
		pbw_bool(&x->out, MA_HAS_FILENAMES, s->nlocs > 0);
		pbw_bool(&x->out, MA_HAS_LINE_NUMBERS, s->nlocs > 0);
		pbw_bool(&x->out, MA_HAS_INLINE_FRAMES, s->nlocs > 0);
		pbw_end(&x->out);
	}
}

/* The losses as comments (go tool pprof prints them above -top, and with
 * -comments): samples drawn under a label, then every non-zero loss
 * counter of the dump, as convert's Perfetto and JSON outputs name them. */
struct comments {
	struct pp *x;
	int any;
};

static void comment(struct pp *x, const char *text)
{
	pbw_int(&x->out, PR_COMMENT, str_c(x, text));
}

static void loss_comment(void *ctx, const char *key, uint64_t v)
{
	struct comments *c = ctx;
	char buf[160];
	if (!v)
		return;
	snprintf(buf, sizeof(buf), "btrace-bpf: %s: %" PRIu64, key, v);
	comment(c->x, buf);
	c->any = 1;
}

static void put_comments(struct pp *x, const struct bt_export_opts *o, const struct bt_export_stats *st)
{
	struct comments c = { x, 0 };
	char buf[200];
	if (st->samples_no_stack) {
		snprintf(buf, sizeof(buf), "btrace-bpf: %" PRIu64 " of %" PRIu64 " %s with a stack lost or not taken,"
			 " under [stack lost] or [no stack]", st->samples_no_stack, st->events,
			 o->offcpu ? "off-CPU blocks" : "CPU samples");
		comment(x, buf);
		c.any = 1;
	}
	bt_export_losses(x->p, loss_comment, &c);
	if (!c.any)
		comment(x, "btrace-bpf: no loss counted");
}

int bt_export_pprof(const struct bt_export_prep *p, struct bt_sink *out, const struct bt_export_opts *o,
		    struct bt_export_stats *st, char *err, size_t errlen)
{
	struct pp x = { .p = p, .s = bt_dump_stacks(p->d) };
	uint32_t type = o->offcpu ? BT_EV_OFFCPU : BT_EV_CPU_SAMPLE;
	int r = 0;

	if (!x.s) {
		snprintf(err, errlen, "this dump has no call stacks (record with --sample HZ or --stacks switch)");
		return -ENOENT;
	}
	uint64_t hz = x.s->counters[BT_STKC_SAMPLE_HZ], period = !o->offcpu && hz ? 1000000000ull / hz : 0;
	if (!o->offcpu && !period)
		period = 10000000ull; /* unknown rate: 100 Hz, as perf's default */
	pbw_init(&x.out);
	pbw_init(&x.strs);
	pbw_init(&x.w);
	pbw_bytes(&x.strs, PR_STRING_TABLE, "", 0); /* index 0 is "" */
	for (size_t i = 0; i < p->nev && !r; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		if (p->ev[i].app >= 0 || h->type != type)
			continue;
		const struct bt_ev_sample *e = (const void *)h;
		uint64_t w = o->offcpu ? ((const struct bt_ev_offcpu *)h)->offcpu_ns / 1000 : 1;
		r = add_sample(&x, h, e->kstack, e->ustack, w);
		st->events++;
		st->per_type[h->type]++;
		st->samples_no_stack += (uint64_t)bt_export_pair_labelled(x.s, e->kstack, e->ustack);
	}
	if (!r)
		r = pp_maps_plan(x.s, x.agg, x.nagg, o->process_root, &x.maps);
	if (r) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (o->offcpu) {
		value_type(&x, PR_SAMPLE_TYPE, "blocks", "count");
		value_type(&x, PR_SAMPLE_TYPE, "off_cpu", "microseconds");
		value_type(&x, PR_PERIOD_TYPE, "off_cpu", "microseconds");
		pbw_int(&x.out, PR_PERIOD, 1);
	} else {
		value_type(&x, PR_SAMPLE_TYPE, "samples", "count");
		value_type(&x, PR_SAMPLE_TYPE, "cpu", "nanoseconds");
		value_type(&x, PR_PERIOD_TYPE, "cpu", "nanoseconds");
		pbw_int(&x.out, PR_PERIOD, (int64_t)period);
	}
	pbw_int(&x.out, PR_DEFAULT_SAMPLE_TYPE, str_c(&x, o->offcpu ? "off_cpu" : "cpu"));
	/* wall clock of the first event: the dump's REALTIME/BOOTTIME pair */
	const struct bt_dump_header *hd = p->hdr;
	if (p->first_ts && hd->created_realtime_ns > hd->created_boottime_ns - p->first_ts)
		pbw_int(&x.out, PR_TIME_NANOS, (int64_t)(hd->created_realtime_ns - (hd->created_boottime_ns - p->first_ts)));
	pbw_int(&x.out, PR_DURATION_NANOS, (int64_t)(p->last_ts - p->first_ts));
	put_mappings(&x);
	for (size_t i = 0; i < x.nagg && !x.err; i++) {
		put_sample(&x, &x.agg[i], period, o->process_root);
		st->records++;
		if (pbw_len(&x.out) >= 1u << 20) { /* stream: the locations and functions are written before use */
			if ((r = bt_sink_write(out, pbw_data(&x.out), pbw_len(&x.out))) < 0)
				goto werr;
			pbw_reset(&x.out);
		}
	}
	put_comments(&x, o, st);
	r = x.err ? x.err : pbw_error(&x.out) ? pbw_error(&x.out) : pbw_error(&x.strs) ? pbw_error(&x.strs) : pbw_error(&x.w);
	if (r) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if ((r = bt_sink_write(out, pbw_data(&x.out), pbw_len(&x.out))) < 0 ||
	    (r = bt_sink_write(out, pbw_data(&x.strs), pbw_len(&x.strs))) < 0)
		goto werr;
	r = bt_sink_error(out);
	if (r < 0)
		goto werr;
	goto out;
werr:
	snprintf(err, errlen, "write error: %s", strerror(-r));
out:
	pbw_free(&x.out);
	pbw_free(&x.strs);
	pbw_free(&x.w);
	bt_strset_release(&x.set, 0);
	bt_u64map_free(&x.idx);
	bt_u64map_free(&x.fns);
	bt_u64map_free(&x.locs);
	bt_u64map_free(&x.aggix);
	free(x.agg);
	pp_maps_free(&x.maps);
	return r;
}
