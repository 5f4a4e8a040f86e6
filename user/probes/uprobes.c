// SPDX-License-Identifier: MIT
/*
 * uprobes.c - `record -u/-U`: user-space probes (see uprobes.h for the spec
 * syntax and the API): resolution of every spec for every pid, then loading
 * and attaching. The steps live next door: probe_spec.c (parse),
 * proc_maps.c (binary lookup), elf_symbols.c (ELF symbols, USDT notes),
 * symbol_names.c (demangling, suggestions).
 *
 *   specs x pids --parse--> bt_uprobe_spec
 *                --resolve--> binary (maps of the pid / library dirs / PATH)
 *                             -> ELF (libelf: .symtab, .dynsym, PT_LOAD, stapsdt notes)
 *                             -> file offset, probe table row (struct bt_probe_desc)
 *                --attach--> bpf/uprobe.bpf.c (record's ring and cpu_state reused),
 *                            one BPF link per (place, pid, kind), cookie = ids + nargs
 *
 * Everything is resolved before anything is loaded or attached, so a bad
 * spec costs no BPF work; attaching is all or nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "uprobes.h"
#include "kernel_features.h"
#include "prog_misses.h"
#include "util.h"
#include "uprobe.skel.h"

/* Cookie layout, mirrored from bpf/uprobe.bpf.c (BT_UC_*): keep in step. */
#define BT_UC_NONE 0xffffffu
static uint64_t bt_cookie(uint32_t id, uint32_t stamp, uint32_t nargs)
{
	return (uint64_t)(id & BT_UC_NONE) | (uint64_t)(stamp & BT_UC_NONE) << 24 |
	       (uint64_t)(nargs & 0xff) << 48;
}

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* kernel-internal, what uprobe_register() returns */
#endif

/* ---- resolution of all specs ------------------------------------------------- */

enum { K_ENTRY, K_RETURN, K_USDT };

struct rprobe {
	struct bt_probe_desc d; /* the dump's row: names cut to its fields */
	const char *text;       /* the spec as given (the caller's, outlives us) */
	char path[PATH_MAX];    /* the binary, whole, for messages */
	char *func;             /* the function, whole (malloc'd) */
	char attach[PATH_MAX];
	dev_t dev;
	ino_t ino;
	char provider[128], name[128];
};

struct resolver {
	struct bt_elf_file *files;
	size_t nfiles;
};

static void resolver_free(struct resolver *rs)
{
	for (size_t i = 0; i < rs->nfiles; i++)
		bt_elf_free(&rs->files[i]);
	free(rs->files);
}

static int resolver_get(struct resolver *rs, const char *attach, const char *path, struct bt_elf_file **out,
			dev_t *dev, ino_t *ino, char **err)
{
	struct stat st;
	struct bt_elf_file *nf;

	if (stat(attach, &st))
		return bt_errs(err, errno, "cannot open %s: %s", path, strerror(errno));
	*dev = st.st_dev;
	*ino = st.st_ino;
	for (size_t i = 0; i < rs->nfiles; i++) {
		if (rs->files[i].dev == st.st_dev && rs->files[i].ino == st.st_ino) {
			if (rs->files[i].err) {
				bt_errs(err, 0, "%s", rs->files[i].msg);
				return rs->files[i].err;
			}
			*out = &rs->files[i];
			return 0;
		}
	}
	nf = realloc(rs->files, (rs->nfiles + 1) * sizeof(*nf));
	if (!nf)
		return bt_errs(err, ENOMEM, "out of memory");
	rs->files = nf;
	nf = &rs->files[rs->nfiles++];
	memset(nf, 0, sizeof(*nf));
	snprintf(nf->attach, sizeof(nf->attach), "%s", attach);
	nf->dev = st.st_dev;
	nf->ino = st.st_ino;
	nf->err = bt_elf_load(attach, path, nf, &nf->msg);
	if (nf->err) {
		bt_errs(err, 0, "%s", nf->msg);
		return nf->err;
	}
	*out = nf;
	return 0;
}

