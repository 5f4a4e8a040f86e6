// SPDX-License-Identifier: MIT
/*
 * loader.c - open/probe/load/attach the record programs; drain.c drains
 * their ring buffers into the block buffer (see loader.h for the picture).
 *
 * Probing: every program is a tp_btf program on one tracepoint; a tracepoint
 * exists in the running kernel iff its BTF has the typedef btf_trace_<name>.
 * Programs of groups not asked for, and programs whose tracepoint is missing,
 * get autoload off, so one missing tracepoint never stops the others. For
 * sched_switch the number of arguments of btf_trace_sched_switch picks the
 * program variant (see core_fixes.bpf.h).
 *
 * Rings: one BPF ring buffer per possible CPU, in the BPF array of maps
 * `rings` (index = CPU). The loader creates them after loading the object
 * (the verifier knows only the inner map prototype of record.bpf.c) and
 * fills `rings` before attaching anything. --ring-size is the total: each
 * CPU gets ring_size / ncpus, rounded up to a power of two and at least a
 * page, so the total in use (bt_loader_ring_size) can be larger than asked.
 *
 * Draining: the BPF side submits without waking user space. A drain thread
 * owns a range of rings in one epoll set (ringbuf.c, a batch consumer that
 * publishes its position once per batch instead of once per record); it
 * waits up to drain_ms (less when a program forced a wakeup because its
 * CPU's ring passed the fill threshold, or a flush woke it), then consumes
 * every ring, since a timed-out wait consumes nothing. On a quiet machine
 * the wait grows to DRAIN_IDLE_MS (drain.c), an exec ending it early. One
 * drain thread today.
 *
 * Task events: rings are consumed one after the other, so a pass sees the
 * events of different CPUs out of time order (a fork on CPU 1, the child's
 * exec on CPU 0 a moment later, CPU 0's ring drained first). Applied in that
 * order the task table would end with the pre-exec name. The drain therefore
 * holds fork/exec/exit/rename events back and applies them to the task table
 * in timestamp order, up to the time the pass began: every ring has been
 * consumed up to that time once the pass ends (events still being written
 * then excepted), so nothing older can come later. The events themselves go
 * into the block buffer at once; a flush (bt_loader_flush) covers the table
 * too, so a dump names every task of the events submitted before it. (With
 * several drain threads, the held-back events of all of them would have to
 * be merged before they are applied.)
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "trigger.h"
#include "btrace_buffer.h"
#include "tasks.h"
#include "loader.h"
#include "loader_int.h"
#include "kernel_features.h"
#include "sys_pairs.h"
#include "compact.h"
#include "ringbuf.h"
#include "prog_misses.h"
#include "util.h"
#include "stack_table.h"
#include "unwind.h"
#include "unwind_procs.h"
#include "cold_tier.h"
#include "record.skel.h"

#define BT_MAX_RING_SIZE (1ull << 30) /* per CPU */

static const struct prog_desc {
	const char *name;
	int group;
} prog_descs[] = {
	{ "handle_sched_switch", BT_GROUP_SCHED },
	{ "handle_sched_switch_legacy", BT_GROUP_SCHED },
	{ "handle_sched_wakeup", BT_GROUP_SCHED },
	{ "handle_sched_wakeup_new", BT_GROUP_SCHED },
	{ "handle_sched_waking", BT_GROUP_SCHED },
	{ "handle_sched_migrate_task", BT_GROUP_SCHED },
	{ "handle_sched_process_fork", BT_GROUP_SCHED },
	{ "handle_sched_process_exec", BT_GROUP_SCHED },
	{ "handle_sched_process_exit", BT_GROUP_SCHED },
	{ "handle_task_rename", BT_GROUP_SCHED },
	{ "handle_irq_handler_entry", BT_GROUP_IRQ },
	{ "handle_irq_handler_exit", BT_GROUP_IRQ },
	{ "handle_softirq_entry", BT_GROUP_IRQ },
	{ "handle_softirq_exit", BT_GROUP_IRQ },
	{ "handle_cpu_frequency", BT_GROUP_POWER },
	{ "handle_cpu_idle", BT_GROUP_POWER },
	{ "handle_sys_enter", BT_GROUP_SYSCALLS },
	{ "handle_sys_exit", BT_GROUP_SYSCALLS },
	{ "handle_cpu_sample", BT_GROUP_STACKS },  /* perf_event, attached per CPU */
	{ "handle_waker_stack", BT_GROUP_STACKS },
	{ "handle_unwind_fork", BT_GROUP_STACKS }, /* the unwinder's per-process map kept current */
	{ "handle_unwind_exec", BT_GROUP_STACKS },
	{ "handle_unwind_exit", BT_GROUP_STACKS },
	{ "handle_unwind_exec_maps", BT_GROUP_STACKS }, /* the mappings the kernel makes */
	{ "handle_unwind_mmap", BT_GROUP_STACKS },
};
#define NPROGS (sizeof(prog_descs) / sizeof(prog_descs[0]))

