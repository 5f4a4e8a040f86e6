/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * trigger_fire.bpf.h - what every program that evaluates a dump trigger
 * shares: the read-only trigger slots, the trigger ring and counters, and
 * the path from "the condition held" to a hit in the ring (filter, holdoff,
 * count). trigger.bpf.c owns most conditions; record.bpf.c evaluates
 * sched-latency inside its own sched_switch program (one program run per
 * switch instead of two). Both objects declare these maps; the trigger
 * loader reuses record's (bpf_map__reuse_fd), so hits and counts of every
 * kind land in one place. Included after vmlinux.h, events.h and trigger.h;
 * it uses nothing of record.bpf.c (task.bpf.h: bt_comm_equal).
 */
#ifndef BTRACE_TRIGGER_FIRE_BPF_H
#define BTRACE_TRIGGER_FIRE_BPF_H
#include "task.bpf.h"

const volatile struct bt_trig_conf trig_conf[BT_TRIG_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} trig_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BT_TRIG_MAX);
	__type(key, __u32);
	__type(value, struct bt_trig_count);
} trig_counts SEC(".maps");

/* ---- common ------------------------------------------------------------------ */

static __always_inline bool bt_trig_match(__u32 i, __u32 tgid, const char *comm)
{
	if (trig_conf[i].tgid && trig_conf[i].tgid != tgid)
		return false;
	if (trig_conf[i].comm[0] && !bt_comm_equal(comm, trig_conf[i].comm))
		return false;
	return true;
}

/* The condition of slot i held for (tid, tgid, comm): count it, and send it
 * unless another hit was sent less than holdoff_ns ago. */
static __always_inline void bt_fire(__u32 i, __u64 now, __u64 value, __s64 aux, __u32 tid, __u32 tgid,
				    const char *comm)
{
	/* Read the slot's read-only data before i goes through the stack
	 * (the map key): the verifier only knows constants in registers. */
	__u64 holdoff = trig_conf[i].holdoff_ns, after = trig_conf[i].after_ns;
	__u32 key = i;
	struct bt_trig_count *c = bpf_map_lookup_elem(&trig_counts, &key);
	struct bt_trig_hit *h;
	__u64 last;

	if (!c)
		return;
	__sync_fetch_and_add(&c->hits, 1);
	last = c->last_ns;
	if (last && now - last < holdoff) {
		/* Inside the sent hit's after= delay its dump is still to be
		 * taken and will hold this event: merged, not rate-limited. */
		if (now - last < after)
			__sync_fetch_and_add(&c->merged, 1);
		else
			__sync_fetch_and_add(&c->suppressed, 1);
		return;
	}
	/* Two CPUs may see the same window open: one wins the CAS; the
	 * other's hit is as old as the winner's, in its dump. */
	if (__sync_val_compare_and_swap(&c->last_ns, last, now) != last) {
		__sync_fetch_and_add(&c->merged, 1);
		return;
	}
	h = bpf_ringbuf_reserve(&trig_ring, sizeof(*h), 0);
	if (!h) {
		__sync_fetch_and_add(&c->lost, 1);
		return;
	}
	h->ts_ns = now;
	h->value = value;
	h->aux = aux;
	h->trig = i;
	h->tid = tid;
	h->tgid = tgid;
	h->cpu = bpf_get_smp_processor_id();
	__builtin_memcpy(h->comm, comm, sizeof(h->comm));
	bpf_ringbuf_submit(h, 0); /* wake the trigger thread now */
}

/* comm= and pid= are about the process: its name is its main thread's
 * (a crash in a thread named otherwise still matches comm=PROCESS). */
static __always_inline void bt_task_comm(struct task_struct *t, char *comm)
{
	struct task_struct *leader = BPF_CORE_READ(t, group_leader);

	if (!leader || bpf_probe_read_kernel(comm, BT_COMM_LEN, &leader->comm))
		__builtin_memset(comm, 0, BT_COMM_LEN);
}

/* Slots of `kind` whose threshold `value` exceeds, for task t (a BTF pointer).
 * now == 0: the clock is read only when a slot fires (sched-latency runs on
 * every switch and needs the time only for a hit). */
static __always_inline void bt_check_task(__u32 kind, __u64 now, __u64 value, __s64 aux, struct task_struct *t)
{
	char comm[BT_COMM_LEN];
	bool have_comm = false;

#pragma unroll
	for (__u32 i = 0; i < BT_TRIG_MAX; i++) {
		if (trig_conf[i].kind != kind || value <= trig_conf[i].threshold_ns)
			continue;
		if (kind == BT_TRIG_SYSCALL && trig_conf[i].nr >= 0 && trig_conf[i].nr != aux)
			continue;
		if (!have_comm) {
			bt_task_comm(t, comm);
			have_comm = true;
			if (!now)
				now = bpf_ktime_get_boot_ns();
		}
		if (bt_trig_match(i, t->tgid, comm))
			bt_fire(i, now, value, aux, t->pid, t->tgid, comm);
	}
}

static __always_inline bool bt_kind_armed(__u32 kind)
{
#pragma unroll
	for (__u32 i = 0; i < BT_TRIG_MAX; i++)
		if (trig_conf[i].kind == kind)
			return true;
	return false;
}

#endif /* BTRACE_TRIGGER_FIRE_BPF_H */