static int resolve_one(struct resolver *rs, const char *text, const struct bt_uprobe_spec *s, int pid,
		       unsigned nargs, struct rprobe *rp, char **err)
{
	const char *opt = s->usdt ? "-U" : "-u";
	char path[PATH_MAX], attach[PATH_MAX], *msg = NULL;
	struct bt_elf_file *ef = NULL;
	int r;

	memset(rp, 0, sizeof(*rp));
	r = bt_uprobe_find_binary(pid, s->binary, path, sizeof(path), attach, sizeof(attach), &msg);
	if (!r)
		r = resolver_get(rs, attach, path, &ef, &rp->dev, &rp->ino, &msg);
	if (r) {
		bt_errs(err, -r, "%s '%s': %s", opt, text, msg);
		free(msg);
		return r;
	}
	rp->d.pid = pid > 0 ? pid : -1;
	rp->text = text;
	snprintf(rp->path, sizeof(rp->path), "%s", path);
	snprintf(rp->d.spec, sizeof(rp->d.spec), "%s", text);
	snprintf(rp->d.binary, sizeof(rp->d.binary), "%.255s", path);
	snprintf(rp->attach, sizeof(rp->attach), "%s", attach);
	if (s->usdt) {
		size_t j;
		struct bt_suggest sg = { .n = 0 };
		char want[260], *list, nm[260];

		for (j = 0; j < ef->nnotes; j++)
			if (strcmp(ef->notes[j].provider, s->provider) == 0 && strcmp(ef->notes[j].name, s->name) == 0)
				break;
		if (j == ef->nnotes) {
			if (!ef->nnotes)
				return bt_errs(err, ENOENT, "-U '%s': %s has no USDT probes (no .note.stapsdt)", text,
					    path);
			snprintf(want, sizeof(want), "%s:%s", s->provider, s->name);
			for (j = 0; j < ef->nnotes; j++) {
				snprintf(nm, sizeof(nm), "%s:%s", ef->notes[j].provider, ef->notes[j].name);
				bt_suggest_add(&sg, want, nm);
			}
			if (!sg.n) /* nothing close: list a few */
				for (j = 0; j < ef->nnotes && sg.n < BT_NSUGGEST; j++)
					snprintf(sg.name[sg.n++], sizeof(sg.name[0]), "%.127s:%.127s", ef->notes[j].provider,
						 ef->notes[j].name);
			list = bt_suggest_format(&sg);
			r = bt_errs(err, ENOENT, "-U '%s': no USDT probe %s in %s (it has %zu; %s: %s)", text, want,
				    path, ef->nnotes, sg.n < ef->nnotes ? "closest" : "all", list ? list : "");
			free(list);
			return r;
		}
		rp->d.flags = BT_PROBE_USDT;
		rp->d.nargs = ef->notes[j].nargs < nargs ? ef->notes[j].nargs : nargs;
		snprintf(rp->d.func, sizeof(rp->d.func), "%.63s:%.63s", s->provider, s->name);
		if (bt_strcatf(&rp->func, "%s:%s", s->provider, s->name))
			return bt_errs(err, ENOMEM, "out of memory");
		snprintf(rp->provider, sizeof(rp->provider), "%s", s->provider);
		snprintf(rp->name, sizeof(rp->name), "%s", s->name);
		return 0;
	}
	struct bt_uprobe_sym sym;
	r = bt_elf_resolve_sym(ef, path, s, &sym, &msg);
	if (r) {
		bt_errs(err, -r, "%s '%s': %s", opt, text, msg);
		free(msg);
		free(sym.name);
		return r;
	}
	rp->func = sym.name; /* ours now */
	rp->d.flags = s->retprobe ? BT_PROBE_RETURN : 0;
	rp->d.nargs = s->retprobe ? 0 : nargs;
	rp->d.offset = sym.file_off;
	snprintf(rp->d.func, sizeof(rp->d.func), "%s", sym.name);
	return 0;
}

static void rprobes_free(struct rprobe *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].func);
	free(v);
}

