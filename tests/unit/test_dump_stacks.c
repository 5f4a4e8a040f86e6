// SPDX-License-Identifier: MIT
/*
 * test_dump_stacks.c - the stack table of a dump (section STKP, and STCK
 * from earlier recorders; user/dump/dump_stacks.c): a round trip through a
 * whole dump file (events naming stacks, mappings, symbols, counters), and
 * hostile sections of both forms refused with one line: every length,
 * count, varint, index and string offset is checked.
 *
 * The source lines (section SLOC, user/dump/dump_srclocs.c) the same way,
 * and their text under a stack (a return address looked up one byte back).
 *
 * BTRACE_WRITE_SEEDS=DIR writes a dump with stacks and one with a damaged
 * stack table to DIR as fuzzer seeds (tests/fuzz/seeds/fuzz_dump).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "dump_fixture.h"
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"
#include "dump_stacks.h"
#include "report_stacks.h"

#define NCPUS 2

static char tmpdir[256];

/* 2 maps, 3 symbols, 3 stacks: kernel (2 frames), user (3 frames, one
 * unmapped), undefined. */
static struct bt_dump_frame frames[5] = {
	{ BT_DMAP_KERNEL, 1, 0xffffffff81000010ull },
	{ BT_DMAP_KERNEL, 0, 0xffffffff81000200ull },
	{ 1, 2, 0x1130 },
	{ 2, 3, 0x2210 },
	{ BT_DMAP_NONE, 0, 0x7fff0000 },
};
static struct bt_dump_stack stacks[3] = {
	{ 0, BT_STACK_KERNEL, 0, 2, 0 },
	{ 4242, BT_STACK_USER, BT_STACK_F_TRUNCATED, 3, 2 },
	{ 0, BT_STACK_USER, BT_STACK_F_UNDEFINED, 0, 5 },
};
static struct bt_dump_map maps[2] = {
	{ "/usr/bin/app", BT_DMAP_DELETED, 0x801, 1234, { 0xab, 0xcd }, 2 },
	{ "/lib/libx.so.1", 0, 0x801, 99, { 0 }, 0 },
};
static struct bt_dump_sym syms[3] = {
	{ "schedule", BT_DMAP_KERNEL, 0xffffffff81000000ull, 0x100 },
	{ "hot_a", 1, 0x1100, 0x80 },
	{ "ns::f(int)", 2, 0x2200, 0x40 },
};

/* Source lines: the user stack's innermost frame is in inner_fn inlined
 * into hot_a; its second frame, a return address (0x2210), is looked up at
 * 0x220f. */
static struct bt_dump_srcloc locs[2] = {
	{ 1, 2, 0x1130, 0 },
	{ 2, 1, 0x220f, 2 },
};
static struct bt_dump_srcline lines[3] = {
	{ "src/app.c", "inner_fn", 12, 5 },
	{ "src/app.c", "hot_a", 40, 0 },
	{ "/usr/src/x/x.cc", "ns::f(int)", 7, 3 },
};

static int hostile_comm; /* the process's name has control bytes */

static struct bt_dump_stacks fixture(void)
{
	struct bt_dump_stacks s = { .nstacks = 3, .nmaps = 2, .nsyms = 3, .nframes = 5, .stacks = stacks,
				    .frames = frames, .maps = maps, .syms = syms, .nlocs = 2, .nlines = 3,
				    .locs = locs, .lines = lines };
	for (int i = 0; i < BT_STKC_MAX; i++)
		s.counters[i] = 100 + (uint64_t)i;
	return s;
}

static int write_fixture_stacks(void *ctx, struct bt_dump_sink *sink)
{
	struct bt_dump_stacks s = fixture();
	(void)ctx;
	return bt_dump_sink_stacks(sink, &s);
}

/* A dump with 4 CPU samples naming (kstack, ustack) = (1, 2), one lost
 * user stack, and the fixture's table; kstack_of_last sets the last
 * sample's kernel stack id (to make it dangle). */
static int write_dump(const char *path, uint32_t kstack_of_last, int with_table)
{
	struct bt_config cfg = { .size = 64 << 10, .block_size = 1024, .ncores = NCPUS };
	char err[256];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	uint64_t drops[NCPUS * BT_GROUP_MAX] = { 0 };
	struct bt_task task = { .tid = 4242, .tgid = 4242, .comm = "app" };
	if (hostile_comm)
		memcpy(task.comm, "a\nFAKE\033[1m", 11);
	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < 4; i++) {
		struct bt_ev_sample e = { .h = { .ts_ns = 1000000 + i, .seq = i, .tid = 4242, .tgid = 4242, .cpu = 0,
						 .type = BT_EV_CPU_SAMPLE },
					  .kstack = i == 3 ? kstack_of_last : 1, .ustack = i == 2 ? BT_STACK_LOST : 2 };
		if (fx_store(b, 0, &e.h, sizeof(e)))
			return -EIO;
	}
	struct bt_dump_info info = { .ncpus = NCPUS, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .tasks = &task,
				     .ntasks = 1, .dump_seq = 1, .reason = "test",
				     .groups_enabled = 1u << BT_GROUP_STACKS,
				     .write_stacks = with_table ? write_fixture_stacks : NULL };
	int r = bt_dump_write(b, &info, NULL, path, 0, NULL, 0, NULL, err, sizeof(err));
	if (r)
		fprintf(stderr, "  bt_dump_write: %s\n", err);
	bt_buffer_destroy(b);
	return r;
}

