/* SPDX-License-Identifier: MIT */
/* report_apps.h - `report --stats` section for in-process traced applications. */
#ifndef BTRACE_REPORT_APPS_H
#define BTRACE_REPORT_APPS_H
#include <stddef.h>
#include <stdio.h>
struct bt_dump;
struct bt_dump_event;
/* Per application and thread, the counts of its events, fed in time order
 * (bt_dump_each_event): memory per thread, not per event. */
struct bt_report_apps;
struct bt_report_apps *bt_report_apps_new(const struct bt_dump *d);
/* One application event (a function batch counts its records); 0 or -1 (out of memory). */
int bt_report_apps_event(struct bt_report_apps *ra, const struct bt_dump_event *e);
/* Print per-application statistics (nothing if the dump has none); a
 * window after a gap reads the events again. 0, or that read's -errno with
 * its message in err (for the caller to print). */
int bt_report_apps(struct bt_report_apps *ra, FILE *out, char *err, size_t errlen);
void bt_report_apps_free(struct bt_report_apps *ra);
#endif
