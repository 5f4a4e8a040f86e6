/* SPDX-License-Identifier: MIT */
/*
 * bench/baselines.h - baseline trace buffers for the replay benchmark
 * (bench/replay.c), header-only so every bench program can include it.
 *
 * Three designs the BTrace paper (ASPLOS'25, section 5, Table 1) compares
 * against, each sized from the same total byte budget:
 *
 *   bl_pcow   per-core ring that overwrites (ftrace-like). One byte ring per
 *             core of total/C bytes; a writer reserves with one fetch-and-add
 *             on the core's head and never waits. Userspace cannot disable
 *             preemption, so a writer preempted for a whole lap of its core's
 *             ring finds its slot reused: its late copy tears a newer entry.
 *             Readers detect that (position-tagged headers, payload checks)
 *             and drop what is torn.
 *
 *   bl_pcdrop per-core ring of sub-buffers that drops the newest (LTTng-like,
 *             overwrite/flight-recorder mode). nsub sub-buffers per core,
 *             reserve by compare-and-swap on the core's head, one commit
 *             counter per sub-buffer. Entering a sub-buffer again needs its
 *             previous lap fully committed; while a preempted writer still
 *             holds it, every new event of that core is dropped (counted).
 *             Whole committed sub-buffers are overwritten oldest first.
 *
 *   bl_global one global byte ring of the whole budget (BBQ-like): every
 *             writer of every core does one fetch-and-add on the shared head.
 *             Before writing into a 4 KiB granule of lap L the writer waits
 *             until lap L-1 of that granule is fully committed (per-granule
 *             commit counters), so nothing is ever torn or dropped: it blocks
 *             instead, which is BBQ's availability trade-off.
 *
 * No locks on any write path. Entry layout in every ring (8-byte aligned):
 *
 *   +----------------------+--------------------------+
 *   | u64 tag              | payload, padded to 8      |
 *   +----------------------+--------------------------+
 *   tag = (pos/8) << 26 | kind << 24 | size/8
 *
 * where pos is the absolute (never wrapping) byte position the entry was
 * reserved at and size the whole entry, header included. The tag is stored
 * last with release order: it is the per-entry commit flag. A reader accepts
 * an entry only if its tag names exactly the position it is read at, so
 * stale tags from earlier laps and late tags of lapped writers are rejected
 * and the reader resynchronises 8 bytes at a time.
 *
 * The readers are meant for a quiescent buffer (after the writers stopped),
 * which is how the replay benchmark reads every tracer. They hand out the
 * payload region (size - 8 bytes, i.e. the payload rounded up to 8); the
 * payload itself must carry its exact length and a check value.
 */
#ifndef BENCH_BASELINES_H
#define BENCH_BASELINES_H

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BL_HDR 8u
#define BL_KIND_DATA 1u
#define BL_KIND_PAD 2u
#define BL_MAX_ENTRY 4096u     /* largest entry (header included) any ring takes */
#define BL_GRANULE_SHIFT 12u   /* bl_global commit granule: 4 KiB */
#define BL_CACHELINE 64

static inline void bl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline uint32_t bl_entry_size(uint32_t len)
{
	return (len + BL_HDR + 7u) & ~7u;
}

static inline uint64_t bl_tag(uint64_t pos, uint64_t size, uint32_t kind)
{
	return (pos >> 3) << 26 | (uint64_t)kind << 24 | (size >> 3);
}
static inline uint64_t bl_tag_pos(uint64_t t) { return (t >> 26) << 3; }
static inline uint32_t bl_tag_kind(uint64_t t) { return (uint32_t)(t >> 24) & 3u; }
static inline uint64_t bl_tag_size(uint64_t t) { return (t & 0xffffffu) << 3; }

/* What a reader hands out: one payload region (len = entry size - 8). core is
 * the ring's core, or UINT32_MAX for the global ring (the payload says). */
typedef int (*bl_entry_cb)(void *ctx, uint32_t core, const void *payload, uint32_t len);

struct bl_read_stats {
	uint64_t entries;      /* delivered to the callback */
	uint64_t pads;         /* padding entries skipped */
	uint64_t resync_bytes; /* bytes skipped because no valid tag was there (torn/stale) */
};

static inline void *bl_alloc_zero(size_t bytes)
{
	void *p = NULL;
	size_t rounded = (bytes + 4095) & ~(size_t)4095;

	if (posix_memalign(&p, 4096, rounded ? rounded : 4096))
		return NULL;
	memset(p, 0, rounded); /* prefault: writes never page-fault */
	return p;
}

