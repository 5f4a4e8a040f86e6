// SPDX-License-Identifier: MIT
/*
 * test_export_stacks.c - call stacks in the exports, on a dump built here
 * with a stack table and source lines: Perfetto (checked by
 * tests/perfetto/check_trace.py, which replays trace processor's rules: every
 * sample kept with a callstack, lost stacks labelled, no empty callstack,
 * frames merged by (mapping, rel_pc, name) with one line, no symbol
 * versions; off-CPU and waker callstacks interned), pprof (decoded by protoc
 * with tests/pprof/profile.proto: totals and per-function self/total equal
 * report --profile's) and JSON (stack samples for speedscope: their count
 * equals the dump's).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/types.h>
#include <zlib.h>
#include "events.h"
#include "harness.h"
#include "dump_fixture.h"
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"
#include "dump_stacks.h"
#include "export.h"
#include "event_filter.h"
#include "report_stacks.h"

#define CHECKER "tests/perfetto/check_trace.py"

static char tmpdir[256], root[512];
static int have_tools; /* python3 and protoc */

/* libc with a build-id, the application; the kernel; a library of process
 * 200 only, without symbols; one no stack uses. */
static struct bt_dump_map maps[4] = {
	{ "/usr/lib/x86_64-linux-gnu/libc.so.6", 0, 0x801, 11, { 0xab, 0xcd, 0xef, 0x01 }, 4 },
	{ "/usr/bin/app", 0, 0x801, 12, { 0 }, 0 },
	{ "/opt/x/libfoo.so.1", 0, 0x801, 13, { 0 }, 0 },
	{ "/usr/lib/libunused.so", 0, 0x801, 14, { 0 }, 0 },
};
static struct bt_dump_sym syms[4] = {
	{ "schedule", BT_DMAP_KERNEL, 0xffffffff81000000ull, 0x100 },
	{ "main", 2, 0x1100, 0x200 },
	{ "leaf_fn", 2, 0x1300, 0x40 },
	{ "memcpy@@GLIBC_2.14", 1, 0x2000, 0x100 },
};
/* main at 0x1200 is the innermost frame of stack 3 (looked up at 0x1200)
 * and a caller in stack 2 (a return address: looked up at 0x11ff), on two
 * different lines: one rel_pc for both would merge them in trace processor. */
static struct bt_dump_frame frames[8] = {
	{ BT_DMAP_KERNEL, 1, 0xffffffff81000010ull },
	{ 2, 3, 0x1310 },
	{ 2, 2, 0x1200 },
	{ 2, 2, 0x1200 },
	{ 1, 4, 0x2010 },
	{ 3, 0, 0x500 },  /* unnamed frames of two libraries: two functions */
	{ 1, 0, 0x3000 },
	{ 1, 0, 0x3100 },
};
static struct bt_dump_stack stacks[6] = {
	{ 0, BT_STACK_KERNEL, 0, 1, 0 },
	{ 100, BT_STACK_USER, 0, 2, 1 },   /* leaf_fn <- main */
	{ 100, BT_STACK_USER, 0, 2, 3 },   /* main <- memcpy */
	{ 100, BT_STACK_USER, BT_STACK_F_UNDEFINED, 0, 5 },
	{ 200, BT_STACK_USER, 0, 2, 5 },   /* libfoo <- libc, unnamed */
	{ 200, BT_STACK_USER, 0, 1, 7 },   /* libc, unnamed */
};
static struct bt_dump_srcloc locs[3] = {
	{ 2, 1, 0x11ff, 0 },
	{ 2, 1, 0x1200, 1 },
	{ 2, 2, 0x1310, 2 },
};
static struct bt_dump_srcline lines[4] = {
	{ "src/main.c", "main", 10, 0 },
	{ "src/main.c", "main", 11, 0 },
	{ "src/leaf.h", "inl_helper", 5, 0 },
	{ "src/leaf.c", "leaf_fn", 20, 0 },
};

