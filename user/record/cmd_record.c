// SPDX-License-Identifier: MIT
/*
 * cmd_record.c - `btrace-bpf record`: the command line (options, their
 * defaults and checks). The recorder itself (start, drain, dumps, rotation,
 * stop) is recorder.c.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "btrace_buffer.h"
#include "commands.h"
#include "event_names.h"
#include "util.h"
#include "recorder.h"
#include "unwind_cache.h"
#include "unwind_procs.h"
#include "trigger_spec.h"
#include "config_file.h"
#include "dump_dir.h"
#include "log.h"
#include "cold_tier.h"
#include "cold_pump.h"
#include "record_checks.h"
#include "cli.h"

/* A bad value from --config FILE is named by its FILE:LINE. */
#define argp_error(state, ...) config_argp_error(state, __VA_ARGS__)
__attribute__((format(printf, 2, 3))) static void config_argp_error(const struct argp_state *state, const char *fmt,
								    ...)
{
	char msg[1024], where[4200];
	const char *w = bt_config_origin(state->next - 1, where, sizeof(where));
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w)
		(argp_error)(state, "%s: %s", w, msg);
	else
		(argp_error)(state, "%s", msg);
}

/* Where the option being parsed came from: "FILE:LINE" (malloc'd) if
 * --config FILE gave it, else NULL. */
static char *where_now(const struct argp_state *state)
{
	char buf[4200];
	const char *w = bt_config_origin(state->next - 1, buf, sizeof(buf));

	return w ? strdup(w) : NULL;
}

static void set_where(struct record_opts *o, enum record_key k, const struct argp_state *state)
{
	free(o->where[k]);
	o->where[k] = where_now(state);
}

/* Grow a where array of n entries to n + 1, the new one w. 0 or -1. */
static int push_where(char ***v, size_t n, char *w)
{
	char **nv = realloc(*v, (n + 1) * sizeof(*nv));

	if (!nv) {
		free(w);
		return -1;
	}
	nv[n] = w;
	*v = nv;
	return 0;
}

/* --trigger-uprobe's, until it becomes a trigger (record()) */
static char *trigger_uprobe_where;

#define DEFAULT_BUFFER_SIZE (64ull << 20)
/* The cold tier is on by default, within a CPU budget: 75% of --buffer-size
 * keeps the older history in zstd level -1 groups of 16 blocks, the
 * cheapest per event of the codecs measured at ~4.7x (43 ns an event
 * against zstd-1's 48-55 and lz4's 31-36 at 2.7x; scripts/bench_cold_codec.sh,
 * BENCHMARKS.md "The cold tier"). The compressor spends at most 1% of one
 * CPU; what that does not pay for is kept uncompressed (cold_pump.c), so
 * the window is never shorter than without the tier, and never has a hole
 * in its middle (a read leaves out what is older than one: cold_tier.h). */
#define DEFAULT_COLD_PCT 75
/* Blocks the buffer keeps beside a default cold tier, at least. */
#define COLD_MIN_RAW_BLOCKS 128u
#define DEFAULT_COLD_CODEC BT_CODEC_ZSTD
#define DEFAULT_COLD_LEVEL (-1)
#define DEFAULT_COLD_GROUP 16
/* Half a percent of one CPU: at 1% the tier's thread and the cache it
 * stirs cost 0.05-0.08 us a call in a 250k calls/s storm, more than the
 * recorder's lead over ftrace there (BENCHMARKS.md, issue 40). At 12 us a
 * block, half a percent still pays for ~400 blocks a second: everything
 * at ordinary rates (an estimate: ~100k events/s). */
#define DEFAULT_COLD_CPU_PPM 5000
#define DEFAULT_OUTPUT_DIR "./traces"
#define DEFAULT_GROUPS ((1u << BT_GROUP_SCHED) | (1u << BT_GROUP_IRQ) | (1u << BT_GROUP_POWER))
#define ALL_GROUPS (DEFAULT_GROUPS | (1u << BT_GROUP_SYSCALLS))
/* zlib level 1: a full 64 MiB buffer (1.4 M events, all groups) compresses
 * to 11.0 MiB in 0.39 s of CPU; level 6 gives 8.8 MiB but takes 1.17 s, three
 * times longer for 20% less. A dump should be quick, so 1. */
#define DEFAULT_ZLEVEL 1

/* ---- options ------------------------------------------------------------------ */

enum {
	OPT_COMM = 0x100,
	OPT_NO_FINAL_DUMP,
	OPT_RING_SIZE,
	OPT_UARGS,
	OPT_CTL,
	OPT_NO_CTL,
	OPT_WAKING,
	OPT_MAX_SIZE,
	OPT_DUMP_EVERY,
	OPT_MAX_DUMPS,
	OPT_TRIGGER_UPROBE,
	OPT_TRIGGER,
	OPT_TRIGGER_DELAY,
	OPT_MIN_DUMP_INTERVAL,
	OPT_APP_BUFFER_SIZE,
	OPT_APP_BLOCK_SIZE,
	OPT_MAX_APPS,
	OPT_NO_APPS,
	OPT_CONFIG,
	OPT_MAX_DUMP_BYTES,
	OPT_KEEP_FREE,
	OPT_ON_DUMP,
	OPT_ON_DUMP_TIMEOUT,
	OPT_SAMPLE,
	OPT_STACKS,
	OPT_OFFCPU_MIN,
	OPT_MAX_STACKS,
	OPT_DEBUG_DIR,
	OPT_NO_SOURCE_LINES,
	OPT_NO_PYTHON_FRAMES,
	OPT_SYMBOL_CACHE,
	OPT_USTACK,
	OPT_UNWIND_MEM,
	OPT_UNWIND_CACHE,
	OPT_COLD_TIER,
	OPT_COLD_CODEC,
	OPT_COLD_CPU,
	OPT_COLD_GROUP,
	OPT_RESUME_FD,
};

