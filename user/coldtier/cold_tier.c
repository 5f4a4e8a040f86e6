// SPDX-License-Identifier: MIT
/*
 * cold_tier.c - the compressed cold tier (see cold_tier.h).
 *
 * Storage is one byte ring of groups, each [group_hdr | positions[n] |
 * compressed bytes], 8-aligned, never straddling the ring's end; a deque of
 * descriptors keeps them in insertion order, so the oldest is dropped first
 * when room is needed:
 *
 *   0                     tail                    head          size
 *   | free (after a wrap) | G3 | G4 | G5 | ...    | free        |
 *
 * The pump (one thread) keeps next_pos: every position below it was taken
 * or is gone (a gone block breaks its core's chain: counted in gaps). Blocks
 * completed beyond an active block are taken early and remembered in `early`
 * until next_pos passes them. Taken blocks wait in `pend` (raw) until a
 * group is full, then are compressed outside the lock and appended under it.
 * A reader takes the lock only to copy the descriptors and the bytes of the
 * groups it will deliver.
 */
#include "cold_tier.h"

#include <errno.h>
#include <lz4.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#define GROUP_MAGIC 0x50524743u /* "CGRP" */
#define MAX_GROUP_BLOCKS 64u

struct group_hdr {
	uint32_t magic;
	uint32_t nblocks;
	uint32_t clen;  /* compressed bytes after the positions */
	uint32_t total; /* bytes the group takes in the ring, 8-aligned */
};

struct gdesc {
	size_t off;
	uint32_t total, nblocks;
	uint64_t min_pos, max_pos;
};

struct bt_cold {
	/* configuration */
	enum bt_codec codec;
	int level;
	uint32_t bsize, gblocks;

	/* pump thread only */
	uint64_t next_pos;
	uint64_t *last_of_core; /* [BT_MAX_CORES + 1]: the core's newest taken position, 0 none */
	uint64_t *early;        /* taken positions >= next_pos, sorted */
	uint32_t nearly, early_cap;
	uint8_t *pend;          /* [gblocks * bsize] raw blocks waiting for a group */
	uint64_t pend_pos[MAX_GROUP_BLOCKS];
	uint32_t npend;
	uint8_t *cbuf;          /* compression output */
	size_t cbuf_cap;
	ZSTD_CCtx *zc;

	pthread_mutex_t lock;
	/* under lock */
	uint8_t *ring;
	size_t size, head, used;
	struct gdesc *q;        /* deque of groups, oldest at qhead */
	uint32_t qcap, qhead, qlen;
	uint64_t settled;       /* what readers may take from the tier: positions below */
	struct bt_cold_stats st;

	/* The wakeup (bt_cold_nudge/bt_cold_wait), apart from `lock` so a nudge
	 * never waits for a reader copying groups. */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;   /* CLOCK_MONOTONIC */
	atomic_int kicked;      /* written under wlock; read outside it as a hint */
	_Atomic uint64_t pump_used; /* blocks_used when the last pass began: a hint */
	_Atomic uint64_t nudges;
};

static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int bt_codec_parse(const char *s, enum bt_codec *out)
{
	if (!strcmp(s, "lz4"))
		*out = BT_CODEC_LZ4;
	else if (!strcmp(s, "zstd"))
		*out = BT_CODEC_ZSTD;
	else
		return -EINVAL;
	return 0;
}

const char *bt_codec_name(enum bt_codec c)
{
	return c == BT_CODEC_LZ4 ? "lz4" : c == BT_CODEC_ZSTD ? "zstd" : "?";
}

static size_t bound_for(const struct bt_cold *c, size_t raw)
{
	return c->codec == BT_CODEC_LZ4 ? (size_t)LZ4_compressBound((int)raw) : ZSTD_compressBound(raw);
}

/* The most a group can take in the ring. */
static size_t group_max(const struct bt_cold *c)
{
	size_t raw = (size_t)c->gblocks * c->bsize;

	return (sizeof(struct group_hdr) + c->gblocks * 8u + bound_for(c, raw) + 7) & ~(size_t)7;
}

