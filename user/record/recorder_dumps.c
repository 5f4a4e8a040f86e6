// SPDX-License-Identifier: MIT
/*
 * recorder_dumps.c - writing the recorder's dumps, one at a time (for the
 * dump thread and for the control socket); around each, the free-space
 * check, the quota, the manifest and --on-dump (dump_mgmt.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "btrace_buffer.h"
#include "event_names.h"
#include "cold_tier.h"
#include "compact.h"
#include "dump.h"
#include "loader.h"
#include "tasks.h"
#include "stack_table.h"
#include "stack_copies.h"
#include "stack_symbols.h"
#include "unwind_procs.h"
#include "events.h"
#include "uprobes.h"
#include "util.h"
#include "recorder.h"
#include "ctl.h"
#include "app_registry.h"
#include "app_reader.h"
#include "record_triggers.h"
#include "dump_mgmt.h"
#include "dump_capture.h"
#include "log.h"
#include "unwind_cache.h"

/* What a dump not for a trigger waits for symbols at most. Its window is
 * copied by then, so the wait costs the file's latency only, while a file
 * of an exited process left unnamed is unnamed for good: on Debian's 6.1
 * under qemu TCG, 2 s left libc and the workload unnamed in test_stacks. */
#define SYMBOLS_SETTLE_MS 15000
/* DWARF work (source lines) a dump may do: a trigger's must be on disk
 * within a second of its trigger under load; one a user asked for may
 * take a little longer. Past it, frames go without lines, counted. */
#define LINES_TRIGGER_NS (100ull * 1000000)
#define LINES_OTHER_NS (1000ull * 1000000)

/* The dump's stack table section: the stack table as it is now (every stack an
 * event in the blocks already written names), the kernel side's counters,
 * names for every frame. Under dump_serial (the symbolizer's caches). */
