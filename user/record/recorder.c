// SPDX-License-Identifier: MIT
/*
 * recorder.c - a running `btrace-bpf record` (options parsed by
 * cmd_record.c): kernel tracepoints into the flight recorder, dumps on
 * signal, control command or trigger, rotation of old dumps, shutdown.
 *
 * Threads (docs/architecture.md has who wakes whom, and the locks):
 *   main      options, checks, setup; then waits in ppoll() with the signals
 *             unblocked. Signal handlers only set flags; main turns SIGUSR1
 *             into a dump request and SIGINT/SIGTERM (or --duration) into
 *             shutdown.
 *   drain     (loader.c) BPF ring buffers (one per CPU) -> block buffer,
 *             task table, stack table, live window.
 *   dump      (recorder_dumps.c) writes dumps one at a time, so draining
 *             never stops. Requests that arrive while a dump is being
 *             written are coalesced into one more dump: a storm of SIGUSR1
 *             gives a few dumps, each complete and valid.
 *   cold      (cold_pump.c, --cold-tier) compresses completed blocks into
 *             the cold tier behind the buffer.
 *   trigger   (triggers.c, --trigger) hits from the trigger ring and from
 *             user space -> rate limit, delay -> a dump request.
 *   ctl       (ctl.c) the control socket's server, and one thread per
 *             connected client running record_ctl.c's handler.
 *   app I/O   (app_registry.c) the in-process tracing applications'
 *             connections: registrations, names, app-func: triggers.
 *   symbols   (symbol_cache.c, with stacks) loads the symbols and DWARF of
 *             the stack table's files at nice 19, ahead of dumps.
 *   on-dump   (on_dump.c, --on-dump) reaps the commands run after dumps.
 *
 * Shutdown: detach the programs, drain the rings to the last event, write the
 * final dump (unless --no-final-dump), free everything, exit 0 (1 if the
 * final dump failed).
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "btrace_buffer.h"
#include "event_names.h"
#include "dump.h"
#include "loader.h"
#include "tasks.h"
#include "uprobes.h"
#include "util.h"
#include "recorder.h"
#include "record_checks.h"
#include "stack_table.h"
#include "stack_symbols.h"
#include "unwind_cache.h"
#include "unwind_procs.h"
#include "dump_mgmt.h"
#include "log.h"
#include "sd_notify.h"
#include "ctl.h"
#include "app_registry.h"
#include "app_reader.h"
#include "record_triggers.h"
#include "triggers.h"
#include "trigger_bpf.h"
#include "cold_pump.h"
#include "cold_tier.h"
#include "handover.h"
#define DEFAULT_APP_BUFFER_SIZE (4ull << 20)
/* A program with the -finstrument-functions hooks: ~8.5 bytes per call
 * point, so 32 MiB (Hubble's default) holds ~3.9 million points, seconds
 * of a program making a million calls a second (docs/manual.md). */
#define DEFAULT_APP_FUNCS_BUFFER_SIZE (32ull << 20)
#define DEFAULT_APP_BLOCK_SIZE (16u << 10)

/* Control thread: an application registering for in-process tracing. */
static void adopt_app(void *ctx, int fd, uint32_t pid, int passed_fd, int argc, char **argv)
{
	struct recorder *r = ctx;
	int funcs = 0;
	unsigned long parent = 0;

	/* "app-register NAME [funcs] [early] [parent=PID]": early with the
	 * buffer the process wrote in before it registered passed along; a
	 * forked child names its parent. */
	for (int i = 2; i < argc; i++) {
		funcs |= strcmp(argv[i], "funcs") == 0;
		if (strncmp(argv[i], "parent=", 7) == 0)
			parent = strtoul(argv[i] + 7, NULL, 10);
	}
	bt_apps_register(r->apps, fd, pid, argc > 1 ? argv[1] : "", funcs, passed_fd,
			 parent <= UINT32_MAX ? (uint32_t)parent : 0);
}

/* ---- startup checks --------------------------------------------------------------- */

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

static int check_privileges(void)
{
	unsigned long long caps = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int found = 0;

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &caps) == 1) {
				found = 1;
				break;
			}
		fclose(f);
	}
	if (!found)
		return geteuid() == 0 ? 0 : -EPERM;
	if (caps & (1ull << CAP_SYS_ADMIN_BIT))
		return 0;
	if ((caps & (1ull << CAP_BPF_BIT)) && (caps & (1ull << CAP_PERFMON_BIT)))
		return 0;
	return -EPERM;
}

/* Whether dir can take dumps, creating nothing (an invocation that fails
 * later must leave nothing behind): an existing directory must take a file
 * (root ignores mode bits, so a file is created and removed: it finds
 * read-only mounts); a missing one needs its nearest existing ancestor to
 * be a writable directory (created by create_output_dir once recording
 * starts). */
static int check_output_dir(const struct record_opts *o)
{
	const char *dir = o->output_dir;
	char probe[PATH_MAX], up[PATH_MAX];
	struct stat st;
	int fd, ret;

	if ((size_t)snprintf(up, sizeof(up), "%s", dir) >= sizeof(up)) {
		record_key_err(o, RK_OUTPUT_DIR, "output directory name too long: %s", dir);
		return -ENAMETOOLONG;
	}
	while (stat(up, &st) < 0) {
		char *slash;
		if (errno != ENOENT && errno != ENOTDIR) { /* ENOTDIR: a file on the way, found below */
			ret = -errno;
			record_key_err(o, RK_OUTPUT_DIR, "cannot use output directory %s: %s: choose another with -o DIR", dir, strerror(errno));
			return ret;
		}
		slash = strrchr(up, '/');
		while (slash && slash > up && slash[1] == '\0') { /* trailing slashes */
			*slash = '\0';
			slash = strrchr(up, '/');
		}
		if (!slash)
			snprintf(up, sizeof(up), ".");
		else if (slash == up)
			up[1] = '\0';
		else
			*slash = '\0';
	}
	if (!S_ISDIR(st.st_mode)) {
		record_key_err(o, RK_OUTPUT_DIR, "cannot create output directory %s: %s is not a directory: choose another with -o DIR", dir, up);
		return -ENOTDIR;
	}
	if (strcmp(up, dir) != 0) {
		/* Root passes access() on /proc and on read-only mounts: a
		 * directory made and removed at once says whether mkdir works. */
		if ((size_t)snprintf(probe, sizeof(probe), "%s/" BT_DUMP_TMP_PREFIX "%d.probe.XXXXXX", up,
				     (int)getpid()) >= sizeof(probe))
			return -ENAMETOOLONG;
		if (access(up, W_OK | X_OK) < 0 || !mkdtemp(probe)) {
			ret = -errno;
			record_key_err(o, RK_OUTPUT_DIR, "cannot create output directory %s in %s: %s: choose another with -o DIR", dir, up,
				strerror(errno));
			return ret;
		}
		rmdir(probe);
		return 0;
	}
	/* Named like a dump's temporary: if we die right here, the next
	 * recorder removes it (bt_dump_clean_stale). */
	if ((size_t)snprintf(probe, sizeof(probe), "%s/" BT_DUMP_TMP_PREFIX "%d.%" PRIu64 ".probe.XXXXXX", dir,
			     (int)getpid(), bt_proc_start_time(getpid())) >= sizeof(probe))
		return -ENAMETOOLONG;
	fd = mkstemp(probe);
	if (fd < 0) {
		ret = -errno;
		record_key_err(o, RK_OUTPUT_DIR, "output directory %s is not writable: %s: choose another with -o DIR",
			dir, strerror(errno));
		return ret;
	}
	close(fd);
	unlink(probe);
	return 0;
}

