/* SPDX-License-Identifier: MIT */
/*
 * export_prep_steps.h - the steps of the pre-pass (private to export_prep.c,
 * which runs them in order, and the files that do them): each fills its part
 * of p (the role bytes in arrays export_prep.c has allocated).
 */
#ifndef BTRACE_EXPORT_PREP_STEPS_H
#define BTRACE_EXPORT_PREP_STEPS_H
#include "export_prep.h"

/* p->threads, p->nthreads (export_threads.c): 0 or -ENOMEM */
int bt_export_collect_threads(struct bt_export_prep *p);
/* p->urole (p->nurole bytes): 0 or -ENOMEM */
int bt_export_pair_uprobes(struct bt_export_prep *p);
/* p->arole, abegin, aend, func_unwound, agaps, app_gaps, app_missing,
 * app_unmatched_ends, func_exits_dropped: 0 or -ENOMEM */
int bt_export_pair_apps(struct bt_export_prep *p);
/* p->encl seeded from the events before f's window (export_enclosing.c):
 * the calls and slices open at its start. 0 or -ENOMEM */
struct bt_event_filter;
int bt_export_seed_enclosing(struct bt_export_prep *p, const struct bt_event_filter *f);
/* One more enclosing entry (zeroed, tid set), NULL out of memory. */
struct bt_encl *bt_export_encl_add(struct bt_export_prep *p);
/* After pairing: end times, per thread outermost first. */
void bt_export_encl_finish(struct bt_export_prep *p);
#endif
