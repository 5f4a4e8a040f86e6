// SPDX-License-Identifier: MIT
/*
 * export_pprof_maps.c - which mappings a pprof profile writes, and which
 * one comes first. pprof readers take Mapping[0] as the profile's own binary
 * (go tool pprof prints it as "File:", and its build-id): it is the
 * executable of the one process the profile is about (convert -p, or a dump
 * of one process), the non-library file most of its samples pass through.
 * A profile of several processes has no such binary: its first mapping is
 * the anonymous one (anonymous code, labels), written without a file name,
 * which readers show as no file. A subject none of whose samples passes
 * through its executable (all in the kernel and libc) still has it first,
 * found from its other stacks in the dump. Mappings no sample uses are left
 * out (the main one excepted): a
 * -p profile of 34 samples carried the 196 mappings of the whole machine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_names.h"
#include "export_pprof_int.h"

uint32_t pp_slot(const struct bt_dump_stacks *s, uint32_t map)
{
	if (map == BT_DMAP_KERNEL)
		return PP_SLOT_KERNEL(s);
	if (map == BT_DMAP_NONE || map > s->nmaps)
		return PP_SLOT_ANON(s);
	return map - 1;
}

/* A shared library by pprof's own rule (".so" at the end, or ".so." or
 * ".so_" then a digit), or a pseudo-file such as "[vdso]": never a main binary. */
static int not_executable(const char *path)
{
	const char *b = bt_export_base_name(path), *p = b;
	if (b[0] == '[' || !b[0])
		return 1;
	while ((p = strstr(p, ".so"))) {
		if (!p[3] || ((p[3] == '.' || p[3] == '_') && p[4] >= '0' && p[4] <= '9'))
			return 1;
		p += 3;
	}
	return 0;
}

/* Whether a sample is drawn with a label in the anonymous mapping: a stack
 * lost, no frame, or a cut stack's "[truncated]" root. */
static int has_label(const struct bt_dump_stacks *s, const struct pp_agg *a)
{
	const struct bt_dump_stack *k = bt_export_stack(s, a->kstack), *u = bt_export_stack(s, a->ustack);
	return bt_export_pair_labelled(s, a->kstack, a->ustack) || (k && (k->flags & BT_STACK_F_TRUNCATED)) ||
	       (u && (u->flags & BT_STACK_F_TRUNCATED));
}

/* The subject's executable when none of its samples passes through it (a
 * process that spends its time in the kernel and libc): of the file that no
 * library, the one most of its user stacks in the whole dump pass through
 * (a complete stack ends in the executable's _start). weight and seen are
 * reused as scratch. PP_SLOT_ANON(s) if none. */
static uint32_t subject_exe(const struct bt_dump_stacks *s, uint32_t tgid, uint64_t *weight, size_t *seen)
{
	uint32_t main = PP_SLOT_ANON(s);
	memset(weight, 0, (s->nmaps + 2) * sizeof(*weight));
	memset(seen, 0, (s->nmaps + 2) * sizeof(*seen));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct bt_dump_stack *st = &s->stacks[i];
		if (st->kind != BT_STACK_USER || st->tgid != tgid)
			continue;
		for (uint32_t f = 0; f < st->nframes; f++) {
			uint32_t map = s->frames[st->first + f].map;
			if (map == BT_DMAP_KERNEL || map == BT_DMAP_NONE || map > s->nmaps || seen[map - 1] == i + 1u)
				continue;
			seen[map - 1] = i + 1u; /* a stack counts once per mapping */
			weight[map - 1]++;
		}
	}
	for (uint32_t sl = 0; sl < s->nmaps; sl++)
		if (weight[sl] && !not_executable(s->maps[sl].path) &&
		    (main == PP_SLOT_ANON(s) || weight[sl] > weight[main]))
			main = sl;
	return main;
}

int pp_maps_plan(const struct bt_dump_stacks *s, const struct pp_agg *agg, size_t nagg, int anon, struct pp_maps *m)
{
	uint32_t nslots = s->nmaps + 2;
	uint64_t *weight = calloc(nslots, sizeof(*weight));
	size_t *seen = calloc(nslots, sizeof(*seen)); /* 1 + the sample that last counted a slot */

	memset(m, 0, sizeof(*m));
	m->id = calloc(nslots, sizeof(*m->id));
	m->slot = calloc(nslots, sizeof(*m->slot));
	if (!weight || !seen || !m->id || !m->slot) {
		free(weight);
		free(seen);
		pp_maps_free(m);
		return -ENOMEM;
	}
	m->subject = nagg ? agg[0].tgid : 0;
	for (size_t i = 0; i < nagg; i++) {
		const struct pp_agg *a = &agg[i];
		const struct bt_dump_stack *st[2] = { bt_export_stack(s, a->kstack), bt_export_stack(s, a->ustack) };
		if (a->tgid != m->subject)
			m->subject = 0;
		if (anon || has_label(s, a))
			m->id[PP_SLOT_ANON(s)] = 1;
		for (int k = 0; k < 2; k++)
			for (uint32_t f = 0; st[k] && f < st[k]->nframes; f++) {
				uint32_t sl = pp_slot(s, s->frames[st[k]->first + f].map);
				m->id[sl] = 1;
				if (seen[sl] != i + 1) { /* a sample counts once per mapping */
					seen[sl] = i + 1;
					weight[sl] += a->n;
				}
			}
	}
	/* the main binary: of the subject's files that are no library, the one
	 * most samples pass through (the first of equals) */
	uint32_t main = PP_SLOT_ANON(s);
	for (uint32_t sl = 0; m->subject && sl < s->nmaps; sl++)
		if (weight[sl] && !not_executable(s->maps[sl].path) &&
		    (main == PP_SLOT_ANON(s) || weight[sl] > weight[main]))
			main = sl;
	if (m->subject && main == PP_SLOT_ANON(s))
		main = subject_exe(s, m->subject, weight, seen);
	m->main_is_file = main != PP_SLOT_ANON(s);
	m->id[main] = 1;
	m->slot[m->n++] = main;
	for (uint32_t sl = 0; sl < nslots; sl++)
		if (m->id[sl] && sl != main)
			m->slot[m->n++] = sl;
	for (uint32_t i = 0; i < m->n; i++)
		m->id[m->slot[i]] = i + 1;
	free(weight);
	free(seen);
	return 0;
}

void pp_maps_free(struct pp_maps *m)
{
	free(m->id);
	free(m->slot);
	m->id = m->slot = NULL;
}
