// SPDX-License-Identifier: MIT
/*
 * test_export.c - `convert`: a real dump (a bt_buffer filled with synthetic
 * events of every type, uprobe entry/return pairs nested and unmatched, a seq
 * gap, odd task names; written with bt_dump_write, opened with bt_dump_open)
 * converted to Perfetto protobuf and Chrome JSON, then checked from the
 * outside: tests/perfetto/check_trace.py decodes the protobuf with protoc and
 * tests/perfetto/perfetto_subset.proto, parses the JSON with python3, and
 * compares event counts per type with the dump's, thread names, per-CPU
 * timestamp order, slice nesting and the loss counters.
 *
 * Application events (in-process tracing) get a dump of their own: kernel
 * events plus an application buffer with nested, unmatched and still-open
 * slices, instants, counters, a per-thread seq gap, an unknown name and a
 * thread of another process; checked the same way plus exact per-role
 * counts.
 *
 * Also: the protobuf encoder byte for byte, gzip output, compact sched,
 * atomic output (a failing write leaves no file and no temporary), the
 * command line (exit codes, damaged dump message, default output name) and
 * bounded memory on a large dump.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "dump_fixture.h"
#include "btrace_buffer.h"
#include "dump.h"
#include "compact.h"
#include "event_names.h"
#include "export.h"
#include "event_filter.h"
#include "pbwriter.h"
#include "commands.h"
#include "util.h"

#define NCPUS 4
#define CHECKER "tests/perfetto/check_trace.py"
#define SUBSET "tests/perfetto/perfetto_subset.proto"

static char tmpdir[256];
static char dump_path[512];
static struct bt_dump *D;
static int have_protoc, have_python;
static char root[512]; /* repository root (where tests/perfetto is) */

static int count_dir(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

static int run_cmd(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	size_t o = 0;
	if (!p)
		return -1;
	if (out && outlen)
		out[0] = '\0';
	char line[4096];
	while (fgets(line, sizeof(line), p)) {
		size_t l = strlen(line);
		if (out && o + l + 1 < outlen) {
			memcpy(out + o, line, l + 1);
			o += l;
		}
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- the synthetic dump ------------------------------------------------------ */

static struct bt_task tasks[] = {
	{ .tid = 1, .tgid = 1, .comm = "systemd" },
	{ .tid = 100, .tgid = 100, .comm = "app" },
	{ .tid = 101, .tgid = 100, .comm = "app-worker" },
	{ .tid = 200, .tgid = 200, .comm = "bash" },
	{ .tid = 300, .tgid = 300, .comm = "we\"ird\\\x01\xff" }, /* quote, backslash, control, bad UTF-8 */
	{ .tid = 400, .tgid = 400, .comm = "caf\xc3\xa9" },
	{ .tid = 600, .tgid = 600, .comm = "evil\nname\x1b[m\\" }, /* newline, escape sequence, backslash */
};

enum { P_MALLOC, P_MALLOC_RET, P_REQ, P_REQ_RET, P_TICK, NPROBES };
static struct bt_probe_desc probes[NPROBES];

static void init_probes(void)
{
	memset(probes, 0, sizeof(probes));
	for (int i = 0; i < NPROBES; i++) {
		probes[i].id = (uint32_t)i;
		probes[i].pid = -1;
	}
	snprintf(probes[P_MALLOC].func, sizeof(probes[0].func), "malloc");
	snprintf(probes[P_MALLOC].binary, sizeof(probes[0].binary), "/usr/lib/libc.so.6");
	probes[P_MALLOC].offset = 0x9a0f0;
	probes[P_MALLOC].nargs = 1;
	probes[P_MALLOC_RET] = probes[P_MALLOC];
	probes[P_MALLOC_RET].id = P_MALLOC_RET;
	probes[P_MALLOC_RET].flags = BT_PROBE_RETURN;
	snprintf(probes[P_REQ].func, sizeof(probes[0].func), "handle_request");
	snprintf(probes[P_REQ].binary, sizeof(probes[0].binary), "/usr/bin/app");
	probes[P_REQ].offset = 0x1230;
	probes[P_REQ].nargs = 3;
	probes[P_REQ_RET] = probes[P_REQ];
	probes[P_REQ_RET].id = P_REQ_RET;
	probes[P_REQ_RET].flags = BT_PROBE_RETURN;
	snprintf(probes[P_TICK].func, sizeof(probes[0].func), "app:tick");
	snprintf(probes[P_TICK].binary, sizeof(probes[0].binary), "/usr/bin/app");
	probes[P_TICK].flags = BT_PROBE_USDT;
}

struct gen {
	struct bt_buffer *b;
	uint32_t seq[NCPUS];
	uint64_t ts;
	uint32_t cur[NCPUS]; /* task running on each CPU */
	uint64_t written, failed;
};

static void put(struct gen *g, union any_ev *e, uint32_t type, uint32_t cpu, uint32_t tid, uint32_t len)
{
	e->h.ts_ns = (g->ts += 1000);
	e->h.seq = g->seq[cpu]++;
	e->h.tid = tid;
	e->h.tgid = tid == 101 ? 100 : tid;
	e->h.cpu = (uint16_t)cpu;
	e->h.type = (uint16_t)type;
	if (fx_store(g->b, cpu, &e->h, len) == 0)
		g->written++;
	else
		g->failed++;
}

static void ev_switch(struct gen *g, uint32_t cpu, uint32_t next, uint32_t state)
{
	union any_ev e = { 0 };
	e.sw.prev_tid = g->cur[cpu];
	e.sw.next_tid = next;
	e.sw.prev_state = state;
	e.sw.prev_prio = 120;
	e.sw.next_prio = 120;
	put(g, &e, BT_EV_SCHED_SWITCH, cpu, g->cur[cpu], sizeof(e.sw));
	g->cur[cpu] = next;
}

static void ev_wake(struct gen *g, uint32_t type, uint32_t cpu, uint32_t tid)
{
	union any_ev e = { 0 };
	e.wk.tid = tid;
	e.wk.target_cpu = (uint16_t)((cpu + 1) % NCPUS);
	e.wk.prio = 120;
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.wk));
}

static void ev_task(struct gen *g, uint32_t type, uint32_t cpu, uint32_t tid, uint32_t tgid, const char *comm)
{
	union any_ev e = { 0 };
	e.tk.tid = tid;
	e.tk.tgid = tgid;
	if (comm)
		memcpy(e.tk.comm, comm, strnlen(comm, sizeof(e.tk.comm)));
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.tk));
}

static void ev_irq(struct gen *g, uint32_t type, uint32_t cpu, uint32_t irq, int32_t ret)
{
	union any_ev e = { 0 };
	e.irq.irq = irq;
	e.irq.ret = ret;
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.irq));
}

static void ev_power(struct gen *g, uint32_t type, uint32_t cpu, uint32_t state)
{
	union any_ev e = { 0 };
	e.pw.state = state;
	e.pw.cpu_id = cpu;
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.pw));
}

static void ev_sys(struct gen *g, uint32_t type, uint32_t cpu, int64_t id, int64_t ret)
{
	union any_ev e = { 0 };
	e.sc.id = id;
	e.sc.ret = ret;
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.sc));
}

static void ev_up(struct gen *g, uint32_t type, uint32_t cpu, uint32_t probe, uint64_t arg_or_ret)
{
	union any_ev e = { 0 };
	e.up.probe_id = probe;
	if (type == BT_EV_UPROBE_RETURN) {
		e.up.ret = arg_or_ret;
		e.up.duration_ns = 2000;
	} else {
		e.up.nargs = 2;
		e.up.args[0] = arg_or_ret;
		e.up.args[1] = 0xdeadbeef;
	}
	put(g, &e, type, cpu, g->cur[cpu], sizeof(e.up));
}

/* Matched uprobe pairs the scenario below produces. */
#define EXPECT_UPROBE_PAIRS 6

/* One round of everything; uprobes only when `uprobes` (once). */
static void round_of(struct gen *g, int i, int uprobes)
{
	for (uint32_t c = 0; c < NCPUS; c++) {
		uint32_t a = c == 0 ? 100 : c == 1 ? 101 : c == 2 ? 200 : 300;
		ev_wake(g, BT_EV_SCHED_WAKEUP, c, a);
		ev_switch(g, c, a, 0);
		ev_irq(g, BT_EV_IRQ_ENTRY, c, 24 + c, 0);
		ev_irq(g, BT_EV_IRQ_EXIT, c, 24 + c, 1);
		ev_irq(g, BT_EV_SOFTIRQ_ENTRY, c, 3, 0);
		ev_irq(g, BT_EV_SOFTIRQ_EXIT, c, 3, 0);
		ev_sys(g, BT_EV_SYS_ENTER, c, 0, 0);
		ev_sys(g, BT_EV_SYS_EXIT, c, 0, 4096);
		ev_power(g, BT_EV_CPU_IDLE, c, 1);
		ev_switch(g, c, 0, 1); /* to idle, sleeping */
		ev_power(g, BT_EV_CPU_IDLE, c, UINT32_MAX);
		ev_power(g, BT_EV_CPU_FREQUENCY, c, 1200000 + (uint32_t)i * 100000 % 1000000);
	}
	if (!uprobes)
		return;
	/* on CPU 0, tid 100: handle_request { malloc; malloc } */
	ev_switch(g, 0, 100, 0);
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_REQ, 1);
	ev_sys(g, BT_EV_SYS_ENTER, 0, 1, 0);
	ev_sys(g, BT_EV_SYS_EXIT, 0, 1, 64);
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_MALLOC, 64);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_MALLOC_RET, 0x55d0c8a0);
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_MALLOC, 128);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_MALLOC_RET, 0x55d0c900);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_REQ_RET, 0);            /* 3 pairs */
	/* recursion: handle_request { handle_request { } } */
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_REQ, 2);
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_REQ, 3);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_REQ_RET, 0);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_REQ_RET, (uint64_t)-1); /* 5 pairs */
	/* a malloc whose return was lost: handle_request { malloc( } */
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_REQ, 4);
	ev_up(g, BT_EV_UPROBE_ENTRY, 0, P_MALLOC, 32);
	ev_up(g, BT_EV_UPROBE_RETURN, 0, P_REQ_RET, 0);            /* 6 pairs, 1 entry alone */
	ev_up(g, BT_EV_USDT, 0, P_TICK, 7);
	/* on CPU 1, tid 101: a return whose entry is older than the dump, an
	 * entry still running at the end */
	ev_switch(g, 1, 101, 0);
	ev_up(g, BT_EV_UPROBE_RETURN, 1, P_REQ_RET, 0);
	ev_up(g, BT_EV_UPROBE_ENTRY, 1, P_MALLOC, 16);
	ev_up(g, BT_EV_USDT, 1, P_TICK, 8);
	/* the rest of the sched group */
	ev_wake(g, BT_EV_SCHED_WAKING, 2, 200);
	ev_wake(g, BT_EV_SCHED_WAKEUP_NEW, 2, 555);
	ev_task(g, BT_EV_PROCESS_FORK, 2, 555, 555, "child");
	ev_task(g, BT_EV_PROCESS_EXEC, 2, 555, 555, "ls");
	ev_task(g, BT_EV_TASK_RENAME, 2, 200, 200, "bash-renamed");
	ev_task(g, BT_EV_PROCESS_EXIT, 2, 555, 555, NULL);
	/* a name with a newline: woken, then renamed to another such name */
	ev_wake(g, BT_EV_SCHED_WAKEUP, 3, 600);
	ev_task(g, BT_EV_TASK_RENAME, 3, 600, 600, "new\nname\r\x85");
	union any_ev e = { 0 };
	e.mg.tid = 777; /* a tid nothing names */
	e.mg.orig_cpu = 2;
	e.mg.dest_cpu = 3;
	put(g, &e, BT_EV_SCHED_MIGRATE, 2, g->cur[2], sizeof(e.mg));
}

static uint64_t drops[NCPUS * BT_GROUP_MAX];

/* Write a dump of `rounds` rounds to path; a seq gap on CPU 1 when gap. */
static int make_dump(const char *path, int rounds, int gap, size_t bufsize)
{
	struct bt_config cfg = { .size = bufsize, .block_size = 4096, .ncores = NCPUS };
	char err[256], out[512];
	struct gen g = { 0 };
	g.ts = 5000000000ull;
	g.b = bt_buffer_create(&cfg, err, sizeof(err));
	if (!g.b) {
		fprintf(stderr, "  bt_buffer_create: %s\n", err);
		return -1;
	}
	for (int i = 0; i < rounds; i++) {
		round_of(&g, i, i == rounds / 2);
		if (gap && i == rounds / 3)
			g.seq[1] += 5; /* five events of CPU 1 lost */
	}
	for (int i = 0; i < NCPUS * BT_GROUP_MAX; i++)
		drops[i] = i % 3 ? 0 : (uint64_t)i + 1;
	init_probes();
	struct bt_dump_info info = {
		.ncpus = NCPUS, .ngroups = BT_GROUP_MAX, .rb_drops = drops,
		.tasks = tasks, .ntasks = sizeof(tasks) / sizeof(tasks[0]),
		.probes = probes, .nprobes = NPROBES, .dump_seq = 1, .reason = "ctl",
		.groups_enabled = (1u << BT_GROUP_MAX) - 1,
	};
	int r = bt_dump_write(g.b, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "  bt_dump_write: %s\n", err);
	if (g.failed)
		fprintf(stderr, "  %" PRIu64 " writes failed\n", g.failed);
	bt_buffer_destroy(g.b);
	return r;
}

