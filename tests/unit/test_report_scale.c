// SPDX-License-Identifier: MIT
/* test_report_scale.c - report --functions, --hot, --stats and --manifest
 * (the recorder's manifest code) on a dump of 10^7 calls (f calling g,
 * 2 * 10^7 function records in 5,000 batches of one thread) stay within
 * 64 MiB whatever the calls: the readers take the application blocks
 * again from the file one at a time (BT_DUMP_OPEN_APP_STREAM), the
 * manifest counts the body a chunk at a time. A reader keeping an event
 * per record and a struct per call needs ~180 bytes a call (1.8 GB here;
 * --stats and the manifest took 1.5 GB, issue 36); one holding the body
 * 1.25 times the records' bytes (--functions and --hot: ~230 MB here).
 * BTRACE_DUMP_MAX_BODY bounds only what a reader keeps: 16M lets them
 * read this 160 MB body, --profile (which holds it) is refused. Counts
 * exact. Runs $BTRACE_BPF (build/btrace-bpf). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "harness.h"
#include "events.h"
#include "btrace_buffer.h"
#include "dump.h"
#include "dump_fixture.h"

#define CALLS 10000000ull
#define WORDS 4000 /* records per batch: f, g, g's exit, f's exit, ... */

static int block_cb(const struct bt_block_view *blk, void *ctx)
{
	return bt_dump_sink_app_block(ctx, 0, blk);
}

static int write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_dump_app app = { .pid = 700, .name = "scale" };
	struct bt_read_stats st;
	int r = bt_read(ctx, block_cb, s, &st);
	return r < 0 ? r : bt_dump_sink_apps(s, &app, 1);
}

static void run_one(const char *path, const char *outp, const char *opt, uint64_t records);

/* `report OPT path` expected to fail: its standard error (NULL if it exited 0). */
static char *report_err(const char *opt, const char *path)
{
	const char *bt = getenv("BTRACE_BPF") ? getenv("BTRACE_BPF") : "build/btrace-bpf";
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "%s report %s %s 2>&1 >/dev/null", bt, opt, path);
	FILE *p = popen(cmd, "r");
	char *m = p ? calloc(1, 4096) : NULL;
	if (m)
		fread(m, 1, 4095, p);
	if (p && pclose(p) == 0) {
		free(m);
		m = NULL;
	}
	return m;
}