/* The directory as an absolute path: paths the recorder prints (ctl dump's
 * reply, the log) are read by users in other directories. */
static int absolute_output_dir(struct record_opts *o)
{
	static char abs_dir[PATH_MAX];
	char cwd[PATH_MAX];
	const char *dir = o->output_dir;

	if (dir[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd))) {
		bt_log(BT_LOG_ERR, "cannot tell the current directory for --output-dir %s: %s", dir, strerror(errno));
		return -1;
	}
	while (dir[0] == '.' && dir[1] == '/')
		dir += 2;
	if (snprintf(abs_dir, sizeof(abs_dir), "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", dir) >=
	    (int)sizeof(abs_dir)) {
		bt_log(BT_LOG_ERR, "--output-dir %s: the absolute path is too long", o->output_dir);
		return -1;
	}
	o->output_dir = abs_dir;
	return 0;
}

/* Once nothing can fail any more: make the directory, and remove what
 * recorders that died mid-dump left in it. */
static int create_output_dir(const char *dir)
{
	char err[256];
	int ret = bt_mkdir_p(dir, 0700);

	if (ret) {
		bt_err("cannot create output directory %s: %s: choose another with -o DIR", dir, strerror(-ret));
		return ret;
	}
	ret = bt_dump_clean_stale(dir, err, sizeof(err));
	if (ret > 0)
		bt_warn("removed %d stale temporar%s of recorders that died while dumping into %s", ret,
			ret == 1 ? "y" : "ies", dir);
	else if (ret < 0)
		bt_warn("%s", err);
	return 0;
}

/* ---- signals ---------------------------------------------------------------------- */

static volatile sig_atomic_t got_stop;
/* SIGUSR1 deliveries not yet turned into requests. Lock-free, so the
 * handler may add to it; main takes it with an exchange. */
static atomic_int got_dumps;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "signal-safe counter");

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		atomic_fetch_add(&got_dumps, 1);
	else
		got_stop = sig;
}

/* ---- dumps ------------------------------------------------------------------------ */

/* Ask the dump thread for a dump (coalesced with one already pending). */
static void recorder_request_dump(struct recorder *r, const char *reason)
{
	pthread_mutex_lock(&r->lock);
	/* Coalesce: one pending dump covers every request made before it
	 * starts; the requests it absorbed are counted (ctl status). */
	if (r->pending)
		r->requests_merged++;
	if (!r->pending || strcmp(reason, "exit") == 0)
		r->reason = reason;
	r->pending = 1;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* ---- main loop ------------------------------------------------------------------ */

static void groups_str(uint32_t mask, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if (mask & (1u << g))
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
					      bt_group_name(g));
	if (!o)
		snprintf(buf, len, "none");
}

static void print_rates(struct recorder *r, uint64_t *last_events, uint64_t *last_t)
{
	struct bt_drain_stats ds;
	uint64_t now = bt_now_ns(), drops = 0;
	size_t ncells = (size_t)r->ncpus * BT_GROUP_MAX;
	uint64_t *d = calloc(ncells, sizeof(*d));

	bt_loader_drain_stats(r->loader, &ds);
	if (d && bt_loader_read_cpu_state(r->loader, d, NULL, NULL) == 0)
		for (size_t i = 0; i < ncells; i++)
			drops += d[i];
	free(d);
	bt_warn("%" PRIu64 " events (%.0f/s), %" PRIu64 " lost in the ring buffer, %" PRIu64
		" rejected by the buffer",
		ds.events, (double)(ds.events - *last_events) * 1e9 / (double)(now - *last_t + 1),
		drops, ds.rejected);
	*last_events = ds.events;
	*last_t = now;
}

static void on_probe_event(void *ctx, const struct bt_event_hdr *h, uint32_t len);

/* Probe ids of the uprobe:PROBE triggers (one per pid), and their trigger. */
static int find_trigger_ids(struct recorder *r)
{
	size_t n;
	const struct bt_probe_desc *t = bt_uprobes_table(r->uprobes, &n);

	r->trigger_ids = calloc(n ? 2 * n * r->o->ntriggers : 1, sizeof(*r->trigger_ids));
	if (!r->trigger_ids)
		return -ENOMEM;
	for (size_t k = 0; k < r->o->ntriggers; k++) {
		const struct bt_trigger_spec *sp = &r->o->triggers[k];
		size_t found = 0;

		if (sp->kind != BT_TRIG_UPROBE)
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(t[i].spec, sp->arg) == 0 && !(t[i].flags & BT_PROBE_RETURN)) {
				r->trigger_ids[2 * r->ntrigger_ids] = t[i].id;
				r->trigger_ids[2 * r->ntrigger_ids + 1] = (uint32_t)k;
				r->ntrigger_ids++;
				found++;
			}
		if (!found) {
			bt_err("--trigger '%s': not an entry probe (drop %%return)", sp->cond);
			return -EINVAL;
		}
	}
	if (r->ntrigger_ids)
		bt_loader_set_hook(r->loader, on_probe_event, r);
	return 0;
}

/* An automatic dump, unless the rate limit says one was written too recently. */
static void auto_dump(struct recorder *r, uint64_t now, const char *reason)
{
	if (r->last_auto && now - r->last_auto < r->o->min_dump_interval_ns) {
		uint64_t n = atomic_fetch_add_explicit(&r->triggers_suppressed, 1, memory_order_relaxed) + 1;

		bt_warn("%s dump skipped: the last automatic dump was %.2fs ago (--min-dump-interval); %" PRIu64
			" skipped so far",
			reason, (double)(now - r->last_auto) / 1e9, n);
		return;
	}
	r->last_auto = now;
	recorder_request_dump(r, reason);
}

static void check_automatic_dumps(struct recorder *r, uint64_t now, uint64_t *last_interval)
{
	if (r->o->dump_every_ns && now - *last_interval >= r->o->dump_every_ns) {
		*last_interval = now;
		auto_dump(r, now, "interval");
	}
}

/* Drain thread: a uprobe event arrived; is it a trigger's? The trigger
 * thread does the rest (delay, rate limit, dump). */
static void on_probe_event(void *ctx, const struct bt_event_hdr *h, uint32_t len)
{
	struct recorder *r = ctx;
	const struct bt_ev_uprobe *u = (const struct bt_ev_uprobe *)h;

	if (h->type != BT_EV_UPROBE_ENTRY || len < offsetof(struct bt_ev_uprobe, duration_ns))
		return;
	for (size_t i = 0; i < r->ntrigger_ids; i++)
		if (u->probe_id == r->trigger_ids[2 * i])
			bt_triggers_hit(r->triggers, r->trigger_ids[2 * i + 1], BT_TRIG_UPROBE, h->ts_ns, 0, h->tid,
					h->tgid, NULL);
}

static void save_handover(struct recorder *r);
static void expire_prior(struct recorder *r);
static void save_stacks(struct recorder *r);