static void test_round_trip(void)
{
	char path[300], err[256];
	snprintf(path, sizeof(path), "%s/ok.btd", tmpdir);
	REQUIRE(write_dump(path, 1, 1) == 0, "write");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	REQUIRE(s, "no stack table");
	CHECK(s->nstacks == 3 && s->nmaps == 2 && s->nsyms == 3 && s->nframes == 5, "counts %u %u %u", s->nstacks,
	      s->nmaps, s->nsyms);
	for (int i = 0; i < BT_STKC_MAX; i++)
		CHECK(s->counters[i] == 100 + (uint64_t)i, "counter %d", i);
	CHECK(strcmp(s->maps[0].path, "/usr/bin/app") == 0 && s->maps[0].flags == BT_DMAP_DELETED &&
		      s->maps[0].ino == 1234 && s->maps[0].build_id_len == 2 && s->maps[0].build_id[1] == 0xcd,
	      "map 0");
	CHECK(strcmp(s->syms[2].name, "ns::f(int)") == 0 && s->syms[2].map == 2 && s->syms[2].start == 0x2200,
	      "sym 2");
	CHECK(s->stacks[1].tgid == 4242 && s->stacks[1].kind == BT_STACK_USER &&
		      s->stacks[1].flags == BT_STACK_F_TRUNCATED && s->stacks[1].nframes == 3,
	      "stack 2");
	CHECK(s->stacks[2].flags == BT_STACK_F_UNDEFINED && !s->stacks[2].nframes, "stack 3 undefined");
	const struct bt_dump_frame *f = &s->frames[s->stacks[1].first];
	CHECK(f[0].map == 1 && f[0].sym == 2 && f[0].off == 0x1130 && f[2].map == BT_DMAP_NONE, "frames");
	CHECK(s->nlocs == 2 && s->nlines == 3, "%u locations, %llu lines", s->nlocs, (unsigned long long)s->nlines);
	const struct bt_dump_srcloc *l = bt_dump_srcloc_find(s, 2, 0x220f);
	CHECK(l && l->nlines == 1 && strcmp(s->lines[l->first].file, "/usr/src/x/x.cc") == 0 &&
		      s->lines[l->first].line == 7 && s->lines[l->first].col == 3 &&
		      strcmp(s->lines[l->first].func, "ns::f(int)") == 0,
	      "location of map 2");
	CHECK(!bt_dump_srcloc_find(s, 2, 0x2210) && !bt_dump_srcloc_find(s, 1, 0x220f), "no location elsewhere");
	/* the text under an event: the inlined call above its frame, return
	 * addresses' lines found one byte back */
	char *txt = NULL;
	size_t tl = 0;
	FILE *m = open_memstream(&txt, &tl);
	bt_print_stack(m, s, 2, "|", 0);
	fclose(m);
	CHECK(txt && strstr(txt, "|[inlined] inner_fn app.c:12\n|hot_a+0x30 (app) app.c:40\n|ns::f(int)+0x10 (libx.so.1) x.cc:7\n"),
	      "stack text:\n%s", txt ? txt : "");
	free(txt);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	CHECK(n == 4, "%zu events", n);
	if (n == 4) {
		const struct bt_ev_sample *e = (const void *)ev[2].ev;
		CHECK(ev[2].ev->type == BT_EV_CPU_SAMPLE && e->kstack == 1 && e->ustack == BT_STACK_LOST, "sample");
	}
	bt_dump_close(d);
}

static void test_dangling_id_refused(void)
{
	char path[300], err[256];
	snprintf(path, sizeof(path), "%s/dangling.btd", tmpdir);
	REQUIRE(write_dump(path, 9, 1) == 0, "write");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	CHECK(!d && strstr(err, "names stack 9, the stack table has 3"), "err: %s", d ? "(opened)" : err);
	bt_dump_close(d);
	/* a user stack named as a kernel one */
	snprintf(path, sizeof(path), "%s/kind.btd", tmpdir);
	REQUIRE(write_dump(path, 2, 1) == 0, "write");
	d = bt_dump_open(path, err, sizeof(err));
	CHECK(!d && strstr(err, "as a kernel stack"), "err: %s", d ? "(opened)" : err);
	bt_dump_close(d);
	/* a stack whose frames never arrived has no kind: an event of either
	 * kind may name it (stack 3: undefined, kind 1 as written) */
	snprintf(path, sizeof(path), "%s/undef.btd", tmpdir);
	REQUIRE(write_dump(path, 3, 1) == 0, "write");
	d = bt_dump_open(path, err, sizeof(err));
	CHECK(d, "a kernel-stack reference to an undefined stack opens: %s", d ? "" : err);
	bt_dump_close(d);
	/* events with stacks and no table at all */
	snprintf(path, sizeof(path), "%s/notable.btd", tmpdir);
	REQUIRE(write_dump(path, 1, 0) == 0, "write");
	d = bt_dump_open(path, err, sizeof(err));
	CHECK(!d && strstr(err, "no stack table"), "err: %s", d ? "(opened)" : err);
	bt_dump_close(d);
}