static int write_stacks(void *ctx, struct bt_dump_sink *sink)
{
	struct recorder *r = ctx;
	struct bt_dump_stacks s;
	struct bt_stack_stats ks;
	struct bt_unwinder_stats us;
	struct bt_dump_unwlost lost[BT_UNWINDER_NAMED]; /* point into us */
	uint64_t t1 = bt_now_ns();
	int ret;

	if (!r->wr_stacks)
		return -ENOMEM;
	s = *r->wr_stacks; /* copied with the window (stacks_copy) */
	memset(r->wr_stacks, 0, sizeof(s));
	if (bt_loader_read_stack_stats(r->loader, &ks) == 0) {
		s.counters[BT_STKC_KERNEL_ERR] = ks.kernel_err;
		s.counters[BT_STKC_USER_ERR] = ks.user_err;
		s.counters[BT_STKC_DEF_DROPS] = ks.def_drops;
		s.counters[BT_STKC_OFFCPU_SHORT] = ks.offcpu_short;
		s.counters[BT_STKC_OFFCPU_NOMEM] = ks.offcpu_nomem;
		s.counters[BT_STKC_SAMPLES] = ks.samples;
		s.counters[BT_STKC_UNW_WALKS] = ks.unw_walks;
		s.counters[BT_STKC_UNW_NO_PROC] = ks.unw_no_proc;
		s.counters[BT_STKC_UNW_NO_MAP] = ks.unw_no_map;
		s.counters[BT_STKC_UNW_ANON] = ks.unw_anon;
		s.counters[BT_STKC_UNW_SIGNAL] = ks.unw_signal;
		s.counters[BT_STKC_UNW_BAD] = ks.unw_bad;
		s.counters[BT_STKC_UNW_FP] = ks.unw_fp;
		s.counters[BT_STKC_UNW_NO_TABLE] = ks.unw_no_table;
		s.counters[BT_STKC_UNW_PENDING] = ks.unw_pending;
		s.counters[BT_STKC_UNW_MAPS_DROP] = ks.unw_maps_full;
		s.counters[BT_STKC_UNW_PROCS_FULL] = ks.unw_execs_full;
		s.counters[BT_STKC_COPY_TAKEN] = ks.unw_copies;
		s.counters[BT_STKC_COPY_RATE] = ks.unw_copy_rate;
		s.counters[BT_STKC_COPY_RING] = ks.unw_copy_drops;
		s.counters[BT_STKC_COPY_OLD] = ks.unw_copy_old;
		s.counters[BT_STKC_PY_WALKS] = ks.py_walks;
		s.counters[BT_STKC_PY_FRAMES] = ks.py_frames;
		s.counters[BT_STKC_PY_UNKNOWN] = ks.py_unknown;
		s.counters[BT_STKC_PY_NO_THREAD] = ks.py_no_thread;
		s.counters[BT_STKC_PY_UNREADABLE] = ks.py_unreadable;
		s.counters[BT_STKC_PY_CUT] = ks.py_cut;
		s.counters[BT_STKC_PY_CODE_DROPS] = ks.py_code_drops;
	}
	{
		struct bt_stack_copy_counts cc;
		bt_loader_copy_counts(r->loader, &cc);
		s.counters[BT_STKC_COPY_DONE] = cc.done;
		s.counters[BT_STKC_COPY_CUT] = cc.cut;
		s.counters[BT_STKC_COPY_WAITING] = cc.waiting;
		s.counters[BT_STKC_COPY_MEM] = cc.mem + cc.bad;
		s.counters[BT_STKC_COPY_EXPIRED] = cc.expired;
	}
	if (r->unwinder) {
		bt_unwinder_stats(r->unwinder, &us);
		/* the binaries that lost their table, oldest first (UNWL) */
		for (uint64_t i = us.nrefusals > BT_UNWINDER_NAMED ? us.nrefusals - BT_UNWINDER_NAMED : 0;
		     i < us.nrefusals; i++) {
			lost[s.nlost].path = us.refusals[i % BT_UNWINDER_NAMED].path;
			lost[s.nlost++].why = us.refusals[i % BT_UNWINDER_NAMED].why;
		}
		s.lost = s.nlost ? lost : NULL;
		s.counters[BT_STKC_UNW_BINARIES] = us.binaries;
		s.counters[BT_STKC_UNW_ROWS] = us.rows;
		s.counters[BT_STKC_UNW_MAX_ROWS] = us.max_rows;
		s.counters[BT_STKC_UNW_MEM_FULL] = us.mem_full;
		s.counters[BT_STKC_UNW_NO_EH] = us.no_eh_frame;
		s.counters[BT_STKC_UNW_PROCS_FULL] += us.procs_full;
		s.counters[BT_STKC_UNW_MAPS_DROP] += us.maps_dropped;
		s.counters[BT_STKC_UNW_FILES_UNOPENED] = us.files_unopened;
		s.counters[BT_STKC_UNW_REFUSED] = us.refused;
		s.counters[BT_STKC_UNW_UNSUPPORTED] = us.unsupported;
		s.counters[BT_STKC_UNW_UNSUPPORTED_BINS] = us.unsupported_bins;
		s.counters[BT_STKC_UNW_LEAF_ROWS] = us.leaf_rows;
		s.counters[BT_STKC_PY_INTERPS] = us.py_interps;
		s.counters[BT_STKC_PY_UNKNOWN_BINS] = us.py_unknown + us.py_full;
		s.counters[BT_STKC_UNW_CACHE_FAILED] = bt_unwind_cache_failures(r->unwind_cache, NULL);
	}
	s.counters[BT_STKC_RECLAIMED_REFS] = bt_stack_births_reclaimed(r->wr_births) + r->wr_kind_mismatch;
	if (r->wr_kind_mismatch)
		bt_warn("%" PRIu64 " stack references of this dump named a stack of the other kind (its id was "
			"reused): written as reclaimed", r->wr_kind_mismatch);
	s.counters[BT_STKC_SAMPLE_HZ] = r->o->sample_hz;
	s.counters[BT_STKC_NO_SRCLINES] = r->o->no_source_lines != 0;
	/* A trigger's dump never waits for a file; one a user asked for (or
	 * the last) waits a little for the files just seen. */
	bt_symbolizer_settle(r->symbolizer, r->wr.n ? 0 : SYMBOLS_SETTLE_MS);
	ret = bt_symbolize(r->symbolizer, &s, r->wr.n ? LINES_TRIGGER_NS : LINES_OTHER_NS);
	r->wr_stacks_ns[1] = bt_now_ns() - t1;
	if (!ret)
		ret = bt_dump_sink_stacks(sink, &s);
	s.lost = NULL; /* ours, on the stack */
	s.nlost = 0;
	bt_stack_snapshot_free(&s);
	return ret;
}

static int write_dump(struct recorder *r, const char *reason, const struct bt_trigger_fired *fired,
		      const char *explicit_path, char *why, size_t whylen);

