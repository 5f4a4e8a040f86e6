/* SPDX-License-Identifier: MIT */
/*
 * report_hot.h - `report --hot` (report_hot.c): the traced functions with
 * the most self time, the deepest and the slowest call chains in a dump.
 */
#ifndef BTRACE_REPORT_HOT_H
#define BTRACE_REPORT_HOT_H
#include <stdio.h>

struct bt_dump;
struct bt_func_filter;

/* top rows of each summary, for the calls f selects (may be NULL). 0 or -errno. */
int bt_report_hot(const struct bt_dump *d, const struct bt_func_filter *f, unsigned top, FILE *out);
#endif
