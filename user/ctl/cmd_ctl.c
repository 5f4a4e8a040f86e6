// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c - `btrace-bpf ctl`: talk to a running recorder's control socket.
 * Options with argp, as every subcommand (docs/architecture.md, Hacking).
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ctl.h"
#include "cli.h"
#include "util.h"

#define COMMANDS "status, dump, resize, app-resize, trigger, stop, upgrade"

static const char doc[] =
	"Control a running `btrace-bpf record`.\n"
	"With neither --pid nor --ctl, the only recorder running is used."
	"\v"
	"Commands:\n"
	"  status           size, event rate, latest window, losses, dumps, probes\n"
	"  dump [-o FILE]   write a dump now; prints the path written\n"
	"  resize SIZE      grow or shrink the buffer while recording (K/M/G)\n"
	"  app-resize SIZE  a new buffer of SIZE for every traced application\n"
	"  trigger NAME     fire the trigger NAME (record --trigger ...,name=NAME)\n"
	"  stop             final dump (unless --no-final-dump) and exit\n"
	"  upgrade          run the recorder's binary again (a new version installed), same\n"
	"                   pid, on the same buffer: its history is dumped first (reason upgrade)\n\n"
	"Examples:\n"
	"  sudo btrace-bpf ctl status\n"
	"  sudo btrace-bpf ctl resize 256M      # large buffer for a critical phase\n"
	"  sudo btrace-bpf ctl dump -o /tmp/launch.btd\n"
	"  sudo btrace-bpf ctl --pid 1234 resize 16M\n"
	"  sudo btrace-bpf ctl trigger manual   # record --trigger ctl,name=manual\n"
	"  sudo btrace-bpf ctl --timeout 20m dump   # a dump of a huge buffer on a slow machine";

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0, "the recorder with this pid (socket " BT_CTL_DIR "/PID.sock)", 0 },
	{ "ctl", 'c', "PATH", 0, "the recorder listening on PATH (record --ctl PATH)", 0 },
	{ "timeout", 't', "TIME", 0,
	  "give up waiting for the reply after TIME, e.g. 30s, 10m (default 5m; the request may still run)", 0 },
	BT_CLI_OPTION_H,
	{ 0 },
};

struct ctl_args {
	char path[PATH_MAX];
	long pid;      /* --pid, 0: none */
	unsigned timeout_s; /* --timeout; 0: BT_CTL_TIMEOUT_S */
	char **cmd;    /* the command and its arguments: the rest of the line */
	int ncmd;
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct ctl_args *a = state->input;

	switch (key) {
	case 'p': {
		char *end;
		long pid = strtol(arg, &end, 10);

		if (*arg == 0 || *end || pid <= 0 || pid > INT_MAX)
			argp_error(state, "bad pid '%s': give the pid of a running recorder (pidof btrace-bpf)", arg);
		a->pid = pid;
		snprintf(a->path, sizeof(a->path), "%s/%ld.sock", BT_CTL_DIR, pid);
		break;
	}
	case 't': {
		uint64_t ns;

		if (parse_duration(arg, &ns) || ns < 1000000000ull || ns > 86400 * 1000000000ull)
			argp_error(state, "bad --timeout '%s': give a time from 1s to 24h, e.g. 30s, 10m", arg);
		a->timeout_s = (unsigned)(ns / 1000000000ull);
		break;
	}
	case 'c':
		a->pid = 0;
		snprintf(a->path, sizeof(a->path), "%s", arg);
		break;
	case ARGP_KEY_ARG:
		/* The command: it and everything after it are its own (`dump -o
		 * FILE`), not options of ctl. */
		a->cmd = &state->argv[state->next - 1];
		a->ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_NO_ARGS:
		argp_error(state, "missing command (" COMMANDS ")");
		break;
	default:
		return bt_cli_common_key(key, state);
	}
	return 0;
}