static int resolve_all(const struct bt_uprobe_opts *o, struct rprobe **out, size_t *nout, char **err)
{
	struct resolver rs = { 0 };
	size_t ntext = o->nspecs + o->nusdts, npid = o->npids ? o->npids : 1, n = 0;
	unsigned nargs = o->nargs < 0 ? BT_UPROBE_DEFAULT_NARGS : (unsigned)o->nargs;
	struct rprobe *v;
	int r = 0;

	*out = NULL;
	*nout = 0;
	if (o->nargs > BT_MAX_UARGS)
		return bt_errs(err, EINVAL, "--uargs %d: at most %d arguments", o->nargs, BT_MAX_UARGS);
	if (!ntext)
		return bt_errs(err, EINVAL, "no probes given");
	if (ntext * npid >= BT_UC_NONE)
		return bt_errs(err, E2BIG, "too many probes (%zu)", ntext * npid);
	for (size_t i = 0; i < o->npids; i++)
		if (o->pids[i] <= 0)
			return bt_errs(err, EINVAL, "bad pid %d", o->pids[i]);
	v = calloc(ntext * npid, sizeof(*v));
	if (!v)
		return bt_errs(err, ENOMEM, "out of memory");
	for (size_t t = 0; t < ntext && !r; t++) {
		int usdt = t >= o->nspecs;
		const char *text = usdt ? o->usdts[t - o->nspecs] : o->specs[t];
		struct bt_uprobe_spec s;

		r = bt_uprobe_parse(text, usdt, &s, err);
		for (size_t p = 0; p < npid && !r; p++) {
			int dup = 0;
			for (size_t q = 0; q < p && !dup; q++)
				dup = o->pids[q] == o->pids[p];
			if (dup) /* -p 12 -p 12: once */
				continue;
			r = resolve_one(&rs, text, &s, o->npids ? o->pids[p] : -1, nargs, &v[n], err);
			if (!r) {
				v[n].d.id = (uint32_t)n;
				n++;
			}
		}
	}
	resolver_free(&rs);
	if (r) {
		rprobes_free(v, ntext * npid); /* calloc'd: rows not reached hold nothing */
		return r;
	}
	*out = v;
	*nout = n;
	return 0;
}

/*
 * o with every pid made a process id: a thread id given for its process
 * (a uprobe bound to a thread fires for that thread only and ends with it).
 * *pids is the new array (free it). Ids that name nothing stay as they are,
 * for resolution to explain.
 */
static int by_process(const struct bt_uprobe_opts *o, struct bt_uprobe_opts *c, int **pids, char **err)
{
	*c = *o;
	*pids = NULL;
	if (!o->npids)
		return 0;
	*pids = calloc(o->npids, sizeof(**pids));
	if (!*pids)
		return bt_errs(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < o->npids; i++) {
		int tgid;

		(*pids)[i] = o->pids[i];
		if (o->pids[i] > 0 && bt_proc_tgid(o->pids[i], &tgid, NULL, 0, NULL, 0, NULL) == 0)
			(*pids)[i] = tgid;
	}
	c->pids = *pids;
	return 0;
}

