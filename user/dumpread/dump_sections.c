// SPDX-License-Identifier: MIT
/*
 * dump_sections.c - the body of a dump, section by section: tasks, probes,
 * losses, kernel runs missed, applications and their function names,
 * triggers, stacks, and the blocks of events (each event checked against
 * the size of its type), then the end section's counts against the header.
 * Nothing is trusted: every length, count and offset is checked against what
 * holds it before use.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "dump_format.h"
#include "app_shm.h"
#include "event_names.h"
#include "dump_stacks.h"
#include "dump_read_int.h"

static const char *sec_name(uint32_t type, char buf[16])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)(type >> (8 * i));
		buf[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	buf[4] = '\0';
	return buf;
}

/* ---- sections ------------------------------------------------------------ */

struct parse {
	struct bt_dump *d;
	char *err;
	size_t errlen;
	uint64_t off; /* of the current section */
	char nb[16];
	btd_app_sink sink; /* application events handed over, not kept */
	void *sink_ctx;
};

#define PFAIL(p, ...) (btd_rerr((p)->err, (p)->errlen, EBADMSG, __VA_ARGS__), -EBADMSG)

static int table_check(struct parse *p, const uint8_t *pl, uint64_t len, uint32_t min_rec, struct btd_table *tb,
		       const char *what)
{
	if (len < sizeof(*tb))
		return PFAIL(p, "corrupt dump: %s table at body offset %" PRIu64 " too short", what, p->off);
	memcpy(tb, pl, sizeof(*tb));
	if (tb->rec_size < min_rec || tb->rec_size > (1u << 20))
		return PFAIL(p, "corrupt dump: %s table record size %u (need %u..%u)", what, tb->rec_size, min_rec,
			     1u << 20);
	if ((uint64_t)tb->count * tb->rec_size != len - sizeof(*tb))
		return PFAIL(p, "corrupt dump: %s table of %u records of %u bytes does not fill its %" PRIu64
				" bytes", what, tb->count, tb->rec_size, len - sizeof(*tb));
	return 0;
}

static int cmp_task(const void *a, const void *b)
{
	const struct bt_task *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int parse_tasks(struct parse *p, const uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_table tb;
	int r = table_check(p, pl, len, sizeof(struct btd_task), &tb, "task");
	if (r)
		return r;
	d->tasks = calloc(tb.count ? tb.count : 1, sizeof(*d->tasks));
	if (!d->tasks)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < tb.count; i++) {
		struct btd_task t;
		memcpy(&t, pl + sizeof(tb) + (uint64_t)i * tb.rec_size, sizeof(t));
		d->tasks[i].tid = t.tid;
		d->tasks[i].tgid = t.tgid;
		d->tasks[i].exit_ts = t.exit_ts;
		memcpy(d->tasks[i].comm, t.comm, sizeof(d->tasks[i].comm));
		btd_nul_terminate(d->tasks[i].comm, sizeof(d->tasks[i].comm));
	}
	d->ntasks = tb.count;
	qsort(d->tasks, d->ntasks, sizeof(*d->tasks), cmp_task);
	for (size_t i = 1; i < d->ntasks; i++)
		if (d->tasks[i].tid == d->tasks[i - 1].tid)
			return PFAIL(p, "corrupt dump: task table lists tid %u twice", d->tasks[i].tid);
	return 0;
}

static int parse_probes(struct parse *p, const uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_table tb;
	int r = table_check(p, pl, len, sizeof(struct btd_probe), &tb, "probe");
	if (r)
		return r;
	d->probes = calloc(tb.count ? tb.count : 1, sizeof(*d->probes));
	if (!d->probes)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < tb.count; i++) {
		struct btd_probe b;
		struct bt_probe_desc *o = &d->probes[i];
		memcpy(&b, pl + sizeof(tb) + (uint64_t)i * tb.rec_size, sizeof(b));
		o->id = b.id;
		o->flags = b.flags;
		o->pid = b.pid;
		o->nargs = b.nargs;
		o->offset = b.offset;
		_Static_assert(sizeof(o->spec) == sizeof(b.spec) && sizeof(o->binary) == sizeof(b.binary) &&
				       sizeof(o->func) == sizeof(b.func),
			       "probe record strings");
		memcpy(o->spec, b.spec, sizeof(o->spec));
		memcpy(o->binary, b.binary, sizeof(o->binary));
		memcpy(o->func, b.func, sizeof(o->func));
		btd_nul_terminate(o->spec, sizeof(o->spec));
		btd_nul_terminate(o->binary, sizeof(o->binary));
		btd_nul_terminate(o->func, sizeof(o->func));
	}
	d->nprobes = tb.count;
	return 0;
}

