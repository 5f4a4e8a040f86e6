/* SPDX-License-Identifier: MIT */
/*
 * app_registry.h - the recorder's side of in-process tracing: applications
 * (btrace.h) that registered over the control socket, their shared-memory
 * buffers, name tables and connections.
 */
#ifndef BTRACE_APP_REGISTRY_H
#define BTRACE_APP_REGISTRY_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bt_dump_sink;

/* The largest application buffer (--app-buffer-size, ctl app-resize); all
 * of them together (times --max-apps) must also fit in MemAvailable. */
#define BT_APP_BUFFER_MAX (1ull << 30)

struct bt_apps_config {
	uint64_t buffer_size; /* bytes of data blocks per application */
	uint64_t funcs_buffer_size; /* ... of one that has the function hooks (0: buffer_size) */
	uint32_t block_size;
	uint32_t ncores;      /* CPUs (possible) */
	uint32_t max_apps;    /* registered at once, exited ones included */
	/* BTRACE_TRIGGER(name) in an application (kind BT_TRIG_APP), on the
	 * registry's thread; NULL: ignored */
	void (*trigger)(void *ctx, const char *name, uint32_t kind, uint64_t ts_ns, uint64_t value, uint32_t tid,
			uint32_t tgid, const char *comm);
	void *trigger_ctx;
	/* slices the applications report when they last longer than ns
	 * (`--trigger app:NAME>T`, kind BT_TRIG_APP_SLICE through trigger) */
	size_t nwatch;
	const char *const *watch_names;
	const uint64_t *watch_ns;
	/* functions whose calls longer than fwatch_ns fire trigger fwatch_trig
	 * (`--trigger app-func:NAME>T`, func_watch.h): the registry's thread
	 * reads the function records every few ms and calls func_trigger */
	size_t nfwatch;
	const char *const *fwatch_names;
	const uint64_t *fwatch_ns;
	const uint32_t *fwatch_trig;
	void (*func_trigger)(void *ctx, uint32_t trig, uint64_t ts_ns, uint64_t dur, uint32_t tid, uint32_t tgid,
			     const char *comm);
};

struct bt_apps;

/* Whether max_apps buffers of size fit: at most BT_APP_BUFFER_MAX each, all
 * together in the memory available (bt_apps_create checks it too; a
 * recorder asks before it loads anything). 0, or -errno with why. */
int bt_apps_check_size(uint64_t size, uint32_t max_apps, char *why, size_t whylen);
struct bt_apps *bt_apps_create(const struct bt_apps_config *cfg, char *err, size_t errlen);
/* Closes every connection (applications see EOF and stop tracing). */
void bt_apps_destroy(struct bt_apps *r);

/* Control-socket hook for "app-register NAME": takes ownership of the
 * connection c of process pid and answers it (a buffer fd, or an error).
 * early_fd (-1: none, else taken): the buffer the process wrote in before
 * it registered (a forked child: btrace_app.c), validated, then read like
 * a buffer left by a resize. parent (0: none): the process a forked child
 * says it was forked from, whose mappings name its calls if it is gone
 * before its own are read (only a registered application's). */
void bt_apps_register(struct bt_apps *r, int c, uint32_t pid, const char *name, int funcs, int early_fd,
		      uint32_t parent);

/* Give every live application a new buffer of size bytes (new ones get it
 * too). Returns how many were resized, or -errno with a reason in why. */
int bt_apps_resize(struct bt_apps *r, uint64_t size, char *why, size_t whylen);

/* One line per application for `ctl status`. */
void bt_apps_status(struct bt_apps *r, FILE *out);
size_t bt_apps_count(struct bt_apps *r, size_t *live);

/* Every application buffer copied for a dump at one moment (app_capture.c),
 * with each application's row (counters, names); NULL and errno on failure. */
struct bt_apps_capture;
struct bt_apps_capture *bt_apps_capture(struct bt_apps *r);
/* Dump hook (bt_dump_info.write_apps, ctx: a capture): every captured
 * block, the application table, then their function names. */
int bt_apps_capture_write(void *capture, struct bt_dump_sink *s);
/* ns the copies took (0 for NULL). */
uint64_t bt_apps_capture_copy_ns(const struct bt_apps_capture *c);
void bt_apps_capture_free(struct bt_apps_capture *c);
#endif