int bt_uprobes_resolve(const struct bt_uprobe_opts *opts, struct bt_probe_desc **table, size_t *n, char **err)
{
	struct bt_uprobe_opts ob, *o = &ob;
	struct rprobe *v;
	size_t nv;
	int *pids, r = by_process(opts, &ob, &pids, err);

	if (r)
		return r;
	r = resolve_all(o, &v, &nv, err);
	free(pids);
	if (r)
		return r;
	*table = calloc(nv ? nv : 1, sizeof(**table));
	if (!*table) {
		rprobes_free(v, nv);
		return bt_errs(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nv; i++)
		(*table)[i] = v[i].d;
	*n = nv;
	rprobes_free(v, nv);
	return 0;
}

/* ---- load and attach -------------------------------------------------------------- */

struct uatt {
	int kind, pid;
	uint32_t id, stamp, nargs;
	size_t probe; /* the rprobe it serves (attach path, names) */
	struct bpf_link *link;
};

struct target {
	int pid, pidfd, ended, reported;
};

struct bt_uprobes {
	struct uprobe_bpf *skel;
	struct rprobe *rp;
	struct bt_probe_desc *table;
	size_t n;
	struct uatt *att;
	size_t natt;
	struct target *tg; /* under lock: the dump thread and the main loop both look */
	size_t ntg;
	pthread_mutex_t lock;
	int *pids;    /* the -p ids as processes (by_process) */
	int ring_fd;  /* the one ring every CPU writes into, -1: the caller's per-CPU rings */
	int own_ring; /* ring_fd when made here (closed by destroy), else -1 */
};

static int same_place(const struct rprobe *a, const struct rprobe *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->d.offset == b->d.offset && a->d.pid == b->d.pid;
}

/* Entry attachments (emitting, stamping or both), return and USDT ones. */
static int plan(struct bt_uprobes *u, char **err)
{
	u->att = calloc(u->n * 2 + 1, sizeof(*u->att));
	if (!u->att)
		return bt_errs(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		if (d->flags & (BT_PROBE_USDT | BT_PROBE_RETURN))
			continue;
		u->att[u->natt++] = (struct uatt){ K_ENTRY, d->pid, d->id, BT_UC_NONE, d->nargs, i, NULL };
	}
	/* Every return probe needs an entry stamp: share an entry probe at the
	 * same place (for the same pid) if there is one without a stamp yet. */
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		size_t j;
		if (!(d->flags & BT_PROBE_RETURN))
			continue;
		for (j = 0; j < u->natt; j++)
			if (u->att[j].kind == K_ENTRY && u->att[j].stamp == BT_UC_NONE &&
			    same_place(&u->rp[u->att[j].probe], &u->rp[i]))
				break;
		if (j < u->natt)
			u->att[j].stamp = d->id;
		else
			u->att[u->natt++] = (struct uatt){ K_ENTRY, d->pid, BT_UC_NONE, d->id, 0, i, NULL };
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		if (d->flags & BT_PROBE_RETURN)
			u->att[u->natt++] = (struct uatt){ K_RETURN, d->pid, d->id, d->id, 0, i, NULL };
		else if (d->flags & BT_PROBE_USDT)
			u->att[u->natt++] = (struct uatt){ K_USDT, d->pid, d->id, BT_UC_NONE, d->nargs, i, NULL };
	}
	return 0;
}

static int attach_one(struct bt_uprobes *u, struct uatt *a, char **err)
{
	const struct rprobe *rp = &u->rp[a->probe];
	const char *what = rp->func;
	int e;

	if (a->kind == K_USDT) {
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = bt_cookie(a->id, a->stamp, a->nargs));
		a->link = bpf_program__attach_usdt(u->skel->progs.bt_usdt, a->pid, rp->attach, rp->provider, rp->name,
						   &uo);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = bt_cookie(a->id, a->stamp, a->nargs),
			    .retprobe = a->kind == K_RETURN);
		a->link = bpf_program__attach_uprobe_opts(
			a->kind == K_RETURN ? u->skel->progs.bt_uprobe_return : u->skel->progs.bt_uprobe_entry,
			a->pid, rp->attach, rp->d.offset, &po);
	}
	if (a->link)
		return 0;
	e = errno ? errno : EINVAL;
	a->link = NULL;
	const char *opt = rp->d.flags & BT_PROBE_USDT ? "-U" : "-u";
	if (a->pid > 0 && (e == ESRCH || kill(a->pid, 0) != 0))
		return bt_errs(err, ESRCH, "%s '%s': process %d exited before the probe was attached", opt,
			    rp->text, a->pid);
	if (e == EPERM || e == EACCES)
		return bt_errs(err, e,
			    "%s '%s': permission denied attaching to %s: run as root (or with CAP_BPF, CAP_PERFMON and "
			    "ptrace access to the process)",
			    opt, rp->text, rp->path);
	if (e == ENOTSUPP || e == EINVAL || e == EOPNOTSUPP)
		return bt_errs(err, e,
			    "%s '%s': the kernel cannot probe %s at %s+0x%" PRIx64 ": uprobes cannot step over the "
			    "instruction there (a trap, for one); try the function entry or another offset",
			    opt, rp->text, what, rp->path, (uint64_t)rp->d.offset);
	if (e == E2BIG && a->kind == K_USDT)
		return bt_errs(err, e, "-U '%s': too many USDT probe sites", rp->text);
	return bt_errs(err, e, "%s '%s': cannot attach to %s in %s: %s", opt, rp->text, what, rp->path,
		    strerror(e));
}