/* "--expect sched_switch=N,..." from the dump's own events */
static void expect_arg(const struct bt_dump *d, char *buf, size_t len)
{
	uint64_t n[BT_EV_MAX] = { 0 };
	size_t nev, o = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &nev);
	for (size_t i = 0; i < nev; i++)
		if (ev[i].ev->type < BT_EV_MAX)
			n[ev[i].ev->type]++;
	buf[0] = '\0';
	for (int t = 1; t < BT_EV_MAX; t++)
		if (n[t])
			o += (size_t)snprintf(buf + o, len - o, "%s%s=%" PRIu64, o ? "," : "", bt_event_name((uint32_t)t),
					      n[t]);
}

static uint64_t dump_gaps(const struct bt_dump *d)
{
	struct bt_seq_window w;
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	if (bt_seq_analyze(ev, n, bt_dump_header(d)->ncpus, &w, NULL) < 0)
		return UINT64_MAX;
	return w.gaps;
}

/* Run the checker on a converted file (fmt "perfetto" or "json") with the
 * options in args; its lines become diagnostics. Its exit status. */
static int check_file(const char *fmt, const char *file, const char *args)
{
	char cmd[4096], out[16384];
	snprintf(cmd, sizeof(cmd), "cd '%s' && python3 " CHECKER " %s '%s' --proto " SUBSET " %s 2>&1", root, fmt, file,
		 args);
	int r = run_cmd(cmd, out, sizeof(out));
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		printf("#   %s\n", l);
	return r;
}

/* The checker against the dump's own counts. */
static int checker2(const char *fmt, const char *file, const struct bt_dump *d, int pairs, const char *extra)
{
	char expect[1024], args[2048];
	expect_arg(d, expect, sizeof(expect));
	snprintf(args, sizeof(args), "--expect '%s' --gaps %" PRIu64 " --uprobe-slices %d %s", expect, dump_gaps(d), pairs,
		 extra ? extra : "");
	return check_file(fmt, file, args);
}

static int checker(const char *fmt, const char *file, const struct bt_dump *d, int pairs)
{
	return checker2(fmt, file, d, pairs, NULL);
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_pbwriter(void)
{
	struct pbw w;
	pbw_init(&w);
	pbw_uint(&w, 1, 150); /* the protobuf docs' example: 08 96 01 */
	REQUIRE(pbw_len(&w) == 3 && !memcmp(pbw_data(&w), "\x08\x96\x01", 3), "varint field");
	pbw_reset(&w);
	pbw_int(&w, 2, -1); /* int32/int64 -1: ten bytes */
	CHECK(pbw_len(&w) == 11 && pbw_data(&w)[0] == 0x10 && pbw_data(&w)[10] == 0x01, "negative int: %zu bytes",
	      pbw_len(&w));
	pbw_reset(&w);
	pbw_sint(&w, 1, -1); /* zigzag: 1 */
	CHECK(pbw_len(&w) == 2 && pbw_data(&w)[1] == 1, "sint");
	pbw_reset(&w);
	pbw_string(&w, 2, "testing"); /* 12 07 74 65 73 74 69 6e 67 */
	CHECK(pbw_len(&w) == 9 && !memcmp(pbw_data(&w), "\x12\x07testing", 9), "string");
	pbw_reset(&w);
	pbw_stringn(&w, 1, "abcdefgh", 4);
	CHECK(pbw_len(&w) == 6 && !memcmp(pbw_data(&w), "\x0a\x04" "abcd", 6), "stringn");
	pbw_reset(&w);
	pbw_fixed64(&w, 1, 0x0102030405060708ull);
	CHECK(pbw_len(&w) == 9 && pbw_data(&w)[0] == 0x09 && pbw_data(&w)[1] == 0x08 && pbw_data(&w)[8] == 0x01,
	      "fixed64 little-endian");
	pbw_reset(&w);

	/* nested: 3 { 1: 150 } = 1a 03 08 96 01 */
	pbw_begin(&w, 3);
	pbw_uint(&w, 1, 150);
	pbw_end(&w);
	CHECK(pbw_len(&w) == 5 && !memcmp(pbw_data(&w), "\x1a\x03\x08\x96\x01", 5), "nested");
	pbw_reset(&w);

	/* bodies of 1, 2 and 3 length bytes, nested twice: the back-patch moves them */
	static const size_t sizes[] = { 127, 128, 300, 16383, 16384, 70000 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		char *blob = malloc(n);
		REQUIRE(blob, "malloc");
		for (size_t i = 0; i < n; i++)
			blob[i] = (char)('a' + i % 26);
		pbw_reset(&w);
		pbw_begin(&w, 1);
		pbw_begin(&w, 2);
		pbw_bytes(&w, 3, blob, n);
		pbw_end(&w);
		pbw_uint(&w, 4, 7);
		pbw_end(&w);
		REQUIRE(!pbw_error(&w), "no error");
		/* decode by hand */
		const uint8_t *p = pbw_data(&w), *end = p + pbw_len(&w);
		uint64_t v = 0, l1 = 0, l2 = 0, l3 = 0;
		int s = 0, ok = *p++ == 0x0a;
		for (s = 0; p < end; s += 7) { v = *p++; l1 |= (v & 0x7f) << s; if (!(v & 0x80)) break; }
		ok = ok && l1 == (uint64_t)(end - p);
		ok = ok && *p++ == 0x12;
		for (s = 0; p < end; s += 7) { v = *p++; l2 |= (v & 0x7f) << s; if (!(v & 0x80)) break; }
		const uint8_t *inner_end = p + l2;
		ok = ok && *p++ == 0x1a;
		for (s = 0; p < end; s += 7) { v = *p++; l3 |= (v & 0x7f) << s; if (!(v & 0x80)) break; }
		ok = ok && l3 == n && !memcmp(p, blob, n) && p + n == inner_end;
		ok = ok && inner_end + 2 == end && inner_end[0] == 0x20 && inner_end[1] == 7;
		CHECK(ok, "nested body of %zu bytes encodes with minimal lengths", n);
		/* minimal: total = tag + varint(l1) + l1 */
		CHECK(pbw_len(&w) == 1 + pbw_varint_size(l1) + l1, "minimal length prefix for %zu", n);
		free(blob);
	}
	/* errors are sticky */
	pbw_reset(&w);
	pbw_end(&w);
	CHECK(pbw_error(&w) == -EINVAL, "end without begin is an error");
	pbw_uint(&w, 1, 1);
	CHECK(pbw_len(&w) == 0, "nothing written after an error");
	pbw_free(&w);

	/* protoc agrees (decode_raw) */
	if (have_protoc) {
		char path[600], out[4096];
		snprintf(path, sizeof(path), "%s/raw.pb", tmpdir);
		pbw_init(&w);
		pbw_begin(&w, 1);
		pbw_uint(&w, 8, 1234567890123ull);
		pbw_begin(&w, 11);
		pbw_string(&w, 23, "hello");
		pbw_int(&w, 4, -5);
		pbw_end(&w);
		pbw_end(&w);
		FILE *f = fopen(path, "wb");
		REQUIRE(f, "open");
		fwrite(pbw_data(&w), 1, pbw_len(&w), f);
		fclose(f);
		pbw_free(&w);
		char cmd[800];
		snprintf(cmd, sizeof(cmd), "protoc --decode_raw < '%s' 2>&1", path);
		int r = run_cmd(cmd, out, sizeof(out));
		CHECK(r == 0 && strstr(out, "8: 1234567890123") && strstr(out, "23: \"hello\"") &&
			      strstr(out, "4: 18446744073709551611"),
		      "protoc --decode_raw reads it: %s", out);
	}
}

static char pf_path[600], pf_compact[600], pf_gz[600], js_path[600], js_gz[600];

static void convert(const char *path, int format, int gzip, int compact, struct bt_export_stats *st)
{
	char err[256];
	struct bt_export_opts o = { .format = format, .gzip = gzip, .compact_sched = compact };
	int r = bt_export_file(D, path, &o, st, err, sizeof(err));
	CHECK(r == 0, "bt_export_file %s: %s", path, err);
}

static void test_perfetto(void)
{
	struct bt_export_stats st;
	size_t nev;
	bt_dump_events(D, &nev);
	convert(pf_path, BT_EXPORT_PERFETTO, 0, 0, &st);
	CHECK(st.events == nev, "converted %" PRIu64 " of %zu events", st.events, nev);
	CHECK(st.uprobe_slices == EXPECT_UPROBE_PAIRS, "uprobe pairs %" PRIu64, st.uprobe_slices);
	CHECK(st.uprobe_unmatched == 3, "unmatched uprobes %" PRIu64, st.uprobe_unmatched);
	CHECK(st.gaps == 1 && st.missing == 5, "gaps %" PRIu64 " missing %" PRIu64, st.gaps, st.missing);
	printf("# perfetto: %zu events -> %" PRIu64 " bytes, %" PRIu64 " packets\n", nev, st.bytes, st.records);
	if (!have_protoc || !have_python)
		return;
	CHECK(checker("perfetto", pf_path, D, EXPECT_UPROBE_PAIRS) == 0, "checker passes (see above)");
}

/* protoc's text of a trace (subset schema), each line stripped of its
 * indentation, interned track event names written out in place (the
 * checker's "text"); malloc'd, NULL on failure. */
static char *decode_text(const char *file, const char *proto_dir, const char *proto)
{
	char cmd[2048];
	if (!have_python)
		return NULL;
	snprintf(cmd, sizeof(cmd), "cd '%s' && python3 " CHECKER " text '%s' --proto '%s/%s' 2>/dev/null", root, file,
		 proto_dir, proto);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap), line[4096];
	while (out && fgets(line, sizeof(line), p)) {
		const char *l = line;
		while (*l == ' ')
			l++;
		size_t n = strlen(l);
		if (len + n + 1 > cap) {
			char *q = realloc(out, cap *= 2);
			if (!q) {
				free(out);
				out = NULL;
				break;
			}
			out = q;
		}
		memcpy(out + len, l, n + 1);
		len += n;
	}
	int st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		free(out);
		return NULL;
	}
	return out;
}

/* protoc's text of a Perfetto trace with the subset schema (see
 * decode_text), NULL when it does not decode. */
static char *decode_subset(const char *file)
{
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/tests/perfetto", root);
	return decode_text(file, dir, "perfetto_subset.proto");
}

/* Field names against values: every event type of the scenario, decoded
 * with the subset schema, carries the values the generator put in, under
 * Perfetto's field names (protoc prints fields in number order). */
static void test_perfetto_fields(void)
{
	if (!have_protoc)
		return;
	char dir[700];
	snprintf(dir, sizeof(dir), "%s/tests/perfetto", root);
	char *t = decode_text(pf_path, dir, "perfetto_subset.proto");
	REQUIRE(t, "protoc decodes %s", pf_path);
	char ret[160];
	snprintf(ret, sizeof(ret), "debug_annotations {\nint_value: %" PRId64 "\nname: \"ret\"\n}", (int64_t)0x55d0c8a0);
	const char *want[] = {
		"sched_switch {\nprev_comm: \"swapper/0\"\nprev_pid: 0\nprev_prio: 120\nprev_state: 256\n"
		"next_comm: \"app\"\nnext_pid: 100\nnext_prio: 120\n}",
		"sched_switch {\nprev_comm: \"app\"\nprev_pid: 100\nprev_prio: 120\nprev_state: 1\n"
		"next_comm: \"swapper/0\"\nnext_pid: 0\nnext_prio: 120\n}",
		"sched_wakeup {\ncomm: \"app\"\npid: 100\nprio: 120\ntarget_cpu: 1\n}",
		"sched_waking {\ncomm: \"bash\"\npid: 200\nprio: 120\ntarget_cpu: 3\n}",
		"sched_wakeup_new {\ncomm: \"<...>\"\npid: 555\nprio: 120\ntarget_cpu: 3\n}",
		"sched_migrate_task {\ncomm: \"<...>\"\npid: 777\norig_cpu: 2\ndest_cpu: 3\n}",
		"sched_process_fork {\nparent_comm: \"swapper/2\"\nparent_pid: 0\nchild_comm: \"child\"\nchild_pid: 555\n}",
		"sched_process_exec {\nfilename: \"ls\"\npid: 0\nold_pid: 555\n}",
		"task_rename {\npid: 200\noldcomm: \"bash\"\nnewcomm: \"bash-renamed\"\n}",
		"sched_process_exit {\ncomm: \"child\"\npid: 555\ntgid: 555\n}",
		"irq_handler_entry {\nirq: 24\nname: \"24\"\n}",
		"irq_handler_exit {\nirq: 24\nret: 1\n}",
		"softirq_entry {\nvec: 3\n}",
		"softirq_exit {\nvec: 3\n}",
		"cpu_idle {\nstate: 1\ncpu_id: 0\n}",
		"cpu_idle {\nstate: 4294967295\ncpu_id: 0\n}",
		"cpu_frequency {\nstate: 1200000\ncpu_id: 0\n}",
		"sys_enter {\nid: 1\n}",
		"sys_exit {\nid: 1\nret: 64\n}",
		"sys_exit {\nid: 0\nret: 4096\n}",
		"debug_annotations {\npointer_value: 64\nname: \"arg1\"\n}\ndebug_annotations {\npointer_value: 3735928559\n"
		"name: \"arg2\"\n}",
		ret,
		"type: TYPE_SLICE_BEGIN\n",
		"categories: \"uprobe\"\nname: \"handle_request\"\n",
		"categories: \"uprobe\"\nname: \"malloc (entry, no return)\"\n",
		"categories: \"uprobe\"\nname: \"handle_request (return, no entry)\"\n",
		"categories: \"usdt\"\nname: \"app:tick\"\n",
		"categories: \"btrace\"\nname: \"LOST 5 events\"\n",
		"thread {\npid: 100\ntid: 101\nthread_name: \"app-worker\"\n}",
		/* one thread track per tid, the uprobe slices on a named child of it */
		"uuid: 1603\nthread {\npid: 100\ntid: 100\nthread_name: \"app\"\n}",
		"name: \"uprobes\"\nparent_uuid: 1603\n",
		"threads {\ntid: 101\nname: \"app-worker\"\ntgid: 100\n}",
		"processes {\npid: 100\ncmdline: \"app\"\ncmdline_is_comm: true\n}",
		"clocks {\nclock_id: 6\n",
		"clocks {\nclock_id: 1\n",
		"primary_trace_clock: BUILTIN_CLOCK_BOOTTIME\n",
		"phase: END_OF_TRACE\n",
		"lost_events: true\n",
		"utsname {\nsysname: \"Linux\"\n",
		"uint_value: 1\nname: \"loss.seq_gaps\"\n",
		"uint_value: 5\nname: \"loss.seq_missing\"\n",
		"uint_value: 4\nname: \"loss.rb_drops.cpu0.syscalls\"\n", /* drops[0 * 5 + 3] = 4 */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(strstr(t, want[i]), "decoded trace has:\n%s", want[i]);
	free(t);
}

static void test_perfetto_full_schema(void)
{
	/* Decoding with the real perfetto_trace.proto, when a copy is around
	 * (PERFETTO_PROTO=path), must find no unknown field either. */
	const char *full = getenv("PERFETTO_PROTO");
	if (!full || !have_protoc)
		return;
	char cmd[2048], out[16384];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && python3 " CHECKER " perfetto '%s' --proto '%s' --gaps %" PRIu64 " 2>&1", root, pf_path,
		 full, dump_gaps(D));
	int r = run_cmd(cmd, out, sizeof(out));
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
		printf("#   %s\n", l);
	CHECK(r == 0, "decodes with %s", full);
}

