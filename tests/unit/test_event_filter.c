// SPDX-License-Identifier: MIT
/* test_event_filter.c - the event selection report and convert share
 * (user/dump/event_filter.c): "A..B" windows, pid and CPU lists, and which
 * events match. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "event_filter.h"

#define SEC 1000000000ull

static void test_time_range(void)
{
	struct bt_event_filter f = { 0 };
	CHECK(bt_filter_parse_time_range(&f, "1.5..2") == 0 && f.since.set && f.until.set &&
		      f.since.ns == SEC + SEC / 2 && f.until.ns == 2 * SEC && f.since.mode == BT_TIME_AFTER_FIRST,
	      "1.5..2 relative to the first event");
	bt_filter_resolve(&f, 100 * SEC, 200 * SEC);
	CHECK(f.t0 == 101 * SEC + SEC / 2 && f.t1 == 102 * SEC, "resolved: %llu..%llu", (unsigned long long)f.t0,
	      (unsigned long long)f.t1);
	CHECK(bt_filter_parse_time_range(&f, "@1234.5..@1234.6") == 0 && f.since.mode == BT_TIME_ABS &&
		      f.since.ns == 1234 * SEC + SEC / 2 && f.until.ns == 1234 * SEC + 6 * SEC / 10,
	      "absolute ends");
	CHECK(bt_filter_parse_time_range(&f, "-0.5..") == 0 && f.since.mode == BT_TIME_BEFORE_LAST && !f.until.set,
	      "open end");
	bt_filter_resolve(&f, 100 * SEC, 200 * SEC);
	CHECK(f.t0 == 199 * SEC + SEC / 2 && f.t1 == UINT64_MAX, "the last half second");
	CHECK(bt_filter_parse_time_range(&f, "..3") == 0 && !f.since.set && f.until.ns == 3 * SEC, "open start");
	const char *bad[] = { "", "..", "1", "1..x", "a..2", "1..2..3", "@..2", "-..", "1.5.5..2", "99999999999..", NULL };
	for (int i = 0; bad[i]; i++)
		CHECK(bt_filter_parse_time_range(&f, bad[i]) < 0, "'%s' refused", bad[i]);
	bt_filter_free(&f);
}

static void test_lists(void)
{
	struct bt_event_filter f = { 0 };
	CHECK(bt_filter_parse_pids(&f, "12,4000000000") == 0 && f.npids == 2 && f.pids[1] == 4000000000u, "pids");
	CHECK(bt_filter_parse_pids(&f, "5000000000") == -EINVAL && bt_filter_parse_pids(&f, "1,") < 0 &&
		      bt_filter_parse_pids(&f, "x") < 0,
	      "bad pid lists refused");
	CHECK(bt_filter_parse_cpus(&f, "0,2-3") == 0 && bt_filter_cpu_ok(&f, 0) && !bt_filter_cpu_ok(&f, 1) &&
		      bt_filter_cpu_ok(&f, 3) && !bt_filter_cpu_ok(&f, 4),
	      "cpu ranges");
	CHECK(bt_filter_parse_cpus(&f, "3-2") < 0 && bt_filter_parse_cpus(&f, "99999") < 0, "bad cpu lists refused");
	bt_filter_free(&f);
}

static void test_match(void)
{
	struct bt_event_filter f = { 0 };
	struct bt_ev_sched_switch sw = { 0 };
	sw.h.type = BT_EV_SCHED_SWITCH;
	sw.h.ts_ns = 150 * SEC;
	sw.h.tid = 7;
	sw.h.tgid = 7;
	sw.next_tid = 42;
	bt_filter_resolve(&f, 100 * SEC, 200 * SEC);
	CHECK(!bt_filter_active(&f) && bt_filter_match(&f, &sw.h), "no filter: everything");
	bt_filter_parse_pids(&f, "42");
	CHECK(bt_filter_match(&f, &sw.h), "a switch to 42 is about 42");
	sw.next_tid = 43;
	CHECK(!bt_filter_match(&f, &sw.h), "a switch between others is not");
	sw.h.tgid = 42;
	CHECK(bt_filter_match(&f, &sw.h), "a thread of process 42 is");
	bt_filter_parse_time_range(&f, "50.000000001..60");
	bt_filter_resolve(&f, 100 * SEC, 200 * SEC);
	CHECK(!bt_filter_match(&f, &sw.h), "before the window");
	sw.h.ts_ns = 160 * SEC;
	CHECK(bt_filter_match(&f, &sw.h), "at the window's end (inclusive)");
	f.types = 1u << BT_EV_SCHED_WAKEUP;
	CHECK(!bt_filter_match(&f, &sw.h), "another type");
	bt_filter_free(&f);
}

int main(void)
{
	RUN(test_time_range);
	RUN(test_lists);
	RUN(test_match);
	return h_done();
}
