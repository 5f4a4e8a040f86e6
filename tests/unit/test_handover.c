// SPDX-License-Identifier: MIT
/*
 * Unit tests of the buffer's hand-over (user/handover/): a handed file is
 * read back whole (every entry the live buffer held, its task names, why
 * the previous recorder ended); damaged copies (random bytes anywhere,
 * the header's checksum made right again so the geometry checks are
 * reached, a short file) are refused or salvaged, never crash (the fuzz
 * target fuzz_handover does the same under ASan), and a salvage's dump
 * always opens in the dump reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "handover_int.h"
#include "handover_fixture.h"
#include "dump.h"
#include "dump_format.h"
#include "dump_stacks.h"
#include "harness.h"

static struct ho_fixture F;
static uint8_t *base;
static size_t flen;

static uint64_t count_entries(const struct bt_capture *c)
{
	uint64_t n = 0;

	bt_capture_read(c, ho_count_cb, &n);
	return n;
}

static void test_reads_back_whole(void)
{
	struct bt_ho_found f;
	char err[256] = "";

	REQUIRE(bt_ho_read(base, flen, bt_handover_fd(F.h), &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(F.retained > 200, "the fixture wraps its buffer: %llu entries retained", (unsigned long long)F.retained);
	CHECK(count_entries(f.kbuf) == F.retained, "every retained entry back: %llu of %llu",
	      (unsigned long long)count_entries(f.kbuf), (unsigned long long)F.retained);
	CHECK(f.ss.blocks_bad == 0 && f.ss.blocks_dup == 0, "nothing refused");
	CHECK(bt_capture_read_stats(f.kbuf)->blocks_empty == 0,
	      "a wrapped buffer has no block never used, the room reserved past its size not counted (%llu)",
	      (unsigned long long)bt_capture_read_stats(f.kbuf)->blocks_empty);
	CHECK(f.ntasks == 3 && !strcmp(f.tasks[2].comm, "ho-three"), "the task names saved");
	CHECK(!strcmp(bt_ho_reason(&f), "recorder-died"), "running when read: it died (%s)", bt_ho_reason(&f));
	CHECK(f.cnt.drain_events == F.written, "the counters saved");
	bt_ho_found_free(&f);
	bt_handover_mark(F.h, BT_HO_STOPPED);
	REQUIRE(bt_ho_read(base, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(!strcmp(bt_ho_reason(&f), "restart"), "a clean stop reads as a restart");
	bt_ho_found_free(&f);
	/* The same, written by another binary (a package upgrade, then the restart). */
	uint8_t *copy = malloc(flen);
	REQUIRE(copy, "memory");
	memcpy(copy, base, flen);
	((struct bt_ho_live *)(copy + BT_HO_LIVE_OFF))->exe_mtime_ns ^= 1;
	REQUIRE(bt_ho_read(copy, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(!strcmp(bt_ho_reason(&f), "upgrade"), "another binary's clean stop reads as an upgrade (%s)", bt_ho_reason(&f));
	bt_ho_found_free(&f);
	free(copy);
	bt_handover_mark(F.h, BT_HO_RUNNING);
}

static void test_short_file_refused(void)
{
	struct bt_ho_found f;
	char err[256] = "";

	CHECK(bt_ho_read(base, flen - 4096, -1, &f, err, sizeof(err)) == -EINVAL && strstr(err, "outside the file"),
	      "a file shorter than its header says: %s", err);
	CHECK(bt_ho_read(base, 100, -1, &f, err, sizeof(err)) == -EINVAL, "shorter than a header");
}

/* A torn state slot (a death mid-save): the other one is read. */
static void test_torn_state_slot(void)
{
	const struct bt_ho_header *h = (const void *)base;
	const struct bt_ho_live *lv = (const void *)(base + BT_HO_LIVE_OFF);
	uint8_t *copy = malloc(flen);
	struct bt_ho_counters c = { .ncpus = 2 };
	struct bt_task t = { 7, 7, 0, "ho-second" };
	struct bt_ho_found f;
	char err[256] = "";

	REQUIRE(copy, "memory");
	bt_handover_save(F.h, &c, &t, 1); /* slot 2: one task */
	memcpy(copy, base, flen);
	uint64_t gen = atomic_load(&lv->state_gen);
	copy[h->state_off + (gen % 2) * h->state_bytes + sizeof(struct bt_ho_slot) + 3] ^= 0x55; /* torn task */
	REQUIRE(bt_ho_read(copy, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.have_state && f.ntasks == 3, "the older slot's three tasks, not the torn one (%zu)", f.ntasks);
	bt_ho_found_free(&f);
	free(copy);
}

/* An event the dump reader refuses (a uprobe entry with 7 arguments,
 * found by its argument in the data blocks): its batch is dropped, the
 * rest dumped, and the dump opens. */
static void test_refused_event_dropped(void)
{
	const struct bt_ho_header *h = (const void *)base;
	uint8_t *copy = malloc(flen);
	char dir[] = "/tmp/btrace-ho-XXXXXX", err[256] = "", path[4096];
	uint64_t mark = HO_MARK, ev = 0;
	struct bt_ho_found f;
	uint8_t *at = NULL;

	REQUIRE(copy && mkdtemp(dir), "memory and a directory");
	memcpy(copy, base, flen);
	for (uint64_t o = h->data_off; o + 8 <= h->data_off + h->max_size && !at; o += 8)
		if (!memcmp(copy + o, &mark, 8))
			at = copy + o;
	REQUIRE(at, "the fixture's uprobe event is in the data blocks");
	/* nargs sits 20 bytes before args[0] (duration_ns, ret between) */
	uint32_t nargs = 7;
	memcpy(at - 20, &nargs, 4);
	REQUIRE(bt_ho_read(copy, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.ss.entries_bad == 1, "the one batch refused (%llu)", (unsigned long long)f.ss.entries_bad);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	CHECK(d, "the dump opens: %s", err);
	CHECK(ev + 1 >= F.retained && ev < F.retained, "the other %llu events kept (%llu)",
	      (unsigned long long)F.retained - 1, (unsigned long long)ev);
	const struct bt_dump_handed *ho = d ? bt_dump_handed(d) : NULL;
	CHECK(ho && ho->batches_refused == 1 && ho->blocks_refused == 0 && !ho->tail_known,
	      "its loss section says the batch refused, the programs' counters unknown");
	bt_dump_close(d);
	unlink(path);
	rmdir(dir);
	bt_ho_found_free(&f);
	free(copy);
}

/* The previous programs' counters (as pinned): the dump counts, per CPU,
 * the seqs taken after its newest event (7 and 5 here), and carries their
 * drops and submitted counts. */
static void test_tail_counted(void)
{
	char dir[] = "/tmp/btrace-ho-XXXXXX", err[256] = "", path[4096];
	uint64_t ev = 0, seq_next[2], drops[2 * BT_GROUP_MAX] = { 0 }, emitted[2 * BT_GROUP_MAX] = { 0 };
	struct bt_ho_found f;

	REQUIRE(mkdtemp(dir), "a directory");
	REQUIRE(bt_ho_read(base, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	/* the newest event per CPU, as the dump of the same memory will hold it */
	CHECK(bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0, "%s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "the dump opens: %s", err);
	size_t n;
	const struct bt_dump_event *e = bt_dump_events(d, &n);
	uint64_t nts[2] = { 0, 0 };
	uint32_t nseq[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t c = e[i].ev->cpu;
		if (c < 2 && e[i].ev->ts_ns >= nts[c]) {
			nts[c] = e[i].ev->ts_ns;
			nseq[c] = e[i].ev->seq;
		}
	}
	bt_dump_close(d);
	unlink(path);
	bt_ho_found_free(&f);
	REQUIRE(nts[0] && nts[1], "both CPUs kept events");

	REQUIRE(bt_ho_read(base, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	seq_next[0] = nseq[0] + 1ull + 7;
	seq_next[1] = nseq[1] + 1ull + 5;
	drops[1 * BT_GROUP_MAX + BT_GROUP_SCHED] = 3;
	emitted[0] = 4242;
	f.tail = (struct bt_ho_tail){ .known = 1, .ncpus = 2, .seq_next = malloc(sizeof(seq_next)),
				      .drops = malloc(sizeof(drops)), .emitted = malloc(sizeof(emitted)) };
	REQUIRE(f.tail.seq_next && f.tail.drops && f.tail.emitted, "memory");
	memcpy(f.tail.seq_next, seq_next, sizeof(seq_next));
	memcpy(f.tail.drops, drops, sizeof(drops));
	memcpy(f.tail.emitted, emitted, sizeof(emitted));
	CHECK(bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.after_newest == 12, "7 + 5 events after the newest kept (%llu)", (unsigned long long)f.after_newest);
	d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "the dump opens: %s", err);
	const struct bt_dump_handed *ho = bt_dump_handed(d);
	CHECK(ho && ho->tail_known && ho->after_newest == 12, "its loss section says so");
	const uint64_t *rd = bt_dump_rb_drops(d), *re = bt_dump_rb_emitted(d);
	CHECK(rd && rd[1 * BT_GROUP_MAX + BT_GROUP_SCHED] == 3 && re && re[0] == 4242,
	      "the programs' own drops and submitted counts are the dump's");
	bt_dump_close(d);
	unlink(path);
	rmdir(dir);
	bt_ho_found_free(&f);
}

struct pos_count {
	uint64_t min, n;
};

static int count_from(const struct bt_block_view *blk, void *arg)
{
	struct pos_count *pc = arg;

	pc->n += blk->pos >= pc->min;
	return 0;
}

/* The history joined to later dumps: the newest of its blocks that fit in
 * what the new recorder has not used of its buffer, its task names under
 * the new recorder's own. */
static void test_prior_window(void)
{
	char dir[] = "/tmp/btrace-ho-XXXXXX", err[256] = "", path[4096];
	uint64_t ev = 0;
	struct bt_ho_found f;
	struct bt_dump_prior p;

	REQUIRE(mkdtemp(dir), "a directory");
	REQUIRE(bt_ho_read(base, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0, "%s", err);
	unlink(path);
	rmdir(dir);
	REQUIRE(f.ntasks >= 1 && f.tasks[0].tid > 1, "the fixture saved task names");
	uint32_t ptid = f.tasks[0].tid;
	size_t pn = f.ntasks;
	struct bt_ho_prior *h = bt_ho_prior_take(&f);
	REQUIRE(h && !f.kbuf, "taken over");
	bt_ho_found_free(&f);
	uint32_t bs = 256; /* the fixture's (handover_fixture.h) */
	struct pos_count all = { 0, 0 };
	CHECK(bt_ho_prior_fill(h, 1ull << 40, 0, 77, &p) == 1 && p.min_pos == 0 && p.blocks_left == 0 &&
		      p.resumed_ts == 77 && p.reason == BTD_PRIOR_DIED,
	      "a fresh buffer: all of it (min_pos %llu, left %llu)", (unsigned long long)p.min_pos,
	      (unsigned long long)p.blocks_left);
	bt_capture_read(p.kbuf, count_from, &all);
	REQUIRE(all.n > 4, "the fixture keeps blocks: %llu", (unsigned long long)all.n);
	CHECK(bt_ho_prior_fill(h, 10ull * bs, 7ull * bs, 0, &p) == 1 && p.blocks_left == all.n - 3,
	      "3 blocks of room: the rest left out (%llu of %llu)", (unsigned long long)p.blocks_left,
	      (unsigned long long)all.n);
	struct pos_count three = { p.min_pos, 0 };
	bt_capture_read(p.kbuf, count_from, &three);
	CHECK(three.n == 3, "the 3 newest written (%llu)", (unsigned long long)three.n);
	CHECK(bt_ho_prior_fill(h, 10ull * bs, 10ull * bs, 0, &p) == 0 && !p.kbuf, "no room: none");
	CHECK(bt_ho_prior_fill(h, 10ull * bs, 9ull * bs + bs / 2, 0, &p) == 0, "less than a block of room: none");

	/* one thread both know, one only this recorder knows */
	struct bt_task cur[2] = { { 1, 1, 0, "new-one" }, { ptid, ptid, 0, "new-name" } }, *m = NULL;
	size_t nm = 0;
	int sorted = 1, mine = 0;
	REQUIRE(bt_ho_prior_tasks(h, cur, 2, &m, &nm) == 0, "merged");
	for (size_t i = 0; i < nm; i++) {
		sorted &= !i || m[i - 1].tid < m[i].tid;
		mine += m[i].tid == ptid && !strcmp(m[i].comm, "new-name");
	}
	CHECK(nm == 1 + pn && sorted && mine == 1, "sorted, one name per thread, this recorder's first (%zu of %zu)",
	      nm, 1 + pn);
	free(m);
	bt_ho_prior_free(h);
}

/* A saved stack table is read as untrusted: one that does not decode is
 * said and its stacks say reclaimed; a torn slot is not read at all. */
static void test_stacks_hostile(void)
{
	char dir[] = "/tmp/btrace-ho-XXXXXX", err[256] = "", path[4096];
	uint8_t junk[512];
	uint32_t slot[4] = { 0, 1, 0, 300 };
	uint64_t ep[256 * 2] = { 0 }, hi[2] = { 5, 5 }, ev = 0;
	struct bt_stack_births_arrays b = { .n = 4, .ncpus = 2, .nring = 256, .slot = slot, .ep_ts = ep, .hi_ts = hi };
	struct bt_ho_found f;
	unsigned seed = 7;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand_r(&seed);
	REQUIRE(mkdtemp(dir), "a directory");
	REQUIRE(bt_handover_save_stacks(F.h, junk, sizeof(junk), &b) == 0, "saved");
	/* base maps the file shared: the slot written through the fd is there */
	REQUIRE(bt_ho_read(base, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.stacks && ((const struct bt_ho_stacks_slot *)f.stacks)->stacks_len == sizeof(junk), "the slot passes its checksum: read");
	CHECK(bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.stacks_err[0] && !f.stacks_named, "junk does not decode, said: %s", f.stacks_err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	CHECK(d != NULL, "the dump opens: %s", err);
	bt_dump_close(d);
	unlink(path);
	bt_ho_found_free(&f);
	/* a flipped byte in the named slot: its checksum fails, nothing read */
	const struct bt_ho_stacks_desc *sd = (const void *)(base + BT_HO_STACKS_DESC_OFF);
	uint8_t *copy = malloc(flen);
	REQUIRE(copy, "memory");
	memcpy(copy, base, flen);
	copy[sd->off + (sd->gen % 2) * sd->slot_bytes + 100] ^= 0x40;
	REQUIRE(bt_ho_read(copy, flen, -1, &f, err, sizeof(err)) == 0, "%s", err);
	CHECK(!f.stacks, "a torn slot is not read");
	bt_ho_found_free(&f);
	free(copy);
	rmdir(dir);
}

/* Random damage: refused or salvaged; what is salvaged dumps into a file
 * the dump reader opens. */
static void test_damage(void)
{
	uint8_t *copy = malloc(flen);
	char dir[] = "/tmp/btrace-ho-XXXXXX", err[256], path[4096];
	unsigned seed = 42;
	int refused = 0, salvaged = 0, dumped = 0, opened = 0;
	const struct bt_ho_header *h = (const void *)base;
	/* Where damage matters: the header page, the metadata, the state
	 * slots' starts, the data blocks (the rest of the state is unused). */
	const uint64_t zones[4][2] = { { 0, 4096 }, { h->meta_off, h->meta_bytes }, { h->state_off, 8192 },
				       { h->data_off, h->max_size } };

	REQUIRE(copy && mkdtemp(dir), "memory and a directory");
	for (int it = 0; it < 400; it++) {
		struct bt_ho_found f;
		int n = 1 + rand_r(&seed) % 24;

		memcpy(copy, base, flen);
		for (int k = 0; k < n; k++) {
			const uint64_t *z = zones[rand_r(&seed) % 4];
			uint64_t at = z[0] + (uint64_t)rand_r(&seed) % z[1];

			copy[at] = (uint8_t)rand_r(&seed);
		}
		if (it % 2) { /* past the checksum: the geometry checks */
			struct bt_ho_header *ch = (void *)copy;

			ch->sum = bt_ho_sum(0, ch, offsetof(struct bt_ho_header, sum));
		}
		err[0] = '\0';
		if (bt_ho_read(copy, flen, -1, &f, err, sizeof(err))) {
			refused++;
			continue;
		}
		salvaged++;
		count_entries(f.kbuf);
		if (it % 8 == 1) {
			uint64_t ev = 0;

			if (bt_handover_dump(&f, dir, 0, path, sizeof(path), &ev, err, sizeof(err)) == 0) {
				dumped++;
				struct bt_dump *d = bt_dump_open(path, err, sizeof(err));

				if (d) {
					opened++;
					bt_dump_close(d);
				} else {
					fprintf(stderr, "  damage %d: %s\n", it, err);
				}
				unlink(path);
			}
		}
		bt_ho_found_free(&f);
	}
	printf("# %d damaged copies: %d refused, %d salvaged; %d salvaged dumps, %d opened\n", refused + salvaged,
	       refused, salvaged, dumped, opened);
	CHECK(refused > 0 && salvaged > 0, "both refusals and salvages happen");
	CHECK(dumped > 10 && opened == dumped, "every salvage's dump opens (%d of %d)", opened, dumped);
	rmdir(dir);
	free(copy);
}

int main(void)
{
	if (ho_fixture_make(&F, 4000, 1000000000ull) || !(base = ho_fixture_map(&F, &flen))) {
		printf("not ok 1 - fixture\n");
		return 1;
	}
	RUN(test_reads_back_whole);
	RUN(test_short_file_refused);
	RUN(test_torn_state_slot);
	RUN(test_refused_event_dropped);
	RUN(test_tail_counted);
	RUN(test_prior_window);
	RUN(test_stacks_hostile);
	RUN(test_damage);
	return h_done();
}