static const char *const group_names[BT_GROUP_MAX] = {
	"sched", "irq", "power", "syscalls", "uprobe", "stacks",
};

_Static_assert(NPROGS == BT_LOADER_NPROGS, "loader_int.h: one link per program");

/* ---- libbpf messages ---------------------------------------------------------- */

static int libbpf_verbosity;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (libbpf_verbosity >= 2 || (libbpf_verbosity == 1 && level == LIBBPF_WARN))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

void bt_loader_set_libbpf_verbosity(int level)
{
	libbpf_verbosity = level;
	libbpf_set_print(libbpf_print);
}

/* ---- probing ------------------------------------------------------------------- */

static const struct prog_desc *find_desc(const char *name)
{
	for (size_t i = 0; i < NPROGS; i++)
		if (strcmp(prog_descs[i].name, name) == 0)
			return &prog_descs[i];
	return NULL;
}

/* "tp_btf/sched_switch" -> "sched_switch"; "fentry/f" stays whole. */
static const char *prog_tracepoint(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *slash = sec ? strchr(sec, '/') : NULL;

	if (sec && (strncmp(sec, "fentry/", 7) == 0 || strncmp(sec, "fexit/", 6) == 0))
		return sec;
	return slash ? slash + 1 : sec;
}

static int tracepoint_exists(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	if (strchr(tp, '/')) /* "fentry/FUNC": a kernel function, not a tracepoint */
		return btf__find_by_name_kind(vmlinux, strchr(tp, '/') + 1, BTF_KIND_FUNC) > 0;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

/*
 * Which sched_switch program fits: 1 = handle_sched_switch (prev_state is
 * the 4th argument), 0 = handle_sched_switch_legacy (3 arguments), -1 =
 * neither (unknown layout, or no such tracepoint).
 */
static int switch_variant(const struct btf *vmlinux)
{
	const struct btf_type *t;
	const struct btf_param *p;
	int id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	int nargs;

	if (id <= 0)
		return -1;
	t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vmlinux, t->type);
	if (!t || !btf_is_func_proto(t))
		return -1;
	nargs = btf_vlen(t) - 1; /* the first parameter is the tracepoint's void *data */
	p = btf_params(t);
	if (nargs == 3)
		return 0;
	if (nargs >= 4) {
		/* (data, preempt, prev, next, prev_state): prev must be a pointer
		 * and prev_state an integer, not the short-lived 5.18-rc order
		 * (preempt, prev_state, prev, next). */
		const struct btf_type *a2 = btf__type_by_id(vmlinux, p[2].type);
		const struct btf_type *a4 = btf__type_by_id(vmlinux, p[4].type);

		while (a4 && (btf_is_typedef(a4) || btf_is_mod(a4)))
			a4 = btf__type_by_id(vmlinux, a4->type);
		if (a2 && btf_is_ptr(a2) && a4 && btf_is_int(a4))
			return 1;
	}
	return -1;
}

/* Turn off what was not asked for or what the kernel lacks. */
static int probe_programs(struct bt_loader *l, uint32_t groups, const struct bt_loader_opts *o, int trig_switch,
			  char *err, size_t errlen)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	uint32_t loadable = 0;
	struct bpf_program *prog;
	int variant;

	if (!vmlinux) {
		snprintf(err, errlen,
			 "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s; "
			 "btrace-bpf needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
			 strerror(errno));
		return -ENOENT;
	}
	variant = switch_variant(vmlinux);
	/* The exec and mmap hooks read mappings with bpf_find_vma (5.17). */
	int find_vma_ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_find_vma, NULL) == 1;
	bpf_object__for_each_program(prog, l->skel->obj) {
		const char *name = bpf_program__name(prog);
		const struct prog_desc *d = find_desc(name);
		const char *tp = prog_tracepoint(prog);
		int on = d && (groups & (1u << d->group));

		/* sched_waking doubles the wakeup events: only when asked for. */
		if (strcmp(name, "handle_sched_waking") == 0)
			on = on && o->waking;
		if (strcmp(name, "handle_waker_stack") == 0)
			on = o->stacks_wakeup;
		if (strncmp(name, "handle_unwind_", 14) == 0)
			on = o->unwind_mem && (o->sample_hz || o->stacks_switch || o->stacks_wakeup);
		if (strcmp(name, "handle_sys_batch_flush") == 0) {
			/* run by the drain (drain.c: flush_sys_batches), not attached */
			bpf_program__set_autoload(prog, (groups & (1u << BT_GROUP_SYSCALLS)) != 0);
			continue;
		}
		if (strcmp(name, "handle_cpu_sample_user") == 0) {
			/* tail-called by handle_cpu_sample (sample_tail), not attached */
			bpf_program__set_autoload(prog, o->sample_hz != 0);
			continue;
		}
		if (strcmp(name, "handle_cpu_sample") == 0) {
			/* not a tracepoint: attached to perf events below */
			bpf_program__set_autoload(prog, o->sample_hz != 0);
			if (o->sample_hz)
				loadable |= 1u << d->group;
			continue;
		}
		/* The sched-latency trigger is read in sched_switch, recorded or
		 * not; and a blocking system call's held enter is flushed there
		 * (emit.bpf.h: deferred sys_enter). */
		if ((trig_switch || (groups & (1u << BT_GROUP_SYSCALLS))) && strncmp(name, "handle_sched_switch", 19) == 0)
			on = 1;

		if (on && (strcmp(name, "handle_unwind_exec_maps") == 0 || strcmp(name, "handle_unwind_mmap") == 0)) {
			/* Both or neither: without them exec drops the entry
			 * and the recorder reads the new image from /proc. */
			on = find_vma_ok;
			if (!on && strcmp(name, "handle_unwind_mmap") == 0)
				bt_info("this kernel has no bpf_find_vma: a new process's mappings are read from "
					"/proc after its exec (its first stacks: the leaf only)");
			bpf_program__set_autoload(prog, on);
			continue;
		}
		if (on && !tracepoint_exists(vmlinux, tp)) {
			if (strcmp(name, "handle_sched_switch_legacy") != 0) /* warned once */
				bt_warn("tracepoint %s is not available in this kernel: its events are not recorded", tp);
			on = 0;
		}
		if (on && strcmp(name, "handle_sched_switch") == 0) {
			if (variant < 0)
				bt_warn("sched_switch has arguments this version does not know: "
					"sched_switch is not recorded");
			on = variant == 1;
		} else if (on && strcmp(name, "handle_sched_switch_legacy") == 0) {
			on = variant == 0;
		}
		bpf_program__set_autoload(prog, on);
		if (on && (groups & (1u << d->group)))
			loadable |= 1u << d->group;
	}
	btf__free(vmlinux);
	/* System calls recorded: their exit program runs the mmap hook too,
	 * and perf's syscall probe stays off every call's exit. Where
	 * BT_NR_MMAP is known (unwind_walk.bpf.h). */
