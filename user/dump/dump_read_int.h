/* SPDX-License-Identifier: MIT */
/*
 * dump_read_int.h - what the dump reader's files share (private to
 * user/dump/dump_read.c, dump_open.c, dump_sections.c, dump_funcs_decode.c):
 * the reader's dump object and its error helper. dump_open.c reads and
 * checks the file (header, body, compression, CRCs); dump_sections.c parses
 * and checks the body's sections; dump_funcs_decode.c turns function batches
 * into entry/exit events; dump_read.c closes a dump and hands out its parts.
 */
#ifndef BTRACE_DUMP_READ_INT_H
#define BTRACE_DUMP_READ_INT_H
#include <stddef.h>
#include <stdint.h>
#include "dump.h"
#include "dump_format.h"
#include "dump_stacks.h"

struct bt_dump {
	struct bt_dump_header hdr;
	uint64_t body_max; /* what the reader takes into memory (dump_open.c): the body, and a packed stack table's decoded form */
	uint8_t *body; /* uncompressed body (owned) */
	uint64_t body_len;
	struct bt_task *tasks;
	size_t ntasks;
	struct bt_probe_desc *probes;
	size_t nprobes;
	uint64_t *rb_drops, *rb_emitted;
	struct bt_stats bst;
	struct bt_dump_cold cold; /* size 0: no cold tier */
	struct bt_read_stats rst;
	struct bt_dump_block *blocks;
	size_t nblocks, cap_blocks;
	struct bt_dump_event *events;
	size_t nevents, cap_events;
	uint64_t nentries; /* entries stored, unknown types included */
	uint64_t hdr_nsections;
	uint64_t unknown;
	struct bt_prog_miss *prog_misses; /* PMIS table */
	size_t nprog_misses;
	int seen_prog_misses;
	struct bt_dump_app *apps; /* APPS table; names point into app_names */
	size_t napps;
	char (*app_names)[BTD_APP_NAME_LEN];
	uint64_t app_blocks;
	int seen_app_blocks;
	struct bt_func_name *funcs;  /* AFUN sections, per app a sorted run */
	size_t nfuncs;
	uint8_t *func_events;        /* decoded function entries/exits (struct func_ev) */
	struct bt_dump_trigger *triggers; /* TRIG section, NULL if none */
	size_t ntriggers;
	struct bt_trigger_fired *fired;
	size_t nfired;
	struct bt_dump_stacks stacks; /* STKP section (STCK from earlier recorders) */
	int seen_stacks;
	int seen_srclocs; /* SLOC sections */
};

/* Puts the message in err, sets errno to e; NULL (for return). */
__attribute__((format(printf, 4, 5))) void *btd_rerr(char *err, size_t errlen, int e, const char *fmt, ...);

static inline void btd_nul_terminate(char *s, size_t len)
{
	s[len - 1] = '\0';
}

/* dump_sections.c: every section of d->body, checked, into d (events unsorted). */
int btd_parse_body(struct bt_dump *d, char *err, size_t errlen);
/* dump_funcs_decode.c: each function batch replaced by its entries and exits. */
int btd_decode_funcs(struct bt_dump *d, char *err, size_t errlen);
/* The applications' function name tables pointed at (btd_decode_funcs does it too). */
void btd_link_funcs(struct bt_dump *d);
#endif
