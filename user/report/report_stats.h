/* SPDX-License-Identifier: MIT */
/*
 * report_stats.h - `report --stats` (report_stats.c): what a dump holds and
 * everything it lost.
 */
#ifndef BTRACE_REPORT_STATS_H
#define BTRACE_REPORT_STATS_H
#include <stdio.h>
#include "report_opts.h"

struct bt_dump;

/* path may be NULL (not printed). 0 or -ENOMEM. */
int bt_report_stats(const struct bt_dump *d, const char *path, const struct ropts *o, FILE *out);
#endif
