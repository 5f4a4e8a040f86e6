/* SPDX-License-Identifier: MIT */
/*
 * event_filter.h - which events of a dump a reader keeps: CPUs, pids, event
 * types and a time window, parsed from the command line and checked per
 * event. One filter for `report` and `convert`, so both select the same
 * events for the same options.
 *
 *   struct bt_event_filter f = { 0 };
 *   bt_filter_parse_time_range(&f, "1.5..2");   // or --since/--until
 *   bt_filter_parse_pids(&f, "1234,1240");
 *   bt_filter_resolve(&f, first_ts, last_ts);   // relative times -> ns
 *   if (bt_filter_match(&f, hdr)) ...
 *   bt_filter_free(&f);
 */
#ifndef BT_EVENT_FILTER_H
#define BT_EVENT_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"

/* A time: [@|-]SECONDS[.FRACTION]. */
struct bt_time_spec {
	int set;
	int mode; /* BT_TIME_AFTER_FIRST, BT_TIME_BEFORE_LAST, BT_TIME_ABS */
	uint64_t ns;
};
enum { BT_TIME_AFTER_FIRST, BT_TIME_BEFORE_LAST, BT_TIME_ABS };

struct bt_event_filter {
	uint8_t *cpus;   /* bitmap of BT_DUMP_MAX_CPUS, NULL = all */
	uint32_t *pids;  /* tids or tgids, NULL = all */
	size_t npids;
	uint32_t types;  /* bitmask of event types, 0 = all */
	struct bt_time_spec since, until;
	uint64_t t0, t1; /* bt_filter_resolve(): the window, inclusive */
};

/* N = N s after the dump's first event, -N = N s before its last, @N =
 * absolute (CLOCK_BOOTTIME seconds, report's SECONDS column). 0 or -EINVAL
 * / -ERANGE. */
int bt_filter_parse_time(struct bt_time_spec *t, const char *arg);
/* "A..B", either end may be empty ("..B", "A.."); each end as above. */
int bt_filter_parse_time_range(struct bt_event_filter *f, const char *arg);
/* "1234,1240": events of these tids or tgids (or about these tasks). */
int bt_filter_parse_pids(struct bt_event_filter *f, const char *arg);
/* "0,2-3" */
int bt_filter_parse_cpus(struct bt_event_filter *f, const char *arg);
/* Number of the first decimal digits of *s (advanced), at most UINT32_MAX. */
int bt_filter_parse_u32(const char **s, uint32_t *out);

/* The window in ns, given the times of the dump's first and last events. */
void bt_filter_resolve(struct bt_event_filter *f, uint64_t first_ts, uint64_t last_ts);

int bt_filter_cpu_ok(const struct bt_event_filter *f, uint32_t cpu);
int bt_filter_time_ok(const struct bt_event_filter *f, uint64_t ts);
int bt_filter_pid_ok(const struct bt_event_filter *f, uint32_t pid);
/* Every criterion; pids match the event's tid, tgid or the task it is about
 * (next of a switch, woken, migrated, forked or exiting task). */
int bt_filter_match(const struct bt_event_filter *f, const struct bt_event_hdr *h);
/* Any criterion set. */
int bt_filter_active(const struct bt_event_filter *f);

void bt_filter_free(struct bt_event_filter *f);

#endif
