// SPDX-License-Identifier: MIT
/*
 * report_list.c - `report`'s default output: the events of a dump in time
 * order, one line each in the trace-cmd report format, with LOST lines
 * where a CPU or an application thread missed events, and function
 * entries/exits indented by their call depth.
 *
 *   cpus=2
 *         pingpong-1234  [001]  1234.567890: sched_switch: prev_comm=...
 *   CPU:1 [LOST 12 EVENTS]
 */
#include "report_list.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "report_stacks.h"
#include "util.h"

const char *bt_report_fmt_wall(const struct bt_dump_header *h, uint64_t ts, char *buf, size_t len)
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

const char *bt_report_fmt_secs(uint64_t ns, char *buf, size_t len)
{
	return bt_format_ts(ns, buf, len);
}

/* Per thread the functions entered and not yet left, for the indentation
 * of function entries/exits: paired as report --functions and convert pair
 * them (func_calls.c), so that after a longjmp or an exception the depth
 * is right again. */
struct fstack {
	uint64_t *fn;
	uint32_t n, cap;
	uint32_t last_seq, seen; /* the thread's application records' seq */
};
struct depths {
	uint32_t *tid; /* tid + 1, 0: free */
	struct fstack *st;
	size_t cap, n;
};

static struct fstack *stack_of(struct depths *m, uint32_t tid)
{
	if (2 * (m->n + 1) > m->cap) {
		struct depths g = { .cap = m->cap ? m->cap * 2 : 256 };
		g.tid = calloc(g.cap, sizeof(*g.tid));
		g.st = calloc(g.cap, sizeof(*g.st));
		if (!g.tid || !g.st) {
			free(g.tid);
			free(g.st);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->tid[i])
				*stack_of(&g, m->tid[i] - 1) = m->st[i];
		free(m->tid);
		free(m->st);
		*m = g;
	}
	size_t i = (tid * 2654435761u) & (m->cap - 1);
	while (m->tid[i] && m->tid[i] != tid + 1)
		i = (i + 1) & (m->cap - 1);
	if (!m->tid[i]) {
		m->tid[i] = tid + 1;
		m->n++;
	}
	return &m->st[i];
}

/* Records of this application thread missing before e (its seq gap). */
static uint32_t app_gap(struct depths *m, const struct bt_event_hdr *e)
{
	struct fstack *s = stack_of(m, e->tid);
	if (!s)
		return 0;
	uint32_t miss = s->seen && (int32_t)(e->seq - s->last_seq) > 1 ? e->seq - s->last_seq - 1 : 0;
	s->seen = 1;
	s->last_seq = e->seq;
	return miss;
}

static void depths_free(struct depths *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->st[i].fn);
	free(m->tid);
	free(m->st);
}

/* The depth to show a function entry/exit at: an entry one below its
 * caller; an exit at its entry's depth, leaving every call above it (left
 * by longjmp); an exit whose entry is not open (before the dump's window)
 * at the depth it comes at, leaving the stack as it is. */
static int func_depth(struct depths *m, const struct bt_event_hdr *e, uint32_t len)
{
	struct fstack *s = stack_of(m, e->tid);
	if (!s || len < sizeof(struct bt_ev_app) + 8)
		return 0;
	uint64_t fn = (uint64_t)((const struct bt_ev_app *)e)->args[0];
	if (e->type == BT_EV_APP_FUNC_ENTRY) {
		if (s->n == s->cap) {
			uint32_t nc = s->cap ? s->cap * 2 : 64;
			uint64_t *q = nc <= 1u << 20 ? realloc(s->fn, nc * sizeof(*q)) : NULL;
			if (!q)
				return (int)s->n; /* shown at the deepest depth kept */
			s->fn = q;
			s->cap = nc;
		}
		s->fn[s->n] = fn;
		return (int)s->n++;
	}
	uint32_t k = s->n;
	while (k > 0 && s->fn[k - 1] != fn)
		k--;
	if (!k)
		return (int)s->n;
	s->n = k - 1;
	return (int)s->n;
}

int bt_report_list(const struct bt_dump *d, const struct ropts *o, FILE *out)
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
		int depth = e->type == BT_EV_APP_FUNC_ENTRY || e->type == BT_EV_APP_FUNC_EXIT
				    ? func_depth(&dm, e, ev[i].len)
				    : -1;
		for (; gi < ngaps && gaps[gi].index == i; gi++)
			if (bt_filter_cpu_ok(f, gaps[gi].cpu) && bt_filter_time_ok(f, e->ts_ns))
				fprintf(out, "CPU:%u [LOST %" PRIu64 " EVENTS]\n", gaps[gi].cpu, gaps[gi].missing);
		/* an application thread's records missing: shown with the
		 * thread's other lines (-p), like a CPU's */
		uint32_t miss = ev[i].app >= 0 ? app_gap(&dm, e) : 0;
		if (miss && !o->no_lost && bt_filter_time_ok(f, e->ts_ns) &&
		    (bt_filter_pid_ok(f, e->tid) || bt_filter_pid_ok(f, e->tgid)))
			fprintf(out, "TID:%u [LOST %u EVENTS]\n", e->tid, miss);
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
				bt_report_fmt_wall(h, e->ts_ns, tb, sizeof(tb));
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
	depths_free(&dm);
	bt_namer_free(nm);
	return 0;
}

