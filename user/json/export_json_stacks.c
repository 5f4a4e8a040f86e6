// SPDX-License-Identifier: MIT
/*
 * export_json_stacks.c - the call stacks of the JSON trace, in the Chrome
 * trace event format's sampling members (what catapult's viewer and
 * speedscope read): "samples", one per CPU sample ("cpu_sample", weight 1),
 * off-CPU block ("offcpu", weight: microseconds blocked) and waker
 * ("waker", on the waker's thread, args wakee), each naming its stack by
 * "sf"; and "stackFrames", a trie of frames ({"name", "category", "parent"}),
 * outermost first: user frames, each followed by the calls inlined at its
 * address, then kernel frames. A sample whose stack is lost keeps its place
 * under a "[stack lost]" root frame ("[no stack]" when it has no frame).
 * Names as report --profile's (symbol versions dropped); category: the
 * file's base name, "kernel", or "btrace-bpf" for the labels.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump_stacks.h"
#include "export_json_int.h"
#include "export_names.h"
#include "string_set.h"
#include "u64map.h"

struct node {
	uint32_t parent, name, cat; /* parent id (0: a root); offsets into the string set */
};

struct trie {
	const struct bt_dump_stacks *s;
	struct bt_strset str;
	struct bt_u64map ix; /* hash of (parent, name, cat) -> id, probed on */
	struct node *n;      /* id - 1 */
	uint32_t nn, cap;
	int err;
};

static uint32_t str_off(struct trie *t, const char *s, size_t len)
{
	char b[1024];
	snprintf(b, sizeof(b), "%.*s", (int)len, s);
	uint32_t off = bt_strset_add(&t->str, b);
	if (t->str.err)
		t->err = t->str.err;
	return off;
}

/* The id of the child (name, cat) of parent, added if new; 0 on error. */
static uint32_t child(struct trie *t, uint32_t parent, uint32_t name, uint32_t cat)
{
	uint64_t key = bt_u64_mix((uint64_t)parent << 32 | name) ^ cat;
	if (t->err)
		return 0;
	for (;; key = bt_u64_mix(key + 1)) {
		uint32_t *v = bt_u64map_slot(&t->ix, key | 1);
		if (!v) {
			t->err = -ENOMEM;
			return 0;
		}
		if (!*v) {
			if (t->nn == t->cap) {
				uint32_t cap = t->cap ? 2 * t->cap : 1024;
				void *p = realloc(t->n, cap * sizeof(*t->n));
				if (!p) {
					t->err = -ENOMEM;
					return 0;
				}
				t->n = p;
				t->cap = cap;
			}
			t->n[t->nn++] = (struct node){ parent, name, cat };
			*v = t->nn;
		}
		const struct node *n = &t->n[*v - 1];
		if (n->parent == parent && n->name == name && n->cat == cat)
			return *v;
	}
}

/* Frame i of st (and its inlined calls) under node at. */
static uint32_t add_frame(struct trie *t, uint32_t at, const struct bt_dump_stack *st, uint32_t i)
{
	const struct bt_dump_stacks *s = t->s;
	const struct bt_dump_frame *f = &s->frames[st->first + i];
	const struct bt_dump_srcloc *l = bt_dump_frame_srcloc(s, f, i);
	char buf[600];
	uint32_t name, cat;

	if (f->map == BT_DMAP_KERNEL)
		cat = str_off(t, "kernel", 6);
	else if (bt_frame_origin(s, f)) /* "jit" */
		cat = str_off(t, bt_frame_origin(s, f), strlen(bt_frame_origin(s, f)));
	else if (f->map == BT_DMAP_NONE || f->map > s->nmaps)
		cat = str_off(t, "anonymous", 9);
	else
		cat = str_off(t, bt_export_base_name(s->maps[f->map - 1].path), strlen(bt_export_base_name(s->maps[f->map - 1].path)));
	if (f->sym && f->sym <= s->nsyms) {
		name = str_off(t, s->syms[f->sym - 1].name, bt_export_sym_len(s->syms[f->sym - 1].name));
	} else {
		snprintf(buf, sizeof(buf), "[unknown] (%s)", t->str.err ? "?" : t->str.p + cat);
		name = str_off(t, buf, strlen(buf));
	}
	at = child(t, at, name, cat);
	for (uint32_t q = l ? l->nlines - 1 : 0; q-- > 0;) {
		const char *fn = s->lines[l->first + q].func ? s->lines[l->first + q].func : "?";
		at = child(t, at, str_off(t, fn, bt_export_sym_len(fn)), cat);
	}
	return at;
}

