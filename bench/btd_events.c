// SPDX-License-Identifier: MIT
/*
 * btd_events.c - the events of a btrace-bpf dump as plain text for
 * scripts/compare_analyze.py (the tracer comparison): one line per event in
 * the dump's time order,
 *
 *   CPU SEQ TS_NS TYPE TID A
 *
 * TYPE is enum bt_event_type (bpf/events.h); A is the system-call number for
 * sys_enter/sys_exit, the next tid for sched_switch, else 0. The first line
 * is "# ncpus N events M". Exit 0, 1 if the dump cannot be read, 2 on a usage
 * error.
 */
#include <stdio.h>
#include <inttypes.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"

int main(int argc, char **argv)
{
	const struct bt_dump_event *ev;
	struct bt_dump *d;
	char err[256];
	size_t n;

	if (argc != 2) {
		fprintf(stderr, "usage: btd_events DUMP\n");
		return 2;
	}
	d = bt_dump_open(argv[1], err, sizeof(err));
	if (!d) {
		fprintf(stderr, "btd_events: %s\n", err);
		return 1;
	}
	ev = bt_dump_events(d, &n);
	printf("# ncpus %u events %zu\n", bt_dump_header(d)->ncpus, n);
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		long long a = 0;

		if (h->type == BT_EV_SYS_ENTER || h->type == BT_EV_SYS_EXIT)
			a = ((const struct bt_ev_syscall *)h)->id;
		else if (h->type == BT_EV_SCHED_SWITCH)
			a = ((const struct bt_ev_sched_switch *)h)->next_tid;
		printf("%u %u %" PRIu64 " %u %u %lld\n", h->cpu, h->seq, (uint64_t)h->ts_ns, h->type,
		       h->tid, a);
	}
	bt_dump_close(d);
	return 0;
}
