/* SPDX-License-Identifier: MIT */
/* live_window.h - loss analysis of a live buffer (for `ctl status`), with the
 * same definition of the latest continuous window as a dump's report. */
#ifndef BTRACE_LIVE_WINDOW_H
#define BTRACE_LIVE_WINDOW_H
#include <stdint.h>
#include "btrace_buffer.h"
#include "dump.h"

/* Read the buffer (never blocking writers) and analyze per-CPU sequences.
 * Returns 0 or -errno. */
int bt_live_window(struct bt_buffer *b, uint32_t ncpus, struct bt_seq_window *w, struct bt_read_stats *rst);
#endif