static int write_stacks(void *ctx, struct bt_dump_sink *sink)
{
	struct bt_dump_stacks s = { .nstacks = 6, .nmaps = 4, .nsyms = 4, .nframes = 8, .stacks = stacks,
				    .frames = frames, .maps = maps, .syms = syms, .nlocs = 3, .nlines = 4,
				    .locs = locs, .lines = lines };
	(void)ctx;
	s.counters[BT_STKC_STACKS] = 6;
	s.counters[BT_STKC_SAMPLE_HZ] = 99;
	s.counters[BT_STKC_OVERFLOW] = 2;
	return bt_dump_sink_stacks(sink, &s);
}

/* The samples: (kernel, user) stack ids, process; 4 of them have a stack
 * lost or none. */
static const uint32_t samples[][3] = {
	{ 1, 2, 100 }, { 0, 3, 100 }, { 1, 2, 100 }, { 1, BT_STACK_LOST, 100 }, { 0, 0, 100 },
	{ BT_STACK_LOST, BT_STACK_LOST, 100 }, { 0, 4, 100 }, { 0, 5, 200 }, { 0, 6, 200 }, { 0, 5, 200 },
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))
#define NLOST 4

static int write_dump(const char *path)
{
	struct bt_config cfg = { .size = 64 << 10, .block_size = 1024, .ncores = 2 };
	char err[256];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	uint64_t drops[2 * BT_GROUP_MAX] = { 0 };
	struct bt_task tasks[] = { { .tid = 100, .tgid = 100, .comm = "app\x1b[2J" } /* a hostile name */,
				   { .tid = 101, .tgid = 100, .comm = "app-w" },
				   { .tid = 200, .tgid = 200, .comm = "other" } };
	uint32_t seq = 0;
	uint64_t ts = 1000000000ull;
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < NSAMPLES; i++) {
		struct bt_ev_sample e = { .h = { .ts_ns = ts += 10000000, .seq = seq++, .tid = samples[i][2],
						 .tgid = samples[i][2],
						 .type = BT_EV_CPU_SAMPLE },
					  .kstack = samples[i][0], .ustack = samples[i][1] };
		if (fx_store(b, 0, &e.h, sizeof(e)))
			return -EIO;
	}
	struct bt_ev_offcpu o = { .h = { .ts_ns = ts += 1000000, .seq = seq++, .tid = 100, .tgid = 100,
					 .type = BT_EV_OFFCPU },
				  .kstack = 1, .ustack = 2, .offcpu_ns = 500000 };
	struct bt_ev_waker w = { .h = { .ts_ns = ts += 1000000, .seq = seq++, .tid = 100, .tgid = 100,
					.type = BT_EV_WAKER },
				 .kstack = 1, .ustack = 3, .wakee = 101 };
	if (fx_store(b, 0, &o.h, sizeof(o)) || fx_store(b, 0, &w.h, sizeof(w)))
		return -EIO;
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .tasks = tasks,
				     .ntasks = 3, .dump_seq = 1, .reason = "test",
				     .groups_enabled = 1u << BT_GROUP_STACKS, .write_stacks = write_stacks };
	int r = bt_dump_write(b, &info, NULL, path, 0, NULL, 0, NULL, err, sizeof(err));
	if (r)
		fprintf(stderr, "  bt_dump_write: %s\n", err);
	bt_buffer_destroy(b);
	return r;
}

