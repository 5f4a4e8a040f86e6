// SPDX-License-Identifier: MIT
/*
 * dump_write.c - write a dump of a live buffer (format: dump_format.h,
 * docs/dump-format.md).
 *
 * The dump thread runs this while the drain thread keeps writing into the
 * buffer. It works on a capture (bt_capture(): every block copied at the
 * dump's moment), streamed block by block through zlib into the file, so
 * the window is the capture's, however long compressing and writing take.
 * The header is reserved first and written last (pwrite), when the body
 * lengths and checksums are known:
 *
 *   mkostemp(dir/.btrace-tmp.PID.START.NAME.XXXXXX) -> zero header -> TASK PROB LOSS PMIS BLCK.. END
 *   -> pwrite header -> fsync -> close -> rename(NAME) -> fsync(dir)
 *
 * Any failure unlinks the temporary file and returns -errno with a message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "util.h"
#include "dump_format.h"
#include "dump_stacks.h"
#include "compact.h"
#include "cold_tier.h"

#define OUT_BUF (256u << 10)

/* ---- body stream: raw or deflate, with running crc32s -------------------- */

struct zout {
	int fd;
	int zlevel; /* 0: stored as is */
	z_stream z;
	int zinit;
	uint8_t *obuf;
	size_t olen;
	uint64_t raw_len, stored_len;
	uint32_t raw_crc, stored_crc;
	int err; /* sticky -errno */
	const char *err_op;
	struct bt_dump_stream *tee; /* the body's summary as it is written, or NULL */
};

static uint32_t crc_update(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, b, n);
		b += n;
		len -= n;
	}
	return crc;
}

static void zout_flush(struct zout *zo)
{
	if (zo->err || !zo->olen)
		return;
	int r = bt_write_full(zo->fd, zo->obuf, zo->olen);
	if (r < 0) {
		zo->err = r;
		zo->err_op = "write";
		return;
	}
	zo->stored_crc = crc_update(zo->stored_crc, zo->obuf, zo->olen);
	zo->stored_len += zo->olen;
	zo->olen = 0;
}

static void zout_deflate(struct zout *zo, int flush)
{
	for (;;) {
		zo->z.next_out = zo->obuf + zo->olen;
		zo->z.avail_out = (uInt)(OUT_BUF - zo->olen);
		int r = deflate(&zo->z, flush);
		zo->olen = OUT_BUF - zo->z.avail_out;
		if (r == Z_STREAM_ERROR) {
			zo->err = -EIO;
			zo->err_op = "deflate";
			return;
		}
		if (zo->olen == OUT_BUF)
			zout_flush(zo);
		if (zo->err)
			return;
		if (flush == Z_FINISH) {
			if (r == Z_STREAM_END)
				return;
		} else if (zo->z.avail_in == 0 && zo->z.avail_out != 0) {
			return;
		}
	}
}

static void body_put(struct zout *zo, const void *p, size_t len)
{
	if (zo->err || !len)
		return;
	if (zo->tee)
		bt_dump_stream_put(zo->tee, p, len);
	zo->raw_crc = crc_update(zo->raw_crc, p, len);
	zo->raw_len += len;
	const uint8_t *b = p;
	if (!zo->zlevel) {
		while (len && !zo->err) {
			size_t n = OUT_BUF - zo->olen < len ? OUT_BUF - zo->olen : len;
			memcpy(zo->obuf + zo->olen, b, n);
			zo->olen += n;
			b += n;
			len -= n;
			if (zo->olen == OUT_BUF)
				zout_flush(zo);
		}
		return;
	}
	while (len && !zo->err) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		zo->z.next_in = (Bytef *)b;
		zo->z.avail_in = n;
		zout_deflate(zo, Z_NO_FLUSH);
		b += n;
		len -= n;
	}
}

static void body_pad(struct zout *zo, uint64_t len)
{
	static const uint8_t zeros[8];
	body_put(zo, zeros, (size_t)(btd_pad8(len) - len));
}

static void section_begin(struct zout *zo, uint32_t type, uint32_t flags, uint64_t len)
{
	struct btd_section s = { .type = type, .flags = flags, .len = len };
	body_put(zo, &s, sizeof(s));
}

static void zout_finish(struct zout *zo)
{
	if (zo->zlevel && !zo->err)
		zout_deflate(zo, Z_FINISH);
	zout_flush(zo);
}

/* ---- sections ------------------------------------------------------------ */

static void put_tasks(struct zout *zo, const struct bt_task *t, size_t n)
{
	struct btd_table tb = { .count = (uint32_t)n, .rec_size = sizeof(struct btd_task) };
	uint64_t len = sizeof(tb) + (uint64_t)n * sizeof(struct btd_task);
	section_begin(zo, BTD_SEC_TASKS, 0, len);
	body_put(zo, &tb, sizeof(tb));
	for (size_t i = 0; i < n; i++) {
		struct btd_task r = { .tid = t[i].tid, .tgid = t[i].tgid, .exit_ts = t[i].exit_ts };
		memcpy(r.comm, t[i].comm, sizeof(r.comm) < sizeof(t[i].comm) ? sizeof(r.comm) : sizeof(t[i].comm));
		r.comm[sizeof(r.comm) - 1] = '\0';
		body_put(zo, &r, sizeof(r));
	}
	body_pad(zo, len);
}

static void copy_str(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t n = strnlen(src, slen);
	if (n >= dlen)
		n = dlen - 1;
	memcpy(dst, src, n);
	memset(dst + n, 0, dlen - n);
}