static int parse_loss(struct parse *p, const uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_loss l;
	if (len < sizeof(l))
		return PFAIL(p, "corrupt dump: loss section too short (%" PRIu64 " bytes)", len);
	memcpy(&l, pl, sizeof(l));
	if (l.ncpus != d->hdr.ncpus || l.ngroups != d->hdr.ngroups)
		return PFAIL(p, "corrupt dump: loss section is for %u CPUs x %u groups, header says %u x %u", l.ncpus,
			     l.ngroups, d->hdr.ncpus, d->hdr.ngroups);
	if (l.has_emitted > 1 || l.ncounters > 1024)
		return PFAIL(p, "corrupt dump: loss section has bad counts");
	uint64_t n = (uint64_t)l.ncpus * l.ngroups;
	uint64_t want = sizeof(l) + (uint64_t)l.ncounters * 8 + n * 8 * (l.has_emitted ? 2 : 1);
	if (want != len)
		return PFAIL(p, "corrupt dump: loss section is %" PRIu64 " bytes, its counts need %" PRIu64, len, want);
	uint64_t cnt[BTD_NCOUNTERS] = { 0 };
	memcpy(cnt, pl + sizeof(l), (l.ncounters < BTD_NCOUNTERS ? l.ncounters : BTD_NCOUNTERS) * 8);
	struct bt_stats *s = &d->bst;
	s->entries_written = cnt[BTD_CNT_ENTRIES_WRITTEN];
	s->bytes_written = cnt[BTD_CNT_BYTES_WRITTEN];
	s->entries_rejected = cnt[BTD_CNT_ENTRIES_REJECTED];
	s->padding_bytes = cnt[BTD_CNT_PADDING_BYTES];
	s->blocks_used = cnt[BTD_CNT_BLOCKS_USED];
	s->blocks_closed = cnt[BTD_CNT_BLOCKS_CLOSED];
	s->blocks_skipped = cnt[BTD_CNT_BLOCKS_SKIPPED];
	s->positions_stale = cnt[BTD_CNT_POSITIONS_STALE];
	s->core_races = cnt[BTD_CNT_CORE_RACES];
	s->resizes = cnt[BTD_CNT_RESIZES];
	s->size = (size_t)cnt[BTD_CNT_SIZE];
	s->max_size = (size_t)cnt[BTD_CNT_MAX_SIZE];
	s->resident = (size_t)cnt[BTD_CNT_RESIDENT];
	s->metadata_bytes = (size_t)cnt[BTD_CNT_METADATA_BYTES];
	s->block_size = (uint32_t)cnt[BTD_CNT_BLOCK_SIZE];
	s->nblocks = (uint32_t)cnt[BTD_CNT_NBLOCKS];
	s->active = (uint32_t)cnt[BTD_CNT_ACTIVE];
	s->ncores = (uint32_t)cnt[BTD_CNT_NCORES];
	s->entries_dropped = cnt[BTD_CNT_ENTRIES_DROPPED];
	d->cold = (struct bt_dump_cold){
		.size = cnt[BTD_CNT_COLD_SIZE], .codec = cnt[BTD_CNT_COLD_CODEC],
		.blocks_in = cnt[BTD_CNT_COLD_BLOCKS_IN], .raw_bytes = cnt[BTD_CNT_COLD_RAW_BYTES],
		.stored_bytes = cnt[BTD_CNT_COLD_STORED_BYTES], .blocks_evicted = cnt[BTD_CNT_COLD_BLOCKS_EVICTED],
		.gaps = cnt[BTD_CNT_COLD_GAPS], .blocks_held = cnt[BTD_CNT_COLD_BLOCKS_HELD],
		.cpu_ns = cnt[BTD_CNT_COLD_CPU_NS], .blocks_raw = cnt[BTD_CNT_COLD_BLOCKS_RAW],
		.budget_ppm = cnt[BTD_CNT_COLD_BUDGET_PPM], .held_back = cnt[BTD_CNT_COLD_HELD_BACK],
		.held_ago_ns = l.ncounters > BTD_CNT_COLD_HELD_AGO_NS ? cnt[BTD_CNT_COLD_HELD_AGO_NS] : UINT64_MAX,
		.hot_from = cnt[BTD_CNT_COLD_HOT_FROM],
		.blocks_held_raw = cnt[BTD_CNT_COLD_BLOCKS_HELD_RAW], .copy_ns = cnt[BTD_CNT_COLD_COPY_NS],
		.dumped = cnt[BTD_CNT_COLD_DUMPED], .dumped_raw = cnt[BTD_CNT_COLD_DUMPED_RAW],
		.blocks_cut = cnt[BTD_CNT_COLD_BLOCKS_CUT], .has_parts = l.ncounters > BTD_CNT_COLD_BLOCKS_CUT,
	};
	d->is_handed = cnt[BTD_CNT_HANDED] != 0;
	d->handed = (struct bt_dump_handed){
		.blocks_refused = cnt[BTD_CNT_HANDED_BLOCKS_REFUSED], .blocks_cut = cnt[BTD_CNT_HANDED_BLOCKS_CUT],
		.batches_refused = cnt[BTD_CNT_HANDED_BATCHES_REFUSED], .tail_known = cnt[BTD_CNT_HANDED_TAIL_KNOWN] != 0,
		.after_newest = cnt[BTD_CNT_HANDED_AFTER_NEWEST],
	};
	static const char *const prior_reasons[] = { [BTD_PRIOR_RESTART] = "restart", [BTD_PRIOR_UPGRADE] = "upgrade",
						     [BTD_PRIOR_DIED] = "recorder-died" };
	uint64_t pr = cnt[BTD_CNT_PRIOR];
	if (pr)
		d->restart = (struct bt_dump_restart){
			.reason = pr < sizeof(prior_reasons) / sizeof(*prior_reasons) && prior_reasons[pr] ?
					  prior_reasons[pr] : "restart (of a newer recorder's kind)",
			.newest_ts = cnt[BTD_CNT_PRIOR_NEWEST_TS], .resumed_ts = cnt[BTD_CNT_PRIOR_RESUMED_TS],
			.lost_known = cnt[BTD_CNT_PRIOR_LOST_KNOWN] != 0, .lost = cnt[BTD_CNT_PRIOR_LOST],
			.blocks_left = cnt[BTD_CNT_PRIOR_BLOCKS_LEFT],
		};
	d->hdr.drain_events = l.drain_events;
	d->hdr.drain_rejected = l.drain_rejected;
	const uint8_t *arr = pl + sizeof(l) + (uint64_t)l.ncounters * 8;
	d->rb_drops = calloc(n ? n : 1, 8);
	if (!d->rb_drops)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	memcpy(d->rb_drops, arr, n * 8);
	if (l.has_emitted) {
		d->rb_emitted = calloc(n ? n : 1, 8);
		if (!d->rb_emitted)
			return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
		memcpy(d->rb_emitted, arr + n * 8, n * 8);
	}
	return 0;
}

