// SPDX-License-Identifier: MIT
/*
 * test_sys_held.c - the user side of deferred sys_enter events
 * (user/record/sys_pairs.c), on a real per-CPU map shaped as record.bpf.c's
 * cpu_state, written here as the kernel would leave it:
 *   - a pair record splits into its enter and exit, every field in place;
 *   - an enter held in a slot is read once per CPU and remembered: read
 *     again, it is not returned twice; its later ring copy (alone or in a
 *     pair) is recognized as a duplicate exactly once;
 *   - a copy that comes through the ring between the read and the take is
 *     stored from the ring, and the candidate dropped;
 *   - four enters landed for successive dumps are all
 *     recognized when their ring copies come late, in any order;
 *   - an empty slot, or a drain's range outside the map, lands nothing.
 * Needs root (a BPF map); prints TAP lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "harness.h"
#include "sys_pairs.h"

static int map_fd = -1;
static int ncpus;

/* Write every CPU's slot: armed[c] 0 leaves CPU c's slot empty. */
static int set_slots(const __u32 *seq, const int *armed)
{
	struct bt_cpu_state *v = calloc((size_t)ncpus, sizeof(*v));
	__u32 key = 0;
	int ret;

	if (!v)
		return -ENOMEM;
	for (int c = 0; c < ncpus; c++) {
		v[c].sys.ts_ns = 1000 + seq[c];
		v[c].sys.id = 39;
		v[c].sys.seq = seq[c];
		v[c].sys.tid = 100 + (__u32)c;
		v[c].sys.tgid = 100;
		v[c].sys.armed = armed[c] ? 1 : 0;
	}
	ret = bpf_map_update_elem(map_fd, &key, v, BPF_ANY) ? -errno : 0;
	free(v);
	return ret;
}

static void test_pair_split(void)
{
	struct bt_raw_sys_pair p = {
		.h = { .ts_ns = 2000, .seq = 8, .tid = 7, .tgid = 6, .cpu = 1, .type = BT_RAW_SYS_PAIR },
		.id = 110, .ret = -4, .enter_ts = 1500, .enter_id = 110, .enter_seq = 5,
	};
	struct bt_ev_syscall in, out;

	bt_sys_pair_split(&p, &in, &out);
	CHECK(in.h.type == BT_EV_SYS_ENTER && in.h.ts_ns == 1500 && in.h.seq == 5 && in.id == 110 && in.ret == 0,
	      "enter: type %u ts %llu seq %u id %lld", in.h.type, (unsigned long long)in.h.ts_ns, in.h.seq,
	      (long long)in.id);
	CHECK(in.h.tid == 7 && in.h.tgid == 6 && in.h.cpu == 1, "enter's thread and cpu");
	CHECK(out.h.type == BT_EV_SYS_EXIT && out.h.ts_ns == 2000 && out.h.seq == 8 && out.id == 110 && out.ret == -4,
	      "exit: type %u ts %llu seq %u ret %lld", out.h.type, (unsigned long long)out.h.ts_ns, out.h.seq,
	      (long long)out.ret);
}

/* Steps 1 and 3 with nothing coming through the ring in between. */
static int land(struct bt_sys_landed *l, struct bt_ev_syscall *ev)
{
	int n = bt_sys_held_read(l, map_fd, (uint32_t)ncpus);

	return n < 0 ? n : bt_sys_held_take(l, ev);
}

static void test_land_once(void)
{
	__u32 seq[512] = { 0 };
	int armed[512] = { 0 };
	struct bt_sys_landed l;
	struct bt_ev_syscall ev[512];

	REQUIRE(ncpus <= 512, "%d CPUs", ncpus);
	REQUIRE(bt_sys_landed_init(&l, 0, (uint32_t)ncpus) == 0, "init");
	seq[0] = 41;
	armed[0] = 1;
	REQUIRE(set_slots(seq, armed) == 0, "map update");
	int n = land(&l, ev);
	CHECK(n == 1, "held enters %d, want 1 (CPU 0 only)", n);
	if (n == 1)
		CHECK(ev[0].h.seq == 41 && ev[0].h.cpu == 0 && ev[0].h.tid == 100 && ev[0].h.type == BT_EV_SYS_ENTER &&
			      ev[0].h.ts_ns == 1041 && ev[0].id == 39,
		      "landed enter: seq %u cpu %u tid %u", ev[0].h.seq, ev[0].h.cpu, ev[0].h.tid);
	n = land(&l, ev);
	CHECK(n == 0, "the same held enter read again: %d returned, want 0", n);
	/* Its ring copy comes: a duplicate once, then no longer. */
	struct bt_event_hdr h = { .seq = 41, .tid = 100, .cpu = 0, .type = BT_EV_SYS_ENTER };
	struct bt_event_hdr other = h;
	other.tid = 101;
	CHECK(!bt_sys_landed_dup(&l, &other), "another thread's enter with that seq is not a duplicate");
	CHECK(bt_sys_landed_dup(&l, &h), "the ring copy is a duplicate");
	CHECK(!bt_sys_landed_dup(&l, &h), "a second copy is not (the kernel emits an enter once)");
	/* Emptied slot: nothing. */
	armed[0] = 0;
	REQUIRE(set_slots(seq, armed) == 0, "map update");
	n = land(&l, ev);
	CHECK(n == 0, "empty slots: %d returned", n);
	bt_sys_landed_free(&l);
}