/* ---- byte ring: the building block of bl_pcow and bl_global --------------- */

struct bl_bring {
	_Alignas(BL_CACHELINE) _Atomic uint64_t head; /* next free absolute byte position */
	_Alignas(BL_CACHELINE) uint8_t *data;
	uint64_t size;           /* bytes, multiple of 8 (of the granule if blocking) */
	_Atomic uint64_t *gc;    /* blocking: committed bytes per granule, all laps summed */
	int blocking;
	_Atomic uint64_t waits;  /* blocking: writes that found their granule busy */
};

static inline int bl_bring_init(struct bl_bring *r, uint64_t size, int blocking)
{
	memset(r, 0, sizeof(*r));
	if (blocking)
		size &= ~((1ull << BL_GRANULE_SHIFT) - 1);
	size &= ~7ull;
	if (size < 2 * BL_MAX_ENTRY)
		return -EINVAL;
	r->size = size;
	r->blocking = blocking;
	r->data = bl_alloc_zero(size);
	if (!r->data)
		return -ENOMEM;
	if (blocking) {
		r->gc = bl_alloc_zero((size >> BL_GRANULE_SHIFT) * sizeof(*r->gc));
		if (!r->gc) {
			free(r->data);
			r->data = NULL;
			return -ENOMEM;
		}
	}
	atomic_init(&r->head, 0);
	return 0;
}

static inline void bl_bring_fini(struct bl_bring *r)
{
	free(r->data);
	free((void *)r->gc);
	r->data = NULL;
	r->gc = NULL;
}

/* Copy len bytes to absolute position pos, wrapping at the ring end. */
static inline void bl_copy_in(uint8_t *data, uint64_t size, uint64_t pos, const void *src, uint32_t len)
{
	uint64_t off = pos % size;
	uint64_t first = size - off;

	if (first >= len) {
		memcpy(data + off, src, len);
	} else {
		memcpy(data + off, src, first);
		memcpy(data, (const uint8_t *)src + first, len - first);
	}
}

static inline void bl_copy_out(const uint8_t *data, uint64_t size, uint64_t pos, void *dst, uint32_t len)
{
	uint64_t off = pos % size;
	uint64_t first = size - off;

	if (first >= len) {
		memcpy(dst, data + off, len);
	} else {
		memcpy(dst, data + off, first);
		memcpy((uint8_t *)dst + first, data, len - first);
	}
}

/* Blocking mode: wait until the previous lap of every granule that
 * [pos, pos+sz) touches is fully committed. The first writer of lap L to pass
 * can only have seen bytes of laps < L (lap-L bytes are committed after the
 * wait), so gc >= L * granule means lap L-1 is complete. */
static inline void bl_bring_wait(struct bl_bring *r, uint64_t pos, uint64_t sz)
{
	const uint64_t gsz = 1ull << BL_GRANULE_SHIFT;
	uint64_t a = pos, end = pos + sz;
	int waited = 0;

	while (a < end) {
		uint64_t lap = a / r->size, off = a % r->size;
		uint64_t next = a - (off & (gsz - 1)) + gsz;
		_Atomic uint64_t *gc = &r->gc[off >> BL_GRANULE_SHIFT];
		uint64_t need = lap * gsz;

		/* Acquire: the previous lap's payloads and tags are complete before
		 * we overwrite them; pairs with the release in bl_bring_commit(). */
		for (unsigned i = 0; atomic_load_explicit(gc, memory_order_acquire) < need; i++) {
			waited = 1;
			if (i < 128)
				bl_cpu_relax();
			else
				sched_yield();
		}
		a = next < end ? next : end;
	}
	if (waited)
		atomic_fetch_add_explicit(&r->waits, 1, memory_order_relaxed);
}

static inline void bl_bring_commit(struct bl_bring *r, uint64_t pos, uint64_t sz)
{
	const uint64_t gsz = 1ull << BL_GRANULE_SHIFT;
	uint64_t a = pos, end = pos + sz;

	while (a < end) {
		uint64_t off = a % r->size;
		uint64_t next = a - (off & (gsz - 1)) + gsz;
		uint64_t piece_end = next < end ? next : end;

		/* Release: our bytes before the count; pairs with the acquire in
		 * bl_bring_wait(). */
		atomic_fetch_add_explicit(&r->gc[off >> BL_GRANULE_SHIFT], piece_end - a,
					  memory_order_release);
		a = piece_end;
	}
}