static void put_probes(struct zout *zo, const struct bt_probe_desc *p, size_t n)
{
	struct btd_table tb = { .count = (uint32_t)n, .rec_size = sizeof(struct btd_probe) };
	uint64_t len = sizeof(tb) + (uint64_t)n * sizeof(struct btd_probe);
	section_begin(zo, BTD_SEC_PROBES, 0, len);
	body_put(zo, &tb, sizeof(tb));
	for (size_t i = 0; i < n; i++) {
		struct btd_probe r = {
			.id = p[i].id, .flags = p[i].flags, .pid = p[i].pid, .nargs = p[i].nargs, .offset = p[i].offset,
		};
		copy_str(r.spec, sizeof(r.spec), p[i].spec, sizeof(p[i].spec));
		copy_str(r.binary, sizeof(r.binary), p[i].binary, sizeof(p[i].binary));
		copy_str(r.func, sizeof(r.func), p[i].func, sizeof(p[i].func));
		body_put(zo, &r, sizeof(r));
	}
	body_pad(zo, len);
}

static void put_loss(struct zout *zo, const struct bt_dump_info *info, const struct bt_stats *st,
		     const struct bt_cold_snap *snap)
{
	struct bt_cold_stats cs = { 0 };
	struct bt_cold_snap_info si = { 0 };

	if (snap)
		si = *bt_cold_snap_info(snap);
	if (info->cold)
		bt_cold_stats(info->cold, &cs);
	uint64_t cnt[BTD_NCOUNTERS] = {
		[BTD_CNT_COLD_SIZE] = cs.size,
		[BTD_CNT_COLD_CODEC] = cs.codec,
		[BTD_CNT_COLD_BLOCKS_IN] = cs.blocks_in,
		[BTD_CNT_COLD_RAW_BYTES] = cs.raw_bytes_in,
		[BTD_CNT_COLD_STORED_BYTES] = cs.stored_bytes_in,
		[BTD_CNT_COLD_BLOCKS_EVICTED] = cs.blocks_evicted,
		[BTD_CNT_COLD_GAPS] = cs.gaps,
		[BTD_CNT_COLD_BLOCKS_HELD] = cs.blocks,
		[BTD_CNT_COLD_CPU_NS] = cs.cpu_ns,
		[BTD_CNT_COLD_BLOCKS_RAW] = cs.blocks_raw,
		[BTD_CNT_COLD_BUDGET_PPM] = cs.budget_ppm,
		[BTD_CNT_COLD_HELD_BACK] = cs.held_back,
		[BTD_CNT_COLD_HELD_AGO_NS] = cs.held_back_ago_ns,
		[BTD_CNT_COLD_HOT_FROM] = si.hot_from,
		[BTD_CNT_COLD_BLOCKS_HELD_RAW] = cs.blocks_held_raw,
		[BTD_CNT_COLD_COPY_NS] = cs.copy_ns,
		[BTD_CNT_COLD_DUMPED] = si.blocks,
		[BTD_CNT_COLD_DUMPED_RAW] = si.blocks_raw,
		[BTD_CNT_COLD_BLOCKS_CUT] = si.blocks_cut,
		[BTD_CNT_ENTRIES_WRITTEN] = st->entries_written,
		[BTD_CNT_BYTES_WRITTEN] = st->bytes_written,
		[BTD_CNT_ENTRIES_REJECTED] = st->entries_rejected,
		[BTD_CNT_PADDING_BYTES] = st->padding_bytes,
		[BTD_CNT_BLOCKS_USED] = st->blocks_used,
		[BTD_CNT_BLOCKS_CLOSED] = st->blocks_closed,
		[BTD_CNT_BLOCKS_SKIPPED] = st->blocks_skipped,
		[BTD_CNT_POSITIONS_STALE] = st->positions_stale,
		[BTD_CNT_CORE_RACES] = st->core_races,
		[BTD_CNT_RESIZES] = st->resizes,
		[BTD_CNT_SIZE] = st->size,
		[BTD_CNT_MAX_SIZE] = st->max_size,
		[BTD_CNT_RESIDENT] = st->resident,
		[BTD_CNT_METADATA_BYTES] = st->metadata_bytes,
		[BTD_CNT_BLOCK_SIZE] = st->block_size,
		[BTD_CNT_NBLOCKS] = st->nblocks,
		[BTD_CNT_ACTIVE] = st->active,
		[BTD_CNT_NCORES] = st->ncores,
		[BTD_CNT_ENTRIES_DROPPED] = st->entries_dropped,
	};
	if (info->handed) {
		const struct bt_dump_handed *h = info->handed;
		cnt[BTD_CNT_HANDED] = 1;
		cnt[BTD_CNT_HANDED_BLOCKS_REFUSED] = h->blocks_refused;
		cnt[BTD_CNT_HANDED_BLOCKS_CUT] = h->blocks_cut;
		cnt[BTD_CNT_HANDED_BATCHES_REFUSED] = h->batches_refused;
		cnt[BTD_CNT_HANDED_TAIL_KNOWN] = (uint64_t)h->tail_known;
		cnt[BTD_CNT_HANDED_AFTER_NEWEST] = h->after_newest;
	}
	if (info->prior) {
		const struct bt_dump_prior *pr = info->prior;
		cnt[BTD_CNT_PRIOR] = pr->reason;
		cnt[BTD_CNT_PRIOR_NEWEST_TS] = pr->newest_ts;
		cnt[BTD_CNT_PRIOR_RESUMED_TS] = pr->resumed_ts;
		cnt[BTD_CNT_PRIOR_LOST_KNOWN] = (uint64_t)pr->lost_known;
		cnt[BTD_CNT_PRIOR_LOST] = pr->lost;
		cnt[BTD_CNT_PRIOR_BLOCKS_LEFT] = pr->blocks_left;
	}
	size_t n = (size_t)info->ncpus * info->ngroups;
	int has_emitted = info->rb_emitted != NULL;
	struct btd_loss l = {
		.ncpus = info->ncpus,
		.ngroups = info->ngroups,
		.has_emitted = (uint32_t)has_emitted,
		.ncounters = BTD_NCOUNTERS,
		.drain_events = info->drain_events,
		.drain_rejected = info->drain_rejected,
	};
	uint64_t len = sizeof(l) + sizeof(cnt) + n * 8 * (has_emitted ? 2 : 1);
	section_begin(zo, BTD_SEC_LOSS, BTD_SEC_F_REQUIRED, len);
	body_put(zo, &l, sizeof(l));
	body_put(zo, cnt, sizeof(cnt));
	if (info->rb_drops) {
		body_put(zo, info->rb_drops, n * 8);
	} else {
		static const uint64_t zeros[64];
		for (size_t i = 0; i < n; i += 64)
			body_put(zo, zeros, (n - i < 64 ? n - i : 64) * 8);
	}
	if (has_emitted)
		body_put(zo, info->rb_emitted, n * 8);
	body_pad(zo, len);
}

