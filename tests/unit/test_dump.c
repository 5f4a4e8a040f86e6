// SPDX-License-Identifier: MIT
/*
 * test_dump.c - dump writer/reader round trip on a real buffer, atomic file
 * placement and clean failure, damage detection (every truncation, byte
 * flips), the report output format and the latest-continuous-window analysis.
 *
 * BTRACE_WRITE_SEEDS=DIR also writes the fuzzer seeds (small valid dumps) to
 * DIR (tests/fuzz/seeds/fuzz_dump).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "dump_fixture.h"
#include "btrace_buffer.h"
#include "dump.h"
#include "compact.h"
#include "dump_format.h"
#include "event_names.h"
#include "commands.h"

#define NCPUS 2

static char tmpdir[256];

static int count_dir(const char *dir, char *first, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!n && first)
			snprintf(first, len, "%s", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct bt_buffer *make_buffer(size_t size)
{
	struct bt_config cfg = { .size = size, .block_size = 1024, .ncores = NCPUS };
	char err[128];
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	if (!b)
		fprintf(stderr, "  bt_buffer_create: %s\n", err);
	return b;
}

/* ---- synthetic events ------------------------------------------------------ */

static const struct bt_task test_tasks[] = {
	{ .tid = 1, .tgid = 1, .comm = "systemd" },
	{ .tid = 1234, .tgid = 1234, .comm = "pingpong" },
	{ .tid = 1235, .tgid = 1234, .comm = "pong" },
	{ .tid = 4000, .tgid = 4000, .exit_ts = 77, .comm = "gone" },
};

static struct bt_probe_desc test_probes[2];

static void init_probes(void)
{
	memset(test_probes, 0, sizeof(test_probes));
	test_probes[0] = (struct bt_probe_desc){ .id = 0, .pid = -1, .nargs = 2, .offset = 0x9a0f0 };
	snprintf(test_probes[0].spec, sizeof(test_probes[0].spec), "libc:malloc");
	snprintf(test_probes[0].binary, sizeof(test_probes[0].binary), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	snprintf(test_probes[0].func, sizeof(test_probes[0].func), "malloc");
	test_probes[1] = (struct bt_probe_desc){ .id = 1, .flags = BT_PROBE_RETURN, .pid = 1234, .offset = 0x9a0f0 };
	snprintf(test_probes[1].spec, sizeof(test_probes[1].spec), "libc:malloc%%return");
	snprintf(test_probes[1].binary, sizeof(test_probes[1].binary), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	snprintf(test_probes[1].func, sizeof(test_probes[1].func), "malloc");
}

/* Event i of type t on cpu with seq; returns its size. Deterministic. */
static uint32_t make_event(union any_ev *e, uint32_t type, uint32_t cpu, uint32_t seq, uint64_t ts)
{
	memset(e, 0, sizeof(*e));
	e->h.ts_ns = ts;
	e->h.seq = seq;
	e->h.tid = seq % 3 == 0 ? 1234 : seq % 3 == 1 ? 1235 : 0;
	e->h.tgid = e->h.tid ? 1234 : 0;
	e->h.cpu = (uint16_t)cpu;
	e->h.type = (uint16_t)type;
	switch (type) {
	case BT_EV_SCHED_SWITCH:
		e->sw.prev_tid = e->h.tid;
		e->sw.next_tid = 1235;
		e->sw.prev_state = seq % 4 == 0 ? 0 : seq % 7 == 0 ? 0x10000 : 1; /* 0x10000: wide */
		e->sw.prev_prio = 120;
		e->sw.next_prio = 100;
		return sizeof(e->sw);
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING:
		e->wk.tid = 1234;
		e->wk.target_cpu = 1;
		e->wk.prio = 120;
		return sizeof(e->wk);
	case BT_EV_SCHED_MIGRATE:
		e->mg.tid = 1235;
		e->mg.orig_cpu = 0;
		e->mg.dest_cpu = 1;
		return sizeof(e->mg);
	case BT_EV_PROCESS_FORK:
	case BT_EV_PROCESS_EXEC:
	case BT_EV_PROCESS_EXIT:
	case BT_EV_TASK_RENAME:
		e->tk.tid = 5000 + seq;
		e->tk.tgid = 5000;
		if (type != BT_EV_PROCESS_EXIT)
			snprintf(e->tk.comm, sizeof(e->tk.comm), "child%u", seq % 100);
		return sizeof(e->tk);
	case BT_EV_IRQ_ENTRY:
	case BT_EV_IRQ_EXIT:
	case BT_EV_SOFTIRQ_ENTRY:
	case BT_EV_SOFTIRQ_EXIT:
		e->irq.irq = type >= BT_EV_SOFTIRQ_ENTRY ? 3 : 24;
		e->irq.ret = type == BT_EV_IRQ_EXIT;
		return sizeof(e->irq);
	case BT_EV_CPU_FREQUENCY:
	case BT_EV_CPU_IDLE:
		e->pw.state = type == BT_EV_CPU_IDLE ? 1 : 2400000;
		e->pw.cpu_id = cpu;
		return sizeof(e->pw);
	case BT_EV_SYS_ENTER:
	case BT_EV_SYS_EXIT:
		e->sc.id = 1;
		/* every 5th exit returns a pointer: the stored form's wide case */
		e->sc.ret = type == BT_EV_SYS_EXIT ? (seq % 5 == 0 ? 0x7f12345678ll : 12) : 0;
		return sizeof(e->sc);
	default: /* uprobes */
		e->up.probe_id = type == BT_EV_UPROBE_RETURN ? 1 : 0;
		e->up.nargs = type == BT_EV_UPROBE_RETURN ? 0 : 2;
		e->up.args[0] = 0x10;
		e->up.args[1] = seq;
		e->up.ret = type == BT_EV_UPROBE_RETURN ? 0x55d0c8a0 : 0;
		e->up.duration_ns = type == BT_EV_UPROBE_RETURN ? 12345 : 0;
		return sizeof(e->up);
	}
}

/* Write n events per CPU: types cycle through every type, seqs 0.., times
 * interleaved across CPUs. Returns events written. */
static uint64_t fill(struct bt_buffer *b, uint32_t n, uint64_t t0)
{
	uint64_t w = 0;
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t c = 0; c < NCPUS; c++) {
			union any_ev e;
			uint32_t type = 1 + (i + c) % (BT_EV_KERNEL_MAX - 1);
			uint32_t len = make_event(&e, type, c, i, t0 + (uint64_t)i * 1000 + c * 7);
			if (fx_store(b, c, &e.h, len) == 0)
				w++;
		}
	}
	return w;
}

static uint64_t drops[NCPUS * BT_GROUP_MAX], emitted[NCPUS * BT_GROUP_MAX];

static struct bt_dump_info make_info(void)
{
	for (int i = 0; i < NCPUS * BT_GROUP_MAX; i++) {
		drops[i] = (uint64_t)i * 3;
		emitted[i] = 1000 + (uint64_t)i;
	}
	init_probes();
	return (struct bt_dump_info){
		.ncpus = NCPUS,
		.ngroups = BT_GROUP_MAX,
		.rb_drops = drops,
		.rb_emitted = emitted,
		.tasks = test_tasks,
		.ntasks = sizeof(test_tasks) / sizeof(test_tasks[0]),
		.probes = test_probes,
		.nprobes = 2,
		.dump_seq = 7,
		.overlaps_dump = 6,
		.reason = "signal",
		.drain_events = 4321,
		.drain_rejected = 5,
		.groups_enabled = 0x1f,
	};
}

/* ---- round trip ------------------------------------------------------------ */

