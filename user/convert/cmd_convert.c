// SPDX-License-Identifier: MIT
/*
 * cmd_convert.c - `btrace-bpf convert DUMP [-o OUT] [--format perfetto|json|pprof]`:
 * a dump as a trace that the Perfetto UI (ui.perfetto.dev), chrome://tracing,
 * speedscope or pprof opens. Options are parsed with argp as `record` and
 * `report` parse theirs, but never exit: the unit test runs the command in
 * its own process. The conversion itself is export_file.c.
 */
#include <argp.h>
#include <errno.h>
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
#include "cli.h"

/* ---- command line ------------------------------------------------------------ */

static const char doc[] =
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
	"\v"
	"Examples:\n"
	"  " BT_PROG " convert traces/btrace-host-20250101-120000-1.btd\n"
	"  " BT_PROG " convert -z -o trace.perfetto-trace.gz dump.btd\n"
	"  " BT_PROG " convert --format json -o - dump.btd | python3 -m json.tool | less\n"
	"  " BT_PROG " convert -f pprof -o cpu.pb.gz dump.btd\n"
	"  go tool pprof -top cpu.pb.gz\n"
	"  " BT_PROG " convert --time 2.5..3 --pid 1234 dump.btd\n"
	"\n"
	"Exit status: 0 ok, 1 unreadable or damaged dump, write error or interrupted,\n"
	"2 bad usage.\n";

enum { OPT_COMPACT = 256, OPT_NO_COMPACT, OPT_BUNDLE, OPT_OFFCPU, OPT_PROCESS_ROOT, OPT_TIME, OPT_SINCE, OPT_UNTIL,
       OPT_USAGE };

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0,
	  "Write to FILE (atomically); '-' for standard output. Default: DUMP with .btd replaced by "
	  ".perfetto-trace (.json for json, .pb.gz for pprof), plus .gz with -z", 0 },
	{ "format", 'f', "FMT", 0,
	  "perfetto (default), json, or pprof: the CPU samples' call stacks as a gzipped pprof profile "
	  "(go tool pprof, Pyroscope, Parca, Grafana), labels pid, tid, comm, process, thread", 0 },
	{ "offcpu", OPT_OFFCPU, NULL, 0,
	  "pprof: the off-CPU blocks instead, weighted by the time blocked (microseconds)", 0 },
	{ "process-root", OPT_PROCESS_ROOT, NULL, 0,
	  "pprof: a root frame \"NAME (PID)\" per process, so flame graphs (speedscope) keep processes apart", 0 },
	{ "gzip", 'z', NULL, 0, "gzip the output (the Perfetto UI opens .gz files as is)", 0 },
	{ "time", OPT_TIME, "A..B", 0,
	  "Only events in this window, as report --time: seconds after the first event, -N before the last, "
	  "@N absolute (CLOCK_BOOTTIME); either end may be left out", 1 },
	/* report's spellings of the window's ends */
	{ "since", OPT_SINCE, "T", 0, "Only events at or after T (as --time T..)", 1 },
	{ "until", OPT_UNTIL, "T", 0, "Only events at or before T (as --time ..T)", 1 },
	{ "pid", 'p', "LIST", 0,
	  "Only events of these tids or pids (comma-separated), and events about them (switches to them, "
	  "wakeups)", 1 },
	{ "no-compact-sched", OPT_NO_COMPACT, NULL, 0,
	  "perfetto: every sched_switch as a full ftrace event. By default a switch whose previous task the "
	  "importer infers from the CPU's last switch goes into the bundle's compact arrays: the same trace in "
	  "files about 3x smaller", 2 },
	{ "compact-sched", OPT_COMPACT, NULL, OPTION_HIDDEN, "perfetto: compact sched_switch (the default)", 2 },
	{ "bundle-events", OPT_BUNDLE, "N", 0, "perfetto: at most N events per CPU bundle packet (default 1000)",
	  2 },
	{ "quiet", 'q', NULL, 0, "No progress and no summary line", 3 },
	/* argp's own help options, as record and report show them (ARGP_NO_HELP:
	 * argp's would exit), and -h as they take it */
	{ "help", '?', NULL, 0, "Give this help list", -1 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	BT_CLI_OPTION_H,
	{ NULL, 0, NULL, 0, NULL, 0 },
};

