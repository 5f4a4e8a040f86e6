// SPDX-License-Identifier: MIT
/* test_report_funcs.c - report on function records with a per-thread seq
 * gap (user/report/): `report -p PID` shows the application thread's loss
 * where it is ("TID:N [LOST M EVENTS]"), `report --functions` never calls
 * such counts complete and gives the function records' span as its
 * window, and convert (the JSON export) counts the same calls as complete
 * as --functions pairs, the frames a longjmp left included; a damaged
 * dump gets one error line, naming the file and why, from every reader;
 * the listing's function lines are the general format's, in order with
 * the kernel's lines through a rename, a CPU change and a thread change.
 * Runs $BTRACE_BPF (build/btrace-bpf). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <linux/types.h>
#include "harness.h"
#include "dump_fixture.h"
#include "events.h"
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"

#define APP_PID 600
#define TID 601

static char tmpdir[] = "/tmp/test_report_funcs.XXXXXX";

/* One batch of thread TID (1 ns per tick, 100 ticks apart): kinds and functions. */
static int func_batch(struct bt_buffer *a, uint64_t ts, uint32_t seq, const unsigned *kind, const uint64_t *fn,
		      int n)
{
	return fx_func_batch(a, ts, seq, TID, APP_PID, kind, fn, n);
}

static int block_cb(const struct bt_block_view *blk, void *ctx)
{
	return bt_dump_sink_app_block(ctx, 0, blk);
}

/* The application's function names (AFUN), if a test sets them. */
static const struct bt_func_name *g_names;
static size_t g_nnames;

static int write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_dump_app app = { .pid = APP_PID, .name = "gapapp" };
	struct bt_read_stats st;
	int r = bt_read(ctx, block_cb, s, &st);
	if (r >= 0)
		r = bt_dump_sink_apps(s, &app, 1);
	return r < 0 || !g_nnames ? r : bt_dump_sink_app_funcs(s, 0, g_names, g_nnames);
}

/* A dump whose application has one batch of thread TID at 7 s (seq 0). */
static int one_batch_dump(const char *path, const unsigned *kind, const uint64_t *fn, int n, char *err,
			  size_t errlen)
{
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&cfg, err, errlen), *a = bt_buffer_create(&cfg, err, errlen);
	if (k && a && func_batch(a, 7000000000ull, 0, kind, fn, n) == 0)
		return fx_write_app_dump(k, a, write_apps, 1, path, err, errlen);
	if (k)
		bt_buffer_destroy(k);
	if (a)
		bt_buffer_destroy(a);
	return -ENOMEM;
}

static char *run(const char *args)
{
	const char *bt = getenv("BTRACE_BPF") ? getenv("BTRACE_BPF") : "build/btrace-bpf";
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", bt, args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	size_t n = 0, cap = 1 << 16;
	char *out = malloc(cap);
	while (out && n + 1 < cap) {
		size_t r = fread(out + n, 1, cap - 1 - n, p);
		if (!r)
			break;
		n += r;
	}
	pclose(p);
	if (out)
		out[n] = 0;
	return out;
}

/* Two calls of f then one of g before the gap; the 3 records after it
 * (seqs 10..) come after 4 missing ones; kernel events 2 s apart widen the
 * dump's window. */
