// SPDX-License-Identifier: MIT
/*
 * pingpong - a known workload for the real-kernel tests: two threads with
 * known names pass one byte back and forth over two pipes a known number of
 * times. Every round blocks each thread in read(), so each round makes at
 * least one sched_switch away from and one sched_wakeup of each thread.
 *
 *   pingpong [-n ROUNDS] [-a NAME] [-b NAME] [-c CPU]
 *     -n  rounds (default 1000)
 *     -a  name of the first thread (default bt-ping)
 *     -b  name of the second thread (default bt-pong)
 *     -c  pin both threads to CPU (default: no pinning)
 *
 * Prints on stdout, after both threads are named and before the first round:
 *   pingpong pid=PID ping_tid=TID pong_tid=TID
 * and at the end:
 *   pingpong done rounds=N
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long rounds = 1000;
static int pin_cpu = -1;
static int ab[2], ba[2]; /* ping -> pong, pong -> ping */
static pthread_barrier_t ready;
static pid_t tids[2];

struct role {
	int idx;
	const char *name;
	int rfd, wfd;
	int first; /* writes before reading */
};

static void die(const char *what)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void xread(int fd)
{
	char c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		die("read");
}

static void xwrite(int fd)
{
	char c = 'x';
	ssize_t n;

	while ((n = write(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		die("write");
}

static void *run(void *arg)
{
	struct role *r = arg;

	if (pin_cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(pin_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity");
	}
	/* prctl(PR_SET_NAME) is what pthread_setname_np() does for the calling
	 * thread: the kernel emits task_rename. */
	if (prctl(PR_SET_NAME, r->name, 0, 0, 0))
		die("prctl(PR_SET_NAME)");
	tids[r->idx] = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&ready); /* both named */
	pthread_barrier_wait(&ready); /* main printed the tids */
	for (long i = 0; i < rounds; i++) {
		if (r->first) {
			xwrite(r->wfd);
			xread(r->rfd);
		} else {
			xread(r->rfd);
			xwrite(r->wfd);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *name_a = "bt-ping", *name_b = "bt-pong";
	pthread_t th[2];
	struct role roles[2];
	int opt;

	while ((opt = getopt(argc, argv, "n:a:b:c:")) != -1) {
		switch (opt) {
		case 'n': rounds = strtol(optarg, NULL, 10); break;
		case 'a': name_a = optarg; break;
		case 'b': name_b = optarg; break;
		case 'c': pin_cpu = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: pingpong [-n ROUNDS] [-a NAME] [-b NAME] [-c CPU]\n");
			return 2;
		}
	}
	if (rounds <= 0 || strlen(name_a) > 15 || strlen(name_b) > 15) {
		fprintf(stderr, "pingpong: rounds > 0 and names of at most 15 characters\n");
		return 2;
	}
	if (pipe(ab) || pipe(ba))
		die("pipe");
	pthread_barrier_init(&ready, NULL, 3);
	roles[0] = (struct role){ 0, name_a, ba[0], ab[1], 1 };
	roles[1] = (struct role){ 1, name_b, ab[0], ba[1], 0 };
	for (int i = 0; i < 2; i++)
		if ((errno = pthread_create(&th[i], NULL, run, &roles[i])))
			die("pthread_create");
	pthread_barrier_wait(&ready);
	printf("pingpong pid=%d ping_tid=%d pong_tid=%d\n", (int)getpid(), (int)tids[0], (int)tids[1]);
	fflush(stdout);
	pthread_barrier_wait(&ready);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("pingpong done rounds=%ld\n", rounds);
	return 0;
}
