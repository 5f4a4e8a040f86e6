// SPDX-License-Identifier: MIT
/*
 * dump_read.c - open and fully validate a dump file (format: dump_format.h,
 * docs/dump-format.md), and the per-CPU sequence analysis used by report.
 *
 * Nothing in the file is trusted: every length, count and offset is checked
 * against what holds it before use, allocations are bounded by the file size
 * (and by zlib's maximum expansion for compressed bodies), and every event is
 * checked against the size of its type. A file that fails any check is
 * refused with a one-line reason; the caller never sees a partial dump.
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
#include "func_batch.h"
#include "dump_format.h"
#include "app_shm.h"
#include "event_names.h"
#include "dump_stacks.h"

/* deflate expands at most ~1032:1; anything claiming more is corrupt */
#define ZLIB_MAX_RATIO 1040u

struct bt_dump {
	struct bt_dump_header hdr;
	uint8_t *body; /* uncompressed body (owned) */
	uint64_t body_len;
	struct bt_task *tasks;
	size_t ntasks;
	struct bt_probe_desc *probes;
	size_t nprobes;
	uint64_t *rb_drops, *rb_emitted;
	struct bt_stats bst;
	struct bt_read_stats rst;
	struct bt_dump_block *blocks;
	size_t nblocks, cap_blocks;
	struct bt_dump_event *events;
	size_t nevents, cap_events;
	uint64_t nentries; /* entries stored, unknown types included */
	uint64_t hdr_nsections;
	uint64_t unknown;
	struct bt_prog_miss *prog_misses; /* PMIS table */
	size_t nprog_misses;
	int seen_prog_misses;
	struct bt_dump_app *apps; /* APPS table; names point into app_names */
	size_t napps;
	char (*app_names)[BTD_APP_NAME_LEN];
	uint64_t app_blocks;
	int seen_app_blocks;
	struct bt_func_name *funcs;  /* AFUN sections, per app a sorted run */
	size_t nfuncs;
	uint8_t *func_events;        /* decoded function entries/exits (struct func_ev) */
	struct bt_dump_trigger *triggers; /* TRIG section, NULL if none */
	size_t ntriggers;
	struct bt_trigger_fired *fired;
	size_t nfired;
	struct bt_dump_stacks stacks; /* STCK section */
	int seen_stacks;
};

__attribute__((format(printf, 4, 5))) static void *rerr(char *err, size_t errlen, int e, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return NULL;
}

static const char *sec_name(uint32_t type, char buf[16])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)(type >> (8 * i));
		buf[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	buf[4] = '\0';
	return buf;
}

