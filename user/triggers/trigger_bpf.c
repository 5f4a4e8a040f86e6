// SPDX-License-Identifier: MIT
/*
 * trigger_bpf.c - the kernel side of `record --trigger` (bpf/trigger.bpf.c):
 * read-only slots from the specs, autoload of only the programs the
 * configured kinds need, the right mark_victim variant for this kernel, the
 * func probes attached with their slot as the BPF cookie, and the trigger
 * ring read through libbpf's ring_buffer (its epoll fd wakes the trigger
 * thread on every hit the kernel sends).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "trigger_bpf.h"
#include "trigger.skel.h"
#include "uprobes.h"
#include "util.h"

struct bt_trig_bpf {
	struct trigger_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks;
	bt_trig_hit_fn fn; /* during consume */
	void *ctx;
};

static int tp_exists(const struct btf *vm, const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vm, name, BTF_KIND_TYPEDEF) > 0;
}

/* Parameters of a tracepoint's prototype (its void *data excluded), -1 if unknown. */
static int tp_nargs(const struct btf *vm, const char *tp)
{
	char name[128];
	const struct btf_type *t;
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(vm, name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(vm, btf__type_by_id(vm, id)->type);
	if (!t || !btf_is_ptr(t))
		return -1;
	t = btf__type_by_id(vm, t->type);
	if (!t || !btf_is_func_proto(t))
		return -1;
	return btf_vlen(t) - 1;
}

static int add_link(struct bt_trig_bpf *t, struct bpf_link *l)
{
	struct bpf_link **v = realloc(t->links, (t->nlinks + 1) * sizeof(*v));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	t->links = v;
	t->links[t->nlinks++] = l;
	return 0;
}

static int attach_prog(struct bt_trig_bpf *t, struct bpf_program *p, char *err, size_t errlen)
{
	struct bpf_link *l = bpf_program__attach(p);

	if (!l) {
		int e = errno;

		snprintf(err, errlen, "cannot attach the trigger program %s: %s", bpf_program__name(p), strerror(e));
		return -e;
	}
	return add_link(t, l);
}

/* func:PROBE: resolve like -u, attach entry and return with the slot as cookie. */
static int attach_func(struct bt_trig_bpf *t, const struct bt_trigger_spec *s, uint32_t slot, char *err,
		       size_t errlen)
{
	const char *specs[1] = { s->arg };
	int pid = (int)s->tgid;
	struct bt_uprobe_opts uo = { .specs = specs, .nspecs = 1, .pids = pid ? &pid : NULL, .npids = pid ? 1 : 0 };
	struct bt_probe_desc *tab = NULL;
	char *e = NULL; /* any length */
	size_t n = 0;
	int r = bt_uprobes_resolve(&uo, &tab, &n, &e);

	if (r) {
		snprintf(err, errlen, "--trigger '%s': %s", s->cond, e ? e : strerror(-r));
		free(e);
		free(tab);
		return r;
	}
	free(e);
	for (size_t i = 0; i < n && !r; i++) {
		for (int ret = 0; ret < 2 && !r; ret++) {
			LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = slot, .retprobe = ret);
			struct bpf_link *l = bpf_program__attach_uprobe_opts(
				ret ? t->skel->progs.trig_func_return : t->skel->progs.trig_func_entry,
				tab[i].pid > 0 ? tab[i].pid : -1, tab[i].binary, tab[i].offset, &po);

			if (!l) {
				r = -errno;
				snprintf(err, errlen, "--trigger '%s': cannot attach to %s at 0x%llx: %s", s->cond,
					 tab[i].binary, (unsigned long long)tab[i].offset, strerror(-r));
				break;
			}
			r = add_link(t, l);
		}
	}
	free(tab);
	return r;
}

static int on_ring(void *ctx, void *data, size_t len)
{
	struct bt_trig_bpf *t = ctx;

	if (len >= sizeof(struct bt_trig_hit))
		t->fn(t->ctx, data);
	return 0;
}

/* The kernel's slot of spec s (an empty slot for kinds user space evaluates). */
static struct bt_trig_conf conf_of(const struct bt_trigger_spec *s)
{
	struct bt_trig_conf c = { .nr = -1 };

	if (s->kind > BT_TRIG_NONE && s->kind < BT_TRIG_KERNEL_MAX) {
		c.kind = s->kind;
		c.tgid = s->tgid;
		c.threshold_ns = s->threshold_ns;
		/* The kernel sends one hit per limit; after= is the recorder's,
		 * hits during it only count. */
		c.holdoff_ns = s->limit_ns > s->after_ns ? s->limit_ns : s->after_ns;
		c.after_ns = s->after_ns;
		c.nr = s->nr;
		c.sigmask = s->sigmask;
		memcpy(c.comm, s->comm, sizeof(c.comm));
	}
	return c;
}