static void roundtrip(int zlevel)
{
	char dir[300], path[512], err[256], host[64] = "";
	struct bt_read_stats rst;
	struct bt_stats bs;
	struct utsname u;
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	const uint32_t per_cpu = 300;
	uint64_t written = fill(b, per_cpu, 1000000000000ull);
	CHECK(written == per_cpu * NCPUS, "wrote %" PRIu64, written);
	bt_buffer_stats(b, &bs);

	snprintf(dir, sizeof(dir), "%s/rt%d/sub", tmpdir, zlevel);
	struct bt_dump_info info = make_info();
	uint64_t rt0 = now_ns(CLOCK_REALTIME), bt0 = now_ns(CLOCK_BOOTTIME);
	int r = bt_dump_write(b, &info, dir, NULL, zlevel, path, sizeof(path), &rst, err, sizeof(err));
	uint64_t rt1 = now_ns(CLOCK_REALTIME), bt1 = now_ns(CLOCK_BOOTTIME);
	REQUIRE(r == 0, "bt_dump_write: %d %s", r, err);
	CHECK(rst.blocks_lost == 0 && rst.blocks_read > 0, "read %" PRIu64 " lost %" PRIu64, rst.blocks_read,
	      rst.blocks_lost);
	CHECK(rst.entries == written, "entries %" PRIu64, rst.entries);

	/* name, mode, nothing else in the directory */
	struct stat st;
	REQUIRE(stat(path, &st) == 0, "stat %s", path);
	CHECK((st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);
	char first[256] = "";
	CHECK(count_dir(dir, first, sizeof(first)) == 1, "one file in %s", dir);
	gethostname(host, sizeof(host) - 1);
	CHECK(strncmp(first, "btrace-", 7) == 0 && strstr(first, "-7.btd") && strlen(first) > 20, "name %s", first);
	CHECK(strstr(path, first) != NULL, "out_path %s", path);

	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	const struct bt_dump_header *h = bt_dump_header(d);
	CHECK(h->version == 1, "version");
	CHECK(h->ncpus == NCPUS && h->ngroups == BT_GROUP_MAX, "geometry");
	CHECK(h->block_size == 1024 && h->nblocks == bs.nblocks && h->active == bs.active &&
		      h->buffer_size == bs.size,
	      "buffer geometry %u %u %u %" PRIu64, h->block_size, h->nblocks, h->active, h->buffer_size);
	CHECK(h->zlevel == (uint32_t)zlevel && h->compression == (zlevel ? 1u : 0u), "zlevel");
	CHECK(h->created_realtime_ns >= rt0 && h->created_realtime_ns <= rt1, "realtime");
	CHECK(h->created_boottime_ns >= bt0 && h->created_boottime_ns <= bt1, "boottime");
	CHECK(h->dump_seq == 7 && h->overlaps_dump == 6, "seqs");
	CHECK(h->recorder_pid == (uint64_t)getpid(), "pid");
	CHECK(strcmp(h->hostname, host) == 0, "host %s", h->hostname);
	CHECK(uname(&u) == 0 && strcmp(h->kernel, u.release) == 0, "kernel %s", h->kernel);
	CHECK(strcmp(h->reason, "signal") == 0, "reason %s", h->reason);
	CHECK(h->groups_enabled == 0x1f && h->clock_id == CLOCK_BOOTTIME, "groups, clock");
	CHECK(h->drain_events == 4321 && h->drain_rejected == 5, "drain");
	CHECK(h->file_size == (uint64_t)st.st_size, "file size");
	CHECK(zlevel ? h->body_len < h->body_raw_len : h->body_len == h->body_raw_len, "body %" PRIu64 "/%" PRIu64,
	      h->body_len, h->body_raw_len);

	size_t n;
	const struct bt_task *t = bt_dump_tasks(d, &n);
	CHECK(n == 4, "tasks %zu", n);
	for (size_t i = 0; i < n && i < 4; i++)
		CHECK(t[i].tid == test_tasks[i].tid && t[i].tgid == test_tasks[i].tgid &&
			      t[i].exit_ts == test_tasks[i].exit_ts && !strcmp(t[i].comm, test_tasks[i].comm),
		      "task %zu", i);
	const struct bt_probe_desc *p = bt_dump_probes(d, &n);
	CHECK(n == 2 && memcmp(p, test_probes, sizeof(test_probes)) == 0, "probes");
	const uint64_t *dr = bt_dump_rb_drops(d), *em = bt_dump_rb_emitted(d);
	CHECK(dr && memcmp(dr, drops, sizeof(drops)) == 0, "rb drops");
	CHECK(em && memcmp(em, emitted, sizeof(emitted)) == 0, "rb emitted");
	const struct bt_stats *ds = bt_dump_buffer_stats(d);
	CHECK(ds->entries_written == bs.entries_written && ds->padding_bytes == bs.padding_bytes &&
		      ds->blocks_used == bs.blocks_used && ds->nblocks == bs.nblocks && ds->ncores == NCPUS,
	      "buffer stats");
	const struct bt_read_stats *dr2 = bt_dump_read_stats(d);
	CHECK(dr2->blocks_read == rst.blocks_read && dr2->blocks_lost == 0 && dr2->entries == rst.entries,
	      "read stats");
	size_t nb;
	bt_dump_blocks(d, &nb);
	CHECK(nb == rst.blocks_read && h->nblocks_stored == nb, "blocks %zu", nb);

	/* every event back, bit-exact, in time order */
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	CHECK(n == written, "events %zu of %" PRIu64, n, written);
	uint32_t types = 0;
	uint8_t seen[NCPUS][300] = { { 0 } };
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *e = ev[i].ev;
		union any_ev want;
		if (i)
			CHECK(ev[i - 1].ev->ts_ns <= e->ts_ns, "time order at %zu", i);
		REQUIRE(e->cpu < NCPUS && e->seq < per_cpu, "cpu %u seq %u", e->cpu, e->seq);
		uint32_t type = 1 + (e->seq + e->cpu) % (BT_EV_KERNEL_MAX - 1);
		uint32_t len = make_event(&want, type, e->cpu, e->seq, 1000000000000ull + (uint64_t)e->seq * 1000 + e->cpu * 7);
		CHECK(ev[i].len == len && memcmp(e, &want, len) == 0, "event %zu (cpu %u seq %u) differs", i, e->cpu,
		      e->seq);
		CHECK(ev[i].block_core == e->cpu, "block core");
		CHECK(!seen[e->cpu][e->seq], "duplicate");
		seen[e->cpu][e->seq] = 1;
		types |= 1u << e->type;
	}
	CHECK(types == ((1u << BT_EV_KERNEL_MAX) - 2), "all types present: %x", types);

	struct bt_seq_window w;
	struct bt_seq_cpu pc[NCPUS];
	CHECK(bt_seq_analyze(ev, n, NCPUS, &w, pc) == 0, "analyze");
	CHECK(w.gaps == 0 && w.missing == 0 && w.dups == 0 && w.limit_cpu == -1, "no gaps");
	CHECK(w.cont_start_ts == w.first_ts && w.cont_events == n, "whole window continuous");
	CHECK(pc[0].first_seq == 0 && pc[0].last_seq == per_cpu - 1 && pc[1].events == per_cpu, "per cpu");
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

static void test_roundtrip_uncompressed(void)
{
	roundtrip(0);
}

static void test_roundtrip_compressed(void)
{
	roundtrip(6);
}

/* The buffer overwrites old blocks: every CPU lost its oldest events, so the
 * continuous window starts at the latest oldest-retained event. */
static void test_overwritten_history(void)
{
	char dir[300], path[512], err[256];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	fill(b, 5000, 1000);
	snprintf(dir, sizeof(dir), "%s/hist", tmpdir);
	struct bt_dump_info info = make_info();
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 1, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "%s", err);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_seq_window w;
	struct bt_seq_cpu pc[NCPUS];
	REQUIRE(bt_seq_analyze(ev, n, NCPUS, &w, pc) == 0, "analyze");
	CHECK(n > 0 && n < 10000, "some events retained: %zu", n);
	CHECK(w.gaps == 0, "no gaps: %" PRIu64, w.gaps);
	CHECK(pc[0].limit == BT_SEQ_LIMIT_HISTORY && pc[1].limit == BT_SEQ_LIMIT_HISTORY, "history limits");
	uint64_t want = pc[0].first_ts > pc[1].first_ts ? pc[0].first_ts : pc[1].first_ts;
	CHECK(w.cont_start_ts == want, "window start %" PRIu64 " want %" PRIu64, w.cont_start_ts, want);
	CHECK(w.limit_cpu == (pc[0].first_ts > pc[1].first_ts ? 0 : 1), "limit cpu %d", w.limit_cpu);
	CHECK(pc[0].last_seq == 4999 && pc[1].last_seq == 4999, "newest kept");
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

/* ---- crafted gaps -------------------------------------------------------- */

static void test_window_gap(void)
{
	/* CPU 0: seqs 0..9 at t=100..109, gap (10..14), seqs 15..19 at t=200..204.
	 * CPU 1: seqs 5..30 at t=50,60,..300 (seqs 0..4 overwritten).
	 * CPU 0's gap ends at 200, CPU 1's history starts at 50: window [200, 300]. */
	static struct bt_event_hdr e[64];
	static struct bt_dump_event de[64];
	size_t n = 0;
	for (uint32_t s = 0; s < 20; s++) {
		if (s >= 10 && s < 15)
			continue;
		e[n] = (struct bt_event_hdr){ .ts_ns = s < 10 ? 100 + s : 200 + (s - 15), .seq = s, .cpu = 0,
					      .type = BT_EV_SYS_ENTER };
		n++;
	}
	for (uint32_t s = 5; s <= 30; s++) {
		e[n] = (struct bt_event_hdr){ .ts_ns = 50 + (s - 5) * 10, .seq = s, .cpu = 1, .type = BT_EV_SYS_ENTER };
		n++;
	}
	/* time order, as bt_dump_events gives */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (e[j].ts_ns < e[i].ts_ns) {
				struct bt_event_hdr t = e[i];
				e[i] = e[j];
				e[j] = t;
			}
	for (size_t i = 0; i < n; i++)
		de[i] = (struct bt_dump_event){ .ev = &e[i], .len = sizeof(e[i]) };
	struct bt_seq_window w;
	struct bt_seq_cpu pc[2];
	REQUIRE(bt_seq_analyze(de, n, 2, &w, pc) == 0, "analyze");
	CHECK(w.events == n && w.first_ts == 50 && w.last_ts == 300, "window %" PRIu64 "..%" PRIu64, w.first_ts,
	      w.last_ts);
	CHECK(w.gaps == 1 && w.missing == 5, "gaps %" PRIu64 " missing %" PRIu64, w.gaps, w.missing);
	CHECK(pc[0].limit == BT_SEQ_LIMIT_GAP && pc[0].start_ts == 200 && pc[0].gap_from == 10 && pc[0].gap_to == 14,
	      "cpu0 %d %" PRIu64, pc[0].limit, pc[0].start_ts);
	CHECK(pc[1].limit == BT_SEQ_LIMIT_HISTORY && pc[1].start_ts == 50 && pc[1].first_seq == 5, "cpu1");
	CHECK(w.cont_start_ts == 200 && w.limit_cpu == 0, "start %" PRIu64 " cpu %d", w.cont_start_ts, w.limit_cpu);
	/* ts >= 200: CPU 0 15..19 (5), CPU 1 t=200..300 (11) */
	CHECK(w.cont_events == 16, "cont events %" PRIu64, w.cont_events);

	struct bt_seq_gap *g;
	size_t ng;
	REQUIRE(bt_seq_gaps(de, n, 2, &g, &ng) == 0, "gaps");
	CHECK(ng == 1 && g[0].cpu == 0 && g[0].from_seq == 10 && g[0].missing == 5 && de[g[0].index].ev->seq == 15,
	      "gap list");
	free(g);

	/* A later gap on CPU 1 moves the start; CPU 0 starting at seq 0 sets no limit by itself. */
	for (size_t i = 0; i < n; i++)
		if (e[i].cpu == 1 && e[i].seq >= 27)
			e[i].seq += 100; /* seqs 27..126 missing before t=270 */
	REQUIRE(bt_seq_analyze(de, n, 2, &w, pc) == 0, "analyze");
	CHECK(w.cont_start_ts == 270 && w.limit_cpu == 1 && w.missing == 105, "start %" PRIu64 " cpu %d missing %" PRIu64,
	      w.cont_start_ts, w.limit_cpu, w.missing);

	/* 32-bit wrap is no gap; out-of-order nesting (seq 3 logged before 2) is no gap. */
	static const uint32_t wrap[] = { 0xfffffffeu, 0xffffffffu, 0, 1, 3, 2, 4 };
	for (size_t i = 0; i < 7; i++) {
		e[i] = (struct bt_event_hdr){ .ts_ns = 1000 + i, .seq = wrap[i], .cpu = 0, .type = BT_EV_SYS_ENTER };
		de[i] = (struct bt_dump_event){ .ev = &e[i], .len = sizeof(e[i]) };
	}
	REQUIRE(bt_seq_analyze(de, 7, 1, &w, pc) == 0, "analyze");
	CHECK(w.gaps == 0 && w.dups == 0 && pc[0].first_seq == 0xfffffffeu && pc[0].last_seq == 4, "wrap: gaps %" PRIu64,
	      w.gaps);
	CHECK(pc[0].limit == BT_SEQ_LIMIT_HISTORY && w.cont_start_ts == 1000, "wrap start");
	/* all CPUs from seq 0, no gaps: no limit */
	e[0].seq = 0;
	REQUIRE(bt_seq_analyze(de, 1, 1, &w, pc) == 0, "analyze");
	CHECK(w.limit_cpu == -1 && pc[0].limit == BT_SEQ_LIMIT_NONE && w.cont_events == 1, "no limit");
}

/* A summary's seq records come in the buffer's block order, a few sorted
 * runs per CPU (seq_window.c merges them): the same window as the
 * time-ordered events give, for runs rotated, a 32-bit wrap, a gap and a
 * duplicate among them. */
static void test_window_runs(void)
{
	enum { N = 3000 };
	static struct bt_event_hdr e[N];
	static struct bt_dump_event de[N];
	static struct bt_seq_rec r[N];
	size_t n = 0;

	for (uint32_t c = 0; c < 2; c++)
		for (uint32_t i = 0; i < N / 2; i++) {
			uint32_t seq = 0xffffff00u + i + (c == 1 && i >= 700 ? 9 : 0); /* CPU 1: 9 missing */
			if (c == 0 && i == 400)
				seq--; /* a duplicate of 399, and 400 missing */
			e[n++] = (struct bt_event_hdr){ .ts_ns = 1000 + 3 * (uint64_t)i + c, .seq = seq, .cpu = c,
							.type = BT_EV_SYS_ENTER };
		}
	/* e is per CPU in time order; the events' path wants global time order */
	for (size_t i = 0, a = 0, b = N / 2; i < N; i++)
		de[i] = (struct bt_dump_event){ .ev = &e[b >= N || (a < N / 2 && e[a].ts_ns < e[b].ts_ns) ? a++ : b++],
						.len = sizeof(e[0]) };
	/* the records: the even events in runs of 257, last run first, then
	 * the odd ones in one run (the merges take from both sides) */
	size_t m = 0;
	for (size_t run = (N + 256) / 257; run-- > 0;)
		for (size_t i = run * 257; i < (run + 1) * 257 && i < N; i++)
			if (i % 2 == 0)
				r[m++] = (struct bt_seq_rec){ .ts = e[i].ts_ns, .seq = e[i].seq, .cpu = e[i].cpu };
	for (size_t i = 1; i < N; i += 2)
		r[m++] = (struct bt_seq_rec){ .ts = e[i].ts_ns, .seq = e[i].seq, .cpu = e[i].cpu };
	REQUIRE(m == N, "records %zu", m);
	struct bt_seq_window we, wr;
	REQUIRE(bt_seq_analyze(de, N, 2, &we, NULL) == 0, "analyze events");
	REQUIRE(bt_seq_analyze_recs(r, N, 2, 0, &wr) == 0, "analyze records");
	CHECK(we.events == N && we.gaps == 2 && we.missing == 10 && we.dups == 1, "events: gaps %" PRIu64
	      " missing %" PRIu64 " dups %" PRIu64, we.gaps, we.missing, we.dups);
	CHECK(memcmp(&we, &wr, sizeof(we)) == 0, "records in runs: events %" PRIu64 " gaps %" PRIu64 " missing %" PRIu64
	      " dups %" PRIu64 " start %" PRIu64 " (events' start %" PRIu64 ")", wr.events, wr.gaps, wr.missing, wr.dups,
	      wr.cont_start_ts, we.cont_start_ts);
}

/* A real dump with a crafted gap: events of CPU 1 with seqs 100..109 are never written. */
static void test_dump_gap(void)
{
	char dir[300], path[512], err[256];
	struct bt_buffer *b = make_buffer(256 << 10);
	REQUIRE(b, "buffer");
	for (uint32_t i = 0; i < 200; i++)
		for (uint32_t c = 0; c < NCPUS; c++) {
			union any_ev e;
			if (c == 1 && i >= 100 && i < 110)
				continue;
			uint32_t len = make_event(&e, BT_EV_SYS_EXIT, c, i, 5000000000ull + i * 1000000ull + c);
			REQUIRE(fx_store(b, c, &e.h, len) == 0, "write");
		}
	snprintf(dir, sizeof(dir), "%s/gap", tmpdir);
	struct bt_dump_info info = make_info();
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "%s", err);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_seq_window w;
	REQUIRE(bt_seq_analyze(ev, n, NCPUS, &w, NULL) == 0, "analyze");
	CHECK(n == 390 && w.gaps == 1 && w.missing == 10 && w.limit_cpu == 1, "n %zu gaps %" PRIu64, n, w.gaps);
	CHECK(w.cont_start_ts == 5000000000ull + 110 * 1000000ull + 1, "start %" PRIu64, w.cont_start_ts);
	CHECK(w.cont_events == 89 + 90, "events in window %" PRIu64, w.cont_events); /* CPU 0 at 5.110000000 is before */

	/* the report marks the loss where it happened */
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	REQUIRE(f, "memstream");
	CHECK(bt_dump_report(d, 0, f) == 0, "report");
	fclose(f);
	const char *lost = strstr(out, "CPU:1 [LOST 10 EVENTS]\n");
	CHECK(lost != NULL, "LOST line");
	if (lost) {
		/* the next CPU 1 line after the LOST line is seq 110 */
		const char *nx = strstr(lost, "[001]");
		CHECK(nx && strncmp(nx, "[001]     5.110000:", 19) == 0, "after gap: %.40s", nx ? nx : "");
	}
	free(out);
	out = NULL;
	f = open_memstream(&out, &olen);
	REQUIRE(f, "memstream");
	CHECK(bt_dump_report(d, 1, f) == 0, "stats");
	fclose(f);
	CHECK(strstr(out, "latest continuous window: 5.110000 .. 5.199000 (0.089000 s, 179 events)"), "window line:\n%s",
	      out);
	CHECK(strstr(out, "starts after CPU 1's newest seq gap (seqs 100..109 missing)"), "limit line");
	CHECK(strstr(out, "seq gaps: 1 gaps, 10 events missing"), "gap counters");
	free(out);
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

/* ---- report format --------------------------------------------------------- */

static void test_report_format(void)
{
	char dir[300], path[512], err[256];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	union any_ev e;
	uint64_t t = 1234567890123ull;
	make_event(&e, BT_EV_SCHED_SWITCH, 1, 1, t);
	e.h.tid = 1234;
	e.sw.prev_tid = 1234;
	e.sw.next_tid = 1235;
	e.sw.prev_state = 1;
	e.sw.next_prio = 120;
	REQUIRE(fx_store(b, 1, &e.h, sizeof(e.sw)) == 0, "write");
	make_event(&e, BT_EV_SOFTIRQ_ENTRY, 0, 1, t + 1000);
	e.h.tid = 0;
	REQUIRE(fx_store(b, 0, &e.h, sizeof(e.irq)) == 0, "write");
	make_event(&e, BT_EV_UPROBE_RETURN, 1, 2, t + 2000);
	e.h.tid = 9999; /* not in the task table */
	REQUIRE(fx_store(b, 1, &e.h, sizeof(e.up)) == 0, "write");
	make_event(&e, BT_EV_SCHED_SWITCH, 0, 2, t + 3000);
	e.h.tid = 0;
	e.sw.prev_tid = 0;
	e.sw.prev_state = 0;
	e.sw.next_tid = 1;
	REQUIRE(fx_store(b, 0, &e.h, sizeof(e.sw)) == 0, "write");
	make_event(&e, BT_EV_UPROBE_ENTRY, 1, 3, t + 4000);
	e.h.tid = 1234;
	REQUIRE(fx_store(b, 1, &e.h, sizeof(e.up)) == 0, "write");
	snprintf(dir, sizeof(dir), "%s/fmt", tmpdir);
	struct bt_dump_info info = make_info();
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 9, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "%s", err);
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	REQUIRE(f, "memstream");
	CHECK(bt_dump_report(d, 0, f) == 0, "report");
	fclose(f);
	const char *want =
		"cpus=2\n"
		"        pingpong-1234  [001]  1234.567890: sched_switch: prev_comm=pingpong prev_pid=1234 prev_prio=120 prev_state=S ==> next_comm=pong next_pid=1235 next_prio=120\n"
		"          <idle>-0     [000]  1234.567891: softirq_entry: vec=3 [action=NET_RX]\n"
		"           <...>-9999  [001]  1234.567892: uretprobe: malloc ret=0x55d0c8a0 duration=12.345us\n"
		"          <idle>-0     [000]  1234.567893: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R+ ==> next_comm=systemd next_pid=1 next_prio=100\n"
		"        pingpong-1234  [001]  1234.567894: uprobe: malloc (libc.so.6) arg1=0x10 arg2=0x3\n";
	CHECK(out && strcmp(out, want) == 0, "report:\n%s\nwant:\n%s", out ? out : "", want);
	free(out);
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

static void test_field_text(void)
{
	char buf[512], st[16];
	union any_ev e;
	struct bt_namer *nm = bt_namer_new(test_tasks, 4);
	REQUIRE(nm, "namer");
	CHECK(!strcmp(bt_prev_state_str(0, st, sizeof(st)), "R+"), "R+");
	CHECK(!strcmp(bt_prev_state_str(0x100, st, sizeof(st)), "R+"), "tracepoint R+");
	CHECK(!strcmp(bt_prev_state_str(2, st, sizeof(st)), "D"), "D");
	CHECK(!strcmp(bt_prev_state_str(0x80, st, sizeof(st)), "I"), "I");
	CHECK(!strcmp(bt_prev_state_str(0x402, st, sizeof(st)), "I"), "raw TASK_IDLE");
	CHECK(!strcmp(bt_prev_state_str(0x20, st, sizeof(st)), "Z"), "Z");
	CHECK(!strcmp(bt_prev_state_str(0x3, st, sizeof(st)), "S|D"), "S|D: %s", st);
	CHECK(!strcmp(bt_prev_state_str(0x8, st, sizeof(st)), "t"), "t");
	for (uint32_t t = 1; t < BT_EV_KERNEL_MAX; t++) {
		uint32_t len = make_event(&e, t, 0, 5, 1);
		int r = bt_format_fields(buf, sizeof(buf), &e.h, len, nm, test_probes, 2);
		CHECK(r > 0 && (size_t)r == strlen(buf), "type %u: %d '%s'", t, r, buf);
		CHECK(bt_event_type(bt_event_name(t)) == (int)t && bt_event_min_size(t) == len, "names %u", t);
		/* small buffers truncate, never overflow */
		char small[8];
		int r2 = bt_format_fields(small, sizeof(small), &e.h, len, nm, test_probes, 2);
		CHECK(r2 == r && strlen(small) == (size_t)(r < 7 ? r : 7), "truncation");
	}
	make_event(&e, BT_EV_SYS_ENTER, 0, 5, 1);
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.sc), nm, NULL, 0);
	CHECK(!strcmp(buf, "write (NR 1)"), "%s", buf); /* named, with its number (issue 28) */
	make_event(&e, BT_EV_SYS_EXIT, 0, 5, 1);
	e.sc.ret = -2;
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.sc), nm, NULL, 0);
	CHECK(!strcmp(buf, "write (NR 1) = -2"), "%s", buf);
	make_event(&e, BT_EV_SCHED_WAKEUP, 0, 5, 1);
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.wk), nm, NULL, 0);
	CHECK(!strcmp(buf, "comm=pingpong pid=1234 prio=120 target_cpu=001"), "%s", buf);
	make_event(&e, BT_EV_IRQ_EXIT, 0, 5, 1);
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.irq), nm, NULL, 0);
	CHECK(!strcmp(buf, "irq=24 ret=handled"), "%s", buf);
	/* rename: oldcomm from what we know, then the new name sticks */
	make_event(&e, BT_EV_TASK_RENAME, 0, 5, 1);
	e.tk.tid = 1235;
	snprintf(e.tk.comm, sizeof(e.tk.comm), "worker");
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.tk), nm, NULL, 0);
	CHECK(!strcmp(buf, "pid=1235 oldcomm=pong newcomm=worker"), "%s", buf);
	bt_namer_apply(nm, &e.h, sizeof(e.tk));
	CHECK(!strcmp(bt_namer_comm(nm, 1235, 0), "worker"), "renamed");
	/* a full 16-byte comm without NUL */
	memset(e.tk.comm, 'x', sizeof(e.tk.comm));
	e.h.type = BT_EV_PROCESS_FORK;
	bt_format_fields(buf, sizeof(buf), &e.h, sizeof(e.tk), nm, NULL, 0);
	CHECK(strstr(buf, "child_comm=xxxxxxxxxxxxxxxx child_pid=1235"), "%s", buf);
	CHECK(!strcmp(bt_namer_comm(nm, 77777, 0), "<...>") && !strcmp(bt_namer_comm(nm, 0, 3), "swapper/3"),
	      "unknown names");
	/* many overrides: the hash grows */
	for (uint32_t i = 0; i < 5000; i++) {
		make_event(&e, BT_EV_PROCESS_FORK, 0, i, 1);
		e.tk.tid = 100000 + i;
		snprintf(e.tk.comm, sizeof(e.tk.comm), "t%u", i);
		bt_namer_apply(nm, &e.h, sizeof(e.tk));
	}
	CHECK(!strcmp(bt_namer_comm(nm, 100000 + 4321, 0), "t4321"), "hash");
	bt_namer_free(nm);
}

