/* SPDX-License-Identifier: MIT */
/*
 * report_opts.h - `report`'s command line (report_opts.c, argp like
 * `record`): what to print and the event filter shared with convert.
 */
#ifndef BTRACE_REPORT_OPTS_H
#define BTRACE_REPORT_OPTS_H
#include "event_filter.h"

struct ropts {
	int stats, wall, no_lost, functions, hot, manifest;
	int func_batches; /* opened with BT_DUMP_OPEN_FUNC_BATCHES (--functions) */
	unsigned top;     /* rows of each --hot summary */
	int stacks, profile, folded, offcpu; /* report_stacks.h */
	int verbose; /* -v: --stacks with symbol versions and file offsets */
	const char *path; /* the dump */
	struct bt_event_filter f; /* -c, -p, -e, --since/--until/--time (shared with convert) */
	/* where a report that fails reading the dump (an application block
	 * read again from a damaged or changed file) says why, for its caller
	 * to print once with the file's name; NULL: not kept */
	char *err;
	size_t errlen;
};

/* Parse argv (argv[0] is "report"). Bad usage: a message and exit 2;
 * --help: the help and exit 0. */
void bt_report_parse_args(int argc, char **argv, struct ropts *o);
void bt_report_opts_free(struct ropts *o);
#endif