/* On-CPU samples per second per CPU by default: a user and kernel stack
 * walk each costs a few microseconds, so 49 Hz stays far below 1% of a CPU
 * (BENCHMARKS.md), and an odd rate does not beat with periodic work. */
#define DEFAULT_SAMPLE_HZ 49

#define DEFAULT_MAX_SIZE (1ull << 30)
#define DEFAULT_MIN_DUMP_INTERVAL_NS 1000000000ull
#define DEFAULT_ON_DUMP_TIMEOUT_NS (120ull * 1000000000ull)

static const struct argp_option options[] = {
	{ "buffer-size", 'm', "SIZE", 0, "Flight-recorder buffer size, K/M/G suffixes (default 64M)", 0 },
	{ "block-size", 'b', "SIZE", 0, "Buffer block size, a power of two from 256 to 64K (default 4K)", 0 },
	BT_CLI_OPTION_H,
	{ "active-blocks", 'a', "N", 0, "Blocks open for writing at once (default 16 per CPU)", 0 },
	{ "ring-size", OPT_RING_SIZE, "SIZE", 0,
	  "BPF ring buffers between kernel and recorder, in total: one per CPU, each SIZE/CPUs rounded up to a power of two (default 16M)", 0 },
	{ "cold-tier", OPT_COLD_TIER, "PCT", 0,
	  "Share of --buffer-size that keeps older history compressed, 0 to 90 or off (default 75, "
	  "within --cold-cpu; off by default where it would leave the buffer under 128 blocks): the rest keeps the "
	  "latest events raw", 0 },
	{ "cold-codec", OPT_COLD_CODEC, "CODEC[:LEVEL]", 0,
	  "Codec of the cold tier: lz4 (fast; LEVEL is its acceleration, default 1) or zstd (denser; its level, "
	  "default 1) (default zstd:-1)", 0 },
	{ "cold-cpu", OPT_COLD_CPU, "PCT", 0,
	  "CPU budget of the cold tier's compressor, in % of one CPU (0.01 to 100), or off for none "
	  "(default 0.5): what it cannot compress within it is kept uncompressed, counted", 0 },
	{ "cold-group", OPT_COLD_GROUP, "N", 0, "Blocks the cold tier compresses together, 1 to 64 (default 16)", 0 },
	{ "output-dir", 'o', "DIR", 0, "Directory for dumps, created if missing (default ./traces)", 0 },
	{ "compress", 'z', "LEVEL", 0, "zlib level of dumps, 0 (none) to 9 (default 1)", 0 },
	{ "no-final-dump", OPT_NO_FINAL_DUMP, NULL, 0, "Do not write a dump when stopping", 0 },
	{ "resume-fd", OPT_RESUME_FD, "FD", 0,
	  "Keep the buffer in the memory file FD, inherited: what it holds from a previous recorder is dumped "
	  "first (an upgrade by exec, a parent that outlives recorders; under systemd the fd store does it)", 0 },
	{ "events", 'e', "GROUPS", 0,
	  "Event groups, comma-separated: sched, irq, power, syscalls, or all "
	  "(default sched,irq,power)", 1 },
	{ "event", 0, NULL, OPTION_ALIAS | OPTION_HIDDEN, NULL, 1 }, /* report's spelling */
	{ "pid", 'p', "PID", 0, "Only events of process PID (its threads, as tgid)", 1 },
	{ "comm", OPT_COMM, "NAME", 0, "Only events of tasks named NAME (at most 15 characters)", 1 },
	{ "waking", OPT_WAKING, NULL, 0,
	  "Also record sched_waking (with the sched group): Perfetto shows a thread's runnable state from it; "
	  "one more event per wakeup", 1 },
	{ "sample", OPT_SAMPLE, "HZ", 0,
	  "On-CPU samples per second on each CPU, each with the thread's kernel and user call stacks "
	  "(a software CPU clock per CPU; default 49, 0: off)", 1 },
	{ "stacks", OPT_STACKS, "LIST", 0,
	  "Also stacks at: switch (where a thread blocks, with how long it was off the CPU), "
	  "wakeup (the waker's stack, linked to the woken thread); comma-separated", 1 },
	{ "offcpu-min", OPT_OFFCPU_MIN, "TIME", 0,
	  "With --stacks switch: only blocks at least this long (shorter ones are counted, not stored)", 1 },
	{ "max-stacks", OPT_MAX_STACKS, "N", 0,
	  "Distinct call stacks the buffer's window may name (default 16384; stacks no retained event names are "
	  "reclaimed); stacks beyond are counted and their events marked lost", 1 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Also look for separate debug files (DIR/.build-id/xx/yyyy.debug, or by debuglink) here, before "
	  "/usr/lib/debug (repeatable)", 1 },
	{ "unwind-mem", OPT_UNWIND_MEM, "SIZE", 0,
	  "Memory for the unwind tables user stacks are walked with (compiled from each binary's .eh_frame, "
	  "so code without frame pointers shows its callers); binaries beyond it use frame pointers, counted "
	  "(default 32M; 0: frame pointers only)", 1 },
	{ "unwind-cache", OPT_UNWIND_CACHE, "DIR", 0,
	  "Keep compiled unwind tables here by build-id, so each binary's are compiled once per machine, not "
	  "at each start (default " BT_UNWIND_CACHE_DIR ", at most 256 MiB, least recently used go first; "
	  "'none': compile at each start)", 1 },
	{ "no-source-lines", OPT_NO_SOURCE_LINES, NULL, 0,
	  "Dumps without the source lines and inlined calls of user frames (DWARF is then not read)", 1 },
	{ "no-python-frames", OPT_NO_PYTHON_FRAMES, NULL, 0,
	  "User stacks without the CPython frames read where _PyEval_EvalFrameDefault stands (native frames only)",
	  1 },
	{ "symbol-cache", OPT_SYMBOL_CACHE, "SIZE", 0,
	  "Memory for the symbols and DWARF of the files stacks reference, loaded in the background before "
	  "dumps need them (default 256M; least recently used files closed first)", 1 },
	{ "uprobe", 'u', "SPEC", 0,
	  "Probe a user-space function: [BINARY:]FUNCTION[+OFFSET][%return] or [BINARY:]0xADDRESS "
	  "(repeatable; see below)", 2 },
	{ "usdt", 'U', "SPEC", 0, "Probe a USDT probe: BINARY:PROVIDER:NAME (repeatable)", 2 },
	{ "ustack", OPT_USTACK, NULL, 0,
	  "Each -u entry and -U hit also records the thread's kernel and user call stacks "
	  "(a probe_stack event just before it)", 2 },
	{ "uargs", OPT_UARGS, "N", 0, "Integer arguments captured at function entry and USDT probes, 0 to 6 (default 6)", 2 },
	{ "duration", 'd', "TIME", 0, "Stop after TIME: 500ms, 10s, 2m, 1h (a bare number is seconds)", 2 },
	{ "verbose", 'v', NULL, 0, "Print event rates every second, libbpf warnings (twice: libbpf debug) and what loading the BPF programs cost", 2 },
	{ "max-size", OPT_MAX_SIZE, "SIZE", 0,
	  "Largest size `ctl resize` may grow the buffer to; address space reserved at start, memory used "
	  "only when grown (default 1G, or -m if larger)", 3 },
	{ "ctl", OPT_CTL, "PATH", 0, "Control socket for `btrace-bpf ctl` (default /run/btrace-bpf/PID.sock)", 3 },
	{ "no-ctl", OPT_NO_CTL, NULL, 0, "No control socket", 3 },
	{ "dump-every", OPT_DUMP_EVERY, "TIME", 0, "Write a dump every TIME (e.g. 30s, 5m)", 3 },
	{ "max-dumps", OPT_MAX_DUMPS, "N", 0,
	  "Keep at most N dumps in the output directory, removing the oldest; dumps of earlier runs count "
	  "(default: keep all)", 3 },
	{ "max-dump-bytes", OPT_MAX_DUMP_BYTES, "SIZE", 0,
	  "Keep the dumps of the output directory, manifests included, within SIZE, removing the oldest "
	  "(default: no limit)", 3 },
	{ "keep-free", OPT_KEEP_FREE, "SIZE", 0,
	  "Skip a dump (logged and counted) that would leave less than SIZE free on the output directory's "
	  "file system (default 5% of it, at most 1G; 0: just the dump's size)", 3 },
	{ "on-dump", OPT_ON_DUMP, "CMD", 0,
	  "After each dump run CMD with /bin/sh, the dump's path appended (also $BTRACE_DUMP, "
	  "$BTRACE_MANIFEST): in the background, failures logged and counted", 3 },
	{ "on-dump-timeout", OPT_ON_DUMP_TIMEOUT, "TIME", 0,
	  "Kill an --on-dump command still running after TIME (default 2m)", 3 },
	{ "trigger", OPT_TRIGGER, "SPEC", 0,
	  "Dump when a condition holds, evaluated in the kernel where its data is: sched-latency>T, "
	  "offcpu>T, syscall[:NAME]>T, func:PROBE>T, crash, oom, app:NAME[>T], app-func:NAME>T, ctl, uprobe:PROBE; "
	  "options ,name= ,comm= ,pid= ,nr= ,sig= ,after=T ,limit=T (repeatable; see below)", 3 },
	{ "trigger-uprobe", OPT_TRIGGER_UPROBE, "SPEC", 0,
	  "Dump when this user function is hit (uprobe SPEC as for -u; e.g. the function an application "
	  "calls when it detects an anomaly); same as --trigger uprobe:SPEC", 3 },
	{ "trigger-delay", OPT_TRIGGER_DELAY, "TIME", 0,
	  "Keep recording TIME after a trigger before dumping, to see what happened next (default 0)", 3 },
	{ "min-dump-interval", OPT_MIN_DUMP_INTERVAL, "TIME", 0,
	  "Rate limit of automatic dumps, per trigger: at most one dump per TIME from each --trigger (its "
	  "default limit=) and from --dump-every; hits in between are counted and dropped (default 1s)", 3 },
	{ "app-buffer-size", OPT_APP_BUFFER_SIZE, "SIZE", 0,
	  "Shared-memory buffer given to each application traced in-process with libbtrace (btrace.h); "
	  "`ctl app-resize SIZE` changes it (default 4M; 32M for a program with the -finstrument-functions "
	  "hooks, where --max-apps of them fit in half the available memory)", 4 },
	{ "app-block-size", OPT_APP_BLOCK_SIZE, "SIZE", 0,
	  "Block size of application buffers, a power of two from 256 to 64K (default 16K: a writer "
	  "takes a new block less often)", 4 },
	{ "max-apps", OPT_MAX_APPS, "N", 0,
	  "Applications kept at once, exited ones included; the oldest exited one is released first "
	  "(default 64)", 4 },
	{ "no-apps", OPT_NO_APPS, NULL, 0, "Refuse in-process tracing registrations", 4 },
	{ "config", OPT_CONFIG, "FILE", 0,
	  "Options from FILE first, one NAME = VALUE a line (NAME a long option); the command line "
	  "overrides them (the service uses /etc/btrace-bpf.conf)", 5 },
	{ 0 },
};