static int parse_prog_misses(struct parse *p, const uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_table tb;
	int r = table_check(p, pl, len, sizeof(struct btd_prog_miss), &tb, "program");
	if (r)
		return r;
	d->prog_misses = calloc(tb.count ? tb.count : 1, sizeof(*d->prog_misses));
	if (!d->prog_misses)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < tb.count; i++) {
		struct btd_prog_miss m;
		struct bt_prog_miss *o = &d->prog_misses[i];
		memcpy(&m, pl + sizeof(tb) + (uint64_t)i * tb.rec_size, sizeof(m));
		_Static_assert(sizeof(o->name) == sizeof(m.name), "program name");
		memcpy(o->name, m.name, sizeof(o->name));
		btd_nul_terminate(o->name, sizeof(o->name));
		o->misses = m.misses;
		o->prog_id = m.prog_id;
	}
	d->nprog_misses = tb.count;
	return 0;
}

/* A BLCK payload (app < 0), or the BLCK part of application app's ABLK. */
static int parse_block(struct parse *p, uint8_t *pl, uint64_t len, int32_t app)
{
	struct bt_dump *d = p->d;
	struct btd_block b;
	if (len < sizeof(b))
		return PFAIL(p, "corrupt dump: block at body offset %" PRIu64 " too short", p->off);
	memcpy(&b, pl, sizeof(b));
	if (app >= 0) {
		d->app_blocks++;
	} else if (d->nblocks == d->cap_blocks) {
		size_t cap = d->cap_blocks ? d->cap_blocks * 2 : 64;
		void *n = realloc(d->blocks, cap * sizeof(*d->blocks));
		if (!n)
			return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
		d->blocks = n;
		d->cap_blocks = cap;
	}
	if (app < 0)
		d->blocks[d->nblocks++] = (struct bt_dump_block){
			.pos = b.pos, .prev_pos = b.prev_pos, .core = b.core, .used = b.used,
			.nentries = b.nentries, .complete = !!(b.flags & BTD_BLOCK_COMPLETE),
		};
	/* A kernel block below the capture's oldest came from the cold tier. */
	int prior = app < 0 && (b.flags & BTD_BLOCK_PRIOR);
	int from_cold = app < 0 && !prior && d->cold.size && b.pos < d->cold.hot_from;
	d->cold.dump_blocks += from_cold;
	if (prior && !d->restart.reason)
		return PFAIL(p, "corrupt dump: a previous recorder's block at body offset %" PRIu64
				" in a dump that says it holds none", p->off);
	d->restart.blocks += prior;
	uint64_t o = sizeof(b);
	for (uint32_t i = 0; i < b.nentries; i++) {
		struct btd_entry e;
		if (len - o < sizeof(e))
			return PFAIL(p, "corrupt dump: block at body offset %" PRIu64 " ends inside entry %u of %u",
				     p->off, i, b.nentries);
		memcpy(&e, pl + o, sizeof(e));
		o += sizeof(e);
		if (e.kind != BTD_ENTRY_KIND || e.len > len - o || btd_pad8(e.len) > len - o)
			return PFAIL(p, "corrupt dump: block at body offset %" PRIu64 ": bad entry %u (%u bytes)",
				     p->off, i, e.len);
		/* 8-aligned: the body is, and sections and entries are padded to 8 */
		const struct bt_event_hdr *ev = (const void *)(pl + o);
		o += btd_pad8(e.len);
		if (app < 0)
			d->nentries++;
		if (e.len < sizeof(*ev))
			return PFAIL(p, "corrupt dump: event of %u bytes in block at body offset %" PRIu64
					" (an event header is %zu)", e.len, p->off, sizeof(*ev));
		if (ev->type >= BT_EV_MAX) {
			d->unknown++; /* a newer recorder's event type */
			continue;
		}
		uint32_t need = bt_event_min_size(ev->type);
		if (!need)
			return PFAIL(p, "corrupt dump: event type %u in block at body offset %" PRIu64, ev->type,
				     p->off);
		if (e.len < need)
			return PFAIL(p, "corrupt dump: %s event of %u bytes (needs %u) in block at body offset %" PRIu64,
				     bt_event_name(ev->type), e.len, need, p->off);
		if (ev->cpu >= d->hdr.ncpus)
			return PFAIL(p, "corrupt dump: event on CPU %u, the dump has %u CPUs", ev->cpu, d->hdr.ncpus);
		if (ev->type == BT_EV_APP_FUNC_ENTRY || ev->type == BT_EV_APP_FUNC_EXIT)
			return PFAIL(p, "corrupt dump: stored %s event (only decoded from batches)",
				     bt_event_name(ev->type));
		int is_app = ev->type >= BT_EV_APP_INSTANT && ev->type <= BT_EV_APP_FUNCS;
		if (ev->type == BT_EV_APP_FUNCS && bt_funcs_count((const void *)ev, e.len) < 0)
			return PFAIL(p, "corrupt dump: malformed function batch in block at body offset %" PRIu64,
				     p->off);
		if (is_app != (app >= 0))
			return PFAIL(p, "corrupt dump: %s event in a %s block at body offset %" PRIu64,
				     bt_event_name(ev->type), app >= 0 ? "application" : "kernel", p->off);
		if (is_app && ev->type != BT_EV_APP_FUNCS) {
			const struct bt_ev_app *a = (const void *)ev;
			if (a->nargs > BT_APP_MAX_ARGS || e.len < sizeof(*a) + 8u * a->nargs)
				return PFAIL(p, "corrupt dump: application event with %u arguments in %u bytes",
					     a->nargs, e.len);
		}
		if (bt_event_is_uprobe(ev->type)) {
			const struct bt_ev_uprobe *u = (const void *)ev;
			if (u->nargs > BT_MAX_UARGS)
				return PFAIL(p, "corrupt dump: uprobe event with %u arguments (max %d)", u->nargs,
					     BT_MAX_UARGS);
		}
		d->restart.events += prior;
		if (from_cold) { /* LOSS came first: hot_from is known */
			d->cold.dump_events++;
			if (!d->cold.first_ts || ev->ts_ns < d->cold.first_ts)
				d->cold.first_ts = ev->ts_ns;
			if (ev->ts_ns > d->cold.last_ts)
				d->cold.last_ts = ev->ts_ns;
		}
		if (app >= 0 && p->sink) { /* handed over, not kept (dump_app_stream.c) */
			int r = p->sink(p->sink_ctx, ev, e.len, app, b.core);
			if (r < 0 && p->err && p->errlen && p->err[0]) /* the sink said why */
				return errno = -r, r;
			if (r < 0)
				return btd_rerr(p->err, p->errlen, -r, "%s", r == -ENOMEM ? "out of memory" : strerror(-r)), r;
			continue;
		}
		if (d->summary) { /* counted, not kept (btd_summary_event) */
			if (btd_summary_event(d, ev, e.len, app) < 0)
				return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
			continue;
		}
		if (d->nevents == d->cap_events) {
			size_t cap = d->cap_events ? d->cap_events * 2 : 1024;
			void *n = realloc(d->events, cap * sizeof(*d->events));
			if (!n)
				return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
			d->events = n;
			d->cap_events = cap;
		}
		d->events[d->nevents++] =
			(struct bt_dump_event){ .ev = ev, .len = e.len, .block_core = b.core, .app = app };
	}
	if (o != len)
		return PFAIL(p, "corrupt dump: block at body offset %" PRIu64 " has %" PRIu64 " bytes after its %u entries",
			     p->off, len - o, b.nentries);
	return 0;
}

