/* SPDX-License-Identifier: MIT */
/*
 * event_names.h - event type -> name/size/group, and the trace-cmd-style
 * field text of every event type. Shared by `report` and the exporters.
 *
 * Names follow the kernel tracepoints (sched_switch, irq_handler_entry, ...);
 * uprobe events are "uprobe" / "uretprobe" / "usdt". Field text follows the
 * tracepoints' print formats where the event carries the data, e.g.
 *   prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120
 */
#ifndef BTRACE_EVENT_NAMES_H
#define BTRACE_EVENT_NAMES_H
#include <stddef.h>
#include <stdint.h>
#include "task_list.h"
#include "probe_table.h"

struct bt_event_hdr;

/* Tracepoint-style name of a type ("sched_switch"), NULL if unknown. */
const char *bt_event_name(uint32_t type);
/* Type for a name (exact match), -1 if none. */
int bt_event_type(const char *name);
/* sizeof the type's struct (the smallest valid event), 0 if unknown. */
uint32_t bt_event_min_size(uint32_t type);
/* enum bt_group of a type, -1 if unknown. */
int bt_event_group(uint32_t type);
/* Group name ("sched", "irq", "power", "syscalls", "uprobe", "stacks"), NULL if out of range. */
const char *bt_group_name(int group);
/* Group for a name, -1 if none. */
int bt_group_from_name(const char *name);

/* Kernel letters for a sched_switch prev_state: "R", "S", "D", "T", "t",
 * "X", "Z", "P", "I", "R+" (preempted), several joined by '|'. Accepts both
 * raw task __state bits and the tracepoint's encoding (0x100 = preempted);
 * 0 is "R+" (events.h: 0 = runnable, preempted). */
const char *bt_prev_state_str(uint32_t state, char *buf, size_t len);
/* Softirq vector name ("NET_RX"), NULL if out of range. */
const char *bt_softirq_name(uint32_t vec);

/*
 * Task names while walking events in time order: the dump's task table
 * (names at dump time), overridden by names seen in fork/exec/rename events
 * already walked. Names of tid 0 are "swapper/CPU" in fields and "<idle>" in
 * the leading column; unknown tids are "<...>".
 */
struct bt_namer;
struct bt_namer *bt_namer_new(const struct bt_task *tasks, size_t ntasks); /* sorted by tid */
void bt_namer_free(struct bt_namer *nm);
/* Name of tid for a field (comm=...); cpu is used for tid 0. Valid until the next apply. */
const char *bt_namer_comm(struct bt_namer *nm, uint32_t tid, uint32_t cpu);
/* Update from a fork/exec/rename event (others ignored). len >= the type's size. */
void bt_namer_apply(struct bt_namer *nm, const struct bt_event_hdr *ev, uint32_t len);

/* Probe table lookup by id (events carry the id); NULL if absent. */
const struct bt_probe_desc *bt_probe_find(const struct bt_probe_desc *p, size_t n, uint32_t id);

/*
 * The fields of one event (the text after "name: "), snprintf-style: returns
 * the length the full text needs, writes at most len-1 bytes plus NUL. ev must
 * be validated (known type, evlen >= its size). nm, probes may be NULL.
 */
int bt_format_fields(char *buf, size_t len, const struct bt_event_hdr *ev, uint32_t evlen,
		     struct bt_namer *nm, const struct bt_probe_desc *probes, size_t nprobes);

/* "1234.567890" seconds with microseconds from ns. */
/* Fields of an application event (BT_EV_APP_*): its name (NULL: unknown)
 * and arguments, or the counter value. */
int bt_format_app_fields(char *buf, size_t len, const struct bt_event_hdr *ev, uint32_t evlen, const char *name);
const char *bt_format_ts(uint64_t ns, char *buf, size_t len);
#endif