static const char doc[] =
	"Record kernel scheduling, interrupt, power (and optionally system-call) events "
	"into an in-memory flight recorder; write a dump on SIGUSR1 and on exit."
	"\v"
	"Events are recorded continuously, the oldest overwritten when the buffer is full. "
	"SIGUSR1 writes a dump of the buffer and keeps recording; SIGINT or SIGTERM "
	"write a final dump and stop. Dumps are named btrace-HOST-YYYYmmdd-HHMMSS-N.btd; "
	"read them with `btrace-bpf report FILE`.\n"
	"\n"
	"Filters (-p, --comm): sched events pass if any task they name matches, irq and "
	"syscall events if the interrupted or calling task matches; power events and "
	"task lifecycle events (fork, exec, exit, rename) are always recorded.\n"
	"\n"
	"User-space probes (-u, -U) go into the same recorder, with the thread, CPU, time and "
	"sequence of every other event. -u [BINARY:]FUNCTION[+OFFSET][%return]: BINARY is a path, "
	"or a name looked up in the memory maps of the -p process (libc finds the libc.so.6 it "
	"maps), else in the library directories and PATH; omitted, the executable of the -p "
	"process. FUNCTION is a symbol (.symtab or .dynsym), C++ mangled or demangled "
	"(ns::f, or ns::f(int) for one overload); 0xADDRESS (as nm prints it) for stripped "
	"binaries. Entry probes record the first --uargs integer arguments, %return probes the "
	"return value and the time since the entry. -U BINARY:PROVIDER:NAME probes a USDT probe "
	"(sys/sdt.h). With -p only that process triggers the probes; without, every process "
	"mapping the binary, including ones started later. A target that exits is reported; "
	"recording goes on. Attaching is all or nothing. Per-function calls and latencies: "
	"`btrace-bpf report --functions DUMP`.\n"
	"\n"
	"Triggers (--trigger CONDITION[,OPTION]...) dump on their own while recording goes on. "
	"Conditions: sched-latency>T (a task waited longer than T from wakeup to running), "
	"offcpu>T (a task was blocked longer than T), syscall>T or syscall:NAME>T (a system call took "
	"longer than T; nr=N picks one by number), func:PROBE>T (a user-space function, PROBE as for -u, "
	"ran longer than T), crash (a fatal SEGV, BUS, ILL, FPE, ABRT, TRAP or SYS; sig=SEGV+ABRT to "
	"choose), oom (the OOM killer chose a victim), app:NAME (an application called "
	"BTRACE_TRIGGER(\"NAME\"), btrace.h), app:NAME>T (its slice NAME lasted longer than T), app-func:NAME>T (a call of "
	"function NAME, C++ demangled with or without its parameters, of a program built with "
	"-finstrument-functions and libbtrace lasted longer than T; read from its buffer every 10 ms), ctl (only "
	"`btrace-bpf ctl trigger NAME`, which fires any trigger by name), uprobe:PROBE (a hit of a probe). "
	"Options: name=NAME (default: the condition's kind), comm=COMM and pid=PID (the task the "
	"condition is about), after=T (keep recording T before dumping; default --trigger-delay), "
	"limit=T (at most one dump per T from this trigger, hits between are counted; default "
	"--min-dump-interval). T has a unit: 500us, 5ms, 2s. Every dump names the trigger, its condition "
	"and the triggering event (`report --stats`, marked in `convert`). A condition this kernel "
	"cannot arm stops the start with one line.\n"
	"\n"
	"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF.\n"
	"\n"
	"Examples:\n"
	"  btrace-bpf record                  # sched,irq,power; Ctrl-C to stop\n"
	"  kill -USR1 $(pidof btrace-bpf)     # dump now, keep recording\n"
	"  btrace-bpf record -m 256M -o /var/tmp/traces\n"
	"  btrace-bpf record -e all -p 1234 --duration 30s\n"
	"  btrace-bpf record -e sched --comm nginx -z 0\n"
	"  btrace-bpf record -p 1234 -u myfunc -u 'libc:malloc' -u 'libc:malloc%return'\n"
	"  btrace-bpf record -p 1234 -U 'libfoo:myprov:request_start' --uargs 2\n"
	"  btrace-bpf record --trigger 'sched-latency>5ms,comm=nginx,after=200ms' --trigger crash\n"
	"  btrace-bpf record --trigger 'syscall:fsync>50ms' --trigger 'ctl,name=manual'\n"
	"  btrace-bpf report traces/btrace-myhost-20250101-120000-1.btd";

