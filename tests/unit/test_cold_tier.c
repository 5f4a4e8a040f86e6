// SPDX-License-Identifier: MIT
/*
 * test_cold_tier.c - the cold tier, deterministic: one writer, pumps at
 * chosen moments. What the two tiers return together is exactly what was
 * written, oldest history included, for both codecs; the tier drops its
 * oldest groups first; a writer outrunning the pump is counted as gaps, and
 * reads leave out what is older than the hole (never a hole in the middle);
 * blocks the budget does not pay to compress are kept uncompressed;
 * resizing keeps the newest groups; the oldest position held follows
 * evictions; bad configurations are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrace_buffer.h"
#include "cold_tier.h"
#include "harness.h"

#define BS 1024u
#define NCORES 1
#define HOT (4 * 16 * (size_t)BS) /* 4 slots of A = 16 blocks */

struct rec {
	uint64_t seq;
	uint8_t fill[40];
};

struct seen {
	uint64_t first, last, n, gaps, prev_pos;
	int started, order_bad;
};

static int collect(const struct bt_block_view *v, void *ctx)
{
	struct seen *s = ctx;
	uint32_t off = 0, len;
	const void *p;

	if (s->prev_pos && v->pos <= s->prev_pos)
		s->order_bad = 1;
	s->prev_pos = v->pos;
	while ((p = bt_block_next(v, &off, &len))) {
		const struct rec *r = p;

		if (!s->started) {
			s->first = r->seq;
			s->started = 1;
		} else if (r->seq != s->last + 1) {
			s->gaps++;
		}
		s->last = r->seq;
		s->n++;
	}
	return 0;
}

static struct bt_buffer *new_buf(void)
{
	struct bt_config cfg = { .size = HOT, .block_size = BS, .ncores = NCORES, .active = 16 };
	char err[128];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));

	if (!b)
		fprintf(stderr, "buffer: %s\n", err);
	return b;
}

static void write_n(struct bt_buffer *b, uint64_t *seq, uint64_t n, struct bt_cold *c, uint64_t pump_every)
{
	struct rec r;

	for (uint64_t i = 0; i < n; i++) {
		r.seq = (*seq)++;
		memset(r.fill, (int)(r.seq & 0x3f), sizeof(r.fill)); /* compressible, like events */
		bt_write(b, 0, &r, sizeof(r));
		if (c && pump_every && r.seq % pump_every == 0)
			bt_cold_pump(c, b);
	}
}

/* The tier's settled blocks, then the buffer from where they end, as a
 * dump joins them. */
static void joined(struct bt_buffer *b, struct bt_cold *c, struct seen *s)
{
	uint64_t from = 0;

	memset(s, 0, sizeof(*s));
	CHECK(bt_cold_read(c, collect, s, NULL, &from) == 0 && bt_read_range(b, from, 0, collect, s, NULL) == 0,
	      "joined read");
}

