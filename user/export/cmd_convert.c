// SPDX-License-Identifier: MIT
/*
 * cmd_convert.c - `btrace-bpf convert DUMP [-o OUT] [--format perfetto|json]`:
 * a dump as a trace that the Perfetto UI (ui.perfetto.dev) or
 * chrome://tracing opens. The conversion itself is export_file.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "export.h"
#include "util.h"
#include "commands.h"
#include "event_names.h"
#include "event_filter.h"


/* ---- command line ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " BT_PROG " convert [OPTIONS] DUMP\n"
		"\n"
		"Convert a dump into a trace for the Perfetto UI (https://ui.perfetto.dev:\n"
		"\"Open trace file\") or, with --format json, the Chrome trace event format\n"
		"(chrome://tracing, Perfetto UI, speedscope).\n"
		"\n"
		"Perfetto output has CPU tracks (who ran where), thread states, IRQ and softirq\n"
		"slices, CPU frequency and idle counters, syscalls, uprobe function slices with\n"
		"their arguments and return values, process and thread names, and the losses:\n"
		"\"btrace-bpf\" tracks with a slice where each CPU's history has a hole (seq gap)\n"
		"and the dump's loss counters, ring-buffer drops in Info and stats.\n"
		"Application events (in-process tracing, btrace.h) go on an \"app events\" track\n"
		"of their thread: BEGIN/END as slices, instants with their arguments, a\n"
		"\"LOST n events\" instant where the thread's seq has a hole; counters on a track\n"
		"per name under the process, which is named by the application.\n"
		"A dump written by a trigger (record --trigger) marks the triggering event: an\n"
		"instant on a \"btrace-bpf: triggers\" track and one on a \"trigger\" track of the\n"
		"thread it is about (JSON: cat btrace_trigger, and metadata.trigger).\n"
		"\n"
		"Options:\n"
		"  -o, --output FILE    write to FILE (atomically); '-' for standard output.\n"
		"                       Default: DUMP with .btd replaced by .perfetto-trace\n"
		"                       (.json for json), plus .gz with -z\n"
		"  -f, --format FMT     perfetto (default), json, or pprof: the CPU samples'\n"
		"                       call stacks as a gzipped pprof profile (go tool pprof,\n"
		"                       Pyroscope, Parca, Grafana), labels pid, tid, comm\n"
		"      --offcpu         pprof: the off-CPU blocks instead, weighted by the\n"
		"                       time blocked (microseconds)\n"
		"  -z, --gzip           gzip the output (the Perfetto UI opens .gz files as is)\n"
		"      --time A..B      only events in this window, as report --time: seconds\n"
		"                       after the first event, -N before the last, @N absolute\n"
		"                       (CLOCK_BOOTTIME); either end may be left out\n"
		"  -p, --pid LIST       only events of these tids or pids (comma-separated),\n"
		"                       and events about them (switches to them, wakeups)\n"
		"      --no-compact-sched\n"
		"                       perfetto: every sched_switch as a full ftrace event. By\n"
		"                       default a switch whose previous task the importer infers\n"
		"                       from the CPU's last switch goes into the bundle's compact\n"
		"                       arrays: the same trace in files about 3x smaller\n"
		"      --bundle-events N  perfetto: at most N events per CPU bundle packet\n"
		"                       (default 1000)\n"
		"  -q, --quiet          no progress and no summary line\n"
		"  -h, --help           this help\n"
		"\n"
		"Examples:\n"
		"  " BT_PROG " convert traces/btrace-host-20250101-120000-1.btd\n"
		"  " BT_PROG " convert -z -o trace.perfetto-trace.gz dump.btd\n"
		"  " BT_PROG " convert --format json -o - dump.btd | python3 -m json.tool | less\n"
		"  " BT_PROG " convert -f pprof -o cpu.pb.gz dump.btd && go tool pprof -top cpu.pb.gz\n"
		"  " BT_PROG " convert --time 2.5..3 --pid 1234 dump.btd\n"
		"\n"
		"Exit status: 0 ok, 1 unreadable or damaged dump, write error or interrupted,\n"
		"2 bad usage.\n");
}

struct progress {
	int on;
	uint64_t last_ns;
	int shown;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static int progress_cb(uint64_t done, uint64_t total, void *ctx)
{
	struct progress *pg = ctx;
	struct timespec ts;
	if (interrupted)
		return 1;
	if (!pg->on)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (done >= total) {
		if (pg->shown)
			fprintf(stderr, "\r\033[K");
		pg->shown = 0;
		return 0;
	}
	if (now < pg->last_ns + 200000000ull)
		return 0;
	pg->last_ns = now;
	pg->shown = 1;
	fprintf(stderr, "\r" BT_PROG ": converting %3u%% (%" PRIu64 " of %" PRIu64 " events)",
		(unsigned)(total ? done * 100 / total : 100), done, total);
	return 0;
}

static int default_output(char *out, size_t len, const char *dump, const struct bt_export_opts *o)
{
	const char *ext = o->format == BT_EXPORT_JSON ? ".json" : o->format == BT_EXPORT_PPROF ? ".pb" : ".perfetto-trace";
	size_t n = strlen(dump);
	if (n > 4 && !strcmp(dump + n - 4, ".btd"))
		n -= 4;
	int r = snprintf(out, len, "%.*s%s%s%s", (int)n, dump, o->offcpu ? ".offcpu" : "", ext,
			 o->gzip || o->format == BT_EXPORT_PPROF ? ".gz" : "");
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/* The command; filt (--time, --pid) is the caller's to free. */
static int convert(int argc, char **argv, struct bt_event_filter *filt)
{
	enum { OPT_COMPACT = 256, OPT_NO_COMPACT, OPT_BUNDLE, OPT_OFFCPU, OPT_TIME };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "gzip", no_argument, NULL, 'z' },
		{ "compact-sched", no_argument, NULL, OPT_COMPACT },
		{ "no-compact-sched", no_argument, NULL, OPT_NO_COMPACT },
		{ "bundle-events", required_argument, NULL, OPT_BUNDLE },
		{ "offcpu", no_argument, NULL, OPT_OFFCPU },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "pid", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bt_export_opts o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 };
	const char *out = NULL;
	int quiet = 0, c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "o:f:zqhp:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!optarg[0]) {
				bt_err("convert: -o needs a file name (or - for standard output)");
				return 2;
			}
			out = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "perfetto") || !strcmp(optarg, "proto") || !strcmp(optarg, "protobuf"))
				o.format = BT_EXPORT_PERFETTO;
			else if (!strcmp(optarg, "json") || !strcmp(optarg, "chrome"))
				o.format = BT_EXPORT_JSON;
			else if (!strcmp(optarg, "pprof"))
				o.format = BT_EXPORT_PPROF;
			else {
				bt_err("convert: unknown format '%s' (perfetto, json or pprof)", optarg);
				goto usage_err;
			}
			break;
		case 'z':
			o.gzip = 1;
			break;
		case OPT_COMPACT:
			o.compact_sched = 1;
			break;
		case OPT_NO_COMPACT:
			o.compact_sched = 0;
			break;
		case OPT_BUNDLE: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v < 1 || v > 1000000 || optarg[0] == '-') {
				bt_err("convert: bad --bundle-events '%s' (1..1000000)", optarg);
				goto usage_err;
			}
			o.bundle_events = (uint32_t)v;
			break;
		}
		case OPT_OFFCPU:
			o.offcpu = 1;
			break;
		case OPT_TIME:
			if (bt_filter_parse_time_range(filt, optarg) < 0) {
				bt_err("convert: bad --time '%s' (A..B: seconds after the first event,"
				       " -N before the last, @N absolute; either end may be left out)", optarg);
				goto usage_err;
			}
			break;
		case 'p':
			if (bt_filter_parse_pids(filt, optarg) < 0) {
				bt_err("convert: bad --pid '%s' (tids or pids, comma-separated)", optarg);
				goto usage_err;
			}
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto usage_err;
		}
	}
	if (o.offcpu && o.format != BT_EXPORT_PPROF) {
		bt_err("convert: --offcpu is for --format pprof (Perfetto and JSON show off-CPU blocks as slices)");
		goto usage_err;
	}
	if (optind != argc - 1) {
		bt_err("convert: %s", optind >= argc ? "no dump file given" : "one dump file at a time");
		goto usage_err;
	}
	const char *path = argv[optind];
	char outbuf[PATH_MAX], err[512];
	if (!out) {
		if (default_output(outbuf, sizeof(outbuf), path, &o) < 0) {
			bt_err("convert: output path too long; give -o");
			return 2;
		}
		out = outbuf;
	}
	int to_stdout = !strcmp(out, "-");
	struct stat sin, sout;
	if (!to_stdout && stat(path, &sin) == 0 && stat(out, &sout) == 0 && sin.st_dev == sout.st_dev &&
	    sin.st_ino == sout.st_ino) {
		bt_err("convert: %s is the dump itself; give another -o", out);
		return 2;
	}
	if (to_stdout && isatty(STDOUT_FILENO) && (o.format != BT_EXPORT_JSON || o.gzip)) {
		bt_err("convert: not writing a binary trace to a terminal; give -o FILE or redirect");
		return 2;
	}

	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	if (!d) {
		bt_err("%s: %s", path, err);
		return 1;
	}
	/* Ctrl-C or a kill stops the conversion cleanly (the temporary file is
	 * removed); a file size limit makes write() fail instead of killing us */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGXFSZ, SIG_IGN);
	interrupted = 0;
	struct progress pg = { .on = !quiet && isatty(STDERR_FILENO) };
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* the first progress line after a moment: short conversions show none */
	pg.last_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec + 300000000ull;
	o.progress = progress_cb;
	o.filter = filt;
	o.progress_ctx = &pg;
	struct bt_export_stats st;
	int r = bt_export_file(d, out, &o, &st, err, sizeof(err));
	if (pg.shown)
		fprintf(stderr, "\r\033[K");
	if (r < 0) {
		bt_err("convert: %s", err[0] ? err : strerror(-r));
		bt_dump_close(d);
		return 1;
	}
	if (!quiet) {
		char sz[32];
		double b = (double)st.bytes;
		if (b >= 1 << 20)
			snprintf(sz, sizeof(sz), "%.1f MiB", b / (1 << 20));
		else if (b >= 1 << 10)
			snprintf(sz, sizeof(sz), "%.1f KiB", b / (1 << 10));
		else
			snprintf(sz, sizeof(sz), "%" PRIu64 " B", st.bytes);
		bt_log(BT_LOG_NOTICE, "%s: %" PRIu64 " events -> %s (%s, %s%s)", path, st.events,
			to_stdout ? "standard output" : out,
			o.format == BT_EXPORT_JSON ? "json" : o.format == BT_EXPORT_PPROF ? "pprof" : "perfetto", sz,
			o.gzip || o.format == BT_EXPORT_PPROF ? " gzip" : "");
		if (st.samples_no_stack)
			bt_warn("%s: %" PRIu64 " %s whose stack was lost or not taken, kept under a"
				" \"[stack lost]\" or \"[no stack]\" frame",
				path, st.samples_no_stack, o.offcpu ? "off-CPU blocks" : "CPU samples");
		if (st.func_too_deep)
			bt_warn("%s: %" PRIu64 " function calls below 511 open ones drawn as one"
				" marker slice each run (trace processor keeps 512 levels)",
				path, st.func_too_deep);
		if (st.missing)
			bt_warn("%s: %" PRIu64 " events missing in %" PRIu64
					" seq gap(s), shown on the btrace-bpf tracks",
				path, st.missing, st.gaps);
		if (st.app_missing)
			bt_warn("%s: %" PRIu64 " application events missing in %" PRIu64
					" per-thread seq gap(s), shown as LOST instants on the threads",
				path, st.app_missing, st.app_gaps);
		if (st.app_unmatched || st.app_dropped)
			bt_warn("%s: application events: %" PRIu64 " BEGIN/END without partner"
					" (shown as instants), %" PRIu64 " of threads of other processes (left out)",
				path, st.app_unmatched, st.app_dropped);
		if (st.func_slices || st.func_open || st.func_unmatched || st.func_exits_dropped)
			bt_warn("%s: function calls: %" PRIu64 " drawn, %" PRIu64
					" open at the dump's end (closed there, marked open_at_dump_end), %" PRIu64
					" entries whose exit is lost (instants), %" PRIu64
					" exits whose entry is before the window (left out)",
				path, st.func_slices, st.func_open, st.func_unmatched, st.func_exits_dropped);
	}
	bt_dump_close(d);
	return 0;

usage_err:
	fprintf(stderr, "Try '" BT_PROG " convert --help'.\n");
	return 2;
}

int cmd_convert(int argc, char **argv)
{
	struct bt_event_filter filt = { 0 };
	int r = convert(argc, argv, &filt);
	bt_filter_free(&filt);
	return r;
}
