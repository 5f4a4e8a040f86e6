// SPDX-License-Identifier: MIT
/*
 * sys_pairs.c - deferred sys_enter events, the user side (sys_pairs.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include "sys_pairs.h"

int bt_sys_landed_init(struct bt_sys_landed *l, uint32_t first, uint32_t count)
{
	l->first = first;
	l->count = count;
	l->cpu = calloc(count ? count : 1, sizeof(*l->cpu));
	return l->cpu ? 0 : -ENOMEM;
}

void bt_sys_landed_free(struct bt_sys_landed *l)
{
	free(l->cpu);
	l->cpu = NULL;
}

/* The entry of (seq, tid) among CPU i's, or -1. */
static int landed_find(const struct bt_sys_landed *l, uint32_t i, uint32_t seq, uint32_t tid)
{
	for (int k = 0; k < BT_SYS_LANDED_MAX; k++)
		if (l->cpu[i].state[k] != BT_LANDED_FREE && l->cpu[i].ev[k].h.seq == seq &&
		    l->cpu[i].ev[k].h.tid == tid)
			return k;
	return -1;
}

bool bt_sys_landed_dup_(struct bt_sys_landed *l, const struct bt_event_hdr *enter)
{
	uint32_t i = enter->cpu - l->first;
	int k = landed_find(l, i, enter->seq, enter->tid);

	if (k < 0)
		return false;
	bool stored = l->cpu[i].state[k] == BT_LANDED_STORED;
	l->cpu[i].state[k] = BT_LANDED_FREE; /* the kernel emits an enter once */
	l->cpu[i].live--;
	return stored;
}

int bt_sys_held_read(struct bt_sys_landed *l, int cpu_state_fd, uint32_t ncpus)
{
	struct bt_cpu_state *v;
	__u32 key = 0;
	int n = 0;

	if (!l->cpu || l->first + l->count > ncpus)
		return -EINVAL;
	v = calloc(2 * (size_t)ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* The kernel writes a slot while its CPU runs: read everything twice,
	 * keep what did not change in between. */
	if (bpf_map_lookup_elem(cpu_state_fd, &key, v) || bpf_map_lookup_elem(cpu_state_fd, &key, v + ncpus)) {
		n = -errno;
		free(v);
		return n;
	}
	for (uint32_t i = 0; i < l->count; i++) {
		uint32_t c = l->first + i;
		const struct bt_sys_pending *a = &v[c].sys, *b = &v[ncpus + c].sys;

		if (a->armed != 1 || memcmp(a, b, sizeof(*a)) != 0)
			continue;
		if (landed_find(l, i, a->seq, a->tid) >= 0)
			continue; /* known from an earlier read */
		uint32_t k = l->cpu[i].next;
		struct bt_ev_syscall *e = &l->cpu[i].ev[k];

		l->cpu[i].next = (k + 1) % BT_SYS_LANDED_MAX;
		if (l->cpu[i].state[k] == BT_LANDED_FREE)
			l->cpu[i].live++;
		l->cpu[i].state[k] = BT_LANDED_CANDIDATE;
		memset(e, 0, sizeof(*e));
		e->h.ts_ns = a->ts_ns;
		e->h.seq = a->seq;
		e->h.tid = a->tid;
		e->h.tgid = a->tgid;
		e->h.cpu = (__u16)c;
		e->h.type = BT_EV_SYS_ENTER;
		e->id = a->id;
		n++;
	}
	free(v);
	return n;
}

int bt_sys_held_take(struct bt_sys_landed *l, struct bt_ev_syscall *out)
{
	int n = 0;

	for (uint32_t i = 0; l->cpu && i < l->count; i++)
		for (int k = 0; k < BT_SYS_LANDED_MAX; k++)
			if (l->cpu[i].state[k] == BT_LANDED_CANDIDATE && n < (int)l->count) {
				l->cpu[i].state[k] = BT_LANDED_STORED;
				out[n++] = l->cpu[i].ev[k];
			}
	return n;
}
