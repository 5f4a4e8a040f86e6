// SPDX-License-Identifier: MIT
/* test_tasks.c - the tid -> comm table (user/record/tasks.c): events, /proc seeding,
 * pruning of exited tasks, snapshots under concurrent updates. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>
#include "events.h"
#include "harness.h"
#include "tasks.h"

#define CAP 65536u /* BT_TASKS_MAX in tasks.c */

static struct bt_ev_task mk(uint16_t type, uint64_t ts, uint32_t cur_tid, uint32_t tid, uint32_t tgid,
			    const char *comm)
{
	struct bt_ev_task e;

	memset(&e, 0, sizeof(e));
	e.h.type = type;
	e.h.ts_ns = ts;
	e.h.tid = cur_tid;
	e.h.tgid = tgid;
	e.tid = tid;
	e.tgid = tgid;
	if (comm)
		memcpy(e.comm, comm, strnlen(comm, sizeof(e.comm)));
	return e;
}

static void apply(struct bt_task_table *t, struct bt_ev_task e)
{
	bt_tasks_apply(t, &e.h, sizeof(e));
}

static const struct bt_task *lookup(struct bt_task **arr, size_t *n, struct bt_task_table *t, uint32_t tid)
{
	free(*arr);
	*arr = NULL;
	if (bt_tasks_snapshot(t, arr, n))
		return NULL;
	return bt_tasks_find(*arr, *n, tid);
}

static void test_events(void)
{
	struct bt_task_table *t = bt_tasks_new();
	struct bt_task *arr = NULL;
	const struct bt_task *k;
	size_t n = 0;

	REQUIRE(t, "bt_tasks_new");
	bt_tasks_set(t, 100, 100, "parent");
	apply(t, mk(BT_EV_PROCESS_FORK, 10, 100, 101, 100, "parent"));
	k = lookup(&arr, &n, t, 101);
	CHECK(k && !strcmp(k->comm, "parent") && k->tgid == 100 && !k->exit_ts, "fork child");

	apply(t, mk(BT_EV_TASK_RENAME, 11, 101, 101, 100, "worker"));
	k = lookup(&arr, &n, t, 101);
	CHECK(k && !strcmp(k->comm, "worker"), "rename: %s", k ? k->comm : "(none)");

	/* A full 16-byte name without NUL is cut to 15 characters. */
	apply(t, mk(BT_EV_TASK_RENAME, 12, 101, 101, 100, "0123456789abcdefXYZ"));
	k = lookup(&arr, &n, t, 101);
	CHECK(k && !strcmp(k->comm, "0123456789abcde"), "16-byte name: %s", k ? k->comm : "(none)");

	/* exec by a non-leader thread: it takes over the leader's tid. */
	{
		struct bt_ev_task e = mk(BT_EV_PROCESS_EXEC, 13, 100, 101, 100, "newprog");

		apply(t, e);
	}
	k = lookup(&arr, &n, t, 100);
	CHECK(k && !strcmp(k->comm, "newprog") && !k->exit_ts, "exec: leader renamed");
	k = bt_tasks_find(arr, n, 101);
	CHECK(k && k->exit_ts == 13, "exec: old tid gone (exit_ts %llu)", k ? (unsigned long long)k->exit_ts : 0ull);

	apply(t, mk(BT_EV_PROCESS_EXIT, 20, 100, 100, 100, NULL));
	k = lookup(&arr, &n, t, 100);
	CHECK(k && k->exit_ts == 20 && !strcmp(k->comm, "newprog"), "exit keeps the name, marks the time");

	/* Exit of a task never seen: kept, named "<...>". */
	apply(t, mk(BT_EV_PROCESS_EXIT, 21, 555, 555, 555, NULL));
	k = lookup(&arr, &n, t, 555);
	CHECK(k && k->exit_ts == 21, "exit of unknown tid");

	/* Other events and short events change nothing. */
	{
		struct bt_ev_task e = mk(BT_EV_PROCESS_FORK, 30, 100, 777, 100, "x");
		struct bt_ev_sched_switch sw;

		bt_tasks_apply(t, &e.h, sizeof(e) - 1);
		memset(&sw, 0, sizeof(sw));
		sw.h.type = BT_EV_SCHED_SWITCH;
		sw.prev_tid = 778;
		bt_tasks_apply(t, &sw.h, sizeof(sw));
	}
	CHECK(!lookup(&arr, &n, t, 777) && !bt_tasks_find(arr, n, 778), "ignored events");

	/* Snapshot sorted by tid. */
	for (size_t i = 1; i < n; i++)
		CHECK(arr[i - 1].tid < arr[i].tid, "sorted at %zu", i);
	CHECK(bt_tasks_find(arr, n, 4242) == NULL, "find absent");
	CHECK(bt_tasks_find(arr, 0, 1) == NULL, "find in empty");
	free(arr);
	bt_tasks_free(t);
}

