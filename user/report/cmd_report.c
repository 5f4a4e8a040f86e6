// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `btrace-bpf report FILE`: the events of a dump in time order,
 * one line each in the trace-cmd report format, or (--stats) what the dump
 * holds and everything it lost.
 *
 *   cpus=2
 *         pingpong-1234  [001]  1234.567890: sched_switch: prev_comm=...
 *   CPU:1 [LOST 12 EVENTS]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include "events.h"
#include "commands.h"
#include "dump.h"
#include "manifest.h"
#include "switch_chain.h"
#include "report_apps.h"
#include "report_triggers.h"
#include "event_names.h"
#include "report_functions.h"
#include "report_stacks.h"
#include "report_hot.h"
#include "event_filter.h"
#include "util.h"

#define PROG "btrace-bpf"

struct ropts {
	int stats, wall, no_lost, functions, hot;
	unsigned top;   /* rows of each --hot summary */
	int stacks, profile, folded, offcpu; /* report_stacks.h */
	struct bt_event_filter f; /* -c, -p, -e, --since/--until/--time (shared with convert) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " report [OPTIONS] FILE\n"
		"\n"
		"Print the events of a dump in time order (all blocks and CPUs merged), one\n"
		"line each, like trace-cmd report:\n"
		"      COMM-TID    [CPU] SECONDS: EVENT: FIELDS\n"
		"SECONDS is CLOCK_BOOTTIME (seconds since boot) with microseconds. Missing\n"
		"events found from the per-CPU sequence numbers are shown where they were\n"
		"lost as \"CPU:N [LOST M EVENTS]\".\n"
		"\n"
		"Options:\n"
		"  -s, --stats          summary instead of events: header, events per CPU and\n"
		"                       group, time window, latest continuous window, and every\n"
		"                       loss counter\n"
		"  -f, --functions      per function instead of events: traced functions\n"
		"                       (-finstrument-functions + libbtrace): calls, total time\n"
		"                       (a recursion counted once), self time (minus callees),\n"
		"                       p50, p99, max; user-space probes (-u/-U) per function\n"
		"                       and process: calls, returns and, for %%return probes,\n"
		"                       the latency distribution (count, min, p50, p99, max);\n"
		"                       for the events the other options select (a call by\n"
		"                       its entry); the window the counts cover and every\n"
		"                       loss that makes them lower bounds; targets that ended\n"
		"      --hot            traced functions, Hubble's summaries: the functions\n"
		"                       with the most self time, the deepest call chains and\n"
		"                       the slowest ones (the longest calls without a caller\n"
		"                       in the window, down their longest callee), each as\n"
		"                       its nested path with durations\n"
		"      --top N          rows of each --hot summary (default 10)\n"
"      --stacks         the call stacks under the events that have one (CPU\n"
		"                       samples, off-CPU blocks, wakers), innermost frame first\n"
		"      --profile        per process, the top functions of the CPU samples the\n"
		"                       other options select: self (innermost) and total share\n"
		"      --folded         folded stacks (\"comm;outer;...;inner COUNT\", for\n"
		"                       flamegraph.pl and speedscope); kernel frames end in _[k]\n"
		"      --offcpu         with --profile/--folded: the off-CPU blocks instead of\n"
		"                       the samples, weighted by their time in microseconds\n"
		"  -c, --cpu LIST       only these CPUs (\"0,2-3\")\n"
		"  -p, --pid LIST       only events of these tids or tgids (also matches the task\n"
		"                       an event is about: next of a switch, woken, forked child)\n"
		"  -e, --event NAMES    only these events (comma list, repeatable): event names\n"
		"                       (sched_switch, sys_enter, uretprobe, ...) or groups\n"
		"                       (sched, irq, power, syscalls, uprobe = uprobe, uretprobe\n"
		"                       and usdt events)\n"
		"      --since T        only events at or after T\n"
		"      --until T        only events at or before T\n"
		"      --time A..B      only events from A to B (either end may be left out:\n"
		"                       \"A..\", \"..B\"); the same as --since A --until B\n"
		"                       T is seconds (fractions allowed): N = N s after the first\n"
		"                       event of the dump, -N = N s before its last event,\n"
		"                       @N = absolute boot time (the SECONDS column)\n"
		"  -w, --wall           print wall-clock time (local) instead of boot time\n"
		"      --no-lost        do not print LOST lines\n"
		"      --manifest       the dump's manifest (JSON, docs/manifest.md), as the\n"
		"                       recorder writes it next to each dump\n"
		"  -h, --help           this help\n"
		"\n"
		"Examples:\n"
		"  " PROG " report traces/btrace-host-20250101-120000-1.btd\n"
		"  " PROG " report --stats dump.btd\n"
		"  " PROG " report --hot --top 5 -p 1234 dump.btd      # where app 1234 spent its time\n"
		"  " PROG " report -e sched_switch,sched_wakeup --cpu 1 dump.btd\n"
		"  " PROG " report --pid 1234 --since -0.5 dump.btd      # the last half second\n"
		"  " PROG " report --time @1234.5..@1234.6 dump.btd\n"
		"\n"
		"Exit status: 0 ok, 1 unreadable or damaged dump, 2 bad usage.\n");
}

/* ---- option parsing ------------------------------------------------------ */

static int parse_events(struct ropts *o, const char *arg)
{
	char buf[256];
	const char *p = arg;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(buf)) {
			fprintf(stderr, PROG ": report: bad event list '%s'\n", arg);
			return -EINVAL;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		/* a group first: "uprobe" is both, and means every uprobe event */
		int g = bt_group_from_name(buf), t;
		if (g >= 0) {
			for (int i = 1; i < BT_EV_MAX; i++)
				if (bt_event_group((uint32_t)i) == g)
					o->f.types |= 1u << i;
		} else if ((t = bt_event_type(buf)) > 0) {
			o->f.types |= 1u << t;
		} else {
			fprintf(stderr, PROG ": report: unknown event '%s'; known:", buf);
			for (int i = 1; i < BT_EV_MAX; i++)
				fprintf(stderr, " %s", bt_event_name((uint32_t)i));
			fprintf(stderr, "; groups:");
			for (int i = 0; i < BT_GROUP_MAX; i++)
				fprintf(stderr, " %s", bt_group_name(i));
			fputc('\n', stderr);
			return -EINVAL;
		}
		p += n;
		if (*p == ',' && *++p == '\0') {
			fprintf(stderr, PROG ": report: bad event list '%s'\n", arg);
			return -EINVAL;
		}
	}
	return 0;
}