#if defined(__x86_64__) || defined(__aarch64__)
	if (bpf_program__autoload(l->skel->progs.handle_unwind_mmap) &&
	    bpf_program__autoload(l->skel->progs.handle_sys_exit)) {
		bpf_program__set_autoload(l->skel->progs.handle_unwind_mmap, false);
		l->skel->rodata->unwind_mmap_in_sys_exit = 1;
	}
#endif
	for (int g = 0; g < BT_GROUP_MAX; g++)
		if ((groups & (1u << g)) && !(loadable & (1u << g)))
			bt_warn("no tracepoint of event group %s exists in this kernel: group disabled",
				group_names[g]);
	if (!loadable) {
		snprintf(err, errlen, "none of the requested tracepoints exists in this kernel");
		return -ENOENT;
	}
	return 0;
}

/* Every CPU's sampling link and perf event closed (those not opened are
 * NULL and -1). */
static void close_sampling(struct bt_loader *l)
{
	for (uint32_t c = 0; l->sample_links && c < l->ncpus; c++) {
		bpf_link__destroy(l->sample_links[c]); /* NULL-safe */
		l->sample_links[c] = NULL;
		if (l->sample_fds[c] >= 0)
			close(l->sample_fds[c]);
		l->sample_fds[c] = -1;
	}
}

/* perf_event_open refused by policy, not by a bad value: Debian's kernels
 * default to kernel.perf_event_paranoid=3 (a Debian patch), which refuses
 * it to anyone without CAP_SYS_ADMIN, and the packaged unit does not grant
 * that. Recording goes on without CPU samples (the tracepoints attach
 * without perf events), said once at start and in ctl status, rather than
 * a service that never starts. Returns 1: sampling is off. */
static int sampling_refused(struct bt_loader *l, uint32_t cpu, int e)
{
	char buf[16] = "";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
	}
	close_sampling(l);
	bt_warn("CPU sampling is off: the kernel refused its perf event on CPU %u (%s; "
		"kernel.perf_event_paranoid=%s): set kernel.perf_event_paranoid=2, or grant CAP_SYS_ADMIN "
		"(Debian's kernels refuse perf events at 3 without it); the other events are recorded",
		cpu, strerror(e), buf[0] ? buf : "unknown");
	l->sampling_refused = e;
	return 1;
}

/* A software CPU clock per online CPU at hz samples per second, each
 * running handle_cpu_sample (perf's `-e cpu-clock -F hz -a`). Returns 0,
 * 1 when sampling is refused by policy (sampling_refused), or -errno. */
