// SPDX-License-Identifier: MIT
/*
 * test_bpf_smoke.c - end-to-end check of the BPF toolchain on the running
 * kernel: the skeleton generated from tests/progs/smoke.bpf.c opens, takes rodata,
 * loads (CO-RE relocations against /sys/kernel/btf/vmlinux, verifier),
 * attaches to tp_btf/sched_switch and counts our own context switches; the
 * kernel feature probes (kernel_features.c) find what every kernel the
 * project supports has.
 *
 * Needs root (or CAP_BPF + CAP_PERFMON); skips when not root.
 * BT_VERBOSE=1 forwards libbpf warnings to stderr, BT_VERBOSE=2 adds debug.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "kernel_features.h"
#include "smoke.skel.h"

#define PINGPONG_ROUNDS 2000

static struct smoke_bpf *skel;
static int verbose;

/* libbpf messages are kept (tail only) so a failure can show the verifier
 * log even when not verbose. */
static char log_buf[16384];
static size_t log_len;

static void log_keep(const char *msg)
{
	size_t n = strlen(msg);

	if (n >= sizeof(log_buf))
		msg += n - (sizeof(log_buf) - 1), n = sizeof(log_buf) - 1;
	if (log_len + n >= sizeof(log_buf)) {
		size_t drop = log_len + n - (sizeof(log_buf) - 1);

		memmove(log_buf, log_buf + drop, log_len - drop);
		log_len -= drop;
	}
	memcpy(log_buf + log_len, msg, n);
	log_len += n;
	log_buf[log_len] = '\0';
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[4096];

	if (level == LIBBPF_DEBUG && verbose < 2)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (verbose)
		fputs(msg, stderr);
	else if (level == LIBBPF_WARN)
		log_keep(msg);
	return 0;
}

/* Explain a libbpf failure: cause, libbpf's own words, likely remedy. */
static void report_libbpf_error(const char *what, int err)
{
	fprintf(stderr, "  %s failed: %s (%d)\n", what, strerror(-err), err);
	if (!verbose && log_len)
		fprintf(stderr, "  libbpf said:\n%s", log_buf);
	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "  remedy: run as root, or grant CAP_BPF and CAP_PERFMON\n");
	else if (err == -ENOENT || err == -ESRCH)
		fprintf(stderr, "  remedy: the kernel needs BTF (CONFIG_DEBUG_INFO_BTF=y, /sys/kernel/btf/vmlinux)\n");
	fprintf(stderr, "  (rerun with BT_VERBOSE=2 for the full libbpf log)\n");
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Ping-pong over two pipes: every blocking read is a context switch. */
struct pingpong {
	int to_peer[2], to_main[2];
	pid_t peer_tid;
};

static void *peer_fn(void *arg)
{
	struct pingpong *pp = arg;
	char c;

	pp->peer_tid = gettid_();
	while (read(pp->to_peer[0], &c, 1) == 1)
		if (write(pp->to_main[1], &c, 1) != 1)
			break;
	return NULL;
}

/* Returns 0 or -errno; on success *peer_tid is the peer thread's tid. */
static int pingpong_run(int rounds, pid_t *peer_tid)
{
	struct pingpong pp;
	pthread_t th;
	int i, err = 0;
	char c = 'x';

	if (pipe(pp.to_peer))
		return -errno;
	if (pipe(pp.to_main)) {
		err = -errno;
		close(pp.to_peer[0]);
		close(pp.to_peer[1]);
		return err;
	}
	err = -pthread_create(&th, NULL, peer_fn, &pp);
	if (err)
		goto out;
	for (i = 0; i < rounds; i++) {
		if (write(pp.to_peer[1], &c, 1) != 1 || read(pp.to_main[0], &c, 1) != 1) {
			err = -EIO;
			break;
		}
	}
	close(pp.to_peer[1]); /* peer sees EOF and exits */
	pp.to_peer[1] = -1;
	pthread_join(th, NULL);
	*peer_tid = pp.peer_tid;
out:
	for (i = 0; i < 2; i++) {
		if (pp.to_peer[i] >= 0)
			close(pp.to_peer[i]);
		close(pp.to_main[i]);
	}
	return err;
}