static uint32_t crc_of(const uint8_t *p, uint64_t len)
{
	uint32_t crc = (uint32_t)crc32(0, Z_NULL, 0);
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static void nul_terminate(char *s, size_t len)
{
	s[len - 1] = '\0';
}

void bt_dump_close(struct bt_dump *d)
{
	if (!d)
		return;
	free(d->body);
	free(d->tasks);
	free(d->probes);
	free(d->rb_drops);
	free(d->rb_emitted);
	free(d->blocks);
	free(d->events);
	free(d->apps);
	free(d->app_names);
	free(d->triggers);
	free(d->fired);
	free(d->prog_misses);
	bt_dump_stacks_release(&d->stacks);
	free(d->funcs);
	free(d->func_events);
	free(d);
}

/* ---- body ---------------------------------------------------------------- */

/* ---- sections ------------------------------------------------------------ */

struct parse {
	struct bt_dump *d;
	char *err;
	size_t errlen;
	uint64_t off; /* of the current section */
	char nb[16];
};

#define PFAIL(p, ...) (rerr((p)->err, (p)->errlen, EBADMSG, __VA_ARGS__), -EBADMSG)

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
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < tb.count; i++) {
		struct btd_task t;
		memcpy(&t, pl + sizeof(tb) + (uint64_t)i * tb.rec_size, sizeof(t));
		d->tasks[i].tid = t.tid;
		d->tasks[i].tgid = t.tgid;
		d->tasks[i].exit_ts = t.exit_ts;
		memcpy(d->tasks[i].comm, t.comm, sizeof(d->tasks[i].comm));
		nul_terminate(d->tasks[i].comm, sizeof(d->tasks[i].comm));
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
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
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
		nul_terminate(o->spec, sizeof(o->spec));
		nul_terminate(o->binary, sizeof(o->binary));
		nul_terminate(o->func, sizeof(o->func));
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
	d->hdr.drain_events = l.drain_events;
	d->hdr.drain_rejected = l.drain_rejected;
	const uint8_t *arr = pl + sizeof(l) + (uint64_t)l.ncounters * 8;
	d->rb_drops = calloc(n ? n : 1, 8);
	if (!d->rb_drops)
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	memcpy(d->rb_drops, arr, n * 8);
	if (l.has_emitted) {
		d->rb_emitted = calloc(n ? n : 1, 8);
		if (!d->rb_emitted)
			return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
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
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
	for (uint32_t i = 0; i < tb.count; i++) {
		struct btd_prog_miss m;
		struct bt_prog_miss *o = &d->prog_misses[i];
		memcpy(&m, pl + sizeof(tb) + (uint64_t)i * tb.rec_size, sizeof(m));
		_Static_assert(sizeof(o->name) == sizeof(m.name), "program name");
		memcpy(o->name, m.name, sizeof(o->name));
		nul_terminate(o->name, sizeof(o->name));
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
			return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
		d->blocks = n;
		d->cap_blocks = cap;
	}
	if (app < 0)
		d->blocks[d->nblocks++] = (struct bt_dump_block){
			.pos = b.pos, .prev_pos = b.prev_pos, .core = b.core, .used = b.used,
			.nentries = b.nentries, .complete = !!(b.flags & BTD_BLOCK_COMPLETE),
		};
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
		if (ev->type == BT_EV_UPROBE_ENTRY || ev->type == BT_EV_USDT || ev->type == BT_EV_UPROBE_RETURN) {
			const struct bt_ev_uprobe *u = (const void *)ev;
			if (u->nargs > BT_MAX_UARGS)
				return PFAIL(p, "corrupt dump: uprobe event with %u arguments (max %d)", u->nargs,
					     BT_MAX_UARGS);
		}
		if (d->nevents == d->cap_events) {
			size_t cap = d->cap_events ? d->cap_events * 2 : 1024;
			void *n = realloc(d->events, cap * sizeof(*d->events));
			if (!n)
				return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
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

static int cmp_func(const void *a, const void *b)
{
	const struct bt_func_name *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* AFUN: names point into the body (NUL-terminated in place: the padding
 * after each name has room, or the name is cut by one byte). */
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
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
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
		char *name = (char *)pl + o;
		name[btd_pad8(k) > k ? k : k - 1] = 0;
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
		return rerr(p->err, p->errlen, ENOMEM, "out of memory"), -ENOMEM;
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
		if ((size_t)e->app >= d->napps || e->ev->tgid != d->apps[e->app].pid)
			return PFAIL(p, "corrupt dump: application event of process %u in the buffer of %s",
				     e->ev->tgid, (size_t)e->app >= d->napps ? "an unknown application" : "another");
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

static int parse_body(struct bt_dump *d, char *err, size_t errlen)
{
	struct parse p = { .d = d, .err = err, .errlen = errlen };
	int seen_tasks = 0, seen_probes = 0, seen_loss = 0, seen_end = 0, r = 0;
	uint64_t nsec = 0;

	while (p.off < d->body_len) {
		struct btd_section s;
		if (seen_end)
			return PFAIL(&p, "corrupt dump: data after the END section (body offset %" PRIu64 ")", p.off);
		if (d->body_len - p.off < sizeof(s))
			return PFAIL(&p, "corrupt dump: body ends inside a section header (offset %" PRIu64 ")", p.off);
		memcpy(&s, d->body + p.off, sizeof(s));
		uint64_t room = d->body_len - p.off - sizeof(s);
		if (s.len > room || btd_pad8(s.len) > room)
			return PFAIL(&p, "corrupt dump: section %s at body offset %" PRIu64 " is %" PRIu64
					 " bytes, only %" PRIu64 " remain", sec_name(s.type, p.nb), p.off, s.len, room);
		uint8_t *pl = d->body + p.off + sizeof(s);
		switch (s.type) {
		case BTD_SEC_TASKS:
			r = seen_tasks++ ? PFAIL(&p, "corrupt dump: two task tables") : parse_tasks(&p, pl, s.len);
			break;
		case BTD_SEC_PROBES:
			r = seen_probes++ ? PFAIL(&p, "corrupt dump: two probe tables") : parse_probes(&p, pl, s.len);
			break;
		case BTD_SEC_LOSS:
			r = seen_loss++ ? PFAIL(&p, "corrupt dump: two loss sections") : parse_loss(&p, pl, s.len);
			break;
		case BTD_SEC_PROG_MISSES:
			r = d->seen_prog_misses++ ? PFAIL(&p, "corrupt dump: two program tables")
						  : parse_prog_misses(&p, pl, s.len);
			break;
		case BTD_SEC_BLOCK:
			r = parse_block(&p, pl, s.len, -1);
			break;
		case BTD_SEC_APP_BLOCK:
			r = parse_app_block(&p, pl, s.len);
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
			if (d->seen_stacks++)
				r = PFAIL(&p, "corrupt dump: two stack tables");
			else if ((r = bt_dump_stacks_decode(pl, s.len, &d->stacks, err, errlen)) != 0)
				errno = -r;
			break;
		case BTD_SEC_END:
			seen_end = 1;
			r = parse_end(&p, pl, s.len, nsec);
			break;
		default:
			if (s.flags & BTD_SEC_F_REQUIRED)
				r = PFAIL(&p, "dump needs a newer btrace-bpf (unknown required section %s)",
					  sec_name(s.type, p.nb));
			break; /* optional sections of newer writers are skipped */
		}
		if (r)
			return r;
		nsec++;
		p.off += sizeof(s) + btd_pad8(s.len);
	}
	if (!seen_end)
		return PFAIL(&p, "truncated dump (body has no END section)");
	if (d->seen_app_blocks && !d->apps)
		return PFAIL(&p, "corrupt dump: application blocks without an application table");
	/* Every stack id an event names is in the table. */
	for (size_t i = 0; i < d->nevents; i++) {
		const struct bt_event_hdr *ev = d->events[i].ev;
		if (ev->type != BT_EV_CPU_SAMPLE && ev->type != BT_EV_OFFCPU && ev->type != BT_EV_WAKER &&
		    ev->type != BT_EV_PROBE_STACK)
			continue;
		const struct bt_ev_sample *e = (const void *)ev;
		uint32_t id[2] = { e->kstack, e->ustack };
		for (int k = 0; k < 2; k++) {
			if (id[k] && id[k] != BT_STACK_LOST && id[k] > d->stacks.nstacks)
				return PFAIL(&p, "corrupt dump: %s event names stack %u, the stack table has %u%s",
					     bt_event_name(ev->type), id[k], d->stacks.nstacks,
					     d->seen_stacks ? "" : " (no STCK section)");
			if (id[k] && id[k] != BT_STACK_LOST &&
			    d->stacks.stacks[id[k] - 1].kind != (k ? BT_STACK_USER : BT_STACK_KERNEL))
				return PFAIL(&p, "corrupt dump: %s event names stack %u as a %s stack, it is not",
					     bt_event_name(ev->type), id[k], k ? "user" : "kernel");
		}
	}
	if (!seen_tasks || !seen_probes || !seen_loss)
		return PFAIL(&p, "corrupt dump: missing %s section",
			     !seen_tasks ? "task" : !seen_probes ? "probe" : "loss");
	if (d->hdr.nblocks_stored != d->nblocks || d->hdr.nevents_stored != d->nentries || d->hdr_nsections != nsec)
		return PFAIL(&p, "corrupt dump: header says %" PRIu64 " sections, %" PRIu64 " blocks and %" PRIu64
				 " events, body has %" PRIu64 ", %zu and %" PRIu64,
			     d->hdr_nsections, d->hdr.nblocks_stored, d->hdr.nevents_stored, nsec, d->nblocks, d->nentries);
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct bt_dump_event *x = a, *y = b;
	const struct bt_event_hdr *p = x->ev, *q = y->ev;
	if (p->ts_ns != q->ts_ns)
		return p->ts_ns < q->ts_ns ? -1 : 1;
	/* one thread's application events: its seq (the CPU may differ) */
	if (x->app >= 0 && y->app >= 0 && p->tid == q->tid && p->seq != q->seq)
		return (int32_t)(p->seq - q->seq) < 0 ? -1 : 1;
	if (p->cpu != q->cpu)
		return p->cpu < q->cpu ? -1 : 1;
	if (p->seq != q->seq)
		return p->seq < q->seq ? -1 : 1;
	/* file order: deterministic */
	return (uintptr_t)p < (uintptr_t)q ? -1 : (uintptr_t)p > (uintptr_t)q;
}

/* ---- open ---------------------------------------------------------------- */

/* Every header field a reader can check on its own, before anything else of
 * the file is read: a foreign or damaged file costs 512 bytes. file_len is
 * the size of the whole file (or memory image). */
static int check_header(const uint8_t *data, uint64_t file_len, unsigned flags, struct btd_header *h, char *err,
			size_t errlen)
{
	if (file_len == 0)
		return rerr(err, errlen, EINVAL, "empty file, not a btrace-bpf dump"), -EINVAL;
	size_t ml = file_len < BTD_MAGIC_LEN ? (size_t)file_len : BTD_MAGIC_LEN;
	if (memcmp(data, BTD_MAGIC, ml) != 0)
		return rerr(err, errlen, EINVAL, "not a btrace-bpf dump (bad magic)"), -EINVAL;
	if (file_len < BTD_HEADER_SIZE)
		return rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %u header bytes)",
			    file_len, BTD_HEADER_SIZE), -EBADMSG;
	memcpy(h, data, sizeof(*h));
	if (h->version != BTD_VERSION)
		return rerr(err, errlen, ENOTSUP,
			    "unsupported dump format version %u (this btrace-bpf reads version %u)", h->version,
			    BTD_VERSION), -ENOTSUP;
	if (!(flags & BT_DUMP_OPEN_NOCRC)) {
		uint32_t c = crc_of(data, offsetof(struct btd_header, header_crc));
		if (c != h->header_crc)
			return rerr(err, errlen, EBADMSG, "corrupt dump header (checksum %08x, expected %08x)", c,
				    h->header_crc), -EBADMSG;
	}
#define HFAIL(...) (rerr(err, errlen, EBADMSG, "corrupt dump header (" __VA_ARGS__), -EBADMSG)
	if (h->header_size < BTD_HEADER_SIZE || h->header_size % 8 || h->header_size > (1u << 20))
		return HFAIL("header size %u)", h->header_size);
	if (h->compression > BTD_COMP_ZLIB || h->zlevel > 9 || (h->compression == BTD_COMP_NONE) != (h->zlevel == 0))
		return HFAIL("compression %u level %u)", h->compression, h->zlevel);
	if (h->ncpus == 0 || h->ncpus > BTD_MAX_CPUS || h->ngroups == 0 || h->ngroups > BTD_MAX_GROUPS)
		return HFAIL("%u CPUs, %u groups)", h->ncpus, h->ngroups);
	if (h->clock_id != BTD_CLOCK_BOOTTIME)
		return HFAIL("clock id %u; dumps are timed with CLOCK_BOOTTIME, %u)", h->clock_id, BTD_CLOCK_BOOTTIME);
	if (h->flags != 0)
		return HFAIL("flags %#x; version %u defines none)", h->flags, BTD_VERSION);
	if (h->ngroups < 32 && h->groups_enabled >> h->ngroups)
		return HFAIL("groups %#x enabled of %u)", h->groups_enabled, h->ngroups);
	if (h->block_size < BT_MIN_BLOCK_SIZE || h->block_size > BT_MAX_BLOCK_SIZE ||
	    (h->block_size & (h->block_size - 1)))
		return HFAIL("block size %u; a power of two from %u to %u)", h->block_size, BT_MIN_BLOCK_SIZE,
			     BT_MAX_BLOCK_SIZE);
	if (h->nblocks == 0 || h->active == 0 || h->active > h->nblocks ||
	    h->buffer_size != (uint64_t)h->nblocks * h->block_size)
		return HFAIL("%u blocks of %u bytes, %u active, buffer of %" PRIu64 " bytes)", h->nblocks,
			     h->block_size, h->active, h->buffer_size);
	if (h->dump_seq == 0 || h->overlaps_dump >= h->dump_seq)
		return HFAIL("dump #%" PRIu64 " overlapping #%" PRIu64 ")", h->dump_seq, h->overlaps_dump);
	if (h->header_size > file_len)
		return rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %u header bytes)",
			    file_len, h->header_size), -EBADMSG;
	uint64_t room = file_len - h->header_size;
	if (h->body_len > room)
		return rerr(err, errlen, EBADMSG, "truncated dump (file ends at %" PRIu64 " of %" PRIu64 " bytes)",
			    file_len, h->header_size + h->body_len), -EBADMSG;
	if (h->body_len < room)
		return rerr(err, errlen, EBADMSG, "corrupt dump (%" PRIu64 " unexpected bytes after the body)",
			    room - h->body_len), -EBADMSG;
	if (h->body_raw_len % 8 || h->body_raw_len < sizeof(struct btd_section) + sizeof(struct btd_end) ||
	    (h->compression == BTD_COMP_NONE && h->body_raw_len != h->body_len) ||
	    (h->compression == BTD_COMP_ZLIB && h->body_raw_len / ZLIB_MAX_RATIO > h->body_len) ||
	    h->body_raw_len > SIZE_MAX / 2)
		return HFAIL("body of %" PRIu64 " bytes, %" PRIu64 " uncompressed)", h->body_len, h->body_raw_len);
	/* A section takes at least its 16-byte header, a stored event 32
	 * bytes; TASK, PROB, LOSS and END are always there. */
	if (h->nsections < 4 || h->nsections > h->body_raw_len / sizeof(struct btd_section) ||
	    h->nblocks_stored > h->nsections || h->nevents_stored > h->body_raw_len / 32)
		return HFAIL("%" PRIu64 " sections, %" PRIu64 " blocks, %" PRIu64 " events in a body of %" PRIu64
			     " bytes)", h->nsections, h->nblocks_stored, h->nevents_stored, h->body_raw_len);
#undef HFAIL
	return 0;
}