/* The filter's window in this dump. */
static void filt_init(struct bt_event_filter *f, const struct bt_dump_event *ev, size_t n)
{
	bt_filter_resolve(f, n ? ev[0].ev->ts_ns : 0, n ? ev[n - 1].ev->ts_ns : 0);
}

/* ---- time formatting ----------------------------------------------------- */

static const char *fmt_wall(const struct bt_dump_header *h, uint64_t ts, char *buf, size_t len)
{
	/* wall = ts + (realtime - boottime), in wrapping unsigned arithmetic */
	int64_t w = (int64_t)(ts + (h->created_realtime_ns - h->created_boottime_ns));
	time_t sec = (time_t)(w / 1000000000);
	long us = (long)((w % 1000000000) / 1000);
	if (us < 0)
		us += 1000000, sec--;
	struct tm tm;
	char d[40];
	if (!localtime_r(&sec, &tm) || !strftime(d, sizeof(d), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(d, sizeof(d), "%lld", (long long)sec);
	snprintf(buf, len, "%s.%06ld", d, us);
	return buf;
}

static const char *fmt_secs(uint64_t ns, char *buf, size_t len)
{
	return bt_format_ts(ns, buf, len);
}

/* ---- events -------------------------------------------------------------- */

/* Call depth per thread, for the indentation of function entries/exits. */
struct depths {
	uint32_t *tid, *d;
	size_t cap, n;
};

static uint32_t *depth_of(struct depths *m, uint32_t tid)
{
	if (2 * (m->n + 1) > m->cap) {
		struct depths g = { .cap = m->cap ? m->cap * 2 : 256 };
		g.tid = calloc(g.cap, sizeof(*g.tid));
		g.d = calloc(g.cap, sizeof(*g.d));
		if (!g.tid || !g.d) {
			free(g.tid);
			free(g.d);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->tid[i]) {
				uint32_t *x = depth_of(&g, m->tid[i] - 1);
				*x = m->d[i];
			}
		free(m->tid);
		free(m->d);
		*m = g;
	}
	size_t i = (tid * 2654435761u) & (m->cap - 1);
	while (m->tid[i] && m->tid[i] != tid + 1)
		i = (i + 1) & (m->cap - 1);
	if (!m->tid[i]) {
		m->tid[i] = tid + 1;
		m->n++;
	}
	return &m->d[i];
}

/* The depth to show a function entry/exit at (entries count up, exits down;
 * an exit whose entry is before the dump's window stays at 0). */
static int func_depth(struct depths *m, const struct bt_event_hdr *e)
{
	uint32_t *d = depth_of(m, e->tid);
	if (!d)
		return 0;
	if (e->type == BT_EV_APP_FUNC_ENTRY)
		return (int)(*d)++;
	return (int)(*d = *d ? *d - 1 : 0);
}

static int print_events(const struct bt_dump *d, const struct ropts *o, FILE *out)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t n, ntasks, nprobes, ngaps = 0, gi = 0;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	const struct bt_task *tasks = bt_dump_tasks(d, &ntasks);
	const struct bt_probe_desc *probes = bt_dump_probes(d, &nprobes);
	struct bt_seq_gap *gaps = NULL;
	struct bt_namer *nm = bt_namer_new(tasks, ntasks);
	const struct bt_event_filter *f = &o->f;
	char fields[4096], tb[64]; /* escaped names take up to 4 bytes a byte */

	if (!nm)
		return -ENOMEM;
	if (!o->no_lost && bt_seq_gaps(ev, n, h->ncpus, &gaps, &ngaps) < 0) {
		bt_namer_free(nm);
		return -ENOMEM;
	}
	fprintf(out, "cpus=%u\n", h->ncpus);
	struct depths dm = { 0 };
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *e = ev[i].ev;
		int depth = e->type == BT_EV_APP_FUNC_ENTRY || e->type == BT_EV_APP_FUNC_EXIT ? func_depth(&dm, e) : -1;
		for (; gi < ngaps && gaps[gi].index == i; gi++)
			if (bt_filter_cpu_ok(f, gaps[gi].cpu) && bt_filter_time_ok(f, e->ts_ns))
				fprintf(out, "CPU:%u [LOST %" PRIu64 " EVENTS]\n", gaps[gi].cpu, gaps[gi].missing);
		if (e->type == BT_EV_PROCESS_EXEC)
			bt_namer_apply(nm, e, ev[i].len);
		if (bt_filter_match(f, e)) {
			char cb[BT_ESCAPED_LEN(BT_TASK_COMM_LEN)];
			const char *comm = e->tid == 0 ? "<idle>"
					   : bt_escape_text(bt_namer_comm(nm, e->tid, e->cpu), BT_TASK_COMM_LEN, cb,
							    sizeof(cb));
			if (ev[i].app >= 0) {
				/* function entries/exits indented by their depth (up to 64) */
				int ind = depth < 0 ? 0 : depth > 64 ? 128 : 2 * depth;
				memset(fields, ' ', (size_t)ind);
				bt_format_app_fields(fields + ind, sizeof(fields) - (size_t)ind, e, ev[i].len,
						     bt_dump_app_event_name(d, ev[i].app, ((const struct bt_ev_app *)e)->name_id));
			}
			else
				bt_format_fields(fields, sizeof(fields), e, ev[i].len, nm, probes, nprobes);
			if (o->wall)
				fmt_wall(h, e->ts_ns, tb, sizeof(tb));
			else
				snprintf(tb, sizeof(tb), "%5" PRIu64 ".%06" PRIu64, (uint64_t)e->ts_ns / 1000000000u,
					 ((uint64_t)e->ts_ns % 1000000000u) / 1000u);
			fprintf(out, "%16s-%-5u [%03u] %s: %s: %s\n", comm, e->tid, e->cpu, tb, bt_event_name(e->type),
				fields);
			if (o->stacks)
				bt_print_event_stacks(out, d, e);
		}
		if (e->type != BT_EV_PROCESS_EXEC)
			bt_namer_apply(nm, e, ev[i].len);
	}
	free(gaps);
	free(dm.tid);
	free(dm.d);
	bt_namer_free(nm);
	return 0;
}