struct bt_cold *bt_cold_create(const struct bt_cold_config *cfg, uint32_t block_size, char *err,
			       size_t errlen)
{
	struct bt_cold *c;

	if (cfg->codec != BT_CODEC_LZ4 && cfg->codec != BT_CODEC_ZSTD) {
		set_err(err, errlen, "cold tier: unknown codec");
		errno = EINVAL;
		return NULL;
	}
	if (cfg->group_blocks > MAX_GROUP_BLOCKS || block_size < BT_MIN_BLOCK_SIZE ||
	    block_size > BT_MAX_BLOCK_SIZE) {
		set_err(err, errlen, "cold tier: group of %u blocks (1..%u) of %u bytes", cfg->group_blocks,
			MAX_GROUP_BLOCKS, block_size);
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->codec = cfg->codec;
	c->level = cfg->level;
	if (c->codec == BT_CODEC_LZ4 && c->level < 1)
		c->level = 1;
	c->bsize = block_size;
	c->gblocks = cfg->group_blocks ? cfg->group_blocks : 4;
	c->size = cfg->size & ~(size_t)7;
	if (c->size < group_max(c)) {
		set_err(err, errlen, "cold tier: %zu bytes hold no group (%zu needed)", cfg->size, group_max(c));
		free(c);
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wcond, &ca);
		pthread_condattr_destroy(&ca);
	}
	c->cbuf_cap = group_max(c);
	c->last_of_core = calloc(BT_MAX_CORES + 1, sizeof(*c->last_of_core));
	c->pend = malloc((size_t)c->gblocks * c->bsize);
	c->cbuf = malloc(c->cbuf_cap);
	c->ring = malloc(c->size);
	c->qcap = 64;
	c->q = malloc(c->qcap * sizeof(*c->q));
	if (c->codec == BT_CODEC_ZSTD)
		c->zc = ZSTD_createCCtx();
	if (!c->last_of_core || !c->pend || !c->cbuf || !c->ring || !c->q ||
	    (c->codec == BT_CODEC_ZSTD && !c->zc)) {
		bt_cold_destroy(c);
		goto nomem;
	}
	c->st.oldest_pos = c->st.newest_pos = BT_NO_POS;
	return c;
nomem:
	set_err(err, errlen, "cold tier: out of memory");
	errno = ENOMEM;
	return NULL;
}

void bt_cold_destroy(struct bt_cold *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->zc);
	free(c->last_of_core);
	free(c->early);
	free(c->pend);
	free(c->cbuf);
	free(c->ring);
	free(c->q);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->wlock);
	pthread_cond_destroy(&c->wcond);
	free(c);
}

/* ---- the ring (under lock) ---------------------------------------------- */

static struct gdesc *q_at(struct bt_cold *c, uint32_t i)
{
	return &c->q[(c->qhead + i) % c->qcap];
}

static void drop_oldest(struct bt_cold *c)
{
	struct gdesc *g = q_at(c, 0);

	c->used -= g->total;
	c->st.groups_evicted++;
	c->st.blocks_evicted += g->nblocks;
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
	if (!c->qlen)
		c->head = 0;
}

static int q_push(struct bt_cold *c, const struct gdesc *g)
{
	if (c->qlen == c->qcap) {
		uint32_t ncap = c->qcap * 2;
		struct gdesc *nq = malloc(ncap * sizeof(*nq));

		if (!nq)
			return -ENOMEM;
		for (uint32_t i = 0; i < c->qlen; i++)
			nq[i] = *q_at(c, i);
		free(c->q);
		c->q = nq;
		c->qcap = ncap;
		c->qhead = 0;
	}
	c->q[(c->qhead + c->qlen) % c->qcap] = *g;
	c->qlen++;
	return 0;
}