static void test_codec(enum bt_codec codec)
{
	struct bt_cold_config cc = { .size = 16 * HOT, .codec = codec, .level = 1 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c;
	struct bt_cold_stats st;
	struct seen s, hot_only;
	uint64_t seq = 0;
	char err[128];

	REQUIRE(b, "buffer");
	c = bt_cold_create(&cc, BS, err, sizeof(err));
	REQUIRE(c, "cold tier: %s", err);
	/* Ten times what the buffer holds, the pump called often enough. */
	write_n(b, &seq, 10 * HOT / sizeof(struct rec), c, 64);
	bt_cold_pump(c, b);
	joined(b, c, &s);
	memset(&hot_only, 0, sizeof(hot_only));
	bt_read(b, collect, &hot_only, NULL);
	bt_cold_stats(c, &st);
	CHECK(!s.order_bad && s.gaps == 0, "%s: one gap-free run in position order (%llu gaps)", bt_codec_name(codec),
	      (unsigned long long)s.gaps);
	CHECK(s.last == seq - 1, "%s: ends with the newest entry (%llu of %llu)", bt_codec_name(codec),
	      (unsigned long long)s.last, (unsigned long long)(seq - 1));
	CHECK(s.first == 0 && s.n == seq, "%s: every entry since the first kept (%llu entries from %llu)",
	      bt_codec_name(codec), (unsigned long long)s.n, (unsigned long long)s.first);
	CHECK(s.n > 4 * hot_only.n, "%s: %llu entries against the buffer's %llu", bt_codec_name(codec),
	      (unsigned long long)s.n, (unsigned long long)hot_only.n);
	CHECK(st.gaps == 0 && st.groups_evicted == 0 && st.raw_bytes_in > 3 * st.stored_bytes_in,
	      "%s: no gap, nothing evicted, compressed %llu -> %llu", bt_codec_name(codec),
	      (unsigned long long)st.raw_bytes_in, (unsigned long long)st.stored_bytes_in);

	/* Much more than the tier holds: the oldest go, the rest stays whole. */
	write_n(b, &seq, 200 * HOT / sizeof(struct rec), c, 64);
	bt_cold_pump(c, b);
	joined(b, c, &s);
	bt_cold_stats(c, &st);
	CHECK(st.groups_evicted > 0 && s.first > 0 && s.gaps == 0 && s.last == seq - 1,
	      "%s: evicted oldest first, the newest %llu entries whole", bt_codec_name(codec), (unsigned long long)s.n);
	CHECK(st.used <= st.size, "%s: used %zu within %zu", bt_codec_name(codec), st.used, st.size);

	/* Shrink: the newest groups stay. */
	uint64_t before = s.n;
	CHECK(bt_cold_resize(c, 2 * HOT, err, sizeof(err)) == 0, "resize: %s", err);
	joined(b, c, &s);
	CHECK(s.gaps == 0 && s.last == seq - 1 && s.n < before && s.n > hot_only.n,
	      "%s: after a shrink %llu newest entries, gap-free", bt_codec_name(codec), (unsigned long long)s.n);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

static void test_lz4(void) { test_codec(BT_CODEC_LZ4); }
static void test_zstd(void) { test_codec(BT_CODEC_ZSTD); }

/* The writer laps the buffer between two pumps: the blocks it overwrote are
 * gone, and that is counted as a gap in the tier; a read leaves out the
 * tier's blocks older than the hole (counted), so the joined read is one
 * gap-free run that lost only its oldest end. */
static void test_outrun(void)
{
	struct bt_cold_config cc = { .size = 16 * HOT, .codec = BT_CODEC_LZ4 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c = bt_cold_create(&cc, BS, NULL, 0);
	struct bt_cold_read_stats rs;
	struct bt_cold_stats st;
	struct seen s;
	uint64_t seq = 0, from = 0;

	REQUIRE(b && c, "setup");
	write_n(b, &seq, HOT / sizeof(struct rec), NULL, 0);
	bt_cold_pump(c, b);
	write_n(b, &seq, 3 * HOT / sizeof(struct rec), NULL, 0); /* no pump: laps the buffer */
	bt_cold_pump(c, b);
	bt_cold_stats(c, &st);
	memset(&s, 0, sizeof(s));
	CHECK(bt_cold_read(c, collect, &s, &rs, &from) == 0 && bt_read_range(b, from, 0, collect, &s, NULL) == 0,
	      "joined read");
	CHECK(st.gaps == 1, "one chain break counted (%llu)", (unsigned long long)st.gaps);
	CHECK(s.gaps == 0 && s.first > 0 && s.last == seq - 1 && !s.order_bad,
	      "the joined read has no hole: entries %llu..%llu, %llu gaps", (unsigned long long)s.first,
	      (unsigned long long)s.last, (unsigned long long)s.gaps);
	CHECK(rs.blocks_cut > 0 && rs.blocks_read > 0, "the blocks older than the hole left out and counted (%llu cut, %llu read)",
	      (unsigned long long)rs.blocks_cut, (unsigned long long)rs.blocks_read);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

/* The hole between the tier and the buffer, which no pump saw (a dump
 * before the next pass): the capture's oldest block names a previous one
 * the tier does not end on. Read as a dump reads (a snapshot joined to a
 * capture), the tier's blocks of that core are left out, not a hole shown;
 * unjoined, the same read shows the hole (so the case is real). */
static void test_join(void)
{
	struct bt_cold_config cc = { .size = 16 * HOT, .codec = BT_CODEC_ZSTD, .level = 1 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c = bt_cold_create(&cc, BS, NULL, 0);
	struct bt_capture *cap;
	struct bt_cold_snap *snap;
	struct bt_read_stats crs;
	uint64_t seq = 0, join[NCORES];
	struct seen s;

	REQUIRE(b && c, "setup");
	write_n(b, &seq, HOT / sizeof(struct rec), NULL, 0);
	bt_cold_pump(c, b);
	write_n(b, &seq, 3 * HOT / sizeof(struct rec), NULL, 0); /* laps the buffer; no pump since */
	cap = bt_capture(b, &crs);
	REQUIRE(cap, "capture");

	snap = bt_cold_snap_take(c, bt_capture_oldest_pos(cap), NULL, 0);
	REQUIRE(snap, "snapshot");
	memset(&s, 0, sizeof(s));
	bt_cold_snap_read(snap, collect, &s, NULL);
	bt_capture_read(cap, collect, &s);
	CHECK(bt_cold_snap_info(snap)->blocks > 0 && s.gaps == 1, "unjoined: the tier's %llu blocks, then a hole (%llu gaps)",
	      (unsigned long long)bt_cold_snap_info(snap)->blocks, (unsigned long long)s.gaps);
	bt_cold_snap_free(snap);

	bt_capture_first_prev(cap, join, NCORES);
	snap = bt_cold_snap_take(c, bt_capture_oldest_pos(cap), join, NCORES);
	REQUIRE(snap, "snapshot");
	memset(&s, 0, sizeof(s));
	bt_cold_snap_read(snap, collect, &s, NULL);
	bt_capture_read(cap, collect, &s);
	CHECK(s.gaps == 0 && s.first > 0 && s.last == seq - 1 && !s.order_bad,
	      "joined to the capture: no hole (entries %llu..%llu, %llu gaps)", (unsigned long long)s.first,
	      (unsigned long long)s.last, (unsigned long long)s.gaps);
	CHECK(bt_cold_snap_info(snap)->blocks == 0 && bt_cold_snap_info(snap)->blocks_cut > 0,
	      "the tier's blocks before the hole left out and counted (%llu)",
	      (unsigned long long)bt_cold_snap_info(snap)->blocks_cut);
	bt_cold_snap_free(snap);
	bt_capture_free(cap);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

/* A budget that pays for no compression: every block is stored as it is,
 * the window as whole as with compression, and the counts say so. */
static void test_raw(void)
{
	struct bt_cold_config cc = { .size = 16 * HOT, .codec = BT_CODEC_ZSTD, .level = -1 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c = bt_cold_create(&cc, BS, NULL, 0);
	struct bt_cold_stats st;
	uint32_t raw = 0, total = 0;
	struct seen s;
	uint64_t seq = 0;

	REQUIRE(b && c, "setup");
	for (int i = 0; i < 40; i++) {
		struct bt_cold_pass pass;

		write_n(b, &seq, HOT / 8 / sizeof(struct rec), NULL, 0);
		bt_cold_pump_upto(c, b, BT_NO_POS, 0, &pass);
		raw += pass.stored_raw;
	}
	bt_cold_stats(c, &st);
	joined(b, c, &s);
	total = (uint32_t)st.blocks_in;
	CHECK(raw > 0 && raw == total && st.blocks_raw == total && st.blocks_held_raw == st.blocks,
	      "no compression paid for: %u of %u blocks stored uncompressed, %llu held so", raw, total,
	      (unsigned long long)st.blocks_held_raw);
	CHECK(s.gaps == 0 && s.first == 0 && s.last == seq - 1 && !s.order_bad,
	      "uncompressed, the window is whole: entries %llu..%llu", (unsigned long long)s.first,
	      (unsigned long long)s.last);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

/* The drain's nudge: it wakes the compressor once a quarter of the buffer
 * was used since the pump's last pass began, not before; the wakeup is
 * consumed by the wait it ends. Driven like the recorder (write a burst,
 * nudge, pump if woken), a writer lapping the buffer three times loses
 * nothing that test_outrun's sleeping pump loses. */
static void test_nudge(void)
{
	struct bt_cold_config cc = { .size = 16 * HOT, .codec = BT_CODEC_LZ4 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c = bt_cold_create(&cc, BS, NULL, 0);
	struct bt_cold_stats st;
	struct bt_stats bs;
	struct seen s;
	uint64_t seq = 0, per_block = BS / (sizeof(struct rec) + 8);
	int woken = 0;

	REQUIRE(b && c, "setup");
	bt_buffer_stats(b, &bs);
	bt_cold_pump(c, b);
	write_n(b, &seq, per_block * (bs.nblocks / BT_COLD_NUDGE_DIV / 2), NULL, 0);
	bt_buffer_stats(b, &bs);
	bt_cold_nudge(c, bs.blocks_used, bs.nblocks);
	CHECK(bt_cold_wait(c, 1000000) == 0, "half the nudge interval used: no wakeup");
	write_n(b, &seq, per_block * (bs.nblocks / BT_COLD_NUDGE_DIV), NULL, 0);
	bt_buffer_stats(b, &bs);
	bt_cold_nudge(c, bs.blocks_used, bs.nblocks);
	CHECK(bt_cold_wait(c, 2000000000ull) == 1, "over the interval used: woken");
	CHECK(bt_cold_wait(c, 1000000) == 0, "the wakeup is consumed by the wait it ended");
	bt_cold_wake(c);
	CHECK(bt_cold_wait(c, 2000000000ull) == 1, "bt_cold_wake wakes");

	for (uint64_t written = 0; written < 3 * HOT / sizeof(struct rec); written += per_block * 4) {
		write_n(b, &seq, per_block * 4, NULL, 0);
		bt_buffer_stats(b, &bs);
		bt_cold_nudge(c, bs.blocks_used, bs.nblocks);
		if (bt_cold_wait(c, 0)) {
			bt_cold_pump(c, b);
			woken++;
		}
	}
	bt_cold_pump(c, b);
	bt_cold_stats(c, &st);
	joined(b, c, &s);
	CHECK(woken > 0 && st.nudges >= (uint64_t)woken, "the pump was woken by nudges (%d, %llu counted)", woken,
	      (unsigned long long)st.nudges);
	CHECK(st.gaps == 0 && s.gaps == 0 && s.first == 0 && s.last == seq - 1 && !s.order_bad,
	      "nudged pumps lose nothing (%llu tier gaps, %llu in the read, %llu..%llu of %llu)",
	      (unsigned long long)st.gaps, (unsigned long long)s.gaps, (unsigned long long)s.first,
	      (unsigned long long)s.last, (unsigned long long)seq);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

static void test_config(void)
{
	struct bt_cold_config cc = { .size = 1000, .codec = BT_CODEC_LZ4 };
	enum bt_codec k;
	char err[128] = "";

	errno = 0;
	CHECK(!bt_cold_create(&cc, BS, err, sizeof(err)) && errno == EINVAL && strstr(err, "hold no group"),
	      "too small refused: %s", err);
	cc.size = HOT;
	cc.codec = 7;
	CHECK(!bt_cold_create(&cc, BS, err, sizeof(err)) && errno == EINVAL, "unknown codec refused: %s", err);
	cc.codec = BT_CODEC_ZSTD;
	cc.group_blocks = 65;
	CHECK(!bt_cold_create(&cc, BS, err, sizeof(err)) && errno == EINVAL, "group of 65 refused: %s", err);
	CHECK(bt_codec_parse("lz4", &k) == 0 && k == BT_CODEC_LZ4 && bt_codec_parse("zstd", &k) == 0 &&
	      k == BT_CODEC_ZSTD && bt_codec_parse("gzip", &k) == -EINVAL, "codec names");
}

static int min_pos(const struct bt_block_view *v, void *ctx)
{
	uint64_t *m = ctx;

	if (v->pos < *m)
		*m = v->pos;
	return 0;
}

/* The oldest position the tier may still hand out, asked after every drain
 * pass (and remembered between changes): the oldest block a read returns,
 * and newer once the oldest groups were evicted. */
static void test_kept_from(void)
{
	struct bt_cold_config cc = { .size = 2 * HOT, .codec = BT_CODEC_LZ4 };
	struct bt_buffer *b = new_buf();
	struct bt_cold *c = bt_cold_create(&cc, BS, NULL, 0);
	uint64_t seq = 0, from = 0, m1 = UINT64_MAX, m2 = UINT64_MAX, k1, k2;

	REQUIRE(b && c, "setup");
	CHECK(bt_cold_kept_from(c) == 0, "0 before the first pass");
	write_n(b, &seq, 2 * HOT / sizeof(struct rec), c, 64);
	bt_cold_pump(c, b);
	CHECK(bt_cold_read(c, min_pos, &m1, NULL, &from) == 0, "read");
	k1 = bt_cold_kept_from(c);
	CHECK(m1 != UINT64_MAX && k1 == m1 && bt_cold_kept_from(c) == k1, "the oldest block held: %llu (read %llu)",
	      (unsigned long long)k1, (unsigned long long)m1);
	write_n(b, &seq, 40 * HOT / sizeof(struct rec), c, 64); /* the tier turns over */
	bt_cold_pump(c, b);
	CHECK(bt_cold_read(c, min_pos, &m2, NULL, &from) == 0, "read");
	k2 = bt_cold_kept_from(c);
	CHECK(k2 == m2 && k2 > k1, "after evictions the oldest held: %llu (read %llu, was %llu)",
	      (unsigned long long)k2, (unsigned long long)m2, (unsigned long long)k1);
	bt_cold_destroy(c);
	bt_buffer_destroy(b);
}

int main(void)
{
	RUN(test_lz4);
	RUN(test_zstd);
	RUN(test_outrun);
	RUN(test_join);
	RUN(test_raw);
	RUN(test_nudge);
	RUN(test_kept_from);
	RUN(test_config);
	return h_done();
}