static int run_loop(struct recorder *r, const sigset_t *waitmask)
{
	const struct record_opts *o = r->o;
	uint64_t start = bt_now_ns(), last_rates = start, last_events = 0;
	uint64_t last_interval = start, rate_t = start, rate_events = 0;
	unsigned stacks_tick = 0;
	/* Triggers and intervals are checked this often. */
	uint64_t tick = o->dump_every_ns ? 20000000ull : 1000000000ull;

	while (!got_stop) {
		uint64_t now = bt_now_ns(), wait = tick;
		struct timespec ts;

		if (o->duration_ns) {
			if (now - start >= o->duration_ns)
				break;
			if (o->duration_ns - (now - start) < wait)
				wait = o->duration_ns - (now - start);
		}
		ts.tv_sec = (time_t)(wait / 1000000000ull);
		ts.tv_nsec = (long)(wait % 1000000000ull);
		/* Signals are blocked except inside ppoll: a flag set by a handler
		 * is seen right after, never lost between test and wait. */
		ppoll(NULL, 0, &ts, waitmask);
		/* One request per signal delivered: those merged into a pending
		 * dump are counted (a signal sent again before the first is
		 * delivered is merged by the kernel, out of anyone's sight). */
		for (int n = atomic_exchange(&got_dumps, 0); n > 0; n--)
			recorder_request_dump(r, "signal");
		if (o->verbose && bt_now_ns() - last_rates >= 1000000000ull)
			print_rates(r, &last_events, &last_rates);
		now = bt_now_ns();
		if (now - rate_t >= 1000000000ull) {
			struct bt_drain_stats ds;

			bt_loader_drain_stats(r->loader, &ds);
			atomic_store(&r->rate, (ds.events - rate_events) * 1000000000ull / (now - rate_t));
			rate_events = ds.events;
			rate_t = now;
			save_handover(r);
			expire_prior(r);
			if (++stacks_tick % RECORDER_STACKS_SAVE_S == 0)
				save_stacks(r);
		}
		check_automatic_dumps(r, now, &last_interval);
		if (r->uprobes) {
			int ended[16];
			size_t k = bt_uprobes_poll_exited(r->uprobes, ended, 16);

			for (size_t i = 0; i < k; i++)
				bt_warn("process %d ended; its probes see nothing more, recording goes on", ended[i]);
		}
	}
	return 0;
}

/* ---- startup, in named steps ---------------------------------------------------- */

/* app:NAME>T and app-func:NAME>T watches handed to the registry: they live
 * as long as r->apps (recorder_run's frame). */
struct app_watches {
	const char *wn[BT_TRIG_MAX];
	uint64_t wns[BT_TRIG_MAX];
	const char *fwn[BT_TRIG_MAX];
	uint64_t fwns[BT_TRIG_MAX];
	uint32_t fwt[BT_TRIG_MAX];
};

/* First thing after the options: block our signals in every thread (main
 * takes them inside ppoll()) and install the handlers, so a signal sent
 * while starting up is kept for the main loop, not lost (a background job
 * of a shell inherits SIGINT ignored) or fatal. */