static inline int bl_bring_write(struct bl_bring *r, const void *src, uint32_t len)
{
	uint32_t sz = bl_entry_size(len);
	uint64_t pos;

	if (sz > BL_MAX_ENTRY)
		return -EMSGSIZE;
	/* Relaxed: the reservation orders nothing; the tag store publishes. */
	pos = atomic_fetch_add_explicit(&r->head, sz, memory_order_relaxed);
	if (r->blocking)
		bl_bring_wait(r, pos, sz);
	bl_copy_in(r->data, r->size, pos + BL_HDR, src, len);
	/* Release: payload before tag (the commit flag); pairs with the acquire
	 * load in bl_bring_read(). Tags never straddle the end (8 | size). */
	atomic_store_explicit((_Atomic uint64_t *)(void *)(r->data + pos % r->size),
			      bl_tag(pos, sz, BL_KIND_DATA), memory_order_release);
	if (r->blocking)
		bl_bring_commit(r, pos, sz);
	return 0;
}

/* Walk what is retained: [head - size, head), resynchronising on bad tags. */
static inline int bl_bring_read(struct bl_bring *r, uint32_t core, bl_entry_cb cb, void *ctx,
				struct bl_read_stats *st)
{
	uint8_t tmp[BL_MAX_ENTRY];
	uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t q = h > r->size ? h - r->size : 0;

	while (q + BL_HDR <= h) {
		/* Acquire: pairs with the release tag store in bl_bring_write(). */
		uint64_t t = atomic_load_explicit((_Atomic uint64_t *)(void *)(r->data + q % r->size),
						  memory_order_acquire);
		uint64_t sz = bl_tag_size(t);

		if (bl_tag_pos(t) == q && sz >= BL_HDR && sz <= BL_MAX_ENTRY && q + sz <= h &&
		    (bl_tag_kind(t) == BL_KIND_DATA || bl_tag_kind(t) == BL_KIND_PAD)) {
			if (bl_tag_kind(t) == BL_KIND_DATA) {
				int rc;

				bl_copy_out(r->data, r->size, q + BL_HDR, tmp, (uint32_t)(sz - BL_HDR));
				st->entries++;
				rc = cb(ctx, core, tmp, (uint32_t)(sz - BL_HDR));
				if (rc)
					return rc;
			} else {
				st->pads++;
			}
			q += sz;
		} else {
			st->resync_bytes += 8;
			q += 8;
		}
	}
	return 0;
}

/* ---- bl_pcow: per-core rings that overwrite (ftrace-like) ------------------- */

struct bl_pcow {
	uint32_t ncores;
	uint64_t core_bytes;
	struct bl_bring *ring; /* [ncores], each head on its own cache line */
};

static inline struct bl_pcow *bl_pcow_create(uint64_t total, uint32_t ncores)
{
	struct bl_pcow *t = calloc(1, sizeof(*t));

	if (!t || !ncores)
		goto fail;
	t->ncores = ncores;
	t->core_bytes = (total / ncores) & ~7ull;
	if (posix_memalign((void **)&t->ring, BL_CACHELINE, ncores * sizeof(*t->ring)))
		goto fail;
	for (uint32_t c = 0; c < ncores; c++) {
		if (bl_bring_init(&t->ring[c], t->core_bytes, 0)) {
			while (c--)
				bl_bring_fini(&t->ring[c]);
			free(t->ring);
			goto fail;
		}
	}
	return t;
fail:
	free(t);
	errno = ENOMEM;
	return NULL;
}

static inline void bl_pcow_destroy(struct bl_pcow *t)
{
	if (!t)
		return;
	for (uint32_t c = 0; c < t->ncores; c++)
		bl_bring_fini(&t->ring[c]);
	free(t->ring);
	free(t);
}

static inline int bl_pcow_write(struct bl_pcow *t, uint32_t core, const void *data, uint32_t len)
{
	if (core >= t->ncores)
		return -EINVAL;
	return bl_bring_write(&t->ring[core], data, len);
}

static inline int bl_pcow_read(struct bl_pcow *t, bl_entry_cb cb, void *ctx, struct bl_read_stats *st)
{
	for (uint32_t c = 0; c < t->ncores; c++) {
		int rc = bl_bring_read(&t->ring[c], c, cb, ctx, st);

		if (rc)
			return rc;
	}
	return 0;
}