/* The payload offsets of the fixture's encoding. */
#define HDR 32u
#define COUNTERS (8u * BT_STKC_MAX)
#define MAPS (HDR + COUNTERS)
#define SYMS (MAPS + 2 * 48u)
#define STACKS (SYMS + 3 * 24u)
#define FRAMES (STACKS + 3 * 16u)
#define STRTAB (FRAMES + 5 * 16u)

struct damage {
	const char *what, *expect;
	uint32_t off;   /* where to write */
	uint64_t val;   /* what (little-endian, `width` bytes) */
	unsigned width;
	int cut;        /* or: cut this many bytes off the end; -1 keep 16 bytes, -2 unterminate the
			 * strings, -3 swap the two 16-byte records at off */
};

static const struct damage damages[] = {
	{ "short", "shorter than its header", 0, 0, 0, -1 },
	{ "one byte less", "its counts need", 0, 0, 0, 1 },
	{ "huge stack count", "counts out of range", 0, 1u << 30, 4, 0 },
	{ "frames count mismatch", "its counts need", 16, 6, 8, 0 },
	{ "map path past the string table", "mapping 0: bad path offset", MAPS, 1u << 20, 4, 0 },
	{ "build-id too long", "mapping 1: bad", MAPS + 48 + 24, 21, 4, 0 },
	{ "symbol name past the string table", "symbol 1: bad name offset", SYMS + 24, 1u << 20, 4, 0 },
	{ "symbol in no mapping", "symbol 2: bad name offset or mapping 7", SYMS + 48 + 4, 7, 4, 0 },
	{ "stack kind 5", "stack 1: bad kind 5", STACKS + 4, 5, 2, 0 },
	{ "stack flags", "stack 2: bad kind 1, flags 0x81", STACKS + 16 + 6, 0x81, 2, 0 },
	{ "too many frames", "stack 1: bad kind", STACKS + 8, 600, 4, 0 },
	{ "frames past the header's", "stack 2: bad kind", STACKS + 16 + 8, 4, 4, 0 },
	{ "user mapping in a kernel stack", "stack 1 frame 0: mapping 1", FRAMES, 1, 4, 0 },
	{ "mapping past the table", "stack 2 frame 1: mapping 3", FRAMES + 3 * 16, 3, 4, 0 },
	{ "symbol past the table", "stack 2 frame 0: mapping 1 or symbol 9", FRAMES + 2 * 16 + 4, 9, 4, 0 },
	{ "symbol of another mapping", "stack 2 frame 0: mapping 1 or symbol 3", FRAMES + 2 * 16 + 4, 3, 4, 0 },
	{ "string table without NUL", "not NUL-terminated", 0, 0, 0, -2 },
};

static void damage(uint8_t *p, uint64_t *len, const struct damage *dm)
{
	if (dm->cut == -1)
		*len = 16;
	else if (dm->cut == -2)
		p[*len - 1] = 'x';
	else if (dm->cut == -3) {
		uint8_t t[16];
		memcpy(t, p + dm->off, 16);
		memmove(p + dm->off, p + dm->off + 16, 16);
		memcpy(p + dm->off + 16, t, 16);
	}
	else if (dm->cut)
		*len -= (uint64_t)dm->cut;
	else
		memcpy(p + dm->off, &dm->val, dm->width);
}

typedef int (*stacks_decoder)(const uint8_t *, uint64_t, struct bt_dump_stacks *, char *, size_t);

/* Each damage of the encoded section p refused by decode with its line
 * (after `prefix`), nothing kept; the decoded table starts with nmaps
 * mappings (SLOC is checked against them). */
static void refused_all(const uint8_t *p, int64_t len, const struct damage *dm, size_t n,
			stacks_decoder decode, uint32_t nmaps,
			const char *prefix)
{
	struct bt_dump_stacks out;
	char err[256];

	for (size_t i = 0; i < n; i++) {
		uint8_t *q = malloc((size_t)len);
		uint64_t ql = (uint64_t)len;
		memcpy(q, p, (size_t)len);
		damage(q, &ql, &dm[i]);
		memset(&out, 0, sizeof(out));
		out.nmaps = nmaps;
		err[0] = 0;
		int r = decode(q, ql, &out, err, sizeof(err));
		CHECK(r == -EBADMSG && strstr(err, prefix) && strstr(err, dm[i].expect), "%s: r=%d err='%s'", dm[i].what,
		      r, err);
		CHECK(!out.stacks && !out.frames && !out.strtab && !out.locs && !out.lines && !out.loc_strtab &&
			      !out.nlocs,
		      "%s: nothing kept", dm[i].what);
		free(q);
	}
}