/* Manifest, quota and --on-dump for a dump just written (dump_mgmt.c). */
static void after_dump(struct recorder *r, const char *path, const struct bt_dump *sum, int in_dir,
		       const char *reason)
{
	struct bt_manifest_recorder rec = {
		.dumps_written = r->ndumps,
		.dumps_failed = r->nfailed,
		.dumps_rate_limited = atomic_load_explicit(&r->triggers_suppressed, memory_order_relaxed),
	};
	/* A trigger's hit is in the dump's TRIG section: the manifest reads it there. */
	if (r->mgmt)
		bt_dump_mgmt_after(r->mgmt, path, sum, in_dir, reason, NULL, &rec);
}

/* The last guard before the reader's check: an id whose stack in the
 * dump's table is of the other kind (or beyond it) names a stack freed and
 * handed on that the births did not see go (a bug: the table's
 * reclamation must outlive every retained event, the cold tier's too).
 * It says reclaimed, counted with those, rather than a refused dump. */
static uint32_t stack_id_of_kind(struct recorder *r, uint32_t id, uint16_t kind)
{
	const struct bt_dump_stacks *s = r->wr_stacks;

	if (!id || BT_STACK_ID_GONE(id) || !s)
		return id;
	if (id <= s->nstacks && (s->stacks[id - 1].flags & BT_STACK_F_UNDEFINED || s->stacks[id - 1].kind == kind))
		return id;
	r->wr_kind_mismatch++;
	return BT_STACK_RECLAIMED;
}

/* A stack event's ids as the dump writes them: those whose stack the full
 * table freed after the event say reclaimed (the id may be another's now). */
static void fix_stack_ids(void *ctx, struct bt_event_hdr *ev, uint32_t len)
{
	struct recorder *r = ctx;
	struct bt_ev_sample *e = bt_stack_event(ev, len);

	if (!e)
		return;
	e->kstack = stack_id_of_kind(r, bt_stack_births_id(r->wr_births, e->kstack, ev->cpu, ev->ts_ns), BT_STACK_KERNEL);
	e->ustack = stack_id_of_kind(r, bt_stack_births_id(r->wr_births, e->ustack, ev->cpu, ev->ts_ns), BT_STACK_USER);
}

/* Right after the window is copied: the stack table and its births, then
 * the table is released (stacks may be freed again). Every id an event of
 * the window names means the stack the event was taken with, or was freed
 * since (the births say which). */
static void stacks_copy(struct recorder *r)
{
	uint64_t t0 = bt_now_ns();

	if (!r->wr_held)
		return;
	r->wr_births = bt_stack_table_births(r->stacks);
	if (!r->wr_births)
		bt_warn("out of memory: this dump's stacks say reclaimed");
	r->wr_stacks = calloc(1, sizeof(*r->wr_stacks));
	if (r->wr_stacks && bt_stack_table_snapshot(r->stacks, r->wr_stacks)) {
		free(r->wr_stacks);
		r->wr_stacks = NULL;
	}
	bt_stack_table_release(r->stacks, r->wr_token);
	r->wr_held = 0;
	r->wr_stacks_ns[0] = bt_now_ns() - t0;
}

/* No stack is freed (and its id handed to another) from before the dump
 * copies the buffer until it has copied the stack table (stacks_copy). */
static int write_dump_held(struct recorder *r, const char *reason, const struct bt_trigger_fired *fired,
			   const char *explicit_path, char *why, size_t whylen)
{
	if (r->stacks) {
		r->wr_token = bt_stack_table_hold(r->stacks);
		r->wr_held = 1;
	}

	if (r->symbolizer)
		bt_symbolizer_boost(r->symbolizer, 1);
	int ret = write_dump(r, reason, fired, explicit_path, why, whylen);

	if (r->symbolizer)
		bt_symbolizer_boost(r->symbolizer, 0);
	if (r->stacks) {
		if (r->wr_held)
			bt_stack_table_release(r->stacks, r->wr_token);
		r->wr_held = 0;
		bt_stack_births_free(r->wr_births);
		r->wr_births = NULL;
		r->wr_kind_mismatch = 0;
		if (r->wr_stacks)
			bt_stack_snapshot_free(r->wr_stacks);
		free(r->wr_stacks);
		r->wr_stacks = NULL;
	}
	return ret;
}

struct bt_ho_prior *recorder_prior(struct recorder *r, const struct bt_stats *bs, struct bt_dump_prior *p)
{
	pthread_mutex_lock(&r->lock); /* set by the hand-over's thread */
	struct bt_ho_prior *pr = r->prior;
	pthread_mutex_unlock(&r->lock);