static int run(const char *cmd)
{
	char full[4096], line[4096];
	snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", root, cmd);
	FILE *p = popen(full, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		printf("#   %s", line);
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char dump_path[400];

static void test_perfetto(void)
{
	char out[400], cmd[2048], err[256];
	snprintf(out, sizeof(out), "%s/s.perfetto-trace", tmpdir);
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 };
	struct bt_export_stats st;
	CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
	CHECK(st.samples_no_stack == NLOST, "%" PRIu64 " samples without a stack counted", st.samples_no_stack);
	/* process 200's thread, first sampled 70 ms after the dump's start,
	 * has no function stream: its first stack (2 frames) drawn from there */
	CHECK(st.encl_frames == 2, "%" PRIu64 " call chart frames drawn from the dump's start", st.encl_frames);
	bt_dump_close(d);
	if (!have_tools)
		return;
	snprintf(cmd, sizeof(cmd),
		 "python3 " CHECKER " perfetto '%s' --stacks %zu --stacks-lost %d --stack-func main --offcpu-func leaf_fn "
		 "--inlined inl_helper --src-line main:main.c --src-line inl_helper:leaf.h --chart-begun-before 2",
		 out, NSAMPLES, NLOST);
	CHECK(run(cmd) == 0, "checker passes (see above)");
}

/* JSON: stack samples (catapult's, speedscope's "samples"/"stackFrames") */
static void test_json(void)
{
	char out[400], cmd[2048], err[256];
	snprintf(out, sizeof(out), "%s/s.json", tmpdir);
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	struct bt_export_opts o = { .format = BT_EXPORT_JSON };
	CHECK(bt_export_file(d, out, &o, NULL, err, sizeof(err)) == 0, "convert: %s", err);
	bt_dump_close(d);
	/* the off-CPU block (woken at 1.101 s after 0.5 ms) drawn from where
	 * it began, as speedscope weighs it; the waker at its time */
	size_t len = 0;
	char *js = (char *)h_read_file(out, &len);
	const char *ow = "\"ts\":1100500,\"name\":\"offcpu\"", *ww = "\"ts\":1102000,\"name\":\"waker\"";
	const char *sm = js ? memmem(js, len, "\"samples\":", 10) : NULL;
	CHECK(js && memmem(js, len, ow, strlen(ow)) && memmem(js, len, ww, strlen(ww)),
	      "json: the off-CPU block at its start (1100500 us), the waker at its time: %.900s", sm ? sm + 12 : "none");
	free(js);
	if (!have_tools)
		return;
	snprintf(cmd, sizeof(cmd), "python3 " CHECKER " json '%s' --stacks %zu --stacks-lost %d --offcpu-blocks 1", out,
		 NSAMPLES, NLOST);
	CHECK(run(cmd) == 0, "checker passes (see above)");
}

/* pprof, CPU and off-CPU: decoded by protoc, against report --profile's
 * totals and functions (tests/pprof/check_pprof.py). */
static void test_pprof(void)
{
	char out[400], rep[400], cmd[2048], err[256];
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	for (int off = 0; off < 2; off++) {
		snprintf(out, sizeof(out), "%s/s%s.pb.gz", tmpdir, off ? ".offcpu" : "");
		snprintf(rep, sizeof(rep), "%s/s%s.profile.txt", tmpdir, off ? ".offcpu" : "");
		struct bt_export_opts o = { .format = BT_EXPORT_PPROF, .offcpu = off };
		struct bt_export_stats st;
		CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
		CHECK(st.events == (off ? 1 : NSAMPLES) && st.samples_no_stack == (off ? 0 : NLOST),
		      "%s: %" PRIu64 " events, %" PRIu64 " without a stack", off ? "offcpu" : "cpu", st.events,
		      st.samples_no_stack);
		FILE *f = fopen(rep, "w");
		REQUIRE(f, "write %s", rep);
		struct bt_stack_filter filt = { .offcpu = off };
		CHECK(bt_report_profile(d, &filt, f) == 0, "report --profile");
		fclose(f);
		if (!have_tools)
			continue;
		snprintf(cmd, sizeof(cmd), "python3 tests/pprof/check_pprof.py '%s' '%s' %s", out, rep,
			 off ? "--offcpu" : "");
		CHECK(run(cmd) == 0, "pprof checker passes (%s, see above)", off ? "off-CPU" : "CPU");
	}
	bt_dump_close(d);
}

/* pprof as go tool pprof shows it (tests/pprof/check_gopprof.py): the
 * whole dump (two processes) has no main binary, -p 100 has app's and none
 * of the other process's mappings; an unnamed frame of each library is a
 * function of its own; labels; --process-root; the losses as comments. */
static void test_pprof_go(void)
{
	static const struct {
		const char *pids, *time;
		int root;
		const char *want;
	} runs[] = {
		{ NULL, NULL, 0, "--no-file --processes 2 --top '[unknown] (libfoo.so.1)' --top '[unknown] (libc.so.6)' "
				 "--no-mapping libunused.so --comment 'loss.stacks.table_full: 2$' "
				 "--comment '4 of 10 CPU samples with a stack lost'" },
		{ "100", NULL, 0, "--file app --processes 1 --no-mapping libfoo.so.1 --no-mapping libunused.so" },
		{ NULL, NULL, 1, "--no-file --roots 2" },
		/* samples 4 and 5 alone: no user frame in app, which is still the
		 * profile's own binary (its other stacks in the dump pass through it) */
		{ "100", "@1.035..@1.055", 0, "--file app --processes 1 --no-mapping libc.so.6" },
	};
	char out[400], cmd[2048], err[256];
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct bt_event_filter f = { 0 };
		REQUIRE(!runs[k].pids || bt_filter_parse_pids(&f, runs[k].pids) == 0, "filter");
		REQUIRE(!runs[k].time || bt_filter_parse_time_range(&f, runs[k].time) == 0, "--time");
		struct bt_export_opts o = { .format = BT_EXPORT_PPROF, .filter = &f, .process_root = runs[k].root };
		snprintf(out, sizeof(out), "%s/go%zu.pb.gz", tmpdir, k);
		CHECK(bt_export_file(d, out, &o, NULL, err, sizeof(err)) == 0, "convert: %s", err);
		bt_filter_free(&f);
		if (!have_tools)
			continue;
		snprintf(cmd, sizeof(cmd), "python3 tests/pprof/check_gopprof.py '%s' %s", out, runs[k].want);
		int r = run(cmd);
		if (r == 77) {
			printf("# SKIP go tool pprof: go not installed\n");
			break;
		}
		CHECK(r == 0, "go tool pprof reads profile %zu right (see above)", k);
	}
	bt_dump_close(d);
}