static int attach_sampling(struct bt_loader *l, uint32_t hz, char *err, size_t errlen)
{
	unsigned attached = 0;

	l->sample_links = calloc(l->ncpus, sizeof(*l->sample_links));
	l->sample_fds = malloc(l->ncpus * sizeof(*l->sample_fds));
	if (!l->sample_links || !l->sample_fds) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < l->ncpus; c++)
		l->sample_fds[c] = -1;
	for (uint32_t c = 0; c < l->ncpus; c++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = hz,
		};
		int fd = (int)syscall(__NR_perf_event_open, &a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			int e = errno;
			if (e == ENODEV || e == ENOENT)
				continue; /* an offline CPU */
			if (e == EACCES || e == EPERM)
				return sampling_refused(l, c, e);
			snprintf(err, errlen,
				 "cannot open the sampling clock of CPU %u: %s%s", c, strerror(e),
				 e == EINVAL ? " (is --sample above /proc/sys/kernel/perf_event_max_sample_rate?)" : "");
			return -e;
		}
		l->sample_fds[c] = fd;
		l->sample_links[c] = bpf_program__attach_perf_event(l->skel->progs.handle_cpu_sample, fd);
		if (!l->sample_links[c]) {
			int e = errno;
			snprintf(err, errlen, "cannot attach the sampling program to CPU %u: %s", c, strerror(e));
			return -e;
		}
		attached++;
	}
	if (!attached) {
		snprintf(err, errlen, "no CPU could be sampled");
		return -ENODEV;
	}
	return 0;
}

static void describe_load_error(int e, char *err, size_t errlen)
{
	switch (e) {
	case EPERM:
		snprintf(err, errlen,
			 "BPF not permitted (loading programs failed with EPERM): run as root, or "
			 "grant CAP_BPF and CAP_PERFMON; as root, BPF may be blocked by kernel "
			 "lockdown, a seccomp filter or a container");
		break;
	case EACCES:
	case EINVAL:
		snprintf(err, errlen,
			 "the kernel rejected a BPF program (%s): run with -v to see the verifier's log",
			 strerror(e));
		break;
	case ENOMEM:
		snprintf(err, errlen,
			 "not enough memory for the BPF maps: try a smaller --ring-size");
		break;
	default:
		snprintf(err, errlen, "cannot load the BPF programs: %s (run with -v for details)",
			 strerror(e));
		break;
	}
}

/* The ring of one CPU: its share of the total, rounded up to a power of two
 * and at least a page (what the kernel takes), at most BT_MAX_RING_SIZE. */
static uint64_t ring_size_per_cpu(uint64_t total, uint32_t ncpus)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), r = page;
	uint64_t sz = (total + ncpus - 1) / ncpus;

	if (sz > BT_MAX_RING_SIZE)
		sz = BT_MAX_RING_SIZE;
	while (r < sz)
		r <<= 1;
	return r;
}

/* One ring per possible CPU, into `rings` (loaded, not attached yet). */
/* The unwind rows array, mapped once for the unwinder (it writes tables)
 * and the stack copies (they read them): two mappings of one map would
 * count its pages twice in the recorder's RSS. */
static int map_unwind_rows(struct bt_loader *l, char *err, size_t errlen)
{
	if (!l->skel->rodata->unwind_on)
		return 0;
	size_t len = (size_t)bpf_map__max_entries(l->skel->maps.unwind_rows) * sizeof(struct bt_unwind_row);
	void *rows = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(l->skel->maps.unwind_rows), 0);
	if (rows == MAP_FAILED) {
		int e = errno;
		snprintf(err, errlen, "cannot map the unwind table (%zu MiB, --unwind-mem): %s", len >> 20, strerror(e));
		return -e;
	}
	l->unwind_rows = rows;
	l->unwind_rows_len = len;
	return 0;
}

