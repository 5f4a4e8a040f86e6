/* SPDX-License-Identifier: MIT */
/*
 * dump_fixture.h - building dumps in tests: events written into a buffer in
 * the stored form the drain gives them, application function batches, and
 * scratch directories removed whole. For the tests that link the tool
 * (libbtrace-tool.a); each includes harness.h too.
 */
#ifndef BT_TEST_DUMP_FIXTURE_H
#define BT_TEST_DUMP_FIXTURE_H
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"
#include "events.h"

/* Room for any kernel event a test builds. */
union any_ev {
	struct bt_event_hdr h;
	struct bt_ev_sched_switch sw;
	struct bt_ev_sched_wakeup wk;
	struct bt_ev_sched_migrate mg;
	struct bt_ev_task tk;
	struct bt_ev_irq irq;
	struct bt_ev_power pw;
	struct bt_ev_syscall sc;
	struct bt_ev_uprobe up;
};

/* A kernel event into core's blocks of b, as the drain writes it: a batch
 * of one event in the stored form (compact.h). 0 or bt_write's error. */
static inline int fx_store(struct bt_buffer *b, uint32_t core, const struct bt_event_hdr *ev, uint32_t len)
{
	uint8_t batch[BT_COMPACT_MAX];
	uint32_t n = bt_compact_batch_put(batch, ev, len, NULL);
	return n ? bt_write(b, core, batch, n) : -EINVAL;
}

/* An application's function batch of thread tid of pid, at ts, into core 1
 * of a: n (<= 64) records, 1 ns per tick and 100 ticks apart, kinds
 * (entry/exit) and functions (from 0x401000 on). 0 or bt_write's error. */
static inline int fx_func_batch(struct bt_buffer *a, uint64_t ts, uint32_t seq, uint32_t tid, uint32_t pid,
				const unsigned *kind, const uint64_t *fn, int n)
{
	union {
		struct bt_ev_app_funcs f;
		uint8_t raw[sizeof(struct bt_ev_app_funcs) + 8 * 64];
	} u;

	if (n < 0 || n > 64)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	u.f.h.ts_ns = ts;
	u.f.h.seq = seq;
	u.f.h.tid = tid;
	u.f.h.tgid = pid;
	u.f.h.cpu = 1;
	u.f.h.type = BT_EV_APP_FUNCS;
	u.f.tsc0 = 1000000;
	u.f.addr0 = 0x401000;
	u.f.mult_q32 = 1ull << 32;
	u.f.count = u.f.cap = (uint32_t)n;
	for (int i = 0; i < n; i++)
		u.f.words[i] = (i ? 100u : 0u) | (uint64_t)kind[i] << 32 | (uint64_t)(int64_t)(fn[i] - 0x401000) << 34;
	return bt_write(a, 1, &u, (uint32_t)(sizeof(u.f) + 8u * (uint32_t)n));
}

/* A ctl dump of 2 CPUs at path: kernel buffer k, the application blocks
 * write_apps writes from a, the groups given; both buffers destroyed.
 * 0, or bt_dump_write's error with err set. */
static inline int fx_write_app_dump(struct bt_buffer *k, struct bt_buffer *a,
				    int (*write_apps)(void *ctx, struct bt_dump_sink *s), uint32_t groups,
				    const char *path, char *err, size_t errlen)
{
	char out[600];
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .dump_seq = 1, .reason = "ctl",
				     .groups_enabled = groups, .write_apps = write_apps, .apps_ctx = a };
	int r = bt_dump_write(k, &info, NULL, path, 1, out, sizeof(out), NULL, err, errlen);

	bt_buffer_destroy(k);
	bt_buffer_destroy(a);
	return r < 0 ? r : 0;
}

static inline int fx_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/* rm -rf dir (a test's own scratch directory). */
static inline void fx_rm_rf(const char *dir)
{
	nftw(dir, fx_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}
#endif
