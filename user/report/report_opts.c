// SPDX-License-Identifier: MIT
/*
 * report_opts.c - `report`'s options, parsed with argp as `record` parses
 * its own: what to print, and the event filter (event_filter.h) that
 * convert shares.
 */
#include "report_opts.h"

#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "util.h"
#include "cli.h"

enum {
	OPT_SINCE = 256,
	OPT_UNTIL,
	OPT_TIME,
	OPT_NO_LOST,
	OPT_MANIFEST,
	OPT_HOT,
	OPT_TOP,
	OPT_STACKS,
	OPT_PROFILE,
	OPT_FOLDED,
	OPT_OFFCPU,
};

static const char doc[] =
	"Print the events of a dump in time order (all blocks and CPUs merged), one\n"
	"line each, like trace-cmd report:\n"
	"      COMM-TID    [CPU] SECONDS: EVENT: FIELDS\n"
	"SECONDS is CLOCK_BOOTTIME (seconds since boot) with microseconds. Missing\n"
	"events found from the per-CPU sequence numbers are shown where they were\n"
	"lost as \"CPU:N [LOST M EVENTS]\", and those of an application's thread\n"
	"(in-process tracing, per-thread seqs) as \"TID:N [LOST M EVENTS]\".\n"
	"\v"
	"Examples:\n"
	"  " BT_PROG " report traces/btrace-host-20250101-120000-1.btd\n"
	"  " BT_PROG " report --stats dump.btd\n"
	"  " BT_PROG " report --hot --top 5 -p 1234 dump.btd   # app 1234's time\n"
	"  " BT_PROG " report -e sched_switch,sched_wakeup --cpu 1 dump.btd\n"
	"  " BT_PROG " report --pid 1234 --since -0.5 dump.btd   # the last 0.5 s\n"
	"  " BT_PROG " report --time @1234.5..@1234.6 dump.btd\n"
	"\n"
	"Exit status: 0 ok, 1 unreadable or damaged dump, 2 bad usage.\n";

static const struct argp_option options[] = {
	{ "stats", 's', NULL, 0,
	  "Summary instead of events: header, events per CPU and group, time window, latest continuous window, "
	  "and every loss counter", 0 },
	{ "functions", 'f', NULL, 0,
	  "Per function instead of events: traced functions (-finstrument-functions + libbtrace): calls, total "
	  "time (a recursion counted once), self time (minus callees), p50, p99, max; user-space probes (-u/-U) "
	  "per function and process: calls, returns and, for %return probes, the latency distribution (count, "
	  "min, p50, p99, max); for the events the other options select (a call by its entry); the window the "
	  "counts cover and every loss that makes them lower bounds; targets that ended", 0 },
	{ "hot", OPT_HOT, NULL, 0,
	  "Traced functions, Hubble's summaries: the functions with the most self time, the deepest call chains "
	  "and the slowest ones (the longest calls without a caller in the window, down their longest callee), "
	  "each as its nested path with durations", 0 },
	{ "top", OPT_TOP, "N", 0, "Rows of each --hot summary (default 10)", 0 },
	{ "stacks", OPT_STACKS, NULL, 0,
	  "The call stacks under the events that have one (CPU samples, off-CPU blocks, wakers), innermost "
	  "frame first; a stack cut short ends in \"[truncated: why]\"", 0 },
	{ "verbose", 'v', NULL, 0,
	  "With --stacks: each symbol as its file names it (ELF version kept: clock_nanosleep@@GLIBC_2.17) and "
	  "each frame's file offset (\"func+0x1a (libc.so.6+0x8f1a)\")", 0 },
	{ "profile", OPT_PROFILE, NULL, 0,
	  "Per process, the top functions of the CPU samples the other options select: self (innermost) and "
	  "total share", 0 },
	{ "folded", OPT_FOLDED, NULL, 0,
	  "Folded stacks (\"comm;outer;...;inner COUNT\", for flamegraph.pl and speedscope); kernel frames end "
	  "in _[k]", 0 },
	{ "offcpu", OPT_OFFCPU, NULL, 0,
	  "With --profile/--folded: the off-CPU blocks instead of the samples, weighted by their time in "
	  "microseconds", 0 },
	{ "cpu", 'c', "LIST", 0, "Only these CPUs (\"0,2-3\")", 1 },
	{ "pid", 'p', "LIST", 0,
	  "Only events of these tids or tgids (also matches the task an event is about: next of a switch, "
	  "woken, forked child)", 1 },
	{ "event", 'e', "NAMES", 0,
	  "Only these events (comma list, repeatable): event names (sched_switch, sys_enter, uretprobe, ...) or "
	  "groups (sched, irq, power, syscalls, uprobe = uprobe, uretprobe and usdt events)", 1 },
	{ "events", 0, NULL, OPTION_ALIAS | OPTION_HIDDEN, NULL, 1 }, /* record's spelling */
	{ "since", OPT_SINCE, "T", 0, "Only events at or after T", 1 },
	{ "until", OPT_UNTIL, "T", 0,
	  "Only events at or before T. T is seconds (fractions allowed): N = N s after the first event of the "
	  "dump, -N = N s before its last event, @N = absolute boot time (the SECONDS column)", 1 },
	{ "time", OPT_TIME, "A..B", 0,
	  "Only events from A to B (either end may be left out: \"A..\", \"..B\"); the same as --since A "
	  "--until B", 1 },
	{ "wall", 'w', NULL, 0, "Print wall-clock time (local) instead of boot time", 2 },
	{ "no-lost", OPT_NO_LOST, NULL, 0, "Do not print LOST lines", 2 },
	{ "manifest", OPT_MANIFEST, NULL, 0,
	  "The dump's manifest (JSON, docs/manifest.md), as the recorder writes it next to each dump", 2 },
	BT_CLI_OPTION_H,
	{ NULL, 0, NULL, 0, NULL, 0 },
};