/* The trie node of a sample's stacks. */
static uint32_t stack_node(struct trie *t, uint32_t kstack, uint32_t ustack)
{
	const struct bt_dump_stacks *s = t->s;
	const struct bt_dump_stack *ids[2] = { bt_export_stack(s, ustack), bt_export_stack(s, kstack) };
	uint32_t at = 0, cat = str_off(t, "btrace-bpf", 10);

	if (bt_export_stack_lost(s, kstack) || bt_export_stack_lost(s, ustack))
		at = child(t, 0, str_off(t, "[stack lost]", 12), cat);
	for (int k = 0; k < 2; k++)
		for (uint32_t i = ids[k] ? ids[k]->nframes : 0; i-- > 0;)
			at = add_frame(t, at, ids[k], i);
	if (!at)
		at = child(t, 0, str_off(t, "[no stack]", 10), cat);
	return at;
}

static int is_sample(const struct bt_dump_event *e)
{
	uint32_t type = e->ev->type;
	return e->app < 0 && (type == BT_EV_CPU_SAMPLE || type == BT_EV_OFFCPU || type == BT_EV_WAKER);
}

/* Where speedscope is to draw a sample, and what it stands for: a CPU
 * sample (and a waker: the waker's running stack) from its time for a
 * period; an off-CPU block from where it began (its ts is the wakeup) to
 * its ts, not before its thread's sample before it. */
struct place {
	uint64_t at, end, next; /* next: the thread's next sample's at, UINT64_MAX none */
	int first;              /* the thread's first sample */
};

static uint64_t thread_key(struct jx *j, const struct bt_event_hdr *h)
{
	return ((uint64_t)jx_pid_of(j, h->tid, h->tgid) << 32 | h->tid) + 1; /* speedscope's pid:tid; never 0 */
}

/* Per sample (in order) its place; NULL out of memory. */
static struct place *places(struct jx *j, const size_t *idx, size_t n, uint64_t period)
{
	struct place *pl = malloc((n ? n : 1) * sizeof(*pl));
	struct bt_u64map last = { 0 };
	uint32_t *v;

	if (!pl)
		return NULL;
	for (size_t i = 0; i < n; i++) { /* at, end: after the thread's previous sample */
		const struct bt_event_hdr *h = j->p->ev[idx[i]].ev;
		if (!(v = bt_u64map_slot(&last, thread_key(j, h))))
			goto oom;
		uint64_t prev = *v ? pl[*v - 1].at : 0;
		pl[i].first = !*v;
		if (h->type == BT_EV_OFFCPU) {
			uint64_t off = ((const struct bt_ev_offcpu *)h)->offcpu_ns;
			uint64_t start = off < h->ts_ns ? h->ts_ns - off : 0;
			pl[i].at = start > prev ? start : prev; /* prev <= ts: events in time order */
			pl[i].end = h->ts_ns;
		} else {
			pl[i].at = h->ts_ns;
			pl[i].end = h->ts_ns + period;
		}
		*v = (uint32_t)i + 1;
	}
	bt_u64map_free(&last);
	last = (struct bt_u64map){ 0 };
	for (size_t i = n; i-- > 0;) { /* next: the thread's next sample */
		if (!(v = bt_u64map_slot(&last, thread_key(j, j->p->ev[idx[i]].ev))))
			goto oom;
		pl[i].next = *v ? pl[*v - 1].at : UINT64_MAX;
		*v = (uint32_t)i + 1;
	}
	bt_u64map_free(&last);
	return pl;
oom:
	bt_u64map_free(&last);
	free(pl);
	return NULL;
}

/* ",\"samples\":[...],\"stackFrames\":{...}" after traceEvents, nothing
 * without a sample: speedscope takes the sampling members over the slices
 * whenever they are there, and opened an empty list on a blank page.
 * speedscope weighs a sample by the time to its thread's next one, so each
 * is where it stands for time (struct place: an off-CPU block at its
 * start) and, where the thread's next sample is more than a period after
 * its end or there is none, a "not_sampled" sample of weight 0 and no stack
 * follows at its end: a thread's last sample and one before a pause count
 * their own time, not 0 or the pause. A thread's first CPU sample, where
 * its frames were open at the window's start (bt_export_stack_open_from),
 * is led by a "begun_before_window" of weight 0 with its stack there.
 * 0 or -ENOMEM. */