static void test_ten_million_calls(void)
{
	char dir[] = "/tmp/test_report_scale.XXXXXX", path[600], outp[600], err[256];
	REQUIRE(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/scale.btd", dir);
	snprintf(outp, sizeof(outp), "%s/report.txt", dir);
	size_t bsz = sizeof(struct bt_ev_app_funcs) + 8u * WORDS;
	struct bt_config cfg = { .size = 512ull << 20, .block_size = 64u << 10, .ncores = 2 };
	struct bt_buffer *k = bt_buffer_create(&(struct bt_config){ .size = 1u << 20, .block_size = 4096, .ncores = 2 },
					       err, sizeof(err));
	struct bt_buffer *a = bt_buffer_create(&cfg, err, sizeof(err));
	struct bt_ev_app_funcs *f = calloc(1, bsz);
	REQUIRE(k && a && f, "buffers: %s", err);
	uint64_t records = 2 * CALLS, seq = 0;
	for (uint64_t done = 0; done < records; done += WORDS) {
		memset(f, 0, bsz);
		f->h.ts_ns = 7000000000ull + done * 10;
		f->h.seq = (uint32_t)seq;
		f->h.tid = 701;
		f->h.tgid = 700;
		f->h.type = BT_EV_APP_FUNCS;
		f->tsc0 = 1000000 + done * 10;
		f->addr0 = 0x401000;
		f->mult_q32 = 1ull << 32;
		f->count = f->cap = WORDS;
		static const unsigned kind[4] = { BT_FREC_ENTRY, BT_FREC_ENTRY, BT_FREC_EXIT, BT_FREC_EXIT };
		static const int64_t fn[4] = { 0, 0x100, 0x100, 0 };
		for (int i = 0; i < WORDS; i++)
			f->words[i] = (i ? 10u : 0u) | (uint64_t)kind[i % 4] << 32 | (uint64_t)fn[i % 4] << 34;
		seq += WORDS;
		if (bt_write(a, 0, f, (uint32_t)bsz) != 0) {
			CHECK(0, "batch at record %llu not written", (unsigned long long)done);
			break;
		}
	}
	free(f);
	REQUIRE(fx_write_app_dump(k, a, write_apps, 1, path, err, sizeof(err)) == 0, "write: %s", err);

	/* A body (160 MB here) over what a reader takes into memory: the
	 * readers that stream it read it whole; one that holds it (--profile)
	 * and a bound below the kernel's part refuse it, saying so. */
	setenv("BTRACE_DUMP_MAX_BODY", "16M", 1);
	run_one(path, outp, "--functions", records);
	run_one(path, outp, "--hot", records);
	run_one(path, outp, "--stats", records);
	run_one(path, outp, "--manifest", records);
	char *msg = report_err("--profile", path);
	CHECK(msg && strstr(msg, "is over the 16 MiB a reader takes into memory"), "--profile refuses the body:\n%s",
	      msg ? msg : "");
	free(msg);
	setenv("BTRACE_DUMP_MAX_BODY", "256", 1);
	msg = report_err("--stats", path);
	CHECK(msg && strstr(msg, "over 256 B besides its application blocks"), "--stats under 256 bytes refuses:\n%s",
	      msg ? msg : "");
	free(msg);
	unsetenv("BTRACE_DUMP_MAX_BODY");
	unlink(outp);
	unlink(path);
	rmdir(dir);
}

/* report OPT on path: exits 0 within the bound; f and g counted whole. */
static void run_one(const char *path, const char *outp, const char *opt, uint64_t records)
{
	const char *bt = getenv("BTRACE_BPF") ? getenv("BTRACE_BPF") : "build/btrace-bpf";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t p = fork();
	if (p == 0) {
		int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		execl(bt, bt, "report", opt, path, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	REQUIRE(p > 0 && wait4(p, &st, 0, &ru) == p, "run report");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "report exits 0");
	/* no reader keeps a record, nor the body: 64 MiB whatever the calls */
	uint64_t bound_kb = 64u << 10;
	printf("# report %s on %llu calls: max RSS %ld KiB (bound %llu KiB), %.2f s\n", opt,
	       (unsigned long long)CALLS, ru.ru_maxrss, (unsigned long long)bound_kb,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	CHECK((uint64_t)ru.ru_maxrss <= bound_kb, "%s: max RSS %ld KiB within %llu KiB", opt, ru.ru_maxrss,
	      (unsigned long long)bound_kb);
	char line[512];
	unsigned long long cf = 0, cg = 0;
	FILE *o = fopen(outp, "r");
	REQUIRE(o, "report output");
	if (!strcmp(opt, "--stats") || !strcmp(opt, "--manifest")) {
		/* every record counted: "scale pid 700 (alive): N events" and
		 * the manifest's "func_entry": N, "func_exit": N */
		unsigned long long ev = 0, fe = 0, fx = 0;
		char *text = NULL;
		size_t cap = 0;
		ssize_t len = getdelim(&text, &cap, 0, o);
		const char *at;
		if (len > 0 && (at = strstr(text, "pid 700 (alive): ")))
			sscanf(at, "pid 700 (alive): %llu events", &ev);
		if (len > 0 && (at = strstr(text, "\"func_entry\": ")))
			sscanf(at, "\"func_entry\": %llu, \"func_exit\": %llu", &fe, &fx);
		free(text);
		fclose(o);
		if (!strcmp(opt, "--stats"))
			CHECK(ev == records, "--stats: %llu events counted, %llu records", ev, (unsigned long long)records);
		else
			CHECK(fe == records / 2 && fx == records / 2, "--manifest: %llu entries and %llu exits of %llu",
			      fe, fx, (unsigned long long)records);
		return;
	}
	while (fgets(line, sizeof(line), o)) {
		unsigned pid;
		unsigned long long c;
		/* --functions rows start with the name, --hot's with 2 spaces */
		const char *l = line + strspn(line, " ");
		if (sscanf(l, "0x401000 %u %llu", &pid, &c) == 2 && !cf)
			cf = c;
		if (sscanf(l, "0x401100 %u %llu", &pid, &c) == 2 && !cg)
			cg = c;
	}
	fclose(o);
	CHECK(cf == CALLS / 2 && cg == CALLS / 2, "%s: f and g called %llu times each: %llu, %llu", opt, CALLS / 2, cf,
	      cg);
}

int main(void)
{
	RUN(test_ten_million_calls);
	return h_done();
}
