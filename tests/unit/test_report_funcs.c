// SPDX-License-Identifier: MIT
/* test_report_funcs.c - report on function records with a per-thread seq
 * gap (user/report/): `report -p PID` shows the application thread's loss
 * where it is ("TID:N [LOST M EVENTS]"), `report --functions` never calls
 * such counts complete and gives the function records' span as its
 * window, and convert (the JSON export) counts the same calls as complete
 * as --functions pairs, the frames a longjmp left included. Runs
 * $BTRACE_BPF (build/btrace-bpf). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include "harness.h"
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
	union { struct bt_ev_app_funcs f; uint8_t raw[sizeof(struct bt_ev_app_funcs) + 8 * 16]; } u;
	memset(&u, 0, sizeof(u));
	u.f.h.ts_ns = ts;
	u.f.h.seq = seq;
	u.f.h.tid = TID;
	u.f.h.tgid = APP_PID;
	u.f.h.cpu = 1;
	u.f.h.type = BT_EV_APP_FUNCS;
	u.f.tsc0 = 1000000;
	u.f.addr0 = 0x401000;
	u.f.mult_q32 = 1ull << 32;
	u.f.count = u.f.cap = (uint32_t)n;
	for (int i = 0; i < n; i++)
		u.f.words[i] = (i ? 100u : 0u) | (uint64_t)kind[i] << 32 | (uint64_t)(int64_t)(fn[i] - 0x401000) << 34;
	return bt_write(a, 1, &u, (uint32_t)(sizeof(u.f) + 8u * (uint32_t)n));
}

static int block_cb(const struct bt_block_view *blk, void *ctx)
{
	return bt_dump_sink_app_block(ctx, 0, blk);
}

static int write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_dump_app app = { .pid = APP_PID, .name = "gapapp" };
	struct bt_read_stats st;
	int r = bt_read(ctx, block_cb, s, &st);
	return r < 0 ? r : bt_dump_sink_apps(s, &app, 1);
}

/* A dump whose application has one batch of thread TID at 7 s (seq 0). */
static int one_batch_dump(const char *path, const unsigned *kind, const uint64_t *fn, int n, char *err,
			  size_t errlen)
{
	char out[600];
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&cfg, err, errlen), *a = bt_buffer_create(&cfg, err, errlen);
	int r = -ENOMEM;
	if (k && a && func_batch(a, 7000000000ull, 0, kind, fn, n) == 0) {
		struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .dump_seq = 1, .reason = "ctl",
					     .groups_enabled = 1, .write_apps = write_apps, .apps_ctx = a };
		r = bt_dump_write(k, &info, NULL, path, 1, out, sizeof(out), NULL, err, errlen);
	}
	if (k)
		bt_buffer_destroy(k);
	if (a)
		bt_buffer_destroy(a);
	return r < 0 ? r : 0;
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
	char path[600], err[256], out[600], args[900];
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
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .dump_seq = 1, .reason = "ctl",
				     .groups_enabled = 1, .write_apps = write_apps, .apps_ctx = a };
	int r = bt_dump_write(k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(k);
	bt_buffer_destroy(a);
	REQUIRE(r >= 0, "write: %s", err);

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

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_gap);
	RUN(test_longjmp);
	RUN(test_self_le_total);
	rmdir(tmpdir);
	return h_done();
}