static void test_perfetto_compact(void)
{
	struct bt_export_stats st, st0;
	size_t n0 = 0, n1 = 0;
	convert(pf_compact, BT_EXPORT_PERFETTO, 0, 1, &st);
	free(h_read_file(pf_path, &n0));
	free(h_read_file(pf_compact, &n1));
	memset(&st0, 0, sizeof(st0));
	CHECK(n1 > 0 && n1 < n0, "compact sched is smaller: %zu vs %zu bytes", n1, n0);
	printf("# compact sched: %zu bytes, plain %zu bytes (%.0f%%)\n", n1, n0, n0 ? 100.0 * (double)n1 / (double)n0 : 0);
	if (!have_protoc || !have_python)
		return;
	char extra[700];
	snprintf(extra, sizeof(extra), "--same-sched-as '%s'", pf_path);
	CHECK(checker2("perfetto", pf_compact, D, EXPECT_UPROBE_PAIRS, extra) == 0,
	      "checker passes on compact sched, switches as in the plain output");
}

static int gunzip_equals(const char *gz, const char *plain)
{
	size_t nz = 0, np = 0;
	uint8_t *z = h_read_file(gz, &nz), *p = h_read_file(plain, &np);
	int ok = 0;
	if (z && p && nz > 2 && z[0] == 0x1f && z[1] == 0x8b) {
		uint8_t *out = malloc(np + 1);
		z_stream s = { 0 };
		if (out && inflateInit2(&s, 15 + 16) == Z_OK) {
			s.next_in = z;
			s.avail_in = (uInt)nz;
			s.next_out = out;
			s.avail_out = (uInt)(np + 1);
			int r = inflate(&s, Z_FINISH);
			ok = r == Z_STREAM_END && s.total_out == np && !memcmp(out, p, np) && s.avail_in == 0;
			inflateEnd(&s);
		}
		free(out);
	}
	free(z);
	free(p);
	return ok;
}

static void test_gzip(void)
{
	struct bt_export_stats st;
	convert(pf_gz, BT_EXPORT_PERFETTO, 1, 0, &st);
	CHECK(gunzip_equals(pf_gz, pf_path), "gzip perfetto output inflates to the plain output");
	convert(js_gz, BT_EXPORT_JSON, 1, 0, &st);
	CHECK(gunzip_equals(js_gz, js_path), "gzip json output inflates to the plain output");
	/* the text a reader holds (what the 512 MiB warning weighs): the plain size */
	struct stat sb;
	CHECK(stat(js_path, &sb) == 0 && st.raw_bytes == (uint64_t)sb.st_size && st.bytes < st.raw_bytes,
	      "gzip json: %" PRIu64 " bytes of text, %" PRIu64 " written", st.raw_bytes, st.bytes);
	if (have_protoc && have_python)
		CHECK(checker("perfetto", pf_gz, D, EXPECT_UPROBE_PAIRS) == 0, "checker reads the gzip file");
}