/* What the command line asks for; filt (--time, --pid) is the caller's to free. */
struct convert_args {
	struct bt_export_opts o;
	struct bt_event_filter *filt;
	const char *path, *out;
	int quiet, help;
};

/* A usage error: argp's message (program name first, at error priority),
 * then stop the parse (ARGP_NO_EXIT: argp_error does not exit). */
#define USAGE_ERR(state, ...) (argp_error(state, __VA_ARGS__), EINVAL)

static int parse_format(struct bt_export_opts *o, const char *arg)
{
	if (!strcmp(arg, "perfetto") || !strcmp(arg, "proto") || !strcmp(arg, "protobuf"))
		o->format = BT_EXPORT_PERFETTO;
	else if (!strcmp(arg, "json") || !strcmp(arg, "chrome"))
		o->format = BT_EXPORT_JSON;
	else if (!strcmp(arg, "pprof"))
		o->format = BT_EXPORT_PPROF;
	else
		return -EINVAL;
	return 0;
}

static int parse_bundle_events(struct bt_export_opts *o, const char *arg)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || *end || !*arg || v < 1 || v > 1000000 || arg[0] == '-')
		return -EINVAL;
	o->bundle_events = (uint32_t)v;
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct convert_args *a = state->input;

	switch (key) {
	case 'o':
		if (!arg[0])
			return USAGE_ERR(state, "-o needs a file name (or - for standard output)");
		a->out = arg;
		break;
	case 'f':
		if (parse_format(&a->o, arg) < 0)
			return USAGE_ERR(state, "unknown format '%s' (perfetto, json or pprof)", arg);
		break;
	case 'z':
		a->o.gzip = 1;
		break;
	case OPT_COMPACT:
	case OPT_NO_COMPACT:
		a->o.compact_sched = key == OPT_COMPACT;
		break;
	case OPT_BUNDLE:
		if (parse_bundle_events(&a->o, arg) < 0)
			return USAGE_ERR(state, "bad --bundle-events '%s' (1..1000000)", arg);
		break;
	case OPT_OFFCPU:
		a->o.offcpu = 1;
		break;
	case OPT_PROCESS_ROOT:
		a->o.process_root = 1;
		break;
	case OPT_TIME:
		if (bt_filter_parse_time_range(a->filt, arg) < 0)
			return USAGE_ERR(state, "bad --time '%s' (A..B: seconds after the first event, -N before the"
						" last, @N absolute; either end may be left out)", arg);
		break;
	case 'p':
		if (bt_filter_parse_pids(a->filt, arg) < 0)
			return USAGE_ERR(state, "bad --pid '%s' (tids or pids, comma-separated)", arg);
		break;
	case 'q':
		a->quiet = 1;
		break;
	case '?':
	case 'h':
	case OPT_USAGE:
		/* ARGP_NO_EXIT: prints, and the parse goes on (the command then stops) */
		argp_state_help(state, stdout, key == OPT_USAGE ? ARGP_HELP_USAGE : ARGP_HELP_STD_HELP);
		a->help = 1;
		break;
	case OPT_SINCE:
	case OPT_UNTIL:
		if (bt_filter_parse_time(key == OPT_SINCE ? &a->filt->since : &a->filt->until, arg) < 0)
			return USAGE_ERR(state, "bad --%s '%s': give seconds: N after the first event, -N before the"
						" last, @N boot time", key == OPT_SINCE ? "since" : "until", arg);
		break;
	case ARGP_KEY_ARG:
		if (a->path)
			return USAGE_ERR(state, "one dump file at a time");
		a->path = arg;
		break;
	case ARGP_KEY_END:
		if (a->help)
			break;
		if (a->o.offcpu && a->o.format != BT_EXPORT_PPROF)
			return USAGE_ERR(state, "--offcpu is for --format pprof (Perfetto and JSON show off-CPU"
						" blocks as slices)");
		if (a->o.process_root && a->o.format != BT_EXPORT_PPROF)
			return USAGE_ERR(state, "--process-root is for --format pprof (Perfetto and JSON draw each"
						" process apart)");
		if (!a->path)
			return USAGE_ERR(state, "no dump file given");
		break;
	default:
		return bt_cli_common_key(key, state);
	}
	return 0;
}

/* argv into a: 0 (a->help: help was shown, nothing more to do), or 2 on
 * bad usage (argp printed the message and where to get help). ARGP_NO_EXIT
 * and our own help options: the command returns, whoever calls it (main,
 * or the unit test in-process). */