static int open_targets(struct bt_uprobes *u, const struct bt_uprobe_opts *o)
{
	u->tg = calloc(o->npids ? o->npids : 1, sizeof(*u->tg));
	if (!u->tg)
		return -ENOMEM;
	for (size_t i = 0; i < o->npids; i++) {
		size_t j;
		for (j = 0; j < u->ntg; j++)
			if (u->tg[j].pid == o->pids[i])
				break;
		if (j < u->ntg)
			continue;
		struct target *t = &u->tg[u->ntg++];
		t->pid = o->pids[i];
#ifdef SYS_pidfd_open
		t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
#else
		t->pidfd = -1;
#endif
	}
	return 0;
}

/* Called with u->lock held. */
static void check_targets(struct bt_uprobes *u)
{
	for (size_t i = 0; i < u->ntg; i++) {
		struct target *t = &u->tg[i];

		if (t->ended)
			continue;
		if (t->pidfd >= 0) {
			struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
			t->ended = poll(&p, 1, 0) == 1;
		} else {
			t->ended = kill(t->pid, 0) != 0 && errno == ESRCH;
		}
	}
}

/*
 * Before load: what `rings` becomes. rings_fd is record's array of per-CPU
 * rings (reused as it is), or one ring buffer (given, or made here when
 * rings_fd < 0) that every CPU's slot will point to (fill_rings, after load).
 */
static int setup_rings(struct bt_uprobes *u, int rings_fd, char **err)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int r, ncpus;

	if (rings_fd >= 0) {
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(rings_fd, &info, &len))
			return bt_errs(err, errno, "cannot inspect the ring buffer map: %s", strerror(errno));
		if (info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS) {
			r = bpf_map__reuse_fd(u->skel->maps.rings, rings_fd);
			if (r)
				return bt_errs(err, -r, "cannot share the ring buffers with the uprobe programs: %s",
					    strerror(-r));
			return 0;
		}
		if (info.type != BPF_MAP_TYPE_RINGBUF)
			return bt_errs(err, EINVAL, "map %d is neither a ring buffer nor an array of them",
				    rings_fd);
		u->ring_fd = rings_fd;
	} else {
		u->own_ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bt_uprobe_ring", 0, 0,
					     BT_UPROBE_RING_SIZE, NULL);
		if (u->own_ring < 0)
			return bt_errs(err, errno, "cannot create the ring buffer: %s", strerror(errno));
		u->ring_fd = u->own_ring;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return bt_errs(err, ncpus ? -ncpus : EINVAL, "cannot count the possible CPUs: %s",
			    strerror(ncpus ? -ncpus : EINVAL));
	r = bpf_map__set_max_entries(u->skel->maps.rings, (uint32_t)ncpus);
	if (r)
		return bt_errs(err, -r, "cannot size the array of ring buffers: %s", strerror(-r));
	return 0;
}

/* After load: with one ring, every CPU writes into it. */
static int fill_rings(struct bt_uprobes *u, char **err)
{
	const struct bpf_map *m = u->skel->maps.rings;

	if (u->ring_fd < 0)
		return 0;
	for (__u32 c = 0; c < bpf_map__max_entries(m); c++)
		if (bpf_map_update_elem(bpf_map__fd(m), &c, &u->ring_fd, BPF_ANY))
			return bt_errs(err, errno, "cannot install the ring buffer: %s", strerror(errno));
	return 0;
}

struct bt_uprobes *bt_uprobes_open(const struct bt_uprobe_opts *opts, int rings_fd, int cpu_state_fd, char **err)
{
	struct bt_uprobes *u = calloc(1, sizeof(*u));
	struct bt_uprobe_opts ob, *o = &ob;
	int r, nret = 0, nusdt = 0, nentry = 0;