static void put_prog_misses(struct zout *zo, const struct bt_prog_miss *m, size_t n)
{
	struct btd_table tb = { .count = (uint32_t)n, .rec_size = sizeof(struct btd_prog_miss) };
	uint64_t len = sizeof(tb) + (uint64_t)n * sizeof(struct btd_prog_miss);
	section_begin(zo, BTD_SEC_PROG_MISSES, 0, len);
	body_put(zo, &tb, sizeof(tb));
	for (size_t i = 0; i < n; i++) {
		struct btd_prog_miss r = { .misses = m[i].misses, .prog_id = m[i].prog_id };
		copy_str(r.name, sizeof(r.name), m[i].name, sizeof(m[i].name));
		body_put(zo, &r, sizeof(r));
	}
	body_pad(zo, len);
}

struct blk_ctx {
	struct zout *zo;
	uint8_t *scratch;
	size_t cap;
	uint64_t nblocks, nentries, nsections;
	uint64_t app_blocks, app_entries; /* ABLK sections (not counted in END) */
	uint64_t ref_ts;                  /* CLOCK_BOOTTIME at dump start: decodes stored times */
	uint64_t malformed;               /* stored entries that did not decode (a bug: never seen) */
	void (*fix)(void *ctx, struct bt_event_hdr *ev, uint32_t len); /* info->fix_event */
	void *fix_ctx;
	uint32_t block_flags;             /* BTD_BLOCK_PRIOR while the previous recorder's are written */
	uint64_t min_pos;                 /* of those, the first position written */
	uint8_t ev[BT_EVENT_MAX];         /* one decoded event */
};

/* Iterator over the events of a block: kernel blocks hold batches of
 * stored events (compact.h), decoded into c->ev; application blocks hold
 * one ABI event per entry. */
struct ev_iter {
	const struct bt_block_view *blk;
	int decode;
	uint32_t off;       /* next buffer entry */
	const uint8_t *ent; /* current batch entry, NULL: take the next entry */
	uint32_t elen, eoff;
	struct bt_compact_prev prev; /* the entry's last decoded event */
};

static const void *next_event(struct blk_ctx *c, struct ev_iter *it, uint32_t *len)
{
	for (;;) {
		if (!it->decode)
			return bt_block_next(it->blk, &it->off, len);
		if (it->ent) {
			const uint8_t *rec;
			uint32_t rlen;
			int k = bt_compact_batch_next(it->ent, it->elen, &it->eoff, &rec, &rlen);
			if (k > 0) {
				uint32_t n = bt_compact_decode(rec, rlen, it->blk->core, c->ref_ts, &it->prev, c->ev);
				if (n) {
					if (c->fix)
						c->fix(c->fix_ctx, (struct bt_event_hdr *)c->ev, n);
					*len = n;
					return c->ev;
				}
				c->malformed++;
				continue;
			}
			if (k < 0)
				c->malformed++;
			it->ent = NULL;
		}
		it->ent = bt_block_next(it->blk, &it->off, &it->elen);
		it->eoff = 0;
		it->prev = (struct bt_compact_prev){ 0 };
		if (!it->ent)
			return NULL;
	}
}

/* Frame a block's events into c->scratch in one pass (each decoded once);
 * returns their count or -errno. */
static int frame_entries(struct blk_ctx *c, const struct bt_block_view *blk, int decode, size_t *olen)
{
	uint32_t len, n = 0;
	size_t o = 0;
	const void *p;
	struct ev_iter it = { .blk = blk, .decode = decode };

	while ((p = next_event(c, &it, &len))) {
		if (!decode && len >= sizeof(struct bt_ev_app_funcs) &&
		    ((const struct bt_event_hdr *)p)->type == BT_EV_APP_FUNCS)
			len = bt_funcs_trimmed_len(p, len); /* the words written, not the room */
		size_t end = o + sizeof(struct btd_entry) + btd_pad8(len);
		if (end > c->cap) {
			/* Decoded events are larger than stored ones: grow. */
			size_t cap = c->cap * 2 > end ? c->cap * 2 : end;
			uint8_t *sc = realloc(c->scratch, cap);
			if (!sc)
				return -ENOMEM;
			c->scratch = sc;
			c->cap = cap;
		}
		struct btd_entry e = { .len = len, .kind = BTD_ENTRY_KIND };
		memcpy(c->scratch + o, &e, sizeof(e));
		memcpy(c->scratch + o + sizeof(e), p, len);
		memset(c->scratch + o + sizeof(e) + len, 0, (size_t)(btd_pad8(len) - len));
		o = end;
		n++;
	}
	*olen = o;
	return (int)n;
}