static int decode_fixed(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	return bt_dump_stacks_decode(p, len, 0, 1ull << 30, s, err, errlen);
}

static int decode_packed(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen)
{
	return bt_dump_stacks_decode(p, len, 1, 1ull << 30, s, err, errlen);
}

/* Decoded exactly as the fixture: every stack and frame. */
static void check_like_fixture(const struct bt_dump_stacks *o, const char *what)
{
	int same = o->nstacks == 3 && o->nframes == 5 && o->nsyms == 3 && o->nmaps == 2;
	for (uint32_t i = 0; same && i < 3; i++)
		same = o->stacks[i].tgid == stacks[i].tgid && o->stacks[i].kind == stacks[i].kind &&
		       o->stacks[i].flags == stacks[i].flags && o->stacks[i].nframes == stacks[i].nframes &&
		       o->stacks[i].first == stacks[i].first;
	for (uint32_t i = 0; same && i < 5; i++)
		same = o->frames[i].map == frames[i].map && o->frames[i].sym == frames[i].sym &&
		       o->frames[i].off == frames[i].off;
	for (uint32_t i = 0; same && i < 3; i++)
		same = strcmp(o->syms[i].name, syms[i].name) == 0 && o->syms[i].start == syms[i].start;
	CHECK(same, "%s: decoded as encoded", what);
}

/* The fixture's encoding p decodes as the fixture (form `what`), and each
 * damage of it is refused. */
static void clean_then_hostile(const uint8_t *p, int64_t len, stacks_decoder decode, const char *what,
			       const struct damage *dm, size_t n)
{
	struct bt_dump_stacks out;
	char err[256];

	memset(&out, 0, sizeof(out));
	CHECK(decode(p, (uint64_t)len, &out, err, sizeof(err)) == 0, "%s: clean decode: %s", what, err);
	check_like_fixture(&out, what);
	bt_dump_stacks_release(&out);
	refused_all(p, len, dm, n, decode, 0, "corrupt dump: stack table: ");
}

/* STCK, as earlier recorders wrote it: still read, hostile ones refused. */
static void test_hostile_sections(void)
{
	struct bt_dump_stacks s = fixture();
	uint8_t *p = NULL;
	int64_t len = bt_dump_stacks_encode(&s, 0, &p);
	REQUIRE(len > (int64_t)STRTAB, "encode: %lld", (long long)len);
	clean_then_hostile(p, len, decode_fixed, "STCK", damages, sizeof(damages) / sizeof(damages[0]));
	free(p);
}

/* STKP: the fixture's stream, byte by byte (P_STREAM + k):
 *  0 tgid 0, 1 kind|flags<<1 0, 2 nframes 2,
 *  3 sym 1 relative, 4 +0x10; 5 absolute no symbol, 6 map 0, 7-16 off,
 * 17-18 tgid 4242, 19 user|truncated 3, 20 nframes 3,
 * 21 sym 2 relative, 22 +0x30; 23 sym 3 relative, 24 +0x10;
 * 25 absolute no symbol, 26-30 map BT_DMAP_NONE, 31-35 off,
 * 36 tgid 0, 37 user|undefined 5, 38 nframes 0. */
#define P_HDR 40u
#define P_MAPS (P_HDR + COUNTERS)
#define P_SYMS (P_MAPS + 2 * 48u)
#define P_STREAM (P_SYMS + 3 * 24u)
#define P_STREAM_LEN 39u

static const struct damage p_damages[] = {
	{ "short", "shorter than its header", 0, 0, 0, -1 },
	{ "one byte less", "its counts need", 0, 0, 0, 1 },
	{ "huge stack count", "counts out of range", 0, 1u << 30, 4, 0 },
	{ "more frames than the stream can hold", "counts out of range", 16, 1u << 20, 8, 0 },
	{ "stream longer than the section", "its counts need", 32, P_STREAM_LEN + 1, 8, 0 },
	{ "map path past the string table", "mapping 0: bad path offset", P_MAPS, 1u << 20, 4, 0 },
	{ "symbol name past the string table", "symbol 1: bad name offset", P_SYMS + 24, 1u << 20, 4, 0 },
	{ "stack flags", "stack 1: bad kind 0, flags 0x8", P_STREAM + 1, 0x10, 1, 0 },
	{ "frames past the header's", "stack 2: bad kind", 16, 4, 8, 0 },
	{ "symbol past the table", "stack 1 frame 0: symbol beyond the table", P_STREAM + 3, 9 << 1, 1, 0 },
	{ "relative frame without a symbol", "stack 1 frame 0: symbol beyond the table, or relative to none",
	  P_STREAM + 3, 0, 1, 0 },
	{ "user symbol in a kernel stack", "stack 1 frame 0: mapping 1 or symbol 2", P_STREAM + 3, 2 << 1, 1, 0 },
	{ "offset over 64 bits", "stack 1 frame 1: cut short", P_STREAM + 16, 0x02, 1, 0 },
	{ "map over 32 bits", "stack 2 frame 2: cut short", P_STREAM + 30, 0x1f, 1, 0 },
	{ "user map past the table", "stack 2 frame 2: mapping 3", P_STREAM + 26, 3, 5, 0 },
	{ "frames the stacks do not hold", "stacks hold 5 frames, the header says 6", 16, 6, 8, 0 },
	{ "a number that never ends", "stack 3: cut short", P_STREAM + 38, 0x80, 1, 0 },
	{ "stream left over", "3 bytes of stacks left over", 0, 2, 4, 0 },
	{ "string table without NUL", "not NUL-terminated", 0, 0, 0, -2 },
};

