// SPDX-License-Identifier: MIT
/*
 * export_losses.c - every loss counter of a dump as "loss.NAME" keys, in
 * one order for both exporters (export_prep.h): ring-buffer drops, seq
 * gaps, buffer and dump-read losses, kernel-skipped runs, switch-chain
 * breaks, and per application its seq gaps and buffer losses.
 */
#include <stdio.h>
#include "export_prep.h"
#include "event_names.h"
#include "switch_chain.h"
#include "dump_stacks.h"

uint64_t bt_export_cpu_drops(const struct bt_export_prep *p, uint32_t cpu)
{
	const uint64_t *drops = bt_dump_rb_drops(p->d);
	uint64_t sum = 0;
	if (!drops || cpu >= p->hdr->ncpus)
		return 0;
	for (uint32_t g = 0; g < p->hdr->ngroups; g++)
		sum += drops[(size_t)cpu * p->hdr->ngroups + g];
	return sum;
}

void bt_export_losses(const struct bt_export_prep *p, void (*emit)(void *ctx, const char *key, uint64_t v),
		      void *ctx)
{
	const struct bt_dump_header *h = p->hdr;
	const struct bt_stats *bs = bt_dump_buffer_stats(p->d);
	const struct bt_read_stats *rs = bt_dump_read_stats(p->d);
	const uint64_t *drops = bt_dump_rb_drops(p->d);
	uint64_t total = 0;
	char k[96];

	for (uint32_t c = 0; drops && c < h->ncpus; c++)
		for (uint32_t g = 0; g < h->ngroups; g++) {
			uint64_t v = drops[(size_t)c * h->ngroups + g];
			const char *gn = bt_group_name((int)g);

			total += v;
			if (!v)
				continue;
			if (gn)
				snprintf(k, sizeof(k), "loss.rb_drops.cpu%u.%s", c, gn);
			else
				snprintf(k, sizeof(k), "loss.rb_drops.cpu%u.group%u", c, g);
			emit(ctx, k, v);
		}
	emit(ctx, "loss.rb_drops", total);
	emit(ctx, "loss.seq_gaps", p->win.gaps);
	emit(ctx, "loss.seq_missing", p->win.missing);
	emit(ctx, "loss.seq_dups", p->win.dups);
	emit(ctx, "loss.buffer_entries_rejected", bs->entries_rejected);
	emit(ctx, "loss.buffer_entries_dropped", bs->entries_dropped);
	emit(ctx, "loss.buffer_blocks_skipped", bs->blocks_skipped);
	emit(ctx, "loss.buffer_positions_stale", bs->positions_stale);
	emit(ctx, "loss.dump_blocks_lost", rs->blocks_lost);
	emit(ctx, "loss.dump_blocks_busy", rs->blocks_busy);
	emit(ctx, "loss.drain_rejected", h->drain_rejected);
	emit(ctx, "loss.unknown_events", bt_dump_unknown_events(p->d));
	const struct bt_dump_handed *ho = bt_dump_handed(p->d);
	if (ho) {
		emit(ctx, "loss.handed.blocks_refused", ho->blocks_refused);
		emit(ctx, "loss.handed.blocks_cut", ho->blocks_cut);
		emit(ctx, "loss.handed.batches_refused", ho->batches_refused);
		if (ho->tail_known)
			emit(ctx, "loss.handed.after_newest", ho->after_newest);
	}
	const struct bt_dump_restart *rst = bt_dump_restart(p->d);
	if (rst) {
		emit(ctx, "loss.restart.gaps", 1);
		emit(ctx, "loss.restart.not_recording_ns", rst->resumed_ts > rst->newest_ts ? rst->resumed_ts - rst->newest_ts : 0);
		emit(ctx, "loss.restart.blocks_left", rst->blocks_left);
		if (rst->lost_known)
			emit(ctx, "loss.restart.lost", rst->lost);
	}
	/* Events missing without a seq gap: runs the kernel skipped
	 * (PMIS; absent from dumps of older recorders) and switch-aways it
	 * never reported (sched_switch chain). */
	size_t npm;
	const struct bt_prog_miss *pm = bt_dump_prog_misses(p->d, &npm);
	if (pm) {
		emit(ctx, "loss.kernel_skipped_runs", bt_dump_prog_misses_total(p->d));
		for (size_t i = 0; i < npm; i++)
			if (pm[i].misses) {
				snprintf(k, sizeof(k), "loss.kernel_skipped_runs.%s", pm[i].name);
				emit(ctx, k, pm[i].misses);
			}
	}
	/* stacks: what the table, the kernel and the unwinder lost */
	const struct bt_dump_stacks *st = bt_dump_stacks(p->d);
	if (st) {
		static const struct { int c; const char *k; } sl[] = {
			{ BT_STKC_OVERFLOW, "loss.stacks.table_full" },
			{ BT_STKC_RECLAIMED_REFS, "loss.stacks.reclaimed" },
			{ BT_STKC_EVICTED, "loss.stacks.evicted_stacks" },
			{ BT_STKC_DEF_DROPS, "loss.stacks.ring_full" },
			{ BT_STKC_KERNEL_ERR, "loss.stacks.kernel_errors" },
			{ BT_STKC_USER_ERR, "loss.stacks.user_errors" },
			{ BT_STKC_UNDEFINED, "loss.stacks.frames_never_arrived" },
			{ BT_STKC_TRUNCATED, "loss.stacks.truncated" },
			{ BT_STKC_OFFCPU_NOMEM, "loss.stacks.offcpu_not_followed" },
			{ BT_STKC_JIT_UNNAMED, "loss.stacks.jit_frames_unnamed" },
			{ BT_STKC_PY_UNKNOWN, "loss.python.unknown_version" },
			{ BT_STKC_PY_NO_THREAD, "loss.python.no_thread_state" },
			{ BT_STKC_PY_UNREADABLE, "loss.python.unreadable" },
			{ BT_STKC_PY_CUT, "loss.python.cut" },
			{ BT_STKC_PY_CODE_DROPS, "loss.python.code_names_ring_full" },
			{ BT_STKC_PY_UNNAMED, "loss.python.frames_unnamed" },
			{ BT_STKC_UNW_NO_PROC, "loss.unwind.process_not_loaded" },
			{ BT_STKC_UNW_NO_MAP, "loss.unwind.no_executable_mapping" },
			{ BT_STKC_UNW_SIGNAL, "loss.unwind.signal_frame" },
			{ BT_STKC_UNW_BAD, "loss.unwind.bad_frame" },
			{ BT_STKC_UNW_NO_TABLE, "loss.unwind.frames_without_table" },
			{ BT_STKC_UNW_MEM_FULL, "loss.unwind.binaries_over_unwind_mem" },
			{ BT_STKC_UNW_NO_EH, "loss.unwind.binaries_without_eh_frame" },
			{ BT_STKC_UNW_PROCS_FULL, "loss.unwind.processes_over_map" },
			{ BT_STKC_UNW_MAPS_DROP, "loss.unwind.mappings_dropped" },
			{ BT_STKC_UNW_CACHE_FAILED, "loss.unwind.cache_store_failed" },
			{ BT_STKC_UNW_PENDING, "loss.unwind.table_being_built" },
			{ BT_STKC_UNW_FILES_UNOPENED, "loss.unwind.files_not_opened" },
			{ BT_STKC_UNW_REFUSED, "loss.unwind.binaries_refused" },
			{ BT_STKC_UNW_UNSUPPORTED, "loss.unwind.rules_not_followed" },
			{ BT_STKC_COPY_RATE, "loss.unwind.copies_over_rate" },
			{ BT_STKC_COPY_RING, "loss.unwind.copies_ring_full" },
			{ BT_STKC_COPY_MEM, "loss.unwind.copies_over_memory" },
			{ BT_STKC_COPY_WAITING, "loss.unwind.copies_waiting" },
			{ BT_STKC_COPY_OLD, "loss.unwind.copies_not_young" },
		};
		for (size_t i = 0; i < sizeof(sl) / sizeof(sl[0]); i++)
			if (sl[i].c < BT_STKC_UNW_WALKS || sl[i].c > BT_STKC_UNW_MAPS_DROP ||
			    st->counters[BT_STKC_UNW_MAX_ROWS])
				emit(ctx, sl[i].k, st->counters[sl[i].c]);
	}
	struct bt_switch_chain ch;
	if (bt_switch_chain(p->ev, p->nev, h->ncpus, &ch) == 0 && ch.switches)
		emit(ctx, "loss.switch_chain_breaks_without_gap", ch.unexplained);

	/* applications: their per-thread seq gaps and what their buffers lost;
	 * keyed by pid (the process track carries the name) */
	static const int app_loss[] = { BT_APPC_BLOCKS_BAD, BT_APPC_BLOCKS_LOST, BT_APPC_BLOCKS_BUSY,
					BT_APPC_DROPPED,    BT_APPC_REJECTED,    BT_APPC_SKIPPED,
					BT_APPC_NAMES_BAD,  BT_APPC_NAMES_LOST, BT_APPC_EARLY_REFUSED };
	uint64_t gaps = 0, missing = 0;
	for (size_t a = 0; a < p->napps; a++) {
		gaps += p->app_gaps ? p->app_gaps[a] : 0;
		missing += p->app_missing ? p->app_missing[a] : 0;
	}
	if (!p->napps)
		return;
	emit(ctx, "loss.app_seq_gaps", gaps);
	emit(ctx, "loss.app_seq_missing", missing);
	emit(ctx, "loss.app_unmatched_ends", p->app_unmatched_ends);
	emit(ctx, "loss.app_func_exits_without_entry", p->func_exits_dropped);
	for (size_t a = 0; a < p->napps; a++) {
		const struct bt_dump_app *x = &p->apps[a];
		char id[32];
		size_t b = 0;
		while (b < a && p->apps[b].pid != x->pid)
			b++;
		/* a pid seen twice (reused by another traced process): add the index */
		if (b < a)
			snprintf(id, sizeof(id), "%u-%zu", x->pid, a);
		else
			snprintf(id, sizeof(id), "%u", x->pid);
		snprintf(k, sizeof(k), "loss.app.%s.seq_gaps", id);
		emit(ctx, k, p->app_gaps ? p->app_gaps[a] : 0);
		snprintf(k, sizeof(k), "loss.app.%s.seq_missing", id);
		emit(ctx, k, p->app_missing ? p->app_missing[a] : 0);
		for (size_t i = 0; i < sizeof(app_loss) / sizeof(app_loss[0]); i++) {
			snprintf(k, sizeof(k), "loss.app.%s.%s", id, bt_app_counter_name(app_loss[i]));
			emit(ctx, k, x->counters[app_loss[i]]);
		}
	}
}