static void test_load_attach(void)
{
	int err;

	skel = smoke_bpf__open();
	if (!skel)
		report_libbpf_error("smoke_bpf__open", -errno);
	REQUIRE(skel, "cannot open the smoke skeleton");
	skel->rodata->target_tgid = getpid();

	err = smoke_bpf__load(skel);
	if (err)
		report_libbpf_error("smoke_bpf__load", err);
	REQUIRE(!err, "cannot load smoke.bpf.o (cause above)");

	err = smoke_bpf__attach(skel);
	if (err)
		report_libbpf_error("smoke_bpf__attach", err);
	REQUIRE(!err, "cannot attach tp_btf/sched_switch");
}

static void test_counts_own_switches(void)
{
	__u64 all0, mine0, all1, mine1;
	pid_t peer_tid = 0, self = gettid_();
	__u32 last;
	int err;

	REQUIRE(skel && skel->links.smoke_sched_switch, "not attached");
	all0 = __atomic_load_n(&skel->bss->nr_switches, __ATOMIC_RELAXED);
	mine0 = __atomic_load_n(&skel->bss->nr_matched, __ATOMIC_RELAXED);

	err = pingpong_run(PINGPONG_ROUNDS, &peer_tid);
	REQUIRE(!err, "ping-pong workload failed: %s", strerror(-err));

	all1 = __atomic_load_n(&skel->bss->nr_switches, __ATOMIC_RELAXED);
	mine1 = __atomic_load_n(&skel->bss->nr_matched, __ATOMIC_RELAXED);
	last = __atomic_load_n(&skel->bss->last_next_pid, __ATOMIC_RELAXED);

	printf("# %d round trips: %llu switches in all, %llu to our threads, last next->pid %u\n",
	       PINGPONG_ROUNDS, (unsigned long long)(all1 - all0),
	       (unsigned long long)(mine1 - mine0), last);
	/* Most of the 2 * rounds blocking reads switch; ask for a few. */
	CHECK(mine1 - mine0 >= 10, "only %llu switches to our threads in %d round trips",
	      (unsigned long long)(mine1 - mine0), PINGPONG_ROUNDS);
	CHECK(all1 - all0 >= mine1 - mine0, "unfiltered count %llu < filtered %llu",
	      (unsigned long long)(all1 - all0), (unsigned long long)(mine1 - mine0));
	/* The filter passed only our process: the last next->pid is one of ours. */
	CHECK(last == (__u32)self || last == (__u32)peer_tid,
	      "last_next_pid %u is neither main %d nor peer %d", last, self, peer_tid);
	CHECK(skel->bss->last_next_tgid == (__u32)getpid(), "last_next_tgid %u != pid %d",
	      skel->bss->last_next_tgid, getpid());
}

static void test_detach_stops_counting(void)
{
	__u64 mine0;
	pid_t peer_tid;
	int err;

	REQUIRE(skel && skel->links.smoke_sched_switch, "not attached");
	smoke_bpf__detach(skel);
	usleep(20000); /* let invocations already running on other CPUs finish */
	mine0 = __atomic_load_n(&skel->bss->nr_matched, __ATOMIC_RELAXED);
	err = pingpong_run(200, &peer_tid);
	REQUIRE(!err, "ping-pong workload failed: %s", strerror(-err));
	CHECK(skel->bss->nr_matched == mine0, "still counting after detach: %llu -> %llu",
	      (unsigned long long)mine0, (unsigned long long)skel->bss->nr_matched);
}

/* The running kernel (>= 5.15 in every place this runs: 6.1 and newer in
 * the kernel matrix) has ring buffers, BPF atomics and uprobe cookies: a
 * probe that says otherwise would refuse to record on a good kernel. */
static void test_feature_probes(void)
{
	char err[256] = "";

	CHECK(bt_kernel_check_record(err, sizeof(err)) == 0, "record probe: %s", err);
	err[0] = '\0';
	CHECK(bt_kernel_check_uprobes(err, sizeof(err)) == 0, "uprobe probe: %s", err);
}

int main(void)
{
	const char *v = getenv("BT_VERBOSE");

	if (geteuid() != 0) {
		printf("ok 1 - bpf smoke # SKIP not root\n");
		return 0;
	}
	verbose = v && *v ? atoi(v) : 0;
	if (v && *v && !verbose)
		verbose = 1;
	libbpf_set_print(libbpf_print);

	RUN(test_feature_probes);
	RUN(test_load_attach);
	RUN(test_counts_own_switches);
	RUN(test_detach_stops_counting);
	smoke_bpf__destroy(skel);
	return h_done();
}
