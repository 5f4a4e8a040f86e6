/* SPDX-License-Identifier: MIT */
/*
 * triggers.h - the recorder's dump triggers at run time (`record --trigger`).
 *
 *   kernel conditions --trigger ring (wakeup)--+
 *   ctl trigger NAME, BTRACE_TRIGGER, uprobe --+--> trigger thread --(after=)--> dump(ctx, fired)
 *                                (eventfd)         rate limit (limit=), counts
 *
 * One thread sleeps on the trigger ring and an eventfd, so a hit reaches it
 * at once. Each accepted hit becomes one dump request after its trigger's
 * delay; hits of a trigger while its dump is pending are merged into it
 * (named in it, up to BT_TRIG_NAMED), hits within its limit are counted as
 * rate-limited (the kernel counts most of both itself, without sending
 * them). Every dump carries the table of triggers with their counts
 * and the hit that caused it (dump section TRIG, docs/dump-format.md).
 */
#ifndef BTRACE_TRIGGERS_H
#define BTRACE_TRIGGERS_H
#include <stddef.h>
#include <stdint.h>
#include "trigger_spec.h"

/* Hits named in one dump request at most: the accepted hit and those merged
 * into it during its delay; more are only counted (unnamed). */
#define BT_TRIG_NAMED 8
/* A dump is due for f[0] (its delay is over); f[1..n) and `unnamed` more
 * hits of the same trigger came during the delay, merged into it. The
 * receiver tells their end with bt_triggers_account(). */
typedef void (*bt_trigger_dump_fn)(void *ctx, const struct bt_trigger_fired *f, size_t n, uint64_t unnamed);

struct bt_triggers;

/* Arm the triggers (the kernel ones load and attach here: a condition this
 * kernel cannot arm fails the whole call with one line in err) and start the
 * thread. dump is called on that thread. NULL + err on failure. */
struct bt_triggers *bt_triggers_start(const struct bt_trigger_spec *v, size_t n, int ring_fd, int counts_fd,
				      bt_trigger_dump_fn dump, void *ctx,
				      char *err, size_t errlen);
size_t bt_triggers_count(const struct bt_triggers *t);
const struct bt_trigger_spec *bt_triggers_spec(const struct bt_triggers *t, size_t i);
/* Index of the trigger named name, -1 if none. */
int bt_triggers_find(const struct bt_triggers *t, const char *name);
/*
 * A hit seen in user space (any thread): trigger i's condition held now
 * for (tid, tgid, comm) with value. kind: the trigger's kind, or
 * BT_TRIG_CTL for `ctl trigger`. ts_ns 0: now. Never blocks.
 */
void bt_triggers_hit(struct bt_triggers *t, size_t i, uint32_t kind, uint64_t ts_ns, uint64_t value, uint32_t tid,
		     uint32_t tgid, const char *comm);
/* Application triggers: every app:NAME trigger whose name matches fires
 * (kind BT_TRIG_APP, or BT_TRIG_APP_SLICE when value exceeds its threshold). */
void bt_triggers_app(struct bt_triggers *t, const char *name, uint32_t kind, uint64_t ts_ns, uint64_t value,
		     uint32_t tid, uint32_t tgid, const char *comm);
/* Counts of trigger i, the kernel's included. */
void bt_triggers_stats(struct bt_triggers *t, size_t i, struct bt_trigger_stats *out);
/* Hits handed on by dump() ended: dumps of them started a dump written,
 * merged went into one another hit started, dropped are in none. */
void bt_triggers_account(struct bt_triggers *t, size_t i, uint64_t dumps, uint64_t merged, uint64_t dropped);
/* Detach the kernel programs and stop the thread; hits still waiting for
 * their delay are handed to dump() at once, on the caller's thread. No
 * dump is asked for after this returns, later hits are ignored; counts
 * stay readable. */
void bt_triggers_stop(struct bt_triggers *t);
/* Stop if needed, and free: after every thread that reports hits is gone. */
void bt_triggers_free(struct bt_triggers *t);
#endif
