// SPDX-License-Identifier: MIT
/*
 * tasks.c - the tid -> (tgid, comm) table (see tasks.h).
 *
 * An open-addressing hash table keyed by tid (linear probing, backward-shift
 * deletion, so no tombstones), under one mutex: the drain thread updates it
 * on the rare lifecycle events (fork, exec, rename, exit) while a dump thread
 * takes snapshots.
 *
 * Exited tasks stay in the table, marked with their exit time, because their
 * events are still in the buffer; they are pruned oldest exit first once the
 * table holds more than BT_TASKS_MAX entries. Live tasks are never pruned.
 * The exit order is kept in a queue of (tid, exit_ts); an entry whose task
 * has since been replaced (tid reused) is stale and skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "tasks.h"

/* Prune exited tasks beyond this many entries (32 bytes each). */
#define BT_TASKS_MAX 65536u
#define BT_TASKS_MIN_CAP 1024u

_Static_assert(BT_TASK_COMM_LEN == BT_COMM_LEN, "comm length");

struct exit_rec {
	uint32_t tid;
	uint64_t ts;
};

struct bt_task_table {
	pthread_mutex_t lock;
	struct bt_task *slots; /* cap entries, power of two */
	uint8_t *used;
	size_t cap, n;
	struct exit_rec *exq; /* exit order, oldest first from exq_head */
	size_t exq_head, exq_len, exq_cap;
};

static size_t hash_tid(uint32_t tid, size_t cap)
{
	return (size_t)((tid * 2654435761u) ^ (tid >> 16)) & (cap - 1);
}

