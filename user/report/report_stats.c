// SPDX-License-Identifier: MIT
/*
 * report_stats.c - `report --stats`: what a dump holds and everything it
 * lost, in named steps: the header, the time windows, the events per CPU
 * and group, the loss counters.
 */
#include "report_stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "func_batch.h"
#include "switch_chain.h"
#include "report_apps.h"
#include "report_list.h"
#include "report_stacks.h"
#include "report_triggers.h"
#include "util.h"

static const char *human(uint64_t b, char *buf, size_t len)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;
	double v = (double)b;
	while (v >= 1024 && i < 4)
		v /= 1024, i++;
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
	return buf;
}

static const char *dur(uint64_t a, uint64_t b, char *buf, size_t len)
{
	uint64_t d = b > a ? b - a : 0;
	snprintf(buf, len, "%" PRIu64 ".%06" PRIu64 " s", d / 1000000000u, (d % 1000000000u) / 1000u);
	return buf;
}

/* Events missing without a seq gap: program runs the kernel skipped, and
 * switches it never reported (switch_chain.h). */
static void print_kernel_skips(const struct bt_dump *d, const struct bt_dump_event *ev, size_t n, FILE *out)
{
	size_t np;
	const struct bt_prog_miss *pm = bt_dump_prog_misses(d, &np);
	struct bt_switch_chain ch;

	if (!pm) {
		fprintf(out, "  program runs skipped by the kernel: not recorded (%s)\n",
			bt_dump_handed(d) ? "the programs ended with the previous recorder" : "dump of an older recorder");
	} else {
		fprintf(out, "  program runs skipped by the kernel (recursion, no event, no seq): %" PRIu64 " in %zu programs\n",
			bt_dump_prog_misses_total(d), np);
		for (size_t i = 0; i < np; i++)
			if (pm[i].misses)
				fprintf(out, "    %s: %" PRIu64 "\n", pm[i].name, pm[i].misses);
	}
	if (bt_switch_chain(ev, n, bt_dump_header(d)->ncpus, &ch) < 0 || !ch.switches)
		return;
	fprintf(out, "  sched_switch chain breaks: %" PRIu64 ", %" PRIu64 " without a seq gap (switch-aways the kernel did not report",
		ch.breaks, ch.unexplained);
	if (ch.ntids) {
		size_t nt;
		const struct bt_task *t = bt_dump_tasks(d, &nt);
		fprintf(out, "; of");
		for (size_t i = 0; i < ch.ntids; i++) {
			const char *comm = "?";
			for (size_t k = 0; k < nt; k++)
				if (t[k].tid == ch.tids[i])
					comm = t[k].comm;
			char esc[BT_TASK_COMM_LEN];
			size_t k;
			for (k = 0; comm[k] && k + 1 < sizeof(esc); k++)
				esc[k] = (unsigned char)comm[k] < 0x20 || comm[k] == 0x7f ? '?' : comm[k];
			esc[k] = 0;
			fprintf(out, "%s %u %s", i ? "," : "", ch.tids[i], esc);
		}
		if (ch.ntids == BT_CHAIN_TIDS)
			fprintf(out, ", ...");
	}
	fprintf(out, ")\n");
}

/* What the steps share: the dump, its per-CPU seq analysis and the events
 * the filter selects, counted per CPU and group. */
struct stats {
	const struct bt_dump *d;
	const struct bt_dump_header *h;
	const struct bt_stats *bs;
	const struct bt_read_stats *rs;
	const uint64_t *drops, *emitted;
	const struct bt_dump_event *ev;
	const struct bt_event_filter *f;
	const char *path;
	FILE *out;
	size_t n, nblocks, ntasks, nprobes;
	uint32_t nc, ng;
	int filtered;
	struct bt_seq_window w;
	struct bt_seq_cpu *sc; /* [nc] */
	uint64_t *cnt;         /* selected events [cpu][group] */
	uint64_t nmatch, mfirst, mlast;
};