	if (!pr || bt_ho_prior_fill(pr, bs->size, bs->blocks_used * (uint64_t)bs->block_size, r->resumed_boot_ns, p))
		return pr;
	pthread_mutex_lock(&r->lock);
	r->prior = NULL; /* only a holder of dump_serial frees it: no dump is using it */
	pthread_mutex_unlock(&r->lock);
	bt_ho_prior_free(pr);
	bt_log(BT_LOG_INFO, "the previous recorder's history is past the window now: later dumps hold this "
	       "recorder's only");
	return NULL;
}

size_t recorder_prog_misses(struct recorder *r, struct bt_prog_miss **out)
{
	size_t max = 64 + (r->uprobes ? 8 : 0), n;
	struct bt_prog_miss *pm = calloc(max, sizeof(*pm));

	*out = pm;
	if (!pm)
		return 0;
	n = bt_loader_prog_misses(r->loader, pm, max);
	if (r->uprobes)
		n += bt_uprobes_prog_misses(r->uprobes, pm + n, max - n);
	return n;
}

int recorder_write_dump(struct recorder *r, const char *reason, const char *explicit_path, char *out,
			size_t outlen, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&r->dump_serial);
	/* Checked here, one dump at a time: two `ctl dump -o F` at once must
	 * not both pass and the second replace the first. */
	if (explicit_path && access(explicit_path, F_OK) == 0) {
		if (why)
			snprintf(why, whylen, "%s exists: a dump never replaces a file, choose another name",
				 explicit_path);
		pthread_mutex_unlock(&r->dump_serial);
		return -EEXIST;
	}
	ret = write_dump_held(r, reason, NULL, explicit_path, why, whylen);
	if (ret == 0 && out)
		snprintf(out, outlen, "%s", r->last_path);
	pthread_mutex_unlock(&r->dump_serial);
	return ret;
}

/* The pending dump, for reason and the trigger hits h (NULL: none), whose
 * ends are counted: in this dump if it is written, else dropped. */
static int write_pending(struct recorder *r, const char *reason, const struct recorder_hits *h)
{
	int ret;

	pthread_mutex_lock(&r->dump_serial);
	if (h)
		r->wr = *h;
	else
		r->wr.n = 0;
	ret = write_dump_held(r, reason, r->wr.n ? r->wr.f : NULL, NULL, NULL, 0);
	r->wr.n = 0;
	pthread_mutex_unlock(&r->dump_serial);
	if (h)
		recorder_triggers_account(r, h, ret == 0);
	return ret;
}

/* The dump thread at the drain's priority: under load it must take the
 * window and write it as soon as asked, not after the load's tasks. */
static void dump_thread_priority(void)
{
	bt_thread_nice(BT_DRAIN_NICE, "dump thread");
}