static int parse_groups(const char *s, uint32_t *out)
{
	char *copy = strdup(s), *save = NULL, *tok;
	uint32_t mask = 0;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	if (!*s)
		ret = -EINVAL;
	/* strtok_r would skip empty items ("sched,,irq"): scan by hand. */
	for (tok = copy; !ret && tok; tok = save) {
		int g, found = 0;

		save = strchr(tok, ',');
		if (save)
			*save++ = '\0';
		if (strcmp(tok, "all") == 0) {
			mask |= ALL_GROUPS;
			continue;
		}
		for (g = 0; g < BT_GROUP_MAX; g++) {
			if (g != BT_GROUP_UPROBE && strcmp(tok, bt_group_name(g)) == 0) {
				mask |= 1u << g;
				found = 1;
			}
		}
		if (!found)
			ret = -EINVAL;
	}
	free(copy);
	if (!ret)
		*out = mask;
	return ret;
}

static void size_error(struct argp_state *state, const char *opt, const char *arg, int err)
{
	if (err == -ERANGE)
		argp_error(state, "invalid %s '%s': too large", opt, arg);
	argp_error(state,
		   "invalid %s '%s': give a positive whole number of bytes with an optional "
		   "K, M or G suffix, e.g. 64M",
		   opt, arg);
}

