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
#include "func_calls.h" /* struct bt_func_filter, struct bt_calls */

struct bt_dump;

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
