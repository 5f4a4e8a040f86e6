// SPDX-License-Identifier: MIT
/*
 * app_capture.c - every application buffer taken for a dump at one moment
 * (bt_apps_capture), written into it later (bt_apps_capture_write).
 *
 * A dump used to read each application's blocks one by one, compressing
 * each before the next, while the application kept writing: at full speed
 * it overwrote most of its buffer before the dump got there. The capture
 * copies every buffer first (bt_app_capture: one bulk copy per slot, oldest
 * round first), under the registry's lock, and then drains the names the
 * applications sent; validation, compression and symbolization of function
 * names run on the copy afterwards, without the lock, while they go on
 * writing.
 */
#include "app_registry_int.h"
#include "dump.h"
#include "dump_format.h"
#include "func_batch.h"
#include "func_names.h"
#include "util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* One application as it was at the capture. */
struct cap_app {
	uint32_t pid;
	uint64_t registered_ts;            /* with pid: finds it again for its function names */
	struct bt_dump_app row;            /* its row of the APPS table (names: ours) */
	char (*names)[BTD_APP_NAME_LEN];   /* copy of its interned names */
	struct bt_app_capture bufs[MAX_BUFS];
	uint32_t nbufs;
};

struct bt_apps_capture {
	struct bt_apps *reg;
	struct cap_app *apps;
	size_t napps;
	uint64_t copy_ns;
};

/* Under lock: copy every buffer of a, with the loss counters its writers
 * keep in each (read right after that buffer's copy). */
static int capture_buffers(struct app *a, struct cap_app *ca, uint64_t *copy_ns)
{
	uint64_t *cnt = ca->row.counters;

	for (uint32_t b = 0; b < a->nbufs; b++) {
		int err = bt_app_capture(&a->bufs[b].v, &ca->bufs[b]);
		if (err)
			return err;
		ca->nbufs++;
		*copy_ns += ca->bufs[b].copy_ns;
		struct bt_app_shm *sh = (struct bt_app_shm *)a->bufs[b].v.base;
		int bogus = 0; /* clamped: the sums of four buffers stay far from wrapping */
		cnt[BT_APPC_DROPPED] += app_count(atomic_load_explicit(&sh->stats.dropped, memory_order_relaxed), &bogus);
		cnt[BT_APPC_REJECTED] += app_count(atomic_load_explicit(&sh->stats.rejected, memory_order_relaxed), &bogus);
		cnt[BT_APPC_SKIPPED] += app_count(atomic_load_explicit(&sh->stats.skipped, memory_order_relaxed), &bogus);
		cnt[BT_APPC_RACES] += app_count(atomic_load_explicit(&sh->stats.races, memory_order_relaxed), &bogus);
	}
	return 0;
}

/* Under lock, after every buffer is copied: names registered while we
 * copied name events we copied. The count first: the library sends a name
 * before counting it, so every name counted here is in the socket by now. */
static int capture_row(struct bt_apps *r, struct app *a, struct cap_app *ca)
{
	uint64_t interned = bt_app_names_interned(a);
	struct bt_dump_app *d = &ca->row;

	bt_app_drain_input(r, a);
	d->counters[BT_APPC_NAMES_LOST] = bt_app_names_lost(a, interned);
	ca->pid = a->pid;
	ca->registered_ts = a->registered_ts;
	d->pid = a->pid;
	d->flags = a->flags;
	d->registered_ts = a->registered_ts;
	d->exit_ts = a->exit_ts;
	memcpy(d->name, a->name, sizeof(d->name));
	d->counters[BT_APPC_BUFFERS] = a->nbufs;
	d->counters[BT_APPC_RESIZES] = a->resizes;
	d->counters[BT_APPC_BUFFER_SIZE] = a->bufs[0].data_size;
	d->counters[BT_APPC_NAMES_BAD] = a->names_bad;
	d->counters[BT_APPC_EARLY_REFUSED] = a->early_refused != 0;
	if (a->nnames) {
		ca->names = malloc((size_t)a->nnames * BTD_APP_NAME_LEN);
		if (!ca->names)
			return -ENOMEM;
		memcpy(ca->names, a->names, (size_t)a->nnames * BTD_APP_NAME_LEN);
	}
	d->nnames = a->nnames;
	d->names = (const char(*)[BTD_APP_NAME_LEN])ca->names;
	return 0;
}