/* One BLCK section, or an ABLK section (app >= 0) of application `app`. */
static int put_block(struct blk_ctx *c, const struct bt_block_view *blk, int64_t app)
{
	struct zout *zo = c->zo;
	size_t o;
	int n = frame_entries(c, blk, app < 0, &o);
	if (n < 0)
		return n;
	struct btd_block b = {
		.pos = blk->pos,
		.prev_pos = blk->prev_pos,
		.core = blk->core,
		.flags = (blk->complete ? BTD_BLOCK_COMPLETE : 0) | c->block_flags,
		.nentries = (uint32_t)n,
		.used = blk->used,
	};
	if (app < 0) {
		section_begin(zo, BTD_SEC_BLOCK, 0, sizeof(b) + o);
		c->nblocks++;
		c->nentries += (uint32_t)n;
	} else {
		struct btd_app_block ab = { .app = (uint32_t)app };
		section_begin(zo, BTD_SEC_APP_BLOCK, 0, sizeof(ab) + sizeof(b) + o);
		body_put(zo, &ab, sizeof(ab));
		c->app_blocks++;
		c->app_entries += (uint32_t)n;
	}
	body_put(zo, &b, sizeof(b));
	body_put(zo, c->scratch, o);
	c->nsections++;
	return zo->err;
}

static int block_cb(const struct bt_block_view *blk, void *arg)
{
	return put_block(arg, blk, -1);
}

/* The previous recorder's blocks within the window (bt_dump_prior). */
static int prior_block_cb(const struct bt_block_view *blk, void *arg)
{
	struct blk_ctx *c = arg;

	return blk->pos < c->min_pos ? 0 : put_block(c, blk, -1);
}

/* Before everything of this recorder: the previous one's newest blocks,
 * each event rewritten by the prior's own fix (its seqs and stack ids). */
static int put_prior(struct blk_ctx *c, const struct bt_dump_prior *pr)
{
	void (*fix)(void *, struct bt_event_hdr *, uint32_t) = c->fix;
	void *fix_ctx = c->fix_ctx;

	c->fix = pr->fix_event;
	c->fix_ctx = pr->fix_ctx;
	c->block_flags = BTD_BLOCK_PRIOR;
	c->min_pos = pr->min_pos;
	int r = bt_capture_read(pr->kbuf, prior_block_cb, c);
	c->fix = fix;
	c->fix_ctx = fix_ctx;
	c->block_flags = 0;
	return r;
}

/* ---- application buffers (the sink app_registry.c writes through) ---------- */

struct bt_dump_sink {
	struct blk_ctx c;
};

int bt_dump_sink_app_block(struct bt_dump_sink *s, uint32_t app, const struct bt_block_view *blk)
{
	return put_block(&s->c, blk, app);
}

int bt_dump_sink_apps(struct bt_dump_sink *s, const struct bt_dump_app *apps, size_t n)
{
	struct zout *zo = s->c.zo;
	uint64_t len = sizeof(struct btd_table);
	if (n > BTD_MAX_APPS)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		len += sizeof(struct btd_app) + 8ull * BT_APPC_MAX + (uint64_t)apps[i].nnames * BTD_APP_NAME_LEN;
	struct btd_table t = { .count = (uint32_t)n, .rec_size = 0 };
	section_begin(zo, BTD_SEC_APPS, 0, len);
	body_put(zo, &t, sizeof(t));
	for (size_t i = 0; i < n; i++) {
		const struct bt_dump_app *a = &apps[i];
		struct btd_app r = { .pid = a->pid, .flags = a->flags, .registered_ts = a->registered_ts,
				     .exit_ts = a->exit_ts, .ncounters = BT_APPC_MAX, .nnames = a->nnames };
		memcpy(r.name, a->name, sizeof(r.name));
		r.name[sizeof(r.name) - 1] = 0;
		body_put(zo, &r, sizeof(r));
		body_put(zo, a->counters, 8ull * BT_APPC_MAX);
		for (uint32_t k = 0; k < a->nnames; k++) {
			char nm[BTD_APP_NAME_LEN] = { 0 };
			if (a->names)
				memcpy(nm, a->names[k], BTD_APP_NAME_LEN - 1);
			body_put(zo, nm, sizeof(nm));
		}
	}
	body_pad(zo, len);
	s->c.nsections++;
	return zo->err;
}

int bt_dump_sink_stacks(struct bt_dump_sink *s, const struct bt_dump_stacks *st)
{
	struct zout *zo = s->c.zo;
	uint8_t *p = NULL;
	int64_t len = bt_dump_stacks_encode(st, 1, &p);

	if (len < 0)
		return (int)len;
	/* Required: a reader that knows only STCK would skip it and then call
	 * every stack event and SLOC corrupt; it says "needs a newer" instead. */
	section_begin(zo, BTD_SEC_STACKS_PACKED, BTD_SEC_F_REQUIRED, (uint64_t)len);
	body_put(zo, p, (size_t)len);
	body_pad(zo, (uint64_t)len);
	free(p);
	s->c.nsections++;
	/* why truncated stacks were cut: optional, an earlier reader skips it */
	if (!zo->err && (len = bt_dump_stackwhy_encode(st, &p)) > 0) {
		section_begin(zo, BTD_SEC_STACK_WHY, 0, (uint64_t)len);
		body_put(zo, p, (size_t)len);
		body_pad(zo, (uint64_t)len);
		free(p);
		s->c.nsections++;
	}
	/* binaries that lost their unwind table, named: optional, likewise */
	if (!zo->err && (len = bt_dump_unwlost_encode(st, &p)) > 0) {
		section_begin(zo, BTD_SEC_UNW_LOST, 0, (uint64_t)len);
		body_put(zo, p, (size_t)len);
		body_pad(zo, (uint64_t)len);
		free(p);
		s->c.nsections++;
	}
	if (zo->err || !st->nlocs)
		return zo->err;
	/* its source lines, after it (the reader checks them against it); an
	 * optional section: the dump goes on without it if it cannot be made */
	if ((len = bt_dump_srclocs_encode(st, &p)) < 0)
		return 0;
	section_begin(zo, BTD_SEC_SRCLOCS, 0, (uint64_t)len);
	body_put(zo, p, (size_t)len);
	body_pad(zo, (uint64_t)len);
	free(p);
	s->c.nsections++;
	return zo->err;
}