static int parse_app_block(struct parse *p, uint8_t *pl, uint64_t len)
{
	struct btd_app_block ab;
	if (len < sizeof(ab))
		return PFAIL(p, "corrupt dump: application block at body offset %" PRIu64 " too short", p->off);
	memcpy(&ab, pl, sizeof(ab));
	if (ab.app >= BTD_MAX_APPS || p->d->apps)
		return PFAIL(p, "corrupt dump: application block for application %u at body offset %" PRIu64, ab.app,
			     p->off);
	p->d->seen_app_blocks = 1;
	return parse_block(p, pl + sizeof(ab), len - sizeof(ab), (int32_t)ab.app);
}

int btd_app_block_each(struct bt_dump *d, uint8_t *pl, uint64_t len, uint64_t off, btd_app_sink sink, void *ctx,
		       char *err, size_t errlen)
{
	struct parse p = { .d = d, .err = err, .errlen = errlen, .off = off, .sink = sink, .sink_ctx = ctx };
	struct btd_app_block ab;

	if (len < sizeof(ab))
		return PFAIL(&p, "corrupt dump: application block at body offset %" PRIu64 " too short", off);
	memcpy(&ab, pl, sizeof(ab));
	if (ab.app >= d->napps)
		return PFAIL(&p, "corrupt dump: application block for application %u at body offset %" PRIu64, ab.app, off);
	return parse_block(&p, pl + sizeof(ab), len - sizeof(ab), (int32_t)ab.app);
}

