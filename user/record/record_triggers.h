/* SPDX-License-Identifier: MIT */
/*
 * record_triggers.h - the recorder's side of `record --trigger`
 * (record_triggers.c); the triggers themselves are triggers.h.
 */
#ifndef BTRACE_RECORD_TRIGGERS_H
#define BTRACE_RECORD_TRIGGERS_H
#include <stdint.h>
#include <stdio.h>

struct recorder;
struct bt_dump_info;
struct bt_dump_trigger;
struct bt_trigger_fired;

/* Arm o->triggers (nothing without); 0, or -errno with one line in err. */
int recorder_triggers_start(struct recorder *r, char *err, size_t errlen);
/* Detach and stop: hits waiting for their delay go into the pending dump
 * now, and no dump starts until the recorder quits (the final dump takes
 * them); no trigger dump is asked for after this returns (the drain and
 * the application registry may still report hits: ignored). */
void recorder_triggers_stop(struct recorder *r);
/* Free, once the drain thread and the application registry are gone. */
void recorder_triggers_free(struct recorder *r);
/* Under r->lock: take the trigger hits of the pending dump (and leave none
 * pending); 1 if there were any. */
struct recorder_hits;
int recorder_triggers_take(struct recorder *r, struct recorder_hits *out);
/* Tell the triggers how the hits of h ended: written 1, in the dump just
 * written; 0, in none (dropped). */
void recorder_triggers_account(struct recorder *r, const struct recorder_hits *h, int written);
/* Fill info's trigger table (counts now, the dump's own hits counted as
 * they end if it is written) and, f not NULL, the hits of r->wr (the dump
 * thread's, under dump_serial); f NULL: a dump of another reason. Logs a
 * hit older than the buffer's window. *tab is for the caller to free after
 * the dump. 0 or -ENOMEM. */
int recorder_triggers_info(struct recorder *r, const struct bt_trigger_fired *f, struct bt_dump_info *info,
			   struct bt_dump_trigger **tab);
/* `ctl status` lines. */
void recorder_triggers_status(struct recorder *r, FILE *out);
/* `ctl trigger NAME`. */
int record_ctl_trigger(struct recorder *r, int argc, char **argv, FILE *out, char *why, size_t whylen);
/* From the application registry: BTRACE_TRIGGER / a long slice (kind
 * BT_TRIG_APP or BT_TRIG_APP_SLICE). */
void recorder_app_trigger(void *ctx, const char *name, uint32_t kind, uint64_t ts_ns, uint64_t value, uint32_t tid,
			  uint32_t tgid, const char *comm);
/* From the application registry: a call of an app-func:NAME>T function ran
 * longer than T (trigger index trig), in the application tgid named comm. */
void recorder_app_func_trigger(void *ctx, uint32_t trig, uint64_t ts_ns, uint64_t dur, uint32_t tid, uint32_t tgid,
			       const char *comm);
#endif