static int create_rings(struct bt_loader *l, char *err, size_t errlen)
{
	int outer = bpf_map__fd(l->skel->maps.rings);

	l->ring_fds = malloc(l->ncpus * sizeof(*l->ring_fds));
	if (!l->ring_fds) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < l->ncpus; c++)
		l->ring_fds[c] = -1;
	for (uint32_t c = 0; c < l->ncpus; c++) {
		char name[24]; /* the kernel keeps 15 characters */
		int fd, ret;

		snprintf(name, sizeof(name), "bt_ring_%u", c);
		fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, name, 0, 0, (uint32_t)l->ring_size, NULL);
		if (fd < 0) {
			ret = -errno;
			if (ret == -ENOMEM)
				snprintf(err, errlen, "not enough memory for %u BPF ring buffers of %" PRIu64
					 " KiB (one per possible CPU): try a smaller --ring-size",
					 l->ncpus, l->ring_size >> 10);
			else
				snprintf(err, errlen, "cannot create the BPF ring buffer of CPU %u: %s",
					 c, strerror(-ret));
			return ret;
		}
		l->ring_fds[c] = fd;
		if (bpf_map_update_elem(outer, &c, &fd, BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen, "cannot install the BPF ring buffer of CPU %u: %s", c,
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static int trig_armed(const struct bt_trig_conf *c, uint32_t kind)
{
	for (int i = 0; c && i < BT_TRIG_MAX; i++)
		if (c[i].kind == kind)
			return 1;
	return 0;
}

/* syscalls/sys_exit_mmap, the one classic tracepoint (a new process's
 * mappings, its first stacks), is found through tracefs; a machine that
 * never mounted it (a fresh VM, a container) left those stacks leaf-only.
 * Mounted where it belongs, as perf and trace-cmd do, and left mounted:
 * others may use it from then on. Without the privilege, the attach below
 * says what is lost. */
static void tracefs_ensure(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0 || access("/sys/kernel/debug/tracing/events", F_OK) == 0)
		return;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
		bt_log(BT_LOG_NOTICE, "mounted tracefs on /sys/kernel/tracing (syscalls/sys_exit_mmap is found there)");
}

/* -v: what loading cost, most of it the kernel verifying the programs
 * (CPU the recorder's start pays on every start and every test). The
 * unwinder's programs are the large ones: a search written with a branch
 * per outcome once made the verifier walk 473k instructions (0.6 s). */
static void log_verifier_cost(struct bpf_object *obj, uint64_t ns)
{
	const char *top = "";
	uint64_t all = 0;
	uint32_t most = 0;
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info = {};
		uint32_t len = sizeof(info);

		if (!bpf_program__autoload(p) || bpf_program__fd(p) < 0 ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			continue;
		all += info.verified_insns;
		if (info.verified_insns > most) {
			most = info.verified_insns;
			top = bpf_program__name(p);
		}
	}
	if (!most) /* before 5.16 the kernel does not say */
		bt_info("BPF programs loaded in %" PRIu64 " ms", ns / 1000000);
	else
		bt_info("BPF programs loaded in %" PRIu64 " ms: the kernel verified %" PRIu64
			" instructions, the most (%" PRIu32 ") in %s",
			ns / 1000000, all, most, top);
}

/* Batched system-call pairs (emit.bpf.h) once the drain can flush them: a
 * dump must have the newest calls, and only the flush program, run on a
 * CPU, can take that CPU's batch. A kernel that refuses to run it keeps one
 * ring record a call. */
static void enable_sys_batches(struct bt_loader *l)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct bpf_program *prog = l->skel->progs.handle_sys_batch_flush;
	int fd = bpf_program__autoload(prog) ? bpf_program__fd(prog) : -1;

	if (fd < 0 || !l->skel->bss)
		return;
	if (bpf_prog_test_run_opts(fd, &run)) {
		bt_info("system calls go into the ring one at a time: cannot run the batch flush: %s",
			strerror(errno));
		return;
	}
	l->sys_batch_fd = fd;
	__atomic_store_n(&l->skel->bss->sys_batch_max, BT_SYS_BATCH, __ATOMIC_RELAXED);
}

struct bt_loader *bt_loader_open(const struct bt_loader_opts *o, char *err, size_t errlen)
{
	int unwind_hooks = 0; /* of handle_unwind_exec_maps and _mmap, attached */
	struct bt_loader *l = calloc(1, sizeof(*l));
	struct bpf_program *prog;
	int ret, ncpus, trig_switch;
	uint64_t load_ns;

