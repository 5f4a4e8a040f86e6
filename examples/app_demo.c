// SPDX-License-Identifier: MIT
/*
 * app_demo - an application traced in-process with libbtrace (btrace.h).
 *
 * A frame loop hands jobs to a pool of worker threads through a queue; the
 * frame waits for its jobs. Every frame, job and queue length is an event
 * in the flight recorder, next to the kernel's view of the same threads
 * (which CPU each ran on, why it slept). A frame over budget is marked.
 *
 *   make build/examples/app_demo
 *   sudo build/btrace-bpf record &                 # any running recorder
 *   build/examples/app_demo -w 16 -d 5             # attaches by itself
 *   sudo kill -USR1 $(pidof btrace-bpf)            # dump; then report / convert
 *
 * Options: -w WORKERS (default 8), -d SECONDS (default 10), -j JOBS per frame
 * (default 32), -f FPS (default 60), -a SECONDS: wait up to that long for a
 * recorder to attach before the first frame (default 0: start at once,
 * frames before the attach go untraced).
 */
#include "btrace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t more, done;
	long pending, running, next_id;
	int quit;
};

static struct queue q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Some work whose cost varies: a few microseconds to a few hundred. */
static uint64_t work(long id)
{
	uint64_t x = (uint64_t)id * 2654435761u, n = 2000 + (x % 97 == 0 ? 200000 : x % 20000);
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *worker(void *arg)
{
	volatile uint64_t sink = 0;
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&q.lock);
		while (!q.pending && !q.quit)
			pthread_cond_wait(&q.more, &q.lock);
		if (q.quit) {
			pthread_mutex_unlock(&q.lock);
			return NULL;
		}
		long id = q.next_id++;
		q.pending--;
		q.running++;
		BTRACE_COUNTER("queue_len", q.pending);
		pthread_mutex_unlock(&q.lock);

		BTRACE_BEGIN("job", id);
		sink += work(id);
		BTRACE_END();

		pthread_mutex_lock(&q.lock);
		if (--q.running == 0 && q.pending == 0)
			pthread_cond_signal(&q.done);
		pthread_mutex_unlock(&q.lock);
	}
}

int main(int argc, char **argv)
{
	long workers = 8, secs = 10, jobs = 32, fps = 60, wait_attach = 0;
	int c;
	while ((c = getopt(argc, argv, "w:d:j:f:a:")) != -1) {
		switch (c) {
		case 'w': workers = atol(optarg); break;
		case 'd': secs = atol(optarg); break;
		case 'j': jobs = atol(optarg); break;
		case 'f': fps = atol(optarg); break;
		case 'a': wait_attach = atol(optarg); break;
		default:
			fprintf(stderr, "usage: app_demo [-w WORKERS] [-d SECONDS] [-j JOBS] [-f FPS] [-a SECONDS]\n");
			return 2;
		}
	}
	if (workers < 1 || workers > 1024 || secs < 1 || jobs < 1 || fps < 1 || fps > 1000 || wait_attach < 0) {
		fprintf(stderr, "app_demo: bad option value\n");
		return 2;
	}
	btrace_init("app_demo");
	for (long ms = 0; !btrace_attached() && ms < wait_attach * 1000; ms += 10) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	pthread_t *th = calloc((size_t)workers, sizeof(*th));
	for (long i = 0; i < workers; i++)
		pthread_create(&th[i], NULL, worker, NULL);

	uint64_t budget = 1000000000u / (uint64_t)fps, end = now_ns() + (uint64_t)secs * 1000000000u;
	long frame = 0, dropped = 0;
	while (now_ns() < end) {
		uint64_t t0 = now_ns();
		BTRACE_BEGIN("frame", frame);
		pthread_mutex_lock(&q.lock);
		q.pending += jobs;
		BTRACE_COUNTER("queue_len", q.pending);
		pthread_cond_broadcast(&q.more);
		while (q.pending || q.running)
			pthread_cond_wait(&q.done, &q.lock);
		pthread_mutex_unlock(&q.lock);
		BTRACE_END();
		uint64_t took = now_ns() - t0;
		if (took > budget)
			BTRACE_INSTANT("frame_drop", frame, (int64_t)(took / 1000));
		else {
			struct timespec ts = { 0, (long)(budget - took) };
			nanosleep(&ts, NULL);
		}
		dropped += took > budget;
		frame++;
	}
	pthread_mutex_lock(&q.lock);
	q.quit = 1;
	pthread_cond_broadcast(&q.more);
	pthread_mutex_unlock(&q.lock);
	for (long i = 0; i < workers; i++)
		pthread_join(th[i], NULL);
	printf("%ld frames, %ld over budget, %s\n", frame, dropped,
	       btrace_attached() ? "traced into the recorder" : "no recorder attached");
	free(th);
	return 0;
}