static void count_one(struct stats *s, const struct bt_event_hdr *e)
{
	if (!bt_filter_match(s->f, e))
		return;
	if (!s->nmatch || e->ts_ns < s->mfirst)
		s->mfirst = e->ts_ns;
	if (e->ts_ns > s->mlast)
		s->mlast = e->ts_ns;
	s->nmatch++;
	int g = bt_event_group(e->type);
	if (g >= 0 && e->cpu < s->nc)
		s->cnt[(size_t)e->cpu * BT_GROUP_MAX + (uint32_t)g]++;
}

/* The selected events per CPU and group, and their first and last times.
 * A function batch kept whole counts as the entries and exits it holds,
 * each matched as the full decode lists it: memory does not grow with them. */
static int count_event(const struct bt_dump_event *de, void *ctx)
{
	struct stats *s = ctx;
	const struct bt_event_hdr *e = de->ev;
	if (e->type != BT_EV_APP_FUNCS) {
		count_one(s, e);
		return 0;
	}
	const struct bt_ev_app_funcs *f = (const void *)e;
	struct bt_event_hdr h = f->h;
	struct bt_funcs_iter it;
	uint64_t addr;
	unsigned ex;

	bt_funcs_iter_init(&it, f, de->len);
	while (bt_funcs_iter_next(&it, &addr, &ex)) {
		h.type = ex ? BT_EV_APP_FUNC_EXIT : BT_EV_APP_FUNC_ENTRY;
		h.ts_ns = bt_funcs_ts(f, it.tk);
		count_one(s, &h);
	}
	return 0;
}

struct both {
	struct stats *s;
	struct bt_report_apps *ra;
};

static int count_both(const struct bt_dump_event *de, void *ctx)
{
	struct both *b = ctx;
	count_event(de, b->s);
	return de->app >= 0 ? bt_report_apps_event(b->ra, de) : 0;
}

/* A seq as the reader counts it: the previous recorder's in a dump that
 * continues its window are renumbered to end just below this one's first
 * (seq 0), so they read negative (-2066..-1), not wrapped (4294965230). */
static const char *seq_text(const struct stats *s, uint32_t seq, char *buf, size_t len)
{
	if (bt_dump_restart(s->d) && (int32_t)seq < 0)
		snprintf(buf, len, "%" PRId32, (int32_t)seq);
	else
		snprintf(buf, len, "%" PRIu32, seq);
	return buf;
}

/* Format, host, creation, buffer geometry, tables, clock. */
/* The cold tier behind the buffer, at dump start (user/coldtier): what it
 * held, what of the dump came from it, and its CPU budget. */
static void print_cold_tier(const struct bt_dump *d, const struct bt_seq_window *w, FILE *out)
{
	const struct bt_dump_cold *c = bt_dump_cold(d);
	char b1[32], b2[32], b3[32], b4[32];
	struct bt_dump_cold_share sh;

	if (!c)
		return;
	fprintf(out, "cold tier:  %s, %s: %" PRIu64 " blocks held (%s raw; %.2fx overall: %s in %s), %" PRIu64
		" evicted oldest first, %" PRIu64 " gaps (blocks overwritten before they were compressed), "
		"compressor CPU %.3f s\n",
		c->codec == 1 ? "lz4" : c->codec == 2 ? "zstd" : "unknown codec", human(c->size, b1, sizeof(b1)),
		c->blocks_held, human(c->blocks_held * bt_dump_header(d)->block_size, b2, sizeof(b2)),
		c->stored_bytes ? (double)c->raw_bytes / (double)c->stored_bytes : 0.0,
		human(c->raw_bytes, b3, sizeof(b3)), human(c->stored_bytes, b4, sizeof(b4)), c->blocks_evicted, c->gaps,
		(double)c->cpu_ns / 1e9);
	bt_dump_cold_share(d, w, &sh);
	fprintf(out, "            from the tier: %" PRIu64 " of %" PRIu64 " events (%.1f%%), %.3f s of the latest continuous "
		"window's %.3f s\n", sh.events, sh.window_events, 100 * sh.share_events, sh.tier_window_s, sh.window_s);
	if (c->has_parts)
		fprintf(out, "            compressed: %" PRIu64 " of the %" PRIu64 " blocks from the tier (%.1f%%), %" PRIu64
			" held uncompressed now; %" PRIu64 " blocks left out behind a hole (the oldest end)\n",
			c->dumped - c->dumped_raw, c->dumped, 100 * sh.share_compressed, c->blocks_held_raw, c->blocks_cut);
	if (!c->budget_ppm) {
		fprintf(out, "            budget: none (--cold-cpu off)\n");
		return;
	}
	fprintf(out, "            budget: %.2f%% of one CPU; held back: %s (%" PRIu64 " passes, %" PRIu64
		" blocks stored uncompressed; copies past the budget %.3f s CPU)\n", (double)c->budget_ppm / 1e4,
		sh.budget_bound ? "yes" : "no", c->held_back, c->blocks_raw, (double)c->copy_ns / 1e9);
}

