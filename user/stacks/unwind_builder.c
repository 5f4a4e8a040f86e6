// SPDX-License-Identifier: MIT
/*
 * unwind_builder.c - slow unwind-table builds on their own threads (see
 * unwind_builder.h). Jobs are served smallest first by two workers: one,
 * below the programs sampled, takes any; the other, at the unwinder's own
 * priority, only ordinary ones. Each job stops at its time budget, at its
 * size budget (the rows it may have) or when the recorder stops, whichever
 * comes first.
 */
#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "debug_file.h"
#include "unwind_builder.h"
#include "util.h"

#define WORKERS 2 /* worker 0 takes big jobs too; worker 1 ordinary ones only */

struct worker {
	struct bt_unwind_builder *b;
	int big_ok;
	atomic_int tid; /* the niced worker's, for bt_unwind_builder_stop */
};

struct bt_unwind_builder {
	pthread_t thread[WORKERS];
	struct worker worker[WORKERS];
	int started; /* threads created */
	pthread_mutex_t lock; /* the queue, the results, busy */
	pthread_cond_t cond;  /* a job queued, or stop */
	atomic_int stop;      /* polled inside a build */
	void (*done)(void *);
	void *arg;
	int nice;
	struct bt_unwind_job queue[BT_UNWIND_BUILD_QUEUE];
	uint32_t qhead, qlen;
	struct bt_unwind_built results[BT_UNWIND_BUILD_QUEUE + WORKERS];
	uint32_t rlen;
	int busy; /* jobs taken off the queue, their results not posted yet */
};


/* The budgets of the build in progress, for its stop callback. */
struct budget {
	struct bt_unwind_builder *b;
	uint64_t deadline;
	uint32_t room;
	const struct bt_unwind_rows *rows; /* as the build fills it */
	int why; /* what stopped it: -ETIMEDOUT, -E2BIG, -ECANCELED */
};

static int budget_stop(void *arg)
{
	struct budget *g = arg;

	/* relaxed: a hint, looked at again every few hundred FDEs; the join
	 * in bt_unwind_builder_stop orders the rest */
	if (atomic_load_explicit(&g->b->stop, memory_order_relaxed))
		g->why = -ECANCELED;
	else if (g->rows->n > g->room)
		g->why = -E2BIG;
	else if (bt_now_ns() > g->deadline)
		g->why = -ETIMEDOUT;
	return g->why != 0;
}

static void build_one(struct bt_unwind_builder *b, struct bt_unwind_job *j, struct bt_unwind_built *out)
{
	uint64_t t0 = bt_now_ns();
	struct budget g = { b, t0 + j->budget_ns, j->room, &out->rows, 0 };
	Elf *elf = elf_begin(j->fd, ELF_C_READ, NULL), *dbg = NULL;
	int dfd = -1;

	memset(out, 0, sizeof(*out));
	out->dev = j->dev;
	out->ino = j->ino;
	if (!elf) {
		out->ret = -ENOENT;
		goto done;
	}
	/* Rules only in a debug file's .debug_frame, as in a first build. */
	if (j->build_id_len && !bt_unwind_has_debug_frame(elf) &&
	    (dfd = bt_debug_file_open(NULL, j->build_id, j->build_id_len, NULL, 0, NULL, NULL)) >= 0)
		dbg = elf_begin(dfd, ELF_C_READ, NULL);
	out->ret = bt_unwind_rows_build_within(elf, dbg, &out->rows, budget_stop, &g);
	if (out->ret == -ECANCELED && g.why)
		out->ret = g.why;
	if (!out->ret && out->rows.n > j->room) { /* the last rows, after the last look */
		bt_unwind_rows_free(&out->rows);
		out->ret = -E2BIG;
	}
done:
	if (dbg)
		elf_end(dbg);
	if (dfd >= 0)
		close(dfd);
	if (elf)
		elf_end(elf);
	close(j->fd);
	out->ns = bt_now_ns() - t0;
}

/* The smallest job waiting that a worker may take (a big one only if
 * big_ok). -1: none. */
static int64_t pick(const struct bt_unwind_builder *b, int big_ok)
{
	int64_t best = -1;

	for (uint32_t i = 0; i < b->qlen; i++) {
		uint32_t k = (b->qhead + i) % BT_UNWIND_BUILD_QUEUE;
		if (b->queue[k].size > BT_UNWIND_BIG_JOB && !big_ok)
			continue;
		if (best < 0 || b->queue[k].size < b->queue[best].size)
			best = k;
	}
	return best;
}