static int has_member(const struct btf *vm, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(vm, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(vm, id) : NULL;
	const struct btf_member *m;

	if (!t)
		return 0;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (strcmp(btf__name_by_offset(vm, m->name_off), member) == 0)
			return 1;
	return 0;
}

/* Whether record.bpf.c can read a task's run-queue wait here: the time it
 * was queued (task_struct.sched_info, CONFIG_SCHED_INFO) and the run
 * queue's clock (reached through cfs_rq.rq, CONFIG_FAIR_GROUP_SCHED). */
static int have_sched_info(const struct btf *vm)
{
	return has_member(vm, "task_struct", "sched_info") && has_member(vm, "cfs_rq", "rq");
}

int bt_trig_bpf_record_conf(const struct bt_trigger_spec *v, size_t n, struct bt_trig_conf *out, char *err,
			    size_t errlen)
{
	struct btf *vm;
	int armed = 0;

	memset(out, 0, BT_TRIG_MAX * sizeof(*out));
	for (size_t i = 0; i < n && i < BT_TRIG_MAX; i++) {
		out[i].nr = -1;
		if (v[i].kind == BT_TRIG_SCHED_LATENCY) {
			out[i] = conf_of(&v[i]);
			armed = 1;
		}
	}
	if (!armed)
		return 0;
	vm = btf__load_vmlinux_btf();
	if (!vm) {
		snprintf(err, errlen, "--trigger: cannot read the kernel's BTF: %s", strerror(errno));
		return -ENOENT;
	}
	armed = have_sched_info(vm);
	btf__free(vm);
	if (!armed) {
		snprintf(err, errlen,
			 "--trigger sched-latency cannot be armed on this kernel: it needs the scheduler's "
			 "own wait accounting (CONFIG_SCHED_INFO: task_struct.sched_info) and "
			 "CONFIG_FAIR_GROUP_SCHED (cfs_rq.rq) in the kernel's BTF");
		return -EOPNOTSUPP;
	}
	return 1;
}

struct bt_trig_bpf *bt_trig_bpf_open(const struct bt_trigger_spec *v, size_t n, int ring_fd, int counts_fd, char *err,
				     size_t errlen)
{
	struct bt_trig_bpf *t;
	struct btf *vm = NULL;
	uint32_t kinds = 0;
	int r = 0, victim_args = -1;

	for (size_t i = 0; i < n && i < BT_TRIG_MAX; i++)
		if (v[i].kind > BT_TRIG_NONE && v[i].kind < BT_TRIG_KERNEL_MAX)
			kinds |= 1u << v[i].kind;
	if (!kinds) {
		errno = 0;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	vm = btf__load_vmlinux_btf();
	if (!vm) {
		r = -errno;
		snprintf(err, errlen, "--trigger: cannot read the kernel's BTF: %s", strerror(errno));
		goto fail;
	}
	/* Every tracepoint a configured kind needs, checked before loading so
	 * the error names the condition, not a BPF program. */
	static const struct {
		uint32_t kind;
		const char *tp;
	} need[] = {
		{ BT_TRIG_SCHED_LATENCY, "sched_switch" },
		{ BT_TRIG_OFFCPU, "sched_switch" },         { BT_TRIG_SYSCALL, "sys_enter" },
		{ BT_TRIG_SYSCALL, "sys_exit" },            { BT_TRIG_CRASH, "signal_deliver" },
		{ BT_TRIG_OOM, "mark_victim" },
	};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if ((kinds & (1u << need[i].kind)) && !tp_exists(vm, need[i].tp)) {
			r = -EOPNOTSUPP;
			snprintf(err, errlen, "--trigger %s cannot be armed: this kernel has no %s tracepoint",
				 bt_trigger_kind_name(need[i].kind), need[i].tp);
			goto fail;
		}
	if (kinds & (1u << BT_TRIG_OOM)) {
		victim_args = tp_nargs(vm, "mark_victim");
		for (size_t i = 0; i < n; i++)
			if (v[i].kind == BT_TRIG_OOM && victim_args < 2 && (v[i].comm[0] || v[i].tgid)) {
				r = -EOPNOTSUPP;
				snprintf(err, errlen,
					 "--trigger '%s': comm= and pid= need a kernel whose mark_victim tracepoint "
					 "passes the task (6.8 or later); drop them to watch every OOM kill",
					 v[i].cond);
				goto fail;
			}
	}

	t->skel = trigger_bpf__open();
	if (!t->skel) {
		r = -errno;
		snprintf(err, errlen, "--trigger: cannot open the trigger BPF object: %s", strerror(errno));
		goto fail;
	}
	for (size_t i = 0; i < n && i < BT_TRIG_MAX; i++) {
		struct bt_trig_conf c = conf_of(&v[i]);

		memcpy((void *)&t->skel->rodata->trig_conf[i], &c, sizeof(c));
	}
	t->skel->rodata->self_tgid = (uint32_t)getpid();
	/* One ring and one set of counters for the hits of both objects:
	 * record.bpf.c's (sched-latency is evaluated there). */
	if (bpf_map__reuse_fd(t->skel->maps.trig_ring, ring_fd) ||
	    bpf_map__reuse_fd(t->skel->maps.trig_counts, counts_fd)) {
		r = -errno;
		snprintf(err, errlen, "--trigger: cannot share the recorder's trigger ring: %s", strerror(errno));
		goto fail;
	}

	struct {
		struct bpf_program *p;
		uint32_t kinds;
	} progs[] = {
		{ t->skel->progs.trig_sched_switch, 1u << BT_TRIG_OFFCPU },
		{ t->skel->progs.trig_sys_enter, 1u << BT_TRIG_SYSCALL },
		{ t->skel->progs.trig_sys_exit, 1u << BT_TRIG_SYSCALL },
		{ t->skel->progs.trig_func_entry, 1u << BT_TRIG_FUNC },
		{ t->skel->progs.trig_func_return, 1u << BT_TRIG_FUNC },
		{ t->skel->progs.trig_signal_deliver, 1u << BT_TRIG_CRASH },
		{ t->skel->progs.trig_mark_victim, victim_args >= 2 ? 1u << BT_TRIG_OOM : 0 },
		{ t->skel->progs.trig_mark_victim_pid, victim_args == 1 ? 1u << BT_TRIG_OOM : 0 },
	};
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_autoload(progs[i].p, (kinds & progs[i].kinds) != 0);
	r = trigger_bpf__load(t->skel);
	if (r) {
		char what[160] = "";
		size_t o = 0;

		for (uint32_t k = 1; k < BT_TRIG_KERNEL_MAX; k++)
			if (kinds & (1u << k))
				o += (size_t)snprintf(what + o, o < sizeof(what) ? sizeof(what) - o : 0, "%s%s",
						      o ? ", " : "", bt_trigger_kind_name(k));
		snprintf(err, errlen,
			 "--trigger %s cannot be armed on this kernel: loading the trigger programs failed (%s); "
			 "run with -v for the verifier's log", what, strerror(-r));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && !r; i++)
		if (bpf_program__autoload(progs[i].p) && progs[i].p != t->skel->progs.trig_func_entry &&
		    progs[i].p != t->skel->progs.trig_func_return)
			r = attach_prog(t, progs[i].p, err, errlen);
	for (size_t i = 0; i < n && !r; i++)
		if (v[i].kind == BT_TRIG_FUNC)
			r = attach_func(t, &v[i], (uint32_t)i, err, errlen);
	if (r)
		goto fail;
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.trig_ring), on_ring, t, NULL);
	if (!t->rb) {
		r = -errno;
		snprintf(err, errlen, "--trigger: cannot map the trigger ring: %s", strerror(errno));
		goto fail;
	}
	btf__free(vm);
	return t;
fail:
	btf__free(vm);
	bt_trig_bpf_destroy(t);
	errno = r ? -r : EINVAL;
	return NULL;
}

int bt_trig_bpf_fd(const struct bt_trig_bpf *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

int bt_trig_bpf_consume(struct bt_trig_bpf *t, bt_trig_hit_fn fn, void *ctx)
{
	t->fn = fn;
	t->ctx = ctx;
	return ring_buffer__consume(t->rb);
}

int bt_trig_bpf_count(const struct bt_trig_bpf *t, uint32_t i, struct bt_trig_count *out)
{
	if (i >= BT_TRIG_MAX)
		return -EINVAL;
	return bpf_map__lookup_elem(t->skel->maps.trig_counts, &i, sizeof(i), out, sizeof(*out), 0) ? -errno : 0;
}

void bt_trig_bpf_detach(struct bt_trig_bpf *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	t->nlinks = 0;
}

void bt_trig_bpf_destroy(struct bt_trig_bpf *t)
{
	if (!t)
		return;
	bt_trig_bpf_detach(t);
	free(t->links);
	ring_buffer__free(t->rb);
	trigger_bpf__destroy(t->skel);
	free(t);
}