	if (!l) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	l->sys_batch_fd = -1;
	if (!libbpf_verbosity)
		bt_loader_set_libbpf_verbosity(0);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		snprintf(err, errlen, "cannot count the possible CPUs: %s", strerror(-ncpus));
		ret = ncpus ? ncpus : -EINVAL;
		goto fail;
	}
	l->ncpus = (uint32_t)ncpus;
	l->drain_ms = o->drain_ms ? o->drain_ms : BT_DEFAULT_DRAIN_MS;
	l->ring_size = ring_size_per_cpu(o->ring_size ? o->ring_size : BT_DEFAULT_RING_SIZE, l->ncpus);
	l->wakeup_bytes = o->wakeup_bytes ? o->wakeup_bytes : l->ring_size / 2;

	l->skel = record_bpf__open();
	if (!l->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	ret = bpf_map__set_max_entries(l->skel->maps.rings, l->ncpus);
	if (ret) {
		snprintf(err, errlen, "cannot size the array of ring buffers: %s", strerror(-ret));
		goto fail;
	}
	l->skel->rodata->filter_tgid = o->filter_tgid;
	memcpy(l->skel->rodata->filter_comm, o->filter_comm, sizeof(l->skel->rodata->filter_comm));
	l->skel->rodata->filter_comm[sizeof(l->skel->rodata->filter_comm) - 1] = '\0';
	l->skel->rodata->self_tgid = (uint32_t)getpid();
	l->skel->rodata->wakeup_bytes = l->wakeup_bytes;
	l->skel->rodata->stacks_switch = o->stacks_switch ? 1 : 0;
	l->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	if (o->max_stacks) {
		/* Twice the user-space table: the LRU forgets only stacks that
		 * stopped coming, and forgetting costs a resend, not a loss. */
		ret = bpf_map__set_max_entries(l->skel->maps.stack_seen, 2 * o->max_stacks);
		if (ret) {
			snprintf(err, errlen, "cannot size the stack map: %s", strerror(-ret));
			goto fail;
		}
	}
	if (o->unwind_mem && (o->sample_hz || o->stacks_switch || o->stacks_wakeup)) {
		uint64_t rows = o->unwind_mem / sizeof(struct bt_unwind_row);
		l->skel->rodata->unwind_on = 1;
		l->skel->rodata->py_frames_on = o->python_frames != 0;
		ret = bpf_map__set_max_entries(l->skel->maps.unwind_rows, (uint32_t)(rows < (1u << 30) ? rows : (1u << 30)));
		if (ret) {
			snprintf(err, errlen, "cannot size the unwind tables: %s", strerror(-ret));
			goto fail;
		}
	}
	if (!o->stacks_switch) /* the pending-block table is not used: keep it small */
		bpf_map__set_max_entries(l->skel->maps.offcpu_pending, 1);
	if (o->trig_conf)
		memcpy((void *)l->skel->rodata->trig_conf, o->trig_conf, sizeof(l->skel->rodata->trig_conf));
	trig_switch = trig_armed(o->trig_conf, BT_TRIG_SCHED_LATENCY);
	l->skel->rodata->record_switch = (o->groups & (1u << BT_GROUP_SCHED)) != 0;

	ret = bt_kernel_check_record(err, errlen);
	if (ret)
		goto fail;
	ret = probe_programs(l, o->groups, o, trig_switch, err, errlen);
	if (ret)
		goto fail;

	load_ns = bt_now_ns();
	ret = record_bpf__load(l->skel);
	if (ret) {
		describe_load_error(-ret, err, errlen);
		goto fail;
	}
	if (bt_verbose)
		log_verifier_cost(l->skel->obj, bt_now_ns() - load_ns);
	ret = create_rings(l, err, errlen);
	if (ret)
		goto fail;
	ret = map_unwind_rows(l, err, errlen);
	if (ret)
		goto fail;

	if (bpf_program__autoload(l->skel->progs.handle_unwind_mmap))
		tracefs_ensure();
	bpf_object__for_each_program(prog, l->skel->obj) {
		const struct prog_desc *d;
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		if (prog == l->skel->progs.handle_cpu_sample_user || prog == l->skel->progs.handle_sys_batch_flush)
			continue;
		if (prog == l->skel->progs.handle_cpu_sample) {
			int zero = 0, tail = bpf_program__fd(l->skel->progs.handle_cpu_sample_user);

			/* the user half, before the first sample */
			if (bpf_map__update_elem(l->skel->maps.sample_tail, &zero, sizeof(zero), &tail, sizeof(tail), 0)) {
				ret = -errno;
				snprintf(err, errlen, "cannot set the sampling program's user half: %s", strerror(errno));
				goto fail;
			}
			ret = attach_sampling(l, o->sample_hz, err, errlen);
			if (ret < 0)
				goto fail;
			if (ret == 0)
				l->groups |= 1u << BT_GROUP_STACKS;
			ret = 0;
			continue;
		}
		link = bpf_program__attach(prog);
		if (!link) {
			bt_warn("cannot attach to %s: %s: %s", prog_tracepoint(prog), strerror(errno),
				strncmp(bpf_program__name(prog), "handle_unwind_", 14) == 0
					? "new processes' mappings are read from /proc (their first stacks: the leaf only)"
					: "its events are not recorded");
			continue;
		}
		l->links[l->nlinks++] = link;
		if (prog == l->skel->progs.handle_sched_process_exec)
			l->exec_ends_waits = 1;
		if (prog == l->skel->progs.handle_unwind_exec_maps || prog == l->skel->progs.handle_unwind_mmap ||
		    (prog == l->skel->progs.handle_sys_exit && l->skel->rodata->unwind_mmap_in_sys_exit))
			unwind_hooks++;
		d = find_desc(bpf_program__name(prog));
		if (d && (o->groups & (1u << d->group)))
			l->groups |= 1u << d->group;
	}
	if (!l->nlinks) {
		ret = -ENOENT;
		snprintf(err, errlen, "could not attach to any tracepoint (run with -v for details)");
		goto fail;
	}
	/* Read by handle_sys_enter/exit: the attach loop is done, so an enter
	 * recorded from now on has its exit's program attached (unless that
	 * attach failed, which was warned above). */
	if (l->skel->bss)
		__atomic_store_n(&l->skel->bss->sys_pairs_live, 1, __ATOMIC_RELAXED);
	enable_sys_batches(l);
	/* Read by handle_unwind_exec: from now on the BPF side keeps the
	 * entries across exec itself. */
	if (unwind_hooks == 2 && l->skel->bss)
		__atomic_store_n(&l->skel->bss->unwind_hooks_live, 1, __ATOMIC_RELAXED);
	return l;
fail:
	bt_loader_destroy(l);
	errno = ret < 0 ? -ret : EINVAL;
	return NULL;
}

void bt_loader_trig_maps(const struct bt_loader *l, int *ring_fd, int *counts_fd)
{
	*ring_fd = bpf_map__fd(l->skel->maps.trig_ring);
	*counts_fd = bpf_map__fd(l->skel->maps.trig_counts);
}

int bt_loader_sampling_refused(const struct bt_loader *l)
{
	return l->sampling_refused;
}

uint32_t bt_loader_groups(const struct bt_loader *l)
{
	return l->groups;
}

