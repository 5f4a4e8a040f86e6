/* SPDX-License-Identifier: MIT */
/*
 * maps.bpf.h - the maps every program that emits events shares: the per-CPU
 * ring buffers and the per-CPU state (seq, drops, emitted). record.bpf.c
 * owns them; uprobe.bpf.c declares the same definitions so its loader can
 * reuse record's maps (bpf_map__reuse_fd): one header keeps them identical.
 */
#ifndef BTRACE_MAPS_BPF_H
#define BTRACE_MAPS_BPF_H

#define BT_WAKEUP_CHECK_MASK 63 /* check the ring's fill every 64th event of a CPU */

/* The inner map prototype: the verifier checks every program against it, the
 * rings the loader puts in `rings` match it (only the size may differ). */
struct bt_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* possible CPUs, set by the loader */
	__type(key, __u32);
	__array(values, struct bt_ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bt_cpu_state);
} cpu_state SEC(".maps");

#endif