static void test_packed(void)
{
	struct bt_dump_stacks s = fixture(), out;
	uint8_t *p = NULL, *f = NULL;
	char err[256];
	int64_t len = bt_dump_stacks_encode(&s, 1, &p), flen = bt_dump_stacks_encode(&s, 0, &f);
	REQUIRE(len > (int64_t)P_STREAM, "encode: %lld", (long long)len);
	uint64_t slen;
	memcpy(&slen, p + 32, 8);
	CHECK(slen == P_STREAM_LEN && p[P_STREAM + 4] == 0x10 && p[P_STREAM + 22] == 0x30,
	      "the stream as laid out above (%llu bytes)", (unsigned long long)slen);
	CHECK(len < flen, "packed %lld bytes, fixed %lld", (long long)len, (long long)flen);
	clean_then_hostile(p, len, decode_packed, "STKP", p_damages, sizeof(p_damages) / sizeof(p_damages[0]));
	/* what it decodes to has the body's bound (2 bytes a frame become 16):
	 * 5 frames and 3 stacks take 152 bytes */
	memset(&out, 0, sizeof(out));
	CHECK(bt_dump_stacks_decode(p, (uint64_t)len, 1, 151, &out, err, sizeof(err)) == -EBADMSG &&
		      strstr(err, "MiB decoded") && !out.stacks,
	      "over the bound decoded: %s", err);
	memset(&out, 0, sizeof(out));
	CHECK(bt_dump_stacks_decode(p, (uint64_t)len, 1, 152, &out, err, sizeof(err)) == 0, "at the bound: %s", err);
	bt_dump_stacks_release(&out);
	/* each format's payload refused as the other */
	memset(&out, 0, sizeof(out));
	CHECK(decode_fixed(p, (uint64_t)len, &out, err, sizeof(err)) == -EBADMSG, "STKP read as STCK refused");
	memset(&out, 0, sizeof(out));
	CHECK(decode_packed(f, (uint64_t)flen, &out, err, sizeof(err)) == -EBADMSG, "STCK read as STKP refused");
	/* a dump's stacks may skip frames of the pool (stack_symbols.c drops
	 * the recorder's own and those past a thread's root): written from
	 * each stack's first, read back contiguous */
	struct bt_dump_frame pool[7] = { { 1, 0, 0x999 }, frames[0], frames[1], { 1, 0, 0x998 },
					 frames[2], frames[3], frames[4] };
	struct bt_dump_stack gap[3];
	memcpy(gap, stacks, sizeof(gap));
	gap[0].first = 1;
	gap[1].first = 4;
	gap[2].first = 7;
	s.frames = pool;
	s.stacks = gap;
	uint8_t *g = NULL;
	int64_t glen = bt_dump_stacks_encode(&s, 1, &g);
	memset(&out, 0, sizeof(out));
	CHECK(glen > 0 && decode_packed(g, (uint64_t)glen, &out, err, sizeof(err)) == 0, "gaps: decode: %s",
	      glen > 0 ? err : "encode failed");
	if (out.stacks)
		check_like_fixture(&out, "stacks with gaps in the pool");
	bt_dump_stacks_release(&out);
	free(g);
	s.frames = frames;
	s.stacks = stacks;
	/* the encoder refuses what the decoder would read otherwise */
	struct bt_dump_frame bad = frames[2];
	bad.map = 2; /* symbol 2 is in mapping 1 */
	struct bt_dump_frame fr2[5];
	memcpy(fr2, frames, sizeof(fr2));
	fr2[2] = bad;
	s.frames = fr2;
	uint8_t *q = NULL;
	CHECK(bt_dump_stacks_encode(&s, 1, &q) == -EINVAL && !q, "a frame off its symbol's mapping refused");
	s.frames = frames;
	s.nframes = 6;
	CHECK(bt_dump_stacks_encode(&s, 1, &q) == -EINVAL && !q, "stacks not adding up to nframes refused");
	free(p);
	free(f);
}

/* SLOC payload offsets of the fixture's encoding. */
#define SL_LOCS 24u
#define SL_LINES (SL_LOCS + 2 * 16u)
#define SL_STRTAB (SL_LINES + 3 * 16u)

