/* SPDX-License-Identifier: MIT */
/* report_triggers.h - `report --stats` lines for a dump's triggers (section TRIG). */
#ifndef BTRACE_REPORT_TRIGGERS_H
#define BTRACE_REPORT_TRIGGERS_H
#include <stdio.h>
struct bt_dump;
struct bt_seq_window;
/* "trigger:" line(s): what caused this dump (nothing for other reasons),
 * and whether w (the dump's window) holds each event. */
void bt_report_trigger_fired(const struct bt_dump *d, const struct bt_seq_window *w, FILE *out);
/* The recorder's triggers and their counts (nothing without). */
void bt_report_triggers(const struct bt_dump *d, FILE *out);
#endif