/* ---- stats --------------------------------------------------------------- */

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
		fprintf(out, "  program runs skipped by the kernel: not recorded (dump of an older recorder)\n");
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

static int print_stats(const struct bt_dump *d, const char *path, const struct ropts *o, FILE *out)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	const struct bt_stats *bs = bt_dump_buffer_stats(d);
	const struct bt_read_stats *rs = bt_dump_read_stats(d);
	const uint64_t *drops = bt_dump_rb_drops(d), *emitted = bt_dump_rb_emitted(d);
	size_t n, nblocks, ntasks, nprobes;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	uint32_t nc = h->ncpus, ng = h->ngroups;
	char b1[64], b2[64], b3[64];
	const struct bt_event_filter *f = &o->f;
	int filtered = bt_filter_active(f);

	bt_dump_blocks(d, &nblocks);
	bt_dump_tasks(d, &ntasks);
	bt_dump_probes(d, &nprobes);
	struct bt_seq_cpu *sc = calloc(nc, sizeof(*sc));
	uint64_t *cnt = calloc((size_t)nc * BT_GROUP_MAX, sizeof(*cnt)); /* filtered events [cpu][group] */
	if (!sc || !cnt) {
		free(sc);
		free(cnt);
		return -ENOMEM;
	}
	struct bt_seq_window w;
	if (bt_seq_analyze(ev, n, nc, &w, sc) < 0) {
		free(sc);
		free(cnt);
		return -ENOMEM;
	}
	uint64_t nmatch = 0, mfirst = 0, mlast = 0;
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *e = ev[i].ev;
		if (!bt_filter_match(f, e))
			continue;
		if (!nmatch)
			mfirst = e->ts_ns;
		mlast = e->ts_ns;
		nmatch++;
		int g = bt_event_group(e->type);
		if (g >= 0 && e->cpu < nc)
			cnt[(size_t)e->cpu * BT_GROUP_MAX + (uint32_t)g]++;
	}

	/* header */
	if (path)
		fprintf(out, "dump:       %s\n", path);
	fprintf(out, "format:     version %u, ", h->version);
	if (h->compression)
		fprintf(out, "zlib level %u, ", h->zlevel);
	else
		fprintf(out, "uncompressed, ");
	fprintf(out, "%s file, %s of blocks and tables\n", human(h->file_size, b1, sizeof(b1)),
		human(h->body_raw_len, b2, sizeof(b2)));
	char eh[BT_ESCAPED_LEN(sizeof(h->hostname))], ek[BT_ESCAPED_LEN(sizeof(h->kernel))],
		er[BT_ESCAPED_LEN(sizeof(h->reason))];
	fprintf(out, "host:       %s, kernel %s, %u CPUs, recorder pid %" PRIu64 "\n",
		bt_escape_text(h->hostname, sizeof(h->hostname), eh, sizeof(eh)),
		bt_escape_text(h->kernel, sizeof(h->kernel), ek, sizeof(ek)), nc, h->recorder_pid);
	fprintf(out, "created:    %s (boot time %s), reason %s, dump #%" PRIu64,
		fmt_wall(h, h->created_boottime_ns, b1, sizeof(b1)), fmt_secs(h->created_boottime_ns, b2, sizeof(b2)),
		h->reason[0] ? bt_escape_text(h->reason, sizeof(h->reason), er, sizeof(er)) : "-", h->dump_seq);
	if (h->overlaps_dump)
		fprintf(out, " (may overlap dump #%" PRIu64 ")", h->overlaps_dump);
	fputc('\n', out);
	bt_report_trigger_fired(d, out);
	fprintf(out, "buffer:     %s, %u blocks of %s, %u active; groups", human(h->buffer_size, b1, sizeof(b1)),
		h->nblocks, human(h->block_size, b2, sizeof(b2)), h->active);
	int any = 0;
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if (h->groups_enabled & (1u << g))
			fprintf(out, "%s%s", any++ ? "," : " ", bt_group_name(g));
	fprintf(out, "%s\n", any ? "" : " none recorded");
	fprintf(out, "tables:     %zu tasks, %zu probes\n", ntasks, nprobes);
	if (h->clock_id != 7)
		fprintf(out, "clock:      %u (not CLOCK_BOOTTIME: times are not seconds since boot)\n", h->clock_id);
	fputc('\n', out);

	/* windows */
	fprintf(out, "events:     %" PRIu64 " in %zu blocks\n", w.events, nblocks);
	if (w.events)
		fprintf(out, "window:     %s .. %s (%s)\n", fmt_secs(w.first_ts, b1, sizeof(b1)),
			fmt_secs(w.last_ts, b2, sizeof(b2)), dur(w.first_ts, w.last_ts, b3, sizeof(b3)));
	if (filtered) {
		fprintf(out, "matching:   %" PRIu64 " events", nmatch);
		if (nmatch)
			fprintf(out, ", %s .. %s (%s)", fmt_secs(mfirst, b1, sizeof(b1)), fmt_secs(mlast, b2, sizeof(b2)),
				dur(mfirst, mlast, b3, sizeof(b3)));
		fputc('\n', out);
	}
	if (w.events) {
		fprintf(out, "latest continuous window: %s .. %s (%s, %" PRIu64 " events)\n",
			fmt_secs(w.cont_start_ts, b1, sizeof(b1)), fmt_secs(w.last_ts, b2, sizeof(b2)),
			dur(w.cont_start_ts, w.last_ts, b3, sizeof(b3)), w.cont_events);
		if (w.limit_cpu < 0) {
			fprintf(out, "            starts at the first event: no CPU misses an event\n");
		} else {
			const struct bt_seq_cpu *p = &sc[w.limit_cpu];
			if (p->limit == BT_SEQ_LIMIT_GAP)
				fprintf(out, "            starts after CPU %d's newest seq gap (seqs %u..%u missing)\n",
					w.limit_cpu, p->gap_from, p->gap_to);
			else
				fprintf(out, "            starts at CPU %d's oldest retained event (seq %u; older ones were overwritten)\n",
					w.limit_cpu, p->first_seq);
		}
		fprintf(out, "            (newest stretch ending at the last event in which no CPU misses an\n"
			     "            event: it starts at the latest, over CPUs, of the first event after the\n"
			     "            CPU's newest seq gap, or its oldest retained event unless that is seq 0)\n");
	}
	fputc('\n', out);

	/* per CPU */
	fprintf(out, "%-5s %10s", "cpu", filtered ? "matching" : "events");
	for (int g = 0; g < BT_GROUP_MAX; g++)
		fprintf(out, " %9s", bt_group_name(g));
	fprintf(out, " %9s %8s %9s  %-16s %s\n", "rb_drops", "seq_gaps", "missing", "oldest", "seqs");
	uint64_t tg[BT_GROUP_MAX] = { 0 }, tall = 0, tdrop = 0, tgaps = 0, tmiss = 0;
	for (uint32_t c = 0; c < nc; c++) {
		uint64_t all = 0, dr = 0;
		for (int g = 0; g < BT_GROUP_MAX; g++)
			all += cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g];
		for (uint32_t g = 0; g < ng; g++)
			dr += drops[(size_t)c * ng + g];
		if (!all && !dr && !sc[c].events)
			continue;
		if (!bt_filter_cpu_ok(f, c))
			continue;
		fprintf(out, "%-5u %10" PRIu64, c, all);
		for (int g = 0; g < BT_GROUP_MAX; g++) {
			fprintf(out, " %9" PRIu64, cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g]);
			tg[g] += cnt[(size_t)c * BT_GROUP_MAX + (uint32_t)g];
		}
		if (sc[c].events)
			snprintf(b1, sizeof(b1), "%u..%u", sc[c].first_seq, sc[c].last_seq);
		else
			snprintf(b1, sizeof(b1), "-");
		fprintf(out, " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "  %-16s %s\n", dr, sc[c].gaps, sc[c].missing,
			sc[c].events ? fmt_secs(sc[c].first_ts, b2, sizeof(b2)) : "-", b1);
		tall += all;
		tdrop += dr;
		tgaps += sc[c].gaps;
		tmiss += sc[c].missing;
	}
	fprintf(out, "%-5s %10" PRIu64, "total", tall);
	for (int g = 0; g < BT_GROUP_MAX; g++)
		fprintf(out, " %9" PRIu64, tg[g]);
	fprintf(out, " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "\n", tdrop, tgaps, tmiss);
	fputc('\n', out);

	/* losses */
	uint64_t alldrops = 0;
	for (size_t i = 0; i < (size_t)nc * ng; i++)
		alldrops += drops[i];
	fprintf(out, "losses:\n");
	fprintf(out, "  ring-buffer reservation failures: %" PRIu64 "\n", alldrops);
	for (uint32_t c = 0; c < nc && alldrops; c++) {
		uint64_t row = 0;
		for (uint32_t g = 0; g < ng; g++)
			row += drops[(size_t)c * ng + g];
		if (!row)
			continue;
		fprintf(out, "    cpu %u:", c);
		for (uint32_t g = 0; g < ng; g++) {
			const char *gn = bt_group_name((int)g);
			if (gn)
				fprintf(out, " %s %" PRIu64, gn, drops[(size_t)c * ng + g]);
			else
				fprintf(out, " group%u %" PRIu64, g, drops[(size_t)c * ng + g]);
		}
		fputc('\n', out);
	}
	if (emitted) {
		uint64_t e = 0;
		for (size_t i = 0; i < (size_t)nc * ng; i++)
			e += emitted[i];
		fprintf(out, "  ring-buffer events submitted: %" PRIu64 "\n", e);
	}
	fprintf(out, "  seq gaps: %" PRIu64 " gaps, %" PRIu64 " events missing, %" PRIu64 " duplicates\n", w.gaps,
		w.missing, w.dups);
	fprintf(out, "  dump read: %" PRIu64 " blocks read, %" PRIu64 " lost (overwritten while dumping), %" PRIu64
		     " busy (write in flight, not dumped), %" PRIu64 " never used\n",
		rs->blocks_read, rs->blocks_lost, rs->blocks_busy, rs->blocks_empty);
	fprintf(out, "  buffer entries (event batches): %" PRIu64 " written, %" PRIu64 " rejected (too large), %" PRIu64
		     " dropped (blocks held by stalled writers)\n",
		bs->entries_written, bs->entries_rejected, bs->entries_dropped);
	fprintf(out, "  buffer blocks: %" PRIu64 " used, %" PRIu64 " closed early, %" PRIu64 " skipped, %" PRIu64
		     " positions stale, %" PRIu64 " core races, %" PRIu64 " padding bytes, %" PRIu64 " resizes\n",
		bs->blocks_used, bs->blocks_closed, bs->blocks_skipped, bs->positions_stale, bs->core_races,
		bs->padding_bytes, bs->resizes);
	fprintf(out, "  drain: %" PRIu64 " events written into the buffer, %" PRIu64 " rejected\n", h->drain_events,
		h->drain_rejected);
	print_kernel_skips(d, ev, n, out);
	if (bt_dump_unknown_events(d))
		fprintf(out, "  events of unknown types skipped: %" PRIu64 " (written by a newer btrace-bpf)\n",
			bt_dump_unknown_events(d));
	bt_report_stack_stats(d, out);
	bt_report_apps(d, out);
	bt_report_triggers(d, out);
	free(sc);
	free(cnt);
	return 0;
}