static struct bt_dump *dump_new(const struct btd_header *h, uint64_t file_len, char *err, size_t errlen)
{
	struct bt_dump *d = calloc(1, sizeof(*d));
	if (!d)
		return rerr(err, errlen, ENOMEM, "out of memory");
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
	nul_terminate(o->hostname, sizeof(o->hostname));
	nul_terminate(o->kernel, sizeof(o->kernel));
	nul_terminate(o->reason, sizeof(o->reason));
	o->groups_enabled = h->groups_enabled;
	o->compression = h->compression;
	o->clock_id = h->clock_id;
	o->file_size = file_len;
	o->body_len = h->body_len;
	o->body_raw_len = h->body_raw_len;
	o->nblocks_stored = h->nblocks_stored;
	o->nevents_stored = h->nevents_stored;
	d->body_len = h->body_raw_len;
	d->hdr_nsections = h->nsections;
	d->body = malloc(d->body_len);
	if (!d->body) {
		free(d);
		return rerr(err, errlen, ENOMEM, "out of memory for a %" PRIu64 "-byte body", h->body_raw_len);
	}
	return d;
}

/* The stored body, piece by piece: from memory, or from the file in
 * READ_CHUNK reads (so memory follows what the header declares and a bad
 * body is found before it is all in memory). crc: of what was delivered. */
