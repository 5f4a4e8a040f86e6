/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * stack_copy.bpf.h - where the unwinder stopped at a binary whose table is
 * not built yet (a process's first instants), a bounded copy of the user
 * stack from there goes to the recorder, which walks on in user space once
 * the table is published (user/stacks/stack_copies.c), as perf's
 * --call-graph dwarf copies 8 KiB of stack at each sample. The copy holds
 * the stop's registers, the process's executable mappings (it may be gone
 * by then) and up to BT_STACK_COPY_BYTES of stack (struct
 * bt_raw_stack_copy). At most BT_STACK_COPY_RATE copies per CPU per
 * 100 ms, of processes younger than BT_STACK_COPY_YOUNG_NS; past them
 * the stack stays cut, counted.
 *
 * Global functions: the verifier checks each once on its own, not at every
 * path of the programs that call them (the sample handler is near its
 * instruction bound). Included by stacks_emit.bpf.h after unwind_walk.bpf.h.
 */
#ifndef BTRACE_STACK_COPY_BPF_H
#define BTRACE_STACK_COPY_BPF_H

struct bt_stack_copy_buf { /* a struct bt_raw_stack_copy and its data at most */
	__u8 raw[sizeof(struct bt_raw_stack_copy) + BT_UNWIND_MAPS * sizeof(struct bt_unwind_map) +
		 BT_STACK_COPY_BYTES];
};

/* One per scratch slot (a sample can interrupt the waking program). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BT_STK_SLOTS);
	__type(key, __u32);
	__type(value, struct bt_stack_copy_buf);
} stack_copy_scratch SEC(".maps");

struct bt_stack_copy_budget {
	__u64 since; /* start of the current 100 ms */
	__u64 n;     /* copies in it */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_stack_copy_budget);
} stack_copy_budget SEC(".maps");

/* 1 if this CPU may copy one more stack of the current process now;
 * else 0, counted. Only young processes: each copy is a stack of its own
 * in the table, and an older process's next samples walk whole once the
 * table is in (a machine full of programs the recorder met at its start
 * filled the recorder's memory for copies with theirs). */
__noinline int bt_stack_copy_budget(void)
{
	__u32 zero = 0;
	struct bt_stack_copy_budget *q = bpf_map_lookup_elem(&stack_copy_budget, &zero);
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns();

	if (!q || !ss || !t)
		return 0;
	if (now - BPF_CORE_READ(t, group_leader, start_time) > BT_STACK_COPY_YOUNG_NS) {
		__sync_fetch_and_add(&ss->unw_copy_old, 1);
		return 0;
	}
	if (now - q->since >= 100000000ull) {
		q->since = now;
		q->n = 0;
	}
	if (q->n >= BT_STACK_COPY_RATE) {
		__sync_fetch_and_add(&ss->unw_copy_rate, 1);
		return 0;
	}
	q->n++;
	return 1;
}

/* The copy of the current task's stack for the definition `hash` of
 * nframes frames just sent from scratch slot `slot`. */
__noinline int bt_stack_copy_send(__u64 hash, __u32 slot, __u32 nframes)
{
	struct bt_stack_buf *b = bpf_map_lookup_elem(&stack_scratch, &slot);
	struct bt_stack_copy_buf *cb = bpf_map_lookup_elem(&stack_copy_scratch, &slot);
	struct bt_raw_stack_copy *c = (void *)cb;
	struct bt_stack_stats *ss = bt_stack_stats_get();
	struct task_struct *t = bpf_get_current_task_btf();
	struct bt_unwind_proc *p;
	__u32 tgid, cpu, np, moff, len;
	__u64 sp, pid_tgid = bpf_get_current_pid_tgid();
	void *ring;

	if (!b || !cb || !ss || !t)
		return 0;
	tgid = pid_tgid >> 32;
	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!p)
		return 0;
	np = p->n < BT_UNWIND_MAPS ? p->n : BT_UNWIND_MAPS;
	moff = np * sizeof(struct bt_unwind_map);
	if (moff > BT_UNWIND_MAPS * sizeof(struct bt_unwind_map))
		return 0;
	if (bpf_probe_read_kernel(c->data, moff, p->m))
		return 0;
	/* 8 KiB from sp; nearer the stack's top, up to the end of the page
	 * after sp's, then of sp's own (a read past the top fails whole). */
	sp = b->stop[1];
	len = BT_STACK_COPY_BYTES;
	if (bpf_probe_read_user(c->data + moff, len, (void *)sp)) {
		len = 8192 - (sp & 4095);
		if (len > BT_STACK_COPY_BYTES || bpf_probe_read_user(c->data + moff, len, (void *)sp)) {
			len = 4096 - (sp & 4095);
			if (len > BT_STACK_COPY_BYTES || bpf_probe_read_user(c->data + moff, len, (void *)sp))
				len = 0; /* nothing readable: finished as "copy too short" */
		}
	}
	cpu = bpf_get_smp_processor_id();
	c->h.ts_ns = bpf_ktime_get_boot_ns();
	c->h.seq = 0;
	c->h.tid = (__u32)pid_tgid;
	c->h.tgid = tgid;
	c->h.cpu = cpu;
	c->h.type = BT_RAW_STACK_COPY;
	c->hash = hash;
	c->pc = b->stop[0];
	c->sp = sp;
	c->bp = b->stop[2];
	c->nframes = nframes;
	c->nmaps = (__u16)np;
	c->len = (__u16)len;
	ring = bpf_map_lookup_elem(&rings, &cpu);
	if (!ring || bpf_ringbuf_output(ring, c, sizeof(*c) + (__u64)moff + len, BPF_RB_NO_WAKEUP)) {
		__sync_fetch_and_add(&ss->unw_copy_drops, 1);
		return 0;
	}
	__sync_fetch_and_add(&ss->unw_copies, 1);
	return 0;
}
#endif