static void install_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block, oldmask;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &oldmask);
	*waitmask = oldmask;
	sigdelset(waitmask, SIGINT);
	sigdelset(waitmask, SIGTERM);
	sigdelset(waitmask, SIGUSR1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Checks a user will hit, cheapest and most likely first; -p THREAD_ID
 * becomes its process. 0, or after saying why -1 (this machine cannot
 * record) or -2 (a configuration error: RECORD_EXIT_CONFIG). */
static int preflight_checks(struct record_opts *o)
{
	char err[512];
	int ret;

	if (check_privileges()) {
		bt_err("BPF not permitted: run as root, or grant CAP_BPF and CAP_PERFMON "
			"(e.g. sudo btrace-bpf record)");
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		bt_err("this kernel has no BTF (/sys/kernel/btf/vmlinux: %s): btrace-bpf needs a "
			"kernel built with CONFIG_DEBUG_INFO_BTF=y", strerror(errno));
		return -1;
	}
	if (o->filter_tgid) {
		char comm[64], tcomm[64], *perr = NULL;
		int tgid;

		ret = bt_proc_tgid((int)o->filter_tgid, &tgid, comm, sizeof(comm), tcomm, sizeof(tcomm), &perr);
		if (ret) {
			if (ret == -ESRCH)
				record_key_err(o, RK_PID, "no process with pid %u: give the pid of a running process to -p",
					       o->filter_tgid);
			else
				record_key_err(o, RK_PID, "-p %u: %s", o->filter_tgid, perr);
			free(perr);
			return -2;
		}
		/* -p THREAD_ID: its process, all threads (events carry the tgid). */
		if ((uint32_t)tgid != o->filter_tgid) {
			bt_warn("-p %u is thread %u (%s) of process %d (%s): tracing the process", o->filter_tgid,
				o->filter_tgid, tcomm, tgid, comm);
			o->filter_tgid = (uint32_t)tgid;
		}
	}
	/* A --ctl that cannot work is found before anything is loaded. */
	if (!o->no_ctl && o->ctl_path && bt_ctl_check_path(o->ctl_path, err, sizeof(err)) < 0) {
		record_key_err(o, RK_CTL, "%s", err[0] ? err : strerror(errno));
		return -2;
	}
	if (check_output_dir(o) || absolute_output_dir(o))
		return -2;
	/* Probe targets are the likeliest to be wrong: found before BPF is loaded. */
	if (record_check_probes(o))
		return -2;
	return 0;
}

/* The CPU count, the application geometry check, the block buffer and the
 * task table, before any BPF is loaded. 0, or after saying why -1, or -2
 * for a size the options got wrong (what was made is freed by
 * recorder_teardown()). */
/* ---- the buffer's hand-over (handover.h) ------------------------------------ */

/* The memfd handed to this start (--resume-fd, or systemd's fd store),
 * read as untrusted input into r->ho_found, first thing (its dump need
 * not wait for the programs). A file that cannot be used is said and
 * dropped: the buffer goes into new memory. */
static void take_handover(struct recorder *r)
{
	static const char *const names[] = { BT_HO_FDNAME, BT_HO_COUNTERS_FDNAME };
	int fd = r->o->resume_fd, from_store = 0, sd[2];
	char err[512], ferr[512];

	bt_sd_listen_fds(names, sd, 2);
	if (sd[1] >= 0) /* read below, then out of the store: this start stores its own */
		bt_sd_notify("FDSTOREREMOVE=1\nFDNAME=" BT_HO_COUNTERS_FDNAME);
	if (fd < 0) {
		fd = sd[0];
		from_store = fd >= 0;
	} else if (sd[0] >= 0) {
		close(sd[0]);
	}
	if (fd < 0) {
		if (sd[1] >= 0)
			close(sd[1]);
		return;
	}
	r->handover = bt_handover_take(fd, &r->ho_found, ferr, sizeof(ferr), err, sizeof(err));
	/* Under systemd the previous programs' counters come from the store. */
	struct bt_ho_found *f = &r->ho_found;
	if (r->handover && f->kbuf && sd[1] >= 0 && !f->tail.known &&
	    bt_ho_read_counters(sd[1], &f->tail, f->tail_err, sizeof(f->tail_err)) == 0)
		f->tail_err[0] = '\0';
	if (sd[1] >= 0)
		close(sd[1]);
	if (!r->handover) {
		bt_warn("%s: recording into new memory", err);
		close(fd);
		if (from_store) /* or the next start is handed it again */
			bt_sd_notify("FDSTOREREMOVE=1\nFDNAME=" BT_HO_FDNAME);
	} else if (ferr[0]) {
		bt_warn("%s: the previous recorder's history is lost", ferr);
	}
}

/* The handed memfd (or a new one, under systemd or with --resume-fd)
 * laid out for cfg, which then points the buffer at it. A failure leaves
 * the buffer in private memory, said once. */
static void place_handover(struct recorder *r, struct bt_config *cfg, struct bt_shm_place *place)
{
	char err[512];

	if (!r->handover && (r->o->resume_fd >= 0 || getenv("NOTIFY_SOCKET"))) {
		r->handover = bt_handover_new(err, sizeof(err));
		if (!r->handover)
			bt_warn("cannot keep the buffer for the next start: %s", err);
	}
	if (r->handover && bt_handover_prepare(r->handover, cfg, r->ncpus, place, err, sizeof(err))) {
		bt_warn("cannot keep the buffer for the next start: %s", err);
		bt_handover_close(r->handover);
		r->handover = NULL;
	}
	if (r->handover)
		cfg->shm = place;
}

/* Systemd keeps a copy of the memfd (FileDescriptorStoreMax= in the unit):
 * given back at the next start after a restart, an upgrade or a crash.
 * The same fd again (a restart) is recognized there as a duplicate. */
static void store_handover(struct recorder *r)
{
	if (r->handover && bt_sd_notify_fd("FDSTORE=1\nFDNAME=" BT_HO_FDNAME, bt_handover_fd(r->handover)) < 0)
		bt_warn("cannot hand the buffer to systemd's fd store: a restart starts empty");
	/* The programs' counters too (not polled: a map, not a stream): after
	 * a crash the next start counts what the rings held. */
	if (r->handover && r->loader &&
	    bt_sd_notify_fd("FDSTORE=1\nFDNAME=" BT_HO_COUNTERS_FDNAME "\nFDPOLL=0", bt_loader_cpu_state_fd(r->loader)) < 0)
		bt_log(BT_LOG_NOTICE, "if this recorder dies, the next start cannot count the events its rings held: "
		       "systemd's fd store refused the counters (FileDescriptorStoreMax= in the unit)");
}

/* The programs' per-CPU counters pinned for the next start (handover.h):
 * if this process dies, it counts what the rings still held. */
static void pin_counters(struct recorder *r)
{
	char err[320];

	if (!r->handover || getenv("NOTIFY_SOCKET")) /* systemd: its fd store, store_handover() */
		return;
	if (bt_ho_pin(bt_handover_fd(r->handover), bt_loader_cpu_state_fd(r->loader), err, sizeof(err)))
		bt_log(BT_LOG_NOTICE, "if this recorder dies, the next start cannot count the events its rings held: %s", err);
}

/* A clean stop: the rings are drained, nothing is left to count. */
static void unpin_counters(struct recorder *r)
{
	if (!r->handover)
		return;
	if (getenv("NOTIFY_SOCKET"))
		bt_sd_notify("FDSTOREREMOVE=1\nFDNAME=" BT_HO_COUNTERS_FDNAME);
	else
		bt_ho_unpin(bt_handover_fd(r->handover));
}

/* Counters and task names into the handed memory (each second, and at
 * stop): what a dump of it after this recorder names. */
static void save_handover(struct recorder *r)
{
	struct bt_ho_counters c = { 0 };
	struct bt_drain_stats ds;
	struct bt_stats bs;
	struct bt_task *t = NULL;
	size_t n = 0;

	if (!r->handover || !r->loader)
		return;
	bt_loader_drain_stats(r->loader, &ds);
	bt_buffer_stats(r->buf, &bs);
	c.saved_boot_ns = bt_boottime_ns();
	c.drain_events = ds.events;
	c.drain_rejected = ds.rejected;
	c.entries_written = bs.entries_written;
	c.bytes_written = bs.bytes_written;
	c.padding_bytes = bs.padding_bytes;
	c.blocks_used = bs.blocks_used;
	c.ncpus = r->ncpus;
	c.groups_enabled = bt_loader_groups(r->loader);
	if (bt_tasks_snapshot(r->tasks, &t, &n))
		n = 0;
	bt_handover_save(r->handover, &c, t, n);
	free(t);
}

/* The stack table, its names and its births into the handed memory
 * (every RECORDER_STACKS_SAVE_S, and at stop). Not while a dump names stacks (the
 * symbolizer is the dump's then): the next second. */
static void save_stacks(struct recorder *r)
{
	struct bt_dump_stacks s;
	struct bt_stack_births_arrays v;
	uint8_t *p = NULL;
	uint64_t t0 = bt_now_ns();
	uint32_t nst = 0;
	int ret = -ENOMEM;

	if (!r->handover || !r->stacks || pthread_mutex_trylock(&r->dump_serial))
		return;
	memset(&s, 0, sizeof(s));
	uint64_t tok = bt_stack_table_hold(r->stacks);
	struct bt_stack_births *b = bt_stack_table_births(r->stacks);
	int snap = b ? bt_stack_table_snapshot(r->stacks, &s) : -ENOMEM;
	bt_stack_table_release(r->stacks, tok);
	if (!snap) {
		if (r->symbolizer)
			bt_symbolize(r->symbolizer, &s, 1); /* names; no DWARF lines */
		int64_t len = bt_dump_stacks_encode(&s, 1, &p);
		nst = s.nstacks;
		bt_stack_births_view(b, &v);
		ret = len < 0 ? (int)len : bt_handover_save_stacks(r->handover, p, (uint64_t)len, &v);
		free(p);
		bt_stack_snapshot_free(&s);
	}
	bt_stack_births_free(b);
	pthread_mutex_unlock(&r->dump_serial);
	pthread_mutex_lock(&r->lock); /* what status shows */
	if (!ret)
		r->stacks_saved = nst;
	r->stacks_save_ns = bt_now_ns() - t0;
	int first_fail = ret && !r->stacks_save_failed++;
	pthread_mutex_unlock(&r->lock);
	if (first_fail)
		bt_log(BT_LOG_WARNING, "the stack table cannot be kept for the next start (%s): a dump after this "
		       "recorder's death says its stacks are reclaimed", ret == -E2BIG ? "larger than its 32 MiB slot" :
		       strerror(-ret));
}

/* What the previous recorder left, as a dump, before anything else is
 * dumped; the gap between its newest event and this start said. */
static void dump_handed(struct recorder *r)
{
	struct bt_ho_found *f = &r->ho_found;
	char path[PATH_MAX], err[512];
	uint64_t events = 0, t0 = bt_now_ns();

	if (!f->kbuf)
		return;
	int ret = bt_handover_dump(f, r->o->output_dir, r->o->zlevel, path, sizeof(path), &events, err, sizeof(err));
	/* The window goes on across the restart: later dumps join it (set
	 * before the line below, which tells a waiting user it is done). */
	struct bt_ho_prior *pr = bt_ho_prior_take(f);
	pthread_mutex_lock(&r->lock);
	r->prior = pr;
	pthread_mutex_unlock(&r->lock);
	if (ret) {
		bt_log(BT_LOG_ERR, "the history before this start (%s) is lost: the dump failed: %s", bt_ho_reason(f), err);
	} else {
		double gap = f->newest_ts && r->start_boot_ns > f->newest_ts ?
				     (double)(r->start_boot_ns - f->newest_ts) / 1e9 : -1;

		char tail[256] = "";

		if (f->tail.known)
			snprintf(tail, sizeof(tail), "; %" PRIu64 " events its programs emitted after the newest kept are lost "
				 "(its rings and its drain held them)", f->after_newest);
		else if (f->state == BT_HO_RUNNING)
			snprintf(tail, sizeof(tail), "; the events its rings held are lost, not counted: %s",
				 f->tail_err[0] ? f->tail_err : "its BPF counters were not pinned");
		char stk[320];

		if (f->stacks_named || f->stacks_reclaimed)
			snprintf(stk, sizeof(stk), "; its stack table saved %.1fs before its newest event: %u stacks, %" PRIu64
				 " stack references not named (drained after the save, or freed)",
				 f->newest_ts > f->stacks_saved_ns ? (double)(f->newest_ts - f->stacks_saved_ns) / 1e9 : 0.0,
				 f->stacks_named, f->stacks_reclaimed);
		else
			snprintf(stk, sizeof(stk), "; no stack table%s%s: its stacks say reclaimed", f->stacks_err[0] ? ": " : "",
				 f->stacks_err);
		bt_log(BT_LOG_NOTICE, "history before this start (%s of recorder %u) written to %s in %.2fs: %" PRIu64
		       " events; %" PRIu64 " blocks kept, %" PRIu64 " refused, %" PRIu64 " open blocks cut at their last "
		       "confirmed entry, %" PRIu64 " event batches refused; gap since its newest event %.3fs%s%s", bt_ho_reason(f),
		       f->pid, path, (double)(bt_now_ns() - t0) / 1e9, events, f->ss.blocks_kept,
		       f->ss.blocks_bad + f->ss.blocks_dup, f->ss.blocks_torn, f->ss.entries_bad, gap, tail, stk);
		pthread_mutex_lock(&r->lock);
		r->ndumps++;
		snprintf(r->last_path, sizeof(r->last_path), "%s", path);
		snprintf(r->ho_summary, sizeof(r->ho_summary), "the history before this start (%s) in %s: %" PRIu64
			 " events, %" PRIu64 " blocks and %" PRIu64 " event batches refused, %" PRIu64 " open blocks cut, "
			 "gap %.3fs%s", bt_ho_reason(f), path, events, f->ss.blocks_bad + f->ss.blocks_dup,
			 f->ss.entries_bad, f->ss.blocks_torn, gap, tail);
		pthread_mutex_unlock(&r->lock);
	}
	bt_ho_found_free(f);
}

/* The previous recorder's blocks, once this recorder has written the
 * buffer's size, are past every window: given back, not held until the
 * next dump. Never waits for a dump in progress (it may be using them). */
static void expire_prior(struct recorder *r)
{
	struct bt_dump_prior p;
	struct bt_stats bs;

	if (pthread_mutex_trylock(&r->dump_serial))
		return;
	bt_buffer_stats(r->buf, &bs);
	recorder_prior(r, &bs, &p);
	pthread_mutex_unlock(&r->dump_serial);
}

/* The handed history's dump, beside the programs' loading: it is on disk
 * seconds sooner than after it (the start of a busy machine is slow). */
static void *handed_thread(void *arg)
{
	struct recorder *r = arg;
	int ret = bt_mkdir_p(r->o->output_dir, 0700);

	if (ret)
		bt_log(BT_LOG_ERR, "the history before this start is lost: cannot create %s: %s", r->o->output_dir,
		       strerror(-ret));
	else
		dump_handed(r);
	bt_ho_found_free(&r->ho_found);
	return NULL;
}

static void start_handed_dump(struct recorder *r)
{
	if (!r->ho_found.kbuf)
		return;
	if (pthread_create(&r->ho_thread, NULL, handed_thread, r)) {
		dump_handed(r); /* no thread: now, before recording */
		return;
	}
	r->ho_thread_on = 1;
}

static int create_buffer(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct bt_config cfg;
	struct bt_shm_place place;
	char err[512], s1[32], s2[32];
	int ncpus = libbpf_num_possible_cpus();

	if (ncpus <= 0 || ncpus > BT_MAX_CORES) {
		bt_err("cannot use this machine's CPU count (%d)", ncpus);
		return -1;
	}
	r->ncpus = (uint32_t)ncpus;
	if (!o->no_ctl && !o->no_apps) {
		uint64_t asize = o->app_buffer_size ? o->app_buffer_size : DEFAULT_APP_BUFFER_SIZE;
		uint32_t aa, an;
		int e;

		if (bt_app_geometry(asize, o->app_block_size ? (uint32_t)o->app_block_size : DEFAULT_APP_BLOCK_SIZE,
				    r->ncpus, &aa, &an, err, sizeof(err)) < 0) {
			record_key_err(o, o->where[RK_APP_BUFFER_SIZE] || !o->where[RK_APP_BLOCK_SIZE] ? RK_APP_BUFFER_SIZE
												: RK_APP_BLOCK_SIZE,
				       "--app-buffer-size: %s", err);
			return -2;
		}
		/* the size start_apps gives bt_apps_create, checked before any BPF */
		e = bt_apps_check_size(asize, o->max_apps ? o->max_apps : 64, err, sizeof(err));
		if (e) {
			record_key_err(o, e == -ENOMEM && o->where[RK_MAX_APPS] && !o->where[RK_APP_BUFFER_SIZE] ? RK_MAX_APPS
												       : RK_APP_BUFFER_SIZE,
				       "--app-buffer-size: %s", err);
			return -2;
		}
	}
	/* The buffer is prefaulted: asking for more than the machine has would
	 * end with the OOM killer rather than an error. */
	if (bt_mem_available() && o->buffer_size > bt_mem_available()) {
		record_key_err(o, RK_BUFFER_SIZE, "cannot record into %s: only %s of memory is available: give a smaller "
			       "--buffer-size", format_size(o->buffer_size, s1, sizeof(s1)),
			       format_size(bt_mem_available(), s2, sizeof(s2)));
		return -2;
	}
	memset(&cfg, 0, sizeof(cfg));
	/* With a cold tier, --buffer-size is the budget of both tiers. */
	cfg.size = (size_t)recorder_buffer_share(o, o->buffer_size);
	cfg.block_size = (uint32_t)o->block_size;
	cfg.ncores = r->ncpus;
	cfg.active = (uint32_t)o->active_blocks;
	cfg.max_size = (size_t)recorder_buffer_share(o, o->max_size);
	cfg.prefault = 1; /* the drain thread never page-faults on a fresh block */
	place_handover(r, &cfg, &place);
	err[0] = '\0';
	r->buf = bt_buffer_create(&cfg, err, sizeof(err));
	if (!r->buf && cfg.shm) {
		bt_warn("cannot keep the buffer in shared memory (%s): private memory, a restart starts empty", err);
		bt_handover_close(r->handover);
		r->handover = NULL;
		cfg.shm = NULL;
		err[0] = '\0';
		r->buf = bt_buffer_create(&cfg, err, sizeof(err));
	}
	if (!r->buf) {
		/* the geometry's error names the option it is about */
		enum record_key k = strstr(err, "maximum size") ? RK_MAX_SIZE :
				    strstr(err, "active blocks") ? RK_ACTIVE_BLOCKS :
				    strstr(err, "block size") ? RK_BLOCK_SIZE : RK_BUFFER_SIZE;

		record_key_err(o, k, "cannot create a %s buffer: %s: adjust --buffer-size, --max-size, --block-size or "
			       "--active-blocks", format_size(o->buffer_size, s1, sizeof(s1)),
			       err[0] ? err : strerror(errno));
		return -2;
	}
	if (o->cold_pct && recorder_cold_start(r) < 0)
		return -1;
	r->tasks = bt_tasks_new();
	if (!r->tasks) {
		bt_err("out of memory");
		return -1;
	}
	return 0;
}

/* The drain's pass hook: the unwinder serves what the pass's samples asked
 * for; while they ask, the drain keeps its short period. */
static int kick_unwinder(void *u)
{
	return bt_unwinder_kick(u);
}

/* The unwinder's thread, when user stacks are walked with unwind tables. */
static int start_unwinder(struct recorder *r)
{
	struct bt_unwind_maps maps;
	struct bt_unwind_cache *cache = NULL;
	char err[512];

	if (bt_loader_unwind_fds(r->loader, &maps))
		return 0;
	if (r->o->unwind_cache) {
		cache = bt_unwind_cache_open(r->o->unwind_cache, BT_UNWIND_CACHE_BUDGET, err, sizeof(err));
		if (!cache)
			bt_warn("unwind table cache %s; tables are compiled at each start", err);
	}
	r->unwinder = bt_unwinder_start(&maps, cache);
	if (!r->unwinder) {
		bt_warn("cannot start the unwinder: %s", strerror(errno));
		return -1;
	}
	r->unwind_cache = cache; /* its failures to store, for status and dumps */
	bt_loader_set_pass_hook(r->loader, kick_unwinder, r->unwinder);
	if (r->stacks)
		bt_stack_table_set_path_source(r->stacks, bt_unwinder_file_path, r->unwinder);
	return 0;
}

/* The BPF programs (opened and loaded, not yet draining), with the stack
 * table and symbolizer when stacks are recorded. 0, or after saying why -1,
 * or -2 for a trigger this kernel cannot arm (found before loading). */
static int open_loader(struct recorder *r)
{
	const struct record_opts *o = r->o;
	struct bt_trig_conf trig_conf[BT_TRIG_MAX];
	struct bt_loader_opts lo;
	char err[512];
	int ret;

	memset(&lo, 0, sizeof(lo));
	lo.groups = o->groups;
	lo.filter_tgid = o->filter_tgid;
	memcpy(lo.filter_comm, o->filter_comm, sizeof(lo.filter_comm));
	lo.ring_size = o->ring_size;
	lo.waking = o->waking;
	lo.sample_hz = o->sample_hz;
	lo.stacks_switch = o->stacks_switch;
	lo.stacks_wakeup = o->stacks_wakeup;
	lo.offcpu_min_ns = o->offcpu_min_ns;
	lo.max_stacks = o->max_stacks ? o->max_stacks : BT_DEFAULT_MAX_STACKS;
	lo.unwind_mem = o->unwind_mem;
	lo.python_frames = !o->no_python_frames;
	if (o->sample_hz || o->stacks_switch || o->stacks_wakeup || o->ustack) {
		lo.groups |= 1u << BT_GROUP_STACKS;
		r->stacks = bt_stack_table_new(lo.max_stacks);
		r->symbolizer = r->stacks ? bt_symbolizer_new(r->stacks, o->debug_dirs, !o->no_source_lines, o->symbol_cache) : NULL;
		if (!r->stacks || !r->symbolizer) {
			bt_err("out of memory for a table of %u stacks: give a smaller --max-stacks", lo.max_stacks);
			return -1;
		}
	}
	ret = bt_trig_bpf_record_conf(o->triggers, o->ntriggers, trig_conf, err, sizeof(err));
	if (ret < 0) {
		/* a condition this kernel cannot arm: restarting cannot help */
		size_t i = 0;

		while (i < o->ntriggers && o->triggers[i].kind != BT_TRIG_SCHED_LATENCY)
			i++;
		record_conf_err("trigger", i < o->ntriggers && o->twhere ? o->twhere[i] : NULL, "%s", err);
		return -2;
	}
	lo.trig_conf = ret ? trig_conf : NULL;
	r->loader = bt_loader_open(&lo, err, sizeof(err));
	if (!r->loader) {
		bt_err("%s", err);
		return -1;
	}
	r->resumed_boot_ns = bt_boottime_ns();
	pin_counters(r);
	return start_unwinder(r);
}

/* -u/-U probes and uprobe:PROBE triggers, on the loader's rings. 0, or -1
 * after saying why (naming the --trigger a failing probe came from). */
static int open_uprobes(struct recorder *r)
{
	const struct record_opts *o = r->o;
	int pid = (int)o->filter_tgid;
	struct bt_uprobe_opts uo = {
		.specs = o->uspecs, .nspecs = o->nuspecs,
		.usdts = o->usdts, .nusdts = o->nusdts,
		.pids = pid ? &pid : NULL, .npids = pid ? 1 : 0,
		.nargs = o->uargs,
		.wakeup_bytes = bt_loader_wakeup_bytes(r->loader),
		.ustack = o->ustack,
	};
	char *uerr = NULL; /* any length: a probe's message is never cut */

	if (!o->nuspecs && !o->nusdts)
		return 0;
	if (o->ustack)
		bt_loader_stack_fds(r->loader, uo.stack_fds);
	r->uprobes = bt_uprobes_open(&uo, bt_loader_rings_fd(r->loader), bt_loader_cpu_state_fd(r->loader), &uerr);
	if (!r->uprobes) {
		const char *m = uerr ? uerr : strerror(errno);
		size_t i = 0;

		/* a uprobe:PROBE trigger is attached like a -u probe */
		while (i < o->ntriggers && !(o->triggers[i].kind == BT_TRIG_UPROBE && strstr(m, o->triggers[i].arg)))
			i++;
		if (i < o->ntriggers)
			bt_err("--trigger '%s': %s", o->triggers[i].cond, m);
		else
			bt_err("%s", m);
		free(uerr);
		return -1;
	}
	free(uerr);
	if (o->ntriggers && find_trigger_ids(r) < 0)
		return -1;
	return 0;
}

/* Triggers armed, the drain running, the task table seeded, the dump
 * directory's manager and the dump thread started. 0, or -1 after saying
 * why; *dump_thread says whether the thread runs. */
static int start_recording(struct recorder *r, int *dump_thread)
{
	const struct record_opts *o = r->o;
	char err[512];
	int ret;

	/* Before the drain: a uprobe trigger's first hit finds its thread. */
	if (recorder_triggers_start(r, err, sizeof(err))) {
		bt_err("%s", err);
		return -1;
	}
	bt_loader_set_cold(r->loader, r->cold);
	if (bt_loader_start(r->loader, r->buf, r->tasks, r->stacks))
		return -1;
	/* After the drain started: seeding never overrides names from events,
	 * and every thread born after attach has a fork event. */
	ret = bt_tasks_seed_proc(r->tasks);
	if (ret < 0)
		bt_warn("cannot read task names from /proc: %s", strerror(-ret));

	/* The dump directory: quota, free space, manifests, --on-dump. */
	struct bt_dump_mgmt_opts mo = {
		.dir = o->output_dir, .max_dumps = o->max_dumps, .max_bytes = o->max_dump_bytes,
		.keep_free = o->keep_free, .on_dump = o->on_dump, .on_dump_timeout_ns = o->on_dump_timeout_ns,
	};

	r->mgmt = bt_dump_mgmt_new(&mo, err, sizeof(err));
	if (!r->mgmt) {
		bt_log(BT_LOG_ERR, "%s", err);
		return -1;
	}
	ret = pthread_create(&r->dump_thread, NULL, recorder_dump_thread, r);
	if (ret) {
		bt_err("cannot start the dump thread: %s", strerror(ret));
		return -1;
	}
	*dump_thread = 1;
	return 0;
}

/* The registry of in-process traced applications, with its app:/app-func:
 * watches (kept in w). Before the control thread starts: its handlers read
 * r->apps. 0, or -1 after saying why. */
static int start_apps(struct recorder *r, struct app_watches *w)
{
	const struct record_opts *o = r->o;
	char err[512];

	if (o->no_ctl || o->no_apps) {
		if (o->app_buffer_size || o->max_apps || o->app_block_size)
			bt_warn("--app-buffer-size/--app-block-size/--max-apps ignored: in-process tracing needs the control socket%s",
				o->no_apps ? " and no --no-apps" : "");
		return 0;
	}
	/* --app-buffer-size applies to every application; without it, the
	 * function-tracing ones get 32 MiB where --max-apps of them fit in
	 * the memory there is (else the same 4 MiB as the others). */
	uint64_t fsize = o->app_buffer_size ? o->app_buffer_size : DEFAULT_APP_FUNCS_BUFFER_SIZE;
	uint64_t avail = bt_mem_available();
	if (!o->app_buffer_size && avail && fsize * (o->max_apps ? o->max_apps : 64) > avail / 2)
		fsize = DEFAULT_APP_BUFFER_SIZE;
	struct bt_apps_config ac = {
		.buffer_size = o->app_buffer_size ? o->app_buffer_size : DEFAULT_APP_BUFFER_SIZE,
		.funcs_buffer_size = fsize,
		.block_size = o->app_block_size ? (uint32_t)o->app_block_size : DEFAULT_APP_BLOCK_SIZE,
		.ncores = r->ncpus,
		.max_apps = o->max_apps,
		.trigger = r->triggers ? recorder_app_trigger : NULL,
		.trigger_ctx = r,
	};

	for (size_t i = 0; i < o->ntriggers && ac.nwatch < BT_TRIG_MAX; i++)
		if (o->triggers[i].kind == BT_TRIG_APP_SLICE) {
			w->wn[ac.nwatch] = o->triggers[i].arg;
			w->wns[ac.nwatch++] = o->triggers[i].threshold_ns;
		} else if (o->triggers[i].kind == BT_TRIG_APP_FUNC) {
			w->fwn[ac.nfwatch] = o->triggers[i].arg;
			w->fwns[ac.nfwatch] = o->triggers[i].threshold_ns;
			w->fwt[ac.nfwatch++] = (uint32_t)i;
		}
	ac.fwatch_names = w->fwn;
	ac.fwatch_ns = w->fwns;
	ac.fwatch_trig = w->fwt;
	ac.func_trigger = r->triggers ? recorder_app_func_trigger : NULL;
	ac.watch_names = w->wn;
	ac.watch_ns = w->wns;
	r->apps = bt_apps_create(&ac, err, sizeof(err));
	if (!r->apps) {
		bt_err("--app-buffer-size: %s", err);
		return -1;
	}
	return 0;
}

/* The control socket (without it, no in-process tracing). 0, or -1 after
 * saying why. */
static int start_ctl(struct recorder *r)
{
	const struct record_opts *o = r->o;
	char err[512];

	if (!o->no_ctl) {
		r->ctl = bt_ctl_start(o->ctl_path, record_ctl_handler, r, r->apps ? adopt_app : NULL, r, err, sizeof(err));
		if (!r->ctl && !o->ctl_path && errno == EACCES) {
			/* Not root (CAP_BPF + CAP_PERFMON): record without control. */
			bt_warn("%s: `btrace-bpf ctl` disabled (give a writable --ctl PATH to have it)", err);
		} else if (!r->ctl) {
			bt_err("%s", err);
			return -1;
		}
	}
	if (!r->ctl && r->apps) {
		bt_apps_destroy(r->apps);
		r->apps = NULL;
	}
	return 0;
}

/* What is recorded, where dumps go and how to control it; systemd told. */
static void announce(struct recorder *r)
{
	const struct record_opts *o = r->o;
	char gs[64], s1[32], s2[32], s3[32];

	groups_str(bt_loader_groups(r->loader), gs, sizeof(gs));
	if (r->uprobes) {
		bt_uprobes_print(r->uprobes);
		bt_warn("%zu user-space probes attached (%zu links)", bt_uprobes_nprobes(r->uprobes),
			bt_uprobes_nattached(r->uprobes));
	}
	for (size_t i = 0; i < o->ntriggers; i++) {
		char a[32], l[32];
		bt_log(BT_LOG_NOTICE, "trigger %s armed: %s (dump %s after, at most one per %s)", o->triggers[i].name,
		       o->triggers[i].cond, format_duration(o->triggers[i].after_ns, a, sizeof(a)),
		       format_duration(o->triggers[i].limit_ns, l, sizeof(l)));
	}
	bt_log(BT_LOG_NOTICE, "recording %s into %s (%u tracepoints, rings %s: %u CPUs x %s), dumps to %s", gs,
	       format_size(o->buffer_size, s1, sizeof(s1)), bt_loader_nattached(r->loader),
	       format_size(bt_loader_ring_size(r->loader), s2, sizeof(s2)), bt_loader_ncpus(r->loader),
	       format_size(bt_loader_ring_size_per_cpu(r->loader), s3, sizeof(s3)), o->output_dir);
	bt_log(BT_LOG_NOTICE, "recording (pid %d). Dump with: kill -USR1 %d. Stop with Ctrl-C.", (int)getpid(),
	       (int)getpid());
	if (r->ctl)
		bt_log(BT_LOG_INFO, "control: btrace-bpf ctl --ctl %s status|dump|resize SIZE|stop", bt_ctl_path(r->ctl));
	bt_log(BT_LOG_INFO, "read a dump with: btrace-bpf report FILE (or convert FILE for ui.perfetto.dev)");
	/* systemd (Type=notify): started means recording. */
	bt_sd_notifyf("READY=1\nSTATUS=recording %s into %s, dumps to %s", gs, format_size(o->buffer_size, s1, sizeof(s1)),
		      o->output_dir);
}

/* Shutdown: no new events, every event drained, then the last dump asked for. */
/* The stop's steps and how long each took: a stop slower than a second
 * names its slowest step in the log (a service has TimeoutStopSec). */
struct stop_clock {
	uint64_t t0, last, worst_ns;
	const char *worst;
};

static void stop_step(struct stop_clock *c, const char *what)
{
	uint64_t now = bt_now_ns();

	if (now - c->last > c->worst_ns) {
		c->worst_ns = now - c->last;
		c->worst = what;
	}
	c->last = now;
}

static void stop_recording(struct recorder *r, struct stop_clock *c)
{
	/* An upgrade's exec is this service going on: systemd waits for its
	 * READY=1 (RELOADING=1); STOPPING=1 would have it stop the service. */
	if (atomic_load_explicit(&r->exec_requested, memory_order_relaxed))
		bt_sd_notify("RELOADING=1\nSTATUS=upgrading: running the new binary on the same buffer");
	else
		bt_sd_notify("STOPPING=1\nSTATUS=stopping: the final dump");
	bt_ctl_stop(r->ctl); /* no ctl dump races the final one */
	r->ctl = NULL;
	stop_step(c, "closing the control socket");
	recorder_triggers_stop(r); /* no trigger dump asked for after this */
	stop_step(c, "stopping the triggers");
	bt_uprobes_detach(r->uprobes);
	bt_loader_detach(r->loader);
	stop_step(c, "detaching the programs");
	bt_loader_stop(r->loader);
	stop_step(c, "the drain's last pass");
	bt_cold_pump_stop(r->cold_pump); /* takes the last blocks the drain completed */
	r->cold_pump = NULL;
	stop_step(c, "the cold tier's last pass");
	if (r->o->final_dump)
		recorder_request_dump(r, "exit");
}

/* The dump thread writes what is pending and ends; the last line says what
 * was recorded and lost. Returns 1 if the final dump failed. */
static int finish_dumps(struct recorder *r, int dump_thread)
{
	struct bt_drain_stats ds;
	uint64_t drops = 0;
	int failed = 0;

	if (!dump_thread)
		return 0;
	pthread_mutex_lock(&r->lock);
	r->quit = 1;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->dump_thread, NULL);
	if (r->o->final_dump && r->final_failed)
		failed = 1;
	if (r->loader) {
		uint64_t *d = calloc((size_t)r->ncpus * BT_GROUP_MAX, sizeof(*d));

		bt_loader_drain_stats(r->loader, &ds);
		if (d && bt_loader_read_cpu_state(r->loader, d, NULL, NULL) == 0)
			for (size_t i = 0; i < (size_t)r->ncpus * BT_GROUP_MAX; i++)
				drops += d[i];
		free(d);
		bt_log(BT_LOG_NOTICE, "stopped: %" PRIu64 " events recorded, %" PRIu64 " lost in the ring buffer, %"
		       PRIu64 " rejected; %" PRIu64 " dump%s written%s%s, %" PRIu64 " requests merged into a pending dump",
		       ds.events, drops, ds.rejected, r->ndumps, r->ndumps == 1 ? "" : "s", r->nfailed ? ", some failed" : "",
		       r->nskipped ? ", some skipped for lack of space" : "", r->requests_merged);
	}
	return failed;
}

