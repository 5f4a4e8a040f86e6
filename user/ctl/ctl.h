/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the control channel of a running recorder: a Unix stream socket
 * (root-only, /run/btrace-bpf/<pid>.sock or --ctl PATH) that takes one
 * command line per connection and answers with text lines ending in a line
 * "ok" or "error: <why>", after lines "." every 2 s while the request runs
 * (keepalives). `btrace-bpf ctl` is the client. The request line must come
 * as the client connects: a connection silent for 2 s is closed, and with
 * every slot taken the oldest one without a request gives its slot up.
 */
#ifndef BTRACE_CTL_H
#define BTRACE_CTL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BT_CTL_DIR "/run/btrace-bpf"
#define BT_CTL_MAX_LINE 4096
#define BT_CTL_MAX_ARGS 16

/* Runs on the control thread. Writes reply lines to out; returns 0 for
 * "ok" or -errno for an error whose one-line reason it wrote to why. */
typedef int (*bt_ctl_handler)(void *ctx, int argc, char **argv, FILE *out, char *why, size_t whylen);

struct bt_ctl_server;

/* A command that hands the connection over instead of answering it
 * (in-process tracing: the application keeps its connection open). */
#define BT_CTL_ADOPT_CMD "app-register"
/* passed_fd: a descriptor sent with the request line (-1: none), the
 * handler's to close. */
typedef void (*bt_ctl_adopt_handler)(void *ctx, int fd, uint32_t peer_pid, int passed_fd, int argc, char **argv);

/* Whether path can be used for a control socket, without changing
 * anything (a recorder checks before it attaches BPF): 0 nothing there, 1 a
 * stale socket (refuses connections, bound by no live process: bt_ctl_start
 * removes it), -errno with a message: too long (over 107 bytes, never
 * truncated), not a socket, a live recorder's or another program's socket. */
int bt_ctl_check_path(const char *path, char *err, size_t errlen);

/* The arguments of `dump` ("dump" or "dump -o FILE"), as the client checks
 * them before sending and the recorder before acting: 0 with *path the FILE
 * or NULL, -EINVAL otherwise. */
#define BT_CTL_DUMP_USAGE "usage: dump [-o FILE]"
int bt_ctl_dump_args(int argc, char *const *argv, const char **path);

/* Listen on path (NULL: BT_CTL_DIR/<pid>.sock). A stale socket left by a
 * crashed recorder is removed; anything else there is an error (see
 * bt_ctl_check_path). bt_ctl_stop() removes only the socket this call bound
 * (same device and inode, still a socket). NULL + errno + message on failure. */
/* BT_CTL_ADOPT_CMD connections go to adopt (which then owns the fd; NULL:
 * refused), from the first connection on. */
struct bt_ctl_server *bt_ctl_start(const char *path, bt_ctl_handler h, void *ctx, bt_ctl_adopt_handler adopt,
				   void *adopt_ctx, char *err, size_t errlen);
const char *bt_ctl_path(const struct bt_ctl_server *s);
/* Stop the thread, close and unlink the socket. NULL is fine. */
void bt_ctl_stop(struct bt_ctl_server *s);

/* The client's wait for a reply by default: a dump of a 1 GiB buffer on a
 * loaded machine takes minutes, a recorder frozen is told apart sooner by
 * the silence of its keepalives. */
#define BT_CTL_TIMEOUT_S 300

/* Client side: send one command to a socket, copy the reply lines (without
 * the final status line) to out, waiting at most timeout_s (0:
 * BT_CTL_TIMEOUT_S); a recorder busy with as many requests as it serves at
 * once is asked again until then. Returns 0 (ok), 1 (the recorder said
 * error, or stayed busy: message in why) or -errno (could not talk to it;
 * -ETIME: no reply in time). */
int bt_ctl_request(const char *path, const char *line, unsigned timeout_s, FILE *out, char *why, size_t whylen);
#endif
