/* SPDX-License-Identifier: MIT */
/*
 * handover_fixture.h - a handed buffer file made by the real writer
 * (handover_shm.c, a shared bt_buffer): small (64 KiB of 256-byte blocks,
 * 2 cores), full of sched_switch batches, three task names saved. For
 * test_handover (unit) and fuzz_handover (libFuzzer).
 */
#ifndef BT_HANDOVER_FIXTURE_H
#define BT_HANDOVER_FIXTURE_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/types.h>
#include "events.h"
#include "compact.h"
#include "handover.h"
#include "task_list.h"

struct ho_fixture {
	struct bt_handover *h;
	struct bt_buffer *b;
	uint64_t written;  /* entries written */
	uint64_t retained; /* entries a live read of the buffer holds */
};

static int ho_count_cb(const struct bt_block_view *v, void *ctx)
{
	uint32_t off = 0, len;

	while (bt_block_next(v, &off, &len))
		(*(uint64_t *)ctx)++;
	return 0;
}

/* Write n batches of one sched_switch each, alternating cores. */
static void ho_fixture_write(struct ho_fixture *f, uint32_t n, uint64_t ts0)
{
	for (uint32_t i = 0; i < n; i++) {
		struct bt_ev_sched_switch sw = { .h = { .ts_ns = ts0 + i * 1000ull, .seq = i, .tid = 100 + i % 3,
							.tgid = 100 + i % 3, .cpu = (uint16_t)(i % 2),
							.type = BT_EV_SCHED_SWITCH },
						 .prev_tid = 100 + i % 3, .next_tid = 0, .prev_prio = 120, .next_prio = 120 };
		struct bt_compact_prev prev = { 0 };
		uint8_t batch[BT_COMPACT_MAX];
		uint32_t len = bt_compact_batch_put(batch, &sw.h, sizeof(sw), &prev);

		if (len && bt_write(f->b, i % 2, batch, len) == 0)
			f->written++;
	}
}

#define HO_MARK 0x5a17a6e5c0ffee42ull /* args[0] of the fixture's one uprobe event */

/* One uprobe entry (its args[0] HO_MARK: a test finds it in the memory). */
static void ho_fixture_write_uprobe(struct ho_fixture *f, uint64_t ts)
{
	struct bt_ev_uprobe up = { .h = { .ts_ns = ts, .seq = 9999, .tid = 100, .tgid = 100, .cpu = 0,
					  .type = BT_EV_UPROBE_ENTRY },
				   .probe_id = 0, .nargs = 1, .args = { HO_MARK } };
	struct bt_compact_prev prev = { 0 };
	uint8_t batch[BT_COMPACT_MAX];
	uint32_t len = bt_compact_batch_put(batch, &up.h, sizeof(up), &prev);

	if (len && bt_write(f->b, 0, batch, len) == 0)
		f->written++;
}

/* 0, or -1 with a message on stderr. */
static int ho_fixture_make(struct ho_fixture *f, uint32_t n, uint64_t ts0)
{
	/* reserved to 1 MiB, as a recorder reserves room to resize: most of
	 * the handed file is holes */
	struct bt_config cfg = {
		.size = 64 << 10, .max_size = 1 << 20, .block_size = 256, .ncores = 2, .active = 16
	};
	struct bt_shm_place place;
	char err[256];
	struct bt_task tasks[3] = { { 100, 100, 0, "ho-one" }, { 101, 101, 0, "ho-two" }, { 102, 102, 0, "ho-three" } };
	struct bt_ho_counters c = { .ncpus = 2, .groups_enabled = 1 };

	memset(f, 0, sizeof(*f));
	f->h = bt_handover_new(err, sizeof(err));
	if (!f->h || bt_handover_prepare(f->h, &cfg, 2, &place, err, sizeof(err))) {
		fprintf(stderr, "handover fixture: %s\n", err);
		return -1;
	}
	cfg.shm = &place;
	f->b = bt_buffer_create(&cfg, err, sizeof(err));
	if (!f->b) {
		fprintf(stderr, "handover fixture: %s\n", err);
		return -1;
	}
	ho_fixture_write(f, n, ts0);
	ho_fixture_write_uprobe(f, ts0 + n * 1000ull);
	bt_read(f->b, ho_count_cb, &f->retained, NULL);
	c.drain_events = f->written;
	bt_handover_save(f->h, &c, tasks, 3);
	return 0;
}

/* The file as mapped by a reader (len set), or NULL. */
static uint8_t *ho_fixture_map(struct ho_fixture *f, size_t *len)
{
	struct stat st;
	void *m;

	if (fstat(bt_handover_fd(f->h), &st))
		return NULL;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, bt_handover_fd(f->h), 0);
	if (m == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return m;
}
#endif