void *recorder_dump_thread(void *arg)
{
	struct recorder *r = arg;
	struct recorder_hits h;

	pthread_setname_np(pthread_self(), "btrace-dump");
	dump_thread_priority();
	pthread_mutex_lock(&r->lock);
	for (;;) {
		const char *reason;
		int ret, has;

		/* While stopping, nothing starts before the final request: the
		 * hits the stop hands on and the final dump make one dump. */
		while ((r->hold_dumps || (!r->pending && !r->tq.n)) && !r->quit)
			pthread_cond_wait(&r->cond, &r->lock);
		if (!r->pending && !r->tq.n)
			break;
		/* One dump for whatever is pending: a request (signal, ctl,
		 * interval, exit) and every trigger hit whose delay is over. */
		has = recorder_triggers_take(r, &h);
		reason = r->pending ? r->reason : "trigger";
		r->pending = 0;
		pthread_mutex_unlock(&r->lock);
		ret = write_pending(r, reason, has ? &h : NULL);
		pthread_mutex_lock(&r->lock);
		if (strcmp(reason, "exit") == 0)
			r->final_failed = ret != 0;
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static int write_dump(struct recorder *r, const char *reason, const struct bt_trigger_fired *fired,
		      const char *explicit_path, char *why, size_t whylen)
{
	struct bt_dump_trigger *trig_tab = NULL;
	struct bt_prog_miss *pmiss = NULL;
	struct bt_dump *sum = NULL; /* the manifest's counts, taken while writing */
	char serr[256] = "";
	struct dump_capture cap;
	struct bt_read_stats rst;
	struct bt_dump_info info;
	struct bt_dump_prior prior;
	struct bt_ho_prior *prior_h = NULL;
	struct bt_task *prior_tasks;
	size_t prior_ntasks;
	struct bt_stats bs;
	char path[PATH_MAX], err[512], sz[32];
	uint64_t t0 = bt_now_ns(), t0b = bt_boottime_ns(), bytes;
	struct stat st;
	int ret;

	memset(&info, 0, sizeof(info));
	memset(&rst, 0, sizeof(rst));
	memset(r->wr_stacks_ns, 0, sizeof(r->wr_stacks_ns));
	/* The window first: everything after works on this copy. */
	/* A trigger's dump takes the application buffers its first hit
	 * copied (record_triggers.c). */
	struct bt_apps_capture *early = fired ? r->wr.apps : NULL;
	uint64_t early_ns = fired ? r->wr.apps_ns : 0, early_t0 = fired ? r->wr.apps_t0 : 0;

	if (fired)
		r->wr.apps = NULL;
	ret = dump_capture_take(r, early, &cap, err, sizeof(err));
	if (r->stacks)
		stacks_copy(r);
	if (ret)
		goto out;
	bs = *bt_capture_stats(cap.kbuf);
	bytes = bs.bytes_written + bs.padding_bytes;
	pthread_mutex_lock(&r->lock); /* set by the hand-over's thread */
	int has_prior = r->prior != NULL;
	pthread_mutex_unlock(&r->lock);
	if (!explicit_path && r->mgmt) {
		/* At most the buffer's events, and the cold tier's, in the dump's
		 * form and the task table, uncompressed (the last dump's ratio
		 * scales it after). */
		uint64_t held = bytes < bs.size && !has_prior ? bytes : bs.size; /* a prior fills the rest */
		if (r->cold) {
			struct bt_cold_stats cs;

			bt_cold_stats(r->cold, &cs);
			held += (uint64_t)cs.blocks * bs.block_size;
		}
		uint64_t raw = held / 2 * BT_DUMP_GROWTH_X2 + cap.ntasks * sizeof(*cap.tasks);

		ret = bt_dump_mgmt_before(r->mgmt, raw, err, sizeof(err));
		if (ret == -ENOSPC) {
			pthread_mutex_lock(&r->lock);
			r->nskipped++;
			pthread_mutex_unlock(&r->lock);
			if (why)
				snprintf(why, whylen, "dump skipped: %s", err);
			bt_log(BT_LOG_WARNING, "%s dump skipped: %s; %s%" PRIu64 " skipped so far", reason, err,
			       strcmp(reason, "exit") ? "recording continues; " : "", r->nskipped);
			goto skipped;
		}
	}

	/* The previous recorder's newest blocks, while they fit in what this
	 * one has not yet used of the buffer (the window continues). */
	prior_h = recorder_prior(r, &bs, &prior);
	if (prior_h) {
		info.prior = &prior;
		if (bt_ho_prior_tasks(prior_h, cap.tasks, cap.ntasks, &prior_tasks, &prior_ntasks) == 0) {
			free(cap.tasks);
			cap.tasks = prior_tasks;
			cap.ntasks = prior_ntasks;
		}
	}
	info.cold = r->cold;
	info.ncpus = r->ncpus;
	info.ngroups = BT_GROUP_MAX;
	info.rb_drops = cap.drops;
	info.rb_emitted = cap.emitted;
	info.tasks = cap.tasks;
	info.ntasks = cap.ntasks;
	info.dump_seq = r->last_seq + 1;
	/* The previous dump's window may overlap this one unless the buffer
	 * has been overwritten completely since. */
	info.overlaps_dump = r->last_seq && bytes - r->last_bytes < bs.size ? r->last_seq : 0;
	info.reason = reason;
	info.drain_events = cap.ds.events;
	info.drain_rejected = cap.ds.rejected;
	info.groups_enabled = bt_loader_groups(r->loader);
	if (r->uprobes) {
		info.probes = bt_uprobes_table(r->uprobes, &info.nprobes);
		info.groups_enabled |= 1u << BT_GROUP_UPROBE;
	}
	if (cap.apps) {
		info.write_apps = bt_apps_capture_write;
		info.apps_ctx = cap.apps;
	}
	if (r->stacks) {
		info.write_stacks = write_stacks;
		info.stacks_ctx = r;
		info.fix_event = fix_stack_ids;
		info.fix_ctx = r;
	}
	if (recorder_triggers_info(r, fired, fired ? dump_capture_oldest_ts(&cap) : 0, &info, &trig_tab))
		bt_warn("out of memory: this dump has no trigger table");
	info.nprog_misses = recorder_prog_misses(r, &pmiss);
	info.prog_misses = pmiss;

	err[0] = '\0';
	struct bt_dump_args da = {
		.capture = cap.kbuf, .info = &info, .dir = r->o->output_dir, .path = explicit_path,
		.zlevel = r->o->zlevel, .out_path = path, .out_len = sizeof(path), .rst = &rst,
		.err = err, .errlen = sizeof(err),
		.summary = r->mgmt ? &sum : NULL, .summary_err = serr, .summary_errlen = sizeof(serr),
	};
	ret = bt_dump_write_capture(&da);
out:
	if (ret) {
		pthread_mutex_lock(&r->lock);
		r->nfailed++;
		pthread_mutex_unlock(&r->lock);
		if (why)
			snprintf(why, whylen, "dump failed: %s", err[0] ? err : strerror(-ret));
		bt_log(BT_LOG_ERR, "dump failed: %s%s%s", err[0] ? err : strerror(-ret),
		       ret == -ENOSPC || ret == -EDQUOT ?
			       " (free space there or choose another directory with -o)" : "",
		       strcmp(reason, "exit") ? "; recording continues" : "");
	} else {
		r->last_seq = info.dump_seq;
		r->last_bytes = bytes;
		pthread_mutex_lock(&r->lock); /* what status shows, without waiting for a dump */
		r->ndumps++;
		snprintf(r->last_path, sizeof(r->last_path), "%s", path);
		pthread_mutex_unlock(&r->lock);
		if (stat(path, &st))
			st.st_size = 0;
		char stk[96] = "";
		if (r->stacks)
			snprintf(stk, sizeof(stk), ", stack table copied in %.1f ms and named in %.1f ms",
				 (double)r->wr_stacks_ns[0] / 1e6, (double)r->wr_stacks_ns[1] / 1e6);
		char early_s[192] = "";
		/* hit -> copy: what an application at full speed may overwrite;
		 * where it goes: the hit seen (the watcher, the application's
		 * line), the trigger thread's turn, the copy */
		if (cap.apps_early)
			snprintf(early_s, sizeof(early_s),
				 " (%.1f ms after the trigger's hit: seen after %.1f ms, copy begun %.1f ms later, "
				 "%.1f ms long; %.1f ms before the dump began)",
				 (double)(early_ns > fired[0].ts_ns ? early_ns - fired[0].ts_ns : 0) / 1e6,
				 (double)(fired[0].seen_ns > fired[0].ts_ns ? fired[0].seen_ns - fired[0].ts_ns : 0) / 1e6,
				 (double)(early_t0 > fired[0].seen_ns ? early_t0 - fired[0].seen_ns : 0) / 1e6,
				 (double)(early_ns > early_t0 ? early_ns - early_t0 : 0) / 1e6,
				 (double)(t0b > early_ns ? t0b - early_ns : 0) / 1e6);
		bt_log(BT_LOG_NOTICE, "dump %" PRIu64 " written to %s (%s, %" PRIu64 " events, %s, %.2fs, window "
		       "copied in %.1f ms + %.1f ms for applications%s after %.1f ms for the drain%s%s)",
		       info.dump_seq, path, reason, rst.entries, format_size((uint64_t)st.st_size, sz, sizeof(sz)),
		       (double)(bt_now_ns() - t0) / 1e9, (double)cap.kcopy_ns / 1e6, (double)cap.acopy_ns / 1e6, early_s,
		       (double)cap.flush_ns / 1e6, stk, rst.blocks_lost ? ", some blocks overwritten while copying" : "");
	}
skipped:
	/* The copies go before the manifest: quota and --on-dump may take a
	 * while, the buffers are no longer needed (issue 36). */
	dump_capture_free(&cap);
	free(trig_tab);
	free(pmiss);
	if (sum && bt_dump_summary_finish(sum)) { /* its seq analysis, after the copies */
		bt_dump_close(sum);
		sum = NULL;
	}
	if (!ret && r->mgmt && !sum)
		bt_log(BT_LOG_WARNING, "dump %s: no summary while writing (%s); the manifest reads the file",
		       path, serr[0] ? serr : "out of memory");
	if (!ret)
		after_dump(r, path, sum, !explicit_path, reason);
	bt_dump_close(sum);
	return ret;
}