	if (!u) {
		bt_errs(err, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	u->ring_fd = u->own_ring = -1;
	pthread_mutex_init(&u->lock, NULL);
	r = by_process(opts, &ob, &u->pids, err);
	if (!r)
		r = resolve_all(o, &u->rp, &u->n, err);
	if (r)
		goto fail_out;
	u->table = calloc(u->n, sizeof(*u->table));
	if (!u->table || open_targets(u, o)) {
		r = bt_errs(err, ENOMEM, "out of memory");
		goto fail_out;
	}
	for (size_t i = 0; i < u->n; i++)
		u->table[i] = u->rp[i].d;
	r = plan(u, err);
	if (r)
		goto fail_out;
	for (size_t i = 0; i < u->natt; i++) {
		nret += u->att[i].kind == K_RETURN;
		nusdt += u->att[i].kind == K_USDT;
		nentry += u->att[i].kind == K_ENTRY;
	}

	{
		char kerr[512];

		r = bt_kernel_check_uprobes(kerr, sizeof(kerr));
		if (r) {
			r = bt_errs(err, -r, "%s", kerr);
			goto fail_out;
		}
	}
	u->skel = uprobe_bpf__open();
	if (!u->skel) {
		r = bt_errs(err, errno, "cannot open the uprobe BPF object: %s", strerror(errno));
		goto fail_out;
	}
	u->skel->rodata->wakeup_bytes = o->wakeup_bytes;
	u->skel->rodata->max_args = o->nargs < 0 ? BT_UPROBE_DEFAULT_NARGS : (uint32_t)o->nargs;
	u->skel->rodata->take_ustack = o->ustack ? 1 : 0;
	if (o->ustack) {
		/* record's stack maps: one table of stacks for every program */
		struct bpf_map *m[3] = { u->skel->maps.stack_scratch, u->skel->maps.stack_seen, u->skel->maps.stack_stats };
		for (int i = 0; i < 3; i++)
			if ((r = bpf_map__reuse_fd(m[i], o->stack_fds[i]))) {
				r = bt_errs(err, -r, "cannot share the stack maps with the uprobe programs: %s",
					    strerror(-r));
				goto fail_out;
			}
	}
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_empty, false);
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_entry, nentry > 0);
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_return, nret > 0);
	bpf_program__set_autoload(u->skel->progs.bt_usdt, nusdt > 0);
	bpf_map__set_max_entries(u->skel->maps.stamps, nret ? (o->max_threads ? o->max_threads : 8192) : 1);
	if (nusdt)
		bpf_map__set_max_entries(u->skel->maps.__bpf_usdt_specs, 256 + 64 * (uint32_t)nusdt);
	r = setup_rings(u, rings_fd, err);
	if (r)
		goto fail_out;
	if (cpu_state_fd >= 0 && (r = bpf_map__reuse_fd(u->skel->maps.cpu_state, cpu_state_fd))) {
		r = bt_errs(err, -r, "cannot share the cpu_state map with the uprobe programs: %s", strerror(-r));
		goto fail_out;
	}
	r = uprobe_bpf__load(u->skel);
	if (r) {
		int e = -r;
		if (e == EPERM || e == EACCES)
			r = bt_errs(err, e, "permission denied loading the uprobe programs: run as root (or with "
				 "CAP_BPF and CAP_PERFMON)");
		else
			r = bt_errs(err, e, "cannot load the uprobe programs: %s (rerun with -vv for libbpf's log)",
				 strerror(e));
		goto fail_out;
	}
	r = fill_rings(u, err);
	if (r)
		goto fail_out;
	for (size_t i = 0; i < u->natt; i++) {
		r = attach_one(u, &u->att[i], err);
		if (r)
			goto fail_out;
	}
	return u;

fail_out:
	bt_uprobes_destroy(u);
	errno = r < 0 ? -r : EINVAL;
	return NULL;
}

const struct bt_probe_desc *bt_uprobes_table(struct bt_uprobes *u, size_t *n)
{
	pthread_mutex_lock(&u->lock);
	check_targets(u);
	for (size_t i = 0; i < u->n; i++) {
		u->table[i].flags &= ~(uint32_t)BT_PROBE_ENDED;
		for (size_t j = 0; j < u->ntg; j++)
			if (u->tg[j].ended && u->tg[j].pid == u->table[i].pid)
				u->table[i].flags |= BT_PROBE_ENDED;
	}
	pthread_mutex_unlock(&u->lock);
	*n = u->n;
	return u->table;
}