/* A name as the dump stores it: whole up to BTD_FUNC_NAME_MAX bytes; a
 * longer one (deep C++ templates) cut with a marker and a hash of the
 * whole name, so two names that share their first kilobyte stay two.
 * buf: BTD_FUNC_NAME_MAX + 1 bytes. Its length. */
static uint32_t stored_name(const char *name, char *buf, const char **out)
{
	size_t k = strnlen(name, BTD_FUNC_NAME_MAX + 1);
	if (k <= BTD_FUNC_NAME_MAX) {
		*out = name;
		return (uint32_t)k;
	}
	memcpy(buf, name, BTD_FUNC_NAME_MAX - 16);
	int m = snprintf(buf + BTD_FUNC_NAME_MAX - 16, 17, "...#%08x", (uint32_t)bt_str_hash(name, 0));
	*out = buf;
	return BTD_FUNC_NAME_MAX - 16 + (uint32_t)m;
}

int bt_dump_sink_app_funcs(struct bt_dump_sink *s, uint32_t app, const struct bt_func_name *f, size_t n)
{
	struct zout *zo = s->c.zo;
	struct btd_app_funcs h = { .app = app, .count = (uint32_t)n };
	uint64_t len = sizeof(h);
	char buf[BTD_FUNC_NAME_MAX + 1];
	const char *name;
	if (n > UINT32_MAX / 2)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		len += 16 + btd_pad8(stored_name(f[i].name, buf, &name));
	section_begin(zo, BTD_SEC_APP_FUNCS, 0, len);
	body_put(zo, &h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		uint32_t k = stored_name(f[i].name, buf, &name), z = 0;
		static const uint8_t pad[8];
		body_put(zo, &f[i].addr, 8);
		body_put(zo, &k, 4);
		body_put(zo, &z, 4);
		body_put(zo, name, k);
		body_put(zo, pad, btd_pad8(k) - k);
	}
	body_pad(zo, len);
	s->c.nsections++;
	return zo->err;
}

/* ---- files --------------------------------------------------------------- */

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	/* Some file systems cannot fsync a directory; the data itself is synced. */
	return (r == -EINVAL || r == -EROFS) ? 0 : r;
}

static void clean_host(char *h, size_t len)
{
	if (gethostname(h, len) < 0 || !h[0])
		snprintf(h, len, "localhost");
	h[len - 1] = '\0';
	for (char *c = h; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '-' || *c == '.' || *c == '_'))
			*c = '_';
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Move tmp to final without replacing an existing file; on a name clash try
 * final-2.btd, -3, ... (auto-named dumps only). */
static int place_file(const char *tmp, char *final, size_t flen, int replace)
{
	if (replace)
		return rename(tmp, final) < 0 ? -errno : 0;
	char base[PATH_MAX];
	size_t bl = strlen(final);
	if (bl < 4 || bl >= sizeof(base))
		return -ENAMETOOLONG;
	memcpy(base, final, bl - 4); /* without ".btd" */
	base[bl - 4] = '\0';
	for (int i = 1; i < 1000; i++) {
		if (i > 1 && (size_t)snprintf(final, flen, "%s-%d.btd", base, i) >= flen)
			return -ENAMETOOLONG;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EEXIST)
			continue;
		if (errno != EINVAL && errno != ENOSYS)
			return -errno;
		/* No RENAME_NOREPLACE on this file system: link + unlink. */
		if (link(tmp, final) == 0) {
			unlink(tmp);
			return 0;
		}
		if (errno == EEXIST)
			continue;
		if (access(final, F_OK) == 0)
			continue;
		return rename(tmp, final) < 0 ? -errno : 0;
	}
	return -EEXIST;
}

uint64_t bt_proc_start_time(pid_t pid)
{
	char p[64], buf[1024];
	unsigned long long start = 0;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* After the comm (which may hold spaces and parentheses): field 3 on;
	 * starttime is field 22. */
	char *q = strrchr(buf, ')');
	if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

/* A temporary of a recorder that is gone: its pid runs no more, or runs a
 * process started at another time (the pid was reused). */
static int tmp_is_stale(const char *name)
{
	int pid;
	unsigned long long start;
	if (sscanf(name + strlen(BT_DUMP_TMP_PREFIX), "%d.%llu.", &pid, &start) != 2 || pid <= 0)
		return 0; /* not a name we make: not ours to judge */
	if (pid == getpid())
		return 0;
	uint64_t now = bt_proc_start_time(pid);
	return now == 0 ? kill(pid, 0) < 0 && errno == ESRCH : now != start;
}

int bt_dump_clean_stale(const char *dir, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d) {
		int r = errno;
		if (r == ENOENT)
			return 0;
		return bt_errf(err, errlen, r, "cannot read %s: %s", dir, strerror(r));
	}
	while ((e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, BT_DUMP_TMP_PREFIX, strlen(BT_DUMP_TMP_PREFIX)) != 0)
			continue;
		/* Only regular files of ours (same user): never a link, a
		 * directory, or another user's file that happens to be named so. */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || !tmp_is_stale(e->d_name))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- bt_dump_write, in steps --------------------------------------------- */

/* One dump being written: its names, its file and its body stream. */
struct dump_job {
	const struct bt_dump_args *a;
	const struct bt_stats *bst;   /* the buffer's counters at the capture */
	char dpath[PATH_MAX], final[PATH_MAX], tmp[2 * PATH_MAX + 16];
	uint64_t b1, rt, b2;          /* BOOTTIME, REALTIME, BOOTTIME at the start */
	int fd;
	struct zout zo;
	struct bt_dump_sink sink;
	struct bt_read_stats rs;
	struct btd_header h; /* as written (put_header) */
	struct bt_cold_snap *cold; /* the tier's blocks older than the capture */
};

