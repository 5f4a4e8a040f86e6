/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the one command-line convention of every subcommand (argp):
 *   - usage errors say "btrace-bpf COMMAND: what is wrong: what to give",
 *     go to the log stream (error priority under the journal) and exit 2;
 *   - failures after parsing are logged the same way and exit 1;
 *   - -h is --help, hidden; --help and --usage print to stdout, exit 0.
 */
#ifndef BTRACE_CLI_H
#define BTRACE_CLI_H
#include <argp.h>

/* The hidden -h every subcommand takes (its key is 'h'). */
#define BT_CLI_OPTION_H { "help-short", 'h', NULL, OPTION_HIDDEN, "Same as --help", -1 }

/* Exit statuses. */
enum { BT_EXIT_OK = 0, BT_EXIT_FAILED = 1, BT_EXIT_USAGE = 2 };

/* The keys every parser shares: 'h' (help, then exit 0 unless the parse
 * has ARGP_NO_EXIT) and ARGP_KEY_INIT (usage errors into the log stream).
 * ARGP_ERR_UNKNOWN for any other key: a parser calls it from its default. */
error_t bt_cli_common_key(int key, struct argp_state *state);

/* argp_parse for subcommand `command`: messages and the program name in
 * them say "btrace-bpf COMMAND", a usage error exits BT_EXIT_USAGE (or,
 * with ARGP_NO_EXIT, returns nonzero). */
error_t bt_cli_parse(const struct argp *argp, const char *command, int argc, char **argv, unsigned flags,
		     void *input);
#endif
