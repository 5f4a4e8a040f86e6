// SPDX-License-Identifier: MIT
/*
 * export_pair_uprobes.c - the pre-pass's uprobe pairing (export_prep.h):
 * each uprobe entry matched with its function's return on the same thread,
 * one role byte per uprobe event (enum bt_uprobe_role), so both exporters
 * draw the same slices and the same unmatched instants.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_prep_steps.h"
#include "event_names.h"

/* Probe equivalence class: an entry probe and the return probe of the same
 * function (same binary, offset and symbol) pair up; without a table entry
 * only the same probe id does. */
static uint32_t probe_class(const struct bt_export_prep *p, uint32_t id)
{
	const struct bt_probe_desc *d = bt_probe_find(p->probes, p->nprobes, id);
	if (!d)
		return 0x80000000u | id;
	for (size_t i = 0; i < p->nprobes; i++) {
		const struct bt_probe_desc *q = &p->probes[i];
		if (q == d || (q->offset == d->offset && !strcmp(q->binary, d->binary) && !strcmp(q->func, d->func)))
			return (uint32_t)i;
	}
	return (uint32_t)(d - p->probes);
}

#define USTACK_MAX 256

struct ustack {
	uint32_t n;
	struct { uint32_t cls; uint32_t slot; } e[USTACK_MAX];
};

int bt_export_pair_uprobes(struct bt_export_prep *p)
{
	struct bt_u32map map = { 0 };   /* tid -> index into stacks */
	struct ustack **stk = NULL;
	size_t nstk = 0, cap = 0;
	uint32_t *cls = NULL;
	uint8_t *kinds = NULL; /* per class: PK_ENTRY | PK_RETURN probes in the table */
	int r = 0;
	enum { PK_ENTRY = 1, PK_RETURN = 2 };

	/* class per probe id, computed once (probe tables are small) */
	if (p->nprobes) {
		cls = malloc(p->nprobes * sizeof(*cls));
		kinds = calloc(p->nprobes, 1);
		if (!cls || !kinds) {
			free(cls);
			free(kinds);
			return -ENOMEM;
		}
		for (size_t i = 0; i < p->nprobes; i++) {
			const struct bt_probe_desc *d = &p->probes[i];
			cls[i] = probe_class(p, d->id);
			if (!(d->flags & BT_PROBE_USDT))
				kinds[cls[i]] |= d->flags & BT_PROBE_RETURN ? PK_RETURN : PK_ENTRY;
		}
	}
	size_t k = 0;
	for (size_t i = 0; i < p->nev && r == 0; i++) {
		const struct bt_event_hdr *h = p->ev[i].ev;
		/* the exporters skip what this skips: roles stay aligned */
		if (!bt_event_is_uprobe(h->type) || h->cpu >= p->hdr->ncpus)
			continue;
		const struct bt_ev_uprobe *u = (const void *)h;
		size_t slot = k++;
		if (h->type == BT_EV_USDT) {
			p->urole[slot] = BT_UR_USDT;
			continue;
		}
		const struct bt_probe_desc *d = bt_probe_find(p->probes, p->nprobes, u->probe_id);
		uint32_t c = d ? cls[d - p->probes] : 0x80000000u | u->probe_id;
		uint32_t si;
		/* A function probed at one end only has no partner to miss: an
		 * entry is a call, a return carries its call's duration. */
		if (d && h->type == BT_EV_UPROBE_ENTRY && !(kinds[c] & PK_RETURN)) {
			p->urole[slot] = BT_UR_ENTRY_ONLY;
			continue;
		}
		if (d && h->type == BT_EV_UPROBE_RETURN && !(kinds[c] & PK_ENTRY)) {
			p->urole[slot] = u->duration_ns && u->duration_ns <= h->ts_ns ? BT_UR_RETURN_ONLY
										: BT_UR_RETURN_UNTIMED;
			continue;
		}
		if (!bt_u32map_get(&map, h->tid, &si)) {
			if (h->type == BT_EV_UPROBE_RETURN) {
				p->urole[slot] = BT_UR_RETURN_ALONE;
				continue;
			}
			if (nstk == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *q = realloc(stk, nc * sizeof(*stk));
				if (!q) {
					r = -ENOMEM;
					break;
				}
				stk = q;
				cap = nc;
			}
			stk[nstk] = calloc(1, sizeof(struct ustack));
			if (!stk[nstk] || bt_u32map_put(&map, h->tid, (uint32_t)nstk) < 0) {
				free(stk[nstk]);
				r = -ENOMEM;
				break;
			}
			si = (uint32_t)nstk++;
		}
		struct ustack *s = stk[si];
		if (h->type == BT_EV_UPROBE_ENTRY) {
			p->urole[slot] = BT_UR_ENTRY_ALONE; /* until its return shows up */
			if (s->n == USTACK_MAX) { /* the oldest stays unmatched */
				memmove(&s->e[0], &s->e[1], (USTACK_MAX - 1) * sizeof(s->e[0]));
				s->n--;
			}
			s->e[s->n].cls = c;
			s->e[s->n].slot = (uint32_t)slot;
			s->n++;
			continue;
		}
		/* a return: the innermost open entry of the same function */
		uint32_t j = s->n;
		while (j > 0 && s->e[j - 1].cls != c)
			j--;
		if (!j) {
			p->urole[slot] = BT_UR_RETURN_ALONE;
			continue;
		}
		/* entries above it never returned (in the dump): they stay alone */
		p->urole[s->e[j - 1].slot] = BT_UR_BEGIN;
		p->urole[slot] = BT_UR_END;
		s->n = j - 1;
	}
	for (size_t i = 0; i < nstk; i++)
		free(stk[i]);
	free(stk);
	free(cls);
	free(kinds);
	bt_u32map_free(&map);
	return r;
}