#define READ_CHUNK (1u << 20)
struct src {
	const uint8_t *mem; /* memory source; NULL: fd */
	int fd;
	uint64_t off, left;
	uint8_t *buf;       /* READ_CHUNK bytes for fd */
	uint32_t crc;
};

static void src_init(struct src *s, const uint8_t *mem, int fd, uint8_t *buf, uint64_t off, uint64_t len)
{
	*s = (struct src){ .mem = mem, .fd = fd, .off = off, .left = len, .buf = buf };
	s->crc = (uint32_t)crc32(0, Z_NULL, 0);
}

/* 1 with the next piece in *p, *n; 0 at the end; -errno. */
static int src_next(struct src *s, const uint8_t **p, size_t *n)
{
	if (!s->left)
		return 0;
	size_t want = s->left > READ_CHUNK ? READ_CHUNK : (size_t)s->left;
	if (s->mem) {
		*p = s->mem + s->off;
	} else {
		size_t got = 0;
		while (got < want) {
			ssize_t r = pread(s->fd, s->buf + got, want - got, (off_t)(s->off + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return -ENODATA; /* the file shrank while read */
			got += (size_t)r;
		}
		*p = s->buf;
	}
	s->off += want;
	s->left -= want;
	*n = want;
	s->crc = (uint32_t)crc32(s->crc, *p, (uInt)want);
	return 1;
}

static int src_fail(int r, char *err, size_t errlen)
{
	if (r == -ENODATA)
		rerr(err, errlen, EBADMSG, "truncated dump (the file shrank while it was read)");
	else
		rerr(err, errlen, -r, "read error: %s", strerror(-r));
	return r == -ENODATA ? -EBADMSG : r;
}

static int inflate_body(struct bt_dump *d, struct src *s, char *err, size_t errlen)
{
	z_stream z = { 0 };
	if (inflateInit(&z) != Z_OK) {
		rerr(err, errlen, ENOMEM, "out of memory (zlib)");
		return -ENOMEM;
	}
	uint64_t out_off = 0;
	int r = Z_OK, eof = 0;
	while (r != Z_STREAM_END) {
		if (z.avail_in == 0 && !eof) {
			const uint8_t *p;
			size_t n;
			int k = src_next(s, &p, &n);
			if (k < 0) {
				inflateEnd(&z);
				return src_fail(k, err, errlen);
			}
			if (k == 0) {
				eof = 1;
			} else {
				z.next_in = (Bytef *)p;
				z.avail_in = (uInt)n;
			}
		}
		if (z.avail_out == 0 && out_off < d->body_len) {
			uint64_t n = d->body_len - out_off > (1u << 30) ? (1u << 30) : d->body_len - out_off;
			z.next_out = d->body + out_off;
			z.avail_out = (uInt)n;
			out_off += n;
		}
		uInt before_in = z.avail_in, before_out = z.avail_out;
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r == Z_NEED_DICT || r == Z_DATA_ERROR || r == Z_STREAM_ERROR || r == Z_MEM_ERROR) {
			rerr(err, errlen, EBADMSG, "corrupt dump: compressed body is damaged (zlib: %s)",
			     z.msg ? z.msg : "error");
			inflateEnd(&z);
			return -EBADMSG;
		}
		if (z.avail_in == before_in && z.avail_out == before_out && (eof || z.avail_in)) {
			/* No progress: input exhausted or output full. */
			if (z.avail_out == 0 && out_off >= d->body_len)
				rerr(err, errlen, EBADMSG,
				     "corrupt dump: compressed body is larger than its recorded size (%" PRIu64 " bytes)",
				     d->body_len);
			else
				rerr(err, errlen, EBADMSG, "corrupt dump: compressed body ends early");
			inflateEnd(&z);
			return -EBADMSG;
		}
	}
	uint64_t total = out_off - z.avail_out; /* z.total_out may be 32-bit */
	int trailing = z.avail_in != 0 || s->left != 0;
	inflateEnd(&z);
	if (total != d->body_len) {
		rerr(err, errlen, EBADMSG,
		     "corrupt dump: compressed body holds %" PRIu64 " bytes, header says %" PRIu64, total, d->body_len);
		return -EBADMSG;
	}
	if (trailing) {
		rerr(err, errlen, EBADMSG, "corrupt dump: data after the end of the compressed body");
		return -EBADMSG;
	}
	return 0;
}

/* Copy an uncompressed body. */
static int copy_body(struct bt_dump *d, struct src *s, char *err, size_t errlen)
{
	const uint8_t *p;
	size_t n;
	uint64_t o = 0;
	int k;
	while ((k = src_next(s, &p, &n)) > 0) {
		memcpy(d->body + o, p, n);
		o += n;
	}
	return k < 0 ? src_fail(k, err, errlen) : 0;
}

/* A decoded function entry or exit: an application event (events.h). */
struct func_ev {
	struct bt_event_hdr h; /* struct bt_ev_app with one argument */
	uint32_t name_id;
	uint16_t nargs, flags;
	int64_t addr;
};
_Static_assert(sizeof(struct func_ev) == sizeof(struct bt_ev_app) + 8, "func_ev is a bt_ev_app");

static uint32_t func_name_id(const struct bt_dump_app *app, uint64_t addr)
{
	size_t lo = 0, hi = app->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (app->funcs[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < app->nfuncs && app->funcs[lo].addr == addr ? BT_APP_FUNC_ID_BASE + (uint32_t)lo : 0;
}

/* Replace each function batch by the entries and exits it holds, on the
 * kernel events' clock, each with the thread's seq and its function's name. */
static int decode_funcs(struct bt_dump *d, char *err, size_t errlen)
{
	size_t total = 0, nb = 0;
	for (size_t i = 0; i < d->napps; i++)
		if (d->apps[i].funcs)
			d->apps[i].funcs = d->funcs + ((uintptr_t)d->apps[i].funcs - 1);
	for (size_t i = 0; i < d->nevents; i++)
		if (d->events[i].ev->type == BT_EV_APP_FUNCS) {
			total += (size_t)bt_funcs_count((const void *)d->events[i].ev, d->events[i].len);
			nb++;
		}
	if (!nb)
		return 0;
	struct bt_func_rec *rec = malloc((total + 1) * sizeof(*rec));
	struct func_ev *out = calloc(total + 1, sizeof(*out));
	struct bt_dump_event *evs = malloc((d->nevents - nb + total + 1) * sizeof(*evs));
	if (!rec || !out || !evs) {
		free(rec);
		free(out);
		free(evs);
		return rerr(err, errlen, ENOMEM, "out of memory"), -ENOMEM;
	}
	size_t k = 0, m = 0;
	for (size_t i = 0; i < d->nevents; i++) {
		const struct bt_dump_event *e = &d->events[i];
		if (e->ev->type != BT_EV_APP_FUNCS) {
			evs[m++] = *e;
			continue;
		}
		const struct bt_ev_app_funcs *f = (const void *)e->ev;
		int64_t n = bt_funcs_count(f, e->len);
		struct bt_dump_app *app = e->app >= 0 && (size_t)e->app < d->napps ? &d->apps[e->app] : NULL;
		bt_funcs_decode(f, e->len, rec);
		for (int64_t j = 0; j < n; j++, k++) {
			struct func_ev *x = &out[k];
			x->h = f->h;
			x->h.ts_ns = rec[j].ts_ns;
			x->h.seq = rec[j].seq;
			x->h.type = rec[j].exit ? BT_EV_APP_FUNC_EXIT : BT_EV_APP_FUNC_ENTRY;
			x->nargs = 1;
			x->name_id = app ? func_name_id(app, rec[j].addr) : 0;
			x->addr = (int64_t)rec[j].addr;
			evs[m++] = (struct bt_dump_event){ .ev = &x->h, .len = sizeof(*x), .block_core = e->block_core,
							   .app = e->app };
			if (app)
				app->func_records++;
		}
	}
	free(rec);
	free(d->events);
	d->events = evs;
	d->nevents = m;
	d->cap_events = m;
	d->func_events = (uint8_t *)out;
	return 0;
}

/* The body is in d->body: check it and parse it. Closes d on failure. */
static struct bt_dump *dump_finish(struct bt_dump *d, const struct btd_header *h, unsigned flags, char *err,
				   size_t errlen)
{
	if (!(flags & BT_DUMP_OPEN_NOCRC) && h->compression != BTD_COMP_NONE) {
		uint32_t c = crc_of(d->body, d->body_len);
		if (c != h->raw_crc) {
			rerr(err, errlen, EBADMSG, "corrupt dump (uncompressed body checksum %08x, expected %08x)", c,
			     h->raw_crc);
			goto fail;
		}
	}
	if (parse_body(d, err, errlen) < 0 || decode_funcs(d, err, errlen) < 0)
		goto fail;
	if (d->nevents)
		qsort(d->events, d->nevents, sizeof(*d->events), cmp_event);
	return d;
fail: {
	int e = errno;
	bt_dump_close(d);
	errno = e;
	return NULL;
}
}

static struct bt_dump *body_crc_fail(struct bt_dump *d, uint32_t c, uint32_t want, char *err, size_t errlen)
{
	bt_dump_close(d);
	return rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", c, want);
}

static struct bt_dump *open_buf(const uint8_t *data, size_t len, unsigned flags, char *err, size_t errlen)
{
	struct btd_header h;
	struct src s;

	if (err && errlen)
		err[0] = '\0';
	if (check_header(data, len, flags, &h, err, errlen) < 0)
		return NULL;
	const uint8_t *body = data + h.header_size;
	if (!(flags & BT_DUMP_OPEN_NOCRC)) {
		uint32_t c = crc_of(body, h.body_len);
		if (c != h.body_crc)
			return rerr(err, errlen, EBADMSG, "corrupt dump (body checksum %08x, expected %08x)", c,
				    h.body_crc);
	}
	struct bt_dump *d = dump_new(&h, len, err, errlen);
	if (!d)
		return NULL;
	src_init(&s, data, -1, NULL, h.header_size, h.body_len);
	if ((h.compression == BTD_COMP_NONE ? copy_body(d, &s, err, errlen) : inflate_body(d, &s, err, errlen)) < 0) {
		int e = errno;
		bt_dump_close(d);
		errno = e;
		return NULL;
	}
	return dump_finish(d, &h, flags, err, errlen);
}

struct bt_dump *bt_dump_open_mem_flags(const void *data, size_t len, unsigned flags, char *err, size_t errlen)
{
	if (!data && len)
		return rerr(err, errlen, EINVAL, "no data");
	return open_buf(data ? data : "", len, flags, err, errlen);
}

struct bt_dump *bt_dump_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
	return bt_dump_open_mem_flags(data, len, 0, err, errlen);
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" :
	       S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* From a file: header first (512 bytes), then the body in chunks. Memory is
 * what the header declares (the uncompressed body) plus one chunk; a file
 * whose header does not check out costs one read. */
static struct bt_dump *open_fd(int fd, uint64_t file_len, char *err, size_t errlen)
{
	uint8_t hbuf[BTD_HEADER_SIZE];
	struct btd_header h;
	struct src s;
	size_t got = 0, want = file_len < sizeof(hbuf) ? (size_t)file_len : sizeof(hbuf);

	while (got < want) {
		ssize_t r = pread(fd, hbuf + got, want - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			return rerr(err, errlen, e, "read error: %s", strerror(e));
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < want)
		file_len = got; /* shrank: validation reports the truncation */
	if (check_header(hbuf, file_len, 0, &h, err, errlen) < 0)
		return NULL;
	uint8_t *buf = malloc(READ_CHUNK);
	if (!buf)
		return rerr(err, errlen, ENOMEM, "out of memory");
	struct bt_dump *d = NULL;
	int r = 0;
	if (h.compression == BTD_COMP_NONE) {
		/* The checksum first, one chunk at a time: nothing of a damaged
		 * body is kept. */
		const uint8_t *p;
		size_t n;
		src_init(&s, NULL, fd, buf, h.header_size, h.body_len);
		while ((r = src_next(&s, &p, &n)) > 0)
			;
		if (r < 0) {
			src_fail(r, err, errlen);
			goto out;
		}
		if (s.crc != h.body_crc) {
			d = body_crc_fail(NULL, s.crc, h.body_crc, err, errlen);
			goto out;
		}
	}
	d = dump_new(&h, file_len, err, errlen);
	if (!d)
		goto out;
	src_init(&s, NULL, fd, buf, h.header_size, h.body_len);
	r = h.compression == BTD_COMP_NONE ? copy_body(d, &s, err, errlen) : inflate_body(d, &s, err, errlen);
	if (r == -EBADMSG && h.compression != BTD_COMP_NONE) {
		/* A damaged stream: say so by the checksum when it is the file
		 * that was damaged (read on, one chunk at a time). */
		const uint8_t *p;
		size_t n;
		int k;
		while ((k = src_next(&s, &p, &n)) > 0)
			;
		if (k == 0 && s.crc != h.body_crc)
			r = 0;
	}
	if (r == 0 && s.crc != h.body_crc) {
		d = body_crc_fail(d, s.crc, h.body_crc, err, errlen);
		goto out;
	}
	if (r < 0) {
		int e = errno;
		bt_dump_close(d);
		errno = e;
		d = NULL;
		goto out;
	}
	free(buf);
	return dump_finish(d, &h, 0, err, errlen);
out: {
	int e = errno;
	free(buf);
	errno = e;
	return d;
}
}

struct bt_dump *bt_dump_open(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (err && errlen)
		err[0] = '\0';
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
	 * checked before anything is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		return rerr(err, errlen, e, "cannot open: %s", strerror(e));
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return rerr(err, errlen, e, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return rerr(err, errlen, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
			    "not a regular file (%s): give a dump file", file_kind(st.st_mode));
	}
	struct bt_dump *d = open_fd(fd, (uint64_t)st.st_size, err, errlen);
	int e = errno;
	close(fd);
	errno = e;
	return d;
}

/* ---- accessors ----------------------------------------------------------- */

const struct bt_dump_stacks *bt_dump_stacks(const struct bt_dump *d)
{
	return d->seen_stacks ? &d->stacks : NULL;
}

const struct bt_dump_header *bt_dump_header(const struct bt_dump *d)
{
	return &d->hdr;
}

const struct bt_task *bt_dump_tasks(const struct bt_dump *d, size_t *n)
{
	*n = d->ntasks;
	return d->tasks;
}

const struct bt_probe_desc *bt_dump_probes(const struct bt_dump *d, size_t *n)
{
	*n = d->nprobes;
	return d->probes;
}

const uint64_t *bt_dump_rb_drops(const struct bt_dump *d)
{
	return d->rb_drops;
}

const uint64_t *bt_dump_rb_emitted(const struct bt_dump *d)
{
	return d->rb_emitted;
}

const struct bt_stats *bt_dump_buffer_stats(const struct bt_dump *d)
{
	return &d->bst;
}

const struct bt_read_stats *bt_dump_read_stats(const struct bt_dump *d)
{
	return &d->rst;
}

const struct bt_dump_event *bt_dump_events(const struct bt_dump *d, size_t *n)
{
	*n = d->nevents;
	return d->events;
}

const struct bt_dump_block *bt_dump_blocks(const struct bt_dump *d, size_t *n)
{
	*n = d->nblocks;
	return d->blocks;
}

const struct bt_dump_trigger *bt_dump_triggers(const struct bt_dump *d, size_t *n)
{
	*n = d->ntriggers;
	return d->triggers;
}

const struct bt_trigger_fired *bt_dump_fired(const struct bt_dump *d, size_t *n)
{
	*n = d->nfired;
	return d->fired;
}

const struct bt_prog_miss *bt_dump_prog_misses(const struct bt_dump *d, size_t *n)
{
	*n = d->nprog_misses;
	return d->prog_misses;
}

uint64_t bt_dump_prog_misses_total(const struct bt_dump *d)
{
	uint64_t t = 0;
	for (size_t i = 0; i < d->nprog_misses; i++)
		t += d->prog_misses[i].misses;
	return t;
}

uint64_t bt_dump_unknown_events(const struct bt_dump *d)
{
	return d->unknown;
}

const struct bt_dump_app *bt_dump_apps(const struct bt_dump *d, size_t *n)
{
	*n = d->napps;
	return d->apps;
}

const char *bt_dump_app_event_name(const struct bt_dump *d, int32_t app, uint32_t name_id)
{
	if (app >= 0 && (size_t)app < d->napps && name_id >= BT_APP_FUNC_ID_BASE)
		return name_id - BT_APP_FUNC_ID_BASE < d->apps[app].nfuncs
			       ? d->apps[app].funcs[name_id - BT_APP_FUNC_ID_BASE].name
			       : NULL;
	if (app < 0 || (size_t)app >= d->napps || name_id == 0 || name_id > d->apps[app].nnames ||
	    !d->apps[app].names[name_id - 1][0])
		return NULL;
	return d->apps[app].names[name_id - 1];
}

uint64_t bt_dump_app_blocks(const struct bt_dump *d)
{
	return d->app_blocks;
}

const char *bt_app_counter_name(int i)
{
	static const char *const n[BT_APPC_MAX] = {
		[BT_APPC_BLOCKS_READ] = "blocks_read",   [BT_APPC_BLOCKS_BAD] = "blocks_bad",
		[BT_APPC_BLOCKS_LOST] = "blocks_lost",   [BT_APPC_BLOCKS_BUSY] = "blocks_busy",
		[BT_APPC_BLOCKS_EMPTY] = "blocks_empty", [BT_APPC_ENTRIES] = "events",
		[BT_APPC_DROPPED] = "app_dropped",       [BT_APPC_REJECTED] = "app_rejected",
		[BT_APPC_SKIPPED] = "app_skipped",       [BT_APPC_RACES] = "app_races",
		[BT_APPC_BUFFERS] = "buffers",           [BT_APPC_RESIZES] = "resizes",
		[BT_APPC_BUFFER_SIZE] = "buffer_size",   [BT_APPC_NAMES_BAD] = "names_bad",
		[BT_APPC_NAMES_LOST] = "names_lost", [BT_APPC_BLOCKS_PARTIAL] = "blocks_partial",
	};
	return i >= 0 && i < BT_APPC_MAX ? n[i] : NULL;
}