/* ---- bl_global: one global ring, FAA on one shared head (BBQ-like) --------- */

struct bl_global {
	struct bl_bring ring;
};

static inline struct bl_global *bl_global_create(uint64_t total)
{
	struct bl_global *g;

	if (posix_memalign((void **)&g, BL_CACHELINE, sizeof(*g))) {
		errno = ENOMEM;
		return NULL;
	}
	if (bl_bring_init(&g->ring, total, 1)) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	return g;
}

static inline void bl_global_destroy(struct bl_global *g)
{
	if (!g)
		return;
	bl_bring_fini(&g->ring);
	free(g);
}

static inline int bl_global_write(struct bl_global *g, uint32_t core, const void *data, uint32_t len)
{
	(void)core;
	return bl_bring_write(&g->ring, data, len);
}

static inline int bl_global_read(struct bl_global *g, bl_entry_cb cb, void *ctx, struct bl_read_stats *st)
{
	return bl_bring_read(&g->ring, UINT32_MAX, cb, ctx, st);
}

/* ---- bl_pcdrop: per-core sub-buffered rings that drop the newest (LTTng-like) */

struct bl_sring {
	_Alignas(BL_CACHELINE) _Atomic uint64_t head; /* absolute byte position */
	_Alignas(BL_CACHELINE) uint8_t *data;
	uint64_t sbsize;          /* sub-buffer bytes, multiple of 8 */
	uint32_t nsub;
	_Atomic uint64_t *cc;     /* [nsub] committed bytes, all laps summed */
	_Alignas(BL_CACHELINE) _Atomic uint64_t dropped; /* events dropped (newest) */
};

struct bl_pcdrop {
	uint32_t ncores, nsub;
	uint64_t core_bytes;
	struct bl_sring *ring; /* [ncores] */
};

static inline int bl_sring_init(struct bl_sring *r, uint64_t bytes, uint32_t nsub)
{
	memset(r, 0, sizeof(*r));
	r->nsub = nsub;
	r->sbsize = (bytes / nsub) & ~7ull;
	if (r->sbsize < 2 * BL_MAX_ENTRY)
		return -EINVAL;
	r->data = bl_alloc_zero(r->sbsize * nsub);
	r->cc = bl_alloc_zero(nsub * sizeof(*r->cc));
	if (!r->data || !r->cc) {
		free(r->data);
		free((void *)r->cc);
		return -ENOMEM;
	}
	return 0;
}

static inline struct bl_pcdrop *bl_pcdrop_create(uint64_t total, uint32_t ncores, uint32_t nsub)
{
	struct bl_pcdrop *t = calloc(1, sizeof(*t));

	if (!t || !ncores || nsub < 2)
		goto fail;
	t->ncores = ncores;
	t->nsub = nsub;
	if (posix_memalign((void **)&t->ring, BL_CACHELINE, ncores * sizeof(*t->ring)))
		goto fail;
	for (uint32_t c = 0; c < ncores; c++) {
		if (bl_sring_init(&t->ring[c], total / ncores, nsub)) {
			while (c--) {
				free(t->ring[c].data);
				free((void *)t->ring[c].cc);
			}
			free(t->ring);
			goto fail;
		}
	}
	t->core_bytes = t->ring[0].sbsize * nsub;
	return t;
fail:
	free(t);
	errno = ENOMEM;
	return NULL;
}

static inline void bl_pcdrop_destroy(struct bl_pcdrop *t)
{
	if (!t)
		return;
	for (uint32_t c = 0; c < t->ncores; c++) {
		free(t->ring[c].data);
		free((void *)t->ring[c].cc);
	}
	free(t->ring);
	free(t);
}

/* -EAGAIN: dropped because the sub-buffer to enter still has a writer of its
 * previous lap in it (counted in ->dropped). */
