// SPDX-License-Identifier: MIT
/*
 * record_ctl.c - what a running recorder answers on its control socket:
 * status, dump [-o FILE], resize SIZE, stop (and ping, used by `ctl` to find
 * live recorders). Runs on the control thread; every change it makes goes
 * through the same thread-safe paths as the rest of the recorder (bt_resize,
 * the serialized dump writer, a signal to the main loop).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btrace_buffer.h"
#include "live_window.h"
#include "loader.h"
#include "probe_table.h"
#include "recorder.h"
#include "stack_table.h"
#include "py_codes.h"
#include "stack_copies.h"
#include "unwind_procs.h"
#include "stack_symbols.h"
#include "symbol_cache.h"
#include "record_triggers.h"
#include "dump_mgmt.h"
#include "app_registry.h"
#include "uprobes.h"
#include "util.h"
#include "dump.h"
#include "cold_tier.h"
#include "cold_pump.h"
#include "ctl.h"
#include "unwind_cache.h"

static const char *const group_names[BT_GROUP_MAX] = { "sched", "irq", "power", "syscalls", "uprobe", "stacks" };

/* Resident set of this process, from /proc (what `ps` shows). */
static uint64_t rss_bytes(void)
{
	unsigned long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* SIZE is the memory budget as -m gives it: with a cold tier, split as at
 * start (recorder_budget_split), and the most it may be is --max-size. */
static int do_resize(struct recorder *r, int argc, char **argv, FILE *out, char *why, size_t whylen)
{
	char e[256] = "", a[32], b2[32], c[32], d[32];
	uint64_t size, raw, cold, t0, rss0;
	struct recorder_budget before, after;
	struct bt_stats bs;
	int err;

	if (argc != 2) {
		snprintf(why, whylen, "usage: resize SIZE (e.g. resize 256M)");
		return -EINVAL;
	}
	err = parse_size(argv[1], &size);
	if (err) {
		snprintf(why, whylen, "bad size '%s': give a positive size like 64M or 1G", argv[1]);
		return -EINVAL;
	}
	recorder_budget_now(r, &before);
	if (size > before.max) {
		snprintf(why, whylen, "%s is over the maximum %s reserved at start: restart the recorder with --max-size",
			 argv[1], format_size(before.max, a, sizeof(a)));
		return -E2BIG;
	}
	recorder_budget_split(r, size, &raw, &cold);
	if (raw == 0 || (r->cold && cold < bt_cold_min_size(r->cold))) {
		if (r->cold)
			snprintf(why, whylen, "%s is below the smallest size: the buffer's part (%u%%) needs %s "
				 "(a slot of its active blocks), the cold tier's %s (a group)", argv[1], 100 - r->o->cold_pct,
				 format_size(bt_size_granule(r->buf), a, sizeof(a)),
				 format_size(bt_cold_min_size(r->cold), b2, sizeof(b2)));
		else
			snprintf(why, whylen, "%s is below the smallest size %s (a slot of the active blocks)", argv[1],
				 format_size(bt_size_granule(r->buf), a, sizeof(a)));
		return -EINVAL;
	}
	rss0 = rss_bytes();
	t0 = bt_now_ns();
	/* The buffer cannot swap its memory while a dump copies it (the
	 * resize would time out): wait for that copy, not for the dump, which
	 * goes on from its copy and from the tier (whose own lock keeps its
	 * read whole; a shrink drops its oldest groups, before or after). */
	pthread_mutex_lock(&r->buf_swap);
	/* A shrink drops the buffer's oldest slots, which the compressor
	 * takes only once they are three quarters of a turn old: it takes them now,
	 * or the window would have a hole between the tier and the buffer. */
	if (r->cold_pump && raw < before.raw) {
		bt_buffer_stats(r->buf, &bs);
		int n = bt_cold_pump_catch_up(r->cold_pump, raw / bs.block_size);
		if (n < 0)
			bt_warn("cold tier: before a shrink: %s: older history may have a gap", strerror(-n));
	}
	err = bt_resize(r->buf, raw, 2000, e, sizeof(e));
	if (!err && r->cold)
		err = bt_cold_resize(r->cold, cold, e, sizeof(e));
	pthread_mutex_unlock(&r->buf_swap);
	if (err) {
		snprintf(why, whylen, "resize to %s failed: %s", argv[1], e[0] ? e : strerror(-err));
		return err;
	}
	recorder_budget_now(r, &after);
	bt_buffer_stats(r->buf, &bs);
	fprintf(out, "resized %s -> %s in %.1f ms (granule %s)\n", format_size(before.size, a, sizeof(a)),
		format_size(after.size, b2, sizeof(b2)), (double)(bt_now_ns() - t0) / 1e6,
		format_size(bt_size_granule(r->buf), c, sizeof(c)));
	if (r->cold)
		fprintf(out, "split: buffer %s, cold tier %s\n", format_size(after.raw, a, sizeof(a)),
			format_size(after.cold, b2, sizeof(b2)));
	fprintf(out, "buffer memory %s, recorder resident %s (was %s)\n", format_size(bs.resident, a, sizeof(a)),
		format_size(rss_bytes(), d, sizeof(d)), format_size(rss0, b2, sizeof(b2)));
	return 0;
}

static int do_dump(struct recorder *r, int argc, char **argv, FILE *out, char *why, size_t whylen)
{
	const char *path = NULL;
	char written[4096];
	int err;

	if (bt_ctl_dump_args(argc, argv, &path))
		return bt_errf(why, whylen, EINVAL, "%s", BT_CTL_DUMP_USAGE);
	if (path && path[0] != '/') {
		snprintf(why, whylen, "give an absolute path to dump -o (the recorder runs in another directory)");
		return -EINVAL;
	}
	/* An existing path is refused by recorder_write_dump, under the dump lock. */
	err = recorder_write_dump(r, "ctl", path, written, sizeof(written), why, whylen);
	if (err)
		return err;
	fprintf(out, "%s\n", written);
	return 0;
}

/* Runs of our programs the kernel skipped: no event, no seq, no gap. */
static void print_prog_misses(struct recorder *r, FILE *out)
{
	struct bt_prog_miss *pm = NULL;
	size_t n = recorder_prog_misses(r, &pm);
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += pm[i].misses;
	fprintf(out, "program runs skipped by the kernel: %" PRIu64 " (%zu programs)", total, n);
	for (size_t i = 0; i < n; i++)
		if (pm[i].misses)
			fprintf(out, " (%s %" PRIu64 ")", pm[i].name, pm[i].misses);
	fputc('\n', out);
	free(pm);
}

/* What the background symbol loading has done (a dump names frames only
 * from loaded files). */
static void print_symbols(struct recorder *r, FILE *out)
{
	struct bt_symcache_stats c;
	char a[32], b[32];

	if (!r->symbolizer)
		return;
	bt_symbolizer_stats(r->symbolizer, &c);
	fprintf(out, "symbols: %" PRIu64 " files seen, %" PRIu64 " loaded, %" PRIu64 " unreadable, %" PRIu64
		" not loaded yet, %" PRIu64 " closed for room; %s of %s (--symbol-cache)\n",
		c.files, c.loaded - c.evicted, c.failed, c.files - (c.loaded - c.evicted) - c.failed, c.evicted,
		format_size(c.bytes, a, sizeof(a)), format_size(c.max_bytes, b, sizeof(b)));
	if (r->o->no_source_lines)
		return;
	fprintf(out, "source lines: %" PRIu64 " lookups ahead of the dumps, %" PRIu64
		" new frames not looked up (more than the queue holds); %" PRIu64 " DWARF units the dumps decoded themselves\n",
		c.lines_ahead, c.lines_dropped, c.dump_units);
}

/* The unwind rules the walker cannot follow: how many, and the binaries
 * with the most (docs/unwinding.md). */
static void print_unsupported(const struct bt_unwinder_stats *us, FILE *out)
{
	fprintf(out, "unwind rules: %" PRIu64 " address ranges in %" PRIu64 " binaries not followed (frame pointers there), %"
		PRIu64 " rows with the CFA on a register only the leaf frame has", us->unsupported, us->unsupported_bins,
		us->leaf_rows);
	for (size_t i = 0; i < sizeof(us->unsupp) / sizeof(us->unsupp[0]) && us->unsupp[i].path[0]; i++) {
		char esc[4 * sizeof(us->unsupp[0].path) + 1];
		fprintf(out, "%s%s: %u not followed, %u leaf only", i ? "; " : "; most in ",
			bt_escape_text(us->unsupp[i].path, sizeof(us->unsupp[0].path), esc, sizeof(esc)),
			us->unsupp[i].ranges, us->unsupp[i].leaf_rows);
	}
	fputc('\n', out);
}

/* The stack table and every stack not taken or not stored. */
static void print_stacks(struct recorder *r, FILE *out)
{
	struct bt_stack_stats ks;
	struct bt_stack_counts c;

	if (!r->stacks) {
		fprintf(out, "stacks: off\n");
		return;
	}
	bt_stack_table_counts(r->stacks, &c);
	if (bt_loader_read_stack_stats(r->loader, &ks))
		memset(&ks, 0, sizeof(ks));
	fprintf(out, "stacks: %" PRIu64 " distinct (max %u), sampling %u Hz, %" PRIu64 " samples; lost: %" PRIu64
		" table full, %" PRIu64 " ring full, %" PRIu64 " kernel and %" PRIu64 " user stack errors; %" PRIu64
		" off-CPU blocks below --offcpu-min, %" PRIu64 " not followed; %" PRIu64
		" reclaimed (no event in the buffer named them), %" PRIu64
		" while the table was full (the stacks named longest ago; their events say reclaimed); %" PRIu64
		" pre-exec stacks named from the parent's maps\n",
		c.stacks, r->o->max_stacks ? r->o->max_stacks : BT_DEFAULT_MAX_STACKS, r->o->sample_hz, (uint64_t)ks.samples,
		c.overflow, (uint64_t)ks.def_drops, (uint64_t)ks.kernel_err, (uint64_t)ks.user_err, (uint64_t)ks.offcpu_short,
		(uint64_t)ks.offcpu_nomem, c.reclaimed - c.evicted, c.evicted, c.pre_exec);
	print_symbols(r, out);
	if (r->unwinder) {
		struct bt_unwinder_stats us;
		int cerr;
		uint64_t cfail = bt_unwind_cache_failures(r->unwind_cache, &cerr);
		char cwhy[160] = "";

		bt_unwinder_stats(r->unwinder, &us);
		if (cfail)
			snprintf(cwhy, sizeof(cwhy), " (latest: %s)", strerror(cerr));
		fprintf(out, "unwinding: %" PRIu64 " user stacks walked; ended early: %" PRIu64 " process not loaded yet (leaf only), %"
			PRIu64 " no executable mapping, %" PRIu64 " JIT, %" PRIu64 " signal frame, %" PRIu64
			" bad frame; %" PRIu64 " frames by frame pointer; tables: %" PRIu64 " binaries (%" PRIu64
			" from the cache, %" PRIu64 " stored in it, %" PRIu64 " refused, %" PRIu64 " not stored%s), %" PRIu64
			" of %" PRIu64 " rows, %" PRIu64 " binaries over --unwind-mem, %" PRIu64 " without .eh_frame, %"
			PRIu64 " processes over the map; %s %.3f s (%.3f s of it compiling or loading tables); "
			"%" PRIu64 " walks ended at a file whose table was being built; %" PRIu64 " new executable mappings "
			"kept (%" PRIu64 " over the per-process bound), %" PRIu64 " execs (%" PRIu64 " over the map); %" PRIu64
			" files asked for (%" PRIu64 " could not be opened); %" PRIu64 " binaries past their first build"
			" budget waiting for a slow build, %" PRIu64 " refused%s\n",
			(uint64_t)ks.unw_walks, (uint64_t)ks.unw_no_proc, (uint64_t)ks.unw_no_map, (uint64_t)ks.unw_anon,
			(uint64_t)ks.unw_signal, (uint64_t)ks.unw_bad, (uint64_t)ks.unw_fp, us.binaries, us.cache_hits, us.cache_stored, us.cache_bad, cfail, cwhy, us.rows,
			us.max_rows, us.mem_full, us.no_eh_frame, us.procs_full,
			us.ready_ns ? "running processes loaded in" : "loading the running processes, so far",
			(double)(us.ready_ns ? us.ready_ns : us.run_ns) / 1e9, (double)us.build_ns / 1e9,
			(uint64_t)ks.unw_pending, (uint64_t)ks.unw_maps_new, (uint64_t)ks.unw_maps_full,
			(uint64_t)ks.unw_execs, (uint64_t)ks.unw_execs_full, us.files_asked, us.files_unopened,
			us.slow, us.refused, us.files_waiting ? "; tables being built" : "");
		struct bt_stack_copy_counts cc;
		bt_loader_copy_counts(r->loader, &cc);
		fprintf(out, "stack copies: %" PRIu64 " taken where a walk stopped at a table not built yet, %" PRIu64
			" walked on to the outermost frame, %" PRIu64 " walked on and cut again, %" PRIu64
			" walked after waiting too long, %" PRIu64 " waiting, %" PRIu64 " whose stack had left the table; "
			"not copied or dropped: %" PRIu64 " over the rate bound, %" PRIu64 " ring full, %" PRIu64
			" over the memory bound, %" PRIu64 " of processes older than 5 s\n",
			(uint64_t)ks.unw_copies, cc.done, cc.cut, cc.expired, cc.waiting, cc.gone, (uint64_t)ks.unw_copy_rate,
			(uint64_t)ks.unw_copy_drops, cc.mem + cc.bad, (uint64_t)ks.unw_copy_old);
		if (r->o->no_python_frames) {
			fprintf(out, "python frames: off (--no-python-frames)\n");
		} else {
			struct bt_pycode_stats pcs = { 0 };
			struct bt_pycodes *pc = bt_stack_table_pycodes(r->stacks);

			if (pc)
				bt_pycodes_stats(pc, &pcs);
			fprintf(out, "python frames: %" PRIu64 " CPython interpreters found (%" PRIu64 " of a version without offsets, %"
				PRIu64 " over the map); %" PRIu64 " stacks with Python frames, %" PRIu64 " frames; lost: %" PRIu64
				" stacks in an interpreter of an unknown version, %" PRIu64 " without a thread state found, %" PRIu64
				" walks cut by unreadable memory, %" PRIu64 " cut at the frame bound, %" PRIu64
				" code objects' names over the ring; %" PRIu64 " places in code named, %" PRIu64
				" with their code's first line (no line known for the instruction), %" PRIu64
				" not kept (table full), %" PRIu64 " malformed\n",
				us.py_interps, us.py_unknown, us.py_full, (uint64_t)ks.py_walks, (uint64_t)ks.py_frames,
				(uint64_t)ks.py_unknown, (uint64_t)ks.py_no_thread, (uint64_t)ks.py_unreadable, (uint64_t)ks.py_cut,
				(uint64_t)ks.py_code_drops, pcs.codes, pcs.first_line, pcs.full, pcs.malformed);
		}
		for (uint64_t i = us.nrefusals > BT_UNWINDER_NAMED ? us.nrefusals - BT_UNWINDER_NAMED : 0;
		     i < us.nrefusals; i++) {
			const struct bt_unwinder_refusal *x = &us.refusals[i % BT_UNWINDER_NAMED];
			char esc[4 * sizeof(x->path) + 1];
			fprintf(out, "unwind table refused: %s: %s\n",
				bt_escape_text(x->path, sizeof(x->path), esc, sizeof(esc)), x->why);
		}
		print_unsupported(&us, out);
	}
}

static void print_losses(struct recorder *r, FILE *out)
{
	size_t ncells = (size_t)r->ncpus * BT_GROUP_MAX;
	uint64_t *drops = calloc(ncells, sizeof(*drops)), g[BT_GROUP_MAX] = { 0 }, total = 0;
	struct bt_drain_stats ds;
	struct bt_stats bs;

	if (drops && bt_loader_read_cpu_state(r->loader, drops, NULL, NULL) == 0)
		for (size_t i = 0; i < ncells; i++) {
			g[i % BT_GROUP_MAX] += drops[i];
			total += drops[i];
		}
	free(drops);
	fprintf(out, "ring-buffer drops: %" PRIu64, total);
	for (int i = 0; i < BT_GROUP_MAX; i++)
		if (g[i])
			fprintf(out, " (%s %" PRIu64 ")", group_names[i], g[i]);
	fputc('\n', out);
	print_prog_misses(r, out);
	print_stacks(r, out);
	bt_loader_drain_stats(r->loader, &ds);
	bt_buffer_stats(r->buf, &bs);
	fprintf(out,
		"buffer: %" PRIu64 " entries (event batches) written, %" PRIu64 " rejected, %" PRIu64 " dropped; %" PRIu64
		" blocks used, %" PRIu64 " closed early, %" PRIu64 " skipped, %" PRIu64 " padding bytes, %" PRIu64
		" resizes\n",
		bs.entries_written, bs.entries_rejected + ds.rejected, bs.entries_dropped, bs.blocks_used,
		bs.blocks_closed, bs.blocks_skipped, bs.padding_bytes, bs.resizes);
}

static void print_cold(struct recorder *r, const struct bt_stats *bs, FILE *out)
{
	struct bt_cold_stats cs;
	char a[32], b2[32], c[32];
	double up = (double)(bt_now_ns() - r->start_ns);

	bt_cold_stats(r->cold, &cs);
	fprintf(out, "cold tier: %s:%d, %s, %u blocks held (%s of events in %s, %.2fx), %" PRIu64
		" blocks compressed, %" PRIu64 " evicted oldest first, %" PRIu64 " gaps (blocks overwritten "
		"before they were compressed), compressor CPU %.3fs, %" PRIu64 " passes (%" PRIu64 " woken by the drain)\n",
		bt_codec_name(cs.codec), cs.level, format_size(cs.size, a, sizeof(a)), cs.blocks,
		format_size(cs.blocks_in ? cs.raw_bytes_in / cs.blocks_in * cs.blocks : 0, b2, sizeof(b2)),
		format_size(cs.used, c, sizeof(c)), cs.stored_bytes_in ? (double)cs.raw_bytes_in / (double)cs.stored_bytes_in : 0.0,
		cs.blocks_in, cs.blocks_evicted, cs.gaps, (double)cs.cpu_ns / 1e9, cs.pumps, cs.nudges);
	/* What the tier adds: blocks no longer in the buffer. */
	uint64_t only = bt_cold_only_blocks(&cs, bs), hot = bs->blocks_used < bs->nblocks ? bs->blocks_used : bs->nblocks;
	fprintf(out, "cold tier share: %" PRIu64 " of %" PRIu64 " retained blocks only in the tier (%.1f%%); of the tier's, "
		"%" PRIu64 " compressed, %" PRIu64 " uncompressed (the budget paid for no more)\n", only,
		only + hot, only + hot ? 100.0 * (double)only / (double)(only + hot) : 0.0,
		cs.blocks - (cs.blocks_held_raw < cs.blocks ? cs.blocks_held_raw : cs.blocks), cs.blocks_held_raw);
	if (!cs.budget_ppm) {
		fprintf(out, "cold tier budget: none (--cold-cpu off), compressor %.2f%% of one CPU since start\n",
			up > 0 ? 100.0 * (double)cs.cpu_ns / up : 0.0);
		return;
	}
	/* copy_ns is apart from cpu_ns (cold_tier.h) */
	fprintf(out, "cold tier budget: %.2f%% of one CPU, compressor %.2f%% since start (and apart from it, copies "
		"past the budget %.3fs, %.2f%%); held back: %s (%" PRIu64 " passes stored blocks uncompressed", cs.budget_ppm / 1e4,
		up > 0 ? 100.0 * (double)cs.cpu_ns / up : 0.0, (double)cs.copy_ns / 1e9,
		up > 0 ? 100.0 * (double)cs.copy_ns / up : 0.0,
		cs.held_back_ago_ns < BT_COLD_BOUND_RECENT_NS ? "yes" : "no", cs.held_back);
	if (cs.held_back)
		fprintf(out, ", the last %.1fs ago", (double)cs.held_back_ago_ns / 1e9);
	fprintf(out, ")\n");
}

static int do_status(struct recorder *r, FILE *out)
{
	char a[32], b2[32], c[32], d[32], e[32], f[32];
	struct bt_seq_window w;
	struct bt_drain_stats ds;
	struct bt_stats bs;

	bt_buffer_stats(r->buf, &bs);
	bt_loader_drain_stats(r->loader, &ds);
	fprintf(out, "recorder pid %d, up %.1fs\n", (int)getpid(), (double)(bt_now_ns() - r->start_ns) / 1e9);
	struct recorder_budget mb;
	recorder_budget_now(r, &mb);
	/* The budget as the user gave it (-m, ctl resize); the tier's part is
	 * on its own line below. */
	fprintf(out, "buffer: %s (max %s), raw part %s, %u blocks of %s, %u active, memory %s, recorder resident %s\n",
		format_size(mb.size, a, sizeof(a)), format_size(mb.max, b2, sizeof(b2)),
		format_size(bs.size, f, sizeof(f)), bs.nblocks,
		format_size(bs.block_size, c, sizeof(c)), bs.active, format_size(bs.resident, d, sizeof(d)),
		format_size(rss_bytes(), e, sizeof(e)));
	/* The allocator's view of the rest of the resident set: what the
	 * tables hold, and what freed memory it keeps (weeks of dumps). */
	struct mallinfo2 mi = mallinfo2();
	fprintf(out, "heap: %s in use, %s free in the allocator, %s mapped apart\n",
		format_size(mi.uordblks, a, sizeof(a)), format_size(mi.fordblks, b2, sizeof(b2)),
		format_size(mi.hblkhd, c, sizeof(c)));
	fprintf(out, "events: %" PRIu64 " recorded, %" PRIu64 "/s\n", ds.events, atomic_load(&r->rate));
	uint64_t forced, held;
	bt_loader_wake_stats(r->loader, &forced, &held);
	fprintf(out, "drain: %" PRIu64 " passes, %u ms apart now (%u while events flow, longer when quiet); "
		"%" PRIu64 " quiet waits ended by an exec; %" PRIu64 " wakeups forced by a ring past %s (%" PRIu64
		" not repeated: the drain had not moved yet)\n", ds.wakeups, ds.wait_ms, ds.drain_ms, ds.exec_wakes,
		forced, format_size(bt_loader_wakeup_bytes(r->loader), a, sizeof(a)), held);
	/* How near the rings came to a reservation failing: the margin
	 * --ring-size leaves the drain. */
	uint64_t ring = bt_loader_ring_size_per_cpu(r->loader);
	fprintf(out, "rings: %s a CPU, the fullest a drain pass found %s (%.1f%%)\n", format_size(ring, a, sizeof(a)),
		format_size(ds.ring_peak, b2, sizeof(b2)), ring ? 100.0 * (double)ds.ring_peak / (double)ring : 0.0);
	/* How well the kernel batches system-call pairs (emit.bpf.h): up to
	 * BT_SYS_BATCH a record; anything else the CPU emits sends a batch
	 * out early. */
	if (ds.sys_pair_records)
		fprintf(out, "system calls: %" PRIu64 " pairs in %" PRIu64 " ring records (%.2f a record)\n",
			ds.sys_pairs, ds.sys_pair_records, (double)ds.sys_pairs / (double)ds.sys_pair_records);
	/* When on, the stacks line says the rate. */
	if (bt_loader_sampling_refused(r->loader))
		fprintf(out, "sampling: off, the kernel refused its perf events (%s): kernel.perf_event_paranoid "
			"above 2 needs CAP_SYS_ADMIN\n", strerror(bt_loader_sampling_refused(r->loader)));
	/* Kept by the drain as it writes: no read of the buffer. */
	if (bt_loader_live(r->loader))
		bt_live_window(bt_loader_live(r->loader), bs.blocks_used,
			       r->cold ? bt_cold_retained_span(bt_cold_kept_from(r->cold), &bs) : bs.nblocks, &w);
	else
		memset(&w, 0, sizeof(w));
	if (w.events) {
		fprintf(out, "window: %.3fs, %" PRIu64 " events retained\n", (double)(w.last_ts - w.first_ts) / 1e9,
			w.events);
		fprintf(out, "latest continuous window: %.3fs, %" PRIu64 " events (%" PRIu64 " seq gaps, %" PRIu64
			" events missing)\n",
			(double)(w.last_ts - w.cont_start_ts) / 1e9, w.cont_events, w.gaps, w.missing);
	} else {
		fprintf(out, "window: empty\n");
	}
	if (r->cold)
		print_cold(r, &bs, out);
	print_losses(r, out);
	/* r->lock, not dump_serial: a dump being written must not hold this up. */
	pthread_mutex_lock(&r->lock);
	fprintf(out, "dumps: %" PRIu64 " written, %" PRIu64 " failed, %" PRIu64 " skipped for lack of space, %" PRIu64
		" automatic skipped by the rate limit, %" PRIu64 " requests merged into a pending dump%s%s\n",
		r->ndumps, r->nfailed, r->nskipped, atomic_load_explicit(&r->triggers_suppressed, memory_order_relaxed),
		r->requests_merged, r->ndumps ? ", last " : "", r->ndumps ? r->last_path : "");
	/* What the hand-over kept and lost (recorder.c: dump_handed). */
	fprintf(out, "handover: %s%s\n", !r->handover ? "off (the buffer is private memory: a restart starts empty)" :
		r->ho_summary[0] ? "on; " : "on, nothing was handed to this start", r->ho_summary);
	if (r->handover && r->stacks)
		fprintf(out, "  stack table kept for the next start: %u stacks, every %d s (the last save took %.1f ms)%s\n",
			r->stacks_saved, RECORDER_STACKS_SAVE_S, (double)r->stacks_save_ns / 1e6,
			r->stacks_save_failed ? "; some saves failed (the log says why)" : "");
	if (r->ho_summary[0])
		fprintf(out, "  the window continues across it: %s\n",
			r->prior ? "dumps join the previous recorder's newest blocks (until this one has written the "
				   "buffer's size)" : "no longer (this recorder's own fill the buffer), or not at all");
	pthread_mutex_unlock(&r->lock);
	if (r->mgmt) /* its own lock: never waits for a dump */
		bt_dump_mgmt_status(r->mgmt, out);
	if (r->uprobes) {
		size_t n;
		struct bt_probe_desc *t = bt_uprobes_table_copy(r->uprobes, &n); /* the table is the dump writer's */

		fprintf(out, "probes: %zu\n", n);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "  %u %s (pid %d)%s\n", t[i].id, t[i].spec, t[i].pid,
				t[i].flags & BT_PROBE_ENDED ? " ended" : "");
		free(t);
	} else {
		fprintf(out, "probes: none\n");
	}
	recorder_triggers_status(r, out);
	if (r->apps) {
		size_t live, n = bt_apps_count(r->apps, &live);
		fprintf(out, "apps: %zu (%zu live)\n", n, live);
		bt_apps_status(r->apps, out);
	} else {
		fprintf(out, "apps: in-process tracing off\n");
	}
	return 0;
}

