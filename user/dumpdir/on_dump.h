/* SPDX-License-Identifier: MIT */
/*
 * on_dump.h - `record --on-dump CMD`: run a command after each dump (upload,
 * notify) without ever making recording or the next dump wait for it.
 *
 * CMD runs as `/bin/sh -c 'CMD "$@"' sh DUMP`: the dump's path is its last
 * argument. Its environment also has BTRACE_DUMP, BTRACE_MANIFEST and
 * BTRACE_DUMP_REASON; stdin is /dev/null, stdout and stderr are ours (the
 * journal under systemd). Each runs in its own session, so a timeout kills
 * its whole process group (SIGTERM, SIGKILL 5 s later). At most
 * BT_HOOKS_MAX_RUNNING run at once; a dump beyond that is counted as
 * skipped. One thread reaps them and logs every failure.
 */
#ifndef BTRACE_ON_DUMP_H
#define BTRACE_ON_DUMP_H
#include <stdint.h>

#define BT_HOOKS_MAX_RUNNING 4
#define BT_HOOKS_KILL_GRACE_NS 5000000000ull

struct bt_hook_stats {
	uint64_t started, succeeded, failed, timed_out, skipped;
	uint32_t running;
};

struct bt_hooks;

/* NULL with errno on failure (out of memory, no thread). */
struct bt_hooks *bt_hooks_new(const char *cmd, uint64_t timeout_ns);
/* Start CMD for a dump. 0; -EBUSY if too many still run (counted as skipped);
 * -errno if it cannot be started (counted as failed). Logged either way. */
int bt_hooks_run(struct bt_hooks *h, const char *dump_path, const char *manifest_path, const char *reason);
void bt_hooks_get_stats(struct bt_hooks *h, struct bt_hook_stats *st);
/* Wait for the running commands (each within its timeout), then free. */
void bt_hooks_destroy(struct bt_hooks *h);
#endif