/* A thread named with an escape sequence: every format writes the name as
 * report does ("app\x1b[2J"), never the raw ESC that a terminal printing
 * it (trace_processor's shell, go tool pprof -top) would obey. */
static void test_names_escaped(void)
{
	static const int fmts[] = { BT_EXPORT_PERFETTO, BT_EXPORT_JSON, BT_EXPORT_PPROF };
	static const char *const want[] = { "app\\x1b[2J", "app\\\\x1b[2J", "app\\x1b[2J" };
	char out[400], err[256], buf[1 << 16];
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));

	REQUIRE(d, "open: %s", err);
	for (int k = 0; k < 3; k++) {
		struct bt_export_opts o = { .format = fmts[k] };
		struct bt_export_stats st;
		gzFile f;
		int n;

		snprintf(out, sizeof(out), "%s/esc%d.out", tmpdir, k);
		CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
		f = gzopen(out, "rb"); /* pprof is gzipped; the others are read as they are */
		REQUIRE(f, "open %s", out);
		n = gzread(f, buf, sizeof(buf));
		gzclose(f);
		REQUIRE(n > 0 && n < (int)sizeof(buf), "read %s: %d bytes", out, n);
		CHECK(!memmem(buf, (size_t)n, "app\x1b", 4), "format %d: the raw name in the output", k);
		CHECK(memmem(buf, (size_t)n, want[k], strlen(want[k])) != NULL, "format %d: no '%s' in the output", k,
		      want[k]);
	}
	bt_dump_close(d);
}

/* convert --time A..B --pid P: the shared event filter (report's) picks the
 * events every format writes: samples 3 to 5 of 7 (10 ms apart). */