/* Filters that cannot match anything in this dump: say so instead of
 * printing an empty report that looks like "nothing happened". */
static void warn_empty_filters(const struct bt_dump *d, const struct ropts *o)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	const struct bt_event_filter *f = &o->f;
	int any = 0;

	if (f->cpus) {
		for (uint32_t c = 0; c < h->ncpus; c++)
			any |= bt_filter_cpu_ok(f, c);
		if (!any)
			fprintf(stderr, PROG ": report: --cpu selects none of this dump's CPUs (0-%u)\n", h->ncpus - 1);
	}
	if ((f->since.set || f->until.set) && n) {
		if (f->t0 > f->t1 || f->t0 > ev[n - 1].ev->ts_ns || f->t1 < ev[0].ev->ts_ns)
			fprintf(stderr,
				PROG ": report: --since/--until/--time select no event (events span %" PRIu64 ".%06" PRIu64
				     " .. %" PRIu64 ".%06" PRIu64 ")\n",
				(uint64_t)ev[0].ev->ts_ns / 1000000000, (uint64_t)ev[0].ev->ts_ns % 1000000000 / 1000,
				(uint64_t)ev[n - 1].ev->ts_ns / 1000000000,
				(uint64_t)ev[n - 1].ev->ts_ns % 1000000000 / 1000);
	}
}