static void test_gap(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], err[256], args[900];
	snprintf(path, sizeof(path), "%s/gap.btd", tmpdir);
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&cfg, err, sizeof(err)), *a = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(k && a, "buffers: %s", err);
	const unsigned k1[] = { E, X, E, X, E, X };
	const uint64_t f1[] = { 0x401000, 0x401000, 0x401000, 0x401000, 0x401100, 0x401100 };
	CHECK(func_batch(a, 7000000000ull, 0, k1, f1, 6) == 0, "batch 1");
	const unsigned k2[] = { E, E, X };
	const uint64_t f2[] = { 0x401000, 0x401100, 0x401100 };
	CHECK(func_batch(a, 7000010000ull, 10, k2, f2, 3) == 0, "batch 2 (seqs 6..9 lost)");
	for (int i = 0; i < 2; i++) {
		struct bt_ev_sched_switch e = { 0 };
		e.h.ts_ns = 6000000000ull + 2000000000ull * (uint64_t)i;
		e.h.seq = (uint32_t)i;
		e.h.type = BT_EV_SCHED_SWITCH;
		e.next_tid = TID;
		uint8_t batch[BT_COMPACT_MAX];
		uint32_t n = bt_compact_batch_put(batch, &e.h, sizeof(e), NULL);
		CHECK(n && bt_write(k, 0, batch, n) == 0, "kernel event");
	}
	REQUIRE(fx_write_app_dump(k, a, write_apps, 1, path, err, sizeof(err)) == 0, "write: %s", err);

	snprintf(args, sizeof(args), "report -p %d %s", APP_PID, path);
	char *t = run(args);
	REQUIRE(t, "report -p");
	CHECK(strstr(t, "TID:601 [LOST 4 EVENTS]"), "report -p shows the thread's gap:\n%s", t);
	free(t);
	snprintf(args, sizeof(args), "report --functions %s", path);
	t = run(args);
	REQUIRE(t, "report --functions");
	CHECK(!strstr(t, "complete:"), "--functions does not call counts with a seq gap complete:\n%s", t);
	CHECK(strstr(t, "lower bounds:") && strstr(t, "per-thread seq gap"), "the gap is named:\n%s", t);
	CHECK(strstr(t, "(0.000010") && strstr(t, "the function records' span"),
	      "the window is the records' 10 us, not the dump's 2 s:\n%s", t);
	free(t);
	snprintf(args, sizeof(args), "convert -f json -o %s/gap.json %s", tmpdir, path);
	t = run(args);
	free(t);
	snprintf(args, sizeof(args), "%s/gap.json", tmpdir);
	FILE *j = fopen(args, "r");
	REQUIRE(j, "convert wrote %s", args);
	char buf[1 << 14];
	size_t n = fread(buf, 1, sizeof(buf) - 1, j);
	buf[n] = 0;
	fclose(j);
	int slices = 0; /* complete calls: slices with both an entry and an exit */
	for (char *p = buf; (p = strstr(p, "\"cat\":\"func_entry,func_exit\"")); p++)
		slices++;
	/* --functions: 2 calls of each function complete (f twice and g before
	 * the gap, g after it), f entered after the gap still running */
	t = run(strcat(strcpy(args, "report --functions "), path));
	REQUIRE(t, "report --functions");
	char *r1 = strstr(t, "0x401000 "), *r2 = strstr(t, "0x401100 ");
	unsigned p1, c1 = 0, p2, c2 = 0;
	CHECK(r1 && r2 && sscanf(r1, "0x401000 %u %u", &p1, &c1) == 2 && sscanf(r2, "0x401100 %u %u", &p2, &c2) == 2,
	      "rows:\n%s", t);
	CHECK(c1 + c2 == 4 && slices == 4, "convert draws the complete calls --functions counts (%u + %u): %d", c1, c2,
	      slices);
	free(t);
	if (getenv("KEEP"))
		return;
	unlink(path);
	unlink(strcat(strcpy(args, tmpdir), "/gap.json"));
}

/* count occurrences of needle in the file at path */
static int count_in(const char *path, const char *needle)
{
	FILE *j = fopen(path, "r");
	if (!j)
		return -1;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, j);
	buf[n] = 0;
	fclose(j);
	int c = 0;
	for (char *p = buf; (p = strstr(p, needle)); p++)
		c++;
	return c;
}

/* main -> f -> g -> h, longjmp from h back into f's frame (g and h never
 * exit), f exits: report --functions and convert both count 3 complete
 * calls of f, g, h (ended with f) and none lost. */