/* Room for `need` contiguous bytes, dropping the oldest groups as needed. */
static size_t ring_alloc(struct bt_cold *c, size_t need)
{
	for (;;) {
		size_t tail;

		if (!c->qlen) {
			c->head = need;
			return 0;
		}
		tail = q_at(c, 0)->off;
		if (c->head > tail || (c->head == tail && c->used == 0)) {
			/* live bytes in [tail, head): free at the end, then at the start */
			if (c->size - c->head >= need) {
				size_t off = c->head;

				c->head += need;
				return off;
			}
			if (tail >= need) {
				c->head = need;
				return 0;
			}
		} else if (tail - c->head >= need) {
			/* wrapped: live bytes in [tail, size) and [0, head) */
			size_t off = c->head;

			c->head += need;
			return off;
		}
		drop_oldest(c);
	}
}

/* Groups hold positions nearly in order (a block completed late joins a later
 * group): the span is the oldest group's lowest and the newest taken. */
static void refresh_span(struct bt_cold *c, uint64_t newest)
{
	c->st.groups = c->qlen;
	c->st.used = c->used;
	c->st.blocks = c->st.blocks_in - c->st.blocks_evicted;
	c->st.oldest_pos = c->qlen ? q_at(c, 0)->min_pos : BT_NO_POS;
	if (!c->qlen)
		c->st.newest_pos = BT_NO_POS;
	else if (newest != BT_NO_POS && (c->st.newest_pos == BT_NO_POS || newest > c->st.newest_pos))
		c->st.newest_pos = newest;
}

/* ---- the wakeup ----------------------------------------------------------- */

void bt_cold_nudge(struct bt_cold *c, uint64_t blocks_used, uint32_t nblocks)
{
	/* Relaxed: hints only. A stale pump_used or kicked costs one early
	 * wakeup or one pass late, never a lost block uncounted. */
	uint64_t seen = atomic_load_explicit(&c->pump_used, memory_order_relaxed);

	if (blocks_used - seen < nblocks / 4 || atomic_load_explicit(&c->kicked, memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->wlock);
	/* Relaxed: the mutex orders it with the wait in bt_cold_wait(). */
	atomic_store_explicit(&c->kicked, 1, memory_order_relaxed);
	pthread_cond_signal(&c->wcond);
	pthread_mutex_unlock(&c->wlock);
	atomic_fetch_add_explicit(&c->nudges, 1, memory_order_relaxed);
}

void bt_cold_wake(struct bt_cold *c)
{
	pthread_mutex_lock(&c->wlock);
	atomic_store_explicit(&c->kicked, 1, memory_order_relaxed); /* under wlock, as above */
	pthread_cond_signal(&c->wcond);
	pthread_mutex_unlock(&c->wlock);
}

int bt_cold_wait(struct bt_cold *c, uint64_t timeout_ns)
{
	struct timespec dl;
	int woken;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)(timeout_ns / 1000000000u);
	dl.tv_nsec += (long)(timeout_ns % 1000000000u);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->wlock);
	/* Relaxed under wlock: the mutex pairs this with the store in
	 * bt_cold_nudge()/bt_cold_wake(), so no wakeup is lost. */
	while (!atomic_load_explicit(&c->kicked, memory_order_relaxed))
		if (pthread_cond_timedwait(&c->wcond, &c->wlock, &dl) == ETIMEDOUT)
			break;
	woken = atomic_load_explicit(&c->kicked, memory_order_relaxed);
	atomic_store_explicit(&c->kicked, 0, memory_order_relaxed);
	pthread_mutex_unlock(&c->wlock);
	return woken;
}

/* ---- the pump ------------------------------------------------------------- */

static int compress_pend(struct bt_cold *c, size_t *clen)
{
	size_t raw = (size_t)c->npend * c->bsize;
	uint8_t *dst = c->cbuf + sizeof(struct group_hdr) + c->npend * 8u;
	size_t cap = c->cbuf_cap - (size_t)(dst - c->cbuf);

	if (c->codec == BT_CODEC_LZ4) {
		int r = LZ4_compress_fast((const char *)c->pend, (char *)dst, (int)raw, (int)cap, c->level);

		if (r <= 0)
			return -EIO;
		*clen = (size_t)r;
	} else {
		size_t r = ZSTD_compressCCtx(c->zc, dst, cap, c->pend, raw, c->level);

		if (ZSTD_isError(r))
			return -EIO;
		*clen = r;
	}
	return 0;
}