static void test_json(void)
{
	struct bt_export_stats st;
	size_t nev;
	bt_dump_events(D, &nev);
	convert(js_path, BT_EXPORT_JSON, 0, 0, &st);
	CHECK(st.events == nev, "converted %" PRIu64 " of %zu events", st.events, nev);
	printf("# json: %zu events -> %" PRIu64 " bytes, %" PRIu64 " trace events\n", nev, st.bytes, st.records);
	size_t n = 0;
	char *t = (char *)h_read_file(js_path, &n);
	REQUIRE(t, "read %s", js_path);
	t = realloc(t, n + 1);
	REQUIRE(t, "realloc");
	t[n] = '\0';
	const char *want[] = {
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":100,\"tid\":101,\"args\":{\"name\":\"app-worker\"}}",
		/* report's escapes (\\, \x01, \xff), then JSON's (\", \\) */
		"\"args\":{\"name\":\"we\\\"ird\\\\\\\\\\\\x01\\\\xff\"}",
		"\"args\":{\"name\":\"caf\xc3\xa9\"}",                   /* valid UTF-8 as is */
		"{\"ph\":\"X\",\"name\":\"handle_request\",\"cat\":\"uprobe,uretprobe\"",
		"\"args\":{\"arg1\":\"0x40\",\"arg2\":\"0xdeadbeef\",\"ret\":1439746208,\"ret_hex\":\"0x55d0c8a0\"",
		"{\"ph\":\"i\",\"name\":\"malloc (entry, no return)\",\"cat\":\"uprobe\"",
		"{\"ph\":\"i\",\"name\":\"app:tick\",\"cat\":\"usdt\"",
		"{\"ph\":\"C\",\"name\":\"cpu 0 freq\",\"cat\":\"cpu_frequency\"",
		"\"args\":{\"state\":-1}",
		"{\"ph\":\"X\",\"name\":\"LOST 5 events\",\"cat\":\"btrace_loss\"",
		"{\"ph\":\"X\",\"name\":\"IRQ 24\",\"cat\":\"irq_handler_entry,irq_handler_exit\"",
		"{\"ph\":\"X\",\"name\":\"NET_RX\",\"cat\":\"softirq_entry,softirq_exit\"",
		"{\"ph\":\"X\",\"name\":\"syscall 1\",\"cat\":\"sys_enter,sys_exit\"",
		"{\"ph\":\"X\",\"name\":\"app\",\"cat\":\"sched_switch\"",
		"\"end_state\":\"S\"",
		"\"loss.seq_gaps\":1,",
		"\"loss.rb_drops.cpu0.syscalls\":4,",
		/* the dump-info pseudo-thread is not CPU 0's (0x7fff0000) */
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":2147418112,\"tid\":2147442688,\"args\":{\"name\":\"btrace-bpf\"}}",
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":2147418112,\"tid\":2147418112,\"args\":{\"name\":\"CPU 0\"}}",
		"{\"ph\":\"i\",\"name\":\"btrace-bpf dump info\",\"cat\":\"btrace\",\"ts\":5000001,\"pid\":2147418112,\"tid\":2147442688",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(strstr(t, want[i]), "json has: %s", want[i]);
	CHECK(!strstr(t, "\"tid\":2147418112,\"args\":{\"name\":\"btrace-bpf\"}"), "CPU 0's pseudo-thread has one name");
	free(t);
	if (!have_python)
		return;
	CHECK(checker("json", js_path, D, EXPECT_UPROBE_PAIRS) == 0, "checker passes (see above)");
}

/* `report` prints names as the exporters do: escaped, one event per line.
 * Task names with a newline, an escape sequence, control characters, a
 * backslash and bytes that are not UTF-8 (tids 300, 600 and a rename). */
/* CPU runs in JSON at 3 h of uptime: back to back, so ts + dur (added in
 * floating point by the readers) must be exactly the next run's ts; and
 * the CPU's first switch, from a task no event showed running (a dump of
 * --comm tasks), is no run: before the fix it was one from the CPU's first
 * event, another task's time. */
/* CPU runs back to back at odd nanoseconds, 3 hours after boot and 60 days
 * (past 2^42 us, where doubles are ~1 ns apart and b - a is not the
 * duration to the ns: export_json_text.c's other regime). */
static void json_runs(uint64_t ts0, const char *name)
{
	char path[600], js[600], err[256], out[512];
	snprintf(path, sizeof(path), "%s/%s.btd", tmpdir, name);
	snprintf(js, sizeof(js), "%s/%s.json", tmpdir, name);
	struct bt_config cfg = { .size = 4u << 20, .block_size = 4096, .ncores = NCPUS };
	struct gen g = { .ts = ts0 };
	g.b = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(g.b, "buffer: %s", err);
	g.cur[0] = 101;
	ev_wake(&g, BT_EV_SCHED_WAKEUP, 0, 200); /* by 101: the CPU's first event */
	g.ts += 38000000000ull;
	g.cur[0] = 555; /* never seen running: its switch is an instant */
	ev_switch(&g, 0, 100, 1);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 3000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		g.ts += x % 997; /* odd nanoseconds: decimals that are not exact in binary */
		ev_switch(&g, 0, i & 1 ? 100 : 101, 1);
	}
	struct bt_dump_info info = { .ncpus = NCPUS, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .tasks = tasks,
				     .ntasks = sizeof(tasks) / sizeof(tasks[0]), .dump_seq = 1, .reason = "ctl",
				     .groups_enabled = 1 };
	int r = bt_dump_write(g.b, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(g.b);
	REQUIRE(r >= 0 && !g.failed, "write: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_JSON };
	CHECK(bt_export_file(d, js, &o, NULL, err, sizeof(err)) == 0, "convert: %s", err);
	bt_dump_close(d);
	if (have_python)
		CHECK(check_file("json", js, "") == 0, "%s: checker passes: no CPU run overlaps the next (see above)", name);
	size_t n = 0;
	char *t = (char *)h_read_file(js, &n);
	REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
	t[n] = '\0';
	const char *a = strstr(t, "\"args\":{\"tid\":555,");
	CHECK(a && !strstr(a + 1, "\"args\":{\"tid\":555,") && strstr(t, "\"s\":\"t\",\"args\":{\"tid\":555,"),
	      "%s: tid 555's switch is an instant, never a run", name);
	free(t);
}

static void test_json_runs(void)
{
	json_runs(10800123456789ull, "runs");
	json_runs(5184000123456789ull, "runs60d");
}

static void test_report_escapes(void)
{
	char *text = NULL;
	size_t len = 0, nev;
	bt_dump_events(D, &nev);
	FILE *f = open_memstream(&text, &len);
	REQUIRE(f, "open_memstream");
	CHECK(bt_dump_report(D, 0, f) == 0, "report");
	fclose(f);
	REQUIRE(text, "report text");
	size_t lines = 0, lost = 0, bad = 0;
	for (char *l = text, *e; *l; l = e + 1) {
		e = strchr(l, '\n');
		if (!e)
			break;
		*e = '\0';
		lines++;
		unsigned cpu;
		char col[2];
		if (!strncmp(l, "CPU:", 4))
			lost++;
		else if (strncmp(l, "cpus=", 5) && sscanf(l, "%*[^[][%3u]%1[ ]", &cpu, col) != 2 && bad++ < 3)
			printf("# not an event line: '%s'\n", l);
		for (const char *c = l; *c; c++)
			if ((unsigned char)*c < 0x20 && bad++ < 3)
				printf("# control character 0x%02x in: '%s'\n", *c, l);
		*e = '\n';
	}
	CHECK(lines == 1 + nev + lost && !bad, "one line per event: %zu lines, %zu events, %zu LOST, %zu bad", lines, nev,
	      lost, bad);
	const char *want[] = {
		"\nwe\"ird\\\\\\x01\\xff-300 ",                        /* leading column */
		"comm=evil\\nname\\x1b[m\\\\ pid=600 ",                   /* woken */
		"pid=600 oldcomm=evil\\nname\\x1b[m\\\\ newcomm=new\\nname\\r\\x85\n", /* renamed */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(strstr(text, want[i]), "report has: %s", want[i]);
	free(text);

	/* bt_escape_text: valid UTF-8 as is, C1 controls escaped, cut at a whole escape */
	char b[16];
	CHECK(!strcmp(bt_escape_text("caf\xc3\xa9 \xc2\x9b", 64, b, sizeof(b)), "caf\xc3\xa9 \\xc2\\x9b"), "utf-8: %s", b);
	CHECK(!strcmp(bt_escape_text("a\nb", 64, b, 4), "a\\n"), "cut: %s", b);
	CHECK(!strcmp(bt_escape_text("a\nb", 64, b, 3), "a"), "cut before an escape: %s", b);
}

/* ---- one-ended probes, per-process function counts ------------------------------ */

/* Probes of the scenario below: add (entry and %return), args6 (entry
 * only: no %return asked for), sleep (%return alone), all processes. */
enum { Q_ADD, Q_ADD_RET, Q_ARGS6, Q_SLEEP_RET, NQ };
static struct bt_probe_desc qprobes[NQ];
#define Q_DROPS 3 /* uprobe events the ring buffer dropped on CPU 0 */

static void init_qprobes(void)
{
	static const char *const fn[NQ] = { "add", "add", "args6", "sleep" };
	memset(qprobes, 0, sizeof(qprobes));
	for (int i = 0; i < NQ; i++) {
		qprobes[i].id = (uint32_t)i;
		qprobes[i].pid = -1;
		qprobes[i].offset = 0x1000 + 0x100 * (uint64_t)(i == Q_ADD_RET ? Q_ADD : i);
		snprintf(qprobes[i].func, sizeof(qprobes[i].func), "%s", fn[i]);
		snprintf(qprobes[i].binary, sizeof(qprobes[i].binary), "/usr/bin/app");
	}
	qprobes[Q_ADD_RET].flags = BT_PROBE_RETURN;
	qprobes[Q_SLEEP_RET].flags = BT_PROBE_RETURN;
}

/* A uprobe event on cpu by tid (pid: 100 for 100 and 101, else tid). */
static void q_up(struct gen *g, uint32_t cpu, uint32_t tid, uint32_t type, uint32_t probe, uint64_t dur)
{
	union any_ev e = { 0 };
	e.up.probe_id = probe;
	e.up.duration_ns = dur;
	e.up.ret = type == BT_EV_UPROBE_RETURN ? 7 : 0;
	e.up.nargs = type == BT_EV_UPROBE_ENTRY ? 1 : 0;
	e.up.args[0] = 42;
	g->cur[cpu] = tid;
	put(g, &e, type, cpu, tid, sizeof(e.up));
}

/* Calls on two CPUs by two processes (100: tids 100 and 101; 200), a seq
 * gap on CPU 1 (2 events missing), CPU 0's oldest events overwritten (its
 * first seq is 5), ring-buffer drops. Per process (pid 100, pid 200):
 *   add:   3 + 1 calls, all returned (2 us each), and 1 call by 200
 *   args6: 2 calls by 100, 1 by 200 (entry only)
 *   sleep: 2 timed returns by 100 (%return alone: 500 ns, 800 ns), 1 not
 *          timed (duration 0) */
static int make_qdump(const char *path)
{
	struct bt_config cfg = { .size = 1u << 20, .block_size = 4096, .ncores = NCPUS };
	char err[256], out[512];
	struct gen g = { 0 };
	g.ts = 9000000000ull;
	g.seq[0] = 5;
	g.b = bt_buffer_create(&cfg, err, sizeof(err));
	if (!g.b)
		return -1;
	for (int i = 0; i < 3; i++) { /* add { sleep } */
		q_up(&g, 0, 100, BT_EV_UPROBE_ENTRY, Q_ADD, 0);
		q_up(&g, 0, 100, BT_EV_UPROBE_RETURN, Q_SLEEP_RET, i < 2 ? 500 + 300 * (uint64_t)i : 0);
		q_up(&g, 0, 100, BT_EV_UPROBE_RETURN, Q_ADD_RET, 2000);
	}
	q_up(&g, 0, 100, BT_EV_UPROBE_ENTRY, Q_ARGS6, 0);
	q_up(&g, 0, 100, BT_EV_UPROBE_ENTRY, Q_ARGS6, 0);
	q_up(&g, 1, 101, BT_EV_UPROBE_ENTRY, Q_ADD, 0);
	g.seq[1] += 2; /* two events of CPU 1 lost */
	q_up(&g, 1, 101, BT_EV_UPROBE_RETURN, Q_ADD_RET, 3000);
	q_up(&g, 1, 200, BT_EV_UPROBE_ENTRY, Q_ADD, 0);
	q_up(&g, 1, 200, BT_EV_UPROBE_ENTRY, Q_ARGS6, 0);
	q_up(&g, 1, 200, BT_EV_UPROBE_RETURN, Q_ADD_RET, 2000);
	init_qprobes();
	uint64_t qdrops[NCPUS * BT_GROUP_MAX] = { 0 };
	qdrops[0 * BT_GROUP_MAX + BT_GROUP_UPROBE] = Q_DROPS;
	struct bt_dump_info info = {
		.ncpus = NCPUS, .ngroups = BT_GROUP_MAX, .rb_drops = qdrops,
		.tasks = tasks, .ntasks = sizeof(tasks) / sizeof(tasks[0]),
		.probes = qprobes, .nprobes = NQ, .dump_seq = 1, .reason = "ctl",
		.groups_enabled = 1u << BT_GROUP_UPROBE,
	};
	int r = bt_dump_write(g.b, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "  bt_dump_write: %s\n", err);
	bt_buffer_destroy(g.b);
	return g.failed ? -1 : r;
}

static char qdump_path[600];

/* -u 'f%return' alone: each return a slice ending at it, from the duration
 * it carries; entries of a function probed without %return are calls, not
 * "unmatched" (issue 13 item 2). */
static void test_one_ended_probes(void)
{
	char pf[700], js[700], err[256];
	snprintf(qdump_path, sizeof(qdump_path), "%s/probes.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/probes.perfetto-trace", tmpdir);
	snprintf(js, sizeof(js), "%s/probes.json", tmpdir);
	REQUIRE(make_qdump(qdump_path) == 0, "write the dump");
	struct bt_dump *d = bt_dump_open(qdump_path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	struct bt_export_stats st;
	for (int fmt = 0; fmt < 2; fmt++) {
		struct bt_export_opts o = { .format = fmt ? BT_EXPORT_JSON : BT_EXPORT_PERFETTO };
		memset(&st, 0, sizeof(st));
		CHECK(bt_export_file(d, fmt ? js : pf, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
		CHECK(st.uprobe_slices == 5 && st.uprobe_return_slices == 2 && st.uprobe_untimed == 1 &&
			      st.uprobe_calls == 3 && st.uprobe_unmatched == 0,
		      "%s: pairs %" PRIu64 ", return slices %" PRIu64 ", untimed %" PRIu64 ", calls %" PRIu64
		      ", unmatched %" PRIu64,
		      fmt ? "json" : "perfetto", st.uprobe_slices, st.uprobe_return_slices, st.uprobe_untimed,
		      st.uprobe_calls, st.uprobe_unmatched);
	}
	/* 5 pairs, 2 slices of %return-only probes, nothing unmatched */
	if (have_python && have_protoc)
		CHECK(checker2("perfetto", pf, d, 5, "--uretprobe-slices 2 --unmatched 0") == 0,
		      "checker passes on the perfetto output (see above)");
	if (have_python)
		CHECK(checker2("json", js, d, 5, "--uretprobe-slices 2 --unmatched 0") == 0,
		      "checker passes on the json output (see above)");
	if (have_protoc) {
		char *t = decode_subset(pf);
		CHECK(t, "protoc decodes %s", pf);
		/* the first sleep returned at 9000002000 after 500 ns: a slice from 9000001500 */
		const char *want[] = {
			"timestamp: 9000001500\n",
			"type: TYPE_SLICE_BEGIN\n",
			"categories: \"uretprobe\"\nname: \"sleep\"\n",
			"categories: \"uretprobe\"\nname: \"sleep (return, not timed)\"\n",
			"bool_value: true\nname: \"untimed\"\n",
			"uint_value: 500\nname: \"duration_ns\"\n",
			"categories: \"uprobe\"\nname: \"args6\"\n",
		};
		for (size_t i = 0; t && i < sizeof(want) / sizeof(want[0]); i++)
			CHECK(strstr(t, want[i]), "decoded trace has:\n%s", want[i]);
		CHECK(!t || (!strstr(t, "no return") && !strstr(t, "no entry") && !strstr(t, "\"unmatched\"")),
		      "nothing labelled unmatched");
		free(t);
	}
	size_t n = 0;
	char *t = (char *)h_read_file(js, &n);
	REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
	t[n] = '\0';
	const char *jwant[] = {
		"{\"ph\":\"X\",\"name\":\"sleep\",\"cat\":\"uretprobe\",\"ts\":9000001.5,\"pid\":100,\"tid\":100,"
		"\"dur\":0.5,\"args\":{\"ret\":7,\"ret_hex\":\"0x7\",\"duration_ns\":500}}",
		"{\"ph\":\"i\",\"name\":\"args6\",\"cat\":\"uprobe\"",
		"{\"ph\":\"i\",\"name\":\"sleep (return, not timed)\",\"cat\":\"uretprobe\"",
	};
	for (size_t i = 0; i < sizeof(jwant) / sizeof(jwant[0]); i++)
		CHECK(strstr(t, jwant[i]), "json has: %s", jwant[i]);
	CHECK(!strstr(t, "unmatched"), "json: nothing labelled unmatched");
	free(t);
	bt_dump_close(d);
}

/* ---- application events --------------------------------------------------------- */

#define APP_PID 500
static struct bt_task app_tasks[] = {
	{ .tid = 100, .tgid = 100, .comm = "other" },
	{ .tid = APP_PID, .tgid = APP_PID, .comm = "myapp" },
	{ .tid = 501, .tgid = APP_PID, .comm = "myapp-w1" },
	{ .tid = 502, .tgid = APP_PID, .comm = "myapp-w2" },
};
static const char app_names[3][64] = { "work", "tick", "queue" }; /* ids 1..3 */
enum { N_WORK = 1, N_TICK = 2, N_QUEUE = 3 };

struct appgen {
	struct bt_buffer *k, *a; /* kernel and application buffers */
	uint64_t ts;
	uint32_t kseq;
	uint32_t seq[3]; /* per thread 501, 502, 100 */
	int failed;
};

/* The kernel and application buffers of a generated dump (size bytes each,
 * 4 KiB blocks, 2 cores); 0, or -1 with err set. */
static int appgen_open(struct appgen *g, size_t size, char *err, size_t errlen)
{
	struct bt_config cfg = { .size = size, .block_size = 4096, .ncores = 2 };
	*g = (struct appgen){ .ts = 7000000000ull };
	g->k = bt_buffer_create(&cfg, err, errlen);
	g->a = bt_buffer_create(&cfg, err, errlen);
	return g->k && g->a ? 0 : -1;
}

static void app_ev(struct appgen *g, uint32_t tid, uint32_t type, uint32_t name, int nargs, int64_t a0, int64_t a1,
		   int64_t a2)
{
	union { struct bt_ev_app e; uint8_t raw[sizeof(struct bt_ev_app) + 8 * BT_APP_MAX_ARGS]; } u;
	memset(&u, 0, sizeof(u));
	uint32_t *sq = &g->seq[tid == 501 ? 0 : tid == 502 ? 1 : 2];
	u.e.h.ts_ns = (g->ts += 1000);
	u.e.h.seq = (*sq)++;
	u.e.h.tid = tid;
	u.e.h.tgid = APP_PID; /* the application's process (the one that lies about tid 100 too) */
	u.e.h.cpu = (uint16_t)(tid & 1);
	u.e.h.type = (uint16_t)type;
	u.e.name_id = name;
	u.e.nargs = (uint16_t)nargs;
	int64_t v[3] = { a0, a1, a2 };
	for (int i = 0; i < nargs; i++)
		u.e.args[i] = v[i];
	if (bt_write(g->a, tid & 1, &u, (uint32_t)(sizeof(u.e) + 8u * (uint32_t)nargs)) != 0)
		g->failed++;
}

static void app_switch(struct appgen *g, uint32_t prev, uint32_t next)
{
	struct bt_ev_sched_switch e = { 0 };
	e.h.ts_ns = (g->ts += 1000);
	e.h.seq = g->kseq++;
	e.h.tid = prev;
	e.h.tgid = prev == 100 ? 100 : prev ? APP_PID : 0;
	e.h.type = BT_EV_SCHED_SWITCH;
	e.prev_tid = prev;
	e.next_tid = next;
	e.prev_prio = e.next_prio = 120;
	if (fx_store(g->k, 0, &e.h, sizeof(e)) != 0)
		g->failed++;
}

/* A uprobe event of an application thread (kernel buffer, kernel seq). */
static void app_uprobe(struct appgen *g, uint32_t tid, uint32_t type, uint32_t probe)
{
	struct bt_ev_uprobe e = { 0 };
	e.h.ts_ns = (g->ts += 1000);
	e.h.seq = g->kseq++;
	e.h.tid = tid;
	e.h.tgid = APP_PID;
	e.h.type = (uint16_t)type;
	e.probe_id = probe;
	if (type == BT_EV_UPROBE_RETURN)
		e.duration_ns = 2000, e.ret = 42;
	if (fx_store(g->k, 0, &e.h, sizeof(e)) != 0)
		g->failed++;
}

static int app_block_cb(const struct bt_block_view *blk, void *ctx)
{
	return bt_dump_sink_app_block(ctx, 0, blk);
}

static int app_write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_dump_app app = { .pid = APP_PID, .flags = BT_APP_EXITED, .name = "myapp", .nnames = 3,
				   .names = app_names };
	app.counters[BT_APPC_BLOCKS_BAD] = 2;
	app.counters[BT_APPC_DROPPED] = 7;
	struct bt_read_stats st;
	int r = bt_read(ctx, app_block_cb, s, &st);
	return r < 0 ? r : bt_dump_sink_apps(s, &app, 1);
}

/* Expected from the scenario below. */
#define APP_SLICES 3
#define APP_OPEN 1
#define APP_UNMATCHED 2
#define APP_INSTANTS 2
#define APP_COUNTERS 2
#define APP_GAPS 1
#define APP_MISSING 2
#define APP_DROPPED 1

static int make_app_dump(const char *path)
{
	char err[256], out[512];
	struct appgen g;
	if (appgen_open(&g, 1u << 20, err, sizeof(err))) {
		fprintf(stderr, "  bt_buffer_create: %s\n", err);
		return -1;
	}
	app_switch(&g, 0, 501);
	/* tid 501 */
	app_ev(&g, 501, BT_EV_APP_END, 0, 0, 0, 0, 0);                /* its BEGIN is older than the dump:
								 * drawn from the dump's start */
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 1, 1, 0, 0);         /* work { */
	app_ev(&g, 501, BT_EV_APP_INSTANT, N_TICK, 3, 7, -8, 9);      /*   tick */
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 1, 2, 0, 0);         /*   work { */
	app_uprobe(&g, 501, BT_EV_UPROBE_ENTRY, 0);                   /*     do_work( (a uprobe: */
	app_uprobe(&g, 501, BT_EV_UPROBE_RETURN, 1);                  /*     ) the same thread) */
	app_ev(&g, 501, BT_EV_APP_END, 0, 0, 0, 0, 0);                /*   } */
	app_ev(&g, 501, BT_EV_APP_END, 0, 0, 0, 0, 0);                /* }: 2 slices */
	app_ev(&g, 501, BT_EV_APP_COUNTER, N_QUEUE, 1, 5, 0, 0);
	app_switch(&g, 501, 502);
	app_ev(&g, 502, BT_EV_APP_BEGIN, N_WORK, 0, 0, 0, 0);
	app_ev(&g, 502, BT_EV_APP_END, 0, 0, 0, 0, 0);                /* 3 slices */
	app_ev(&g, 502, BT_EV_APP_COUNTER, N_QUEUE, 1, 7, 0, 0);
	app_ev(&g, 502, BT_EV_APP_INSTANT, 99, 0, 0, 0, 0);           /* a name id never registered */
	app_ev(&g, 100, BT_EV_APP_INSTANT, N_TICK, 0, 0, 0, 0);       /* a tid of another process */
	app_switch(&g, 502, 501);
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 1, 3, 0, 0);         /* work { ... */
	g.seq[0] += 2;                                                /* two events of 501 lost */
	app_ev(&g, 501, BT_EV_APP_END, 0, 0, 0, 0, 0);                /* its END or another's: alone */
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 1, 4, 0, 0);         /* open at the end of the dump */
	app_switch(&g, 501, 0);
	struct bt_probe_desc up[2] = { { .id = 0, .pid = APP_PID, .offset = 0x1100, .binary = "/usr/bin/myapp",
					 .func = "do_work" } };
	up[1] = up[0];
	up[1].id = 1;
	up[1].flags = BT_PROBE_RETURN;
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .tasks = app_tasks,
		.ntasks = sizeof(app_tasks) / sizeof(app_tasks[0]), .dump_seq = 1, .reason = "ctl",
		.groups_enabled = 1 | 1u << BT_GROUP_UPROBE, .write_apps = app_write_apps, .apps_ctx = g.a,
		.probes = up, .nprobes = 2,
	};
	int r = bt_dump_write(g.k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "  bt_dump_write: %s\n", err);
	bt_buffer_destroy(g.k);
	bt_buffer_destroy(g.a);
	return g.failed ? -1 : r;
}