static void test_filter(void)
{
	char out[400], cmd[2048], err[256];
	struct bt_dump *d = bt_dump_open(dump_path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	struct bt_event_filter f = { 0 };
	REQUIRE(bt_filter_parse_time_range(&f, "0.015..0.045") == 0 && bt_filter_parse_pids(&f, "100") == 0, "filter");
	static const int fmts[] = { BT_EXPORT_PERFETTO, BT_EXPORT_JSON, BT_EXPORT_PPROF };
	for (int k = 0; k < 3; k++) {
		snprintf(out, sizeof(out), "%s/f%d.out", tmpdir, k);
		struct bt_export_opts o = { .format = fmts[k], .filter = &f };
		struct bt_export_stats st;
		CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0, "convert: %s", err);
		CHECK(st.events == 3 && st.per_type[BT_EV_CPU_SAMPLE] == 3, "format %d: %" PRIu64 " events in the window", k,
		      st.events);
		/* Perfetto and JSON: the first sample's 4 frames (main, leaf_fn,
		 * inl_helper inlined in it, schedule) drawn from the window's
		 * start, 5 ms before it (JSON: a begun_before_window sample) */
		CHECK(st.encl_frames == (k < 2 ? 4u : 0u), "format %d: %" PRIu64 " call chart frames from the window's start",
		      k, st.encl_frames);
		if (k == 1) {
			size_t len = 0;
			char *js = (char *)h_read_file(out, &len), *sm = js ? memmem(js, len, "\"samples\":", 10) : NULL;
			size_t left = sm ? len - (size_t)(sm - js) : 0;
			char *b = sm ? memmem(sm, left, "\"begun_before_window\"", 21) : NULL;
			CHECK(b && memmem(sm, left, "\"ts\":1025000,\"name\":\"begun_before_window\"", 41) &&
				      !memmem(b + 1, left - (size_t)(b + 1 - sm), "\"begun_before_window\"", 21),
			      "json: one begun_before_window sample, at the window's start: %.400s", sm ? sm + 12 : "none");
			free(js);
		}
		if (have_tools && k < 2) {
			snprintf(cmd, sizeof(cmd), "python3 " CHECKER " %s '%s' --stacks 3 --stacks-lost 2%s",
				 k ? "json" : "perfetto", out, k ? "" : " --chart-begun-before 4");
			CHECK(run(cmd) == 0, "checker passes on the window (see above)");
		}
	}
	bt_filter_free(&f);
	REQUIRE(bt_filter_parse_pids(&f, "999") == 0, "filter");
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .filter = &f };
	struct bt_export_stats st;
	snprintf(out, sizeof(out), "%s/none.out", tmpdir);
	CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0 && st.events == 0, "another pid: %" PRIu64 " events",
	      st.events);
	/* JSON without a sample: no sampling members (speedscope draws them
	 * over the slices, and an empty list on a blank page) */
	o.format = BT_EXPORT_JSON;
	snprintf(out, sizeof(out), "%s/none.json", tmpdir);
	CHECK(bt_export_file(d, out, &o, &st, err, sizeof(err)) == 0, "another pid, json: %s", err);
	size_t len = 0;
	char *js = (char *)h_read_file(out, &len);
	CHECK(js && !memmem(js, len, "\"samples\"", 9) && !memmem(js, len, "\"stackFrames\"", 13),
	      "json without samples: no samples or stackFrames members");
	free(js);
	if (have_tools) {
		snprintf(cmd, sizeof(cmd), "python3 " CHECKER " json '%s'", out);
		CHECK(run(cmd) == 0, "checker passes on the json without samples (see above)");
	}
	bt_filter_free(&f);
	bt_dump_close(d);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-export-stacks.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	/* the repository root: where the tests run from, else above build/tests/ */
	if (!getcwd(root, sizeof(root)))
		return 1;
	char probe[700];
	snprintf(probe, sizeof(probe), "%s/" CHECKER, root);
	if (access(probe, R_OK)) {
		ssize_t n = readlink("/proc/self/exe", root, sizeof(root) - 1);
		root[n > 0 ? n : 0] = '\0';
		for (int up = 0; up < 3; up++) {
			char *sl = strrchr(root, '/');
			if (sl)
				*sl = '\0';
		}
	}
	snprintf(probe, sizeof(probe), "cd '%s' && test -r " CHECKER " && python3 -c '' && protoc --version >/dev/null 2>&1",
		 root);
	have_tools = system(probe) == 0;
	if (!have_tools)
		printf("ok 1 - # SKIP tool checks: python3, protoc or %s missing\n", CHECKER);
	snprintf(dump_path, sizeof(dump_path), "%s/s.btd", tmpdir);
	if (write_dump(dump_path)) {
		printf("not ok 1 - build a dump with stacks\n");
		return 1;
	}
	RUN(test_perfetto);
	RUN(test_pprof);
	RUN(test_pprof_go);
	RUN(test_json);
	RUN(test_filter);
	RUN(test_names_escaped);
	char cmd[600];
	if (!getenv("KEEP_TMP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	} else {
		printf("# files kept in %s\n", tmpdir);
	}
	return h_done();
}