static int flush_group(struct bt_cold *c)
{
	struct group_hdr *h = (struct group_hdr *)c->cbuf;
	struct gdesc g = { 0 };
	size_t clen = 0, total;
	int r;

	if (!c->npend)
		return 0;
	r = compress_pend(c, &clen);
	if (r < 0)
		return r;
	total = (sizeof(*h) + c->npend * 8u + clen + 7) & ~(size_t)7;
	h->magic = GROUP_MAGIC;
	h->nblocks = c->npend;
	h->clen = (uint32_t)clen;
	h->total = (uint32_t)total;
	memcpy(c->cbuf + sizeof(*h), c->pend_pos, c->npend * 8u);
	g.total = (uint32_t)total;
	g.nblocks = c->npend;
	g.min_pos = g.max_pos = c->pend_pos[0];
	for (uint32_t i = 1; i < c->npend; i++) {
		if (c->pend_pos[i] < g.min_pos)
			g.min_pos = c->pend_pos[i];
		if (c->pend_pos[i] > g.max_pos)
			g.max_pos = c->pend_pos[i];
	}

	pthread_mutex_lock(&c->lock);
	g.off = ring_alloc(c, total);
	memcpy(c->ring + g.off, c->cbuf, total);
	r = q_push(c, &g);
	if (r == 0) {
		c->used += total;
		c->st.blocks_in += c->npend;
		c->st.raw_bytes_in += (uint64_t)c->npend * c->bsize;
		c->st.stored_bytes_in += total;
	}
	refresh_span(c, g.max_pos);
	pthread_mutex_unlock(&c->lock);
	c->npend = 0;
	return r;
}