int jx_put_stacks(struct jx *j)
{
	const struct bt_export_prep *p = j->p;
	struct trie t = { .s = bt_dump_stacks(p->d) };
	int first = 1;
	char ts[JX_US_LEN];
	size_t n = 0, *idx;
	struct place *pl;

	if (!t.s)
		return 0;
	for (size_t i = 0; i < p->nev; i++)
		n += (size_t)is_sample(&p->ev[i]);
	if (!n)
		return 0;
	if (!(idx = malloc(n * sizeof(*idx))))
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < p->nev; i++)
		if (is_sample(&p->ev[i]))
			idx[n++] = i;
	uint64_t period = bt_export_sample_period(t.s);
	if (!(pl = places(j, idx, n, period))) {
		free(idx);
		return -ENOMEM;
	}
	JW(j, ",\"samples\":[");
	for (size_t k = 0; k < n && !t.err; k++) {
		const struct bt_event_hdr *h = p->ev[idx[k]].ev;
		uint32_t type = h->type, pid = jx_pid_of(j, h->tid, h->tgid);
		const struct bt_ev_sample *e = (const void *)h;
		uint32_t sf = stack_node(&t, e->kstack, e->ustack);
		uint64_t w = type == BT_EV_OFFCPU ? (uint64_t)((const struct bt_ev_offcpu *)h)->offcpu_ns / 1000 : 1;
		uint64_t from = pl[k].first && type == BT_EV_CPU_SAMPLE ? bt_export_stack_open_from(p, h->tid, h->ts_ns) : 0;
		jx_size_mark(j, h->ts_ns);
		if (from) {
			/* the thread's first sample: its frames were open at the
			 * window's start (speedscope draws them from there) */
			jx_us(ts, from);
			bt_sink_printf(j->out,
				       "%s\n{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"begun_before_window\",\"sf\":%u,\"weight\":0}",
				       first ? "" : ",", h->cpu, pid, h->tid, ts, sf);
			first = 0;
			for (uint32_t at = sf; at && at <= t.nn; at = t.n[at - 1].parent)
				j->st->encl_frames++;
		}
		jx_us(ts, pl[k].at);
		bt_sink_printf(j->out,
			       "%s\n{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"%s\",\"sf\":%u,\"weight\":%" PRIu64,
			       first ? "" : ",", h->cpu, pid, h->tid, ts,
			       type == BT_EV_CPU_SAMPLE ? "cpu_sample" : type == BT_EV_OFFCPU ? "offcpu" : "waker", sf, w);
		if (type == BT_EV_WAKER)
			bt_sink_printf(j->out, ",\"args\":{\"wakee\":%u}", ((const struct bt_ev_waker *)h)->wakee);
		JW(j, "}");
		first = 0;
		j->st->records++;
		if (pl[k].next == UINT64_MAX || pl[k].next > pl[k].end + period) {
			jx_us(ts, pl[k].end);
			bt_sink_printf(j->out, ",\n{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"not_sampled\",\"weight\":0}",
				       h->cpu, pid, h->tid, ts);
		}
	}
	free(idx);
	free(pl);
	jx_size_pause(j);
	JW(j, "\n],\"stackFrames\":{");
	for (uint32_t id = 1; id <= t.nn && !t.err; id++) {
		const struct node *nd = &t.n[id - 1];
		bt_sink_printf(j->out, "%s\n\"%u\":{\"name\":", id > 1 ? "," : "", id);
		jx_jstr(j, t.str.p + nd->name, 1024);
		JW(j, ",\"category\":");
		jx_jstr(j, t.str.p + nd->cat, 1024);
		if (nd->parent)
			bt_sink_printf(j->out, ",\"parent\":\"%u\"", nd->parent);
		JW(j, "}");
	}
	JW(j, "\n}");
	int r = t.err;
	bt_strset_release(&t.str, 0);
	bt_u64map_free(&t.ix);
	free(t.n);
	return r;
}