static void test_longjmp(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], json[600], err[256], args[1400];
	snprintf(path, sizeof(path), "%s/lj.btd", tmpdir);
	snprintf(json, sizeof(json), "%s/lj.json", tmpdir);
	const unsigned k1[] = { E, E, E, X, E, X };
	const uint64_t f1[] = { 0x401000, 0x401100, 0x401200, 0x401000, 0x401300, 0x401300 };
	REQUIRE(one_batch_dump(path, k1, f1, 6, err, sizeof(err)) == 0, "write: %s", err);
	snprintf(args, sizeof(args), "report --functions %s", path);
	char *t = run(args);
	REQUIRE(t, "report --functions");
	CHECK(strstr(t, "4 calls paired"), "f, g, h and the next call paired:\n%s", t);
	free(t);
	snprintf(args, sizeof(args), "convert -f json -o %s %s", json, path);
	t = run(args);
	CHECK(t && strstr(t, "4 drawn") && strstr(t, "0 entries whose exit is lost"),
	      "convert draws the frames a longjmp left as calls ending with f:\n%s", t ? t : "");
	free(t);
	CHECK(count_in(json, "\"cat\":\"func_entry,func_exit\"") == 4, "4 complete slices in the JSON");
	snprintf(args, sizeof(args), "convert -o %s.pf %s", json, path);
	free(run(args));
	snprintf(args, sizeof(args), "python3 tests/perfetto/check_trace.py perfetto %s.pf >/dev/null 2>&1", json);
	if (system("command -v protoc >/dev/null") == 0)
		CHECK(system(args) == 0, "perfetto: every slice ended, nested (check_trace.py)");
	unlink(path);
	unlink(json);
	snprintf(args, sizeof(args), "%s.pf", json);
	unlink(args);
}

/* f recursing 3 deep, the outermost call entered before --since: the two
 * inner calls are counted, and TOTAL holds their time (it held none while
 * SELF did: 15.24 ms total vs 18.43 ms self on Lua). */
static void test_self_le_total(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], err[256], args[1400];
	snprintf(path, sizeof(path), "%s/rec.btd", tmpdir);
	const unsigned k1[] = { E, E, E, X, X, X };
	const uint64_t f1[] = { 0x401000, 0x401000, 0x401000, 0x401000, 0x401000, 0x401000 };
	REQUIRE(one_batch_dump(path, k1, f1, 6, err, sizeof(err)) == 0, "write: %s", err);
	snprintf(args, sizeof(args), "report --functions --since @7.00000005 %s", path);
	char *t = run(args);
	REQUIRE(t, "report --functions");
	char *row = strstr(t, "0x401000 ");
	unsigned pid, calls;
	char total[32], self[32];
	CHECK(row && sscanf(row, "0x401000 %u %u %31s %31s", &pid, &calls, total, self) == 4 && calls == 2 &&
		      strcmp(total, "300ns") == 0 && strcmp(self, "300ns") == 0,
	      "2 inner calls: total 300ns (the middle one), self 300ns:\n%s", t);
	free(t);
	unlink(path);
}

/* Two LEN-byte names of ch that differ only past byte at (C++
 * instantiations): report --functions must show two rows, each cut with a
 * marker and a hash of the whole name, never one row (issue 36: names were
 * cut at 512 bytes without a marker, and a dump cut both to the same 1024). */
static void check_long_names(size_t len, size_t at, char ch, const char *file, const char *what)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	static char n1[1501], n2[1501];
	char path[600], err[256], args[1400], mark[8];
	memset(n1, 0, sizeof(n1));
	memset(n1, ch, len);
	memcpy(n1 + at, "<int>>>>>>", 10);
	memcpy(n2, n1, sizeof(n1));
	memcpy(n2 + at, "<long>>>>>", 10);
	struct bt_func_name names[2] = { { 0x401000, n1 }, { 0x401100, n2 } };
	g_names = names;
	g_nnames = 2;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	const unsigned k1[] = { E, X, E, X };
	const uint64_t f1[] = { 0x401000, 0x401000, 0x401100, 0x401100 };
	int r = one_batch_dump(path, k1, f1, 4, err, sizeof(err));
	g_nnames = 0;
	REQUIRE(r == 0, "write: %s", err);
	snprintf(args, sizeof(args), "report --functions %s", path);
	char *t = run(args);
	REQUIRE(t, "report --functions");
	snprintf(mark, sizeof(mark), "%c%c%c...#", ch, ch, ch);
	char *a = strstr(t, mark), *b = a ? strstr(a + 1, mark) : NULL;
	CHECK(a && b && strncmp(a, b, 15) != 0, "%s:\n%s", what, t);
	free(t);
	unlink(path);
}

static void test_long_names(void)
{
	check_long_names(600, 590, 'm', "names.btd", "two rows, cut with a marker and distinct hashes");
}

