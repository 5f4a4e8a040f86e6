/* SPDX-License-Identifier: MIT */
/*
 * config_file.h - `record --config FILE`: a file of NAME = VALUE lines taken
 * as the long options --NAME=VALUE, before those of the command line.
 *
 *   # comment               (only where a line starts, after blanks)
 *   buffer-size = 64M       --buffer-size=64M
 *   on-dump = "ship $1 "    quotes keep blanks at the ends; \" and \\ inside
 *   waking                  a switch: --waking (also waking = yes; = no omits it)
 */
#ifndef BTRACE_CONFIG_FILE_H
#define BTRACE_CONFIG_FILE_H
#include <stddef.h>

/* What NAME is: BT_CFG_UNKNOWN, BT_CFG_SWITCH or BT_CFG_VALUE. */
enum { BT_CFG_UNKNOWN = -1, BT_CFG_SWITCH = 0, BT_CFG_VALUE = 1 };
typedef int (*bt_cfg_lookup)(const char *name, void *ctx);

/*
 * Expand `--config FILE` (or --config=FILE, at most once, before any "--")
 * in argv: *nargv gets argv[0], the file's options, then argv's others in
 * their order, so the command line overrides the file. Without --config,
 * *nargv is a copy of argv. Returns 0, or -errno with "FILE:LINE: why" in err
 * (unknown option, missing or unexpected value, unreadable file).
 * Free *nargv with bt_config_free(*nargc, *nargv).
 */
int bt_config_expand(int argc, char **argv, bt_cfg_lookup lookup, void *ctx, int *nargc, char ***nargv,
		     char *err, size_t errlen);
void bt_config_free(int argc, char **argv);
/* "FILE:LINE" of argument i of the expanded argv if the file gave it, in
 * buf; NULL if the command line did. Valid until bt_config_free. */
const char *bt_config_origin(int i, char *buf, size_t len);
#endif