static int cmp_func(const void *a, const void *b)
{
	const struct bt_func_name *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* AFUN: names point into the body, NUL-terminated in place. A name whose
 * length is a multiple of 8 has no padding byte for its NUL: every name is
 * moved back over its record's reserved word (4 bytes, read already), which
 * leaves room for the NUL at any length. */
static int parse_app_funcs(struct parse *p, uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_app_funcs h;
	uint64_t o = sizeof(h);
	if (len < sizeof(h))
		return PFAIL(p, "corrupt dump: function name table too short");
	memcpy(&h, pl, sizeof(h));
	if (!d->apps || h.app >= d->napps || d->apps[h.app].funcs || h.count > len / 16)
		return PFAIL(p, "corrupt dump: function name table for application %u", h.app);
	struct bt_func_name *f = realloc(d->funcs, (d->nfuncs + h.count + 1) * sizeof(*f));
	if (!f)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	d->funcs = f;
	for (uint32_t i = 0; i < h.count; i++) {
		uint64_t addr;
		uint32_t k;
		if (len - o < 16)
			return PFAIL(p, "corrupt dump: function name table ends inside record %u", i);
		memcpy(&addr, pl + o, 8);
		memcpy(&k, pl + o + 8, 4);
		o += 16;
		if (k == 0 || k > BTD_FUNC_NAME_MAX || btd_pad8(k) > len - o)
			return PFAIL(p, "corrupt dump: function name %u of %u bytes", i, k);
		char *name = (char *)pl + o - 4;
		memmove(name, pl + o, k);
		name[k] = 0;
		o += btd_pad8(k);
		d->funcs[d->nfuncs + i] = (struct bt_func_name){ addr, name };
	}
	if (o != len)
		return PFAIL(p, "corrupt dump: %" PRIu64 " bytes after the function name table", len - o);
	qsort(d->funcs + d->nfuncs, h.count, sizeof(*f), cmp_func);
	/* Pointers into d->funcs are set once every table is in (realloc). */
	d->apps[h.app].nfuncs = h.count;
	d->apps[h.app].funcs = (const void *)(uintptr_t)(d->nfuncs + 1); /* index + 1 until then */
	d->nfuncs += h.count;
	return 0;
}

static int parse_apps(struct parse *p, const uint8_t *pl, uint64_t len)
{
	struct bt_dump *d = p->d;
	struct btd_table t;
	uint64_t o = sizeof(t), total_names = 0;
	if (len < sizeof(t))
		return PFAIL(p, "corrupt dump: application table too short");
	memcpy(&t, pl, sizeof(t));
	if (t.count > BTD_MAX_APPS)
		return PFAIL(p, "corrupt dump: %u applications", t.count);
	/* First pass: framing and sizes. */
	for (uint32_t i = 0; i < t.count; i++) {
		struct btd_app a;
		if (len - o < sizeof(a))
			return PFAIL(p, "corrupt dump: application table ends inside record %u", i);
		memcpy(&a, pl + o, sizeof(a));
		uint64_t need = sizeof(a) + 8ull * a.ncounters + (uint64_t)a.nnames * BTD_APP_NAME_LEN;
		if (a.ncounters > 1024 || a.nnames > BT_APP_MAX_NAMES || need > len - o)
			return PFAIL(p, "corrupt dump: application record %u does not fit its table", i);
		o += need;
		total_names += a.nnames;
	}
	if (o != len)
		return PFAIL(p, "corrupt dump: %" PRIu64 " bytes after the application table", len - o);
	d->apps = calloc(t.count ? t.count : 1, sizeof(*d->apps));
	d->app_names = calloc(total_names ? total_names : 1, BTD_APP_NAME_LEN);
	if (!d->apps || !d->app_names)
		return btd_rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	d->napps = t.count;
	o = sizeof(t);
	uint64_t k = 0;
	for (uint32_t i = 0; i < t.count; i++) {
		struct btd_app a;
		struct bt_dump_app *x = &d->apps[i];
		memcpy(&a, pl + o, sizeof(a));
		o += sizeof(a);
		x->pid = a.pid;
		x->flags = a.flags;
		x->registered_ts = a.registered_ts;
		x->exit_ts = a.exit_ts;
		memcpy(x->name, a.name, sizeof(x->name));
		x->name[sizeof(x->name) - 1] = 0;
		memcpy(x->counters, pl + o, 8u * (a.ncounters < BT_APPC_MAX ? a.ncounters : BT_APPC_MAX));
		o += 8ull * a.ncounters;
		x->nnames = a.nnames;
		x->names = (const char(*)[64])d->app_names[k];
		for (uint32_t j = 0; j < a.nnames; j++, k++) {
			memcpy(d->app_names[k], pl + o, BTD_APP_NAME_LEN);
			d->app_names[k][BTD_APP_NAME_LEN - 1] = 0;
			o += BTD_APP_NAME_LEN;
		}
	}
	/* Every application event belongs to its application's process. */
	for (size_t i = 0; i < d->nevents; i++) {
		const struct bt_dump_event *e = &d->events[i];
		if (e->app < 0)
			continue;
		if ((size_t)e->app >= d->napps)
			return PFAIL(p, "corrupt dump: application event of process %u in the buffer of an unknown "
				     "application", e->ev->tgid);
		if (e->ev->tgid != d->apps[e->app].pid)
			return PFAIL(p, "corrupt dump: application event of process %u in the buffer of process %u",
				     e->ev->tgid, d->apps[e->app].pid);
	}
	return 0;
}

static int parse_end(struct parse *p, const uint8_t *pl, uint64_t len, uint64_t nsections)
{
	struct bt_dump *d = p->d;
	struct btd_end e;
	if (len < sizeof(e))
		return PFAIL(p, "corrupt dump: END section too short");
	memcpy(&e, pl, sizeof(e));
	if (e.nsections != nsections || e.nblocks != d->nblocks || e.nentries != d->nentries)
		return PFAIL(p, "corrupt dump: END says %" PRIu64 " sections, %" PRIu64 " blocks, %" PRIu64
				" events; the body has %" PRIu64 ", %zu, %" PRIu64, e.nsections, e.nblocks, e.nentries,
			     nsections, d->nblocks, d->nentries);
	d->rst.blocks_read = e.blocks_read;
	d->rst.blocks_lost = e.blocks_lost;
	d->rst.blocks_busy = e.blocks_busy;
	d->rst.blocks_empty = e.blocks_empty;
	d->rst.entries = e.entries_read;
	return 0;
}

/* ---- summaries (dump.h): events counted, not kept ------------------------ */

int btd_summary_event(struct bt_dump *d, const struct bt_event_hdr *ev, uint32_t len, int32_t app)
{
	struct bt_dump_summary *m = &d->sum;
	int g = bt_event_group(ev->type);

	if (ev->type == BT_EV_APP_FUNCS) {
		/* its entries and exits, as the full decode lists them (no group) */
		struct bt_funcs_iter it;
		uint64_t addr;
		unsigned ex;

		bt_funcs_iter_init(&it, (const void *)ev, len);
		while (bt_funcs_iter_next(&it, &addr, &ex)) {
			m->by_type[ex ? BT_EV_APP_FUNC_EXIT : BT_EV_APP_FUNC_ENTRY]++;
			m->app_events++;
		}
		return 0;
	}
	if (app >= 0)
		m->app_events++;
	m->by_type[ev->type]++; /* < BT_EV_MAX: parse_block checked it */
	if (g >= 0 && ev->cpu < d->hdr.ncpus)
		m->by_group[g]++;
	if (app >= 0 || (ev->type >= BT_EV_APP_INSTANT && ev->type <= BT_EV_APP_FUNC_EXIT))
		return 0;
	if (d->nseqrecs == d->cap_seqrecs) {
		size_t cap = d->cap_seqrecs ? d->cap_seqrecs * 2 : 1024;
		void *n = realloc(d->seqrecs, cap * sizeof(*d->seqrecs));
		if (!n)
			return -ENOMEM;
		d->seqrecs = n;
		d->cap_seqrecs = cap;
	}
	d->seqrecs[d->nseqrecs++] = (struct bt_seq_rec){ .ts = ev->ts_ns, .seq = ev->seq, .cpu = ev->cpu };
	return 0;
}

int btd_summary_done(struct bt_dump *d)
{
	int r = bt_seq_analyze_recs(d->seqrecs, d->nseqrecs, d->hdr.ncpus, d->restart.resumed_ts, &d->sum.w);

	free(d->seqrecs);
	d->seqrecs = NULL;
	d->nseqrecs = d->cap_seqrecs = 0;
	return r;
}

/* The header fields a reader keeps, from the file's header. */
void btd_header_copy(struct bt_dump *d, const struct btd_header *h, uint64_t file_len)
{
	struct bt_dump_header *o = &d->hdr;
	o->version = h->version;
	o->ncpus = h->ncpus;
	o->ngroups = h->ngroups;
	o->block_size = h->block_size;
	o->nblocks = h->nblocks;
	o->active = h->active;
	o->zlevel = h->zlevel;
	o->created_realtime_ns = h->created_realtime_ns;
	o->created_boottime_ns = h->created_boottime_ns;
	o->dump_seq = h->dump_seq;
	o->overlaps_dump = h->overlaps_dump;
	o->buffer_size = h->buffer_size;
	o->recorder_pid = h->recorder_pid;
	_Static_assert(sizeof(o->hostname) == sizeof(h->hostname) && sizeof(o->kernel) == sizeof(h->kernel) &&
			       sizeof(o->reason) == sizeof(h->reason),
		       "header strings");
	memcpy(o->hostname, h->hostname, sizeof(o->hostname));
	memcpy(o->kernel, h->kernel, sizeof(o->kernel));
	memcpy(o->reason, h->reason, sizeof(o->reason));
	btd_nul_terminate(o->hostname, sizeof(o->hostname));
	btd_nul_terminate(o->kernel, sizeof(o->kernel));
	btd_nul_terminate(o->reason, sizeof(o->reason));
	o->groups_enabled = h->groups_enabled;
	o->compression = h->compression;
	o->clock_id = h->clock_id;
	o->file_size = file_len;
	o->body_len = h->body_len;
	o->body_raw_len = h->body_raw_len;
	o->nblocks_stored = h->nblocks_stored;
	o->nevents_stored = h->nevents_stored;
	d->hdr_nsections = h->nsections;
}

/* Whether a section of this type is parsed in a summary (the manifest's
 * reading): the stack table and function names are not needed there, and
 * skipping them keeps the summary's memory to one block at a time. */
int btd_summary_skips(uint32_t type)
{
	return type == BTD_SEC_STACKS || type == BTD_SEC_STACKS_PACKED || type == BTD_SEC_STACK_WHY ||
	       type == BTD_SEC_UNW_LOST || type == BTD_SEC_SRCLOCS || type == BTD_SEC_APP_FUNCS;
}

void btd_parser_init(struct btd_parser *ps, struct bt_dump *d, char *err, size_t errlen)
{
	memset(ps, 0, sizeof(*ps));
	ps->d = d;
	ps->err = err;
	ps->errlen = errlen;
}

int btd_parse_section(struct btd_parser *ps, const struct btd_section *sp, uint8_t *pl)
{
	struct bt_dump *d = ps->d;
	struct parse p = { .d = d, .err = ps->err, .errlen = ps->errlen, .off = ps->off };
	struct btd_section s = *sp;
	char *err = ps->err;
	size_t errlen = ps->errlen;
	int r = 0;

	if (ps->seen_end)
		return PFAIL(&p, "corrupt dump: data after the END section (body offset %" PRIu64 ")", p.off);
	if (d->summary && btd_summary_skips(s.type)) {
		/* not read (btd_summary_skips); counted as a section */
	} else {
		switch (s.type) {
		case BTD_SEC_TASKS:
			r = ps->seen_tasks++ ? PFAIL(&p, "corrupt dump: two task tables") : parse_tasks(&p, pl, s.len);
			break;
		case BTD_SEC_PROBES:
			r = ps->seen_probes++ ? PFAIL(&p, "corrupt dump: two probe tables") : parse_probes(&p, pl, s.len);
			break;
		case BTD_SEC_LOSS:
			r = ps->seen_loss++ ? PFAIL(&p, "corrupt dump: two loss sections") : parse_loss(&p, pl, s.len);
			break;
		case BTD_SEC_PROG_MISSES:
			r = d->seen_prog_misses++ ? PFAIL(&p, "corrupt dump: two program tables")
						  : parse_prog_misses(&p, pl, s.len);
			break;
		case BTD_SEC_BLOCK:
			r = parse_block(&p, pl, s.len, -1);
			break;
		case BTD_SEC_APP_BLOCK:
			if (d->app_stream) {
				p.sink = d->app_ops->note;
				p.sink_ctx = d;
			}
			r = parse_app_block(&p, pl, s.len);
			if (!r && d->app_stream)
				r = d->app_ops->block_done(d);
			break;
		case BTD_SEC_APPS:
			r = d->apps ? PFAIL(&p, "corrupt dump: two application tables") : parse_apps(&p, pl, s.len);
			break;
		case BTD_SEC_APP_FUNCS:
			r = parse_app_funcs(&p, pl, s.len);
			break;
		case BTD_SEC_TRIGGERS:
			if (d->triggers)
				r = PFAIL(&p, "corrupt dump: two trigger sections");
			else if (bt_dump_triggers_decode(pl, s.len, &d->triggers, &d->ntriggers, &d->fired, &d->nfired, err,
							 errlen)) {
				errno = EBADMSG;
				r = -EBADMSG;
			}
			break;
		case BTD_SEC_STACKS:
		case BTD_SEC_STACKS_PACKED:
			if (d->seen_stacks++)
				r = PFAIL(&p, "corrupt dump: two stack tables");
			else if ((r = bt_dump_stacks_decode(pl, s.len, s.type == BTD_SEC_STACKS_PACKED, d->body_max,
							    &d->stacks, err, errlen)) != 0)
				errno = -r;
			break;
		case BTD_SEC_STACK_WHY:
			if (!d->seen_stacks || d->seen_stackwhy++)
				r = PFAIL(&p, "corrupt dump: %s", d->seen_stackwhy ? "two truncation-reason tables"
										 : "truncation reasons before the stack table");
			else if ((r = bt_dump_stackwhy_decode(pl, s.len, &d->stacks, err, errlen)) != 0)
				errno = -r;
			break;
		case BTD_SEC_UNW_LOST:
			if (!d->seen_stacks)
				r = PFAIL(&p, "corrupt dump: lost unwind tables before the stack table");
			else if ((r = bt_dump_unwlost_decode(pl, s.len, &d->stacks, err, errlen)) != 0)
				errno = -r;
			break;
		case BTD_SEC_SRCLOCS:
			if (!d->seen_stacks || d->seen_srclocs++)
				r = PFAIL(&p, "corrupt dump: %s", d->seen_srclocs ? "two source-line tables"
										 : "source lines before the stack table");
			else if ((r = bt_dump_srclocs_decode(pl, s.len, &d->stacks, err, errlen)) != 0)
				errno = -r;
			break;
		case BTD_SEC_END:
			ps->seen_end = 1;
			r = parse_end(&p, pl, s.len, ps->nsec);
			break;
		default:
			if (s.flags & BTD_SEC_F_REQUIRED)
				r = PFAIL(&p, "dump needs a newer btrace-bpf (unknown required section %s)",
					  sec_name(s.type, p.nb));
			break; /* optional sections of newer writers are skipped */
		}
	}
	if (r)
		return r;
	ps->nsec++;
	ps->off += sizeof(s) + btd_pad8(s.len);
	return 0;
}

int btd_parse_done(struct btd_parser *ps)
{
	struct bt_dump *d = ps->d;
	struct parse p = { .d = d, .err = ps->err, .errlen = ps->errlen, .off = ps->off };

	if (!ps->seen_end)
		return PFAIL(&p, "truncated dump (body has no END section)");
	if (d->seen_app_blocks && !d->apps)
		return PFAIL(&p, "corrupt dump: application blocks without an application table");
	if (d->app_stream && d->app_max >= (int32_t)d->napps)
		return PFAIL(&p, "corrupt dump: application block for application %d of %zu", d->app_max, d->napps);
	/* every application event belongs to its application's process (the
	 * full reader checks each in parse_apps) */
	for (size_t a = 0; d->app_stream && a < d->cap_app_tgid && a < d->napps; a++) {
		uint32_t t = d->app_tgid[a], pid = d->apps[a].pid;
		if ((int32_t)a == d->tgid_mixed && t == pid)
			t = d->tgid_other;
		if (t && t != pid)
			return PFAIL(&p, "corrupt dump: application event of process %u in the buffer of process %u", t,
				     pid);
	}
	/* Every stack id an event names is in the table. */
	for (size_t i = 0; i < d->nevents; i++) {
		const struct bt_event_hdr *ev = d->events[i].ev;
		if (ev->type != BT_EV_CPU_SAMPLE && ev->type != BT_EV_OFFCPU && ev->type != BT_EV_WAKER &&
		    ev->type != BT_EV_PROBE_STACK)
			continue;
		const struct bt_ev_sample *e = (const void *)ev;
		uint32_t id[2] = { e->kstack, e->ustack };
		for (int k = 0; k < 2; k++) {
			if (id[k] && !BT_STACK_ID_GONE(id[k]) && id[k] > d->stacks.nstacks)
				return PFAIL(&p, "corrupt dump: %s event names stack %u, the stack table has %u%s",
					     bt_event_name(ev->type), id[k], d->stacks.nstacks,
					     d->seen_stacks ? "" : " (no stack table)");
			/* (a stack whose frames never arrived has no kind: counted
			 * as undefined, shown as such) */
			if (id[k] && !BT_STACK_ID_GONE(id[k]) &&
			    !(d->stacks.stacks[id[k] - 1].flags & BT_STACK_F_UNDEFINED) &&
			    d->stacks.stacks[id[k] - 1].kind != (k ? BT_STACK_USER : BT_STACK_KERNEL))
				return PFAIL(&p, "corrupt dump: %s event names stack %u as a %s stack, it is not",
					     bt_event_name(ev->type), id[k], k ? "user" : "kernel");
		}
	}
	if (!ps->seen_tasks || !ps->seen_probes || !ps->seen_loss)
		return PFAIL(&p, "corrupt dump: missing %s section",
			     !ps->seen_tasks ? "task" : !ps->seen_probes ? "probe" : "loss");
	if (d->hdr.nblocks_stored != d->nblocks || d->hdr.nevents_stored != d->nentries || d->hdr_nsections != ps->nsec)
		return PFAIL(&p, "corrupt dump: header says %" PRIu64 " sections, %" PRIu64 " blocks and %" PRIu64
				 " events, body has %" PRIu64 ", %zu and %" PRIu64,
			     d->hdr_nsections, d->hdr.nblocks_stored, d->hdr.nevents_stored, ps->nsec, d->nblocks, d->nentries);
	return 0;
}

int btd_parse_body(struct bt_dump *d, char *err, size_t errlen)
{
	struct btd_parser ps;
	int r;

	btd_parser_init(&ps, d, err, errlen);
	while (ps.off < d->body_len) {
		struct btd_section s;
		struct parse p = { .d = d, .err = err, .errlen = errlen, .off = ps.off };
		if (ps.seen_end)
			return PFAIL(&p, "corrupt dump: data after the END section (body offset %" PRIu64 ")", p.off);
		if (d->body_len - p.off < sizeof(s))
			return PFAIL(&p, "corrupt dump: body ends inside a section header (offset %" PRIu64 ")", p.off);
		memcpy(&s, d->body + p.off, sizeof(s));
		uint64_t room = d->body_len - p.off - sizeof(s);
		if (s.len > room || btd_pad8(s.len) > room)
			return PFAIL(&p, "corrupt dump: section %s at body offset %" PRIu64 " is %" PRIu64
					 " bytes, only %" PRIu64 " remain", sec_name(s.type, p.nb), p.off, s.len, room);
		r = btd_parse_section(&ps, &s, d->body + p.off + sizeof(s));
		if (r)
			return r;
	}
	return btd_parse_done(&ps);
}
