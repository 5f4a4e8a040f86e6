/* SPDX-License-Identifier: MIT */
/*
 * record_checks.h - errors in the options of `record` found when recording
 * starts, named by option and by FILE:LINE when --config FILE gave it, and
 * the probe targets (-u, -U, func: triggers) resolved before any BPF is
 * loaded. A recorder stopped by one exits 2: the unit's
 * RestartPreventExitStatus, as restarting cannot fix a configuration.
 */
#ifndef BTRACE_RECORD_CHECKS_H
#define BTRACE_RECORD_CHECKS_H
#include "recorder_state.h"

/* The exit status of a configuration error (argp's, and the unit's
 * RestartPreventExitStatus). */
#define RECORD_EXIT_CONFIG 2

/* One error line about option name (a long option, no dashes): "FILE:LINE:
 * name: why" when where is set, else just why (the command line's
 * messages name their option). */
void record_conf_err(const char *name, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same for one of the checked options. */
void record_key_err(const struct record_opts *o, enum record_key k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Resolve every -u, -U and func: trigger probe as attaching would, without
 * loading anything. 0, or -1 after saying which one failed and why. */
int record_check_probes(const struct record_opts *o);
/* Free what the where fields hold. */
void record_opts_free_where(struct record_opts *o);
#endif
