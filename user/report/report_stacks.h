/* SPDX-License-Identifier: MIT */
/*
 * report_stacks.h - call stacks in `report`: the frames under an event
 * (--stacks), per-process top functions (--profile: self and total share of
 * the CPU samples; with --offcpu the time blocked), folded stacks
 * (--folded, the input of flamegraph.pl and speedscope), and the stack
 * table's counters (--stats).
 */
#ifndef BTRACE_REPORT_STACKS_H
#define BTRACE_REPORT_STACKS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bt_dump;
struct bt_dump_stacks;
struct bt_dump_frame;
struct bt_event_hdr;

/* What report's options select (may be NULL: everything). */
struct bt_stack_filter {
	int (*keep)(const struct bt_event_hdr *h, void *ctx);
	void *ctx;
	int offcpu; /* --offcpu: off-CPU events weighted by their time instead of CPU samples */
};

/* The frames of stack `id` (0: none, BT_STACK_LOST: say so), one a line,
 * innermost first, with indent, then "[truncated: why]" if it was cut.
 * verbose: symbols with their ELF version and each frame's file offset. */
void bt_print_stack(FILE *out, const struct bt_dump_stacks *s, uint32_t id, const char *indent, int verbose);
/* The kernel then user stack of a sample, off-CPU or waker event. */
void bt_print_event_stacks(FILE *out, const struct bt_dump *d, const struct bt_event_hdr *h, int verbose);

int bt_report_profile(const struct bt_dump *d, const struct bt_stack_filter *f, FILE *out);
int bt_report_folded(const struct bt_dump *d, const struct bt_stack_filter *f, FILE *out);
/* The stack lines of report --stats (nothing for a dump without stacks). */
void bt_report_stack_stats(const struct bt_dump *d, FILE *out);
#endif