/* The kernel emits a candidate's enter while the rings are consumed again
 * (step 2): the ring's copy is stored, in its place, and not the candidate. */
static void test_candidate_in_ring(void)
{
	__u32 seq[512] = { 0 };
	int armed[512] = { 0 };
	struct bt_sys_landed l;
	struct bt_ev_syscall ev[512];

	REQUIRE(bt_sys_landed_init(&l, 0, (uint32_t)ncpus) == 0, "init");
	seq[0] = 77;
	armed[0] = 1;
	REQUIRE(set_slots(seq, armed) == 0, "map update");
	CHECK(bt_sys_held_read(&l, map_fd, (uint32_t)ncpus) == 1, "one candidate");
	struct bt_event_hdr h = { .seq = 77, .tid = 100, .cpu = 0, .type = BT_EV_SYS_ENTER };
	CHECK(!bt_sys_landed_dup(&l, &h), "its ring copy is to be stored");
	int n = bt_sys_held_take(&l, ev);
	CHECK(n == 0, "then the candidate is not: %d taken", n);
	CHECK(!bt_sys_landed_dup(&l, &h), "nor is anything remembered");
	bt_sys_landed_free(&l);
}

/* Enters landed for four successive dumps whose ring copies all come later
 * (four: BT_SYS_LANDED_MAX's promise, not the macro, so a smaller one fails). */
#define LATE 4
static void test_late_copies(void)
{
	__u32 seq[512] = { 0 };
	int armed[512] = { 0 };
	struct bt_sys_landed l;
	struct bt_ev_syscall ev[512];

	REQUIRE(bt_sys_landed_init(&l, 0, (uint32_t)ncpus) == 0, "init");
	for (int k = 0; k < LATE; k++) {
		seq[0] = 200 + (__u32)k;
		armed[0] = 1;
		REQUIRE(set_slots(seq, armed) == 0, "map update");
		int n = land(&l, ev);
		CHECK(n == 1 && ev[0].h.seq == 200 + (__u32)k, "dump %d: %d landed", k, n);
	}
	for (int k = LATE - 1; k >= 0; k--) {
		struct bt_event_hdr h = { .seq = 200 + (__u32)k, .tid = 100, .cpu = 0, .type = BT_EV_SYS_ENTER };
		CHECK(bt_sys_landed_dup(&l, &h), "late ring copy of seq %u recognized", h.seq);
	}
	bt_sys_landed_free(&l);
}

static void test_bad_range(void)
{
	struct bt_sys_landed l;
	struct bt_ev_syscall ev[4];

	REQUIRE(bt_sys_landed_init(&l, (uint32_t)ncpus, 2) == 0, "init");
	CHECK(bt_sys_held_read(&l, map_fd, (uint32_t)ncpus) == -EINVAL, "a range past the map's CPUs");
	CHECK(bt_sys_held_take(&l, ev) == 0, "nothing to take");
	struct bt_event_hdr h = { .seq = 1, .tid = 1, .cpu = 0, .type = BT_EV_SYS_ENTER };
	CHECK(!bt_sys_landed_dup(&l, &h), "an enter of a CPU outside the range");
	bt_sys_landed_free(&l);
	CHECK(!bt_sys_landed_dup(&l, &h), "after free");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("ok 1 - # SKIP needs root (a BPF map)\n");
		return 0;
	}
	libbpf_set_print(NULL);
	ncpus = libbpf_num_possible_cpus();
	map_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "bt_test_cpus", 4, sizeof(struct bt_cpu_state), 1, NULL);
	if (ncpus <= 0 || map_fd < 0) {
		printf("not ok 1 - a per-CPU map (%d CPUs): %s\n", ncpus, strerror(errno));
		return 1;
	}
	RUN(test_pair_split);
	RUN(test_land_once);
	RUN(test_candidate_in_ring);
	RUN(test_late_copies);
	RUN(test_bad_range);
	close(map_fd);
	return h_done();
}