static int parse_events(struct ropts *o, const char *arg)
{
	char buf[256];
	const char *p = arg;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(buf)) {
			bt_err("bad event list '%s'", arg);
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
			char *known = NULL;

			for (int i = 1; i < BT_EV_MAX; i++)
				bt_strcatf(&known, " %s", bt_event_name((uint32_t)i));
			bt_strcatf(&known, "; groups:");
			for (int i = 0; i < BT_GROUP_MAX; i++)
				bt_strcatf(&known, " %s", bt_group_name(i));
			bt_err("unknown event '%s'; known:%s", buf, known ? known : " (out of memory)");
			free(known);
			return -EINVAL;
		}
		p += n;
		if (*p == ',' && *++p == '\0') {
			bt_err("bad event list '%s'", arg);
			return -EINVAL;
		}
	}
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct ropts *o = state->input;
	const char *p;

	switch (key) {
	case 's':
		o->stats = 1;
		break;
	case 'f':
		o->functions = 1;
		break;
	case OPT_HOT:
		o->hot = 1;
		break;
	case OPT_TOP:
		p = arg;
		if (bt_filter_parse_u32(&p, &o->top) < 0 || *p || o->top == 0 || o->top > 1000)
			argp_error(state, "bad --top '%s' (rows: 1 to 1000)", arg);
		break;
	case OPT_STACKS:
		o->stacks = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	case OPT_PROFILE:
		o->profile = 1;
		break;
	case OPT_FOLDED:
		o->folded = 1;
		break;
	case OPT_OFFCPU:
		o->offcpu = 1;
		break;
	case 'c':
		if (bt_filter_parse_cpus(&o->f, arg) < 0)
			argp_error(state, "bad CPU list '%s' (e.g. 0,2-3; CPUs < %d)", arg, BT_DUMP_MAX_CPUS);
		break;
	case 'p':
		if (bt_filter_parse_pids(&o->f, arg) < 0)
			argp_error(state, "bad pid list '%s' (e.g. 1234,1240)", arg);
		break;
	case 'e':
		if (parse_events(o, arg) < 0)
			argp_error(state, "bad --event '%s'", arg);
		break;
	case OPT_SINCE:
	case OPT_UNTIL:
		if (bt_filter_parse_time(key == OPT_SINCE ? &o->f.since : &o->f.until, arg) < 0)
			argp_error(state, "bad time '%s' (seconds: N after the first event, -N before the last, @N boot "
					  "time)", arg);
		break;
	case OPT_TIME:
		if (bt_filter_parse_time_range(&o->f, arg) < 0)
			argp_error(state, "bad time range '%s' (A..B, each end seconds: N after the first event, -N "
					  "before the last, @N boot time)", arg);
		break;
	case 'w':
		o->wall = 1;
		break;
	case OPT_NO_LOST:
		o->no_lost = 1;
		break;
	case OPT_MANIFEST:
		o->manifest = 1;
		break;
	case ARGP_KEY_ARG:
		if (o->path)
			argp_error(state, "one dump file at a time (the newest: \"$(ls -t traces/*.btd | head -1)\")");
		o->path = arg;
		break;
	case ARGP_KEY_END:
		if (!o->path)
			argp_error(state, "no dump file given: give one, e.g. the newest: \"$(ls -t traces/*.btd | head -1)\"");
		break;
	default:
		return bt_cli_common_key(key, state);
	}
	return 0;
}

void bt_report_parse_args(int argc, char **argv, struct ropts *o)
{
	struct argp argp = { options, parse_opt, "FILE", doc, NULL, NULL, NULL };

	bt_cli_parse(&argp, "report", argc, argv, 0, o);
}

void bt_report_opts_free(struct ropts *o)
{
	bt_filter_free(&o->f);
}
