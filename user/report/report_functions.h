/* SPDX-License-Identifier: MIT */
/* report_functions.h - `report --functions` (report_functions.c). */
#ifndef BTRACE_REPORT_FUNCTIONS_H
#define BTRACE_REPORT_FUNCTIONS_H
#include <stdio.h>

struct bt_dump;
/* Per probed function: calls, and for return probes the latency
 * distribution (count, min, p50, p99, max); which targets ended. 0 or -errno. */
int bt_report_functions(const struct bt_dump *d, FILE *out);
#endif
