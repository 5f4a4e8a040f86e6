/* SPDX-License-Identifier: MIT */
/*
 * recorder.h - a running `btrace-bpf record`: recorder_run for the command
 * line (cmd_record.c), and what the recorder's files call of each other
 * (recorder.c, recorder_dumps.c, record_ctl.c). Its state is
 * recorder_state.h.
 */
#ifndef BTRACE_RECORDER_H
#define BTRACE_RECORDER_H
#include <stddef.h>
#include <stdio.h>
#include "recorder_state.h"

/* Run the recorder with these options until it is stopped: checks, start,
 * drain, dumps, rotation, shutdown with the final dump. Frees o->uspecs and
 * o->usdts. Returns the exit status of `record`. */
int recorder_run(const struct record_opts *o);
/* The dump thread (recorder_dumps.c): writes the pending dump, with the
 * trigger hits merged into it, one at a time until r->quit. */
void *recorder_dump_thread(void *arg);
/* Write a dump now, serialized with the dump thread (recorder_dumps.c). path NULL: the output
 * directory with a generated name. The path written goes to out. 0 or -errno
 * with a reason in why. */
int recorder_write_dump(struct recorder *r, const char *reason, const char *path, char *out, size_t outlen,
			char *why, size_t whylen);
/* Runs the kernel skipped of every program of the recorder (tracepoints,
 * uprobes): a malloc'd array in *out, its length returned (recorder_dumps.c). */
struct bt_prog_miss;
size_t recorder_prog_misses(struct recorder *r, struct bt_prog_miss **out);
struct bt_stats;
struct bt_dump_prior;
/* The previous recorder's blocks a dump now joins (the window continued
 * across a restart: handover_prior.c), *p filled; NULL if none, or none
 * fits any more in what this recorder has not used of its buffer (bs):
 * then they are freed. Under dump_serial. */
struct bt_ho_prior *recorder_prior(struct recorder *r, const struct bt_stats *bs, struct bt_dump_prior *p);
/* Control-socket commands (record_ctl.c). */
int record_ctl_handler(void *ctx, int argc, char **argv, FILE *out, char *why, size_t whylen);
#endif