static const struct damage sl_damages[] = {
	{ "short", "shorter than its header", 0, 0, 0, -1 },
	{ "one byte less", "its counts need", 0, 0, 0, 1 },
	{ "huge location count", "counts out of range", 4, 1u << 30, 4, 0 },
	{ "more lines than locations hold", "counts out of range", 8, 65, 8, 0 },
	{ "mapping 0", "location 0: mapping 0", SL_LOCS, 0, 4, 0 },
	{ "mapping past the stack table's", "location 1: mapping 3 (of 2)", SL_LOCS + 16, 3, 4, 0 },
	{ "no lines", "location 0: mapping 1 (of 2) or 0 lines", SL_LOCS + 4, 0, 4, 0 },
	{ "too deep", "or 33 lines", SL_LOCS + 4, 33, 4, 0 },
	{ "lines past the header's", "location 1: mapping 2 (of 2) or 2 lines", SL_LOCS + 16 + 4, 2, 4, 0 },
	{ "out of order", "location 1 out of order", SL_LOCS, 0, 0, -3 },
	{ "file past the strings", "line 1: string offset", SL_LINES + 16, 1u << 20, 4, 0 },
	{ "function past the strings", "line 2: string offset", SL_LINES + 32 + 4, 1u << 20, 4, 0 },
	{ "string table without NUL", "not NUL-terminated", 0, 0, 0, -2 },
};

static void test_hostile_srclocs(void)
{
	struct bt_dump_stacks s = fixture();
	uint8_t *p = NULL;
	int64_t len = bt_dump_srclocs_encode(&s, &p);
	REQUIRE(len > (int64_t)SL_STRTAB, "encode: %lld", (long long)len);
	struct bt_dump_stacks out;
	char err[256];
	memset(&out, 0, sizeof(out));
	out.nmaps = 2;
	CHECK(bt_dump_srclocs_decode(p, (uint64_t)len, &out, err, sizeof(err)) == 0, "clean decode: %s", err);
	CHECK(out.nlocs == 2 && out.nlines == 3 && strcmp(out.lines[1].func, "hot_a") == 0 &&
		      out.lines[0].file == out.lines[1].file,
	      "decoded (a file stored once)");
	bt_dump_stacks_release(&out);
	refused_all(p, len, sl_damages, sizeof(sl_damages) / sizeof(sl_damages[0]), bt_dump_srclocs_decode, 2,
		    "corrupt dump: source lines: ");
	/* a newer version is skipped, not refused: the dump still reads */
	uint8_t *q = malloc((size_t)len);
	memcpy(q, p, (size_t)len);
	q[0] = 2;
	memset(&out, 0, sizeof(out));
	out.nmaps = 2;
	CHECK(bt_dump_srclocs_decode(q, (uint64_t)len, &out, err, sizeof(err)) == 0 && !out.nlocs && !out.locs,
	      "version 2 skipped");
	free(q);
	/* the encoder refuses lines out of their locations' order */
	struct bt_dump_srcloc bad_locs[2] = { { 1, 2, 0x1130, 1 }, { 2, 1, 0x220f, 0 } };
	s.locs = bad_locs;
	uint8_t *pb = NULL;
	CHECK(bt_dump_srclocs_encode(&s, &pb) == -EINVAL && !pb, "encoder refuses misordered lines");
	free(p);
}

/* Names from a hostile user's files and process (issue 28): a symbol with
 * ESC[2J and a newline, a mapped file and a process name with control
 * bytes. What the report views print of them must be escaped. */
static void hostile_names(int on)
{
	static const char *const saved[3] = { "hot_a", "/usr/bin/app", "app" };
	syms[1].name = on ? "\033[2J\nFAKE" : saved[0];
	maps[0].path = on ? "/tmp/\033]0;x\a\r" : saved[1];
	hostile_comm = on;
}

static void test_hostile_names(void)
{
	char path[300], err[256], *buf = NULL;
	size_t len = 0;
	struct bt_stack_filter f = { 0 };

	snprintf(path, sizeof(path), "%s/hostile-names.btd", tmpdir);
	hostile_names(1);
	int w = write_dump(path, 1, 1);
	hostile_names(0);
	REQUIRE(w == 0, "write");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	FILE *m = open_memstream(&buf, &len);
	bt_report_profile(d, &f, m);
	bt_report_folded(d, &f, m);
	bt_print_stack(m, bt_dump_stacks(d), 2, "|", 0);
	fclose(m);
	int raw = 0, forged = 0;
	for (size_t i = 0; i < len; i++) {
		raw |= buf[i] == 033 || buf[i] == '\a' || buf[i] == '\r';
		forged |= (i == 0 || buf[i - 1] == '\n') && !strncmp(buf + i, "FAKE", 4);
	}
	CHECK(!raw && !forged && strstr(buf, "\\x1b[2J\\nFAKE"),
	      "--profile, --folded, --stacks print hostile names escaped:\n%s", buf);
	free(buf);
	bt_dump_close(d);
}

/* A dump an earlier recorder wrote (STCK, committed as a fuzzer seed):
 * still opens, its stacks as the fixture's. */