static int parse_args(int argc, char **argv, struct convert_args *a)
{
	struct argp argp = { options, parse_opt, "DUMP", doc, NULL, NULL, NULL };
	error_t r = bt_cli_parse(&argp, "convert", argc, argv, ARGP_NO_EXIT | ARGP_NO_HELP, a);

	return r && !a->help ? BT_EXIT_USAGE : 0;
}

/* ---- progress and interruption ---------------------------------------------------- */

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

/* The progress line is a terminal's status line, redrawn in place: it goes
 * to stderr as is, never through bt_log (no journal, no prefix per redraw). */
static void progress_clear(struct progress *pg)
{
	if (pg->shown)
		fprintf(stderr, "\r\033[K");
	pg->shown = 0;
}

static int progress_cb(uint64_t done, uint64_t total, void *ctx)
{
	struct progress *pg = ctx;
	if (interrupted)
		return 1;
	if (!pg->on)
		return 0;
	uint64_t now = bt_now_ns();
	if (done >= total) {
		progress_clear(pg);
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

/* Ctrl-C or a kill stops the conversion cleanly (the temporary file is
 * removed); a file size limit makes write() fail instead of killing us. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGXFSZ, SIG_IGN);
	interrupted = 0;
}

/* ---- the output ------------------------------------------------------------------ */

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

/* a->out decided (buf holds a default) and safe to write: not the dump
 * itself, no binary on a terminal. 0, or 2 (bad usage, said). */
static int choose_output(struct convert_args *a, char *buf, size_t len)
{
	if (!a->out) {
		if (default_output(buf, len, a->path, &a->o) < 0) {
			bt_err("output path too long: give -o FILE");
			return 2;
		}
		a->out = buf;
	}
	int to_stdout = !strcmp(a->out, "-");
	struct stat sin, sout;
	if (!to_stdout && stat(a->path, &sin) == 0 && stat(a->out, &sout) == 0 && sin.st_dev == sout.st_dev &&
	    sin.st_ino == sout.st_ino) {
		bt_err("%s is the dump itself: give another -o", a->out);
		return 2;
	}
	if (to_stdout && isatty(STDOUT_FILENO) && (a->o.format != BT_EXPORT_JSON || a->o.gzip)) {
		bt_err("not writing a binary trace to a terminal: give -o FILE or redirect");
		return 2;
	}
	return 0;
}

static const char *format_name(const struct bt_export_opts *o)
{
	return o->format == BT_EXPORT_JSON ? "json" : o->format == BT_EXPORT_PPROF ? "pprof" : "perfetto";
}

static void human_size(char *buf, size_t len, uint64_t bytes)
{
	double b = (double)bytes;
	if (b >= 1 << 20)
		snprintf(buf, len, "%.1f MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, len, "%.1f KiB", b / (1 << 10));
	else
		snprintf(buf, len, "%" PRIu64 " B", bytes);
}

/* The summary line, then each kind of loss or drop the output shows. */
static void print_summary(const struct convert_args *a, const struct bt_export_stats *st)
{
	const char *path = a->path;
	char sz[32];

	human_size(sz, sizeof(sz), st->bytes);
	bt_log(BT_LOG_NOTICE, "%s: %" PRIu64 " events -> %s (%s, %s%s)", path, st->events,
	       strcmp(a->out, "-") ? a->out : "standard output", format_name(&a->o), sz,
	       a->o.gzip || a->o.format == BT_EXPORT_PPROF ? " gzip" : "");
	if (a->o.format == BT_EXPORT_JSON && st->raw_bytes > BT_JSON_OPEN_MAX) {
		char fit[64], fsz[32];
		human_size(sz, sizeof(sz), st->raw_bytes);
		bt_export_json_fit_arg(st, fit, sizeof(fit));
		human_size(fsz, sizeof(fsz), st->json_fit_bytes);
		if (fit[0])
			bt_warn("%s: the JSON text is %s, past the ~512 MiB a browser holds as one string: Chrome's"
					" and Perfetto's UIs will not open it; --time %s keeps the last %.3f s (about %s),"
					" or use -f perfetto",
				path, sz, fit, (double)(st->json_last_ns - st->json_fit_from_ns) / 1e9, fsz);
		else
			bt_warn("%s: the JSON text is %s, past the ~512 MiB a browser holds as one string: Chrome's"
					" and Perfetto's UIs will not open it; narrow it (--time A..B, -p PID) or use"
					" -f perfetto",
				path, sz);
	}
	if (st->samples_no_stack)
		bt_warn("%s: %" PRIu64 " %s whose stack was lost or not taken, kept under a"
			" \"[stack lost]\" or \"[no stack]\" frame",
			path, st->samples_no_stack, a->o.offcpu ? "off-CPU blocks" : "CPU samples");
	if (st->func_too_deep)
		bt_warn("%s: %" PRIu64 " function calls below 511 open ones drawn as one"
			" marker slice each run (trace processor keeps 512 levels)",
			path, st->func_too_deep);
	if (st->missing)
		bt_warn("%s: %" PRIu64 " events missing in %" PRIu64 " seq gap(s), shown on the btrace-bpf tracks",
			path, st->missing, st->gaps);
	if (st->app_missing)
		bt_warn("%s: %" PRIu64 " application events missing in %" PRIu64
				" per-thread seq gap(s), shown as LOST instants on the threads",
			path, st->app_missing, st->app_gaps);
	if (st->app_unmatched || st->app_dropped)
		bt_warn("%s: application events: %" PRIu64 " BEGIN/END without partner"
				" (shown as instants), %" PRIu64 " of threads of other processes (left out)",
			path, st->app_unmatched, st->app_dropped);
	if (st->func_slices || st->func_open || st->func_unmatched || st->func_exits_dropped)
		bt_warn("%s: function calls: %" PRIu64 " drawn, %" PRIu64
				" open at the dump's end (closed there, marked open_at_dump_end), %" PRIu64
				" entries whose exit is lost (instants), %" PRIu64
				" exits whose entry is lost (left out)",
			path, st->func_slices, st->func_open, st->func_unmatched, st->func_exits_dropped);
	if (st->encl_funcs || st->encl_apps || st->encl_lost)
		bt_warn("%s: %" PRIu64 " function calls and %" PRIu64 " application slices open at the window's"
				" start drawn from it (marked begun_before_window), %" PRIu64
				" of them not drawn (their end lost in a seq gap)",
			path, st->encl_funcs, st->encl_apps, st->encl_lost);
	if (st->closed_at_exit)
		bt_warn("%s: %" PRIu64 " calls and application slices open at their thread's exit closed there"
				" (marked closed_at_thread_exit)", path, st->closed_at_exit);
	if (st->encl_frames)
		bt_warn("%s: %" PRIu64 " call chart frames of threads' first samples drawn from the window's start"
				" (marked begun_before_window)", path, st->encl_frames);
	if (st->closed_at_last)
		bt_warn("%s: %" PRIu64 " calls and application slices open on threads that died without their"
				" exit in the dump closed at the thread's last event (marked closed_at_thread_last_event)",
			path, st->closed_at_last);
}

/* Open the dump and write the output, with progress and a clean stop on a
 * signal: 0, or 1 (said). */
static int run(struct convert_args *a, struct bt_export_stats *st)
{
	char err[512];
	struct bt_dump *d = bt_dump_open(a->path, err, sizeof(err));
	if (!d) {
		bt_err("%s: %s", a->path, err);
		return 1;
	}
	catch_signals();
	/* the first progress line after a moment: short conversions show none */
	struct progress pg = { .on = !a->quiet && isatty(STDERR_FILENO), .last_ns = bt_now_ns() + 300000000ull };
	a->o.progress = progress_cb;
	a->o.progress_ctx = &pg;
	a->o.filter = a->filt;
	int r = bt_export_file(d, a->out, &a->o, st, err, sizeof(err));
	progress_clear(&pg);
	bt_dump_close(d);
	if (r < 0) {
		bt_err("%s", err[0] ? err : strerror(-r));
		return 1;
	}
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	struct bt_event_filter filt = { 0 };
	struct convert_args a = { .o = { .format = BT_EXPORT_PERFETTO, .compact_sched = 1 }, .filt = &filt };
	char outbuf[PATH_MAX];
	struct bt_export_stats st;

	int r = parse_args(argc, argv, &a);
	if (r == 0 && !a.help)
		r = choose_output(&a, outbuf, sizeof(outbuf));
	if (r == 0 && !a.help)
		r = run(&a, &st);
	if (r == 0 && !a.help && !a.quiet)
		print_summary(&a, &st);
	bt_filter_free(&filt);
	return r;
}