/* What a configuration file's NAME is: one of our long options. */
static int config_lookup(const char *name, void *ctx)
{
	(void)ctx;
	for (const struct argp_option *op = options; op->name || op->key; op++)
		if (op->name && !(op->flags & OPTION_HIDDEN) && strcmp(op->name, name) == 0)
			return op->arg ? BT_CFG_VALUE : BT_CFG_SWITCH;
	return BT_CFG_UNKNOWN;
}

/* lz4[:ACCEL] or zstd[:LEVEL] */
static int parse_codec(const char *arg, struct record_opts *o)
{
	char name[8];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	enum bt_codec c;
	char *end;
	long lv;

	if (n >= sizeof(name))
		return -1;
	memcpy(name, arg, n);
	name[n] = '\0';
	if (bt_codec_parse(name, &c))
		return -1;
	o->cold_codec = (int)c;
	o->cold_level = 1; /* lz4: acceleration 1; zstd: level 1 */
	if (!colon)
		return 0;
	errno = 0;
	lv = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || (c == BT_CODEC_LZ4 && (lv < 1 || lv > 64)) ||
	    (c == BT_CODEC_ZSTD && (lv < -7 || lv > 9)))
		return -1;
	o->cold_level = (int)lv;
	return 0;
}

/* --cold-cpu: "off" (0: no budget) or a percentage of one CPU, in ppm. */
static int parse_cpu_share(const char *arg, uint32_t *ppm)
{
	char *end;
	double v;

	if (!strcmp(arg, "off")) {
		*ppm = 0;
		return 0;
	}
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0.01 && v <= 100))
		return -1;
	*ppm = (uint32_t)(v * 10000 + 0.5);
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;
	uint64_t v;
	int err;

	switch (key) {
	case 'm':
		err = parse_size(arg, &o->buffer_size);
		if (err)
			size_error(state, "--buffer-size", arg, err);
		set_where(o, RK_BUFFER_SIZE, state);
		break;
	case 'b':
		err = parse_size(arg, &o->block_size);
		if (err)
			size_error(state, "--block-size", arg, err);
		if (o->block_size < BT_MIN_BLOCK_SIZE || o->block_size > BT_MAX_BLOCK_SIZE ||
		    (o->block_size & (o->block_size - 1)))
			argp_error(state, "invalid --block-size '%s': must be a power of two from "
				   "256 to 64K, e.g. 4K", arg);
		set_where(o, RK_BLOCK_SIZE, state);
		break;
	case 'a':
		if (parse_uint(arg, UINT32_MAX, &v) || v == 0)
			argp_error(state, "invalid --active-blocks '%s': give a positive whole number", arg);
		o->active_blocks = v;
		set_where(o, RK_ACTIVE_BLOCKS, state);
		break;
	case OPT_RING_SIZE:
		err = parse_size(arg, &o->ring_size);
		if (err)
			size_error(state, "--ring-size", arg, err);
		if (o->ring_size > (1ull << 30))
			argp_error(state, "invalid --ring-size '%s': at most 1G", arg);
		break;
	case 'o':
		if (!*arg)
			argp_error(state, "invalid --output-dir '': give a directory");
		o->output_dir = arg;
		set_where(o, RK_OUTPUT_DIR, state);
		break;
	case 'z':
		if (parse_uint(arg, 9, &v))
			argp_error(state, "invalid --compress '%s': give a level from 0 (none) to 9", arg);
		o->zlevel = (int)v;
		break;
	case OPT_NO_FINAL_DUMP:
		o->final_dump = 0;
		break;
	case OPT_RESUME_FD:
		if (parse_uint(arg, INT32_MAX, &v) || v < 3 || fcntl((int)v, F_GETFD) < 0)
			argp_error(state, "invalid --resume-fd '%s': give an open file descriptor from 3 on", arg);
		o->resume_fd = (int)v;
		break;
	case 'e':
		if (parse_groups(arg, &o->groups))
			argp_error(state, "invalid --events '%s': give a comma-separated list of "
				   "sched, irq, power, syscalls, or all", arg);
		break;
	case 'p':
		if (parse_uint(arg, UINT32_MAX, &v) || v == 0)
			argp_error(state, "invalid --pid '%s': give a process id, e.g. -p 1234", arg);
		o->filter_tgid = (uint32_t)v;
		set_where(o, RK_PID, state);
		break;
	case OPT_COMM:
		if (!*arg || strlen(arg) >= BT_COMM_LEN)
			argp_error(state, "invalid --comm '%s': task names have 1 to 15 characters", arg);
		memset(o->filter_comm, 0, sizeof(o->filter_comm));
		memcpy(o->filter_comm, arg, strlen(arg));
		break;
	case 'u':
	case 'U': {
		const char ***vec = key == 'u' ? &o->uspecs : &o->usdts;
		size_t *n = key == 'u' ? &o->nuspecs : &o->nusdts;
		const char **nv = realloc(*vec, (*n + 1) * sizeof(*nv));

		if (!nv || push_where(key == 'u' ? &o->uwhere : &o->udwhere, *n, where_now(state)))
			argp_failure(state, 1, ENOMEM, "out of memory");
		nv[(*n)++] = arg;
		*vec = nv;
		break;
	}
	case OPT_UARGS:
		if (parse_uint(arg, BT_MAX_UARGS, &v))
			argp_error(state, "invalid --uargs '%s': give a number of arguments from 0 to %d", arg,
				   BT_MAX_UARGS);
		o->uargs = (int)v;
		break;
	case 'd':
		err = parse_duration(arg, &o->duration_ns);
		if (err)
			argp_error(state, "invalid --duration '%s': give a positive time with a unit, "
				   "e.g. 500ms, 10s, 2m, 1h", arg);
		break;
	case OPT_MAX_SIZE:
		err = parse_size(arg, &o->max_size);
		if (err)
			size_error(state, "--max-size", arg, err);
		set_where(o, RK_MAX_SIZE, state);
		break;
	case OPT_CTL:
		o->ctl_path = arg;
		set_where(o, RK_CTL, state);
		break;
	case OPT_NO_CTL:
		o->no_ctl = 1;
		break;
	case OPT_WAKING:
		o->waking = 1;
		break;
	case OPT_SAMPLE:
		if (parse_uint(arg, 100000, &v))
			argp_error(state, "invalid --sample '%s': give samples per second from 0 (off) to 100000", arg);
		o->sample_hz = (uint32_t)v;
		break;
	case OPT_STACKS: {
		char buf[64], *save = NULL;

		if (strlen(arg) >= sizeof(buf))
			argp_error(state, "invalid --stacks '%s': give switch, wakeup or both", arg);
		snprintf(buf, sizeof(buf), "%s", arg);
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (strcmp(t, "switch") == 0)
				o->stacks_switch = 1;
			else if (strcmp(t, "wakeup") == 0)
				o->stacks_wakeup = 1;
			else
				argp_error(state, "invalid --stacks '%s': give switch, wakeup or switch,wakeup", arg);
		}
		break;
	}
	case OPT_OFFCPU_MIN:
		if (strcmp(arg, "0") != 0 && parse_duration(arg, &o->offcpu_min_ns))
			argp_error(state, "invalid --offcpu-min '%s': give a time with a unit, e.g. 100us, 1ms", arg);
		break;
	case OPT_USTACK:
		o->ustack = 1;
		break;
	case OPT_DEBUG_DIR: {
		struct stat st;
		char *d;
		if (!*arg || strchr(arg, ':') || arg[0] != '/')
			argp_error(state, "invalid --debug-dir '%s': give an absolute path without ':'", arg);
		if (stat(arg, &st) != 0)
			argp_error(state, "invalid --debug-dir '%s': %s", arg, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			argp_error(state, "invalid --debug-dir '%s': not a directory", arg);
		if (asprintf(&d, "%s%s%s", o->debug_dirs ? o->debug_dirs : "", o->debug_dirs ? ":" : "", arg) < 0)
			argp_error(state, "out of memory");
		free(o->debug_dirs);
		o->debug_dirs = d;
		break;
	}
	case OPT_NO_SOURCE_LINES:
		o->no_source_lines = 1;
		break;
	case OPT_NO_PYTHON_FRAMES:
		o->no_python_frames = 1;
		break;
	case OPT_UNWIND_MEM:
		if (strcmp(arg, "0") == 0)
			o->unwind_mem = 0;
		else if (parse_size(arg, &o->unwind_mem) || o->unwind_mem < 4096 || o->unwind_mem > (8ull << 30))
			argp_error(state, "invalid --unwind-mem '%s': give 0 or a size from 4K to 8G", arg);
		break;
	case OPT_UNWIND_CACHE:
		if (strcmp(arg, "none") && arg[0] != '/')
			argp_error(state, "invalid --unwind-cache '%s': give an absolute directory or 'none'", arg);
		o->unwind_cache = strcmp(arg, "none") ? arg : NULL;
		break;
	case OPT_SYMBOL_CACHE:
		if (parse_size(arg, &o->symbol_cache) || o->symbol_cache < (1u << 20))
			argp_error(state, "invalid --symbol-cache '%s': give a size of at least 1M (e.g. 256M)", arg);
		break;
	case OPT_COLD_TIER:
		if (!strcmp(arg, "off"))
			v = 0;
		else if (parse_uint(arg, 90, &v))
			argp_error(state, "invalid --cold-tier '%s': give a percentage from 0 to 90, or off", arg);
		o->cold_pct = (uint32_t)v;
		o->cold_given = 1;
		break;
	case OPT_COLD_CPU:
		if (parse_cpu_share(arg, &o->cold_cpu_ppm))
			argp_error(state, "invalid --cold-cpu '%s': give a percentage of one CPU from 0.01 to 100, or off", arg);
		break;
	case OPT_COLD_GROUP:
		if (parse_uint(arg, 64, &v) || v == 0)
			argp_error(state, "invalid --cold-group '%s': give a number of blocks from 1 to 64", arg);
		o->cold_group = (uint32_t)v;
		break;
	case OPT_COLD_CODEC:
		if (parse_codec(arg, o))
			argp_error(state, "invalid --cold-codec '%s': give lz4[:1..64] or zstd[:-7..9]", arg);
		break;
	case OPT_MAX_STACKS:
		if (parse_uint(arg, 1u << 22, &v) || v == 0)
			argp_error(state, "invalid --max-stacks '%s': give a number from 1 to 4194304", arg);
		o->max_stacks = (uint32_t)v;
		break;
	case OPT_DUMP_EVERY:
	case OPT_TRIGGER_DELAY:
	case OPT_MIN_DUMP_INTERVAL: {
		uint64_t *dst = key == OPT_DUMP_EVERY ? &o->dump_every_ns :
				key == OPT_TRIGGER_DELAY ? &o->trigger_delay_ns : &o->min_dump_interval_ns;
		const char *name = key == OPT_DUMP_EVERY ? "--dump-every" :
				   key == OPT_TRIGGER_DELAY ? "--trigger-delay" : "--min-dump-interval";

		if (key == OPT_TRIGGER_DELAY && strcmp(arg, "0") == 0) {
			*dst = 0;
			break;
		}
		err = parse_duration(arg, dst);
		if (err)
			argp_error(state, "invalid %s '%s': give a positive time with a unit, e.g. 500ms, 10s, 2m",
				   name, arg);
		break;
	}
	case OPT_APP_BUFFER_SIZE:
		err = parse_size(arg, &o->app_buffer_size);
		if (err)
			argp_error(state, "bad --app-buffer-size '%s': give a size like 4M", arg);
		set_where(o, RK_APP_BUFFER_SIZE, state);
		break;
	case OPT_APP_BLOCK_SIZE:
		err = parse_size(arg, &o->app_block_size);
		if (err || o->app_block_size < BT_MIN_BLOCK_SIZE || o->app_block_size > BT_MAX_BLOCK_SIZE ||
		    (o->app_block_size & (o->app_block_size - 1)))
			argp_error(state, "bad --app-block-size '%s': a power of two from 256 to 64K", arg);
		set_where(o, RK_APP_BLOCK_SIZE, state);
		break;
	case OPT_MAX_APPS: {
		char *end;
		unsigned long na = strtoul(arg, &end, 10);
		if (*arg == '-' || *end || na < 1 || na > 4096)
			argp_error(state, "bad --max-apps '%s': give a number from 1 to 4096", arg);
		o->max_apps = (uint32_t)na;
		set_where(o, RK_MAX_APPS, state);
		break;
	}
	case OPT_NO_APPS:
		o->no_apps = 1;
		break;
	case OPT_CONFIG:
		break; /* expanded before parsing (config_file.c) */
	case OPT_MAX_DUMP_BYTES:
		err = parse_size(arg, &o->max_dump_bytes);
		if (err)
			size_error(state, "--max-dump-bytes", arg, err);
		break;
	case OPT_KEEP_FREE:
		if (strcmp(arg, "0") == 0) {
			o->keep_free = 0;
			break;
		}
		err = parse_size(arg, &o->keep_free);
		if (err)
			size_error(state, "--keep-free", arg, err);
		break;
	case OPT_ON_DUMP:
		if (!*arg)
			argp_error(state, "invalid --on-dump '': give a command, e.g. --on-dump /usr/local/bin/ship-dump");
		o->on_dump = arg;
		break;
	case OPT_ON_DUMP_TIMEOUT:
		if (parse_duration(arg, &o->on_dump_timeout_ns))
			argp_error(state, "invalid --on-dump-timeout '%s': give a positive time with a unit, e.g. 30s, 5m",
				   arg);
		break;
	case OPT_MAX_DUMPS:
		if (parse_uint(arg, 1000000, &o->max_dumps) || o->max_dumps == 0)
			argp_error(state, "invalid --max-dumps '%s': give a number of files, at least 1", arg);
		break;
	case OPT_TRIGGER_UPROBE:
		o->trigger_spec = arg;
		free(trigger_uprobe_where);
		trigger_uprobe_where = where_now(state);
		break;
	case OPT_TRIGGER: {
		struct bt_trigger_spec *nv = realloc(o->triggers, (o->ntriggers + 1) * sizeof(*nv));
		char e[512];

		if (!nv)
			argp_failure(state, 1, ENOMEM, "out of memory");
		o->triggers = nv;
		if (bt_trigger_parse(arg, &nv[o->ntriggers], e, sizeof(e)))
			argp_error(state, "%s", e);
		if (push_where(&o->twhere, o->ntriggers, where_now(state)))
			argp_failure(state, 1, ENOMEM, "out of memory");
		o->ntriggers++;
		break;
	}
	case 'v':
		o->verbose++;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s': record takes options only (see --help)", arg);
		break;
	default:
		return bt_cli_common_key(key, state);
	}
	return 0;
}