static void check_app_stats(const char *what, const struct bt_export_stats *st, size_t nev)
{
	CHECK(st->events == nev, "%s: converted %" PRIu64 " of %zu events", what, st->events, nev);
	CHECK(st->app_slices == APP_SLICES && st->app_open == APP_OPEN && st->app_unmatched == APP_UNMATCHED &&
		      st->app_instants == APP_INSTANTS && st->app_counters == APP_COUNTERS,
	      "%s: app slices %" PRIu64 " open %" PRIu64 " unmatched %" PRIu64 " instants %" PRIu64 " counters %" PRIu64,
	      what, st->app_slices, st->app_open, st->app_unmatched, st->app_instants, st->app_counters);
	CHECK(st->app_gaps == APP_GAPS && st->app_missing == APP_MISSING && st->app_dropped == APP_DROPPED,
	      "%s: app gaps %" PRIu64 " missing %" PRIu64 " dropped %" PRIu64, what, st->app_gaps, st->app_missing,
	      st->app_dropped);
	CHECK(st->encl_apps == 1 && st->encl_funcs == 0 && st->closed_at_exit == 0,
	      "%s: app slices begun before the dump %" PRIu64 ", calls %" PRIu64 ", closed at an exit %" PRIu64, what,
	      st->encl_apps, st->encl_funcs, st->closed_at_exit);
}

static void test_app_events(void)
{
	char path[600], pf[600], js[600], err[256];
	snprintf(path, sizeof(path), "%s/app.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/app.perfetto-trace", tmpdir);
	snprintf(js, sizeof(js), "%s/app.json", tmpdir);
	REQUIRE(make_app_dump(path) == 0, "write a dump with application events");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	size_t nev, napps;
	const struct bt_dump_event *ev = bt_dump_events(d, &nev);
	bt_dump_apps(d, &napps);
	size_t nappev = 0;
	for (size_t i = 0; i < nev; i++)
		nappev += ev[i].app >= 0;
	CHECK(napps == 1 && nappev == 15, "the dump has 1 application and its 15 events (%zu, %zu)", napps, nappev);

	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 };
	struct bt_export_stats st;
	CHECK(bt_export_file(d, pf, &o, &st, err, sizeof(err)) == 0, "convert to perfetto: %s", err);
	check_app_stats("perfetto", &st, nev);
	o.format = BT_EXPORT_JSON;
	CHECK(bt_export_file(d, js, &o, &st, err, sizeof(err)) == 0, "convert to json: %s", err);
	check_app_stats("json", &st, nev);

	/* the shown events per type: the dump's, less the one of another process's thread */
	const char *expect = "sched_switch=4,uprobe=1,uretprobe=1,app_begin=5,app_end=5,app_instant=2,app_counter=2";
	char args[1024];
	snprintf(args, sizeof(args),
		 "--expect '%s' --gaps 0 --app-slices %d --app-gaps %d --uprobe-slices 1 --begun-before 1", expect,
		 APP_SLICES, APP_GAPS);
	if (have_python && have_protoc)
		CHECK(check_file("perfetto", pf, args) == 0, "checker passes on the perfetto output (see above)");
	if (have_python)
		CHECK(check_file("json", js, args) == 0, "checker passes on the json output (see above)");
	if (have_protoc) {
		char *t = decode_subset(pf);
		CHECK(t, "protoc decodes %s", pf);
		const char *want[] = {
			"process {\npid: 500\nprocess_name: \"myapp\"\n}",
			/* one thread track for 501, its uprobes and its application events on named children */
			"uuid: 8019\nthread {\npid: 500\ntid: 501\nthread_name: \"myapp-w1\"\n}",
			"name: \"app events\"\nparent_uuid: 8019\n",
			"name: \"uprobes\"\nparent_uuid: 8019\n",
			"categories: \"uprobe\"\nname: \"do_work\"\n",
			"name: \"queue\"\nparent_uuid: ",
			"type: TYPE_COUNTER\ntrack_uuid: ",
			"counter_value: 7\n",
			"debug_annotations {\nint_value: 7\nname: \"arg1\"\n}\ndebug_annotations {\nint_value: -8\n"
			"name: \"arg2\"\n}\ndebug_annotations {\nint_value: 9\nname: \"arg3\"\n}",
			"categories: \"app\"\nname: \"tick\"\n",
			"categories: \"app\"\nname: \"work\"\n",
			"categories: \"app\"\nname: \"work (begin, no end)\"\n",
			"categories: \"app\"\nname: \"end (no begin)\"\n",
			"categories: \"app\"\nname: \"name#99\"\n",
			"bool_value: true\nname: \"open_at_dump_end\"\n",
			"categories: \"btrace\"\nname: \"LOST 2 events\"\n",
			"uint_value: 1\nname: \"loss.app_seq_gaps\"\n",
			"uint_value: 1\nname: \"loss.app_unmatched_ends\"\n",
			"bool_value: true\nname: \"begun_before_window\"\n",
			"uint_value: 2\nname: \"loss.app.500.seq_missing\"\n",
			"uint_value: 2\nname: \"loss.app.500.blocks_bad\"\n",
			"uint_value: 7\nname: \"loss.app.500.app_dropped\"\n",
		};
		for (size_t i = 0; t && i < sizeof(want) / sizeof(want[0]); i++)
			CHECK(strstr(t, want[i]), "decoded trace has:\n%s", want[i]);
		CHECK(!t || !strstr(t, "tid: 100\nthread_name: \"other\""), "no app track for another process's thread");
		free(t);
	}
	size_t n = 0;
	char *t = (char *)h_read_file(js, &n);
	REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
	t[n] = '\0';
	const char *jwant[] = {
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":500,\"tid\":0,\"args\":{\"name\":\"myapp\"}}",
		"{\"ph\":\"B\",\"name\":\"work\",\"cat\":\"app_begin\"",
		"{\"ph\":\"E\",\"name\":\"work\",\"cat\":\"app_end\"",
		"{\"ph\":\"i\",\"name\":\"tick\",\"cat\":\"app_instant\"",
		"\"pid\":500,\"tid\":501,\"s\":\"t\",\"args\":{\"arg1\":7,\"arg2\":-8,\"arg3\":9}}",
		"{\"ph\":\"C\",\"name\":\"queue\",\"cat\":\"app_counter\"",
		"\"args\":{\"value\":7}}",
		"{\"ph\":\"i\",\"name\":\"end (no begin)\",\"cat\":\"app_end\"",
		"{\"ph\":\"i\",\"name\":\"work (begin, no end)\",\"cat\":\"app_begin\"",
		"\"open_at_dump_end\":true",
		/* the slice its first END closes, from the dump's first event */
		"{\"ph\":\"X\",\"name\":\"slice begun before the window\",\"cat\":\"app_end\",\"ts\":7000001,\"pid\":500,\"tid\":501,"
		"\"dur\":1,\"args\":{\"begun_before_window\":true}}",
		"{\"ph\":\"i\",\"name\":\"LOST 2 events\",\"cat\":\"btrace_app_loss\"",
		"\"loss.app.500.blocks_bad\":2,",
		"\"loss.app.500.app_dropped\":7,",
	};
	for (size_t i = 0; i < sizeof(jwant) / sizeof(jwant[0]); i++)
		CHECK(strstr(t, jwant[i]), "json has: %s", jwant[i]);
	CHECK(!strstr(t, "\"pid\":500,\"tid\":100"), "json: no event of another process's thread");
	free(t);
	bt_dump_close(d);
}

/* ---- function call charts at the window's edges ---------------------------------- */

/* One function batch of tid 501 (1 ns per tick): words[i] = kind, function. */
static void func_batch(struct appgen *g, uint32_t seq, const unsigned *kind, const uint64_t *fn, int n)
{
	if (fx_func_batch(g->a, g->ts += 1000, seq, 501, APP_PID, kind, fn, n) != 0)
		g->failed++;
	g->ts += 100u * (uint64_t)n;
}

static int funcs_write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_dump_app app = { .pid = APP_PID, .name = "myapp" };
	struct bt_read_stats st;
	int r = bt_read(ctx, app_block_cb, s, &st);
	return r < 0 ? r : bt_dump_sink_apps(s, &app, 1);
}

/* An exit whose entry is before the window (drawn from its start, marked),
 * a matched call, two calls whose exits fall in a seq gap (instants), an
 * exit after the gap (dropped), a call open at the end (closed there,
 * marked). */
