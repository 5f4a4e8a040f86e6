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
	bt_dump_close(d);
	unlink(path);
	rmdir(dir);
	bt_ho_found_free(&f);
	free(copy);
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
	RUN(test_damage);
	return h_done();
}
