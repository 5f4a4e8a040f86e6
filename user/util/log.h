/* SPDX-License-Identifier: MIT */
/*
 * log.h - diagnostics with a priority. On a terminal or a file a line reads
 * "btrace-bpf: message"; when standard error is the systemd journal
 * (JOURNAL_STREAM names it) it reads "<N>message", N the syslog priority,
 * which journald stores as the line's priority (sd-daemon(3) prefixes), so
 * `journalctl -p warning -u btrace-bpf` shows the problems only.
 *
 * Every subcommand reports through these, never fprintf(stderr): one
 * format, and the journal gets the right priority (a fatal start error of
 * the service shows in `journalctl -p err`). Pick by severity:
 *   bt_err     the command or a dump failed (the caller then exits 1 or goes on)
 *   bt_warn    something lost or refused; work goes on
 *   bt_log(BT_LOG_NOTICE, ...)  what an operator wants logged: started, dumped
 *   bt_info    details, only with -v (bt_verbose)
 */
#ifndef BTRACE_LOG_H
#define BTRACE_LOG_H
#include <stdarg.h>
#include <stdio.h>

#define BT_PROG "btrace-bpf" /* the prefix of every line on a terminal */

/* syslog(3) priorities */
enum bt_log_level {
	BT_LOG_ERR = 3,     /* something failed: a dump, a hook, the recorder */
	BT_LOG_WARNING = 4, /* something lost or refused; recording goes on */
	BT_LOG_NOTICE = 5,  /* what an operator wants in the log: started, dumped, stopped */
	BT_LOG_INFO = 6,    /* details (-v) */
	BT_LOG_DEBUG = 7,
};

void bt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Name the subcommand in every line from here on ("btrace-bpf report: ...");
 * NULL: none. Called once, before threads start. */
void bt_log_set_command(const char *command);
const char *bt_log_prog(void); /* "btrace-bpf" or "btrace-bpf COMMAND" */
void bt_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
extern int bt_verbose; /* -v given: bt_info prints */
#define bt_err(...) bt_log(BT_LOG_ERR, __VA_ARGS__)
#define bt_warn(...) bt_log(BT_LOG_WARNING, __VA_ARGS__)
#define bt_info(...) (bt_verbose ? bt_log(BT_LOG_INFO, __VA_ARGS__) : (void)0)
/* A stream for code that prints its own messages to a FILE * (argp's usage
 * errors: set state->err_stream to it in ARGP_KEY_INIT): on a terminal the
 * text goes to stderr as written; under the journal each line gets level's
 * prefix, so a bad option of the service shows in `journalctl -p err`.
 * Single-threaded use (option parsing). */
FILE *bt_log_stream(int level);
#endif