/* ---- failure paths --------------------------------------------------------- */

static void test_unwritable(void)
{
	char dir[600], path[512], err[256], fpath[300];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	fill(b, 200, 1);
	struct bt_dump_info info = make_info();

	/* a path component is a regular file */
	snprintf(fpath, sizeof(fpath), "%s/plainfile", tmpdir);
	FILE *f = fopen(fpath, "w");
	REQUIRE(f, "create");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/sub", fpath);
	int r = bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err));
	CHECK(r == -ENOTDIR && err[0] && path[0] == '\0', "r=%d err=%s", r, err);

	/* a directory we may not write (only meaningful without CAP_DAC_OVERRIDE) */
	snprintf(dir, sizeof(dir), "%s/ro", tmpdir);
	mkdir(dir, 0500);
	if (geteuid() != 0) {
		r = bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err));
		CHECK(r == -EACCES && err[0], "r=%d err=%s", r, err);
		CHECK(count_dir(dir, NULL, 0) == 0, "nothing left");
	}
	/* an explicit path into a missing directory */
	snprintf(dir, sizeof(dir), "%s/missing/x.btd", tmpdir);
	r = bt_dump_write(b, &info, NULL, dir, 0, path, sizeof(path), NULL, err, sizeof(err));
	CHECK(r == -ENOENT && err[0], "r=%d err=%s", r, err);

	/* the disk fills mid-dump (file size limit): error, partial file removed */
	snprintf(dir, sizeof(dir), "%s/full", tmpdir);
	mkdir(dir, 0700);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 8192;
	REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
	r = bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err));
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(r == -EFBIG && strstr(err, "File too large"), "r=%d err=%s", r, err);
	CHECK(count_dir(dir, NULL, 0) == 0, "no partial or temporary file left");
	/* the buffer is untouched: the next dump works */
	r = bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err));
	CHECK(r == 0 && count_dir(dir, NULL, 0) == 1, "retry: %d %s", r, err);

	/* bad arguments */
	info.ncpus = 0;
	CHECK(bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err)) == -EINVAL, "ncpus");
	info = make_info();
	CHECK(bt_dump_write(b, &info, dir, NULL, 10, path, sizeof(path), NULL, err, sizeof(err)) == -EINVAL, "level");
	bt_buffer_destroy(b);
}

