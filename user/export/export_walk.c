// SPDX-License-Identifier: MIT
/*
 * export_walk.c - the output formats' shared event loop (see export_walk.h).
 */
#include <errno.h>
#include <stdio.h>
#include "export_walk.h"

int bt_export_walk(const struct bt_export_prep *p, const struct bt_export_opts *o, uint32_t ncpus,
		   const struct bt_export_visit *v, void *ctx, char *err, size_t errlen)
{
	size_t gi = 0, agi = 0, ti = 0;
	int r;

	for (size_t i = 0; i < p->nev; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		if (o->progress && i % BT_EXPORT_PROGRESS_EVERY == 0 && o->progress(i, p->nev, o->progress_ctx)) {
			snprintf(err, errlen, "interrupted");
			return -EINTR;
		}
		while (gi < p->ngaps && p->gaps[gi].index < i)
			gi++;
		for (; gi < p->ngaps && p->gaps[gi].index == i; gi++)
			if (p->gaps[gi].cpu < ncpus && (r = v->gap(ctx, &p->gaps[gi], h->ts_ns)) < 0)
				return r;
		if (p->ev[i].app >= 0) {
			for (; agi < p->nagaps && p->agaps[agi].index == i; agi++)
				if ((r = v->app_gap(ctx, &p->agaps[agi], h)) < 0)
					return r;
			r = v->app(ctx, &p->ev[i]);
		} else {
			r = v->kernel(ctx, &p->ev[i]);
		}
		if (r < 0)
			return r;
		for (; ti < p->ntends && p->tends[ti].index <= i; ti++)
			if (v->thread_end && (r = v->thread_end(ctx, p->tends[ti].tid, h->ts_ns)) < 0)
				return r;
		if (v->stop && v->stop(ctx))
			break;
	}
	return 0;
}
