/* SPDX-License-Identifier: MIT */
/* commands.h - subcommands dispatched by main.c (`btrace-bpf CMD ...`). Each returns the exit status. */
#ifndef BTRACE_COMMANDS_H
#define BTRACE_COMMANDS_H
int cmd_record(int argc, char **argv);  /* user/record/cmd_record.c */
int cmd_report(int argc, char **argv);  /* user/report/cmd_report.c */
int cmd_convert(int argc, char **argv); /* user/export/cmd_convert.c */
int cmd_ctl(int argc, char **argv);     /* user/ctl/cmd_ctl.c */
#endif
