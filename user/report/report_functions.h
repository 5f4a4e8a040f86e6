/* SPDX-License-Identifier: MIT */
/*
 * report_functions.h - `report --functions` (report_functions.c): per traced
 * function (-finstrument-functions) calls, total and self time, p50/p99; per
 * probed function and process, calls, returns and the latency distribution;
 * for the events report's filters select, with the window the counts cover and every
 * loss that makes them lower bounds.
 */
#ifndef BTRACE_REPORT_FUNCTIONS_H
#define BTRACE_REPORT_FUNCTIONS_H
#include <stdint.h>
#include <stdio.h>

struct bt_dump;
struct bt_event_hdr;
struct bt_calls;

/* What report's options select; all fields may be zero/NULL (everything). */
struct bt_func_filter {
	int (*keep)(const struct bt_event_hdr *h, void *ctx); /* event selected (time, cpu, pid, type) */
	int (*cpu_ok)(uint32_t cpu, void *ctx);               /* CPU selected (losses are per CPU) */
	void *ctx;
	int timed;          /* t0..t1 (inclusive) narrows the dump's window (--since/--until) */
	uint64_t t0, t1;
	const char *what;   /* the filters in words for the window line ("-p 1234"), NULL: none */
	int stream;         /* the dump keeps its function batches (BT_DUMP_OPEN_FUNC_BATCHES):
			     * traced functions folded per function (func_stream.h) */
};

/* One row per probed function and process (pid, comm) of the selected
 * events: calls, returns, latencies (count, min, p50, p99, max); a line with
 * the window the counts cover, and every loss that makes them lower bounds
 * (ring-buffer drops, seq gaps, overwritten history, dump losses); targets
 * that ended. f may be NULL. 0 or -errno. */
int bt_report_functions(const struct bt_dump *d, const struct bt_func_filter *f, FILE *out);
/* Traced functions (-finstrument-functions, func_calls.h) come first, one
 * row per function and application: calls, total, self, p50/p99/max; then
 * the calls these counts miss (before the window, running, cut by a loss)
 * and the application blocks refused or lost: */
void bt_report_call_losses(const struct bt_dump *d, const struct bt_calls *c, FILE *out);
#endif