static int check_args(const struct bt_dump_args *a)
{
	const struct bt_dump_info *info = a->info;

	if (!a->capture || !info || (!a->dir && !a->path))
		return bt_errf(a->err, a->errlen, EINVAL, "dump: no buffer, info or destination");
	if (info->ncpus == 0 || info->ncpus > BTD_MAX_CPUS || info->ngroups > BTD_MAX_GROUPS)
		return bt_errf(a->err, a->errlen, EINVAL, "dump: bad geometry (%u CPUs, %u groups)", info->ncpus,
			       info->ngroups);
	if ((info->ntasks && !info->tasks) || (info->nprobes && !info->probes) || info->ntasks > UINT32_MAX ||
	    info->nprobes > UINT32_MAX || info->nprog_misses > UINT32_MAX)
		return bt_errf(a->err, a->errlen, EINVAL, "dump: bad task or probe table");
	if (a->zlevel < 0 || a->zlevel > 9)
		return bt_errf(a->err, a->errlen, EINVAL, "dump: compression level %d out of range 0..9", a->zlevel);
	return 0;
}

/* The final name (the given path, or a generated one in the directory,
 * created if missing) and the directory it goes into. */
static int name_dump(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	int r;

	if (a->path) {
		if ((size_t)snprintf(j->final, sizeof(j->final), "%s", a->path) >= sizeof(j->final))
			return bt_errf(a->err, a->errlen, ENAMETOOLONG, "dump: path too long: %s", a->path);
		const char *slash = strrchr(j->final, '/');
		if (!slash)
			snprintf(j->dpath, sizeof(j->dpath), ".");
		else if (slash == j->final)
			snprintf(j->dpath, sizeof(j->dpath), "/");
		else
			snprintf(j->dpath, sizeof(j->dpath), "%.*s", (int)(slash - j->final), j->final);
		return 0;
	}
	char host[64];
	struct tm tm;
	time_t now = (time_t)(j->rt / 1000000000u);
	clean_host(host, sizeof(host));
	localtime_r(&now, &tm);
	if ((size_t)snprintf(j->dpath, sizeof(j->dpath), "%s", a->dir) >= sizeof(j->dpath) ||
	    (size_t)snprintf(j->final, sizeof(j->final), "%s/btrace-%s-%04d%02d%02d-%02d%02d%02d-%" PRIu64 ".btd",
			     a->dir, host, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			     tm.tm_sec, a->info->dump_seq) >= sizeof(j->final))
		return bt_errf(a->err, a->errlen, ENAMETOOLONG, "dump: directory name too long: %s", a->dir);
	r = bt_mkdir_p(a->dir, 0700);
	if (r < 0)
		return bt_errf(a->err, a->errlen, -r, "dump: cannot create directory %s: %s", a->dir, strerror(-r));
	return 0;
}

/* The temporary file (mode 0600), named after this process (pid and start
 * time): if it dies mid-dump, a later recorder can tell the file is stale
 * (bt_dump_clean_stale). Sets j->fd, or j->tmp[0] = 0 when none was made. */
static int open_tmp(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	const char *base = strrchr(j->final, '/');
	int r;

	base = base ? base + 1 : j->final;
	if ((size_t)snprintf(j->tmp, sizeof(j->tmp), "%s/" BT_DUMP_TMP_PREFIX "%d.%" PRIu64 ".%s.XXXXXX", j->dpath,
			     (int)getpid(), bt_proc_start_time(getpid()), base) >= PATH_MAX) {
		j->tmp[0] = '\0';
		return bt_errf(a->err, a->errlen, ENAMETOOLONG, "dump: path too long: %s", j->final);
	}
	j->fd = mkostemp(j->tmp, O_CLOEXEC);
	if (j->fd < 0) {
		r = -errno;
		j->tmp[0] = '\0';
		return bt_errf(a->err, a->errlen, -r, "dump: cannot create a file in %s: %s", j->dpath, strerror(-r));
	}
	j->zo.fd = j->fd;
	if (fchmod(j->fd, 0600) < 0) {
		r = -errno;
		return bt_errf(a->err, a->errlen, -r, "dump: chmod %s: %s", j->tmp, strerror(-r));
	}
	return 0;
}

/* Output buffer, block scratch, zlib; the header's room reserved. */
static int start_body(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	struct btd_header h = { 0 };
	int r;

	j->zo.obuf = malloc(OUT_BUF);
	j->sink.c.cap = j->bst->block_size ? j->bst->block_size : BT_DEFAULT_BLOCK_SIZE;
	j->sink.c.scratch = malloc(j->sink.c.cap);
	if (!j->zo.obuf || !j->sink.c.scratch)
		return bt_errf(a->err, a->errlen, ENOMEM, "dump: out of memory");
	j->zo.zlevel = a->zlevel;
	if (a->zlevel) {
		if (deflateInit(&j->zo.z, a->zlevel) != Z_OK)
			return bt_errf(a->err, a->errlen, ENOMEM, "dump: zlib init failed");
		j->zo.zinit = 1;
	}
	j->zo.raw_crc = j->zo.stored_crc = (uint32_t)crc32(0, Z_NULL, 0);
	if (a->summary) {
		/* The manifest's counts, taken from the body as it goes out. */
		j->zo.tee = bt_dump_stream_new(a->info->ncpus, a->info->ngroups);
		if (!j->zo.tee)
			return bt_errf(a->err, a->errlen, ENOMEM, "dump: out of memory");
	}
	r = bt_write_full(j->fd, &h, sizeof(h)); /* written last, when the body is known */
	if (r < 0)
		return bt_errf(a->err, a->errlen, -r, "dump: write %s: %s", j->tmp, strerror(-r));
	return 0;
}