static int do_app_resize(struct recorder *r, int argc, char **argv, FILE *out, char *why, size_t whylen)
{
	uint64_t size;
	if (argc != 2) {
		snprintf(why, whylen, "usage: app-resize SIZE (e.g. app-resize 8M)");
		return -EINVAL;
	}
	if (!r->apps) {
		snprintf(why, whylen, "in-process tracing is off in this recorder (--no-apps)");
		return -ENOTSUP;
	}
	if (parse_size(argv[1], &size)) {
		snprintf(why, whylen, "bad size '%s': give a positive size like 8M", argv[1]);
		return -EINVAL;
	}
	int n = bt_apps_resize(r->apps, size, why, whylen);
	if (n < 0)
		return n;
	fprintf(out, "%d application buffer%s replaced; new applications get %s\n", n, n == 1 ? "" : "s", argv[1]);
	return 0;
}

/* Stop recording and execute the binary this recorder started from (the
 * file at that path now: a package installed since) on the same memfd:
 * its first dump is this history, reason "upgrade" (recorder.c). */
static int do_upgrade(struct recorder *r, FILE *out, char *why, size_t whylen)
{
	if (!r->handover) {
		snprintf(why, whylen, "the buffer is not in a memory file that outlives the recorder (run under systemd "
			 "or with --resume-fd): stop it and start the new binary instead");
		return -EINVAL;
	}
	if (!r->exe_path[0] || access(r->exe_path, X_OK)) {
		snprintf(why, whylen, "cannot execute %s: %s", r->exe_path[0] ? r->exe_path : "this recorder's binary",
			 strerror(r->exe_path[0] ? errno : ENOENT));
		return -ENOENT;
	}
	atomic_store_explicit(&r->exec_requested, 1, memory_order_relaxed); /* read after the SIGTERM's stop */
	kill(getpid(), SIGTERM);
	fprintf(out, "recorder %d runs %s again on its buffer: its history goes into a dump (reason upgrade)\n",
		(int)getpid(), r->exe_path);
	return 0;
}

