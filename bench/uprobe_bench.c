// SPDX-License-Identifier: MIT
/*
 * bench/uprobe_bench.c - cost of one probed function call (scripts/bench_uprobe.sh).
 *
 * Times N calls of bench_fn() (a small non-leaf function: it starts with a
 * push like most real functions, an instruction x86 uprobes emulate) or with
 * --leaf of bench_leaf() (starts with an imul, which uprobes single-step out
 * of line: a second trap) and prints "MODE NS_PER_CALL EVENTS".
 *
 *   none        no probe (the script attaches bpftrace or perf from outside,
 *               or nothing for the baseline)
 *   empty       bpf/uprobe.bpf.c's empty program on the entry: the kernel's
 *               trap and BPF dispatch, nothing else (the floor)
 *   btrace      btrace-bpf's entry program via bt_uprobes_open(), with its
 *               own ring buffer drained by a thread every 10 ms, as record does
 *   empty-ret   empty programs on entry and return (uprobe + uretprobe)
 *   btrace-ret  btrace-bpf's bench_fn + bench_fn%return (entry, stamp, return)
 *
 * Probes are attached for every process (pid -1), as bpftrace does. EVENTS is
 * what the drain received (btrace modes) and must equal the calls.
 *
 * Usage: uprobe_bench [--mode MODE] [--calls N] [--cpu C] [--leaf] [--stats] [--wait]
 *   --cpu C: run the timed loop on CPU C (the drain thread is not pinned)
 *   --stats: also print the BPF programs' own time per call (bpf_enable_stats;
 *            this adds two clock reads per run, so it is a separate pass)
 *   --wait:  print "ready" and wait for SIGUSR1 before the loop
 *
 * Output: MODE NS_PER_CALL EVENTS [BPF_NS_PER_RUN]
 */
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "uprobes.h"
#include "uprobe.skel.h"

__attribute__((noipa)) long bench_helper(long a)
{
	return a * 31;
}

__attribute__((noipa)) long bench_fn(long a, long b)
{
	return bench_helper(a) + b;
}

__attribute__((noipa)) long bench_leaf(long a, long b)
{
	return a * 31 + b;
}

static volatile long sink;
static volatile int stop_drain;
static uint64_t drained;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_event(void *ctx, void *data, size_t len)
{
	(void)ctx, (void)data, (void)len;
	drained++;
	return 0;
}

