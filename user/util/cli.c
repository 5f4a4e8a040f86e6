// SPDX-License-Identifier: MIT
/*
 * cli.c - the subcommands' shared command-line handling (see cli.h).
 */
#include <stdio.h>
#include "cli.h"
#include "log.h"

error_t bt_cli_common_key(int key, struct argp_state *state)
{
	switch (key) {
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		return 0;
	case ARGP_KEY_INIT:
		/* Usage errors at error priority under the journal (log.h). */
		state->err_stream = bt_log_stream(BT_LOG_ERR);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

error_t bt_cli_parse(const struct argp *argp, const char *command, int argc, char **argv, unsigned flags,
		     void *input)
{
	/* argp names the program after argv[0]: "btrace-bpf COMMAND: ...". */
	char *a0 = argc > 0 ? argv[0] : NULL;
	error_t r;

	bt_log_set_command(command);
	if (argc > 0)
		argv[0] = (char *)bt_log_prog();
	argp_err_exit_status = BT_EXIT_USAGE;
	r = argp_parse(argp, argc, argv, flags, NULL, input);
	if (argc > 0)
		argv[0] = a0;
	return r;
}
