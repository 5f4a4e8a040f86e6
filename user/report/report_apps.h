/* SPDX-License-Identifier: MIT */
/* report_apps.h - `report --stats` section for in-process traced applications. */
#ifndef BTRACE_REPORT_APPS_H
#define BTRACE_REPORT_APPS_H
#include <stdio.h>
struct bt_dump;
/* Print per-application statistics (nothing if the dump has none). 0 or -1 (out of memory). */
int bt_report_apps(const struct bt_dump *d, FILE *out);
#endif