static void test_func_edges(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], pf[600], js[600], err[256], out[512];
	snprintf(path, sizeof(path), "%s/funcs.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/funcs.perfetto-trace", tmpdir);
	snprintf(js, sizeof(js), "%s/funcs.json", tmpdir);
	struct appgen g;
	REQUIRE(appgen_open(&g, 1u << 20, err, sizeof(err)) == 0, "buffers: %s", err);
	app_switch(&g, 0, 501);
	const unsigned k1[] = { X, E, E, X, E };
	const uint64_t f1[] = { 0x401000, 0x401100, 0x401200, 0x401200, 0x401200 };
	func_batch(&g, 10, k1, f1, 5);
	const unsigned k2[] = { X, E };
	const uint64_t f2[] = { 0x401100, 0x401300 };
	func_batch(&g, 17, k2, f2, 2); /* seqs 15, 16 lost */
	app_switch(&g, 501, 0);
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .tasks = app_tasks,
		.ntasks = sizeof(app_tasks) / sizeof(app_tasks[0]), .dump_seq = 1, .reason = "ctl",
		.groups_enabled = 1, .write_apps = funcs_write_apps, .apps_ctx = g.a,
	};
	int r = bt_dump_write(g.k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(g.k);
	bt_buffer_destroy(g.a);
	REQUIRE(r >= 0 && !g.failed, "write a dump with function batches: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 };
	for (int json = 0; json < 2; json++) {
		struct bt_export_stats st;
		o.format = json ? BT_EXPORT_JSON : BT_EXPORT_PERFETTO;
		CHECK(bt_export_file(d, json ? js : pf, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
		CHECK(st.func_slices == 1 && st.func_open == 1 && st.func_unmatched == 2 && st.func_exits_dropped == 1 &&
			      st.encl_funcs == 1,
		      "%s: calls %" PRIu64 " open %" PRIu64 " exit lost %" PRIu64 " exits without entry %" PRIu64
		      " begun before %" PRIu64,
		      json ? "json" : "perfetto", st.func_slices, st.func_open, st.func_unmatched,
		      st.func_exits_dropped, st.encl_funcs);
	}
	/* shown: 5 entries (2 matched or open, 2 instants... 1 open), 1 exit */
	const char *args = "--expect sched_switch=2,func_entry=4,func_exit=2 --func-slices 1 --func-open 1 --app-gaps 1 "
			   "--begun-before 1";
	if (have_python && have_protoc)
		CHECK(check_file("perfetto", pf, args) == 0, "checker passes on the perfetto output (see above)");
	if (have_python)
		CHECK(check_file("json", js, args) == 0, "checker passes on the json output (see above)");
	size_t n = 0;
	char *t = (char *)h_read_file(js, &n);
	REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
	t[n] = '\0';
	CHECK(strstr(t, "{\"ph\":\"i\",\"name\":\"0x401200 (entry, exit lost)\",\"cat\":\"func_entry\""),
	      "json: the call whose exit fell in the gap is an instant");
	CHECK(strstr(t, "\"loss.app_func_exits_without_entry\":1"), "json: exits without entry counted");
	free(t);
	bt_dump_close(d);
}

/* A 600-deep recursion, its outermost call open at the dump's end: trace
 * processor keeps 512 open slices a track, so the 512th is a marker for the
 * 89 calls below it (each of its own address), and every END closes its own
 * BEGIN (replayed by the checker: a BEGIN past 512 open ones fails). */
#define DEEP 600
static void test_func_deep(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], pf[600], err[256], out[512];
	snprintf(path, sizeof(path), "%s/deep.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/deep.perfetto-trace", tmpdir);
	struct appgen g;
	REQUIRE(appgen_open(&g, 4u << 20, err, sizeof(err)) == 0, "buffers: %s", err);
	app_switch(&g, 0, 501);
	unsigned kind[2 * DEEP];
	uint64_t fn[2 * DEEP];
	int n = 0;
	for (int i = 0; i < DEEP; i++, n++)
		kind[n] = E, fn[n] = 0x401000 + 16u * (unsigned)i;
	for (int i = DEEP - 1; i > 0; i--, n++) /* the outermost call stays open */
		kind[n] = X, fn[n] = 0x401000 + 16u * (unsigned)i;
	for (int i = 0; i < n; i += 64)
		func_batch(&g, 10 + (uint32_t)i, kind + i, fn + i, n - i < 64 ? n - i : 64);
	app_switch(&g, 501, 0);
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .tasks = app_tasks,
		.ntasks = sizeof(app_tasks) / sizeof(app_tasks[0]), .dump_seq = 1, .reason = "ctl",
		.groups_enabled = 1, .write_apps = funcs_write_apps, .apps_ctx = g.a,
	};
	int r = bt_dump_write(g.k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(g.k);
	bt_buffer_destroy(g.a);
	REQUIRE(r >= 0 && !g.failed, "write a dump with function batches: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 };
	struct bt_export_stats st;
	CHECK(bt_export_file(d, pf, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
	CHECK(st.func_slices == DEEP - 1 && st.func_open == 1 && st.func_too_deep == DEEP - 511,
	      "calls %" PRIu64 " open %" PRIu64 " hidden below the marker %" PRIu64, st.func_slices, st.func_open,
	      st.func_too_deep);
	/* drawn: the open call, 510 matched ones, the marker */
	if (have_python && have_protoc)
		CHECK(check_file("perfetto", pf, "--func-slices 510 --func-open 1 --func-deep-markers 1") == 0,
		      "checker passes on the perfetto output (see above)");
	bt_dump_close(d);
}

static int run_tool(int (*cmd)(int, char **), char *name, char *const *args, int nargs, char *errout, size_t errlen,
		    const char *stdout_path);

/* A kernel event: thread tid exits. */
static void app_exit(struct appgen *g, uint32_t tid)
{
	struct bt_ev_task e = { 0 };
	e.h.ts_ns = (g->ts += 1000);
	e.h.seq = g->kseq++;
	e.h.tid = e.tid = tid;
	e.h.tgid = e.tgid = APP_PID;
	e.h.type = BT_EV_PROCESS_EXIT;
	if (fx_store(g->k, 0, &e.h, sizeof(e)) != 0)
		g->failed++;
}

/* A deep call cut by --time, its thread dying inside the window: the app
 * slice "work", main, rec and rec begin before the window; a leaf call
 * and the inner rec end in it; main, the outer rec and "work" are open when
 * the thread exits, before the dump's end. With the window: 4 drawn from
 * its start (entry times kept), 3 closed at the exit; without: 3 closed
 * at the exit, nothing begun before. */
static void test_func_window(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], pf[600], js[600], err[256], out[512], win[64];
	snprintf(path, sizeof(path), "%s/window.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/window.perfetto-trace", tmpdir);
	snprintf(js, sizeof(js), "%s/window.json", tmpdir);
	struct appgen g;
	REQUIRE(appgen_open(&g, 1u << 20, err, sizeof(err)) == 0, "buffers: %s", err);
	app_switch(&g, 0, 501);
	const unsigned k1[] = { E, E, E, E, X };
	const uint64_t f1[] = { 0x401000, 0x401100, 0x401100, 0x401200, 0x401200 };
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 0, 0, 0, 0);
	func_batch(&g, g.seq[0]++, k1, f1, 5);
	app_switch(&g, 501, 502);
	uint64_t t0 = g.ts + 500; /* the window's start */
	app_switch(&g, 502, 100);             /* a task of another process */
	app_switch(&g, 100, 501);
	const unsigned k2[] = { E, X, X };
	const uint64_t f2[] = { 0x401200, 0x401200, 0x401100 };
	func_batch(&g, g.seq[0]++, k2, f2, 3);
	app_exit(&g, 501);
	app_switch(&g, 501, 0);
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .tasks = app_tasks,
		.ntasks = sizeof(app_tasks) / sizeof(app_tasks[0]), .dump_seq = 1, .reason = "ctl",
		.groups_enabled = 1, .write_apps = funcs_write_apps, .apps_ctx = g.a,
	};
	int r = bt_dump_write(g.k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(g.k);
	bt_buffer_destroy(g.a);
	REQUIRE(r >= 0 && !g.failed, "write a dump with function batches: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	struct bt_event_filter flt = { 0 };
	snprintf(win, sizeof(win), "@%" PRIu64 ".%09" PRIu64 "..", t0 / 1000000000u, t0 % 1000000000u);
	REQUIRE(bt_filter_parse_time_range(&flt, win) == 0, "parse %s", win);
	for (int windowed = 1; windowed >= 0; windowed--) {
		struct bt_export_opts o = { .compact_sched = 1, .filter = windowed ? &flt : NULL };
		for (int json = 0; json < 2; json++) {
			struct bt_export_stats st;
			o.format = json ? BT_EXPORT_JSON : BT_EXPORT_PERFETTO;
			CHECK(bt_export_file(d, json ? js : pf, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
			uint64_t want_calls = windowed ? 1 : 3, want_before = windowed ? 3 : 0;
			CHECK(st.func_slices == want_calls && st.encl_funcs == want_before &&
				      st.encl_apps == (uint64_t)windowed && st.closed_at_exit == 3 &&
				      st.func_exits_dropped == 0 && st.func_open == (windowed ? 0 : 2),
			      "%s%s: calls %" PRIu64 " begun before %" PRIu64 "+%" PRIu64 " closed at the exit %" PRIu64
			      " exits without entry %" PRIu64 " open %" PRIu64,
			      json ? "json" : "perfetto", windowed ? " --time" : "", st.func_slices, st.encl_funcs,
			      st.encl_apps, st.closed_at_exit, st.func_exits_dropped, st.func_open);
		}
		char args[256];
		snprintf(args, sizeof(args), "--func-slices %d --begun-before %d --closed-at-exit 3", windowed ? 1 : 3,
			 windowed ? 4 : 0);
		if (have_python && have_protoc)
			CHECK(check_file("perfetto", pf, args) == 0, "checker passes on the perfetto output%s (see above)",
			      windowed ? " of the window" : "");
		if (have_python)
			CHECK(check_file("json", js, args) == 0, "checker passes on the json output%s (see above)",
			      windowed ? " of the window" : "");
		if (!windowed)
			continue;
		size_t n = 0;
		char *t = (char *)h_read_file(js, &n);
		REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
		t[n] = '\0';
		char want[160], us[32];
		int ul = snprintf(us, sizeof(us), "%" PRIu64 ".%03" PRIu64, t0 / 1000, t0 % 1000);
		while (us[ul - 1] == '0' || us[ul - 1] == '.') /* the shortest form: 7000005.5 */
			if (us[--ul] == '.') {
				us[ul] = '\0';
				break;
			} else {
				us[ul] = '\0';
			}
		snprintf(want, sizeof(want), "{\"ph\":\"X\",\"name\":\"0x401000\",\"cat\":\"func\",\"ts\":%s,", us);
		CHECK(strstr(t, want), "json: main drawn from the window's start: %s", want);
		CHECK(strstr(t, "\"begun_before_window\":true,\"began_ns\":7000003000,\"closed_at_thread_exit\":true"),
		      "json: main's real start kept, closed at its thread's exit");
		free(t);
	}
	bt_filter_free(&flt);

	/* -p 501: a Perfetto trace of that thread alone, its CPU's chain whole
	 * (the switches between 502 and 100 left out: idle between) */
	struct bt_event_filter pflt = { 0 };
	REQUIRE(bt_filter_parse_pids(&pflt, "501") == 0, "parse -p 501");
	struct bt_export_opts po = { .format = BT_EXPORT_PERFETTO, .filter = &pflt };
	for (int compact = 0; compact < 2; compact++) {
		po.compact_sched = compact;
		CHECK(bt_export_file(d, pf, &po, NULL, err, sizeof(err)) == 0, "convert -p 501: %s", err);
		if (have_python && have_protoc)
			CHECK(check_file("perfetto", pf, "--switch-chain --tree-tids 501 --closed-at-exit 3") == 0,
			      "checker passes on the -p 501 perfetto output%s (see above)", compact ? " (compact)" : "");
	}
	bt_filter_free(&pflt);
	bt_dump_close(d);

	/* report's listing of the window: main and both recs before its first line of 501 */
	char outp[700], rerr[1024];
	char *args[] = { "--time", win, path };
	snprintf(outp, sizeof(outp), "%s/window.txt", tmpdir);
	CHECK(run_tool(cmd_report, "report", args, 3, rerr, sizeof(rerr), outp) == 0, "report --time: %s", rerr);
	size_t n = 0;
	char *t = (char *)h_read_file(outp, &n);
	REQUIRE(t && (t = realloc(t, n + 1)), "read %s", outp);
	t[n] = '\0';
	for (char *l = t, *e; (e = strchr(l, '\n')); l = e + 1)
		printf("#   %.*s\n", (int)(e - l), l);
	const char *main_l = strstr(t, "func_entry: 0x401000 [begun before the window, at 7.000003]\n");
	const char *rec_l = strstr(t, "func_entry:     0x401100 [begun before the window, at 7.000003]\n");
	const char *leaf_l = strstr(t, "func_entry:       0x401200\n");
	CHECK(main_l && rec_l && leaf_l && main_l < rec_l && rec_l < leaf_l,
	      "report --time lists the enclosing calls first, at their depths");
	free(t);
}

/* ns as the JSON writes microseconds: the shortest exact form (7000005.5). */
static const char *short_us(uint64_t ns, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

/* A kernel event of tid (tgid APP_PID): TASK_RENAME to comm. */
static void app_rename(struct appgen *g, uint32_t tid, const char *comm)
{
	struct bt_ev_task e = { 0 };
	e.h.ts_ns = (g->ts += 1000);
	e.h.seq = g->kseq++;
	e.h.tid = e.tid = tid;
	e.h.tgid = e.tgid = APP_PID;
	e.h.type = BT_EV_TASK_RENAME;
	snprintf(e.comm, sizeof(e.comm), "%s", comm);
	if (fx_store(g->k, 0, &e.h, sizeof(e)) != 0)
		g->failed++;
}

/* A crash: thread 501 dies inside a deep call, its sched_process_exit not
 * in the dump (overwritten), the task table saying it exited; the dump goes
 * on after it. The app slice "work", main and the outer rec are open at its
 * death: closed at its last event (the switch away from it), marked
 * closed_at_thread_last_event, never drawn to the dump's end. Cut by
 * --time, the same with those and the inner rec (4) drawn from the window's start; a window
 * ending before the death keeps them open to its end, one after it draws
 * none of them (501 died before it). Thread 503, not in
 * the task table, renamed before the window and running in it: named in
 * the window's JSON. */
static void test_func_died(void)
{
	enum { E = BT_FREC_ENTRY, X = BT_FREC_EXIT };
	char path[600], pf[600], js[600], err[256], out[512], win[64], early[96], late[64];
	snprintf(path, sizeof(path), "%s/died.btd", tmpdir);
	snprintf(pf, sizeof(pf), "%s/died.perfetto-trace", tmpdir);
	snprintf(js, sizeof(js), "%s/died.json", tmpdir);
	struct appgen g;
	REQUIRE(appgen_open(&g, 1u << 20, err, sizeof(err)) == 0, "buffers: %s", err);
	app_switch(&g, 0, 501);
	const unsigned k1[] = { E, E, E, E, X };
	const uint64_t f1[] = { 0x401000, 0x401100, 0x401100, 0x401200, 0x401200 };
	app_ev(&g, 501, BT_EV_APP_BEGIN, N_WORK, 0, 0, 0, 0);
	func_batch(&g, g.seq[0]++, k1, f1, 5);
	app_rename(&g, 503, "w503");
	app_switch(&g, 501, 502);
	uint64_t t0 = g.ts + 500; /* the window's start */
	app_switch(&g, 502, 503);
	app_switch(&g, 503, 501);
	const unsigned k2[] = { E, X, X };
	const uint64_t f2[] = { 0x401200, 0x401200, 0x401100 };
	func_batch(&g, g.seq[0]++, k2, f2, 3);
	uint64_t t_mid = g.ts; /* before its death */
	app_switch(&g, 501, 0); /* its last event */
	uint64_t t_last = g.ts;
	app_switch(&g, 0, 100);
	app_switch(&g, 100, 0);
	struct bt_task dtasks[sizeof(app_tasks) / sizeof(app_tasks[0])];
	memcpy(dtasks, app_tasks, sizeof(dtasks));
	dtasks[2].exit_ts = t_last + 300; /* 501: exited, its exit event not in the dump */
	struct bt_dump_info info = {
		.ncpus = 2, .ngroups = BT_GROUP_MAX, .tasks = dtasks, .ntasks = sizeof(dtasks) / sizeof(dtasks[0]),
		.dump_seq = 1, .reason = "trigger", .groups_enabled = 1, .write_apps = funcs_write_apps, .apps_ctx = g.a,
	};
	int r = bt_dump_write(g.k, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(g.k);
	bt_buffer_destroy(g.a);
	REQUIRE(r >= 0 && !g.failed, "write a dump with function batches: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open it: %s", err);
	struct bt_event_filter flt = { 0 }, eflt = { 0 }, lflt = { 0 };
	snprintf(win, sizeof(win), "@%" PRIu64 ".%09" PRIu64 "..", t0 / 1000000000u, t0 % 1000000000u);
	REQUIRE(bt_filter_parse_time_range(&flt, win) == 0, "parse %s", win);
	snprintf(early, sizeof(early), "@%" PRIu64 ".%09" PRIu64 "..@%" PRIu64 ".%09" PRIu64, t0 / 1000000000u,
		 t0 % 1000000000u, t_mid / 1000000000u, t_mid % 1000000000u);
	REQUIRE(bt_filter_parse_time_range(&eflt, early) == 0, "parse %s", early);
	uint64_t t_after = t_last + 500;
	snprintf(late, sizeof(late), "@%" PRIu64 ".%09" PRIu64 "..", t_after / 1000000000u, t_after % 1000000000u);
	REQUIRE(bt_filter_parse_time_range(&lflt, late) == 0, "parse %s", late);
	/* the whole dump, --time from t0, --time t0..t_mid, --time after the death */
	for (int run = 0; run < 4; run++) {
		struct bt_export_opts o = { .compact_sched = 1,
					    .filter = run == 1 ? &flt : run == 2 ? &eflt : run == 3 ? &lflt : NULL };
		const char *what = run == 0 ? "" : run == 1 ? " --time" : run == 2 ? " --time ending before the death"
								      : " --time after the death";
		for (int json = 0; json < 2; json++) {
			struct bt_export_stats st;
			o.format = json ? BT_EXPORT_JSON : BT_EXPORT_PERFETTO;
			CHECK(bt_export_file(d, json ? js : pf, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
			/* after the death: nothing of 501 drawn (it died before the window) */
			CHECK(st.closed_at_last == (run < 2 ? 3u : 0u) && st.closed_at_exit == 0 &&
				      st.encl_funcs + st.encl_apps == (run == 1 || run == 2 ? 4u : 0u),
			      "%s%s: closed at the last event %" PRIu64 " at an exit %" PRIu64 " begun before %" PRIu64
			      "+%" PRIu64,
			      json ? "json" : "perfetto", what, st.closed_at_last, st.closed_at_exit, st.encl_funcs,
			      st.encl_apps);
		}
		char args[256];
		snprintf(args, sizeof(args), "--begun-before %d --closed-at-exit 0 --closed-at-last %d",
			 run == 1 || run == 2 ? 4 : 0,
			 run < 2 ? 3 : 0);
		if (have_python && have_protoc)
			CHECK(check_file("perfetto", pf, args) == 0, "checker passes on the perfetto output%s (see above)",
			      what);
		if (have_python)
			CHECK(check_file("json", js, args) == 0, "checker passes on the json output%s (see above)", what);
		size_t n = 0;
		char *t = (char *)h_read_file(js, &n);
		REQUIRE(t && (t = realloc(t, n + 1)), "read %s", js);
		t[n] = '\0';
		if (run < 2) {
			/* main: from its entry (7.000003) or the window's start, to 501's last switch */
			char want[200], us[32], dur[64];
			uint64_t from = run ? t0 : 7000003000ull;
			snprintf(want, sizeof(want), "\"name\":\"0x401000\",\"cat\":\"%s\",\"ts\":%s,",
				 run ? "func" : "func_entry", short_us(from, us, sizeof(us)));
			const char *m = strstr(t, want);
			/* dur: the exact double of the end less the start's (export_json_text.c) */
			const char *dp = m ? strstr(m, "\"dur\":") : NULL;
			double x = dp && dp < strchr(m, '}') ? strtod(dp + 6, NULL) : -1;
			snprintf(dur, sizeof(dur), "%s", short_us(t_last - from, us, sizeof(us)));
			CHECK(x == (double)t_last / 1000.0 - (double)from / 1000.0, "json: main %s ends at 501's last event (%s)",
			      want, dur);
		}
		/* 503 renamed before the window, not in the task table */
		CHECK(run == 3 || strstr(t, "\"name\":\"thread_name\",\"pid\":500,\"tid\":503,\"args\":{\"name\":\"w503\"}"),
		      "json%s: thread 503 named by its rename", what);
		free(t);
	}
	bt_filter_free(&flt);
	bt_filter_free(&eflt);
	bt_filter_free(&lflt);
	bt_dump_close(d);
}

static int stop_now(uint64_t done, uint64_t total, void *ctx)
{
	return 1;
}

/* A write that fails half way (RLIMIT_FSIZE) leaves neither the output nor
 * a temporary file; an existing output stays as it was. */
static void test_atomic(void)
{
	char dir[600], out[700], err[256];
	struct rlimit old, lim;
	snprintf(dir, sizeof(dir), "%s/atomic", tmpdir);
	mkdir(dir, 0700);
	snprintf(out, sizeof(out), "%s/out.perfetto-trace", dir);

	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO };
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	int r = bt_export_file(D, out, &o, NULL, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(r < 0, "a failing write is an error");
	CHECK(err[0] != '\0', "with a message");
	printf("# failing write: %s\n", err);
	CHECK(access(out, F_OK) != 0, "no output file");
	CHECK(count_dir(dir, ".") == 2, "no temporary file left (%d entries)", count_dir(dir, "."));

	/* an existing file survives a failed conversion */
	FILE *f = fopen(out, "w");
	REQUIRE(f, "create");
	fputs("old", f);
	fclose(f);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	r = bt_export_file(D, out, &o, NULL, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	size_t n = 0;
	char *s = (char *)h_read_file(out, &n);
	CHECK(r < 0 && s && n == 3 && !memcmp(s, "old", 3), "existing output untouched");
	free(s);

	/* interrupted (Ctrl-C: the progress callback says stop) */
	o.progress = stop_now;
	r = bt_export_file(D, out, &o, NULL, err, sizeof(err));
	o.progress = NULL;
	s = (char *)h_read_file(out, &n);
	CHECK(r == -EINTR && s && n == 3, "interrupted: %d %s, old output kept", r, err);
	free(s);
	CHECK(count_dir(dir, ".") == 2, "no temporary file left after the interruption");

	/* no such directory */
	snprintf(out, sizeof(out), "%s/nodir/out.json", tmpdir);
	o.format = BT_EXPORT_JSON;
	r = bt_export_file(D, out, &o, NULL, err, sizeof(err));
	CHECK(r == -ENOENT, "missing directory: %d %s", r, err);

	/* success replaces the old file, leaves nothing else */
	snprintf(out, sizeof(out), "%s/out.perfetto-trace", dir);
	o.format = BT_EXPORT_PERFETTO;
	r = bt_export_file(D, out, &o, NULL, err, sizeof(err));
	CHECK(r == 0, "convert: %s", err);
	CHECK(count_dir(dir, ".") == 2 && count_dir(dir, "out.") == 1, "only the output in the directory");
	struct stat sb;
	CHECK(stat(out, &sb) == 0 && sb.st_size > 1000, "output written");
}

/* A command (cmd_convert, cmd_report) with stdout/stderr captured into files. */
static int run_tool(int (*cmd)(int, char **), char *name, char *const *args, int nargs, char *errout, size_t errlen,
		    const char *stdout_path)
{
	char ep[600];
	snprintf(ep, sizeof(ep), "%s/stderr.txt", tmpdir);
	fflush(stdout);
	fflush(stderr);
	int se = dup(2), so = dup(1);
	int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int fo = stdout_path ? open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
	dup2(fe, 2);
	if (fo >= 0)
		dup2(fo, 1);
	char *argv[16];
	argv[0] = name;
	for (int i = 0; i < nargs && i < 14; i++)
		argv[i + 1] = args[i];
	argv[nargs + 1] = NULL;
	int r = cmd(nargs + 1, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(se, 2);
	dup2(so, 1);
	close(se);
	close(so);
	close(fe);
	if (fo >= 0)
		close(fo);
	size_t n = 0;
	char *s = (char *)h_read_file(ep, &n);
	snprintf(errout, errlen, "%.*s", s ? (int)n : 0, s ? s : "");
	free(s);
	return r;
}

static int run_convert(char *const *args, int nargs, char *errout, size_t errlen, const char *stdout_path)
{
	return run_tool(cmd_convert, "convert", args, nargs, errout, errlen, stdout_path);
}

/* `report --functions ARGS... DUMP`: its output, malloc'd ("" on failure) */
static char *functions_of(const char *dump, const char *a1, const char *a2, const char *a3)
{
	char outp[700], err[1024];
	char *args[6];
	int n = 0;
	args[n++] = "--functions";
	if (a1)
		args[n++] = (char *)a1;
	if (a2)
		args[n++] = (char *)a2;
	if (a3)
		args[n++] = (char *)a3;
	args[n++] = (char *)dump;
	snprintf(outp, sizeof(outp), "%s/functions.txt", tmpdir);
	int r = run_tool(cmd_report, "report", args, n, err, sizeof(err), outp);
	size_t len = 0;
	char *t = (char *)h_read_file(outp, &len);
	if (!t || !(t = realloc(t, len + 1)) || r != 0) {
		printf("# report --functions failed (%d): %s\n", r, err);
		free(t);
		return strdup("");
	}
	t[len] = '\0';
	for (char *l = t, *e; (e = strchr(l, '\n')); l = e + 1)
		printf("#   %.*s\n", (int)(e - l), l);
	return t;
}

/* The row of function fn and pid (its text from the pid on), or NULL. */
static const char *func_row(const char *t, const char *fn, const char *pid)
{
	size_t fl = strlen(fn);
	for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char f[64], b[64], p[16];
		int k = 0;
		if (!strncmp(l, fn, fl) && l[fl] == ' ' && sscanf(l, "%63s %63s %15s %n", f, b, p, &k) == 3 &&
		    !strcmp(p, pid))
			return strstr(l, p);
	}
	return NULL;
}

/* report --functions: rows per process (pid, comm), the filters report
 * takes honoured, the window the counts cover and every loss that makes them
 * lower bounds (issue 13 item 10). On the dump of test_one_ended_probes. */
static void test_functions(void)
{
	REQUIRE(qdump_path[0], "the dump of test_one_ended_probes");
	char *t = functions_of(qdump_path, NULL, NULL, NULL);
	const char *r;
	/* add: pid 100 (tids 100, 101) 4 calls, pid 200 1 call */
	CHECK((r = func_row(t, "add", "100")) && !strncmp(r, "100         4         4          4    2.00us", 44),
	      "add, pid 100: %.60s", r ? r : "(none)");
	CHECK((r = func_row(t, "add", "200")) && !strncmp(r, "200         1         1          1", 34),
	      "add, pid 200: %.60s", r ? r : "(none)");
	CHECK((r = func_row(t, "args6", "200")) && strstr(r, "  bash\n"), "args6, pid 200, comm bash");
	CHECK((r = func_row(t, "sleep", "100")) && !strncmp(r, "100         3         3          2", 34) &&
		      strstr(r, "  app  (1 returns without a timed entry)"),
	      "sleep, pid 100: %.80s", r ? r : "(none)");
	CHECK(strstr(t, "\nwindow:       the counts cover 9.000001 .. 9.000016 (0.000015 s), the whole dump\n"),
	      "the window line");
	CHECK(strstr(t, "\nlower bounds: 3 uprobe events dropped (ring buffer full) while recording; 1 seq gap in the "
			"window, 2 events of any kind missing; older events overwritten, the run began before the "
			"window (CPU 0 holds events from 9.000001 on, seq 5)"),
	      "every loss: drops, the seq gap, the overwritten history");
	free(t);

	/* -p: only that process; a function it never called gets a row of zeros */
	t = functions_of(qdump_path, "-p", "200", NULL);
	CHECK(!func_row(t, "add", "100") && func_row(t, "add", "200") && func_row(t, "sleep", "-"),
	      "-p 200: rows of pid 200 only");
	CHECK(strstr(t, "the whole dump; filters: -p 200\n"), "-p named in the window line");
	free(t);
	t = functions_of(qdump_path, "-p", "101", NULL); /* a thread: its own calls */
	CHECK((r = func_row(t, "add", "100")) && !strncmp(r, "100         1         1", 22), "-p 101: %.40s",
	      r ? r : "(none)");
	free(t);

	/* --since: the calls from then on; the overwritten history is before it */
	t = functions_of(qdump_path, "--since", "0.000012", NULL);
	CHECK((r = func_row(t, "add", "100")) && !strncmp(r, "100         0         1", 22), "--since: %.40s",
	      r ? r : "(none)");
	CHECK(strstr(t, "the counts cover 9.000013 .. 9.000016 (0.000003 s), as --since/--until asked\n"),
	      "--since in the window line");
	CHECK(strstr(t, "\nlower bounds: 3 uprobe events dropped") && strstr(t, "1 seq gap in the window") &&
		      !strstr(t, "overwritten"),
	      "--since: losses of that window");
	free(t);
	t = functions_of(qdump_path, "--until", "@9.000005", NULL);
	CHECK(!strstr(t, "seq gap"), "--until: the seq gap is after the window");
	free(t);
	t = functions_of(qdump_path, "-c", "1", NULL);
	CHECK(!strstr(t, "dropped") && !strstr(t, "overwritten") && strstr(t, "1 seq gap"),
	      "-c 1: CPU 0's drops and history are not this window's");
	free(t);
	char *args[] = { "--functions", "-c", "1-3,0", "-e", "uretprobe", "-p", "100,7", qdump_path };
	char outp[700], err[256];
	snprintf(outp, sizeof(outp), "%s/functions.txt", tmpdir);
	CHECK(run_tool(cmd_report, "report", args, 8, err, sizeof(err), outp) == 0, "report: %s", err);
	size_t len = 0;
	t = (char *)h_read_file(outp, &len);
	REQUIRE(t && (t = realloc(t, len + 1)), "read %s", outp);
	t[len] = '\0';
	CHECK(strstr(t, "; filters: -p 100,7 -c 0-3 -e uretprobe\n"), "the filters named: %s", t);
	CHECK((r = func_row(t, "add", "100")) && !strncmp(r, "100         0         4", 22), "-e uretprobe: %.40s",
	      r ? r : "(none)");
	free(t);
}

static void test_cmd(void)
{
	char err[4096], bad[600], copy[600], js[600], def[600];
	size_t n = 0;

	/* default output name next to the dump */
	snprintf(copy, sizeof(copy), "%s/copy.btd", tmpdir);
	uint8_t *img = h_read_file(dump_path, &n);
	REQUIRE(img && n > 600, "dump image");
	FILE *f = fopen(copy, "wb");
	REQUIRE(f, "copy");
	fwrite(img, 1, n, f);
	fclose(f);
	char *a1[] = { "-q", copy };
	CHECK(run_convert(a1, 2, err, sizeof(err), NULL) == 0, "convert DUMP: %s", err);
	snprintf(def, sizeof(def), "%s/copy.perfetto-trace", tmpdir);
	CHECK(access(def, F_OK) == 0, "default output %s", def);
	char *a1z[] = { "-q", "-z", "-f", "json", copy };
	CHECK(run_convert(a1z, 5, err, sizeof(err), NULL) == 0, "convert -z -f json: %s", err);
	snprintf(def, sizeof(def), "%s/copy.json.gz", tmpdir);
	CHECK(access(def, F_OK) == 0, "default output %s", def);

	/* json to standard output, summary on stderr */
	snprintf(js, sizeof(js), "%s/stdout.json", tmpdir);
	char *a2[] = { "--format", "json", "-o", "-", copy };
	CHECK(run_convert(a2, 5, err, sizeof(err), js) == 0, "convert -o -: %s", err);
	CHECK(strstr(err, "events -> standard output"), "summary line: %s", err);
	size_t nj = 0;
	char *sj = (char *)h_read_file(js, &nj);
	CHECK(sj && nj > 100 && !memcmp(sj, "{\"displayTimeUnit\"", 18), "json on stdout");
	free(sj);

	/* a damaged dump: report's message, exit 1, no output */
	snprintf(bad, sizeof(bad), "%s/bad.btd", tmpdir);
	img[n / 2] ^= 0x55;
	f = fopen(bad, "wb");
	REQUIRE(f, "bad");
	fwrite(img, 1, n, f);
	fclose(f);
	char want[1024], e2[256];
	struct bt_dump *d2 = bt_dump_open(bad, e2, sizeof(e2));
	CHECK(!d2, "the damaged dump is refused by the reader");
	bt_dump_close(d2);
	snprintf(want, sizeof(want), "btrace-bpf convert: %s: %s\n", bad, e2);
	char out[700];
	snprintf(out, sizeof(out), "%s/bad.perfetto-trace", tmpdir);
	char *a3[] = { "-o", out, bad };
	CHECK(run_convert(a3, 3, err, sizeof(err), NULL) == 1, "damaged dump exits 1");
	CHECK(!strcmp(err, want), "message as report's: '%s' want '%s'", err, want);
	CHECK(access(out, F_OK) != 0, "no output for a damaged dump");

	/* truncated */
	f = fopen(bad, "wb");
	REQUIRE(f, "bad");
	fwrite(img, 1, 300, f);
	fclose(f);
	CHECK(run_convert(a3, 3, err, sizeof(err), NULL) == 1 && strstr(err, "truncated"), "truncated: %s", err);
	free(img);

	char *a4[] = { "-f", "xml", copy };
	CHECK(run_convert(a4, 3, err, sizeof(err), NULL) == 2 && strstr(err, "unknown format"), "bad format: %s", err);
	char *a5[] = { "-q" };
	CHECK(run_convert(a5, 1, err, sizeof(err), NULL) == 2 && strstr(err, "no dump file"), "no file: %s", err);
	char *a6[] = { "/nonexistent/x.btd" };
	CHECK(run_convert(a6, 1, err, sizeof(err), NULL) == 1 && strstr(err, "cannot open"), "missing: %s", err);
	char *a8[] = { "-o", copy, copy };
	CHECK(run_convert(a8, 3, err, sizeof(err), NULL) == 2 && strstr(err, "is the dump itself"), "same file: %s", err);
	char *a7[] = { "--help" };
	CHECK(run_convert(a7, 1, err, sizeof(err), js) == 0, "--help");
	/* argp, as record parses: usage errors come back as 2 (ARGP_NO_EXIT,
	 * this process goes on), the help options as 0, the spelling kept */
	char *a9[] = { "--bogus", copy };
	CHECK(run_convert(a9, 2, err, sizeof(err), NULL) == 2 && strstr(err, "unrecognized option"),
	      "unknown option: %s", err);
	char *a10[] = { "--bundle-events", "0", copy };
	CHECK(run_convert(a10, 3, err, sizeof(err), NULL) == 2 && strstr(err, "bad --bundle-events"),
	      "--bundle-events 0: %s", err);
	char *a11[] = { "--offcpu", copy };
	CHECK(run_convert(a11, 2, err, sizeof(err), NULL) == 2 && strstr(err, "--offcpu is for"), "--offcpu: %s", err);
	char *a12[] = { "--usage" };
	CHECK(run_convert(a12, 1, err, sizeof(err), js) == 0, "--usage");
	char *a13[] = { "-h" };
	CHECK(run_convert(a13, 1, err, sizeof(err), js) == 0, "-h");
}

/* A dump of ~400k events: the encoder holds a bounded amount at any time. */
static void test_large(void)
{
	char path[600], out[700], err[256];
	snprintf(path, sizeof(path), "%s/large.btd", tmpdir);
	REQUIRE(make_dump(path, 8000, 1, 64u << 20) == 0, "large dump");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	size_t nev;
	bt_dump_events(d, &nev);
	struct stat sb;
	stat(path, &sb);
	snprintf(out, sizeof(out), "%s/large.perfetto-trace", tmpdir);
	struct bt_export_stats st;
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(r == 0, "convert: %s", err);
	CHECK(st.events == nev, "all events");
	CHECK(st.max_pending < (1u << 20), "at most %zu bytes held at once", st.max_pending);
	CHECK(st.records > nev / 1000, "%" PRIu64 " packets for %zu events", st.records, nev);
	printf("# large: %zu events, dump %lld bytes -> perfetto %" PRIu64 " bytes in %.2fs, max held %zu bytes\n", nev,
	       (long long)sb.st_size, st.bytes, secs, st.max_pending);
	o.format = BT_EXPORT_JSON;
	snprintf(out, sizeof(out), "%s/large.json", tmpdir);
	r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	CHECK(r == 0, "convert json: %s", err);
	printf("# large: json %" PRIu64 " bytes (%.1f per event)\n", st.bytes, (double)st.bytes / (double)nev);
	CHECK(st.json_fit_from_ns == 0, "json under the limit: no window suggested");
	/* Past a (lowered) limit: the window suggested fits, and is no much
	 * smaller than the limit (the hint is the latest start that fits). */
	uint64_t full = st.raw_bytes, lim = full / 5;
	o.json_max = lim;
	r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	char fit[64];
	bt_export_json_fit_arg(&st, fit, sizeof(fit));
	CHECK(r == 0 && st.json_fit_from_ns && fit[0] == '@', "json past %" PRIu64 " bytes: --time %s suggested (%s)",
	      lim, fit, err);
	struct bt_event_filter ff = { 0 };
	CHECK(bt_filter_parse_time_range(&ff, fit) == 0, "convert's --time parses %s", fit);
	o.filter = &ff;
	r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	printf("# large: json %" PRIu64 " bytes, limit %" PRIu64 ": --time %s gives %" PRIu64 " bytes (%.0f%%)\n", full,
	       lim, fit, st.raw_bytes, 100.0 * (double)st.raw_bytes / (double)lim);
	CHECK(r == 0 && st.raw_bytes <= lim && st.raw_bytes >= lim - lim / 6 && st.json_fit_from_ns == 0,
	      "json of --time %s: %" PRIu64 " bytes, within the limit %" PRIu64 " and above 5/6 of it", fit,
	      st.raw_bytes, lim);
	if (have_python)
		CHECK(check_file("json", out, "") == 0, "checker passes on the json of the window (see above)");
	bt_filter_free(&ff);
	o.filter = NULL;
	o.json_max = 0;
	o.format = BT_EXPORT_PERFETTO;
	o.compact_sched = 1;
	snprintf(out, sizeof(out), "%s/large-compact.perfetto-trace", tmpdir);
	r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	CHECK(r == 0, "convert compact: %s", err);
	printf("# large: perfetto compact sched %" PRIu64 " bytes\n", st.bytes);
	o.compact_sched = 0;
	o.gzip = 1;
	snprintf(out, sizeof(out), "%s/large.perfetto-trace.gz", tmpdir);
	r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	CHECK(r == 0, "convert gzip: %s", err);
	printf("# large: perfetto gzip %" PRIu64 " bytes\n", st.bytes);
	bt_dump_close(d);
}

static void test_empty(void)
{
	/* a dump without events still converts to valid files */
	char path[600], out[700], err[256];
	snprintf(path, sizeof(path), "%s/empty.btd", tmpdir);
	REQUIRE(make_dump(path, 0, 0, 1u << 20) == 0, "empty dump");
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO };
	snprintf(out, sizeof(out), "%s/empty.perfetto-trace", tmpdir);
	CHECK(bt_export_file(d, out, &o, NULL, err, sizeof(err)) == 0, "perfetto: %s", err);
	if (have_protoc) {
		char cmd[2048];
		snprintf(cmd, sizeof(cmd), "cd '%s' && protoc --decode=perfetto.protos.Trace " SUBSET " < '%s' >/dev/null 2>&1",
			 root, out);
		CHECK(run_cmd(cmd, NULL, 0) == 0, "protoc decodes the empty trace");
	}
	o.format = BT_EXPORT_JSON;
	snprintf(out, sizeof(out), "%s/empty.json", tmpdir);
	CHECK(bt_export_file(d, out, &o, NULL, err, sizeof(err)) == 0, "json: %s", err);
	if (have_python) {
		char cmd[2048];
		snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s' 2>&1", out);
		CHECK(run_cmd(cmd, NULL, 0) == 0, "the empty json parses");
	}
	bt_dump_close(d);
}

static void skip_line(const char *name, const char *why)
{
	h_ntests++;
	printf("ok %d - %s # SKIP %s\n", h_ntests, name, why);
	fflush(stdout);
}

int main(void)
{
	char err[256];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/btrace-export.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* the repository root (tests/perfetto): the working directory when run
	 * by tests/run.sh, else three levels above build/tests/test_export */
	int found = 0;
	char probe[700];
	if (getcwd(root, sizeof(root))) {
		snprintf(probe, sizeof(probe), "%s/" CHECKER, root);
		found = access(probe, R_OK) == 0;
	}
	if (!found) {
		ssize_t n = readlink("/proc/self/exe", root, sizeof(root) - 1);
		if (n > 0) {
			root[n] = '\0';
			for (int up = 0; up < 3; up++) {
				char *sl = strrchr(root, '/');
				if (sl)
					*sl = '\0';
			}
			snprintf(probe, sizeof(probe), "%s/" CHECKER, root);
			found = access(probe, R_OK) == 0;
		}
	}
	have_python = found && run_cmd("python3 -c 'import json' 2>&1", NULL, 0) == 0;
	have_protoc = found && run_cmd("protoc --version 2>&1", NULL, 0) == 0;

	snprintf(dump_path, sizeof(dump_path), "%s/test.btd", tmpdir);
	snprintf(pf_path, sizeof(pf_path), "%s/test.perfetto-trace", tmpdir);
	snprintf(pf_compact, sizeof(pf_compact), "%s/test-compact.perfetto-trace", tmpdir);
	snprintf(pf_gz, sizeof(pf_gz), "%s/test.perfetto-trace.gz", tmpdir);
	snprintf(js_path, sizeof(js_path), "%s/test.json", tmpdir);
	snprintf(js_gz, sizeof(js_gz), "%s/test.json.gz", tmpdir);
	if (make_dump(dump_path, 30, 1, 4u << 20) < 0 || !(D = bt_dump_open(dump_path, err, sizeof(err)))) {
		fprintf(stderr, "cannot build the test dump: %s\n", err);
		printf("not ok 1 - build a dump\n");
		return 1;
	}

	RUN(test_pbwriter);
	if (!have_protoc)
		skip_line("perfetto output decodes with protoc",
			  found ? "protoc not installed (scripts/install-deps.sh)" : "tests/perfetto not found");
	if (!have_python)
		skip_line("outputs checked by " CHECKER, found ? "python3 not installed" : "tests/perfetto not found");
	RUN(test_perfetto);
	RUN(test_perfetto_fields);
	RUN(test_perfetto_full_schema);
	RUN(test_perfetto_compact);
	RUN(test_json);
	RUN(test_app_events);
	RUN(test_func_edges);
	RUN(test_func_deep);
	RUN(test_func_window);
	RUN(test_func_died);
	RUN(test_report_escapes);
	RUN(test_json_runs);
	RUN(test_one_ended_probes);
	RUN(test_functions);
	RUN(test_gzip);
	RUN(test_atomic);
	RUN(test_cmd);
	RUN(test_empty);
	RUN(test_large);

	bt_dump_close(D);
	if (!getenv("KEEP_TMP"))
		fx_rm_rf(tmpdir);
	else
		printf("# files kept in %s\n", tmpdir);
	return h_done();
}
