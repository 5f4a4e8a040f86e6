// SPDX-License-Identifier: MIT
/*
 * test_stack_copy_walk.c - a user stack walked on from a BPF stack copy
 * (user/stacks/stack_copy_walk.c), on a made-up binary and stack: each
 * frame's return address at CFA - 8, the CFA from the row of pc - 1 for a
 * return address (pc itself at the leaf), rbp restored where a row says,
 * frame pointers where there is no row; a table not built yet waits, or
 * ends the walk when given up; a copy that ends first, a frame bound
 * reached, a record whose counts overrun it, each said. And the copies
 * kept until their table is in, their stacks then finished in the stack
 * table (stack_copies.c): frames added, no longer cut, each counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "harness.h"
#include "stack_copy_walk.h"
#include "stack_copies.h"
#include "stack_table.h"
#include "dump_stacks.h"

#define BASE 0x400000ull /* the binary's code mapping, file offset 0x1000 */
#define SP0 0x7ffd0000ull

/* Rows (ELF addresses = file offsets here): [0x1000,0x1100) CFA = rsp + 8
 * (a leaf that pushed nothing); [0x1100,0x1200) CFA = rsp + 16 with rbp
 * saved at CFA - 16; [0x1200,0x1300) no row (frame pointers);
 * [0x1300,...) outermost. */
static const struct bt_unwind_row ROWS[] = {
	{ 0x1000, BT_UROW_SP, 0, 1 },
	{ 0x1100, BT_UROW_SP, -2, 2 },
	{ 0x1200, BT_UROW_NONE, 0, 0 },
	{ 0x1300, BT_UROW_END, 0, 0 },
};
static int have_table = 1;
static uint32_t table_first = 0, table_count = 4;

static uint64_t real_ino, real_dev; /* a real file's, as the kernel names it (test_stop_frame_named) */

static int file_of(void *arg, const struct bt_unwind_fkey *k, struct bt_unwind_file *f)
{
	(void)arg;
	if (!have_table || !((k->ino == 42 && k->dev == 7) || (real_ino && k->ino == real_ino && k->dev == real_dev)))
		return -ENOENT;
	memset(f, 0, sizeof(*f));
	f->first = table_first;
	f->count = table_count;
	f->kind = BT_UMAP_FILE;
	return 0;
}
static const struct bt_copy_tables TB = { file_of, NULL, ROWS, 4 };

/* A copy record: one mapping, the stack words given. */
static struct bt_raw_stack_copy *make(uint64_t pc, uint64_t sp, uint64_t bp, uint32_t nframes, const uint64_t *w,
				      uint32_t nw, size_t *len)
{
	*len = sizeof(struct bt_raw_stack_copy) + sizeof(struct bt_unwind_map) + nw * 8;
	struct bt_raw_stack_copy *c = calloc(1, *len);
	c->pc = pc;
	c->sp = sp;
	c->bp = bp;
	c->nframes = nframes;
	c->nmaps = 1;
	c->len = (uint16_t)(nw * 8);
	struct bt_unwind_map m = { .start = BASE, .len = 0x1000, .off = 0x1000, .ino = 42, .dev = 7, .kind = BT_UMAP_FILE };
	memcpy(c->data, &m, sizeof(m));
	memcpy(c->data + sizeof(m), w, nw * 8);
	return c;
}
#define PC(off) (BASE + (off) - 0x1000) /* the address of file offset off */

/* The stop frame is the leaf in a function with rbp saved (rows 0x1100):
 * its caller, with no row, goes by frame pointers to a caller that is
 * outermost. */
static void test_complete(void)
{
	/* SP0: [0] saved rbp (SP0 + 0x20), [1] ret -> 0x1250 (no row),
	 * ... [4] caller's saved rbp = 0, [5] ret -> 0x1350 (outermost) */
	uint64_t w[8] = { SP0 + 0x20, PC(0x1250), 0, 0, 0, PC(0x1350), 0, 0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1150), SP0, 0x1234, 1, w, 8, &len);
	struct bt_copy_walk out;

	CHECK(bt_copy_walk(c, len, &TB, BT_MAX_FRAMES - 1, 0, &out) == BT_COPYW_DONE, "as described above");
	CHECK(out.why == 0, "complete, not %u", out.why);
	CHECK(out.n == 2, "two frames after the stop, not %u", out.n);
	CHECK(out.fr[0].ip == PC(0x1250) && out.fr[1].ip == PC(0x1350), "as described above");
	CHECK(out.fr[0].ino == 42 && out.fr[0].dev_off == (7ull | 0x1250ull << 32), "frame in its file at its offset");
	free(c);
}

/* A return address is looked up at pc - 1: a call at the end of the
 * rsp + 8 range, returning to the first byte of the next row's range,
 * is unwound with its own row. */