/* Past what a dump stores of a name (BTD_FUNC_NAME_MAX). */
static void test_longer_names(void)
{
	check_long_names(1500, 1100, 'q', "longer.btd", "two rows past the dump's name bound, distinct hashes");
}

/* `report MODE path`: its standard error in err (what it printed), the exit
 * status as system() gives it. */
static int run_err(const char *mode, const char *path, char *err, size_t len)
{
	const char *bt = getenv("BTRACE_BPF") ? getenv("BTRACE_BPF") : "build/btrace-bpf";
	char cmd[1600], ef[700];
	snprintf(ef, sizeof(ef), "%s/stderr.txt", tmpdir);
	snprintf(cmd, sizeof(cmd), "%s report %s %s >/dev/null 2>%s", bt, mode, path, ef);
	int st = system(cmd);
	FILE *f = fopen(ef, "r");
	size_t n = f ? fread(err, 1, len - 1, f) : 0;
	err[n] = 0;
	if (f)
		fclose(f);
	unlink(ef);
	return st;
}

/* A damaged dump given to each reader that reads application blocks again
 * (the listing, --stats, --functions, --hot): one error line naming the
 * file and why, exit 1, no crash. Three damages: an application event of
 * another process (the streaming readers found it only when they read the
 * blocks again, after output, and said "Bad message" twice), the file
 * without its last 64 bytes, a byte of the body changed. */
static void test_bad_dumps(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	static const char *const modes[] = { "", "--stats", "--functions", "--hot" };
	char path[600], cut[600], flip[600], err[256], msg[4096];
	snprintf(path, sizeof(path), "%s/foreign.btd", tmpdir);
	snprintf(cut, sizeof(cut), "%s/cut.btd", tmpdir);
	snprintf(flip, sizeof(flip), "%s/flip.btd", tmpdir);
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&cfg, err, sizeof(err)), *a = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(k && a, "buffers: %s", err);
	const unsigned k1[] = { E, X };
	const uint64_t f1[] = { 0x401000, 0x401000 };
	CHECK(fx_func_batch(a, 7000000000ull, 0, TID, APP_PID + 1, k1, f1, 2) == 0, "a batch of process %d",
	      APP_PID + 1);
	REQUIRE(fx_write_app_dump(k, a, write_apps, 1, path, err, sizeof(err)) == 0, "write: %s", err);
	REQUIRE(one_batch_dump(cut, k1, f1, 2, err, sizeof(err)) == 0 && one_batch_dump(flip, k1, f1, 2, err, sizeof(err)) == 0,
		"write: %s", err);
	FILE *f = fopen(cut, "r+");
	REQUIRE(f && fseek(f, 0, SEEK_END) == 0, "open %s", cut);
	long size = ftell(f);
	fclose(f);
	REQUIRE(truncate(cut, size - 64) == 0, "truncate %s", cut);
	f = fopen(flip, "r+");
	REQUIRE(f && fseek(f, size * 3 / 4, SEEK_SET) == 0, "open %s", flip);
	int c = fgetc(f);
	fseek(f, size * 3 / 4, SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	struct {
		const char *path, *cause;
	} bad[] = { { path, "application event of process 601 in the buffer of process 600" },
		    { cut, "truncated dump" },
		    { flip, "corrupt dump" } };
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			int st = run_err(modes[m], bad[b].path, msg, sizeof(msg));
			char *nl = strchr(msg, '\n');
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && nl && !nl[1] && strstr(msg, bad[b].path) &&
				      strstr(msg, bad[b].cause),
			      "report %s on %s: exit 1 (status %#x), one line naming the file and \"%s\":\n%s",
			      modes[m][0] ? modes[m] : "(listing)", bad[b].path, st, bad[b].cause, msg);
		}
	unlink(path);
	unlink(cut);
	unlink(flip);
}

/* The listing's function lines (composed by hand, report_list.c) are the
 * general format's bytes, in time order with the kernel's lines: thread
 * 601 on CPU 1, then on CPU 0 (nothing between), renamed by a kernel
 * event, on CPU 0 again, then thread 602. Each line is checked whole and
 * in order. */