unsigned bt_loader_nattached(const struct bt_loader *l)
{
	return l->nlinks;
}

uint64_t bt_loader_ring_size(const struct bt_loader *l)
{
	return l->ring_size * l->ncpus;
}

uint64_t bt_loader_ring_size_per_cpu(const struct bt_loader *l)
{
	return l->ring_size;
}

uint64_t bt_loader_wakeup_bytes(const struct bt_loader *l)
{
	return l->wakeup_bytes;
}

uint32_t bt_loader_ncpus(const struct bt_loader *l)
{
	return l->ncpus;
}

int bt_loader_rings_fd(const struct bt_loader *l)
{
	return bpf_map__fd(l->skel->maps.rings);
}

int bt_loader_unwind_fds(const struct bt_loader *l, struct bt_unwind_maps *m)
{
	if (!l->skel->rodata->unwind_on)
		return -1;
	m->rows_fd = bpf_map__fd(l->skel->maps.unwind_rows);
	m->rows = l->unwind_rows;
	m->max_rows = bpf_map__max_entries(l->skel->maps.unwind_rows);
	m->procs_fd = bpf_map__fd(l->skel->maps.unwind_procs);
	m->want_fd = bpf_map__fd(l->skel->maps.unwind_want);
	m->files_fd = bpf_map__fd(l->skel->maps.unwind_files);
	m->fwant_fd = bpf_map__fd(l->skel->maps.unwind_fwant);
	m->py_fd = bpf_map__fd(l->skel->maps.py_files);
	m->want_seq = l->skel->bss ? (const uint64_t *)&l->skel->bss->unwind_want_seq : NULL;
	return 0;
}

void bt_loader_stack_fds(const struct bt_loader *l, int fds[3])
{
	fds[0] = bpf_map__fd(l->skel->maps.stack_scratch);
	fds[1] = bpf_map__fd(l->skel->maps.stack_seen);
	fds[2] = bpf_map__fd(l->skel->maps.stack_stats);
}

int bt_loader_cpu_state_fd(const struct bt_loader *l)
{
	return bpf_map__fd(l->skel->maps.cpu_state);
}

void bt_loader_detach(struct bt_loader *l)
{
	/* Every program stops emitting at once (emit.bpf.h: bt_stopped), then
	 * the links go one by one: no entry without its exit, or the reverse,
	 * from the gap between two links. Pairs with the plain load in
	 * bt_begin(). */
	if ((l->nlinks || l->sample_links) && l->skel && l->skel->bss)
		__atomic_store_n(&l->skel->bss->bt_stopped, 1, __ATOMIC_SEQ_CST);
	for (unsigned i = l->nlinks; i-- > 0;)
		bpf_link__destroy(l->links[i]);
	l->nlinks = 0;
	close_sampling(l);
}

void bt_loader_stop(struct bt_loader *l)
{
	for (unsigned i = 0; i < l->ndrains; i++) {
		struct bt_drain *d = &l->drains[i];

		if (d->running) {
			atomic_store_explicit(&d->stop, 1, memory_order_release);
			bt_rings_wake(d->rb); /* not after the drain's wait */
			pthread_join(d->thread, NULL);
			pthread_mutex_lock(&d->lock);
			d->running = 0;
			/* a flush asked after the drain's last pass: it returns now,
			 * not at its deadline (it tests running) */
			pthread_cond_broadcast(&d->cond);
			pthread_mutex_unlock(&d->lock);
		}
		bt_rings_free(d->rb);
		d->rb = NULL;
		free(d->pending);
		d->pending = NULL;
		d->npending = 0;
		bt_sys_landed_free(&d->landed);
	}
}

static void drains_destroy(struct bt_loader *l)
{
	for (unsigned i = 0; i < l->ndrains; i++) {
		pthread_cond_destroy(&l->drains[i].cond);
		pthread_mutex_destroy(&l->drains[i].lock);
	}
	l->ndrains = 0;
}

void bt_loader_drain_stats(const struct bt_loader *l, struct bt_drain_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < l->ndrains; i++) {
		const struct bt_drain *d = &l->drains[i];

		st->events += atomic_load_explicit(&d->events, memory_order_relaxed);
		st->rejected += atomic_load_explicit(&d->rejected, memory_order_relaxed);
		st->malformed += atomic_load_explicit(&d->malformed, memory_order_relaxed);
		st->wakeups += atomic_load_explicit(&d->wakeups, memory_order_relaxed);
		st->exec_wakes += atomic_load_explicit(&d->exec_wakes, memory_order_relaxed);
		st->sys_pair_records += atomic_load_explicit(&d->sys_pair_records, memory_order_relaxed);
		st->sys_pairs += atomic_load_explicit(&d->sys_pairs, memory_order_relaxed);
		st->wait_ms = atomic_load_explicit(&d->wait_ms, memory_order_relaxed);
		uint64_t peak = atomic_load_explicit(&d->ring_peak, memory_order_relaxed);
		if (peak > st->ring_peak)
			st->ring_peak = peak;
	}
	st->drain_ms = l->drain_ms;
}