static inline int bl_sring_write(struct bl_sring *r, const void *src, uint32_t len)
{
	const uint64_t sb = r->sbsize;
	uint32_t sz = bl_entry_size(len);
	uint64_t o, start, pad;

	if (sz > BL_MAX_ENTRY)
		return -EMSGSIZE;
	o = atomic_load_explicit(&r->head, memory_order_relaxed);
	for (;;) {
		uint64_t off = o % sb;
		int entering;

		if (off + sz <= sb) {
			pad = 0;
			start = o;
			entering = off == 0;
		} else {
			pad = sb - off;
			start = o + pad;
			entering = 1;
		}
		if (entering) {
			uint64_t idx = start / sb;

			/* Acquire: pairs with the release commits below; the
			 * previous lap's bytes are all written before reuse. */
			if (atomic_load_explicit(&r->cc[idx % r->nsub], memory_order_acquire) <
			    (idx / r->nsub) * sb) {
				atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
				return -EAGAIN;
			}
		}
		if (atomic_compare_exchange_weak_explicit(&r->head, &o, start + sz, memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	if (pad) {
		/* Release: pairs with the acquire tag load in bl_sring_read(). */
		atomic_store_explicit((_Atomic uint64_t *)(void *)(r->data + o % (sb * r->nsub)),
				      bl_tag(o, pad, BL_KIND_PAD), memory_order_release);
		/* Release: pairs with the acquire entering check above. */
		atomic_fetch_add_explicit(&r->cc[(o / sb) % r->nsub], pad, memory_order_release);
	}
	memcpy(r->data + start % (sb * r->nsub) + BL_HDR, src, len);
	/* Release: payload before tag; pairs with the acquire in bl_sring_read(). */
	atomic_store_explicit((_Atomic uint64_t *)(void *)(r->data + start % (sb * r->nsub)),
			      bl_tag(start, sz, BL_KIND_DATA), memory_order_release);
	/* Release: pairs with the acquire entering check above. */
	atomic_fetch_add_explicit(&r->cc[(start / sb) % r->nsub], sz, memory_order_release);
	return 0;
}

static inline int bl_pcdrop_write(struct bl_pcdrop *t, uint32_t core, const void *data, uint32_t len)
{
	if (core >= t->ncores)
		return -EINVAL;
	return bl_sring_write(&t->ring[core], data, len);
}

/* Read the (up to) nsub newest sub-buffers of one core. */
static inline int bl_sring_read(struct bl_sring *r, uint32_t core, bl_entry_cb cb, void *ctx,
				struct bl_read_stats *st)
{
	uint8_t tmp[BL_MAX_ENTRY];
	const uint64_t sb = r->sbsize, ring = sb * r->nsub;
	uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t cur, first;

	if (!h)
		return 0;
	cur = (h - 1) / sb;
	first = cur + 1 > r->nsub ? cur + 1 - r->nsub : 0;
	for (uint64_t idx = first; idx <= cur; idx++) {
		uint64_t q = idx * sb, end = (idx + 1) * sb < h ? (idx + 1) * sb : h;

		while (q + BL_HDR <= end) {
			/* Acquire: pairs with the release tag stores in bl_sring_write(). */
			uint64_t t = atomic_load_explicit((_Atomic uint64_t *)(void *)(r->data + q % ring),
							  memory_order_acquire);
			uint64_t sz = bl_tag_size(t);

			if (bl_tag_pos(t) == q && sz >= BL_HDR && q + sz <= end &&
			    (bl_tag_kind(t) == BL_KIND_DATA || bl_tag_kind(t) == BL_KIND_PAD)) {
				if (bl_tag_kind(t) == BL_KIND_DATA) {
					int rc;

					if (sz > BL_MAX_ENTRY) {
						st->resync_bytes += 8;
						q += 8;
						continue;
					}
					memcpy(tmp, r->data + q % ring + BL_HDR, sz - BL_HDR);
					st->entries++;
					rc = cb(ctx, core, tmp, (uint32_t)(sz - BL_HDR));
					if (rc)
						return rc;
				} else {
					st->pads++;
				}
				q += sz;
			} else {
				st->resync_bytes += 8;
				q += 8;
			}
		}
	}
	return 0;
}

static inline int bl_pcdrop_read(struct bl_pcdrop *t, bl_entry_cb cb, void *ctx, struct bl_read_stats *st)
{
	for (uint32_t c = 0; c < t->ncores; c++) {
		int rc = bl_sring_read(&t->ring[c], c, cb, ctx, st);

		if (rc)
			return rc;
	}
	return 0;
}

static inline uint64_t bl_pcdrop_dropped(struct bl_pcdrop *t)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < t->ncores; c++)
		n += atomic_load_explicit(&t->ring[c].dropped, memory_order_relaxed);
	return n;
}

#endif /* BENCH_BASELINES_H */
