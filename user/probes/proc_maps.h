/* SPDX-License-Identifier: MIT */
/* proc_maps.h - the file a probe's BINARY names, found through a process's
 * memory maps, the library directories or PATH. */
#ifndef BTRACE_PROC_MAPS_H
#define BTRACE_PROC_MAPS_H
#include <stddef.h>

/*
 * Find BINARY (a path or a name, see above) for pid (<= 0: no process: own
 * maps, library directories, PATH). path: the name to show (the target's
 * path), attach: a path this process can open for the same file (may be
 * /proc/PID/root/... or /proc/PID/map_files/...). 0 or -errno + err.
 */
int bt_uprobe_find_binary(int pid, const char *binary, char *path, size_t pathlen, char *attach,
			  size_t attachlen, char **err);
/*
 * The process (thread group) of task id `id`, which may be a thread id:
 * *tgid, and the names of both (comm, may be NULL). A uprobe bound to a
 * thread id fires for that thread only and ends with it; -p means the
 * process. 0, or -ESRCH / -errno + err.
 */
int bt_proc_tgid(int id, int *tgid, char *comm, size_t commlen, char *tcomm, size_t tcommlen, char **err);
#endif