void bt_loader_wake_stats(const struct bt_loader *l, uint64_t *forced, uint64_t *held)
{
	struct bt_wake_state *w = calloc(l->ncpus, sizeof(*w));
	__u32 zero = 0;

	*forced = *held = 0;
	if (w && bpf_map__lookup_elem(l->skel->maps.wake_state, &zero, sizeof(zero), w,
				      l->ncpus * sizeof(*w), 0) == 0)
		for (uint32_t c = 0; c < l->ncpus; c++) {
			*forced += w[c].forced;
			*held += w[c].held;
		}
	free(w);
}

int bt_loader_read_cpu_state(const struct bt_loader *l, uint64_t *drops, uint64_t *emitted,
			     uint64_t *seq)
{
	struct bt_cpu_state *v = calloc(l->ncpus, sizeof(*v));
	__u32 key = 0;
	int ret;

	if (!v)
		return -ENOMEM;
	ret = bpf_map__lookup_elem(l->skel->maps.cpu_state, &key, sizeof(key), v,
				   l->ncpus * sizeof(*v), 0);
	if (ret) {
		free(v);
		return ret;
	}
	for (uint32_t c = 0; c < l->ncpus; c++) {
		for (int g = 0; g < BT_GROUP_MAX; g++) {
			if (drops)
				drops[c * BT_GROUP_MAX + g] = v[c].drops[g];
			if (emitted)
				emitted[c * BT_GROUP_MAX + g] = v[c].emitted[g];
		}
		if (seq)
			seq[c] = v[c].seq;
	}
	free(v);
	return 0;
}

int bt_loader_read_stack_stats(const struct bt_loader *l, struct bt_stack_stats *sum)
{
	struct bt_stack_stats *v = calloc(l->ncpus, sizeof(*v));
	__u32 key = 0;
	int ret;

	memset(sum, 0, sizeof(*sum));
	if (!v)
		return -ENOMEM;
	ret = bpf_map__lookup_elem(l->skel->maps.stack_stats, &key, sizeof(key), v, l->ncpus * sizeof(*v), 0);
	for (uint32_t c = 0; !ret && c < l->ncpus; c++) {
		sum->kernel_err += v[c].kernel_err;
		sum->user_err += v[c].user_err;
		sum->def_drops += v[c].def_drops;
		sum->offcpu_short += v[c].offcpu_short;
		sum->offcpu_nomem += v[c].offcpu_nomem;
		sum->samples += v[c].samples;
		sum->unw_walks += v[c].unw_walks;
		sum->unw_no_proc += v[c].unw_no_proc;
		sum->unw_no_map += v[c].unw_no_map;
		sum->unw_anon += v[c].unw_anon;
		sum->unw_signal += v[c].unw_signal;
		sum->unw_bad += v[c].unw_bad;
		sum->unw_fp += v[c].unw_fp;
		sum->unw_no_table += v[c].unw_no_table;
		sum->unw_pending += v[c].unw_pending;
		sum->unw_maps_new += v[c].unw_maps_new;
		sum->unw_maps_full += v[c].unw_maps_full;
		sum->unw_execs += v[c].unw_execs;
		sum->unw_execs_full += v[c].unw_execs_full;
		sum->unw_copies += v[c].unw_copies;
		sum->unw_copy_rate += v[c].unw_copy_rate;
		sum->unw_copy_drops += v[c].unw_copy_drops;
		sum->unw_copy_old += v[c].unw_copy_old;
		sum->py_walks += v[c].py_walks;
		sum->py_frames += v[c].py_frames;
		sum->py_unknown += v[c].py_unknown;
		sum->py_no_thread += v[c].py_no_thread;
		sum->py_unreadable += v[c].py_unreadable;
		sum->py_cut += v[c].py_cut;
		sum->py_code_drops += v[c].py_code_drops;
	}
	free(v);
	return ret;
}

void bt_loader_destroy(struct bt_loader *l)
{
	if (!l)
		return;
	bt_loader_detach(l);
	bt_loader_stop(l);
	drains_destroy(l);
	bt_loader_copies_close(l);
	if (l->unwind_rows)
		munmap(l->unwind_rows, l->unwind_rows_len);
	bt_live_free(l->live);
	free(l->sample_links);
	free(l->sample_fds);
	record_bpf__destroy(l->skel);
	for (uint32_t c = 0; l->ring_fds && c < l->ncpus; c++)
		if (l->ring_fds[c] >= 0)
			close(l->ring_fds[c]);
	free(l->ring_fds);
	free(l);
}

size_t bt_loader_prog_misses(const struct bt_loader *l, struct bt_prog_miss *out, size_t max)
{
	return bt_obj_prog_misses(l->skel->obj, out, max);
}

struct bt_live *bt_loader_live(const struct bt_loader *l)
{
	return l->live;
}

void bt_loader_set_hook(struct bt_loader *l, bt_probe_hook fn, void *ctx)
{
	l->hook = fn;
	l->hook_ctx = ctx;
}