static void test_return_address_minus_one(void)
{
	/* stop at a non-leaf frame (nframes 2) whose pc is 0x1100: pc - 1
	 * is in the CFA = rsp + 8 range: its caller's return address at [0] */
	uint64_t w[2] = { PC(0x1350), 0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1100), SP0, 0, 2, w, 2, &len);
	struct bt_copy_walk out;

	CHECK(bt_copy_walk(c, len, &TB, BT_MAX_FRAMES - 2, 0, &out) == BT_COPYW_DONE, "as described above");
	CHECK(out.why == 0 && out.n == 1 && out.fr[0].ip == PC(0x1350), "why %u n %u", out.why, out.n);
	free(c);
}

static void test_table_not_built(void)
{
	uint64_t w[2] = { PC(0x1350), 0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1050), SP0, 0, 1, w, 2, &len);
	struct bt_copy_walk out;

	have_table = 0;
	CHECK(bt_copy_walk(c, len, &TB, 126, 0, &out) == BT_COPYW_WAIT, "waits for the table");
	CHECK(bt_copy_walk(c, len, &TB, 126, 1, &out) == BT_COPYW_DONE && out.why == BT_WHY_NO_TABLE && !out.n,
	      "given up: cut, no table");
	have_table = 1;
	free(c);
}

static void test_copy_ends(void)
{
	/* CFA = rsp + 16: the return address at SP0 + 8, past a one-word copy */
	uint64_t w[1] = { SP0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1150), SP0, 0, 1, w, 1, &len);
	struct bt_copy_walk out;

	CHECK(bt_copy_walk(c, len, &TB, 126, 0, &out) == BT_COPYW_DONE && out.why == BT_WHY_COPY_SHORT,
	      "the copy ended: %u", out.why);
	free(c);
}

static void test_bounds(void)
{
	/* a chain of rsp + 8 frames longer than the frames allowed */
	uint64_t w[16];
	for (int i = 0; i < 16; i++)
		w[i] = PC(0x1010);
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1050), SP0, 0, 1, w, 16, &len);
	struct bt_copy_walk out;

	CHECK(bt_copy_walk(c, len, &TB, 3, 0, &out) == BT_COPYW_DONE && out.why == BT_WHY_DEPTH && out.n == 3,
	      "depth bound: %u frames, why %u", out.n, out.why);
	/* a return address in no mapping: junk, not a frame */
	w[0] = 0x10;
	free(c);
	c = make(PC(0x1050), SP0, 0, 1, w, 16, &len);
	CHECK(bt_copy_walk(c, len, &TB, 126, 0, &out) == BT_COPYW_DONE && out.why == BT_WHY_NO_MAP && !out.n, "as described above");
	/* a table whose rows lie past the array is not read */
	table_first = 2;
	CHECK(bt_copy_walk(c, len, &TB, 126, 0, &out) == BT_COPYW_DONE && out.why == BT_WHY_BAD_FRAME,
	      "rows out of the array: no row, rbp 0 is no frame pointer: %u", out.why);
	table_first = 0;
	/* records whose counts overrun them */
	CHECK(bt_copy_walk(c, len - 1, &TB, 126, 0, &out) == -EINVAL, "as described above");
	c->nmaps = BT_UNWIND_MAPS + 1;
	CHECK(bt_copy_walk(c, len + 65536, &TB, 126, 0, &out) == -EINVAL, "as described above");
	c->nmaps = 1;
	c->nframes = 0;
	CHECK(bt_copy_walk(c, len, &TB, 126, 0, &out) == -EINVAL, "as described above");
	CHECK(bt_copy_walk(c, 10, &TB, 126, 0, &out) == -EINVAL, "as described above");
	free(c);
}

/* A cut user stack's definition (one frame: the stop) and its copy. */
#define TGID 0x7ffffff0u /* no such process: frames named from nothing else */
static void define_cut(struct bt_stack_table *t, uint64_t hash)
{
	union {
		struct bt_raw_stack_def d;
		__u64 raw[(sizeof(struct bt_raw_stack_def) + 3 * 8) / 8];
	} m;

	memset(&m, 0, sizeof(m));
	m.d.h.type = BT_RAW_STACK_DEF;
	m.d.h.tgid = TGID;
	m.d.hash = hash;
	m.d.nframes = 1;
	m.d.flags = BT_STACKDEF_USER | BT_STACKDEF_FILES | BT_STACKDEF_COPY | BT_STACKDEF_CUT_BY(BT_CUT_NO_TABLE);
	m.d.ips[0] = PC(0x1150);
	m.d.ips[2] = BT_FRAME_NO_FILE;
	bt_stack_table_define(t, &m.d, sizeof(m));
}

