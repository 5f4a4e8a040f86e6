/* SPDX-License-Identifier: MIT */
/*
 * report_list.h - `report`'s event listing (report_list.c) and the time
 * formats report's outputs share.
 */
#ifndef BTRACE_REPORT_LIST_H
#define BTRACE_REPORT_LIST_H
#include <stdint.h>
#include <stdio.h>
#include "report_opts.h"

struct bt_dump;
struct bt_dump_header;

/* The events the options select, one line each, LOST lines where events
 * are missing. 0 or -ENOMEM. */
int bt_report_list(const struct bt_dump *d, const struct ropts *o, FILE *out);
/* ts (boot time) as local wall-clock time with microseconds. */
const char *bt_report_fmt_wall(const struct bt_dump_header *h, uint64_t ts, char *buf, size_t len);
/* ts as seconds since boot with microseconds. */
const char *bt_report_fmt_secs(uint64_t ns, char *buf, size_t len);
#endif