struct bt_apps_capture *bt_apps_capture(struct bt_apps *r)
{
	struct bt_apps_capture *c = calloc(1, sizeof(*c));
	int err = 0;

	if (!c)
		return NULL;
	c->reg = r;
	reg_lock(r);
	c->apps = calloc(r->napps ? r->napps : 1, sizeof(*c->apps));
	if (!c->apps)
		err = -ENOMEM;
	c->napps = c->apps ? r->napps : 0;
	for (size_t i = 0; i < c->napps && !err; i++)
		err = capture_buffers(r->apps[i], &c->apps[i], &c->copy_ns);
	for (size_t i = 0; i < c->napps && !err; i++)
		err = capture_row(r, r->apps[i], &c->apps[i]);
	reg_unlock(r, "a trigger's or dump's copy");
	if (err) {
		bt_apps_capture_free(c);
		errno = -err;
		return NULL;
	}
	return c;
}

uint64_t bt_apps_capture_copy_ns(const struct bt_apps_capture *c)
{
	return c ? c->copy_ns : 0;
}

void bt_apps_capture_free(struct bt_apps_capture *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->napps; i++) {
		for (uint32_t b = 0; b < c->apps[i].nbufs; b++)
			bt_app_capture_release(&c->apps[i].bufs[b]);
		free(c->apps[i].names);
	}
	free(c->apps);
	free(c);
}

/* ---- writing a capture into a dump ----------------------------------------- */

struct dump_ctx {
	struct bt_dump_sink *s;
	uint32_t app;
	int err;
	uint64_t *addrs; /* functions the dumped batches name (to symbolize) */
	size_t naddrs, cap;
	struct bt_func_rec *rec;
};

/* Make room for n more addresses: deduplicate, then grow. 0 or -1. */
static int addrs_room(struct dump_ctx *c, size_t n)
{
	if (c->naddrs + n <= c->cap)
		return 0;
	if (c->naddrs)
		qsort(c->addrs, c->naddrs, 8, bt_cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < c->naddrs; i++)
		if (!k || c->addrs[k - 1] != c->addrs[i])
			c->addrs[k++] = c->addrs[i];
	c->naddrs = k;
	if (c->naddrs + n <= c->cap)
		return 0;
	size_t cap = (c->cap ? c->cap * 2 : 1024) + n;
	/* out of memory: those functions show addresses */
	uint64_t *x = realloc(c->addrs, cap * 8);
	if (!x)
		return -1;
	c->addrs = x;
	struct bt_func_rec *r = realloc(c->rec, cap * sizeof(*r));
	if (!r)
		return -1;
	c->rec = r;
	c->cap = cap;
	return 0;
}

/* Collect the function addresses of a block's batches (deduplicated as
 * the list grows). */
static void note_funcs(struct dump_ctx *c, const struct bt_block_view *blk)
{
	uint32_t off = 0, len;
	const void *p;
	while ((p = bt_block_next(blk, &off, &len))) {
		const struct bt_ev_app_funcs *f = p;
		int64_t n;
		if (len < sizeof(*f) || f->h.type != BT_EV_APP_FUNCS || (n = bt_funcs_count(f, len)) <= 0)
			continue;
		if (addrs_room(c, (size_t)n) < 0)
			return;
		bt_funcs_decode(f, len, c->rec);
		for (int64_t i = 0; i < n; i++)
			c->addrs[c->naddrs++] = c->rec[i].addr;
	}
}

