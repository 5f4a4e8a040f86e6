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
 * anonymous code and the labels.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "export.h"
#include "export_names.h"
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

/* One aggregated sample: a (kernel, user) stack pair on a thread. */
struct agg {
	uint32_t kstack, ustack, tid, tgid;
	uint64_t n, w;
};

struct pp {
	const struct bt_export_prep *p;
	const struct bt_dump_stacks *s;
	struct pbw out, strs, w; /* the profile; its string table; a scratch message */
	struct bt_strset set;   /* strings -> offset; offset -> index in idx */
	struct bt_u64map idx;
	uint32_t nstr;
	struct bt_u64map fns, locs; /* (name, file) -> function id; location key -> id */
	uint32_t nfns, nlocs;
	struct agg *agg;
	size_t nagg;
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

/* The function id of (name, file), its Function written if new. */
static uint64_t fn_id(struct pp *x, int64_t name, int64_t file)
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
	pbw_int(&x->out, FN_SYSTEM_NAME, name);
	if (file)
		pbw_int(&x->out, FN_FILENAME, file);
	pbw_end(&x->out);
	return *v;
}

static uint64_t map_id(const struct bt_dump_stacks *s, uint32_t map)
{
	if (map == BT_DMAP_KERNEL)
		return s->nmaps + 1;
	if (map == BT_DMAP_NONE || map > s->nmaps)
		return s->nmaps + 2;
	return map;
}

static uint64_t map_start(const struct bt_dump_stacks *s, uint64_t id)
{
	return id == s->nmaps + 1 ? KERNEL_START : id * MAP_SPAN;
}

/* The frame's own function name, as report --profile prints it. */
static int64_t own_name(struct pp *x, const struct bt_dump_frame *f)
{
	const struct bt_dump_stacks *s = x->s;
	char buf[600];
	if (f->sym && f->sym <= s->nsyms)
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
	uint64_t off = bt_frame_lookup_off(f->off, i), mid = map_id(s, f->map);
	uint64_t addr = mid == s->nmaps + 1 ? off : map_start(s, mid) + (off & (MAP_SPAN - 1));
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
		uint64_t fid = fn_id(x, str_ix(x, nm, bt_export_sym_len(nm)), str_c(x, sl->file));
		pbw_begin(w, LO_LINE);
		pbw_uint(w, LN_FUNCTION_ID, fid);
		pbw_int(w, LN_LINE, sl->line);
		if (sl->col)
			pbw_int(w, LN_COLUMN, sl->col);
		pbw_end(w);
	}
	const struct bt_dump_srcline *own = l ? &s->lines[l->first + l->nlines - 1] : NULL;
	pbw_begin(w, LO_LINE);
	pbw_uint(w, LN_FUNCTION_ID, fn_id(x, own_name(x, f), own ? str_c(x, own->file) : 0));
	if (own)
		pbw_int(w, LN_LINE, own->line);
	pbw_end(w);
	pbw_end(w);
	pbw_raw(&x->out, pbw_data(w), pbw_len(w));
	return id;
}

/* The location of a label ("[stack lost]", "[no stack]") in the anonymous mapping. */
static uint64_t label_loc(struct pp *x, int which)
{
	static const char *const names[] = { "[stack lost]", "[no stack]" };
	uint64_t mid = x->s->nmaps + 2, addr = map_start(x->s, mid) + (uint64_t)which;
	uint32_t *v = bt_u64map_slot(&x->locs, 0xb7ab000000000000ull | (uint64_t)which << 1 | 1);
	if (!v) {
		x->err = -ENOMEM;
		return 0;
	}
	if (!*v) {
		*v = ++x->nlocs;
		uint64_t fid = fn_id(x, str_c(x, names[which]), 0);
		pbw_begin(&x->out, PR_LOCATION);
		pbw_uint(&x->out, LO_ID, *v);
		pbw_uint(&x->out, LO_MAPPING_ID, mid);
		pbw_uint(&x->out, LO_ADDRESS, addr);
		pbw_begin(&x->out, LO_LINE);
		pbw_uint(&x->out, LN_FUNCTION_ID, fid);
		pbw_end(&x->out);
		pbw_end(&x->out);
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
			x->agg[x->nagg] = (struct agg){ k, u, h->tid, h->tgid, 0, 0 };
			*v = (uint32_t)++x->nagg;
		}
		struct agg *a = &x->agg[*v - 1];
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

static void put_sample(struct pp *x, const struct agg *a, uint64_t period)
{
	const struct bt_dump_stacks *s = x->s;
	const struct bt_dump_stack *ids[2] = { bt_export_stack(s, a->kstack), bt_export_stack(s, a->ustack) };
	const struct bt_xthread *t = bt_export_thread(x->p, a->tid);
	int lost = bt_export_stack_lost(s, a->kstack) || bt_export_stack_lost(s, a->ustack);
	struct pbw *w = &x->w;
	size_t nloc = 0;
	uint64_t *locs = malloc((2 * (size_t)BT_STACKS_MAX_FRAMES + 1) * sizeof(*locs));

	if (!locs) {
		x->err = -ENOMEM;
		return;
	}
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; ids[k] && i < ids[k]->nframes; i++)
			locs[nloc++] = loc_id(x, ids[k], i);
	if (lost || !nloc)
		locs[nloc++] = label_loc(x, lost ? 0 : 1);
	int64_t kpid = str_c(x, "pid"), ktid = str_c(x, "tid"), kcomm = str_c(x, "comm");
	int64_t comm = t ? str_ix(x, t->name, strnlen(t->name, sizeof(t->name))) : 0;
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
	if (comm) {
		pbw_begin(w, SM_LABEL);
		pbw_int(w, LB_KEY, kcomm);
		pbw_int(w, LB_STR, comm);
		pbw_end(w);
	}
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
	for (uint64_t id = 1; id <= s->nmaps + 2; id++) {
		const struct bt_dump_map *m = id <= s->nmaps ? &s->maps[id - 1] : NULL;
		int64_t file = str_c(x, m ? m->path : id == s->nmaps + 1 ? "[kernel.kallsyms]" : "[anonymous]");
		int64_t bid = 0;
		if (m && m->build_id_len) {
			size_t n = m->build_id_len < sizeof(m->build_id) ? m->build_id_len : sizeof(m->build_id);
			for (size_t i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
			bid = str_ix(x, hex, 2 * n);
		}
		pbw_begin(&x->out, PR_MAPPING);
		pbw_uint(&x->out, MA_ID, id);
		pbw_uint(&x->out, MA_MEMORY_START, map_start(s, id));
		pbw_uint(&x->out, MA_MEMORY_LIMIT, id == s->nmaps + 1 ? UINT64_MAX : map_start(s, id) + MAP_SPAN);
		pbw_uint(&x->out, MA_FILE_OFFSET, 0);
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
		put_sample(&x, &x.agg[i], period);
		st->records++;
		if (pbw_len(&x.out) >= 1u << 20) { /* stream: the locations and functions are written before use */
			if ((r = bt_sink_write(out, pbw_data(&x.out), pbw_len(&x.out))) < 0)
				goto werr;
			pbw_reset(&x.out);
		}
	}
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
	return r;
}