/* The single live recorder's socket, or an error naming the choices. */
static int find_socket(char *path, size_t len)
{
	DIR *d = opendir(BT_CTL_DIR);
	char found[8][PATH_MAX], pids[256] = "";
	int n = 0, stale = 0;
	struct dirent *e;

	if (!d) {
		bt_err("no running recorder found (%s: %s)", BT_CTL_DIR,
			errno == EACCES ? "permission denied: run as root" : strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		char p[PATH_MAX], why[256];
		size_t l = strlen(e->d_name);
		FILE *null;
		int r;

		if (l < 6 || strcmp(e->d_name + l - 5, ".sock"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", BT_CTL_DIR, e->d_name);
		null = fopen("/dev/null", "w");
		r = bt_ctl_request(p, "ping", 10, null, why, sizeof(why));
		if (null)
			fclose(null);
		if (r < 0 && r != -EACCES && r != -EPERM) {
			stale++;
			continue;
		}
		if (n < 8)
			snprintf(found[n], sizeof(found[n]), "%s", p);
		snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%.*s", n ? ", " : "", (int)(l - 5),
			 e->d_name);
		n++;
	}
	closedir(d);
	if (n == 0) {
		bt_err("no running recorder found in %s%s", BT_CTL_DIR,
			stale ? " (only stale sockets)" : "");
		return -1;
	}
	if (n > 1) {
		bt_err("several recorders are running (pids %s): pick one with --pid PID", pids);
		return -1;
	}
	snprintf(path, len, "%s", found[0]);
	return 0;
}

/* A usage error of the command part: one line, exit status 2 (as argp's). */
static int usage_error(const char *fmt, const char *arg)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, arg);
	bt_err("%s", msg);
	return 2;
}

int cmd_ctl(int argc, char **argv)
{
	struct argp argp = { options, parse_opt, "COMMAND [ARG...]", doc, NULL, NULL, NULL };
	struct ctl_args a = { .path = "" };
	char line[BT_CTL_MAX_LINE] = "", why[512] = "";
	const char *cmd;
	int r, n;

	bt_cli_parse(&argp, "ctl", argc, argv, ARGP_IN_ORDER, &a);
	if (a.pid && access(a.path, F_OK)) {
		bt_err("no recorder with pid %ld (no %s)", a.pid, a.path);
		return 1;
	}
	cmd = a.cmd[0];
	n = a.ncmd;
	if (strcmp(cmd, "status") && strcmp(cmd, "dump") && strcmp(cmd, "resize") && strcmp(cmd, "app-resize") &&
	    strcmp(cmd, "trigger") && strcmp(cmd, "stop") && strcmp(cmd, "upgrade"))
		return usage_error("unknown command '%s' (" COMMANDS ")", cmd);
	if (!strcmp(cmd, "resize") || !strcmp(cmd, "app-resize")) {
		uint64_t sz;

		if (n != 2 || parse_size(a.cmd[1], &sz))
			return usage_error("usage: %s SIZE, a positive size like 256M or 1G", cmd);
	} else if (!strcmp(cmd, "trigger")) {
		if (n != 2)
			return usage_error("usage: %s NAME", cmd);
	} else if (!strcmp(cmd, "dump")) {
		const char *path;

		if (bt_ctl_dump_args(n, a.cmd, &path))
			return usage_error("%s", BT_CTL_DUMP_USAGE);
	} else if (n != 1) {
		return usage_error("%s takes no arguments", cmd);
	}
	for (int i = 0; i < n; i++) {
		if (strchr(a.cmd[i], '\n') || strchr(a.cmd[i], ' ') ||
		    strlen(line) + strlen(a.cmd[i]) + 2 >= sizeof(line))
			return usage_error("bad argument '%s'", a.cmd[i]);
		if (i)
			strcat(line, " ");
		strcat(line, a.cmd[i]);
	}
	if (!a.path[0] && find_socket(a.path, sizeof(a.path)))
		return 1;
	r = bt_ctl_request(a.path, line, a.timeout_s, stdout, why, sizeof(why));
	if (r) {
		bt_err("%s", why);
		return 1;
	}
	return 0;
}
