// SPDX-License-Identifier: MIT
/*
 * cmp_load.c - the workload of the tracer comparison (scripts/compare_tracers.sh):
 * paced system-call loops whose every call can be identified in any trace
 * that keeps the system-call number, and a truth file saying what was done.
 *
 *   cmp_load -m skewed|balanced [-d SECONDS] [-r OPS_PER_S] [-p PERIOD_US]
 *            [-l OPS_PER_PERIOD] [-o TRUTH_FILE] [-t]
 *
 *   skewed    one heavy thread pinned to CPU 0 at -r calls/s, and one light
 *             thread pinned to CPU 1 that wakes every -p us and makes -l calls
 *   balanced  one heavy thread on each of CPU 0 and CPU 1, -r calls/s each
 *
 * Every thread numbers its calls 0, 1, 2, ... and makes call i as getpid() or
 * getppid() by one bit of a scrambled counter: bit (i % 32) of
 * H(i / 32) = (i / 32) * 0x9E3779B1 mod 2^32 (odd, so invertible). A trace
 * that holds 64 consecutive calls of a thread therefore tells exactly which
 * calls they are (scripts/compare_analyze.py decodes it), and every call
 * missing in between is found and counted. Each call is one sys_enter and one
 * sys_exit event. Besides these calls a thread makes only clock_nanosleep()
 * (pacing) and the system calls of startup and exit.
 *
 * Workers are single-threaded processes (forked), or with -t threads of
 * this process: btrace-bpf stores a non-leader thread's events with 4 more
 * bytes (its tgid), so both cases are worth measuring.
 *
 * Pacing: a thread checks the clock (vDSO) every BATCH calls and sleeps until
 * the next batch is due (timer slack 1 us), so a tracer that slows the calls
 * down does not get fewer events per second, as long as the thread keeps up.
 *
 * Truth file (-o), written after the run, lines of space-separated fields:
 *   thread IDX TID CPU ROLE OPS         ROLE heavy|light; OPS calls made
 *   log IDX BOOTTIME_NS OPS             sampled every LOG_EVERY calls and at
 *                                       the start and end: OPS calls were made
 *                                       before BOOTTIME_NS
 * and one summary line on stdout:
 *   cmp_load: mode=skewed seconds=4.000 ops=... heavy_ops_per_s=... light_ops=...
 *             target=... cpu_us=...
 * cpu_us is the process's user + system CPU time (getrusage), which includes
 * the work tracepoint probes do in its system calls.
 * Exit 0, 1 on a runtime error, 2 on a usage error.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define BATCH 64
#define LOG_EVERY 1024
#define MAX_THREADS 2
#define SCRAMBLE 0x9E3779B1u

struct sample {
	uint64_t ts, ops;
};

struct worker {
	pthread_t thread;
	pid_t pid;              /* -t not given: the worker process */
	int cpu;
	int light;              /* 1: periodic light thread */
	double rate;            /* heavy: calls/s */
	uint64_t period_ns;     /* light: wake-up period */
	uint64_t per_period;    /* light: calls per wake-up */
	uint64_t ops;           /* written by the worker, read after join */
	pid_t tid;
	struct sample *log;
	size_t nlog, cap;
	int err;
	char pad[64];
};