static void print_header(const struct stats *s)
{
	char b1[64], b2[64];
	if (s->path)
		fprintf(s->out, "dump:       %s\n", s->path);
	fprintf(s->out, "format:     version %u, ", s->h->version);
	if (s->h->compression)
		fprintf(s->out, "zlib level %u, ", s->h->zlevel);
	else
		fprintf(s->out, "uncompressed, ");
	fprintf(s->out, "%s file, %s of blocks and tables\n", human(s->h->file_size, b1, sizeof(b1)),
		human(s->h->body_raw_len, b2, sizeof(b2)));
	char eh[BT_ESCAPED_LEN(sizeof(s->h->hostname))], ek[BT_ESCAPED_LEN(sizeof(s->h->kernel))],
		er[BT_ESCAPED_LEN(sizeof(s->h->reason))];
	fprintf(s->out, "host:       %s, kernel %s, %u CPUs, recorder pid %" PRIu64 "\n",
		bt_escape_text(s->h->hostname, sizeof(s->h->hostname), eh, sizeof(eh)),
		bt_escape_text(s->h->kernel, sizeof(s->h->kernel), ek, sizeof(ek)), s->nc, s->h->recorder_pid);
	fprintf(s->out, "created:    %s (boot time %s), reason %s, dump #%" PRIu64,
		bt_report_fmt_wall(s->h, s->h->created_boottime_ns, b1, sizeof(b1)), bt_report_fmt_secs(s->h->created_boottime_ns, b2, sizeof(b2)),
		s->h->reason[0] ? bt_escape_text(s->h->reason, sizeof(s->h->reason), er, sizeof(er)) : "-", s->h->dump_seq);
	if (s->h->overlaps_dump)
		fprintf(s->out, " (may overlap dump #%" PRIu64 ")", s->h->overlaps_dump);
	fputc('\n', s->out);
	bt_report_trigger_fired(s->d, &s->w, s->out);
	fprintf(s->out, "buffer:     %s, %u blocks of %s, %u active; groups", human(s->h->buffer_size, b1, sizeof(b1)),
		s->h->nblocks, human(s->h->block_size, b2, sizeof(b2)), s->h->active);
	int any = 0;
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if (s->h->groups_enabled & (1u << g))
			fprintf(s->out, "%s%s", any++ ? "," : " ", bt_group_name(g));
	fprintf(s->out, "%s\n", any ? "" : " none recorded");
	print_cold_tier(s->d, &s->w, s->out);
	fprintf(s->out, "tables:     %zu tasks, %zu probes\n", s->ntasks, s->nprobes);
	if (s->h->clock_id != 7)
		fprintf(s->out, "clock:      %u (not CLOCK_BOOTTIME: times are not seconds since boot)\n", s->h->clock_id);
	fputc('\n', s->out);

}