static void test_earlier_dump(void)
{
	char err[256];
	struct bt_dump *d = bt_dump_open("tests/fuzz/seeds/fuzz_dump/seed-stacks.btd", err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	REQUIRE(s, "no stack table");
	check_like_fixture(s, "an STCK dump");
	bt_dump_close(d);
}

/* Why a stack was cut (STKW) and how frames are spelled: a versioned
 * symbol without its version (kept by --stacks -v), an address outside
 * every file as "[unknown] (anonymous)", "[truncated: no mapping]" under
 * --stacks and as the outermost frame of --folded and --profile. */
static void reasons(int on)
{
	stacks[1].flags = (uint16_t)(BT_STACK_F_TRUNCATED | (on ? BT_STACK_F_WHY(BT_WHY_NO_MAP) : 0));
	syms[2].name = on ? "ns::f(int)@@GLIBC_2.17" : "ns::f(int)";
}

static void test_truncation_reasons(void)
{
	char path[300], err[256], *buf = NULL;
	size_t len = 0;
	struct bt_stack_filter f = { 0 };

	snprintf(path, sizeof(path), "%s/reasons.btd", tmpdir);
	reasons(1);
	int w = write_dump(path, 1, 1);
	/* STKP keeps only the flags an earlier reader knows */
	struct bt_dump_stacks fx = fixture(), out = { 0 };
	uint8_t *p = NULL;
	int64_t plen = bt_dump_stacks_encode(&fx, 1, &p);
	CHECK(plen > 0 && bt_dump_stacks_decode(p, (uint64_t)plen, 1, 1 << 20, &out, err, sizeof(err)) == 0 &&
		      out.stacks[1].flags == BT_STACK_F_TRUNCATED,
	      "STKP alone: flags 0x%x", out.nstacks > 1 ? out.stacks[1].flags : 0);
	free(p);
	/* STKW: clean, then damaged (nothing changed when refused) */
	int64_t wlen = bt_dump_stackwhy_encode(&fx, &p);
	reasons(0);
	REQUIRE(w == 0 && wlen == 16, "write, %lld bytes of reasons", (long long)wlen);
	CHECK(bt_dump_stackwhy_decode(p, 16, &out, err, sizeof(err)) == 0 &&
		      out.stacks[1].flags == (BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_WHY_NO_MAP)),
	      "STKW decoded: %s", err);
	out.stacks[1].flags = BT_STACK_F_TRUNCATED;
	static const struct {
		uint32_t at, val;
		const char *what;
	} dm[] = { { 8, 0, "stack 0" }, { 8, 4, "stack beyond the table" }, { 12, 0, "reason 0" },
		   { 12, 256, "reason over 255" }, { 4, 2, "count over the length" } };
	for (size_t i = 0; i < sizeof(dm) / sizeof(dm[0]); i++) {
		uint8_t q[16];
		memcpy(q, p, 16);
		memcpy(q + dm[i].at, &dm[i].val, 4);
		CHECK(bt_dump_stackwhy_decode(q, 16, &out, err, sizeof(err)) == -EBADMSG &&
			      strstr(err, "truncation reasons") && out.stacks[1].flags == BT_STACK_F_TRUNCATED,
		      "%s refused: %s", dm[i].what, err);
	}
	uint8_t q[16];
	memcpy(q, p, 16);
	q[0] = 2; /* a newer version: skipped */
	CHECK(bt_dump_stackwhy_decode(q, 16, &out, err, sizeof(err)) == 0 && out.stacks[1].flags == BT_STACK_F_TRUNCATED,
	      "a newer STKW skipped");
	free(p);
	bt_dump_stacks_release(&out);
	char wb[32];
	CHECK(!strcmp(bt_stack_why_text(BT_WHY_NO_ROOT, wb, sizeof(wb)), "walk ended early") &&
		      !strcmp(bt_stack_why_text(200, wb, sizeof(wb)), "reason 200") && !bt_stack_why_text(0, wb, 32),
	      "reason texts");
	CHECK(bt_sym_name_len("clock_nanosleep@@GLIBC_2.17") == 15 && bt_sym_name_len("memcpy@GLIBC_2.2.5") == 6 &&
		      bt_sym_name_len("a@b") == 3 && bt_sym_name_len("f@@GLIBC 2") == 10,
	      "versions stripped, other '@' kept");

	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	const struct bt_dump_stacks *s = bt_dump_stacks(d);
	CHECK(s->stacks[1].flags == (BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_WHY_NO_MAP)) && s->stacks[0].flags == 0,
	      "the dump's reasons: 0x%x 0x%x", s->stacks[1].flags, s->stacks[0].flags);
	FILE *m = open_memstream(&buf, &len);
	bt_print_stack(m, s, 2, "|", 0);
	bt_print_stack(m, s, 2, "v|", 1);
	bt_report_folded(d, &f, m);
	bt_report_profile(d, &f, m);
	bt_report_stack_stats(d, m);
	fclose(m);
	CHECK(buf && strstr(buf, "    truncated stacks by reason: 1 no mapping\n"), "--stats: %s", buf ? buf : "");
	CHECK(buf && strstr(buf, "|ns::f(int)+0x10 (libx.so.1) x.cc:7\n|[unknown] (anonymous) 0x7fff0000\n"
				 "|[truncated: no mapping]\n") &&
		      strstr(buf, "v|ns::f(int)@@GLIBC_2.17+0x10 (libx.so.1+0x2210) x.cc:7\n") &&
		      strstr(buf, "\napp;[truncated: no mapping];[unknown] (anonymous);ns::f(int);hot_a;inner_fn_[i];") &&
		      strstr(buf, "%  [truncated: no mapping]\n") && !strstr(buf, "\n|ns::f(int)@@") &&
		      !strstr(buf, ";ns::f(int)@@"),
	      "--stacks, -v, --folded, --profile:\n%s", buf ? buf : "");
	free(buf);
	bt_dump_close(d);
}

