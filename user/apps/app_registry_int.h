/* SPDX-License-Identifier: MIT */
/*
 * app_registry_int.h - the registry's table of applications, shared by the
 * registry (app_registry.c: registration, names, resize, status) and its
 * capture for dumps (app_capture.c). Only user/apps includes this.
 */
#ifndef BTRACE_APP_REGISTRY_INT_H
#define BTRACE_APP_REGISTRY_INT_H
#include <pthread.h>
#include <stdint.h>
#include "app_registry.h"
#include "app_reader.h"
#include "dump_format.h"
#include "clocks.h"

#define MAX_BUFS 4         /* current + older ones still dumped */
#define LINE_MAX_APP 256
#define WATCH_MS 10        /* app-func triggers: how often function records are read */
/* A counter an application keeps in its shared memory is its word only:
 * shown and summed up to this (no real count comes near: one event per ns
 * for three days), flagged past it. */
#define APP_COUNT_MAX (1ull << 48)

struct abuf {
	struct bt_app_view v;
	int fd;
	uint64_t data_size;
};

struct app {
	uint32_t pid, flags;
	char name[16];
	int conn;             /* -1 once the process is gone */
	uint64_t registered_ts, exit_ts;
	struct abuf bufs[MAX_BUFS]; /* [0] current */
	uint32_t nbufs;
	char (*names)[BTD_APP_NAME_LEN];
	uint32_t nnames, names_cap;
	uint64_t names_bad, resizes;
	uint64_t maps_reads; /* "maps": its mappings read again (a library loaded) */
	uint32_t early_refused;       /* its own buffer (app_registry.c: buf_adopt) refused: what it
				       * wrote before registering is lost */
	char line[LINE_MAX_APP];
	size_t linelen;
	struct bt_func_names *fnames; /* its mappings: function names survive its exit */
	struct bt_func_watch *fw;     /* app-func triggers: its calls timed (NULL: none) */
	int fw_final;                 /* scanned once after it exited */
	struct bt_apps *reg;
};

struct bt_apps {
	struct bt_apps_config cfg;
	pthread_mutex_t lock;
	struct app **apps;
	size_t napps;
	int wake[2];
	pthread_t thread;
	int stop;
	/* Under lock: a trigger's copy of the buffers waits for the lock, so
	 * its longest hold and where are kept for ctl status (reg_lock) */
	uint64_t lock_ns, hold_max_ns;
	const char *hold_max_site;
};

/* The registry's lock, timed (a hold is a trigger copy's wait). */
static inline void reg_lock(struct bt_apps *r)
{
	pthread_mutex_lock(&r->lock);
	r->lock_ns = bt_boottime_ns();
}

static inline void reg_unlock(struct bt_apps *r, const char *site)
{
	uint64_t held = bt_boottime_ns() - r->lock_ns;
	if (held > r->hold_max_ns) {
		r->hold_max_ns = held;
		r->hold_max_site = site;
	}
	pthread_mutex_unlock(&r->lock);
}

static inline uint64_t app_count(uint64_t v, int *bogus)
{
	if (v <= APP_COUNT_MAX)
		return v;
	*bogus = 1;
	return APP_COUNT_MAX;
}

/* Under lock: read everything the application sent so far (its names),
 * then mark it gone at EOF. */
void bt_app_drain_input(struct bt_apps *r, struct app *a);
/* Under lock: names the application interned (its own count, untrusted:
 * clamped) that we never received. Their events show name#ID. */
uint64_t bt_app_names_lost(const struct app *a, uint64_t interned);
/* Under lock: the names count of the application's buffers. */
uint64_t bt_app_names_interned(const struct app *a);
#endif