/* The dump's window, the selection's, and the latest continuous one. */
static void print_windows(const struct stats *s)
{
	char b1[64], b2[64], b3[64];
	fprintf(s->out, "events:     %" PRIu64 " in %zu blocks\n", s->w.events, s->nblocks);
	if (s->w.events)
		fprintf(s->out, "window:     %s .. %s (%s)\n", bt_report_fmt_secs(s->w.first_ts, b1, sizeof(b1)),
			bt_report_fmt_secs(s->w.last_ts, b2, sizeof(b2)), dur(s->w.first_ts, s->w.last_ts, b3, sizeof(b3)));
	if (s->filtered) {
		fprintf(s->out, "matching:   %" PRIu64 " events", s->nmatch);
		if (s->nmatch)
			fprintf(s->out, ", %s .. %s (%s)", bt_report_fmt_secs(s->mfirst, b1, sizeof(b1)), bt_report_fmt_secs(s->mlast, b2, sizeof(b2)),
				dur(s->mfirst, s->mlast, b3, sizeof(b3)));
		fputc('\n', s->out);
	}
	if (s->w.events) {
		fprintf(s->out, "latest continuous window: %s .. %s (%s, %" PRIu64 " events)\n",
			bt_report_fmt_secs(s->w.cont_start_ts, b1, sizeof(b1)), bt_report_fmt_secs(s->w.last_ts, b2, sizeof(b2)),
			dur(s->w.cont_start_ts, s->w.last_ts, b3, sizeof(b3)), s->w.cont_events);
		const struct bt_dump_restart *rs = bt_dump_restart(s->d);
		if (s->w.restart_limit && rs) {
			fprintf(s->out, "            starts where this recorder resumed recording after a restart (reason %s)\n",
				rs->reason);
		} else if (s->w.limit_cpu < 0) {
			fprintf(s->out, "            starts at the first event: no CPU misses an event\n");
		} else {
			const struct bt_seq_cpu *p = &s->sc[s->w.limit_cpu];
			char q1[16], q2[16];
			if (p->limit == BT_SEQ_LIMIT_GAP)
				fprintf(s->out, "            starts after CPU %d's newest seq gap (seqs %s..%s missing)\n",
					s->w.limit_cpu, seq_text(s, p->gap_from, q1, sizeof(q1)),
					seq_text(s, p->gap_to, q2, sizeof(q2)));
			else
				fprintf(s->out, "            starts at CPU %d's oldest retained event (seq %s; older ones were overwritten)\n",
					s->w.limit_cpu, seq_text(s, p->first_seq, q1, sizeof(q1)));
		}
		fprintf(s->out, "            (newest stretch ending at the last event in which no CPU misses an\n"
			     "            event: it starts at the latest, over CPUs, of the first event after the\n"
			     "            CPU's newest seq gap, or its oldest retained event unless that is seq 0)\n");
	}
	fputc('\n', s->out);

}

/* Selected events per CPU and group, with each CPU's drops, gaps and seqs. */
static void print_cpu_table(const struct stats *s)
{
	char b1[64], b2[64];
	fprintf(s->out, "%-5s %10s", "cpu", s->filtered ? "matching" : "events");
	for (int g = 0; g < BT_GROUP_MAX; g++)
		fprintf(s->out, " %9s", bt_group_name(g));
	fprintf(s->out, " %9s %8s %9s  %-16s %s\n", "rb_drops", "seq_gaps", "missing", "oldest", "seqs");
	uint64_t tg[BT_GROUP_MAX] = { 0 }, tall = 0, tdrop = 0, tgaps = 0, tmiss = 0;
	for (uint32_t c = 0; c < s->nc; c++) {
		uint64_t all = 0, dr = 0;
		for (int g = 0; g < BT_GROUP_MAX; g++)
			all += s->cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g];
		for (uint32_t g = 0; g < s->ng; g++)
			dr += s->drops[(size_t)c * s->ng + g];
		if (!all && !dr && !s->sc[c].events)
			continue;
		if (!bt_filter_cpu_ok(s->f, c))
			continue;
		fprintf(s->out, "%-5u %10" PRIu64, c, all);
		for (int g = 0; g < BT_GROUP_MAX; g++) {
			fprintf(s->out, " %9" PRIu64, s->cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g]);
			tg[g] += s->cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g];
		}
		if (s->sc[c].events) {
			char q1[16], q2[16];
			snprintf(b1, sizeof(b1), "%s..%s", seq_text(s, s->sc[c].first_seq, q1, sizeof(q1)),
				 seq_text(s, s->sc[c].last_seq, q2, sizeof(q2)));
		}
		else
			snprintf(b1, sizeof(b1), "-");
		fprintf(s->out, " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "  %-16s %s\n", dr, s->sc[c].gaps, s->sc[c].missing,
			s->sc[c].events ? bt_report_fmt_secs(s->sc[c].first_ts, b2, sizeof(b2)) : "-", b1);
		tall += all;
		tdrop += dr;
		tgaps += s->sc[c].gaps;
		tmiss += s->sc[c].missing;
	}
	fprintf(s->out, "%-5s %10" PRIu64, "total", tall);
	for (int g = 0; g < BT_GROUP_MAX; g++)
		fprintf(s->out, " %9" PRIu64, tg[g]);
	fprintf(s->out, " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "\n", tdrop, tgaps, tmiss);
	fputc('\n', s->out);

}

