// SPDX-License-Identifier: MIT
/*
 * cold_tier.c - the compressed cold tier (see cold_tier.h).
 *
 * Storage is one byte ring of groups, each [group_hdr | block_meta[n] |
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
#include "clocks.h"
#include "errors.h"
#include "prefault.h"

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
#define GROUP_MAGIC_RAW 0x57524743u /* "CGRW": stored as is, the budget paid for no compression */
#define MAX_GROUP_BLOCKS 64u

struct group_hdr {
	uint32_t magic;
	uint32_t nblocks;
	uint32_t clen;  /* compressed bytes after the positions */
	uint32_t total; /* bytes the group takes in the ring, 8-aligned */
};

/* Each block's header, kept outside the compressed bytes: a read finds the
 * cores' chains (and the holes in them) without decompressing. */
struct block_meta {
	uint64_t pos, prev_pos;
	uint32_t core, pad;
};

struct gdesc {
	size_t off;
	uint32_t total, nblocks;
	uint64_t min_pos, max_pos;
	int raw; /* stored uncompressed (GROUP_MAGIC_RAW) */
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
	struct block_meta pend_meta[MAX_GROUP_BLOCKS];
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
	uint64_t kept_min;      /* bt_cold_kept_from's answer, valid unless kept_stale */
	int kept_stale;         /* set when settled or the groups change */
	struct bt_cold_stats st;

	/* The wakeup (bt_cold_nudge/bt_cold_wait), apart from `lock` so a nudge
	 * never waits for a reader copying groups. */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;   /* CLOCK_MONOTONIC */
	atomic_int kicked;      /* written under wlock; read outside it as a hint */
	_Atomic uint64_t pump_used; /* blocks_used when the last pass began: a hint */
	_Atomic uint64_t nudges;
	uint64_t held_ns;       /* under lock: CLOCK_MONOTONIC of the last hold-back, 0 none */
};


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

	return (sizeof(struct group_hdr) + c->gblocks * sizeof(struct block_meta) + bound_for(c, raw) + 7) &
	       ~(size_t)7;
}