static void test_prune(void)
{
	struct bt_task_table *t = bt_tasks_new();
	struct bt_task *arr = NULL;
	const uint32_t base = 1000000, nexit = CAP + 5000;
	size_t n = 0;

	REQUIRE(t, "bt_tasks_new");
	for (uint32_t i = 1; i <= 1000; i++)
		bt_tasks_set(t, i, i, "live");
	/* tid 5 exits early, then its tid is reused by a live task: its old exit
	 * record is stale and must not prune the new task. */
	apply(t, mk(BT_EV_PROCESS_EXIT, 1, 5, 5, 5, NULL));
	apply(t, mk(BT_EV_PROCESS_FORK, 2, 1, 5, 5, "reused"));
	for (uint32_t i = 0; i < nexit; i++) {
		apply(t, mk(BT_EV_PROCESS_FORK, 10 + 2 * (uint64_t)i, 1, base + i, base + i, "short"));
		apply(t, mk(BT_EV_PROCESS_EXIT, 11 + 2 * (uint64_t)i, base + i, base + i, base + i, NULL));
	}
	REQUIRE(bt_tasks_snapshot(t, &arr, &n) == 0, "snapshot");
	CHECK(n == CAP, "table bounded at %u, holds %zu", CAP, n);
	for (uint32_t i = 1; i <= 1000; i++)
		if (!bt_tasks_find(arr, n, i)) {
			CHECK(0, "live task %u pruned", i);
			break;
		}
	const struct bt_task *k = bt_tasks_find(arr, n, 5);
	CHECK(k && !strcmp(k->comm, "reused") && !k->exit_ts, "reused tid kept alive");
	CHECK(!bt_tasks_find(arr, n, base), "oldest exited pruned");
	CHECK(bt_tasks_find(arr, n, base + nexit - 1) != NULL, "newest exited kept");
	/* Pruned oldest first: the survivors are exactly the newest exits. */
	uint32_t first_kept = base + nexit - (CAP - 1000);
	CHECK(!bt_tasks_find(arr, n, first_kept - 1) && bt_tasks_find(arr, n, first_kept),
	      "exits pruned in order (first kept %u)", first_kept);
	free(arr);
	bt_tasks_free(t);
}

static void test_seed_proc(void)
{
	struct bt_task_table *t = bt_tasks_new();
	struct bt_task *arr = NULL;
	size_t n = 0;
	int added;

	REQUIRE(t, "bt_tasks_new");
	prctl(PR_SET_NAME, "tt-seeded", 0, 0, 0);
	bt_tasks_set(t, 1, 1, "from-event"); /* seeding must not override */
	added = bt_tasks_seed_proc(t);
	CHECK(added > 1, "added %d", added);
	REQUIRE(bt_tasks_snapshot(t, &arr, &n) == 0, "snapshot");
	const struct bt_task *k = bt_tasks_find(arr, n, (uint32_t)syscall(SYS_gettid));
	CHECK(k && !strcmp(k->comm, "tt-seeded") && k->tgid == (uint32_t)getpid(), "own thread: %s",
	      k ? k->comm : "(none)");
	k = bt_tasks_find(arr, n, 1);
	CHECK(k && !strcmp(k->comm, "from-event"), "seed does not override events");
	free(arr);
	bt_tasks_free(t);
}

static atomic_int stop;

static void *updater(void *arg)
{
	struct bt_task_table *t = arg;
	uint64_t ts = 1;

	for (uint32_t i = 0; !atomic_load(&stop); i = (i + 1) % 200000) {
		apply(t, mk(BT_EV_PROCESS_FORK, ts++, 1, 2000000 + i, 1, "churn"));
		apply(t, mk(BT_EV_PROCESS_EXIT, ts++, 1, 2000000 + i, 1, NULL));
	}
	return NULL;
}

static void test_concurrent_snapshots(void)
{
	struct bt_task_table *t = bt_tasks_new();
	pthread_t th;

	REQUIRE(t, "bt_tasks_new");
	bt_tasks_set(t, 42, 42, "stable");
	atomic_store(&stop, 0);
	REQUIRE(pthread_create(&th, NULL, updater, t) == 0, "thread");
	for (int i = 0; i < 200; i++) {
		struct bt_task *arr = NULL;
		size_t n = 0;

		if (bt_tasks_snapshot(t, &arr, &n)) {
			CHECK(0, "snapshot failed");
			break;
		}
		const struct bt_task *k = bt_tasks_find(arr, n, 42);
		CHECK(k && !strcmp(k->comm, "stable"), "stable task in snapshot %d", i);
		CHECK(n <= CAP, "bounded: %zu", n);
		for (size_t j = 1; j < n; j++)
			if (arr[j - 1].tid >= arr[j].tid) {
				CHECK(0, "unsorted snapshot");
				break;
			}
		free(arr);
		if (h_case_failed)
			break;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	bt_tasks_free(t);
}

int main(void)
{
	RUN(test_events);
	RUN(test_prune);
	RUN(test_seed_proc);
	RUN(test_concurrent_snapshots);
	return h_done();
}
