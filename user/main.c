// SPDX-License-Identifier: MIT
/*
 * main.c - `btrace-bpf COMMAND [OPTION...]`: dispatch to the subcommands of
 * commands.h.
 */
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "util.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s COMMAND [OPTION...]\n"
		"A flight recorder for Linux: kernel events into an in-memory buffer, dumped on demand.\n"
		"\n"
		"Commands:\n"
		"  record    record kernel events; dump on SIGUSR1 and on exit\n"
		"  report    print the events of a dump, or its statistics\n"
		"  convert   turn a dump into a trace for Perfetto / chrome://tracing\n"
		"  ctl       control a running recorder: status, dump, resize, stop\n"
		"\n"
		"Options:\n"
		"  -h, --help     this help (COMMAND --help for a command's options)\n"
		"  -V, --version  print the version\n"
		"\n"
		"Examples:\n"
		"  sudo %s record                 # Ctrl-C to stop; kill -USR1 PID to dump\n"
		"  %s report \"$(ls -t traces/*.btd | head -1)\"   # the newest dump\n",
		BT_PROG, BT_PROG, BT_PROG);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("%s %s\n", BT_PROG, BT_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "convert"))
		return cmd_convert(argc - 1, argv + 1);
	if (!strcmp(cmd, "ctl"))
		return cmd_ctl(argc - 1, argv + 1);
	bt_err("unknown command '%s': see %s --help", cmd, BT_PROG);
	return 2;
}
