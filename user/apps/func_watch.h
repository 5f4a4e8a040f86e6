/* SPDX-License-Identifier: MIT */
/*
 * func_watch.h - `--trigger app-func:NAME>T`: the recorder follows one
 * application's function records (its shared buffer, read with the
 * validating reader every few ms) and reports each call of a watched
 * function that lasted longer than its threshold. The application's hooks
 * pay nothing for it. NAME matches the symbol (demangled) or, for C++, the
 * symbol without its parameter list ("ns::f" matches "ns::f(int)").
 */
#ifndef BTRACE_FUNC_WATCH_H
#define BTRACE_FUNC_WATCH_H
#include <stddef.h>
#include <stdint.h>

struct bt_app_view;
struct bt_func_names;

/* What to watch (shared by every application; owned by the caller). */
struct bt_func_watch_cfg {
	size_t n;
	const char *const *names;
	const uint64_t *ns;      /* threshold: a call longer than this fires */
	const uint32_t *trig;    /* the trigger's index, passed to hit */
	/* a call of watched function i ended at ts after dur ns in thread tid */
	void (*hit)(void *ctx, uint32_t trig, uint64_t ts, uint64_t dur, uint32_t tid);
	void *ctx;
};

struct bt_func_watch_stats {
	uint64_t scans, records, hits;
	uint64_t gaps;     /* per-thread records missing (lost, or read out of order): calls open then not timed */
	uint64_t untimed;  /* exits of watched functions without their entry (before the first scan, after a gap, too deep) */
};

struct bt_func_watch;

struct bt_func_watch *bt_func_watch_new(const struct bt_func_watch_cfg *cfg);
void bt_func_watch_free(struct bt_func_watch *w);
/* Read what the application wrote since the last scan from buffer v (a new
 * buffer after a resize is fine), names resolving addresses. 0 or -errno. */
int bt_func_watch_scan(struct bt_func_watch *w, const struct bt_app_view *v, struct bt_func_names *names);
void bt_func_watch_stats(const struct bt_func_watch *w, struct bt_func_watch_stats *out);
/* Does symbol sym name function name? (exported for the unit test) */
int bt_func_watch_match(const char *name, const char *sym);
#endif
