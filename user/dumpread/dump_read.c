// SPDX-License-Identifier: MIT
/*
 * dump_read.c - the reader's dump (format: dump_format.h,
 * docs/dump-format.md): closing it, and what callers read of it (header,
 * tables, events in time order, application names and counters).
 *
 * Nothing in the file is trusted: every length, count and offset is checked
 * against what holds it before use, allocations are bounded by the file size
 * (and by zlib's maximum expansion for compressed bodies), and every event is
 * checked against the size of its type. A file that fails any check is
 * refused with a one-line reason; the caller never sees a partial dump.
 * Where: dump_open.c (the file, header, body, CRCs), dump_sections.c (each
 * section), dump_funcs_decode.c (function batches); dump_read_int.h is what
 * they share.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "cold_tier.h"
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "func_batch.h"
#include "dump_format.h"
#include "app_shm.h"
#include "event_names.h"
#include "dump_stacks.h"
#include "dump_read_int.h"
#include "errors.h"

__attribute__((format(printf, 4, 5))) void *btd_rerr(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bt_verrmsg(err, errlen, fmt, ap);
	va_end(ap);
	errno = e;
	return NULL;
}

void bt_dump_close(struct bt_dump *d)
{
	if (!d)
		return;
	if (d->body_map)
		munmap(d->body, d->body_map);
	else
		free(d->body);
	if (d->fd >= 0 && d->app_stream)
		close(d->fd);
	free(d->ablk_min);
	free(d->app_tgid);
	free(d->tasks);
	free(d->probes);
	free(d->rb_drops);
	free(d->rb_emitted);
	free(d->blocks);
	free(d->events);
	free(d->apps);
	free(d->app_names);
	free(d->triggers);
	free(d->fired);
	free(d->prog_misses);
	bt_dump_stacks_release(&d->stacks);
	free(d->funcs);
	free(d->func_events);
	free(d->seqrecs);
	free(d);
}

/* ---- accessors ----------------------------------------------------------- */

const struct bt_dump_stacks *bt_dump_stacks(const struct bt_dump *d)
{
	return d->seen_stacks ? &d->stacks : NULL;
}

const struct bt_dump_header *bt_dump_header(const struct bt_dump *d)
{
	return &d->hdr;
}

const struct bt_task *bt_dump_tasks(const struct bt_dump *d, size_t *n)
{
	*n = d->ntasks;
	return d->tasks;
}

const struct bt_probe_desc *bt_dump_probes(const struct bt_dump *d, size_t *n)
{
	*n = d->nprobes;
	return d->probes;
}

const uint64_t *bt_dump_rb_drops(const struct bt_dump *d)
{
	return d->rb_drops;
}

const uint64_t *bt_dump_rb_emitted(const struct bt_dump *d)
{
	return d->rb_emitted;
}

const struct bt_dump_cold *bt_dump_cold(const struct bt_dump *d)
{
	return d->cold.size ? &d->cold : NULL;
}

const struct bt_dump_handed *bt_dump_handed(const struct bt_dump *d)
{
	return d->is_handed ? &d->handed : NULL;
}

const struct bt_dump_restart *bt_dump_restart(const struct bt_dump *d)
{
	return d->restart.reason ? &d->restart : NULL;
}

void bt_dump_cold_share(const struct bt_dump *d, const struct bt_seq_window *w, struct bt_dump_cold_share *out)
{
	const struct bt_dump_cold *c = &d->cold;

	memset(out, 0, sizeof(*out));
	out->events = c->dump_events;
	out->window_events = w->events;
	out->share_events = w->events ? (double)c->dump_events / (double)w->events : 0;
	if (w->events && w->last_ts > w->cont_start_ts)
		out->window_s = (double)(w->last_ts - w->cont_start_ts) / 1e9;
	/* The tier's blocks are the oldest: its part of the window runs from
	 * the window's start to its newest event. */
	if (c->dump_events && c->last_ts > w->cont_start_ts)
		out->tier_window_s = (double)(c->last_ts - w->cont_start_ts) / 1e9;
	out->budget_bound = c->budget_ppm && c->held_ago_ns < BT_COLD_BOUND_RECENT_NS;
	if (c->dumped && c->dumped_raw <= c->dumped)
		out->share_compressed = (double)(c->dumped - c->dumped_raw) / (double)c->dumped;
}