static int batch_on(struct bt_buffer *a, uint64_t ts, uint32_t tid, uint32_t cpu)
{
	union {
		struct bt_ev_app_funcs f;
		uint8_t raw[sizeof(struct bt_ev_app_funcs) + 16];
	} u;
	memset(&u, 0, sizeof(u));
	u.f.h.ts_ns = ts;
	u.f.h.tid = tid;
	u.f.h.tgid = APP_PID;
	u.f.h.cpu = (uint16_t)cpu;
	u.f.h.type = BT_EV_APP_FUNCS;
	u.f.tsc0 = 1000000;
	u.f.addr0 = 0x401000;
	u.f.mult_q32 = 1ull << 32;
	u.f.count = u.f.cap = 2;
	u.f.words[0] = (uint64_t)BT_FREC_ENTRY << 32;
	u.f.words[1] = 2000u | (uint64_t)BT_FREC_EXIT << 32; /* 2 us later */
	return bt_write(a, cpu, &u, (uint32_t)sizeof(u));
}

static void test_listing_lines(void)
{
	char path[600], err[256], args[700];
	snprintf(path, sizeof(path), "%s/lines.btd", tmpdir);
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&cfg, err, sizeof(err)), *a = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(k && a, "buffers: %s", err);
	struct bt_ev_task rn = { .h = { .ts_ns = 7500000000ull, .tid = 601, .tgid = APP_PID, .cpu = 1,
					.type = BT_EV_TASK_RENAME },
				 .tid = 601, .tgid = APP_PID, .comm = "renamed" };
	CHECK(batch_on(a, 7000000000ull, 601, 1) == 0 && batch_on(a, 7200000000ull, 601, 0) == 0 &&
		      fx_store(k, 1, &rn.h, sizeof(rn)) == 0 &&
		      batch_on(a, 8000000000ull, 601, 0) == 0 && batch_on(a, 9000000000ull, 602, 0) == 0,
	      "events written");
	REQUIRE(fx_write_app_dump(k, a, write_apps, 1 | 1u << BT_GROUP_SCHED, path, err, sizeof(err)) == 0, "write: %s",
		err);
	snprintf(args, sizeof(args), "report %s", path);
	char *t = run(args);
	REQUIRE(t, "report");
	static const struct {
		const char *comm;
		unsigned tid, cpu, sec, us;
	} w[] = { { "<...>", 601, 1, 7, 0 }, { "<...>", 601, 0, 7, 200000 }, { "renamed", 601, 0, 8, 0 },
		  { "<...>", 602, 0, 9, 0 } };
	const char *at = t;
	for (size_t i = 0; i < 4; i++) {
		char line[2][160];
		snprintf(line[0], sizeof(line[0]), "\n%16s-%-5u [%03u] %5u.%06u: func_entry: 0x401000\n", w[i].comm,
			 w[i].tid, w[i].cpu, w[i].sec, w[i].us);
		snprintf(line[1], sizeof(line[1]), "%16s-%-5u [%03u] %5u.%06u: func_exit: 0x401000\n", w[i].comm, w[i].tid,
			 w[i].cpu, w[i].sec, w[i].us + 2);
		const char *e = at ? strstr(at, line[0]) : NULL;
		CHECK(e && strncmp(e + strlen(line[0]), line[1], strlen(line[1])) == 0,
		      "lines of %u on CPU %u at %u s, in order, each whole:\n%s%swant:\n%s%s", w[i].tid, w[i].cpu,
		      w[i].sec, t, "", line[0] + 1, line[1]);
		at = e ? e + strlen(line[0]) : NULL;
		if (i == 1) { /* the rename's line comes between */
			const char *r = at ? strstr(at, ": task_rename: ") : NULL;
			CHECK(r && (!strstr(at, "func_entry") || r < strstr(at, "func_entry")),
			      "the kernel's line between the two threads' lines:\n%s", t);
		}
	}
	free(t);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_long_names);
	RUN(test_longer_names);
	RUN(test_gap);
	RUN(test_longjmp);
	RUN(test_self_le_total);
	RUN(test_bad_dumps);
	RUN(test_listing_lines);
	rmdir(tmpdir);
	return h_done();
}
