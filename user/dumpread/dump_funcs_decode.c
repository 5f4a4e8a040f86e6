// SPDX-License-Identifier: MIT
/*
 * dump_funcs_decode.c - function batches (BT_EV_APP_FUNCS, written by
 * libbtrace's -finstrument-functions hooks) replaced by the entries and exits
 * they hold, each an application event on the kernel events' clock with its
 * thread's seq and its function's name id (from the application's sorted
 * AFUN table).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "dump_format.h"
#include "app_shm.h"
#include "event_names.h"
#include "dump_stacks.h"
#include "dump_read_int.h"

#define func_ev btd_func_ev
_Static_assert(sizeof(struct func_ev) == sizeof(struct bt_ev_app) + 8, "func_ev is a bt_ev_app");

uint32_t btd_func_name_id(const struct bt_dump_app *app, uint64_t addr)
{
	size_t lo = 0, hi = app->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (app->funcs[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < app->nfuncs && app->funcs[lo].addr == addr ? BT_APP_FUNC_ID_BASE + (uint32_t)lo : 0;
}

const char *bt_dump_app_func_name(const struct bt_dump *d, int32_t app, uint64_t addr)
{
	if (app < 0 || (size_t)app >= d->napps)
		return NULL;
	uint32_t id = btd_func_name_id(&d->apps[app], addr);
	return id ? d->apps[app].funcs[id - BT_APP_FUNC_ID_BASE].name : NULL;
}

/* Replace each function batch by the entries and exits it holds, on the
 * kernel events' clock, each with the thread's seq and its function's name. */
void btd_link_funcs(struct bt_dump *d)
{
	for (size_t i = 0; i < d->napps; i++)
		if (d->apps[i].funcs)
			d->apps[i].funcs = d->funcs + ((uintptr_t)d->apps[i].funcs - 1);
}

int btd_decode_funcs(struct bt_dump *d, char *err, size_t errlen)
{
	size_t total = 0, nb = 0;
	btd_link_funcs(d);
	for (size_t i = 0; i < d->nevents; i++)
		if (d->events[i].ev->type == BT_EV_APP_FUNCS) {
			total += (size_t)bt_funcs_count((const void *)d->events[i].ev, d->events[i].len);
			nb++;
		}
	if (!nb)
		return 0;
	struct bt_func_rec *rec = malloc((total + 1) * sizeof(*rec));
	struct func_ev *out = calloc(total + 1, sizeof(*out));
	struct bt_dump_event *evs = malloc((d->nevents - nb + total + 1) * sizeof(*evs));
	if (!rec || !out || !evs) {
		free(rec);
		free(out);
		free(evs);
		return btd_rerr(err, errlen, ENOMEM, "out of memory"), -ENOMEM;
	}
	size_t k = 0, m = 0;
	for (size_t i = 0; i < d->nevents; i++) {
		const struct bt_dump_event *e = &d->events[i];
		if (e->ev->type != BT_EV_APP_FUNCS) {
			evs[m++] = *e;
			continue;
		}
		const struct bt_ev_app_funcs *f = (const void *)e->ev;
		int64_t n = bt_funcs_count(f, e->len);
		struct bt_dump_app *app = e->app >= 0 && (size_t)e->app < d->napps ? &d->apps[e->app] : NULL;
		bt_funcs_decode(f, e->len, rec);
		for (int64_t j = 0; j < n; j++, k++) {
			struct func_ev *x = &out[k];
			x->h = f->h;
			x->h.ts_ns = rec[j].ts_ns;
			x->h.seq = rec[j].seq;
			x->h.type = rec[j].exit ? BT_EV_APP_FUNC_EXIT : BT_EV_APP_FUNC_ENTRY;
			x->nargs = 1;
			x->name_id = app ? btd_func_name_id(app, rec[j].addr) : 0;
			x->addr = (int64_t)rec[j].addr;
			evs[m++] = (struct bt_dump_event){ .ev = &x->h, .len = sizeof(*x), .block_core = e->block_core,
							   .app = e->app };
			if (app)
				app->func_records++;
		}
	}
	free(rec);
	free(d->events);
	d->events = evs;
	d->nevents = m;
	d->cap_events = m;
	d->func_events = (uint8_t *)out;
	return 0;
}