int record_ctl_handler(void *ctx, int argc, char **argv, FILE *out, char *why, size_t whylen)
{
	struct recorder *r = ctx;
	static _Thread_local int prio_set;

	/* Requests answered at the drain's priority, the dump thread's: a
	 * dump being compressed otherwise starves an operator's status
	 * (6.9 s under TCG, test_ctl_concurrency). Requests are short. */
	if (!prio_set) {
		prio_set = 1;
		bt_thread_nice(BT_DRAIN_NICE, "control request thread");
	}

	/* Exact grammar: a word too many is an error, never ignored. */
	if ((!strcmp(argv[0], "ping") || !strcmp(argv[0], "status") || !strcmp(argv[0], "stop") ||
	     !strcmp(argv[0], "upgrade")) && argc != 1) {
		snprintf(why, whylen, "'%s' takes no arguments (got '%s')", argv[0], argv[1]);
		return -EINVAL;
	}
	if (strcmp(argv[0], "ping") == 0)
		return 0;
	if (strcmp(argv[0], "status") == 0)
		return do_status(r, out);
	if (strcmp(argv[0], "dump") == 0)
		return do_dump(r, argc, argv, out, why, whylen);
	if (strcmp(argv[0], "resize") == 0)
		return do_resize(r, argc, argv, out, why, whylen);
	if (strcmp(argv[0], "app-resize") == 0)
		return do_app_resize(r, argc, argv, out, why, whylen);
	if (strcmp(argv[0], "trigger") == 0)
		return record_ctl_trigger(r, argc, argv, out, why, whylen);
	if (strcmp(argv[0], "stop") == 0) {
		/* The main loop takes SIGTERM: final dump, detach, exit. */
		kill(getpid(), SIGTERM);
		fprintf(out, "stopping recorder %d\n", (int)getpid());
		return 0;
	}
	if (strcmp(argv[0], "upgrade") == 0)
		return do_upgrade(r, out, why, whylen);
	snprintf(why, whylen, "unknown command '%s' (status, dump, resize, app-resize, trigger, stop, upgrade)", argv[0]);
	return -EINVAL;
}