static int early_has(const struct bt_cold *c, uint64_t pos)
{
	uint32_t lo = 0, hi = c->nearly;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (c->early[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nearly && c->early[lo] == pos;
}

static int early_add(struct bt_cold *c, uint64_t pos)
{
	uint32_t i;

	if (c->nearly == c->early_cap) {
		uint32_t ncap = c->early_cap ? c->early_cap * 2 : 64;
		uint64_t *n = realloc(c->early, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->early = n;
		c->early_cap = ncap;
	}
	for (i = c->nearly; i > 0 && c->early[i - 1] > pos; i--)
		c->early[i] = c->early[i - 1];
	c->early[i] = pos;
	c->nearly++;
	return 0;
}

static void early_prune(struct bt_cold *c)
{
	uint32_t k = 0;

	while (k < c->nearly && c->early[k] < c->next_pos)
		k++;
	if (!k)
		return; /* also: early is still NULL before the first early block */
	memmove(c->early, c->early + k, (c->nearly - k) * sizeof(*c->early));
	c->nearly -= k;
}

struct pump_pass {
	struct bt_cold *c;
	uint64_t max_seen, gaps;
	int taken, err;
};

static int take_block(const struct bt_block_view *v, void *ctx)
{
	struct pump_pass *p = ctx;
	struct bt_cold *c = p->c;
	uint32_t core = v->core > BT_MAX_CORES ? BT_MAX_CORES : v->core;
	int r;

	if (v->pos + 1 > p->max_seen)
		p->max_seen = v->pos + 1;
	if (early_has(c, v->pos))
		return 0;
	/* A core's chain: this block names the core's previous one; if that
	 * is not the one we took last, blocks between went unseen. */
	if (c->last_of_core[core] && v->prev_pos != BT_NO_POS && v->prev_pos > c->last_of_core[core])
		p->gaps++;
	if (v->pos > c->last_of_core[core])
		c->last_of_core[core] = v->pos;
	memcpy(c->pend + (size_t)c->npend * c->bsize, v->data, c->bsize);
	c->pend_pos[c->npend++] = v->pos;
	p->taken++;
	if (v->pos >= c->next_pos) {
		r = early_add(c, v->pos);
		if (r < 0)
			return p->err = r;
	}
	if (c->npend == c->gblocks) {
		r = flush_group(c);
		if (r < 0)
			return p->err = r;
	}
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bt_cold_pump(struct bt_cold *c, struct bt_buffer *b)
{
	struct pump_pass p = { .c = c };
	struct bt_read_stats rs;
	uint64_t t0 = thread_cpu_ns(), next, settled;
	struct bt_stats bs;
	int r;

	/* Before the read: what is used from here on, the next pass takes. */
	bt_buffer_stats(b, &bs);
	atomic_store_explicit(&c->pump_used, bs.blocks_used, memory_order_relaxed); /* hint: see bt_cold_nudge */
	r = bt_read_range(b, c->next_pos, BT_READ_COMPLETE, take_block, &p, &rs);
	if (r < 0 || p.err) {
		pthread_mutex_lock(&c->lock);
		c->st.gaps += p.gaps;
		pthread_mutex_unlock(&c->lock);
		return p.err ? p.err : r;
	}
	/* Not past a block still being written, nor past one handed out
	 * and not yet published (a preempted writer): both come later. */
	next = rs.first_busy < rs.first_unpublished ? rs.first_busy : rs.first_unpublished;
	if (next == BT_NO_POS)
		next = p.max_seen;
	if (next > c->next_pos)
		c->next_pos = next;
	early_prune(c);
	settled = c->next_pos;
	for (uint32_t i = 0; i < c->npend; i++)
		if (c->pend_pos[i] < settled)
			settled = c->pend_pos[i];

	pthread_mutex_lock(&c->lock);
	c->settled = settled;
	c->st.gaps += p.gaps;
	c->st.pumps++;
	c->st.cpu_ns += thread_cpu_ns() - t0;
	pthread_mutex_unlock(&c->lock);
	return p.taken;
}

/* ---- reading -------------------------------------------------------------- */

struct rd_block {
	uint64_t pos;
	uint32_t group, idx;
};

static int cmp_rd(const void *x, const void *y)
{
	const struct rd_block *a = x, *b = y;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int decompress(const struct bt_cold *c, const uint8_t *g, uint8_t *out)
{
	const struct group_hdr *h = (const struct group_hdr *)g;
	const uint8_t *src = g + sizeof(*h) + h->nblocks * 8u;
	size_t raw = (size_t)h->nblocks * c->bsize;

	if (c->codec == BT_CODEC_LZ4) {
		int r = LZ4_decompress_safe((const char *)src, (char *)out, (int)h->clen, (int)raw);

		return r == (int)raw ? 0 : -EIO;
	}
	size_t r = ZSTD_decompress(out, raw, src, h->clen);

	return !ZSTD_isError(r) && r == raw ? 0 : -EIO;
}

static int cold_read(struct bt_cold *c, uint64_t before, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st,
		     uint64_t *hot_from);

int bt_cold_read(struct bt_cold *c, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st,
		 uint64_t *hot_from)
{
	return cold_read(c, BT_NO_POS, cb, ctx, st, hot_from);
}

int bt_cold_read_before(struct bt_cold *c, uint64_t before, bt_block_cb cb, void *ctx, struct bt_read_stats *rs)
{
	struct bt_cold_read_stats cs;
	int r = cold_read(c, before, cb, ctx, &cs, NULL);

	if (rs) {
		rs->blocks_read += cs.blocks_read;
		rs->blocks_lost += cs.blocks_bad;
	}
	return r;
}

static int cold_read(struct bt_cold *c, uint64_t before, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st,
		     uint64_t *hot_from)
{
	struct bt_cold_read_stats local = { 0 };
	struct rd_block *blk = NULL;
	size_t *goff = NULL, bytes = 0, nblk = 0;
	uint8_t *copy = NULL, *raw = NULL;
	uint32_t ng, cached = UINT32_MAX;
	uint64_t settled;
	int ret = 0, bad_group = -1;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));

	/* Under the lock: the groups' bytes, copied out in order. */
	pthread_mutex_lock(&c->lock);
	settled = c->settled;
	if (before < settled)
		settled = before;
	ng = c->qlen;
	for (uint32_t i = 0; i < ng; i++)
		bytes += q_at(c, i)->total;
	copy = malloc(bytes ? bytes : 1);
	goff = malloc((ng ? ng : 1) * sizeof(*goff));
	if (copy && goff) {
		size_t o = 0;

		for (uint32_t i = 0; i < ng; i++) {
			const struct gdesc *g = q_at(c, i);

			memcpy(copy + o, c->ring + g->off, g->total);
			goff[i] = o;
			o += g->total;
			nblk += g->nblocks;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (hot_from)
		*hot_from = settled;
	if (!copy || !goff) {
		ret = -ENOMEM;
		goto out;
	}

	blk = malloc((nblk ? nblk : 1) * sizeof(*blk));
	raw = aligned_alloc(64, (size_t)c->gblocks * c->bsize);
	if (!blk || !raw) {
		ret = -ENOMEM;
		goto out;
	}
	nblk = 0;
	for (uint32_t i = 0; i < ng; i++) {
		const struct group_hdr *h = (const struct group_hdr *)(copy + goff[i]);
		const uint64_t *pos = (const uint64_t *)(h + 1);

		for (uint32_t k = 0; k < h->nblocks; k++) {
			if (pos[k] >= settled) {
				st->blocks_unsettled++;
				continue;
			}
			blk[nblk].pos = pos[k];
			blk[nblk].group = i;
			blk[nblk].idx = k;
			nblk++;
		}
	}
	qsort(blk, nblk, sizeof(*blk), cmp_rd);

	for (size_t i = 0; i < nblk; i++) {
		const uint8_t *g = copy + goff[blk[i].group];
		const struct bt_block_hdr *bh;
		struct bt_block_view v;

		if (blk[i].group != cached) {
			cached = blk[i].group;
			bad_group = decompress(c, g, raw) < 0;
		}
		bh = (const struct bt_block_hdr *)(raw + (size_t)blk[i].idx * c->bsize);
		if (bad_group || bh->pos != blk[i].pos) {
			st->blocks_bad++;
			continue;
		}
		v.pos = bh->pos;
		v.prev_pos = bh->prev_pos;
		v.core = bh->core;
		v.used = c->bsize;
		v.complete = 1;
		v.data = (const uint8_t *)bh;
		st->blocks_read++;
		ret = cb(&v, ctx);
		if (ret)
			break;
	}
out:
	free(blk);
	free(raw);
	free(goff);
	free(copy);
	return ret;
}

int bt_cold_resize(struct bt_cold *c, size_t size, char *err, size_t errlen)
{
	uint8_t *ring;
	size_t o = 0;

	size &= ~(size_t)7;
	if (size < group_max(c)) {
		set_err(err, errlen, "cold tier: %zu bytes hold no group (%zu needed)", size, group_max(c));
		return -EINVAL;
	}
	ring = malloc(size);
	if (!ring) {
		set_err(err, errlen, "cold tier: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&c->lock);
	while (c->used > size)
		drop_oldest(c);
	/* Repack the survivors from 0, oldest first. */
	for (uint32_t i = 0; i < c->qlen; i++) {
		struct gdesc *g = q_at(c, i);

		memcpy(ring + o, c->ring + g->off, g->total);
		g->off = o;
		o += g->total;
	}
	free(c->ring);
	c->ring = ring;
	c->size = size;
	c->head = o;
	refresh_span(c, BT_NO_POS);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void bt_cold_stats(struct bt_cold *c, struct bt_cold_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->nudges = atomic_load_explicit(&c->nudges, memory_order_relaxed);
	st->size = c->size;
	st->codec = c->codec;
	st->level = c->level;
	pthread_mutex_unlock(&c->lock);
}