struct bt_cold *bt_cold_create(const struct bt_cold_config *cfg, uint32_t block_size, char *err,
			       size_t errlen)
{
	struct bt_cold *c;

	if (cfg->codec != BT_CODEC_LZ4 && cfg->codec != BT_CODEC_ZSTD) {
		bt_errmsg(err, errlen, "cold tier: unknown codec");
		errno = EINVAL;
		return NULL;
	}
	if (cfg->group_blocks > MAX_GROUP_BLOCKS || block_size < BT_MIN_BLOCK_SIZE ||
	    block_size > BT_MAX_BLOCK_SIZE) {
		bt_errmsg(err, errlen, "cold tier: group of %u blocks (1..%u) of %u bytes", cfg->group_blocks,
			MAX_GROUP_BLOCKS, block_size);
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->codec = cfg->codec;
	c->kept_stale = 1;
	c->level = cfg->level;
	if (c->codec == BT_CODEC_LZ4 && c->level < 1)
		c->level = 1;
	c->bsize = block_size;
	c->gblocks = cfg->group_blocks ? cfg->group_blocks : 4;
	c->size = cfg->size & ~(size_t)7;
	if (c->size < group_max(c)) {
		bt_errmsg(err, errlen, "cold tier: %zu bytes hold no group (%zu needed)", cfg->size, group_max(c));
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
	c->ring = calloc(1, c->size); /* fresh pages are zero: no memset (glibc) */
	c->qcap = 64;
	c->q = malloc(c->qcap * sizeof(*c->q));
	if (c->codec == BT_CODEC_ZSTD)
		c->zc = ZSTD_createCCtx();
	if (!c->last_of_core || !c->pend || !c->cbuf || !c->ring || !c->q ||
	    (c->codec == BT_CODEC_ZSTD && !c->zc)) {
		bt_cold_destroy(c);
		goto nomem;
	}
	/* Populated now, as the hot buffer is: the pump never takes a page
	 * fault (and its zeroing) on a fresh group while recording, and
	 * memory the machine lacks fails here, not mid-run. (A memset here
	 * was a third of a default recorder's start without stacks.) */
	memset(c->pend, 0, (size_t)c->gblocks * c->bsize);
	if (bt_prefault(c->ring, c->size)) {
		bt_cold_destroy(c);
		goto nomem;
	}
	c->st.oldest_pos = c->st.newest_pos = BT_NO_POS;
	return c;
nomem:
	bt_errmsg(err, errlen, "cold tier: out of memory");
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
	if (g->raw)
		c->st.blocks_held_raw -= g->nblocks;
	c->qhead = (c->qhead + 1) % c->qcap;
	c->qlen--;
	c->kept_stale = 1;
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
	c->kept_stale = 1;
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

	if (blocks_used - seen < nblocks / BT_COLD_NUDGE_DIV || atomic_load_explicit(&c->kicked, memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->wlock);
	/* Relaxed: the mutex orders it with the wait in bt_cold_wait(). */
	atomic_store_explicit(&c->kicked, 1, memory_order_relaxed);
	pthread_cond_signal(&c->wcond);
	pthread_mutex_unlock(&c->wlock);
	atomic_fetch_add_explicit(&c->nudges, 1, memory_order_relaxed);
}

void bt_cold_nudge_from(struct bt_cold *c, uint64_t blocks_used)
{
	atomic_store_explicit(&c->pump_used, blocks_used, memory_order_relaxed); /* hint: see bt_cold_nudge */
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
	uint8_t *dst = c->cbuf + sizeof(struct group_hdr) + c->npend * sizeof(struct block_meta);
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

/* The pending blocks as one group: compressed if the pass may (zleft,
 * the blocks its budget pays for), else stored as they are, which costs one
 * copy (straight into the ring) and still keeps them past the buffer's
 * overwrite: the window stays whole, only less of it compressed. */
static int flush_group(struct bt_cold *c, uint32_t *zleft, struct bt_cold_pass *out)
{
	struct group_hdr *h = (struct group_hdr *)c->cbuf;
	size_t meta = c->npend * sizeof(struct block_meta);
	struct gdesc g = { 0 };
	size_t clen = 0, total;
	int r, raw = *zleft < c->npend;

	if (!c->npend)
		return 0;
	if (raw) {
		clen = (size_t)c->npend * c->bsize;
		out->stored_raw += c->npend;
	} else {
		uint64_t t0 = bt_thread_cpu_ns();

		r = compress_pend(c, &clen);
		if (r < 0)
			return r;
		*zleft -= c->npend;
		out->compressed += c->npend;
		out->codec_ns += bt_thread_cpu_ns() - t0;
	}
	total = (sizeof(*h) + meta + clen + 7) & ~(size_t)7;
	h->magic = raw ? GROUP_MAGIC_RAW : GROUP_MAGIC;
	h->nblocks = c->npend;
	h->clen = (uint32_t)clen;
	h->total = (uint32_t)total;
	memcpy(c->cbuf + sizeof(*h), c->pend_meta, meta);
	g.total = (uint32_t)total;
	g.nblocks = c->npend;
	g.raw = raw;
	g.min_pos = g.max_pos = c->pend_meta[0].pos;
	for (uint32_t i = 1; i < c->npend; i++) {
		if (c->pend_meta[i].pos < g.min_pos)
			g.min_pos = c->pend_meta[i].pos;
		if (c->pend_meta[i].pos > g.max_pos)
			g.max_pos = c->pend_meta[i].pos;
	}

	pthread_mutex_lock(&c->lock);
	g.off = ring_alloc(c, total);
	if (raw) { /* header and meta from cbuf, the blocks from pend: one copy */
		memcpy(c->ring + g.off, c->cbuf, sizeof(*h) + meta);
		memcpy(c->ring + g.off + sizeof(*h) + meta, c->pend, clen);
	} else {
		memcpy(c->ring + g.off, c->cbuf, total);
	}
	r = q_push(c, &g);
	if (r == 0) {
		c->used += total;
		c->st.blocks_in += c->npend;
		c->st.raw_bytes_in += (uint64_t)c->npend * c->bsize;
		c->st.stored_bytes_in += total;
		c->st.blocks_raw += raw ? c->npend : 0;
		c->st.blocks_held_raw += raw ? c->npend : 0;
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
	uint64_t before;     /* positions from here on are left in the buffer */
	uint32_t zleft;      /* blocks the pass may still compress */
	struct bt_cold_pass out;
};

/* Where the next block taken goes: the group being filled. */
static uint8_t *pend_slot(const struct bt_cold *c)
{
	return c->pend + (size_t)c->npend * c->bsize;
}

static uint8_t *pend_dst(void *ctx)
{
	return pend_slot(((struct pump_pass *)ctx)->c);
}

static int take_block(const struct bt_block_view *v, void *ctx)
{
	struct pump_pass *p = ctx;
	struct bt_cold *c = p->c;
	uint32_t core = v->core > BT_MAX_CORES ? BT_MAX_CORES : v->core;
	int r;

	if (early_has(c, v->pos)) {
		if (v->pos + 1 > p->max_seen)
			p->max_seen = v->pos + 1;
		return 0;
	}
	/* 1 stops the read: this block and the newer ones stay in the buffer
	 * only, for a later pass (no copy of them in both tiers). */
	if (v->pos >= p->before)
		return 1;
	if (v->pos + 1 > p->max_seen)
		p->max_seen = v->pos + 1;
	/* A core's chain: this block names the core's previous one; if that
	 * is not the one we took last, blocks between went unseen. */
	if (c->last_of_core[core] && v->prev_pos != BT_NO_POS && v->prev_pos > c->last_of_core[core])
		p->gaps++;
	if (v->pos > c->last_of_core[core])
		c->last_of_core[core] = v->pos;
	if (v->data != pend_slot(c)) /* bt_read_follow copied it there already */
		memcpy(pend_slot(c), v->data, c->bsize);
	c->pend_meta[c->npend++] = (struct block_meta){ .pos = v->pos, .prev_pos = v->prev_pos, .core = v->core };
	p->taken++;
	if (v->pos >= c->next_pos) {
		r = early_add(c, v->pos);
		if (r < 0)
			return p->err = r;
	}
	if (c->npend == c->gblocks) {
		r = flush_group(c, &p->zleft, &p->out);
		if (r < 0)
			return p->err = r;
	}
	return 0;
}

int bt_cold_pump(struct bt_cold *c, struct bt_buffer *b)
{
	return bt_cold_pump_upto(c, b, BT_NO_POS, UINT32_MAX, NULL);
}

int bt_cold_pump_upto(struct bt_cold *c, struct bt_buffer *b, uint64_t before, uint32_t max_compressed,
		      struct bt_cold_pass *out)
{
	struct pump_pass p = { .c = c, .before = before, .zleft = max_compressed };
	struct bt_read_stats rs;
	uint64_t t0 = bt_thread_cpu_ns(), next, settled;
	struct bt_stats bs;
	int r;

	/* Before the read: what is used from here on, the next pass takes. */
	bt_buffer_stats(b, &bs);
	atomic_store_explicit(&c->pump_used, bs.blocks_used, memory_order_relaxed); /* hint: see bt_cold_nudge */
	r = bt_read_follow(b, c->next_pos, before, pend_dst, take_block, &p, &rs);
	if (r < 0 || p.err) {
		pthread_mutex_lock(&c->lock);
		c->st.gaps += p.gaps;
		pthread_mutex_unlock(&c->lock);
		return p.err ? p.err : r;
	}
	/* Not past a block still being written, nor past one handed out
	 * and not yet published (a preempted writer): both come later. */
	next = rs.first_busy < rs.first_unpublished ? rs.first_busy : rs.first_unpublished;
	if (next == BT_NO_POS || (r > 0 && p.max_seen < next))
		next = p.max_seen; /* stopped at `before` (r 1): the rest is for a later pass */
	if (out)
		*out = p.out;
	if (next > c->next_pos)
		c->next_pos = next;
	early_prune(c);
	settled = c->next_pos;
	for (uint32_t i = 0; i < c->npend; i++)
		if (c->pend_meta[i].pos < settled)
			settled = c->pend_meta[i].pos;

	pthread_mutex_lock(&c->lock);
	c->settled = settled;
	c->kept_stale = 1;
	c->st.gaps += p.gaps;
	c->st.pumps++;
	c->st.cpu_ns += bt_thread_cpu_ns() - t0;
	pthread_mutex_unlock(&c->lock);
	return p.taken;
}

/* ---- reading -------------------------------------------------------------- */

struct rd_block {
	uint64_t pos, prev_pos;
	uint32_t core, group, idx;
};

/* The tier's groups copied at one moment, and which of their blocks a
 * read delivers (see bt_cold_snap_take). */
struct bt_cold_snap {
	enum bt_codec codec;
	uint32_t bsize, gblocks;
	uint8_t *copy;        /* the groups' bytes, oldest first */
	size_t *goff;         /* [ng] each group's offset in copy */
	struct rd_block *blk; /* delivered blocks, oldest position first */
	size_t nblk;
	struct bt_cold_snap_info info;
};

static int cmp_rd(const void *x, const void *y)
{
	const struct rd_block *a = x, *b = y;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int decompress(const struct bt_cold_snap *s, const uint8_t *g, uint8_t *out)
{
	const struct group_hdr *h = (const struct group_hdr *)g;
	const uint8_t *src = g + sizeof(*h) + h->nblocks * sizeof(struct block_meta);
	size_t raw = (size_t)h->nblocks * s->bsize;

	if (h->magic == GROUP_MAGIC_RAW) {
		if (h->clen != raw)
			return -EIO;
		memcpy(out, src, raw);
		return 0;
	}

	if (s->codec == BT_CODEC_LZ4) {
		int r = LZ4_decompress_safe((const char *)src, (char *)out, (int)h->clen, (int)raw);

		return r == (int)raw ? 0 : -EIO;
	}
	size_t r = ZSTD_decompress(out, raw, src, h->clen);

	return !ZSTD_isError(r) && r == raw ? 0 : -EIO;
}

/* Per core, the position before which its blocks are left out: the block
 * after the newest break in its chain (a block the pump never took), or
 * everything when the chain does not reach the block after the tier
 * (join[core]: that block's prev_pos). So the tier adds to each core's
 * history only what joins it without a hole; what it leaves out is the
 * oldest end, as if overwritten, and counted. Blocks sorted by position. */
static void cut_holes(struct bt_cold_snap *s, const uint64_t *join, uint32_t njoin)
{
	uint64_t *last = calloc(BT_MAX_CORES, sizeof(*last)), *from = calloc(BT_MAX_CORES, sizeof(*from));
	size_t k = 0;

	if (!last || !from) { /* no memory to check: deliver nothing rather than a hole */
		s->info.blocks_cut += s->nblk;
		s->nblk = 0;
		goto out;
	}
	for (size_t i = 0; i < s->nblk; i++) {
		const struct rd_block *b = &s->blk[i];

		if (b->core >= BT_MAX_CORES)
			continue; /* the resizer's internal blocks: no chain */
		if (last[b->core] && b->prev_pos != BT_NO_POS && b->prev_pos > last[b->core])
			from[b->core] = b->pos;
		last[b->core] = b->pos;
	}
	for (uint32_t core = 0; join && core < njoin && core < BT_MAX_CORES; core++)
		if (last[core] && join[core] != BT_NO_POS && join[core] > last[core])
			from[core] = UINT64_MAX;
	for (size_t i = 0; i < s->nblk; i++) {
		const struct rd_block *b = &s->blk[i];

		if (b->core < BT_MAX_CORES && b->pos < from[b->core]) {
			s->info.blocks_cut++;
			continue;
		}
		s->blk[k++] = *b;
	}
	s->nblk = k;
out:
	free(last);
	free(from);
}

struct bt_cold_snap *bt_cold_snap_take(struct bt_cold *c, uint64_t before, const uint64_t *join, uint32_t njoin)
{
	struct bt_cold_snap *s = calloc(1, sizeof(*s));
	size_t bytes = 0, nblk = 0;
	uint64_t settled;
	uint32_t ng;

	if (!s)
		return NULL;
	s->codec = c->codec;
	s->bsize = c->bsize;
	s->gblocks = c->gblocks;
	/* Under the lock: the groups' bytes, copied out in order. */
	pthread_mutex_lock(&c->lock);
	settled = c->settled;
	if (before < settled)
		settled = before;
	ng = c->qlen;
	for (uint32_t i = 0; i < ng; i++)
		bytes += q_at(c, i)->total;
	s->copy = malloc(bytes ? bytes : 1);
	s->goff = malloc((ng ? ng : 1) * sizeof(*s->goff));
	if (s->copy && s->goff) {
		size_t o = 0;

		for (uint32_t i = 0; i < ng; i++) {
			const struct gdesc *g = q_at(c, i);

			memcpy(s->copy + o, c->ring + g->off, g->total);
			s->goff[i] = o;
			o += g->total;
			nblk += g->nblocks;
		}
	}
	pthread_mutex_unlock(&c->lock);
	s->info.hot_from = settled;
	s->blk = s->copy && s->goff ? malloc((nblk ? nblk : 1) * sizeof(*s->blk)) : NULL;
	if (!s->blk) {
		bt_cold_snap_free(s);
		return NULL;
	}
	for (uint32_t i = 0; i < ng; i++) {
		const struct group_hdr *h = (const struct group_hdr *)(s->copy + s->goff[i]);
		const struct block_meta *m = (const struct block_meta *)(h + 1);

		for (uint32_t k = 0; k < h->nblocks; k++) {
			if (m[k].pos >= settled) {
				s->info.blocks_unsettled++;
				continue;
			}
			s->blk[s->nblk++] = (struct rd_block){ .pos = m[k].pos, .prev_pos = m[k].prev_pos,
							       .core = m[k].core, .group = i, .idx = k };
		}
	}
	qsort(s->blk, s->nblk, sizeof(*s->blk), cmp_rd);
	cut_holes(s, join, njoin);
	for (size_t i = 0; i < s->nblk; i++)
		if (((const struct group_hdr *)(s->copy + s->goff[s->blk[i].group]))->magic == GROUP_MAGIC_RAW)
			s->info.blocks_raw++;
	s->info.blocks = s->nblk;
	return s;
}

const struct bt_cold_snap_info *bt_cold_snap_info(const struct bt_cold_snap *s)
{
	return &s->info;
}

int bt_cold_snap_read(struct bt_cold_snap *s, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st)
{
	struct bt_cold_read_stats local = { 0 };
	uint32_t cached = UINT32_MAX;
	uint8_t *raw;
	int ret = 0, bad_group = -1;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	st->blocks_unsettled = s->info.blocks_unsettled;
	st->blocks_cut = s->info.blocks_cut;
	raw = aligned_alloc(64, (size_t)s->gblocks * s->bsize);
	if (!raw)
		return -ENOMEM;
	for (size_t i = 0; i < s->nblk; i++) {
		const uint8_t *g = s->copy + s->goff[s->blk[i].group];
		const struct bt_block_hdr *bh;
		struct bt_block_view v;

		if (s->blk[i].group != cached) {
			cached = s->blk[i].group;
			bad_group = decompress(s, g, raw) < 0;
		}
		bh = (const struct bt_block_hdr *)(raw + (size_t)s->blk[i].idx * s->bsize);
		if (bad_group || bh->pos != s->blk[i].pos) {
			st->blocks_bad++;
			continue;
		}
		v.pos = bh->pos;
		v.prev_pos = bh->prev_pos;
		v.core = bh->core;
		v.used = s->bsize;
		v.complete = 1;
		v.data = (const uint8_t *)bh;
		st->blocks_read++;
		ret = cb(&v, ctx);
		if (ret)
			break;
	}
	free(raw);
	return ret;
}

void bt_cold_snap_free(struct bt_cold_snap *s)
{
	if (!s)
		return;
	free(s->blk);
	free(s->goff);
	free(s->copy);
	free(s);
}

int bt_cold_read(struct bt_cold *c, bt_block_cb cb, void *ctx, struct bt_cold_read_stats *st,
		 uint64_t *hot_from)
{
	struct bt_cold_snap *s = bt_cold_snap_take(c, BT_NO_POS, NULL, 0);
	int r;

	if (!s)
		return -ENOMEM;
	if (hot_from)
		*hot_from = s->info.hot_from;
	r = bt_cold_snap_read(s, cb, ctx, st);
	bt_cold_snap_free(s);
	return r;
}

uint64_t bt_cold_kept_from(struct bt_cold *c)
{
	uint64_t v;

	pthread_mutex_lock(&c->lock);
	/* Asked after every drain pass, thousands a second in a storm; the
	 * groups change at the compressor's pace. */
	if (c->kept_stale) {
		v = c->settled;
		/* every group: one with an early block may hold a lower
		 * position than the group before it */
		for (uint32_t i = 0; i < c->qlen; i++)
			if (q_at(c, i)->min_pos < v)
				v = q_at(c, i)->min_pos;
		c->kept_min = v;
		c->kept_stale = 0;
	}
	v = c->kept_min;
	pthread_mutex_unlock(&c->lock);
	return v;
}

size_t bt_cold_min_size(const struct bt_cold *c)
{
	return group_max(c);
}

int bt_cold_resize(struct bt_cold *c, size_t size, char *err, size_t errlen)
{
	uint8_t *ring;
	size_t o = 0;

	size &= ~(size_t)7;
	if (size < group_max(c)) {
		bt_errmsg(err, errlen, "cold tier: %zu bytes hold no group (%zu needed)", size, group_max(c));
		return -EINVAL;
	}
	ring = calloc(1, size);
	if (!ring || bt_prefault(ring, size)) { /* as at create; before the lock */
		free(ring);
		bt_errmsg(err, errlen, "cold tier: out of memory");
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

uint64_t bt_cold_only_blocks(const struct bt_cold_stats *cs, const struct bt_stats *bs)
{
	/* Positions count from 1, one per block used: the buffer holds the
	 * newest nblocks of them. The tier holds its span nearly whole. */
	uint64_t hot_oldest = bs->blocks_used > bs->nblocks ? bs->blocks_used - bs->nblocks + 1 : 1;
	uint64_t in_both;

	if (!cs->blocks || cs->newest_pos == BT_NO_POS || cs->newest_pos < hot_oldest)
		return cs->blocks;
	in_both = cs->newest_pos - hot_oldest + 1;
	return cs->blocks > in_both ? cs->blocks - in_both : 0;
}

uint64_t bt_cold_retained_span(uint64_t kept_from, const struct bt_stats *bs)
{
	/* 0: the pump has not passed yet, the tier holds nothing */
	if (!kept_from || kept_from > bs->blocks_used || bs->blocks_used - kept_from + 1 <= bs->nblocks)
		return bs->nblocks;
	return bs->blocks_used - kept_from + 1;
}

void bt_cold_budget_set(struct bt_cold *c, uint32_t ppm)
{
	pthread_mutex_lock(&c->lock);
	c->st.budget_ppm = ppm;
	pthread_mutex_unlock(&c->lock);
}

void bt_cold_budget_held_back(struct bt_cold *c)
{
	uint64_t now = bt_now_ns();

	pthread_mutex_lock(&c->lock);
	c->st.held_back++;
	c->held_ns = now;
	pthread_mutex_unlock(&c->lock);
}

void bt_cold_budget_copied(struct bt_cold *c, uint64_t cpu_ns)
{
	pthread_mutex_lock(&c->lock);
	c->st.copy_ns += cpu_ns;
	pthread_mutex_unlock(&c->lock);
}

void bt_cold_stats(struct bt_cold *c, struct bt_cold_stats *st)
{
	uint64_t now = bt_now_ns();

	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->held_back_ago_ns = c->held_ns ? now - c->held_ns : UINT64_MAX;
	st->nudges = atomic_load_explicit(&c->nudges, memory_order_relaxed);
	st->size = c->size;
	st->codec = c->codec;
	st->level = c->level;
	pthread_mutex_unlock(&c->lock);
}