/* A dump of what a previous recorder left: what reading its memory
 * refused, and what its programs emitted that its buffer never held. */
static void print_handed(const struct stats *s)
{
	const struct bt_dump_handed *ho = bt_dump_handed(s->d);

	if (!ho)
		return;
	fprintf(s->out, "  handed over: %" PRIu64 " blocks refused, %" PRIu64 " open blocks cut at their last confirmed "
		     "entry, %" PRIu64 " event batches refused\n", ho->blocks_refused, ho->blocks_cut, ho->batches_refused);
	if (ho->tail_known)
		fprintf(s->out, "  at its end: %" PRIu64 " events its programs emitted after the newest kept (in its rings "
			     "or its drain's hands; drops above are its programs' own at the end)\n", ho->after_newest);
	else
		fprintf(s->out, "  at its end: not counted (its programs' counters were not kept: a clean stop drains "
			     "all, or no BPF file system to pin them in)\n");
}

/* A recorder's own dump holding the previous recorder's history too:
 * how much of it, and the gap between the two. */
static void print_restart(const struct stats *s)
{
	const struct bt_dump_restart *rs = bt_dump_restart(s->d);
	char b1[64], b2[64];

	if (!rs)
		return;
	fprintf(s->out, "  restart: the window continues across a restart (reason %s): %" PRIu64 " events of the "
		     "previous recorder in %" PRIu64 " blocks (%" PRIu64 " older blocks past the window left out)\n",
		rs->reason, rs->events, rs->blocks, rs->blocks_left);
	fprintf(s->out, "    not recording from its newest event %s to %s (%.3f s)", bt_report_fmt_secs(rs->newest_ts, b1, sizeof(b1)),
		bt_report_fmt_secs(rs->resumed_ts, b2, sizeof(b2)),
		rs->resumed_ts > rs->newest_ts ? (double)(rs->resumed_ts - rs->newest_ts) / 1e9 : 0.0);
	if (rs->lost_known)
		fprintf(s->out, "; %" PRIu64 " events its programs emitted after it were lost (a seq gap above)\n", rs->lost);
	else
		fprintf(s->out, "; what its rings held at its end: none (a clean stop drains them) or not counted\n");
}

/* Every loss counter: ring buffer, seq gaps, dump reading, buffer, drain,
 * kernel skips, stacks, applications, triggers. */