/* TASK PROB LOSS, then TRIG and PMIS when there are any. */
static int put_tables(struct dump_job *j)
{
	const struct bt_dump_info *info = j->a->info;
	struct zout *zo = &j->zo;

	put_tasks(zo, info->tasks, info->ntasks);
	put_probes(zo, info->probes, info->nprobes);
	/* The cold tier's blocks older than the capture, joined to it without
	 * a hole (cold_tier.h): taken now, so LOSS counts what put_contents
	 * writes. */
	if (info->cold) {
		uint32_t nc = j->bst->ncores;
		uint64_t *join = calloc(nc ? nc : 1, sizeof(*join));

		if (join)
			bt_capture_first_prev(j->a->capture, join, nc);
		j->cold = join ? bt_cold_snap_take(info->cold, bt_capture_oldest_pos(j->a->capture), join, nc) : NULL;
		free(join);
		if (!j->cold)
			return bt_errf(j->a->err, j->a->errlen, ENOMEM, "dump: out of memory (cold tier)");
	}
	put_loss(zo, info, j->bst, j->cold);
	j->sink.c.nsections = 3;
	if (info->ntriggers) {
		uint8_t *tp = NULL;
		int64_t tl = bt_dump_triggers_encode(info->triggers, info->ntriggers, info->fired, info->nfired, &tp);

		if (tl < 0)
			return bt_errf(j->a->err, j->a->errlen, (int)-tl, "dump: trigger table: %s", strerror((int)-tl));
		section_begin(zo, BTD_SEC_TRIGGERS, 0, (uint64_t)tl);
		body_put(zo, tp, (size_t)tl);
		body_pad(zo, (uint64_t)tl);
		free(tp);
		j->sink.c.nsections++;
	}
	if (info->prog_misses) {
		put_prog_misses(zo, info->prog_misses, info->nprog_misses);
		j->sink.c.nsections++;
	}
	return 0;
}

/* The captured kernel blocks (BLCK), the application buffers (ABLK...),
 * the stack table (STKP); then END with what was kept and lost. */
static int put_contents(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	const struct bt_dump_info *info = a->info;
	int r;

	j->sink.c.ref_ts = j->b1;
	j->sink.c.fix = info->fix_event;
	j->sink.c.fix_ctx = info->fix_ctx;
	j->rs = *bt_capture_read_stats(a->capture);
	if (!j->zo.err) {
		/* The previous recorder's newest blocks, then, with a cold tier,
		 * its blocks older than the capture come first. */
		struct bt_cold_read_stats cs = { 0 };

		r = info->prior && info->prior->kbuf ? put_prior(&j->sink.c, info->prior) : 0;
		if (r == 0 && j->cold)
			r = bt_cold_snap_read(j->cold, block_cb, &j->sink.c, &cs);
		j->rs.blocks_read += cs.blocks_read;
		j->rs.blocks_lost += cs.blocks_bad; /* a group that did not decompress */
		if (r == 0)
			r = bt_capture_read(a->capture, block_cb, &j->sink.c);
		if (r < 0 && !j->zo.err)
			return bt_errf(a->err, a->errlen, -r, "dump: reading the buffer: %s", strerror(-r));
		/* Buffer entries are batches of events (compact.h): count events. */
		j->rs.entries = j->sink.c.nentries;
		if (j->sink.c.malformed)
			bt_warn("dump: %" PRIu64 " stored events did not decode and were left out", j->sink.c.malformed);
	}
	if (!j->zo.err && info->write_apps) {
		r = info->write_apps(info->apps_ctx, &j->sink);
		if (r < 0 && !j->zo.err)
			return bt_errf(a->err, a->errlen, -r, "dump: reading application buffers: %s", strerror(-r));
	}
	if (!j->zo.err && info->write_stacks) {
		r = info->write_stacks(info->stacks_ctx, &j->sink);
		if (r < 0 && !j->zo.err)
			return bt_errf(a->err, a->errlen, -r, "dump: stack table: %s", strerror(-r));
	}
	struct btd_end end = {
		.nsections = j->sink.c.nsections,
		.nblocks = j->sink.c.nblocks,
		.nentries = j->sink.c.nentries,
		.blocks_read = j->rs.blocks_read,
		.blocks_lost = j->rs.blocks_lost,
		.blocks_busy = j->rs.blocks_busy,
		.blocks_empty = j->rs.blocks_empty,
		.entries_read = j->rs.entries,
	};
	section_begin(&j->zo, BTD_SEC_END, BTD_SEC_F_REQUIRED, sizeof(end));
	body_put(&j->zo, &end, sizeof(end));
	zout_finish(&j->zo);
	if (j->zo.err)
		return bt_errf(a->err, a->errlen, -j->zo.err, "dump: %s %s: %s", j->zo.err_op ? j->zo.err_op : "write",
			       j->tmp, strerror(-j->zo.err));
	return 0;
}