/* ---- functions ----------------------------------------------------------- */

static int func_keep(const struct bt_event_hdr *h, void *ctx)
{
	return bt_filter_match(ctx, h);
}

static int func_cpu(uint32_t cpu, void *ctx)
{
	return bt_filter_cpu_ok(ctx, cpu);
}

/* report --functions/--hot with report's filters, named in the window line */
static int print_functions(const struct bt_dump *d, const struct ropts *o, FILE *out)
{
	const struct bt_event_filter *ft = &o->f;
	char what[256] = "";
	size_t w = 0;

	if (ft->npids) {
		w += (size_t)snprintf(what + w, sizeof(what) - w, "-p ");
		for (size_t i = 0; i < ft->npids && w < sizeof(what); i++)
			w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u", i ? "," : "", ft->pids[i]);
	}
	if (ft->cpus && w < sizeof(what)) { /* as ranges: -c 0,2-3 */
		w += (size_t)snprintf(what + w, sizeof(what) - w, "%s-c ", w ? " " : "");
		for (uint32_t c = 0, k = 0; c < BT_DUMP_MAX_CPUS && w < sizeof(what); c++) {
			if (!bt_filter_cpu_ok(ft, c) || (c && bt_filter_cpu_ok(ft, c - 1)))
				continue;
			uint32_t e = c;
			while (e + 1 < BT_DUMP_MAX_CPUS && bt_filter_cpu_ok(ft, e + 1))
				e++;
			if (e == c)
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u", k++ ? "," : "", c);
			else
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%u-%u", k++ ? "," : "", c, e);
		}
	}
	if (ft->types && w < sizeof(what)) {
		w += (size_t)snprintf(what + w, sizeof(what) - w, "%s-e ", w ? " " : "");
		for (int t = 1, k = 0; t < BT_EV_MAX && w < sizeof(what); t++)
			if (ft->types & (1u << t))
				w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%s", k++ ? "," : "",
						      bt_event_name((uint32_t)t));
	}
	struct bt_func_filter ff = {
		.keep = func_keep, .cpu_ok = func_cpu, .ctx = (void *)ft,
		.timed = ft->since.set || ft->until.set, .t0 = ft->t0, .t1 = ft->t1,
		.what = what[0] ? what : NULL,
	};
	return o->hot ? bt_report_hot(d, &ff, o->top ? o->top : 10, out) : bt_report_functions(d, &ff, out);
}

