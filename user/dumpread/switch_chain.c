// SPDX-License-Identifier: MIT
/* switch_chain.c - sched_switch chain breaks without a seq gap (see
 * switch_chain.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "switch_chain.h"

struct cpu_chain {
	uint32_t next;  /* next_tid of the CPU's last switch */
	int have;       /* a switch was seen */
	int gap;        /* a seq gap of the CPU since it */
};

static void note_tid(struct bt_switch_chain *o, uint32_t tid)
{
	for (size_t i = 0; i < o->ntids; i++)
		if (o->tids[i] == tid)
			return;
	if (o->ntids < BT_CHAIN_TIDS)
		o->tids[o->ntids++] = tid;
}

int bt_switch_chain(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_switch_chain *o)
{
	struct bt_seq_gap *gaps = NULL;
	size_t ngaps = 0, gi = 0;
	struct cpu_chain *cc;

	memset(o, 0, sizeof(*o));
	if (!n || !ncpus)
		return 0;
	cc = calloc(ncpus, sizeof(*cc));
	if (!cc || bt_seq_gaps(ev, n, ncpus, &gaps, &ngaps) < 0) {
		free(cc);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *h = ev[i].ev;
		if (ev[i].app >= 0 || h->cpu >= ncpus)
			continue;
		struct cpu_chain *c = &cc[h->cpu];
		/* gaps are sorted by the index of the first event after them */
		for (; gi < ngaps && gaps[gi].index <= i; gi++)
			cc[gaps[gi].cpu].gap = 1; /* the missing switch may be in it */
		if (h->type == BT_EV_PROCESS_EXEC) {
			/* A thread that execs takes the leader's tid (de_thread). */
			const struct bt_ev_task *t = (const void *)h;
			if (c->have && c->next == t->tid)
				c->next = h->tid;
			continue;
		}
		if (h->type != BT_EV_SCHED_SWITCH)
			continue;
		const struct bt_ev_sched_switch *s = (const void *)h;
		o->switches++;
		if (c->have && s->prev_tid != c->next) {
			o->breaks++;
			if (!c->gap) {
				o->unexplained++;
				note_tid(o, c->next);
			}
		}
		c->next = s->next_tid;
		c->have = 1;
		c->gap = 0;
	}
	free(gaps);
	free(cc);
	return 0;
}
