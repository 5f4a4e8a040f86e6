/* SPDX-License-Identifier: MIT */
/*
 * export_pprof_int.h - what the pprof exporter's files share (private to
 * user/export/export_pprof*.c): the aggregated samples, and which mappings
 * the profile writes in which order (export_pprof_maps.c).
 */
#ifndef BTRACE_EXPORT_PPROF_INT_H
#define BTRACE_EXPORT_PPROF_INT_H
#include <stddef.h>
#include <stdint.h>
#include "dump_stacks.h"

/* One aggregated sample: a (kernel, user) stack pair on a thread. */
struct pp_agg {
	uint32_t kstack, ustack, tid, tgid;
	uint64_t n, w;
};

/* A mapping of the dump as the profile numbers it: slots 0..nmaps-1 the
 * files, nmaps the kernel, nmaps + 1 anonymous code and the labels. */
#define PP_SLOT_KERNEL(s) ((s)->nmaps)
#define PP_SLOT_ANON(s) ((s)->nmaps + 1)

/* The mappings written: only those a sample uses, the main one first (pprof
 * takes Mapping[0] as the profile's binary: go tool pprof prints its file as
 * "File:"). The main one is the executable of the one process every sample
 * is of, else the anonymous slot, written without a file name. */
struct pp_maps {
	uint32_t *id;      /* [nmaps + 2]: slot -> mapping id (1 = main), 0: not written */
	uint32_t *slot;    /* [n]: mapping id - 1 -> slot */
	uint32_t n;
	uint32_t subject;  /* the one process all samples are of; 0: several (or none) */
	int main_is_file;  /* mapping 1 is the subject's executable */
};

/* The slot of a frame's mapping (frame.map). */
uint32_t pp_slot(const struct bt_dump_stacks *s, uint32_t map);
/* Plan m for these samples; anon: whether the anonymous slot is needed
 * besides the frames (labels, process roots). 0 or -ENOMEM. */
int pp_maps_plan(const struct bt_dump_stacks *s, const struct pp_agg *agg, size_t nagg, int anon, struct pp_maps *m);
void pp_maps_free(struct pp_maps *m);
#endif