static void *builder(void *arg)
{
	struct worker *w = arg;
	struct bt_unwind_builder *b = w->b;

	/* The worker that takes big jobs runs below the unwinder's thread and
	 * the programs sampled: on a busy machine a hostile table takes its
	 * budget from idle time first. The other, at the unwinder's own
	 * priority, builds ordinary tables that missed their first budget (a
	 * loaded machine) beside it, never behind it. */
	if (w->big_ok) {
		int tid = (int)syscall(SYS_gettid);
		/* relaxed: read by bt_unwind_builder_stop only to renice;
		 * a 0 there (not set yet) skips it, and the join orders all */
		atomic_store_explicit(&w->tid, tid, memory_order_relaxed);
		setpriority(PRIO_PROCESS, (id_t)tid, b->nice);
	}
	pthread_mutex_lock(&b->lock);
	for (;;) {
		int64_t best;

		while ((best = pick(b, w->big_ok)) < 0 && !atomic_load_explicit(&b->stop, memory_order_relaxed))
			pthread_cond_wait(&b->cond, &b->lock);
		if (atomic_load_explicit(&b->stop, memory_order_relaxed))
			break;
		/* swapped to the head, then taken */
		struct bt_unwind_job j = b->queue[best];
		b->queue[best] = b->queue[b->qhead];
		b->qhead = (b->qhead + 1) % BT_UNWIND_BUILD_QUEUE;
		b->qlen--;
		b->busy++;
		pthread_mutex_unlock(&b->lock);

		struct bt_unwind_built r;
		build_one(b, &j, &r);

		pthread_mutex_lock(&b->lock);
		b->busy--;
		/* rlen < queue + workers: every result comes from a queued job */
		b->results[b->rlen++] = r;
		pthread_mutex_unlock(&b->lock);
		b->done(b->arg);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

struct bt_unwind_builder *bt_unwind_builder_start(int nice, void (*done)(void *), void *arg)
{
	struct bt_unwind_builder *b = calloc(1, sizeof(*b));
	int e;

	if (!b)
		return NULL;
	b->done = done;
	b->arg = arg;
	b->nice = nice;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	for (; b->started < WORKERS; b->started++) {
		b->worker[b->started] = (struct worker){ .b = b, .big_ok = b->started == 0 };
		e = pthread_create(&b->thread[b->started], NULL, builder, &b->worker[b->started]);
		if (e) {
			bt_unwind_builder_stop(b);
			errno = e;
			return NULL;
		}
	}
	return b;
}

int bt_unwind_builder_submit(struct bt_unwind_builder *b, const struct bt_unwind_job *job)
{
	pthread_mutex_lock(&b->lock);
	/* results not taken yet count too: results[] holds every job's */
	if (b->qlen + b->rlen + (uint32_t)b->busy >= BT_UNWIND_BUILD_QUEUE) {
		pthread_mutex_unlock(&b->lock);
		close(job->fd);
		return -ENOSPC;
	}
	b->queue[(b->qhead + b->qlen) % BT_UNWIND_BUILD_QUEUE] = *job;
	b->qlen++;
	pthread_cond_broadcast(&b->cond); /* a big job: only worker 0 may take it */
	pthread_mutex_unlock(&b->lock);
	return 0;
}

int bt_unwind_builder_take(struct bt_unwind_builder *b, struct bt_unwind_built *out)
{
	int got = 0;

	pthread_mutex_lock(&b->lock);
	if (b->rlen) {
		*out = b->results[0];
		memmove(b->results, b->results + 1, --b->rlen * sizeof(*b->results));
		got = 1;
	}
	pthread_mutex_unlock(&b->lock);
	return got;
}

uint32_t bt_unwind_builder_pending(struct bt_unwind_builder *b)
{
	pthread_mutex_lock(&b->lock);
	uint32_t n = b->qlen + (uint32_t)b->busy;
	pthread_mutex_unlock(&b->lock);
	return n;
}

void bt_unwind_builder_stop(struct bt_unwind_builder *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	atomic_store_explicit(&b->stop, 1, memory_order_relaxed);
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	/* A niced build on a busy machine reaches its next look at stop (and
	 * frees a big table) seconds late: it ends at the stopper's priority.
	 * Best effort: without CAP_SYS_NICE it keeps its nice. */
	for (int i = 0; i < b->started; i++) {
		int tid = atomic_load_explicit(&b->worker[i].tid, memory_order_relaxed);
		if (tid > 0)
			setpriority(PRIO_PROCESS, (id_t)tid, getpriority(PRIO_PROCESS, 0));
	}
	for (int i = 0; i < b->started; i++)
		pthread_join(b->thread[i], NULL);
	for (uint32_t i = 0; i < b->qlen; i++)
		close(b->queue[(b->qhead + i) % BT_UNWIND_BUILD_QUEUE].fd);
	for (uint32_t i = 0; i < b->rlen; i++)
		bt_unwind_rows_free(&b->results[i].rows);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b);
}