/* 0, or -errno of the applications' second read (why in o->err) */
static int print_losses(const struct stats *s, struct bt_report_apps *ra, const struct ropts *o)
{
	int r;

	uint64_t alldrops = 0;
	for (size_t i = 0; i < (size_t)s->nc * s->ng; i++)
		alldrops += s->drops[i];
	fprintf(s->out, "losses:\n");
	fprintf(s->out, "  ring-buffer reservation failures: %" PRIu64 "\n", alldrops);
	for (uint32_t c = 0; c < s->nc && alldrops; c++) {
		uint64_t row = 0;
		for (uint32_t g = 0; g < s->ng; g++)
			row += s->drops[(size_t)c * s->ng + g];
		if (!row)
			continue;
		fprintf(s->out, "    cpu %u:", c);
		for (uint32_t g = 0; g < s->ng; g++) {
			const char *gn = bt_group_name((int)g);
			if (gn)
				fprintf(s->out, " %s %" PRIu64, gn, s->drops[(size_t)c * s->ng + g]);
			else
				fprintf(s->out, " group%u %" PRIu64, g, s->drops[(size_t)c * s->ng + g]);
		}
		fputc('\n', s->out);
	}
	if (s->emitted) {
		uint64_t e = 0;
		for (size_t i = 0; i < (size_t)s->nc * s->ng; i++)
			e += s->emitted[i];
		fprintf(s->out, "  ring-buffer events submitted: %" PRIu64 "\n", e);
	}
	fprintf(s->out, "  seq gaps: %" PRIu64 " gaps, %" PRIu64 " events missing, %" PRIu64 " duplicates\n", s->w.gaps,
		s->w.missing, s->w.dups);
	fprintf(s->out, "  dump read: %" PRIu64 " blocks read, %" PRIu64 " lost (overwritten while dumping), %" PRIu64
		     " busy (write in flight, not dumped), %" PRIu64 " never used\n",
		s->rs->blocks_read, s->rs->blocks_lost, s->rs->blocks_busy, s->rs->blocks_empty);
	fprintf(s->out, "  buffer entries (event batches): %" PRIu64 " written, %" PRIu64 " rejected (too large), %" PRIu64
		     " dropped (blocks held by stalled writers)\n",
		s->bs->entries_written, s->bs->entries_rejected, s->bs->entries_dropped);
	fprintf(s->out, "  buffer blocks: %" PRIu64 " used, %" PRIu64 " closed early, %" PRIu64 " skipped, %" PRIu64
		     " positions stale, %" PRIu64 " core races, %" PRIu64 " padding bytes, %" PRIu64 " resizes\n",
		s->bs->blocks_used, s->bs->blocks_closed, s->bs->blocks_skipped, s->bs->positions_stale, s->bs->core_races,
		s->bs->padding_bytes, s->bs->resizes);
	fprintf(s->out, "  drain: %" PRIu64 " events written into the buffer, %" PRIu64 " rejected\n", s->h->drain_events,
		s->h->drain_rejected);
	print_handed(s);
	print_restart(s);
	print_kernel_skips(s->d, s->ev, s->n, s->out);
	if (bt_dump_unknown_events(s->d))
		fprintf(s->out, "  events of unknown types skipped: %" PRIu64 " (written by a newer btrace-bpf)\n",
			bt_dump_unknown_events(s->d));
	bt_report_stack_stats(s->d, s->out);
	if ((r = bt_report_apps(ra, s->out, o->err, o->errlen)) < 0)
		return r;
	bt_report_triggers(s->d, s->out);
	return 0;
}

int bt_report_stats(const struct bt_dump *d, const char *path, const struct ropts *o, FILE *out)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	struct stats s = { .d = d, .h = h, .bs = bt_dump_buffer_stats(d), .rs = bt_dump_read_stats(d),
			   .drops = bt_dump_rb_drops(d), .emitted = bt_dump_rb_emitted(d), .f = &o->f, .path = path,
			   .out = out, .nc = h->ncpus, .ng = h->ngroups, .filtered = bt_filter_active(&o->f) };
	int r = -ENOMEM;

	s.ev = bt_dump_events(d, &s.n);
	bt_dump_blocks(d, &s.nblocks);
	bt_dump_tasks(d, &s.ntasks);
	bt_dump_probes(d, &s.nprobes);
	s.sc = calloc(s.nc ? s.nc : 1, sizeof(*s.sc));
	s.cnt = calloc((size_t)(s.nc ? s.nc : 1) * BT_GROUP_MAX, sizeof(*s.cnt));
	char err[256];
	if (s.sc && s.cnt && bt_seq_analyze_dump(d, s.ev, s.n, s.nc, &s.w, s.sc) == 0) {
		/* the applications' counts come from the same read as the
		 * selection's (a dump opened APP_STREAM reads its blocks again) */
		struct bt_report_apps *ra = bt_report_apps_new(d);
		struct both b = { &s, ra };
		r = ra ? bt_dump_each_event(d, 0, count_both, &b, err, sizeof(err)) : -ENOMEM;
		if (r < 0) {
			if (ra && o->err && o->errlen)
				snprintf(o->err, o->errlen, "%s", err);
			bt_report_apps_free(ra);
			goto out;
		}
		print_header(&s);
		print_windows(&s);
		print_cpu_table(&s);
		r = print_losses(&s, ra, o);
		bt_report_apps_free(ra);
	}
out:
	free(s.sc);
	free(s.cnt);
	return r;
}