static int run(const struct bt_dump *d, const char *path, struct ropts *o, FILE *out)
{
	int r;
	size_t ne;
	const struct bt_dump_event *evs = bt_dump_events(d, &ne);

	filt_init(&o->f, evs, ne);
	if (path)
		warn_empty_filters(d, o);
	struct bt_stack_filter sf = { .keep = func_keep, .ctx = &o->f, .offcpu = o->offcpu };
	r = o->profile ? bt_report_profile(d, &sf, out)
		: o->folded ? bt_report_folded(d, &sf, out)
		: o->functions || o->hot ? print_functions(d, o, out)
		: o->stats   ? print_stats(d, path, o, out)
			     : print_events(d, o, out);
	if (fflush(out) != 0 || ferror(out))
		return r ? r : -EIO;
	return r;
}

int bt_dump_report(const struct bt_dump *d, int stats, FILE *out)
{
	struct ropts o = { .stats = stats };
	return run(d, NULL, &o, out);
}

static void ropts_free(struct ropts *o)
{
	bt_filter_free(&o->f);
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_SINCE = 256, OPT_UNTIL, OPT_NO_LOST, OPT_MANIFEST, OPT_HOT, OPT_TOP, OPT_STACKS, OPT_PROFILE, OPT_FOLDED,
	       OPT_OFFCPU, OPT_TIME };
	static const struct option longopts[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "functions", no_argument, NULL, 'f' },
		{ "hot", no_argument, NULL, OPT_HOT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "cpu", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'p' },
		{ "event", required_argument, NULL, 'e' },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "wall", no_argument, NULL, 'w' },
		{ "no-lost", no_argument, NULL, OPT_NO_LOST },
		{ "manifest", no_argument, NULL, OPT_MANIFEST },
		{ "stacks", no_argument, NULL, OPT_STACKS },
		{ "profile", no_argument, NULL, OPT_PROFILE },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "offcpu", no_argument, NULL, OPT_OFFCPU },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ropts o = { 0 };
	int c, r, manifest = 0;

	optind = 0; /* full reset: main may have used getopt */
	while ((c = getopt_long(argc, argv, "sfc:p:e:wh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.stats = 1;
			break;
		case 'f':
			o.functions = 1;
			break;
		case 'c':
			r = bt_filter_parse_cpus(&o.f, optarg);
			if (r < 0) {
				fprintf(stderr, PROG ": report: bad CPU list '%s' (e.g. 0,2-3; CPUs < %d)\n", optarg,
					BT_DUMP_MAX_CPUS);
				goto usage_err;
			}
			break;
		case 'p':
			if (bt_filter_parse_pids(&o.f, optarg) < 0) {
				fprintf(stderr, PROG ": report: bad pid list '%s' (e.g. 1234,1240)\n", optarg);
				goto usage_err;
			}
			break;
		case 'e':
			if (parse_events(&o, optarg) < 0)
				goto usage_err;
			break;
		case OPT_SINCE:
		case OPT_UNTIL:
			if (bt_filter_parse_time(c == OPT_SINCE ? &o.f.since : &o.f.until, optarg) < 0) {
				fprintf(stderr, PROG ": report: bad time '%s' (seconds: N after the first event, -N before the last, @N boot time)\n",
					optarg);
				goto usage_err;
			}
			break;
		case OPT_TIME:
			if (bt_filter_parse_time_range(&o.f, optarg) < 0) {
				fprintf(stderr, PROG ": report: bad time range '%s' (A..B, each end seconds: N after the first event, -N before the last, @N boot time)\n",
					optarg);
				goto usage_err;
			}
			break;
		case 'w':
			o.wall = 1;
			break;
		case OPT_NO_LOST:
			o.no_lost = 1;
			break;
		case OPT_MANIFEST:
			manifest = 1;
			break;
		case OPT_HOT:
			o.hot = 1;
			break;
		case OPT_TOP: {
			const char *p = optarg;
			if (bt_filter_parse_u32(&p, &o.top) < 0 || *p || o.top == 0 || o.top > 1000) {
				fprintf(stderr, PROG ": report: bad --top '%s' (rows: 1 to 1000)\n", optarg);
				goto usage_err;
			}
			break;
		}
		case OPT_STACKS:
			o.stacks = 1;
			break;
		case OPT_PROFILE:
			o.profile = 1;
			break;
		case OPT_FOLDED:
			o.folded = 1;
			break;
		case OPT_OFFCPU:
			o.offcpu = 1;
			break;
		case 'h':
			usage(stdout);
			ropts_free(&o);
			return 0;
		default:
			goto usage_err;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": report: %s\n", optind >= argc ? "no dump file given" : "one dump file at a time");
		goto usage_err;
	}
	const char *path = argv[optind];
	char err[512];
	if (manifest) {
		/* The recorder's manifest of this dump (docs/manifest.md). */
		r = bt_manifest_print(stdout, path, NULL, NULL, err, sizeof(err));
		if (r)
			fprintf(stderr, PROG ": %s\n", err);
		ropts_free(&o);
		return r ? 1 : 0;
	}
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	if (!d) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		ropts_free(&o);
		return 1;
	}
	r = run(d, path, &o, stdout);
	if (r < 0)
		fprintf(stderr, PROG ": report: %s\n", r == -EIO ? "write error on standard output" : strerror(-r));
	else if (!o.stats && !o.functions && !o.hot && !o.no_lost && !o.profile && !o.folded) {
		size_t n;
		struct bt_seq_window w;
		const struct bt_dump_event *ev = bt_dump_events(d, &n);
		if (bt_seq_analyze(ev, n, bt_dump_header(d)->ncpus, &w, NULL) == 0 && w.missing)
			fprintf(stderr, PROG ": %s: %" PRIu64 " events missing in %" PRIu64 " seq gap(s) (see --stats)\n",
				path, w.missing, w.gaps);
	}
	bt_dump_close(d);
	ropts_free(&o);
	return r < 0 ? 1 : 0;

usage_err:
	fprintf(stderr, "Try '" PROG " report --help'.\n");
	ropts_free(&o);
	return 2;
}