static void test_finished_in_table(void)
{
	uint64_t w[8] = { SP0 + 0x20, PC(0x1250), 0, 0, 0, PC(0x1350), 0, 0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1150), SP0, 0x1234, 1, w, 8, &len);
	struct bt_stack_table *t = bt_stack_table_new(64);
	struct bt_stack_copies *q = bt_stack_copies_new(&TB);
	struct bt_stack_copy_counts n;
	struct bt_dump_stacks s = { 0 };

	REQUIRE(t && q, "tables");
	uint32_t id = bt_stack_table_ref(t, 0x1111);
	define_cut(t, 0x1111);
	c->h.tgid = TGID;
	c->hash = 0x1111;
	have_table = 0;
	bt_stack_copies_add(q, c, (uint32_t)len);
	bt_stack_copies_pass(q, t, 1);
	bt_stack_copies_counts(q, &n);
	CHECK(n.received == 1 && n.waiting == 1 && !n.done, "waits for its table: %lu waiting", (unsigned long)n.waiting);
	have_table = 1;
	bt_stack_copies_pass(q, t, 1);
	bt_stack_copies_counts(q, &n);
	CHECK(n.done == 1 && !n.waiting && !n.cut, "finished: %lu done", (unsigned long)n.done);
	REQUIRE(bt_stack_table_snapshot(t, &s) == 0, "snapshot");
	const struct bt_dump_stack *k = &s.stacks[id - 1];
	CHECK(k->nframes == 3 && !(k->flags & BT_STACK_F_TRUNCATED), "3 frames, not cut: %u, flags %#x", k->nframes,
	      k->flags);
	bt_stack_snapshot_free(&s);
	/* a copy whose stack is not in the table (reclaimed): counted, not applied */
	c->hash = 0x2222;
	bt_stack_copies_add(q, c, (uint32_t)len);
	bt_stack_copies_add(q, c, 20); /* cut short: malformed */
	bt_stack_copies_pass(q, t, 1);
	bt_stack_copies_counts(q, &n);
	CHECK(n.gone == 1 && n.bad == 1 && n.received == 3 && !n.waiting, "gone %lu bad %lu", (unsigned long)n.gone,
	      (unsigned long)n.bad);
	bt_stack_copies_free(q);
	bt_stack_table_free(t);
	free(c);
}

/* The path source: this test's own binary is the file (dev, ino) */
static int path_of(void *arg, uint64_t dev, uint64_t ino, char *buf, size_t size)
{
	(void)arg;
	if (dev != real_dev || ino != real_ino)
		return -1;
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* The walk stopped at a file whose table was not built, in a process gone
 * before the recorder knew the file's path: its frame was defined unnamed
 * (CI: 6-16 of ~200 short processes' samples "[unknown] (anonymous)").
 * Finished from the copy, whose mappings place it, it is named with the
 * frames after it. */
static void test_stop_frame_named(void)
{
	struct stat st;
	REQUIRE(stat("/proc/self/exe", &st) == 0, "stat");
	real_ino = st.st_ino;
	real_dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
	uint64_t w[8] = { SP0 + 0x20, PC(0x1250), 0, 0, 0, PC(0x1350), 0, 0 };
	size_t len;
	struct bt_raw_stack_copy *c = make(PC(0x1150), SP0, 0x1234, 1, w, 8, &len);
	struct bt_unwind_map *m = (struct bt_unwind_map *)c->data;
	m->ino = real_ino;
	m->dev = real_dev;
	struct bt_stack_table *t = bt_stack_table_new(64);
	struct bt_stack_copies *q = bt_stack_copies_new(&TB);
	struct bt_dump_stacks s = { 0 };

	REQUIRE(t && q, "tables");
	uint32_t id = bt_stack_table_ref(t, 0x3333);
	define_cut(t, 0x3333); /* its frame: no file known */
	bt_stack_table_set_path_source(t, path_of, NULL); /* the path, known from now on */
	c->h.tgid = TGID;
	c->hash = 0x3333;
	have_table = 1;
	bt_stack_copies_add(q, c, (uint32_t)len);
	bt_stack_copies_pass(q, t, 1);
	REQUIRE(bt_stack_table_snapshot(t, &s) == 0, "snapshot");
	const struct bt_dump_stack *k = &s.stacks[id - 1];
	REQUIRE(k->nframes == 3, "3 frames: %u", k->nframes);
	const struct bt_dump_frame *f = &s.frames[k->first];
	CHECK(f[0].map != BT_DMAP_NONE && f[0].off == 0x1150, "the stop frame named from the copy: map %u off %#" PRIx64,
	      f[0].map, f[0].off);
	CHECK(f[1].map == f[0].map && f[2].map == f[0].map, "its callers in the same file");
	bt_stack_snapshot_free(&s);
	bt_stack_copies_free(q);
	bt_stack_table_free(t);
	free(c);
	real_ino = real_dev = 0;
}

int main(void)
{
	RUN(test_complete);
	RUN(test_return_address_minus_one);
	RUN(test_table_not_built);
	RUN(test_copy_ends);
	RUN(test_bounds);
	RUN(test_finished_in_table);
	RUN(test_stop_frame_named);
	return h_done();
}