void bt_uprobes_print(const struct bt_uprobes *u)
{
	for (size_t i = 0; i < u->n; i++) {
		const struct rprobe *rp = &u->rp[i];
		char real[PATH_MAX], pid[48];

		/* The file itself when a symlink or /proc path led to it. */
		if (!realpath(rp->attach, real) || strcmp(real, rp->path) == 0)
			real[0] = '\0';
		if (rp->d.pid > 0)
			snprintf(pid, sizeof(pid), "process %d", rp->d.pid);
		else
			snprintf(pid, sizeof(pid), "every process");
		if (rp->d.flags & BT_PROBE_USDT)
			bt_warn("-U '%s': USDT %s in %s%s%s%s, %s", rp->text, rp->func, rp->path,
				real[0] ? " (" : "", real, real[0] ? ")" : "", pid);
		else
			bt_warn("-u '%s': %s%s in %s%s%s%s at file offset 0x%" PRIx64 ", %s", rp->text, rp->func,
				rp->d.flags & BT_PROBE_RETURN ? " (return)" : "", rp->path, real[0] ? " (" : "",
				real, real[0] ? ")" : "", (uint64_t)rp->d.offset, pid);
	}
}

size_t bt_uprobes_nprobes(const struct bt_uprobes *u)
{
	return u->n;
}

size_t bt_uprobes_nattached(const struct bt_uprobes *u)
{
	size_t k = 0;

	for (size_t i = 0; i < u->natt; i++)
		k += u->att[i].link != NULL;
	return k;
}

int bt_uprobes_prog_stats(const struct bt_uprobes *u, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_program *p;

	*run_ns = *run_cnt = 0;
	bpf_object__for_each_program(p, u->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return -errno;
		*run_ns += info.run_time_ns;
		*run_cnt += info.run_cnt;
	}
	return 0;
}

size_t bt_uprobes_prog_misses(const struct bt_uprobes *u, struct bt_prog_miss *out, size_t max)
{
	return bt_obj_prog_misses(u->skel->obj, out, max);
}

struct bt_probe_desc *bt_uprobes_table_copy(struct bt_uprobes *u, size_t *n)
{
	pthread_mutex_lock(&u->lock);
	struct bt_probe_desc *t = malloc((u->n ? u->n : 1) * sizeof(*t));
	*n = 0;
	if (t) {
		for (size_t i = 0; i < u->n; i++) {
			t[i] = u->table[i];
			t[i].flags &= ~(uint32_t)BT_PROBE_ENDED;
			for (size_t j = 0; j < u->ntg; j++)
				if (u->tg[j].ended && u->tg[j].pid == t[i].pid)
					t[i].flags |= BT_PROBE_ENDED;
		}
		*n = u->n;
	}
	pthread_mutex_unlock(&u->lock);
	return t;
}

int bt_uprobes_ringbuf_fd(const struct bt_uprobes *u)
{
	return u->ring_fd;
}

size_t bt_uprobes_poll_exited(struct bt_uprobes *u, int *pids, size_t max)
{
	size_t k = 0;

	pthread_mutex_lock(&u->lock);
	check_targets(u);
	for (size_t i = 0; i < u->ntg; i++) {
		struct target *t = &u->tg[i];
		if (t->ended && !t->reported && k < max) {
			t->reported = 1;
			pids[k++] = t->pid;
		}
	}
	pthread_mutex_unlock(&u->lock);
	return k;
}

void bt_uprobes_detach(struct bt_uprobes *u)
{
	if (!u)
		return;
	/* Nothing more is emitted from here (bpf/uprobe.bpf.c: bt_stopped):
	 * detaching takes long, one probe after the other, and a function
	 * whose entry probe was gone while its return probe still fired gave
	 * returns without their entries and without a seq gap (tens of
	 * thousands of malloc returns in a final dump). Pairs with the plain
	 * load in the programs; the links' destruction orders it before any
	 * later hit. */
	if (u->skel && u->skel->bss)
		__atomic_store_n(&u->skel->bss->bt_stopped, 1, __ATOMIC_SEQ_CST);
	/* Last attached first: return probes before the entry probes. */
	for (size_t i = u->natt; i-- > 0;) {
		bpf_link__destroy(u->att[i].link);
		u->att[i].link = NULL;
	}
}

void bt_uprobes_destroy(struct bt_uprobes *u)
{
	if (!u)
		return;
	bt_uprobes_detach(u);
	uprobe_bpf__destroy(u->skel);
	if (u->own_ring >= 0)
		close(u->own_ring);
	for (size_t i = 0; i < u->ntg; i++)
		if (u->tg[i].pidfd >= 0)
			close(u->tg[i].pidfd);
	free(u->tg);
	free(u->pids);
	free(u->att);
	free(u->table);
	rprobes_free(u->rp, u->n);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