struct bt_task_table *bt_tasks_new(void)
{
	struct bt_task_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = BT_TASKS_MIN_CAP;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->used = calloc(t->cap, 1);
	if (!t->slots || !t->used) {
		free(t->slots);
		free(t->used);
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void bt_tasks_free(struct bt_task_table *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	free(t->used);
	free(t->exq);
	free(t);
}

/* ---- hash table (lock held) ------------------------------------------------ */

static struct bt_task *find_locked(struct bt_task_table *t, uint32_t tid)
{
	for (size_t i = hash_tid(tid, t->cap);; i = (i + 1) & (t->cap - 1)) {
		if (!t->used[i])
			return NULL;
		if (t->slots[i].tid == tid)
			return &t->slots[i];
	}
}

static int grow_locked(struct bt_task_table *t)
{
	size_t cap = t->cap * 2;
	struct bt_task *slots = calloc(cap, sizeof(*slots));
	uint8_t *used = calloc(cap, 1);

	if (!slots || !used) {
		free(slots);
		free(used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->used[i])
			continue;
		size_t j = hash_tid(t->slots[i].tid, cap);
		while (used[j])
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
		used[j] = 1;
	}
	free(t->slots);
	free(t->used);
	t->slots = slots;
	t->used = used;
	t->cap = cap;
	return 0;
}

/* The entry for tid, inserted (zeroed but for tid) if absent; NULL if out of
 * memory. *created tells which. */
static struct bt_task *get_locked(struct bt_task_table *t, uint32_t tid, int *created)
{
	struct bt_task *e = find_locked(t, tid);
	size_t i;

	*created = 0;
	if (e)
		return e;
	/* Load factor at most 1/2: probes stay short. */
	if ((t->n + 1) * 2 > t->cap && grow_locked(t) < 0)
		return NULL;
	i = hash_tid(tid, t->cap);
	while (t->used[i])
		i = (i + 1) & (t->cap - 1);
	t->used[i] = 1;
	memset(&t->slots[i], 0, sizeof(t->slots[i]));
	t->slots[i].tid = tid;
	t->n++;
	*created = 1;
	return &t->slots[i];
}

/* Backward-shift deletion: move later members of the probe run into the hole
 * when their home slot does not lie (cyclically) between the hole and them. */
static void delete_locked(struct bt_task_table *t, struct bt_task *e)
{
	size_t mask = t->cap - 1;
	size_t hole = (size_t)(e - t->slots);

	t->used[hole] = 0;
	t->n--;
	for (size_t j = (hole + 1) & mask; t->used[j]; j = (j + 1) & mask) {
		size_t home = hash_tid(t->slots[j].tid, t->cap);

		/* j's run can move back to hole iff home is not in (hole, j]. */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			t->slots[hole] = t->slots[j];
			t->used[hole] = 1;
			t->used[j] = 0;
			hole = j;
		}
	}
}

/* ---- exit queue and pruning (lock held) ----------------------------------- */

static int exq_stale(struct bt_task_table *t, const struct exit_rec *r)
{
	struct bt_task *e = find_locked(t, r->tid);

	return !e || e->exit_ts != r->ts;
}

static void exq_push(struct bt_task_table *t, uint32_t tid, uint64_t ts)
{
	if (t->exq_len == t->exq_cap) {
		/* Full: rebuild without stale records (tids get reused), doubling
		 * only if more than half are still live, so each record is checked
		 * O(1) times amortized. */
		size_t keep = 0, cap = t->exq_cap < 256 ? 256 : t->exq_cap, w = 0;
		struct exit_rec *q;

		for (size_t k = 0; k < t->exq_len; k++)
			keep += !exq_stale(t, &t->exq[(t->exq_head + k) % t->exq_cap]);
		if (keep * 2 > cap)
			cap *= 2;
		q = malloc(cap * sizeof(*q));
		if (!q)
			return; /* the task is then never pruned: harmless */
		for (size_t k = 0; k < t->exq_len; k++) {
			struct exit_rec r = t->exq[(t->exq_head + k) % t->exq_cap];

			if (!exq_stale(t, &r))
				q[w++] = r;
		}
		free(t->exq);
		t->exq = q;
		t->exq_cap = cap;
		t->exq_head = 0;
		t->exq_len = w;
	}
	t->exq[(t->exq_head + t->exq_len) % t->exq_cap] = (struct exit_rec){ tid, ts };
	t->exq_len++;
}

static void prune_locked(struct bt_task_table *t)
{
	while (t->n > BT_TASKS_MAX && t->exq_len) {
		struct exit_rec r = t->exq[t->exq_head];

		t->exq_head = (t->exq_head + 1) % t->exq_cap;
		t->exq_len--;
		if (!exq_stale(t, &r))
			delete_locked(t, find_locked(t, r.tid));
	}
}

static void copy_comm(char *dst, const char *src)
{
	/* Event names are NUL-padded but not always NUL-terminated: copy at
	 * most 15 bytes, pad the rest with NULs. */
	size_t n = strnlen(src, BT_TASK_COMM_LEN - 1);

	memcpy(dst, src, n);
	memset(dst + n, 0, BT_TASK_COMM_LEN - n);
}

static void set_alive_locked(struct bt_task *e, uint32_t tgid, const char *comm)
{
	e->exit_ts = 0;
	e->tgid = tgid;
	if (comm)
		copy_comm(e->comm, comm);
}

static void set_exited_locked(struct bt_task_table *t, struct bt_task *e, uint64_t ts)
{
	if (!ts)
		ts = 1; /* 0 means alive */
	e->exit_ts = ts;
	exq_push(t, e->tid, ts);
}

/* ---- API ------------------------------------------------------------------- */

void bt_tasks_set(struct bt_task_table *t, uint32_t tid, uint32_t tgid, const char *comm)
{
	struct bt_task *e;
	int created;

	pthread_mutex_lock(&t->lock);
	e = get_locked(t, tid, &created);
	if (e)
		set_alive_locked(e, tgid, comm ? comm : "");
	prune_locked(t);
	pthread_mutex_unlock(&t->lock);
}

/* Seeding from /proc never overrides what events already said. */
static int seed_one(struct bt_task_table *t, uint32_t tid, uint32_t tgid, const char *comm)
{
	struct bt_task *e;
	int created;

	pthread_mutex_lock(&t->lock);
	e = get_locked(t, tid, &created);
	if (e && created)
		set_alive_locked(e, tgid, comm);
	prune_locked(t);
	pthread_mutex_unlock(&t->lock);
	return e && created;
}

static int parse_id(const char *s, uint32_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int read_comm(int dirfd, const char *path, char *comm)
{
	char buf[64];
	ssize_t n;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	memset(comm, 0, BT_TASK_COMM_LEN);
	copy_comm(comm, buf);
	return 0;
}

int bt_tasks_seed_proc(struct bt_task_table *t)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	int added = 0;

	if (!proc)
		return -errno;
	/* The idle tasks (tid 0, "swapper/CPU") are not in /proc; readers name
	 * them per CPU. */
	while ((de = readdir(proc))) {
		char path[64], comm[BT_TASK_COMM_LEN];
		uint32_t tgid, tid;
		struct dirent *te;
		DIR *task;
		int tfd;

		if (parse_id(de->d_name, &tgid) < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task", tgid);
		task = opendir(path);
		if (!task)
			continue; /* exited meanwhile */
		tfd = dirfd(task);
		while ((te = readdir(task))) {
			char cpath[48];

			if (parse_id(te->d_name, &tid) < 0)
				continue;
			snprintf(cpath, sizeof(cpath), "%u/comm", tid);
			if (read_comm(tfd, cpath, comm) == 0)
				added += seed_one(t, tid, tgid, comm);
		}
		closedir(task);
	}
	closedir(proc);
	return added;
}

void bt_tasks_apply(struct bt_task_table *t, const struct bt_event_hdr *ev, uint32_t len)
{
	const struct bt_ev_task *e = (const void *)ev;
	struct bt_task *k;
	int created;

	if (len < sizeof(*e))
		return;
	switch (ev->type) {
	case BT_EV_PROCESS_FORK:
	case BT_EV_PROCESS_EXEC:
	case BT_EV_TASK_RENAME:
	case BT_EV_PROCESS_EXIT:
		break;
	default:
		return;
	}
	pthread_mutex_lock(&t->lock);
	switch (ev->type) {
	case BT_EV_PROCESS_FORK:
		/* A new task: replaces whatever had this tid before. */
		k = get_locked(t, e->tid, &created);
		if (k)
			set_alive_locked(k, e->tgid, e->comm);
		break;
	case BT_EV_PROCESS_EXEC:
		/* A non-leader thread that execs takes over the leader's tid
		 * (h.tid); its old tid (e->tid) is gone. */
		if (e->tid != ev->tid && (k = find_locked(t, e->tid)) != NULL)
			set_exited_locked(t, k, ev->ts_ns);
		k = get_locked(t, ev->tid, &created);
		if (k)
			set_alive_locked(k, e->tgid, e->comm);
		break;
	case BT_EV_TASK_RENAME:
		k = get_locked(t, e->tid, &created);
		if (k) {
			if (created || !k->exit_ts)
				set_alive_locked(k, e->tgid, e->comm);
			else
				copy_comm(k->comm, e->comm);
		}
		break;
	case BT_EV_PROCESS_EXIT:
		k = get_locked(t, e->tid, &created);
		if (k) {
			if (created) {
				k->tgid = e->tgid;
				memcpy(k->comm, "<...>", 6);
			}
			set_exited_locked(t, k, ev->ts_ns);
		}
		break;
	}
	prune_locked(t);
	pthread_mutex_unlock(&t->lock);
}

static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct bt_task *)a)->tid, y = ((const struct bt_task *)b)->tid;

	return x < y ? -1 : x > y;
}

int bt_tasks_snapshot(struct bt_task_table *t, struct bt_task **out, size_t *n)
{
	struct bt_task *arr;
	size_t k = 0;

	pthread_mutex_lock(&t->lock);
	arr = malloc((t->n ? t->n : 1) * sizeof(*arr));
	if (!arr) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->used[i])
			arr[k++] = t->slots[i];
	pthread_mutex_unlock(&t->lock);
	qsort(arr, k, sizeof(*arr), cmp_tid);
	*out = arr;
	*n = k;
	return 0;
}