static void test_paths(void)
{
	char dir[300], path[512], p2[512], err[256], explicit[400];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	fill(b, 10, 1);
	struct bt_dump_info info = make_info();
	snprintf(dir, sizeof(dir), "%s/names", tmpdir);
	/* same seq twice: the second name must not replace the first */
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 0, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 0, p2, sizeof(p2), NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(strcmp(path, p2) != 0 && count_dir(dir, NULL, 0) == 2, "%s %s", path, p2);
	/* an explicit path replaces */
	snprintf(explicit, sizeof(explicit), "%s/explicit.btd", dir);
	REQUIRE(bt_dump_write(b, &info, NULL, explicit, 0, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(!strcmp(path, explicit), "%s", path);
	REQUIRE(bt_dump_write(b, &info, NULL, explicit, 3, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	CHECK(count_dir(dir, NULL, 0) == 3, "replaced");
	struct bt_dump *d = bt_dump_open(explicit, err, sizeof(err));
	CHECK(d && bt_dump_header(d)->zlevel == 3, "the newer one");
	bt_dump_close(d);
	/* an empty buffer and empty tables are fine */
	struct bt_buffer *e = make_buffer(64 << 10);
	REQUIRE(e, "buffer");
	info.ntasks = info.nprobes = 0;
	info.tasks = NULL;
	info.probes = NULL;
	info.rb_drops = info.rb_emitted = NULL;
	info.reason = NULL;
	REQUIRE(bt_dump_write(e, &info, NULL, explicit, 0, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	d = bt_dump_open(explicit, err, sizeof(err));
	REQUIRE(d, "%s", err);
	size_t n;
	bt_dump_events(d, &n);
	CHECK(n == 0 && bt_dump_rb_emitted(d) == NULL && bt_dump_rb_drops(d)[3] == 0, "empty dump");
	CHECK(bt_dump_report(d, 1, fopen("/dev/null", "w")) == 0, "stats of an empty dump");
	bt_dump_close(d);
	bt_buffer_destroy(e);
	bt_buffer_destroy(b);
}

/* ---- damage ---------------------------------------------------------------- */

static int walk_all(struct bt_dump *d)
{
	/* what report does, output discarded */
	FILE *f = fopen("/dev/null", "w");
	int r = bt_dump_report(d, 0, f) | bt_dump_report(d, 1, f);
	fclose(f);
	return r;
}

static void damage(int zlevel)
{
	char dir[300], path[512], err[256];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	fill(b, 60, 1000);
	snprintf(dir, sizeof(dir), "%s/damage%d", tmpdir, zlevel);
	struct bt_dump_info info = make_info();
	REQUIRE(bt_dump_write(b, &info, dir, NULL, zlevel, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	size_t len;
	uint8_t *img = h_read_file(path, &len);
	REQUIRE(img, "read");
	struct bt_dump *d = bt_dump_open_mem(img, len, err, sizeof(err));
	REQUIRE(d, "intact: %s", err);
	CHECK(walk_all(d) == 0, "walk");
	bt_dump_close(d);

	/* every truncation is refused with a message */
	int bad = 0;
	for (size_t cut = 0; cut < len; cut++) {
		err[0] = '\0';
		d = bt_dump_open_mem(img, cut, err, sizeof(err));
		if (d || !err[0]) {
			bad++;
			bt_dump_close(d);
		}
	}
	CHECK(bad == 0, "%d truncations not refused", bad);
	uint8_t *cp = malloc(len + 16);
	memcpy(cp, img, len);
	memset(cp + len, 0, 16);
	d = bt_dump_open_mem(cp, len + 16, err, sizeof(err));
	CHECK(!d && strstr(err, "after the body"), "trailing bytes: %s", err);
	bt_dump_close(d);
	memcpy(cp, img, len);
	d = bt_dump_open_mem(cp, len - 1, err, sizeof(err));
	CHECK(!d && strstr(err, "truncated dump (file ends at"), "truncation message: %s", err);

	/* every single-byte flip is refused (header crc, body crc) */
	bad = 0;
	for (size_t i = 0; i < len; i++) {
		cp[i] ^= (uint8_t)(1u << (i % 8));
		err[0] = '\0';
		d = bt_dump_open_mem(cp, len, err, sizeof(err));
		if (d || !err[0]) {
			bad++;
			bt_dump_close(d);
		}
		cp[i] = img[i];
	}
	CHECK(bad == 0, "%d flips not refused", bad);

	/* without crc checks, random damage must still never crash or give
	 * garbage: either refused, or every event valid */
	unsigned seed = 12345;
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(cp, img, len);
		int nflip = 1 + iter % 4;
		for (int k = 0; k < nflip; k++) {
			size_t at = (size_t)rand_r(&seed) % len;
			cp[at] = (uint8_t)rand_r(&seed);
		}
		d = bt_dump_open_mem_flags(cp, len, BT_DUMP_OPEN_NOCRC, err, sizeof(err));
		if (d) {
			size_t n;
			const struct bt_dump_event *ev = bt_dump_events(d, &n);
			for (size_t i = 0; i < n; i++)
				if (ev[i].len < bt_event_min_size(ev[i].ev->type) || ev[i].ev->cpu >= NCPUS)
					bad++;
			walk_all(d);
			bt_dump_close(d);
		} else if (!err[0]) {
			bad++;
		}
	}
	CHECK(bad == 0, "%d damaged dumps gave bad events", bad);

	/* foreign and future files */
	d = bt_dump_open_mem("hello world, this is not a dump", 31, err, sizeof(err));
	CHECK(!d && strstr(err, "not a btrace-bpf dump (bad magic)"), "%s", err);
	d = bt_dump_open_mem("", 0, err, sizeof(err));
	CHECK(!d && strstr(err, "empty"), "%s", err);
	memcpy(cp, img, len);
	cp[8] = 2; /* version */
	d = bt_dump_open_mem(cp, len, err, sizeof(err));
	CHECK(!d && errno == ENOTSUP && strstr(err, "version 2"), "%s", err);
	/* on disk: truncated file */
	char tp[600];
	snprintf(tp, sizeof(tp), "%s.cut", path);
	FILE *f = fopen(tp, "wb");
	REQUIRE(f, "write");
	fwrite(img, 1, len / 2, f);
	fclose(f);
	d = bt_dump_open(tp, err, sizeof(err));
	CHECK(!d && strstr(err, "truncated dump"), "%s", err);
	d = bt_dump_open(dir, err, sizeof(err));
	CHECK(!d && strstr(err, "not a regular file"), "%s", err);
	free(cp);
	free(img);
	bt_buffer_destroy(b);
}

static void test_damage_uncompressed(void)
{
	damage(0);
}

static void test_damage_compressed(void)
{
	damage(6);
}

/* ---- dumping while recording goes on -------------------------------------- */

static atomic_int stop_writer;

static void *writer(void *arg)
{
	struct bt_buffer *b = arg;
	uint32_t seq[NCPUS] = { 0 };
	uint64_t t = 1;
	while (!atomic_load_explicit(&stop_writer, memory_order_relaxed)) {
		for (uint32_t c = 0; c < NCPUS; c++) {
			union any_ev e;
			uint32_t type = 1 + seq[c] % (BT_EV_KERNEL_MAX - 1);
			uint32_t len = make_event(&e, type, c, seq[c], t++);
			fx_store(b, c, &e.h, len);
			seq[c]++;
		}
	}
	return NULL;
}

static void test_concurrent(void)
{
	char dir[300], path[512], err[256];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	pthread_t th;
	atomic_store(&stop_writer, 0);
	REQUIRE(pthread_create(&th, NULL, writer, b) == 0, "thread");
	snprintf(dir, sizeof(dir), "%s/conc", tmpdir);
	mkdir(dir, 0700);
	struct bt_dump_info info = make_info();
	uint64_t lost = 0;
	int bad = 0;
	for (int i = 0; i < 30; i++) {
		struct bt_read_stats rst;
		snprintf(path, sizeof(path), "%s/c%d.btd", dir, i);
		int r = bt_dump_write(b, &info, NULL, path, i % 2 ? 1 : 0, NULL, 0, &rst, err, sizeof(err));
		if (r) {
			bad++;
			continue;
		}
		lost += rst.blocks_lost;
		struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
		if (!d) {
			bad++;
			fprintf(stderr, "  %s\n", err);
			continue;
		}
		size_t n;
		const struct bt_dump_event *ev = bt_dump_events(d, &n);
		for (size_t k = 0; k < n; k++) {
			union any_ev want;
			const struct bt_event_hdr *h = ev[k].ev;
			uint32_t type = 1 + h->seq % (BT_EV_KERNEL_MAX - 1);
			uint32_t len = make_event(&want, type, h->cpu, h->seq, h->ts_ns);
			if (ev[k].len != len || memcmp(h, &want, len))
				bad++;
		}
		if (bt_dump_read_stats(d)->blocks_lost != rst.blocks_lost)
			bad++;
		bt_dump_close(d);
		unlink(path);
	}
	atomic_store(&stop_writer, 1);
	pthread_join(th, NULL);
	CHECK(bad == 0, "%d bad dumps or events", bad);
	printf("# concurrent: %" PRIu64 " blocks lost while dumping (counted in the dumps)\n", lost);
	bt_buffer_destroy(b);
}

/* ---- the command line ------------------------------------------------------ */

/* Run cmd_report(args) in a child; stdout and stderr go to malloc'd strings. */
static int run_report(const char *const *args, char **out, char **errs)
{
	char of[400], ef[400];
	snprintf(of, sizeof(of), "%s/report.out", tmpdir);
	snprintf(ef, sizeof(ef), "%s/report.err", tmpdir);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int argc = 0;
		char *argv[32];
		argv[argc++] = (char *)"report";
		while (args[argc - 1] && argc < 31) {
			argv[argc] = (char *)args[argc - 1];
			argc++;
		}
		argv[argc] = NULL;
		if (!freopen(of, "w", stdout) || !freopen(ef, "w", stderr))
			_exit(99);
		int r = cmd_report(argc, argv);
		fflush(NULL);
		_exit(r);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	size_t n;
	*out = (char *)h_read_file(of, &n);
	if (*out && (*out = realloc(*out, n + 1)))
		(*out)[n] = '\0';
	*errs = (char *)h_read_file(ef, &n);
	if (*errs && (*errs = realloc(*errs, n + 1)))
		(*errs)[n] = '\0';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;
	for (const char *l = s; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)(len < 1023 ? len : 1023), l);
		if (!needle || strstr(line, needle))
			n++;
		l = e ? e + 1 : l + len;
	}
	return n;
}

static void test_cli(void)
{
	char dir[300], path[512], err[256], *out, *errs;
	struct bt_buffer *b = make_buffer(256 << 10);
	REQUIRE(b, "buffer");
	/* 100 events per CPU, 1 ms apart from t = 10 s; CPU 1 misses seqs 50..52 */
	for (uint32_t i = 0; i < 100; i++)
		for (uint32_t c = 0; c < NCPUS; c++) {
			union any_ev e;
			if (c == 1 && i >= 50 && i < 53)
				continue;
			uint32_t type = i % 2 ? BT_EV_SYS_ENTER : BT_EV_SCHED_SWITCH;
			uint32_t len = make_event(&e, type, c, i, 10000000000ull + i * 1000000ull + c);
			REQUIRE(fx_store(b, c, &e.h, len) == 0, "write");
		}
	snprintf(dir, sizeof(dir), "%s/cli", tmpdir);
	struct bt_dump_info info = make_info();
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 1, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);

	const char *a1[] = { path, NULL };
	CHECK(run_report(a1, &out, &errs) == 0, "plain");
	CHECK(count_lines(out, NULL) == 1 + 197 + 1, "lines %d", count_lines(out, NULL));
	CHECK(!strncmp(out, "cpus=2\n", 7) && count_lines(out, "CPU:1 [LOST 3 EVENTS]") == 1, "header, LOST");
	CHECK(strstr(errs, "3 events missing in 1 seq gap(s)"), "stderr note: %s", errs);
	free(out), free(errs);

	const char *a2[] = { "--cpu", "1", "-e", "sys_enter", path, NULL };
	CHECK(run_report(a2, &out, &errs) == 0, "filters");
	CHECK(count_lines(out, "sys_enter") == 49 && count_lines(out, "[000]") == 0 && count_lines(out, "sched_switch") == 0,
	      "cpu+event: %d", count_lines(out, "sys_enter"));
	free(out), free(errs);

	const char *a3[] = { "--since", "0.010", "--until", "@10.019999", "--no-lost", path, NULL };
	CHECK(run_report(a3, &out, &errs) == 0, "time");
	/* 10.010 .. 10.019999: i = 10..19 on CPU 0 (t = 10.0i) and CPU 1 (t = 10.0i + 1 ns) */
	CHECK(count_lines(out, ": ") == 20 && strstr(out, "    10.010000:") && strstr(out, "    10.019000:"), "range:\n%s", out);
	free(out), free(errs);

	const char *a4[] = { "--since", "-0.0015", path, NULL };
	CHECK(run_report(a4, &out, &errs) == 0, "since -N");
	CHECK(count_lines(out, ": ") == 4, "last 1.5 ms: %d\n%s", count_lines(out, ": "), out);
	free(out), free(errs);

	const char *a5[] = { "-p", "1235", "-e", "sys_enter", path, NULL };
	CHECK(run_report(a5, &out, &errs) == 0, "pid");
	CHECK(count_lines(out, "sys_enter") > 0 && count_lines(out, "sys_enter") == count_lines(out, "pong-1235 "),
	      "pid filter:\n%s", out);
	free(out), free(errs);

	const char *a6[] = { "--stats", "--cpu", "0", path, NULL };
	CHECK(run_report(a6, &out, &errs) == 0, "stats");
	CHECK(strstr(out, "latest continuous window: 10.053000 .. 10.099000 (0.046000 s, 93 events)") &&
		      strstr(out, "matching:   100 events"),
	      "stats:\n%s", out);
	free(out), free(errs);

	const char *b1[] = { "--bogus", path, NULL };
	CHECK(run_report(b1, &out, &errs) == 2 && strstr(errs, "--help"), "bad option");
	free(out), free(errs);
	const char *b2[] = { "--cpu", "1-0", path, NULL };
	CHECK(run_report(b2, &out, &errs) == 2 && strstr(errs, "bad CPU list"), "bad cpus: %s", errs);
	free(out), free(errs);
	const char *b3[] = { "--since", "1.2.3", path, NULL };
	CHECK(run_report(b3, &out, &errs) == 2 && strstr(errs, "bad time"), "bad time: %s", errs);
	free(out), free(errs);
	const char *b4[] = { "-e", "sched_swtch", path, NULL };
	CHECK(run_report(b4, &out, &errs) == 2 && strstr(errs, "unknown event 'sched_swtch'"), "bad event: %s", errs);
	free(out), free(errs);
	const char *b5[] = { NULL };
	CHECK(run_report(b5, &out, &errs) == 2 && strstr(errs, "no dump file"), "no file: %s", errs);
	free(out), free(errs);
	const char *b6[] = { "--help", NULL };
	CHECK(run_report(b6, &out, &errs) == 0 && strstr(out, "Examples:"), "help");
	free(out), free(errs);

	/* damaged files: a clear message, exit 1, nothing on stdout */
	size_t len;
	uint8_t *img = h_read_file(path, &len);
	char cut[600];
	snprintf(cut, sizeof(cut), "%s/cut.btd", tmpdir);
	FILE *f = fopen(cut, "wb");
	REQUIRE(img && f, "copy");
	fwrite(img, 1, len - 100, f);
	fclose(f);
	const char *c1[] = { cut, NULL };
	CHECK(run_report(c1, &out, &errs) == 1 && out[0] == '\0', "truncated exit");
	char want[800];
	snprintf(want, sizeof(want), "btrace-bpf report: %s: truncated dump (file ends at %zu of %zu bytes)\n", cut, len - 100, len);
	CHECK(!strcmp(errs, want), "message '%s' want '%s'", errs, want);
	free(out), free(errs);
	f = fopen(cut, "wb");
	img[600] ^= 0x40;
	fwrite(img, 1, len, f);
	fclose(f);
	CHECK(run_report(c1, &out, &errs) == 1 && strstr(errs, "corrupt dump (body checksum"), "flipped: %s", errs);
	free(out), free(errs);
	free(img);
	bt_buffer_destroy(b);
}

/* ---- fuzzer seeds ---------------------------------------------------------- */

static void write_seeds(const char *dir)
{
	char path[600], err[256];
	mkdir(dir, 0755);
	for (int k = 0; k < 4; k++) {
		struct bt_buffer *b = make_buffer(64 << 10);
		if (!b)
			return;
		/* small: every type a couple of times, a gap on CPU 1 in seed 2 */
		for (uint32_t i = 0; i < (k == 3 ? 3u : 24u); i++)
			for (uint32_t c = 0; c < NCPUS; c++) {
				union any_ev e;
				if (k == 2 && c == 1 && i >= 8 && i < 11)
					continue;
				uint32_t len = make_event(&e, 1 + (i * NCPUS + c) % (BT_EV_KERNEL_MAX - 1), c, i, 1000000 + i * 1000 + c);
				fx_store(b, c, &e.h, len);
			}
		struct bt_dump_info info = make_info();
		snprintf(path, sizeof(path), "%s/seed-%s-%d.btd", dir, k % 2 ? "zlib" : "raw", k);
		if (bt_dump_write(b, &info, NULL, path, k % 2 ? 6 : 0, NULL, 0, NULL, err, sizeof(err)))
			fprintf(stderr, "seed %s: %s\n", path, err);
		bt_buffer_destroy(b);
	}
}

/* ---- application sections (ABLK/APPS) -------------------------------------- */

struct app_fixture {
	uint32_t tgid; /* what the events claim */
	int nblocks;
};

/* One application (pid 777) with names "frame" and "queue": nblocks blocks
 * of 4 events each: BEGIN frame, INSTANT frame(1,2), COUNTER queue=k, END. */
static int write_test_apps(void *ctx, struct bt_dump_sink *s)
{
	struct app_fixture *fx = ctx;
	static char names[2][64] = { "frame", "queue" };
	for (int b = 0; b < fx->nblocks; b++) {
		uint8_t blk[1024] = { 0 };
		struct bt_block_hdr h = { .pos = 100 + (uint64_t)b, .prev_pos = BT_NO_POS, .core = (uint32_t)b % NCPUS };
		uint32_t off = BT_BLOCK_HDR;
		memcpy(blk, &h, sizeof(h));
		for (int k = 0; k < 4; k++) {
			uint8_t ev[sizeof(struct bt_ev_app) + 16] = { 0 };
			struct bt_ev_app *a = (struct bt_ev_app *)ev;
			static const uint16_t types[4] = { BT_EV_APP_BEGIN, BT_EV_APP_INSTANT, BT_EV_APP_COUNTER, BT_EV_APP_END };
			a->h.ts_ns = 5000000000ull + (uint64_t)b * 1000 + (uint64_t)k;
			a->h.seq = (uint32_t)(b * 4 + k);
			a->h.tid = 778;
			a->h.tgid = fx->tgid;
			a->h.cpu = (uint16_t)(b % NCPUS);
			a->h.type = types[k];
			a->name_id = k == 3 ? 0 : k == 2 ? 2 : 1;
			a->nargs = k == 1 ? 2 : k == 2 ? 1 : 0;
			a->args[0] = k == 2 ? b : 1;
			a->args[1] = 2;
			uint32_t len = (uint32_t)(sizeof(*a) + 8u * a->nargs);
			struct bt_entry_hdr e = { .size = BT_ENTRY_HDR + len, .kind = BT_ENTRY_DATA };
			memcpy(blk + off, &e, sizeof(e));
			memcpy(blk + off + BT_ENTRY_HDR, ev, len);
			off += (BT_ENTRY_HDR + len + 7) & ~7u;
		}
		struct bt_block_view v = { .pos = h.pos, .prev_pos = h.prev_pos, .core = h.core, .used = off,
					   .complete = 1, .data = blk };
		int r = bt_dump_sink_app_block(s, 0, &v);
		if (r)
			return r;
	}
	struct bt_dump_app a = { .pid = 777, .flags = BT_APP_EXITED, .registered_ts = 1, .exit_ts = 2, .name = "game",
				 .nnames = 2, .names = (const char(*)[64])names };
	a.counters[BT_APPC_BLOCKS_BAD] = 3;
	a.counters[BT_APPC_ENTRIES] = (uint64_t)fx->nblocks * 4;
	return bt_dump_sink_apps(s, &a, 1);
}

static void test_app_sections(void)
{
	char dir[512], path[1024], err[512], txt[256];
	struct bt_buffer *b = make_buffer(64 << 10);
	REQUIRE(b, "buffer");
	uint64_t written = fill(b, 50, 1000000000000ull);
	struct app_fixture fx = { .tgid = 777, .nblocks = 3 };
	struct bt_dump_info info = make_info();
	info.write_apps = write_test_apps;
	info.apps_ctx = &fx;
	snprintf(dir, sizeof(dir), "%s/apps", tmpdir);
	REQUIRE(bt_dump_write(b, &info, dir, NULL, 1, path, sizeof(path), NULL, err, sizeof(err)) == 0, "%s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	size_t n, napps, nk = 0, na = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	const struct bt_dump_app *apps = bt_dump_apps(d, &napps);
	REQUIRE(napps == 1, "one application: %zu", napps);
	CHECK(apps[0].pid == 777 && !strcmp(apps[0].name, "game") && apps[0].flags == BT_APP_EXITED &&
		      apps[0].counters[BT_APPC_BLOCKS_BAD] == 3 && apps[0].nnames == 2,
	      "table: pid %u name %s", apps[0].pid, apps[0].name);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].app < 0) {
			nk++;
			continue;
		}
		const struct bt_ev_app *a = (const void *)ev[i].ev;
		na++;
		CHECK(ev[i].app == 0 && a->h.tgid == 777, "app index");
		if (a->h.type == BT_EV_APP_INSTANT) {
			bt_format_app_fields(txt, sizeof(txt), ev[i].ev, ev[i].len, bt_dump_app_event_name(d, 0, a->name_id));
			CHECK(!strcmp(txt, "frame arg1=1 arg2=2"), "instant text '%s'", txt);
		} else if (a->h.type == BT_EV_APP_COUNTER) {
			bt_format_app_fields(txt, sizeof(txt), ev[i].ev, ev[i].len, bt_dump_app_event_name(d, 0, a->name_id));
			CHECK(!strncmp(txt, "queue value=", 12), "counter text '%s'", txt);
		}
	}
	CHECK(nk == written, "kernel events %zu of %" PRIu64 " (app blocks not counted as kernel)", nk, written);
	CHECK(na == 12 && bt_dump_app_blocks(d) == 3, "app events %zu, blocks %" PRIu64, na, bt_dump_app_blocks(d));
	CHECK(bt_dump_app_event_name(d, 0, 3) == NULL && bt_dump_app_event_name(d, 1, 1) == NULL &&
		      bt_dump_app_event_name(d, -1, 1) == NULL,
	      "unknown names are NULL");
	/* the kernel seq analysis ignores app events (their seq is per thread) */
	struct bt_seq_window w;
	CHECK(bt_seq_analyze(ev, n, NCPUS, &w, NULL) == 0 && w.events == nk, "seq analysis: %" PRIu64, w.events);
	FILE *out = fopen("/dev/null", "w");
	CHECK(out && bt_dump_report(d, 1, out) == 0, "report --stats with apps");
	if (out)
		fclose(out);
	bt_dump_close(d);

	/* An event claiming another process in an application's block: refused. */
	fx.tgid = 778;
	snprintf(path, sizeof(path), "%s/apps/foreign.btd", tmpdir);
	char out2[1024];
	REQUIRE(bt_dump_write(b, &info, NULL, path, 0, out2, sizeof(out2), NULL, err, sizeof(err)) == 0, "%s", err);
	d = bt_dump_open(out2, err, sizeof(err));
	CHECK(!d && strstr(err, "application event of process 778"), "foreign event refused: %s", err);
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_dump.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	const char *seeds = getenv("BTRACE_WRITE_SEEDS");
	if (seeds) {
		write_seeds(seeds);
		fx_rm_rf(tmpdir);
		return 0;
	}
	RUN(test_roundtrip_uncompressed);
	RUN(test_roundtrip_compressed);
	RUN(test_overwritten_history);
	RUN(test_window_gap);
	RUN(test_window_runs);
	RUN(test_dump_gap);
	RUN(test_report_format);
	RUN(test_field_text);
	RUN(test_unwritable);
	RUN(test_paths);
	RUN(test_damage_uncompressed);
	RUN(test_damage_compressed);
	RUN(test_concurrent);
	RUN(test_cli);
	RUN(test_app_sections);
	fx_rm_rf(tmpdir);
	return h_done();
}
