// SPDX-License-Identifier: MIT
/*
 * stack_copies.c - pending user stack copies, finished once their tables
 * are published (see stack_copies.h). A pass looks up each waiting copy's
 * tables (one map lookup per binary per pass, memoized) and walks it on;
 * the copies still waiting keep their order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "stack_copies.h"
#include "util.h"

#define PASS_EVERY_NS 50000000ull
#define MEMO 32 /* files looked up per pass, remembered for the pass */

struct pending {
	uint64_t since; /* CLOCK_MONOTONIC when it came */
	uint32_t len;
	struct bt_raw_stack_copy *c;
};

struct bt_stack_copies {
	struct bt_copy_tables tb; /* the caller's: looked up through memo_file */
	struct bt_copy_tables memo_tb;
	struct pending *p;
	uint32_t n, cap;
	uint64_t bytes, last_pass;
	struct {
		struct bt_unwind_fkey k;
		int ret;
		struct bt_unwind_file f;
	} memo[MEMO];
	uint32_t nmemo;
	pthread_mutex_t lock; /* cnt */
	struct bt_stack_copy_counts cnt;
};

/* A file's table, each file looked up once per pass. */
static int memo_file(void *arg, const struct bt_unwind_fkey *k, struct bt_unwind_file *f)
{
	struct bt_stack_copies *s = arg;

	for (uint32_t i = 0; i < s->nmemo; i++)
		if (s->memo[i].k.ino == k->ino && s->memo[i].k.dev == k->dev) {
			*f = s->memo[i].f;
			return s->memo[i].ret;
		}
	int ret = s->tb.file(s->tb.arg, k, f) ? -ENOENT : 0;
	if (s->nmemo < MEMO) {
		s->memo[s->nmemo].k = *k;
		s->memo[s->nmemo].ret = ret;
		if (!ret)
			s->memo[s->nmemo].f = *f;
		s->nmemo++;
	}
	return ret;
}

struct bt_stack_copies *bt_stack_copies_new(const struct bt_copy_tables *tb)
{
	struct bt_stack_copies *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->tb = *tb;
	s->memo_tb = (struct bt_copy_tables){ memo_file, s, tb->rows, tb->nrows };
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void bt_stack_copies_free(struct bt_stack_copies *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		free(s->p[i].c);
	free(s->p);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* One more in *field (NULL: none), and the copies waiting now. */
static void count(struct bt_stack_copies *s, uint64_t *field)
{
	pthread_mutex_lock(&s->lock);
	if (field)
		(*field)++;
	s->cnt.waiting = s->n;
	pthread_mutex_unlock(&s->lock);
}

void bt_stack_copies_add(struct bt_stack_copies *s, const void *rec, uint32_t len)
{
	size_t need = bt_copy_record_len(rec, len);

	count(s, &s->cnt.received);
	if (!need) {
		count(s, &s->cnt.bad);
		return;
	}
	if (need > BT_STACK_COPIES_MEM)
		return;
	/* Full: the oldest give way (their stacks stay cut), never the
	 * newest, which are the moment a dump is asked for. */
	uint32_t drop = 0;
	while (s->bytes + need > BT_STACK_COPIES_MEM && drop < s->n) {
		s->bytes -= s->p[drop].len;
		free(s->p[drop++].c);
		count(s, &s->cnt.mem);
	}
	if (drop) {
		memmove(s->p, s->p + drop, (s->n - drop) * sizeof(*s->p));
		s->n -= drop;
	}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 64;
		struct pending *p = realloc(s->p, cap * sizeof(*p));
		if (!p) {
			count(s, &s->cnt.mem);
			return;
		}
		s->p = p;
		s->cap = cap;
	}
	struct bt_raw_stack_copy *c = malloc(need);
	if (!c) {
		count(s, &s->cnt.mem);
		return;
	}
	memcpy(c, rec, need);
	s->p[s->n++] = (struct pending){ bt_now_ns(), (uint32_t)need, c };
	s->bytes += need;
	count(s, NULL);
}

void bt_stack_copies_pass(struct bt_stack_copies *s, struct bt_stack_table *t, int now)
{
	uint64_t ts = bt_now_ns();
	uint32_t kept = 0;
	struct bt_copy_walk w;

	if (!s || !s->n || (!now && ts - s->last_pass < PASS_EVERY_NS))
		return;
	s->last_pass = ts;
	s->nmemo = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		struct pending *p = &s->p[i];
		int give_up = ts - p->since >= BT_STACK_COPY_WAIT_NS;
		int r = bt_copy_walk(p->c, p->len, &s->memo_tb, BT_MAX_FRAMES - p->c->nframes, give_up, &w);
		if (r == BT_COPYW_WAIT) {
			s->p[kept++] = *p;
			continue;
		}
		uint64_t *field = &s->cnt.bad;
		if (r == BT_COPYW_DONE) {
			if (bt_stack_table_finish(t, p->c->hash, p->c->nframes, &w.stop, w.fr, w.n, w.why))
				field = &s->cnt.gone;
			else if (give_up)
				field = &s->cnt.expired;
			else
				field = w.why ? &s->cnt.cut : &s->cnt.done;
		}
		s->bytes -= p->len;
		free(p->c);
		count(s, field);
	}
	s->n = kept;
	count(s, NULL);
}

void bt_stack_copies_counts(struct bt_stack_copies *s, struct bt_stack_copy_counts *c)
{
	if (!s) {
		memset(c, 0, sizeof(*c));
		return;
	}
	pthread_mutex_lock(&s->lock);
	*c = s->cnt;
	pthread_mutex_unlock(&s->lock);
}