/* In shared memory: the workers may be other processes. */
struct shared {
	atomic_int go, stop_flag;
	uint64_t start_ns;
};
static struct shared *sh;
#define go (sh->go)
#define stop_flag (sh->stop_flag)
#define start_ns (sh->start_ns)

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t due)
{
	struct timespec ts = { (time_t)(due / 1000000000ull), (long)(due % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void log_sample(struct worker *w, uint64_t ops)
{
	if (w->nlog < w->cap) {
		w->log[w->nlog].ts = clock_ns(CLOCK_BOOTTIME);
		w->log[w->nlog].ops = ops;
		w->nlog++;
	}
}

/* Call i: getpid() or getppid() by one bit of the scrambled group number. */
static inline void op(uint64_t i)
{
	uint32_t h = (uint32_t)(i / 32) * SCRAMBLE;

	if ((h >> (i % 32)) & 1)
		syscall(SYS_getpid);
	else
		syscall(SYS_getppid);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t i = 0, t0;
	cpu_set_t set;

	w->tid = (pid_t)syscall(SYS_gettid);
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		w->err = errno;
		return NULL;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	/* Acquire pairs with the release store of go in main(). */
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	t0 = start_ns;
	log_sample(w, 0);
	if (w->light) {
		for (uint64_t k = 1; !atomic_load_explicit(&stop_flag, memory_order_relaxed); k++) {
			for (uint64_t j = 0; j < w->per_period; j++, i++) {
				op(i);
				if (i % LOG_EVERY == LOG_EVERY - 1)
					log_sample(w, i + 1);
			}
			sleep_until(t0 + k * w->period_ns);
		}
	} else {
		while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
			for (int j = 0; j < BATCH; j++, i++)
				op(i);
			if (i % LOG_EVERY == 0)
				log_sample(w, i);
			/* When is call number i due? Sleep until then if early. */
			uint64_t due = t0 + (uint64_t)((double)i * 1e9 / w->rate);

			if (due > clock_ns(CLOCK_MONOTONIC) + 2000)
				sleep_until(due);
		}
	}
	log_sample(w, i);
	w->ops = i;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cmp_load -m skewed|balanced [-d SECONDS] [-r OPS_PER_S] [-p PERIOD_US]\n"
		   "                [-l OPS_PER_PERIOD] [-o TRUTH_FILE] [-t]\n");
}

static double num_arg(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || !(v > 0)) {
		fprintf(stderr, "cmp_load: %s takes a positive number\n", what);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct worker *w;
	const char *mode = NULL, *truth = NULL;
	int threads = 0;
	double seconds = 4, rate = 200000, period_us = 1000, per_period = 8;
	uint64_t total = 0, t1;
	int opt, nw = 2;

	while ((opt = getopt(argc, argv, "m:d:r:p:l:o:th")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 'd': seconds = num_arg(optarg, "-d"); break;
		case 'r': rate = num_arg(optarg, "-r"); break;
		case 'p': period_us = num_arg(optarg, "-p"); break;
		case 'l': per_period = num_arg(optarg, "-l"); break;
		case 'o': truth = optarg; break;
		case 't': threads = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!mode || (strcmp(mode, "skewed") && strcmp(mode, "balanced"))) {
		usage(stderr);
		return 2;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "cmp_load: needs 2 CPUs\n");
		return 1;
	}
	/* Workers, their logs and the flags live in one shared mapping. */
	size_t logcap[MAX_THREADS], bytes = sizeof(*sh) + MAX_THREADS * sizeof(*w);
	for (int k = 0; k < nw; k++) {
		int light = k == 1 && !strcmp(mode, "skewed");
		logcap[k] = (size_t)(seconds * (light ? per_period * 1e6 / period_us : rate) / LOG_EVERY) + 16;
		bytes += logcap[k] * sizeof(struct sample);
	}
	uint8_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("cmp_load: mmap");
		return 1;
	}
	sh = (struct shared *)mem;
	w = (struct worker *)(mem + sizeof(*sh));
	struct sample *logs = (struct sample *)(w + MAX_THREADS);
	for (int k = 0; k < nw; k++) {
		w[k].cpu = k;
		w[k].rate = rate;
		w[k].light = k == 1 && !strcmp(mode, "skewed");
		w[k].period_ns = (uint64_t)(period_us * 1000);
		w[k].per_period = (uint64_t)per_period;
		w[k].cap = logcap[k];
		w[k].log = logs;
		logs += logcap[k];
		if (threads) {
			errno = pthread_create(&w[k].thread, NULL, worker_main, &w[k]);
			if (errno) {
				perror("cmp_load: pthread_create");
				return 1;
			}
			continue;
		}
		/* Not fork()'s value into w[k].pid: the mapping is shared, and the
		 * child's 0 could land after the parent's pid, making the wait
		 * below waitpid(0), which returns when any worker ends (the
		 * heavy worker's count was then read before it was written). */
		pid_t pid = fork();
		if (pid < 0) {
			perror("cmp_load: fork");
			/* the workers already forked spin on go: end them */
			atomic_store_explicit(&stop_flag, 1, memory_order_relaxed);
			atomic_store_explicit(&go, 1, memory_order_release);
			for (int j = 0; j < k; j++)
				waitpid(w[j].pid, NULL, 0);
			return 1;
		}
		if (pid == 0) {
			worker_main(&w[k]);
			_exit(0);
		}
		w[k].pid = pid;
	}
	usleep(20000); /* threads pinned and spinning on go */
	start_ns = clock_ns(CLOCK_MONOTONIC);
	/* Release pairs with the acquire loads in worker_main(). */
	atomic_store_explicit(&go, 1, memory_order_release);
	sleep_until(start_ns + (uint64_t)(seconds * 1e9));
	atomic_store_explicit(&stop_flag, 1, memory_order_relaxed);
	for (int k = 0; k < nw; k++) {
		if (threads)
			pthread_join(w[k].thread, NULL);
		else if (waitpid(w[k].pid, NULL, 0) != w[k].pid) {
			perror("cmp_load: waitpid");
			return 1;
		}
		if (w[k].err) {
			fprintf(stderr, "cmp_load: cannot pin a thread to CPU %d: %s\n", w[k].cpu,
				strerror(w[k].err));
			return 1;
		}
		total += w[k].ops;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	if (truth) {
		FILE *f = fopen(truth, "w");

		if (!f) {
			fprintf(stderr, "cmp_load: %s: %s\n", truth, strerror(errno));
			return 1;
		}
		for (int k = 0; k < nw; k++)
			fprintf(f, "thread %d %d %d %s %llu\n", k, (int)w[k].tid, w[k].cpu,
				w[k].light ? "light" : "heavy", (unsigned long long)w[k].ops);
		for (int k = 0; k < nw; k++)
			for (size_t j = 0; j < w[k].nlog; j++)
				fprintf(f, "log %d %llu %llu\n", k, (unsigned long long)w[k].log[j].ts,
					(unsigned long long)w[k].log[j].ops);
		if (fclose(f)) {
			fprintf(stderr, "cmp_load: %s: %s\n", truth, strerror(errno));
			return 1;
		}
	}
	double secs = (double)(t1 - start_ns) / 1e9;
	struct rusage ru, rc;

	getrusage(RUSAGE_SELF, &ru);
	getrusage(RUSAGE_CHILDREN, &rc); /* the worker processes (without -t) */
	ru.ru_utime.tv_sec += rc.ru_utime.tv_sec;
	ru.ru_utime.tv_usec += rc.ru_utime.tv_usec;
	ru.ru_stime.tv_sec += rc.ru_stime.tv_sec;
	ru.ru_stime.tv_usec += rc.ru_stime.tv_usec;
	printf("cmp_load: mode=%s seconds=%.3f ops=%llu heavy_ops_per_s=%.0f light_ops=%llu target=%.0f "
	       "cpu_us=%lld\n",
	       mode, secs, (unsigned long long)total, (double)w[0].ops / secs,
	       (unsigned long long)(w[1].light ? w[1].ops : 0), rate,
	       (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
		       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	return 0;
}