static void *drain_main(void *arg)
{
	struct ring_buffer *rb = arg;

	while (!stop_drain) {
		ring_buffer__consume(rb);
		usleep(10000);
	}
	ring_buffer__consume(rb);
	return NULL;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		vfprintf(stderr, fmt, ap);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = "none";
	long calls = 200000;
	int wait = 0, cpu = -1, stats = 0, stats_fd = -1, leaf = 0;
	long (*fn)(long, long);
	const char *fname;
	char self[PATH_MAX], spec[PATH_MAX + 32], spec_ret[PATH_MAX + 32];
	char *err = NULL;
	struct uprobe_bpf *skel = NULL;
	struct bpf_link *l1 = NULL, *l2 = NULL;
	struct bt_uprobes *u = NULL;
	struct ring_buffer *rb = NULL;
	pthread_t th;
	ssize_t sl;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
			mode = argv[++i];
		else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
			calls = atol(argv[++i]);
		else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else if (strcmp(argv[i], "--stats") == 0)
			stats = 1;
		else if (strcmp(argv[i], "--leaf") == 0)
			leaf = 1;
		else if (strcmp(argv[i], "--wait") == 0)
			wait = 1;
		else {
			fprintf(stderr, "usage: %s [--mode none|empty|btrace|empty-ret|btrace-ret] [--calls N] [--cpu C] [--leaf] [--stats] [--wait]\n",
				argv[0]);
			return 2;
		}
	}
	libbpf_set_print(libbpf_quiet);
	fn = leaf ? bench_leaf : bench_fn;
	fname = leaf ? "bench_leaf" : "bench_fn";
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		perror("readlink");
		return 1;
	}
	self[sl] = '\0';

	if (strcmp(mode, "empty") == 0 || strcmp(mode, "empty-ret") == 0) {
		struct bt_uprobe_spec s;
		struct bt_uprobe_sym sym;

		if (bt_uprobe_parse(fname, 0, &s, &err) ||
		    bt_uprobe_find_symbol(self, self, &s, &sym, &err)) {
			fprintf(stderr, "uprobe_bench: %s\n", err);
			return 1;
		}
		skel = uprobe_bpf__open();
		if (!skel)
			return 1;
		bpf_program__set_autoload(skel->progs.bt_uprobe_entry, false);
		bpf_program__set_autoload(skel->progs.bt_uprobe_return, false);
		bpf_program__set_autoload(skel->progs.bt_usdt, false);
		if (uprobe_bpf__load(skel)) {
			fprintf(stderr, "uprobe_bench: cannot load the empty program (root?)\n");
			return 1;
		}
		LIBBPF_OPTS(bpf_uprobe_opts, eo);
		l1 = bpf_program__attach_uprobe_opts(skel->progs.bt_uprobe_empty, -1, self, sym.file_off, &eo);
		if (strcmp(mode, "empty-ret") == 0) {
			LIBBPF_OPTS(bpf_uprobe_opts, ro, .retprobe = true);
			l2 = bpf_program__attach_uprobe_opts(skel->progs.bt_uprobe_empty, -1, self, sym.file_off, &ro);
		}
		if (!l1 || (strcmp(mode, "empty-ret") == 0 && !l2)) {
			fprintf(stderr, "uprobe_bench: cannot attach: %s\n", strerror(errno));
			return 1;
		}
	} else if (strcmp(mode, "btrace") == 0 || strcmp(mode, "btrace-ret") == 0) {
		int ret = strcmp(mode, "btrace-ret") == 0;
		const char *specs[2] = { spec, spec_ret };

		snprintf(spec, sizeof(spec), "%s:%s", self, fname);
		snprintf(spec_ret, sizeof(spec_ret), "%s:%s%%return", self, fname);
		struct bt_uprobe_opts o = { .specs = specs, .nspecs = ret ? 2 : 1, .nargs = -1,
					    .wakeup_bytes = 8u << 20 };
		u = bt_uprobes_open(&o, -1, -1, &err);
		if (!u) {
			fprintf(stderr, "uprobe_bench: %s\n", err);
			return 1;
		}
		rb = ring_buffer__new(bt_uprobes_ringbuf_fd(u), on_event, NULL, NULL);
		if (!rb || pthread_create(&th, NULL, drain_main, rb)) {
			fprintf(stderr, "uprobe_bench: cannot drain the ring buffer\n");
			return 1;
		}
	} else if (strcmp(mode, "none") != 0) {
		fprintf(stderr, "uprobe_bench: unknown mode '%s'\n", mode);
		return 2;
	}

	if (wait) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		sigwait(&set, &sig);
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			fprintf(stderr, "uprobe_bench: cannot pin to CPU %d\n", cpu);
	}
	if (stats) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			fprintf(stderr, "uprobe_bench: cannot enable BPF run-time stats: %s\n", strerror(errno));
	}
	/* Warm up (page faults, first trap per page), then time. */
	for (long i = 0; i < 1000; i++)
		sink += fn(i, 1);
	uint64_t t0 = now_ns();
	for (long i = 0; i < calls; i++)
		sink += fn(i, 1);
	uint64_t t1 = now_ns();

	if (rb) {
		stop_drain = 1;
		pthread_join(th, NULL);
		ring_buffer__free(rb);
	}
	/* BPF time per run, over the warm-up and the timed calls. */
	double bpf_ns = -1;
	if (stats_fd >= 0) {
		uint64_t ns = 0, cnt = 0;

		if (u) {
			bt_uprobes_prog_stats(u, &ns, &cnt);
		} else if (skel) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);

			memset(&info, 0, sizeof(info));
			if (!bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.bt_uprobe_empty), &info, &len))
				ns = info.run_time_ns, cnt = info.run_cnt;
		}
		/* per probed call: entry + return programs both count */
		if (cnt)
			bpf_ns = (double)ns / (double)(calls + 1000);
		close(stats_fd);
	}
	printf("%s %.1f %llu", mode, (double)(t1 - t0) / (double)calls,
	       (unsigned long long)(drained ? drained - (strcmp(mode, "btrace-ret") == 0 ? 2000 : 1000) : 0));
	if (bpf_ns >= 0)
		printf(" %.1f", bpf_ns);
	printf("\n");
	bpf_link__destroy(l1);
	bpf_link__destroy(l2);
	uprobe_bpf__destroy(skel);
	bt_uprobes_destroy(u);
	return 0;
}