/* Everything freed, in the order that keeps each user before what it uses. */
static void recorder_teardown(struct recorder *r, struct record_opts *o, struct stop_clock *c)
{
	bt_ctl_stop(r->ctl);
	recorder_triggers_stop(r);
	if (r->loader)
		bt_loader_stop(r->loader); /* the drain kicks the unwinder */
	if (r->stacks)
		bt_stack_table_set_path_source(r->stacks, NULL, NULL);
	bt_unwinder_stop(r->unwinder); /* before its maps go with the loader */
	stop_step(c, "stopping the unwinder");
	bt_apps_destroy(r->apps); /* after the final dump: it holds their last events */
	bt_uprobes_destroy(r->uprobes);
	bt_loader_destroy(r->loader);
	stop_step(c, "closing the programs and rings");
	bt_symbolizer_free(r->symbolizer);
	stop_step(c, "stopping the symbol cache");
	bt_stack_table_free(r->stacks); /* the drain is gone: nothing adds stacks */
	recorder_triggers_free(r); /* the drain and the registry are gone: nobody reports hits */
	bt_dump_mgmt_destroy(r->mgmt); /* waits for the running --on-dump commands */
	stop_step(c, "waiting for --on-dump commands");
	free(r->trigger_ids);
	free(o->uspecs);
	free(o->usdts);
	bt_tasks_free(r->tasks);
	bt_cold_pump_stop(r->cold_pump);
	bt_cold_destroy(r->cold);
	bt_buffer_destroy(r->buf);
	if (r->ho_thread_on)
		pthread_join(r->ho_thread, NULL);
	bt_handover_close(r->handover); /* systemd's store or the parent keeps its copy */
	bt_ho_found_free(&r->ho_found);
	bt_ho_prior_free(r->prior);
	stop_step(c, "freeing the buffers");
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->dump_serial);
	pthread_mutex_destroy(&r->buf_swap);
}