/* The header, now that the body's lengths and checksums are known. */
static int put_header(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	const struct bt_dump_info *info = a->info;
	struct btd_header h = { 0 };
	struct utsname u;

	memcpy(h.magic, BTD_MAGIC, BTD_MAGIC_LEN);
	h.version = BTD_VERSION;
	h.header_size = BTD_HEADER_SIZE;
	h.compression = a->zlevel ? BTD_COMP_ZLIB : BTD_COMP_NONE;
	h.zlevel = (uint32_t)a->zlevel;
	h.body_len = j->zo.stored_len;
	h.body_raw_len = j->zo.raw_len;
	h.body_crc = j->zo.stored_crc;
	h.raw_crc = j->zo.raw_crc;
	h.clock_id = BTD_CLOCK_BOOTTIME;
	h.ncpus = info->ncpus;
	h.ngroups = info->ngroups;
	h.groups_enabled = info->groups_enabled;
	h.block_size = j->bst->block_size;
	h.nblocks = j->bst->nblocks;
	h.active = j->bst->active;
	h.buffer_size = j->bst->size;
	h.created_realtime_ns = j->rt;
	h.created_boottime_ns = j->b1 + (j->b2 - j->b1) / 2;
	h.dump_seq = info->dump_seq;
	h.overlaps_dump = info->overlaps_dump;
	h.recorder_pid = (uint64_t)getpid();
	h.nblocks_stored = j->sink.c.nblocks;
	h.nevents_stored = j->sink.c.nentries;
	h.nsections = j->sink.c.nsections + 1;
	gethostname(h.hostname, sizeof(h.hostname) - 1);
	if (uname(&u) == 0)
		copy_str(h.kernel, sizeof(h.kernel), u.release, sizeof(u.release));
	if (info->reason)
		copy_str(h.reason, sizeof(h.reason), info->reason, strlen(info->reason) + 1);
	h.header_crc = crc_update((uint32_t)crc32(0, Z_NULL, 0), &h, offsetof(struct btd_header, header_crc));
	j->h = h;
	for (;;) {
		ssize_t w = pwrite(j->fd, &h, sizeof(h), 0);
		if (w == (ssize_t)sizeof(h))
			return 0;
		if (w < 0 && errno == EINTR)
			continue;
		int r = w < 0 ? errno : EIO;
		return bt_errf(a->err, a->errlen, r, "dump: write %s: %s", j->tmp, strerror(r));
	}
}

/* fsync, close, rename into place, fsync the directory. */
static int commit_file(struct dump_job *j)
{
	const struct bt_dump_args *a = j->a;
	int r;

	if (fsync(j->fd) < 0) {
		r = errno;
		return bt_errf(a->err, a->errlen, r, "dump: fsync %s: %s", j->tmp, strerror(r));
	}
	r = close(j->fd);
	j->fd = -1;
	if (r < 0) {
		r = errno;
		return bt_errf(a->err, a->errlen, r, "dump: close %s: %s", j->tmp, strerror(r));
	}
	r = place_file(j->tmp, j->final, sizeof(j->final), a->path != NULL);
	if (r < 0)
		return bt_errf(a->err, a->errlen, -r, "dump: rename %s to %s: %s", j->tmp, j->final, strerror(-r));
	r = fsync_dir(j->dpath);
	if (r < 0) {
		/* The file is complete and in place; only its durability is unsure. */
		bt_errf(a->err, a->errlen, -r, "dump: fsync directory %s: %s", j->dpath, strerror(-r));
		unlink(j->final);
		j->tmp[0] = '\0';
		return r;
	}
	j->tmp[0] = '\0'; /* renamed: nothing to remove */
	return 0;
}

int bt_dump_write_capture(const struct bt_dump_args *a)
{
	struct dump_job j = { .a = a, .fd = -1, .zo = { .fd = -1 } };
	int r;

	if (a->err && a->errlen)
		a->err[0] = '\0';
	if (a->out_path && a->out_len)
		a->out_path[0] = '\0';
	r = check_args(a);
	if (r)
		return r;
	j.bst = bt_capture_stats(a->capture);
	j.sink.c.zo = &j.zo;
	j.b1 = clock_ns(CLOCK_BOOTTIME);
	j.rt = clock_ns(CLOCK_REALTIME);
	j.b2 = clock_ns(CLOCK_BOOTTIME);
	r = name_dump(&j);
	if (r)
		return r;
	r = open_tmp(&j);
	if (!r)
		r = start_body(&j);
	if (!r)
		r = put_tables(&j);
	if (!r)
		r = put_contents(&j);
	if (!r)
		r = put_header(&j);
	if (!r)
		r = commit_file(&j);
	if (j.zo.zinit)
		deflateEnd(&j.zo.z);
	free(j.zo.obuf);
	free(j.sink.c.scratch);
	bt_cold_snap_free(j.cold);
	if (j.fd >= 0)
		close(j.fd);
	if (j.tmp[0])
		unlink(j.tmp);
	if (!r && a->out_path && a->out_len)
		snprintf(a->out_path, a->out_len, "%s", j.final);
	if (a->summary) {
		/* A body that the reader's checks refuse gets no summary (and no
		 * manifest): said in a->summary_err, the dump stays. */
		*a->summary = NULL;
		if (!r)
			*a->summary = bt_dump_stream_finish(j.zo.tee, &j.h, j.h.header_size + j.h.body_len,
							   a->summary_err, a->summary_errlen);
		else
			bt_dump_stream_free(j.zo.tee);
		j.zo.tee = NULL;
	}
	if (a->rst)
		*a->rst = j.rs;
	return r < 0 ? r : r ? -EIO : 0;
}

int bt_dump_write(struct bt_buffer *buf, const struct bt_dump_info *info, const char *dir, const char *path,
		  int zlevel, char *out_path, size_t out_len, struct bt_read_stats *rst, char *err, size_t errlen)
{
	struct bt_capture *cap = buf ? bt_capture(buf, NULL) : NULL;
	struct bt_dump_args a = {
		.capture = cap, .info = info, .dir = dir, .path = path, .zlevel = zlevel,
		.out_path = out_path, .out_len = out_len, .rst = rst, .err = err, .errlen = errlen,
	};
	int r;

	if (buf && !cap)
		return bt_errf(err, errlen, errno, "dump: capturing the buffer: %s", strerror(errno));
	r = bt_dump_write_capture(&a);
	bt_capture_free(cap);
	return r;
}