static void write_seeds(const char *dir)
{
	char path[600];
	mkdir(dir, 0755);
	/* (seed-stacks*.btd are STCK, from before STKP: kept as they are) */
	snprintf(path, sizeof(path), "%s/seed-stkp.btd", dir);
	if (write_dump(path, 1, 1))
		fprintf(stderr, "seed %s failed\n", path);
	snprintf(path, sizeof(path), "%s/seed-stkp-dangling.btd", dir);
	if (write_dump(path, 9, 1))
		fprintf(stderr, "seed %s failed\n", path);
	hostile_names(1);
	snprintf(path, sizeof(path), "%s/seed-stkp-hostile-names.btd", dir);
	if (write_dump(path, 1, 1))
		fprintf(stderr, "seed %s failed\n", path);
	hostile_names(0);
	reasons(1);
	snprintf(path, sizeof(path), "%s/seed-stkw.btd", dir);
	if (write_dump(path, 1, 1))
		fprintf(stderr, "seed %s failed\n", path);
	reasons(0);
}

/* UNWL: the binaries that lost their table round trip; damaged lengths,
 * counts and a second section are refused, a newer version skipped. */
static void test_lost_tables(void)
{
	struct bt_dump_unwlost lost[2] = { { "/usr/bin/hostile", "more FDEs than any real program has" },
					   { "/opt/x\033[2J", "--unwind-mem full (its table is over the 10 rows left)" } };
	struct bt_dump_stacks in = { .nlost = 2, .lost = lost }, out = { 0 }, none = { 0 };
	char err[256] = "";
	uint8_t *p = NULL;
	int64_t len = bt_dump_unwlost_encode(&in, &p);

	uint8_t *q0 = NULL;
	CHECK(bt_dump_unwlost_encode(&none, &q0) == 0 && !q0, "nothing lost: no section");
	REQUIRE(len == 8 + (4 + 16 + 35) + (4 + 10 + 54), "encoded %lld bytes", (long long)len);
	CHECK(bt_dump_unwlost_decode(p, (uint64_t)len, &out, err, sizeof(err)) == 0 && out.nlost == 2 &&
		      !strcmp(out.lost[0].path, "/usr/bin/hostile") && !strcmp(out.lost[1].why, lost[1].why),
	      "decoded: %s", err);
	CHECK(bt_dump_unwlost_decode(p, (uint64_t)len, &out, err, sizeof(err)) == -EBADMSG, "a second one refused");
	bt_dump_stacks_release(&out);
	static const struct {
		uint32_t at, val;
		uint64_t len;
		const char *what;
	} dm[] = { { 4, 0, 0, "count 0" }, { 4, 65, 0, "count over 64" }, { 4, 3, 0, "count over the entries" },
		   { 8, 0xffff, 0, "path length past the end" }, { 0, 1, 5, "cut inside the header" },
		   { 0, 1, 20, "cut inside an entry" } };
	for (size_t i = 0; i < sizeof(dm) / sizeof(dm[0]); i++) {
		uint8_t q[256];
		struct bt_dump_stacks o = { 0 };
		memcpy(q, p, (size_t)len);
		if (dm[i].len == 0)
			memcpy(q + dm[i].at, &dm[i].val, dm[i].at == 8 ? 2 : 4);
		CHECK(bt_dump_unwlost_decode(q, dm[i].len ? dm[i].len : (uint64_t)len, &o, err, sizeof(err)) ==
				      -EBADMSG &&
			      !o.lost,
		      "%s refused: %s", dm[i].what, err);
	}
	uint8_t q[256];
	memcpy(q, p, (size_t)len);
	q[0] = 2; /* a newer writer's version */
	CHECK(bt_dump_unwlost_decode(q, (uint64_t)len, &out, err, sizeof(err)) == 0 && !out.lost, "version 2 skipped");
	free(p);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-dump-stacks.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	const char *seeds = getenv("BTRACE_WRITE_SEEDS");
	if (seeds) {
		write_seeds(seeds);
		return 0;
	}
	RUN(test_round_trip);
	RUN(test_dangling_id_refused);
	RUN(test_hostile_sections);
	RUN(test_packed);
	RUN(test_earlier_dump);
	RUN(test_hostile_srclocs);
	RUN(test_hostile_names);
	RUN(test_truncation_reasons);
	RUN(test_lost_tables);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		return 1;
	return h_nfail_tests ? 1 : 0;
}