/* Parse args (argv[0] names the program in argp's messages) and record. The
 * options point into args. */
static int record(int argc, char **args)
{
	struct record_opts o = {
		.buffer_size = DEFAULT_BUFFER_SIZE,
		.cold_pct = DEFAULT_COLD_PCT,
		.cold_codec = DEFAULT_COLD_CODEC,
		.cold_level = DEFAULT_COLD_LEVEL,
		.cold_group = DEFAULT_COLD_GROUP,
		.cold_cpu_ppm = DEFAULT_COLD_CPU_PPM,
		.output_dir = DEFAULT_OUTPUT_DIR,
		.groups = DEFAULT_GROUPS,
		.final_dump = 1,
		.resume_fd = -1,
		.zlevel = DEFAULT_ZLEVEL,
		.uargs = -1,
		.keep_free = BT_KEEP_FREE_AUTO,
		.on_dump_timeout_ns = DEFAULT_ON_DUMP_TIMEOUT_NS,
		.sample_hz = DEFAULT_SAMPLE_HZ,
		.unwind_mem = BT_DEFAULT_UNWIND_MEM,
		.unwind_cache = BT_UNWIND_CACHE_DIR,
	};
	struct argp argp = { options, parse_opt, NULL, doc, NULL, NULL, NULL };
	char s1[32], s2[32], err[512];
	int ret, cpus = libbpf_num_possible_cpus();

	o.min_dump_interval_ns = DEFAULT_MIN_DUMP_INTERVAL_NS;
	bt_cli_parse(&argp, "record", argc, args, 0, &o);
	if (o.ustack && !o.nuspecs && !o.nusdts) {
		bt_err("--ustack takes the stacks of -u/-U probe hits: give a probe");
		ret = 2;
		goto out;
	}
	if (!o.max_size) {
		/* 1G, but no more than the buffer can map (65534 slots of A
		 * blocks), and never below the size itself. */
		uint64_t A = o.active_blocks ? o.active_blocks : 16ull * (uint64_t)(cpus > 0 ? cpus : 1);
		uint64_t cap = 65534ull * A * (o.block_size ? o.block_size : BT_DEFAULT_BLOCK_SIZE);

		o.max_size = DEFAULT_MAX_SIZE < cap ? DEFAULT_MAX_SIZE : cap;
		if (o.max_size < o.buffer_size)
			o.max_size = o.buffer_size;
	}
	if (o.cold_pct && !o.cold_given) {
		/* The default tier needs a raw part the compressor can follow:
		 * in a few dozen blocks the drain overwrites blocks before it
		 * takes them, and the tier's holes cut its blocks out of the
		 * window (64 KiB of 256 B blocks kept 43 samples, 383 without). */
		struct bt_config c = {
			.size = (size_t)recorder_buffer_share(&o, o.buffer_size),
			.block_size = (uint32_t)o.block_size,
			.ncores = (uint32_t)(cpus > 0 ? cpus : 1),
			.active = (uint32_t)o.active_blocks,
		};
		size_t size = 0; /* refused geometry: 0, reported where the buffer is made */
		uint64_t raw;

		int shared = bt_buffer_geometry(&c, NULL, &size, NULL, err, sizeof(err));
		raw = size / (o.block_size ? o.block_size : BT_DEFAULT_BLOCK_SIZE);

		if (raw < COLD_MIN_RAW_BLOCKS) {
			size_t whole = 0;

			/* A size refused whole is an error of its own, said
			 * where the buffer is made: no notice before it. */
			c.size = (size_t)o.buffer_size;
			if (shared == 0 || bt_buffer_geometry(&c, NULL, &whole, NULL, err, sizeof(err)) == 0)
				bt_log(BT_LOG_NOTICE, "cold tier off: its default share would leave the buffer %" PRIu64
				       " blocks, under the %u its compressor needs to follow the writes; give --cold-tier to have it",
				       raw, COLD_MIN_RAW_BLOCKS);
			o.cold_pct = 0;
		}
	}
	if (o.max_size < o.buffer_size) {
		record_key_err(&o, o.where[RK_MAX_SIZE] ? RK_MAX_SIZE : RK_BUFFER_SIZE,
			       "--max-size %s is below the buffer size %s", format_size(o.max_size, s1, sizeof(s1)),
			       format_size(o.buffer_size, s2, sizeof(s2)));
		ret = 2;
		goto out;
	}
	if (o.trigger_spec) {
		/* --trigger-uprobe SPEC is --trigger uprobe:SPEC with the
		 * recorder-wide delay and rate limit. */
		struct bt_trigger_spec *nv = realloc(o.triggers, (o.ntriggers + 1) * sizeof(*nv));
		char spec[600];

		if (nv)
			o.triggers = nv;
		if (!nv || push_where(&o.twhere, o.ntriggers, trigger_uprobe_where)) {
			trigger_uprobe_where = NULL;
			bt_err("out of memory");
			ret = 1;
			goto out;
		}
		trigger_uprobe_where = NULL;
		snprintf(spec, sizeof(spec), "uprobe:%s", o.trigger_spec);
		if (bt_trigger_parse(spec, &o.triggers[o.ntriggers], err, sizeof(err))) {
			record_conf_err("trigger-uprobe", o.twhere[o.ntriggers], "--trigger-uprobe: %s", err);
			free(o.twhere[o.ntriggers]);
			ret = 2;
			goto out;
		}
		o.ntriggers++;
	}
	if (bt_trigger_finish(o.triggers, o.ntriggers, o.trigger_delay_ns, o.min_dump_interval_ns, err, sizeof(err))) {
		bt_err("%s", err);
		ret = 2;
		goto out;
	}
	for (size_t i = 0; i < o.ntriggers; i++) {
		/* A uprobe trigger is a probe like the others; its hits also go
		 * into the buffer, so the dump shows the call that triggered it. */
		const char **v;

		if (o.triggers[i].kind != BT_TRIG_UPROBE)
			continue;
		v = realloc(o.uspecs, (o.nuspecs + 1) * sizeof(*v));
		if (v)
			o.uspecs = v;
		if (!v || push_where(&o.uwhere, o.nuspecs,
				     o.twhere[i] ? strdup(o.twhere[i]) : NULL)) {
			bt_err("out of memory");
			ret = 1;
			goto out;
		}
		o.uspecs[o.nuspecs++] = o.triggers[i].arg;
	}
	/* recorder_run frees uspecs and usdts */
	ret = recorder_run(&o);
	record_opts_free_where(&o);
	free(o.triggers);
	return ret;
out:
	record_opts_free_where(&o);
	free(o.triggers);
	free(o.uspecs);
	free(o.usdts);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	char err[512], **args;
	int nargs, ret;

	/* Never ask a debuginfod server from the recorder (libdw would, for
	 * dwz files): a dump would wait on the network, the build-ids of what
	 * runs here would leave the machine, and root would parse what came
	 * back. Before any thread: setenv is not thread-safe. */
	unsetenv("DEBUGINFOD_URLS");

	bt_log_set_command("record");
	/* --config FILE: its options first, then the command line's. */
	if (bt_config_expand(argc, argv, config_lookup, NULL, &nargs, &args, err, sizeof(err))) {
		bt_log(BT_LOG_ERR, "%s", err);
		return 2;
	}
	ret = record(nargs, args);
	bt_config_free(nargs, args);
	return ret;
}