const struct bt_stats *bt_dump_buffer_stats(const struct bt_dump *d)
{
	return &d->bst;
}

const struct bt_read_stats *bt_dump_read_stats(const struct bt_dump *d)
{
	return &d->rst;
}

const struct bt_dump_event *bt_dump_events(const struct bt_dump *d, size_t *n)
{
	*n = d->nevents;
	return d->events;
}

const struct bt_dump_block *bt_dump_blocks(const struct bt_dump *d, size_t *n)
{
	*n = d->nblocks;
	return d->blocks;
}

const struct bt_dump_trigger *bt_dump_triggers(const struct bt_dump *d, size_t *n)
{
	*n = d->ntriggers;
	return d->triggers;
}

const struct bt_trigger_fired *bt_dump_fired(const struct bt_dump *d, size_t *n)
{
	*n = d->nfired;
	return d->fired;
}

const struct bt_prog_miss *bt_dump_prog_misses(const struct bt_dump *d, size_t *n)
{
	*n = d->nprog_misses;
	return d->prog_misses;
}

uint64_t bt_dump_prog_misses_total(const struct bt_dump *d)
{
	uint64_t t = 0;
	for (size_t i = 0; i < d->nprog_misses; i++)
		t += d->prog_misses[i].misses;
	return t;
}

uint64_t bt_dump_unknown_events(const struct bt_dump *d)
{
	return d->unknown;
}

const struct bt_dump_app *bt_dump_apps(const struct bt_dump *d, size_t *n)
{
	*n = d->napps;
	return d->apps;
}

const char *bt_dump_app_event_name(const struct bt_dump *d, int32_t app, uint32_t name_id)
{
	if (app >= 0 && (size_t)app < d->napps && name_id >= BT_APP_FUNC_ID_BASE)
		return name_id - BT_APP_FUNC_ID_BASE < d->apps[app].nfuncs
			       ? d->apps[app].funcs[name_id - BT_APP_FUNC_ID_BASE].name
			       : NULL;
	if (app < 0 || (size_t)app >= d->napps || name_id == 0 || name_id > d->apps[app].nnames ||
	    !d->apps[app].names[name_id - 1][0])
		return NULL;
	return d->apps[app].names[name_id - 1];
}

uint64_t bt_dump_app_blocks(const struct bt_dump *d)
{
	return d->app_blocks;
}

const char *bt_app_counter_name(int i)
{
	static const char *const n[BT_APPC_MAX] = {
		[BT_APPC_BLOCKS_READ] = "blocks_read",   [BT_APPC_BLOCKS_BAD] = "blocks_bad",
		[BT_APPC_BLOCKS_LOST] = "blocks_lost",   [BT_APPC_BLOCKS_BUSY] = "blocks_busy",
		[BT_APPC_BLOCKS_EMPTY] = "blocks_empty", [BT_APPC_ENTRIES] = "events",
		[BT_APPC_DROPPED] = "app_dropped",       [BT_APPC_REJECTED] = "app_rejected",
		[BT_APPC_SKIPPED] = "app_skipped",       [BT_APPC_RACES] = "app_races",
		[BT_APPC_BUFFERS] = "buffers",           [BT_APPC_RESIZES] = "resizes",
		[BT_APPC_BUFFER_SIZE] = "buffer_size",   [BT_APPC_NAMES_BAD] = "names_bad",
		[BT_APPC_NAMES_LOST] = "names_lost", [BT_APPC_BLOCKS_PARTIAL] = "blocks_partial",
		[BT_APPC_EARLY_REFUSED] = "early_refused",
	};
	return i >= 0 && i < BT_APPC_MAX ? n[i] : NULL;
}