int recorder_run(const struct record_opts *opts)
{
	struct record_opts o = *opts;
	struct app_watches watches;
	struct recorder r;
	struct stop_clock sc = { 0 };
	sigset_t waitmask;
	int exit_code = 0, dump_thread = 0, ret, upgrading = 0;

	bt_verbose = o.verbose;
	bt_loader_set_libbpf_verbosity(o.verbose);
	/* A dump's big temporaries (snapshots, compression, symbolization)
	 * from mmap, given back when freed: glibc's threshold otherwise rises
	 * to 32 MiB after the first such free, and the next ones fragment the
	 * heap, which a recorder running for weeks keeps as slack. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	install_signals(&waitmask);
	memset(&r, 0, sizeof(r));
	r.o = &o;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	pthread_mutex_init(&r.dump_serial, NULL);
	pthread_mutex_init(&r.buf_swap, NULL);
	r.start_ns = bt_now_ns();
	r.start_boot_ns = bt_boottime_ns();
	/* The history a previous recorder left: on disk while this one
	 * loads (seconds on a busy machine), whatever the checks find. */
	take_handover(&r);
	start_handed_dump(&r);
	ssize_t xl = readlink("/proc/self/exe", r.exe_path, sizeof(r.exe_path) - 1);
	r.exe_path[xl > 0 ? xl : 0] = '\0';
	ret = preflight_checks(&o);
	if (ret) {
		if (r.ho_thread_on)
			pthread_join(r.ho_thread, NULL);
		bt_handover_close(r.handover);
		return ret == -2 ? RECORD_EXIT_CONFIG : 1;
	}

	ret = create_buffer(&r);
	if (!ret)
		ret = open_loader(&r);
	if (ret || open_uprobes(&r) || start_recording(&r, &dump_thread)) {
		exit_code = ret == -2 ? RECORD_EXIT_CONFIG : 1;
		goto out;
	}
	/* Before this point nothing is recorded worth a dump: a failure
	 * stops without the final one. */
	if (start_apps(&r, &watches) || start_ctl(&r) || create_output_dir(o.output_dir)) {
		exit_code = 1;
		got_stop = SIGTERM;
		o.final_dump = 0;
		goto out;
	}
	announce(&r);
	store_handover(&r); /* after READY=1: systemd's first word is that we record */
	run_loop(&r, &waitmask);
	/* ctl upgrade: the next binary dumps this history first (reason upgrade) */
	upgrading = atomic_load_explicit(&r.exec_requested, memory_order_relaxed) && r.handover;
	if (upgrading)
		o.final_dump = 0;
	sc.t0 = sc.last = bt_now_ns();
	stop_recording(&r, &sc);
out:
	if (!sc.t0)
		sc.t0 = sc.last = bt_now_ns();
	if (finish_dumps(&r, dump_thread))
		exit_code = 1;
	/* The final dump is on disk: the next start's dump of this memory
	 * says "restart", not "recorder-died". */
	save_handover(&r);
	save_stacks(&r);
	unpin_counters(&r); /* drained: nothing is left in the rings to count */
	bt_handover_mark(r.handover, upgrading ? BT_HO_EXEC : BT_HO_STOPPED);
	int exec_fd = upgrading ? fcntl(bt_handover_fd(r.handover), F_DUPFD_CLOEXEC, 3) : -1;
	/* With --no-final-dump, what it waited for is the dump in progress. */
	stop_step(&sc, o.final_dump ? "the final dump" : "the dump in progress");
	recorder_teardown(&r, &o, &sc);
	if (bt_now_ns() - sc.t0 >= 1000000000ull)
		bt_log(BT_LOG_NOTICE, "stop took %.1f s, %.1f s of it %s", (double)(bt_now_ns() - sc.t0) / 1e9,
		       (double)sc.worst_ns / 1e9, sc.worst);
	if (upgrading) {
		char err[512];

		bt_log(BT_LOG_NOTICE, "upgrading: running %s on the same buffer", r.exe_path);
		if (exec_fd < 0)
			snprintf(err, sizeof(err), "cannot keep the buffer's memory file: %s", strerror(errno));
		else
			bt_ho_exec(r.exe_path, exec_fd, err, sizeof(err));
		/* Still here: the memfd says "upgrade"; a restart (systemd's
		 * Restart=on-failure) dumps it. */
		bt_log(BT_LOG_ERR, "the upgrade failed: %s", err);
		exit_code = 1;
	}
	return exit_code;
}