static int dump_block(const struct bt_block_view *blk, void *arg)
{
	struct dump_ctx *c = arg;
	c->err = bt_dump_sink_app_block(c->s, c->app, blk);
	note_funcs(c, blk);
	return c->err;
}

/* Under lock: the AFUN section of app i (after the table). */
static int dump_func_names(struct bt_dump_sink *s, struct app *a, uint32_t i, struct dump_ctx *c)
{
	if (!c->naddrs || !a->fnames)
		return 0;
	if (a->conn >= 0)
		bt_func_names_refresh(a->fnames); /* libraries loaded since */
	qsort(c->addrs, c->naddrs, 8, bt_cmp_u64);
	struct bt_func_name *t = malloc(c->naddrs * sizeof(*t));
	if (!t)
		return -ENOMEM;
	size_t n = 0;
	for (size_t k = 0; k < c->naddrs; k++) {
		if (n && t[n - 1].addr == c->addrs[k])
			continue;
		const char *name = bt_func_names_get(a->fnames, c->addrs[k]);
		if (name && *name)
			t[n++] = (struct bt_func_name){ c->addrs[k], name };
	}
	int err = n ? bt_dump_sink_app_funcs(s, i, t, n) : 0;
	free(t);
	return err;
}

/* The registry's application that was captured as ca, if it is still there
 * (an exited one may have been released since). Under lock. */
static struct app *find_app(struct bt_apps *r, const struct cap_app *ca)
{
	for (size_t i = 0; i < r->napps; i++)
		if (r->apps[i]->pid == ca->pid && r->apps[i]->registered_ts == ca->registered_ts)
			return r->apps[i];
	return NULL;
}

/* Function names of every application, from its mappings (registry lock). */
static int write_func_names(struct bt_apps_capture *c, struct bt_dump_sink *s, struct dump_ctx *fc)
{
	struct bt_apps *r = c->reg;
	int err = 0;

	reg_lock(r);
	for (size_t i = 0; i < c->napps && !err; i++) {
		struct app *a = find_app(r, &c->apps[i]);
		if (a)
			err = dump_func_names(s, a, (uint32_t)i, &fc[i]);
	}
	reg_unlock(r, "a dump's function names");
	return err;
}

int bt_apps_capture_write(void *arg, struct bt_dump_sink *s)
{
	struct bt_apps_capture *c = arg;
	struct bt_dump_app *t = calloc(c->napps ? c->napps : 1, sizeof(*t));
	struct dump_ctx *fc = calloc(c->napps ? c->napps : 1, sizeof(*fc));
	int err = 0;

	if (!t || !fc) {
		free(t);
		free(fc);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->napps && !err; i++) {
		struct cap_app *ca = &c->apps[i];
		struct bt_dump_app *d = &t[i];
		*d = ca->row;
		fc[i].s = s;
		fc[i].app = (uint32_t)i;
		for (uint32_t b = 0; b < ca->nbufs && !err; b++) {
			struct bt_app_read_stats st;
			err = bt_app_capture_read(&ca->bufs[b], dump_block, &fc[i], &st);
			d->counters[BT_APPC_BLOCKS_READ] += st.blocks_read;
			d->counters[BT_APPC_BLOCKS_BAD] += st.blocks_bad;
			d->counters[BT_APPC_BLOCKS_LOST] += st.blocks_lost;
			d->counters[BT_APPC_BLOCKS_BUSY] += st.blocks_busy;
			d->counters[BT_APPC_BLOCKS_EMPTY] += st.blocks_empty;
			d->counters[BT_APPC_BLOCKS_PARTIAL] += st.blocks_partial;
			d->counters[BT_APPC_ENTRIES] += st.entries;
		}
	}
	if (!err)
		err = bt_dump_sink_apps(s, t, c->napps);
	if (!err)
		err = write_func_names(c, s, fc);
	for (size_t i = 0; i < c->napps; i++) {
		free(fc[i].addrs);
		free(fc[i].rec);
	}
	free(fc);
	free(t);
	return err;
}
