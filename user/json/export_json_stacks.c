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
#include "u32map.h"
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

/* What a sample stands for, in ns: a CPU sample its period, an off-CPU
 * block the time blocked, a waker nothing (an instant). */
static uint64_t span_of(const struct bt_event_hdr *h, uint64_t period)
{
	if (h->type == BT_EV_CPU_SAMPLE)
		return period;
	return h->type == BT_EV_OFFCPU ? ((const struct bt_ev_offcpu *)h)->offcpu_ns : 0;
}

/* Per sample (in order), the time of its thread's next sample (UINT64_MAX:
 * its last); NULL out of memory. */
static uint64_t *next_of_thread(const struct bt_export_prep *p, const size_t *idx, size_t n)
{
	uint64_t *next = malloc((n ? n : 1) * sizeof(*next));
	struct bt_u32map last = { 0 };
	uint32_t k;

	if (!next)
		return NULL;
	for (size_t i = n; i-- > 0;) {
		const struct bt_event_hdr *h = p->ev[idx[i]].ev;
		next[i] = bt_u32map_get(&last, h->tid, &k) ? p->ev[idx[k]].ev->ts_ns : UINT64_MAX;
		if (bt_u32map_put(&last, h->tid, (uint32_t)i) < 0) {
			free(next);
			next = NULL;
			break;
		}
	}
	bt_u32map_free(&last);
	return next;
}

/* ",\"samples\":[...],\"stackFrames\":{...}" after traceEvents, nothing
 * without a sample: speedscope takes the sampling members over the slices
 * whenever they are there, and opened an empty list on a blank page.
 * speedscope weighs a sample by the time to its thread's next one: where
 * that is more than twice what the sample stands for (span_of) or there is
 * none, a "not_sampled" sample of weight 0 and no stack follows at its
 * end, so a thread's last sample and one before a pause count their own
 * time, not 0 or the pause. A thread's first CPU sample, where its frames
 * were open at the window's start (bt_export_stack_open_from), is led by
 * a "begun_before_window" of weight 0 with its stack there. 0 or -ENOMEM. */
int jx_put_stacks(struct jx *j)
{
	const struct bt_export_prep *p = j->p;
	struct trie t = { .s = bt_dump_stacks(p->d) };
	int first = 1;
	char ts[JX_US_LEN];
	size_t n = 0, *idx;
	uint64_t *next;
	struct bt_u32map seen = { 0 }; /* tids whose first sample is written */

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
	if (!(next = next_of_thread(p, idx, n))) {
		free(idx);
		return -ENOMEM;
	}
	uint64_t period = bt_export_sample_period(t.s);
	JW(j, ",\"samples\":[");
	for (size_t k = 0; k < n && !t.err; k++) {
		const struct bt_event_hdr *h = p->ev[idx[k]].ev;
		uint32_t type = h->type, pid = jx_pid_of(j, h->tid, h->tgid);
		const struct bt_ev_sample *e = (const void *)h;
		uint32_t sf = stack_node(&t, e->kstack, e->ustack);
		uint64_t w = type == BT_EV_OFFCPU ? (uint64_t)((const struct bt_ev_offcpu *)h)->offcpu_ns / 1000 : 1;
		uint64_t from = 0;
		if (!bt_u32map_get(&seen, h->tid, NULL)) {
			if (bt_u32map_put(&seen, h->tid, 1) < 0)
				t.err = -ENOMEM;
			if (type == BT_EV_CPU_SAMPLE)
				from = bt_export_stack_open_from(p, h->tid, h->ts_ns);
		}
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
		jx_us(ts, h->ts_ns);
		jx_size_mark(j, h->ts_ns);
		bt_sink_printf(j->out,
			       "%s\n{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"%s\",\"sf\":%u,\"weight\":%" PRIu64,
			       first ? "" : ",", h->cpu, pid, h->tid, ts,
			       type == BT_EV_CPU_SAMPLE ? "cpu_sample" : type == BT_EV_OFFCPU ? "offcpu" : "waker", sf, w);
		if (type == BT_EV_WAKER)
			bt_sink_printf(j->out, ",\"args\":{\"wakee\":%u}", ((const struct bt_ev_waker *)h)->wakee);
		JW(j, "}");
		first = 0;
		j->st->records++;
		uint64_t span = span_of(h, period);
		if (next[k] == UINT64_MAX || next[k] - h->ts_ns > 2 * span) {
			jx_us(ts, h->ts_ns + span);
			bt_sink_printf(j->out, ",\n{\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"ts\":%s,\"name\":\"not_sampled\",\"weight\":0}",
				       h->cpu, pid, h->tid, ts);
		}
	}
	free(idx);
	free(next);
	bt_u32map_free(&seen);
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
