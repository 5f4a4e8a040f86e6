// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c - `btrace-bpf ctl`: talk to a running recorder's control socket.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ctl.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: btrace-bpf ctl [--pid PID | --ctl PATH] COMMAND [ARGS]\n"
		"Control a running `btrace-bpf record`.\n\n"
		"Commands:\n"
		"  status             size, event rate, latest continuous window, loss counters, dumps, probes\n"
		"  dump [-o FILE]     write a dump now; prints the path written\n"
		"  resize SIZE        grow or shrink the buffer while recording (K/M/G suffixes)\n"
		"  app-resize SIZE    give every application traced in-process (btrace.h) a new buffer of SIZE\n"
		"  trigger NAME       fire the recorder's trigger NAME (record --trigger ...,name=NAME)\n"
		"  stop               final dump (unless --no-final-dump) and exit\n\n"
		"Options:\n"
		"  -p, --pid PID      the recorder with this pid (socket %s/PID.sock)\n"
		"  -c, --ctl PATH     the recorder listening on PATH (record --ctl PATH)\n"
		"  -h, --help         this help\n\n"
		"With neither option, the only recorder running is used.\n\n"
		"Examples:\n"
		"  sudo btrace-bpf ctl status\n"
		"  sudo btrace-bpf ctl resize 256M      # large buffer for a critical phase\n"
		"  sudo btrace-bpf ctl dump -o /tmp/launch.btd\n"
		"  sudo btrace-bpf ctl --pid 1234 resize 16M\n"
		"  sudo btrace-bpf ctl trigger manual   # record --trigger ctl,name=manual\n",
		BT_CTL_DIR);
}

/* The single live recorder's socket, or an error naming the choices. */
static int find_socket(char *path, size_t len)
{
	DIR *d = opendir(BT_CTL_DIR);
	char found[8][PATH_MAX], pids[256] = "";
	int n = 0, stale = 0;
	struct dirent *e;

	if (!d) {
		fprintf(stderr, "btrace-bpf: no running recorder found (%s: %s)\n", BT_CTL_DIR,
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
		r = bt_ctl_request(p, "ping", null, why, sizeof(why));
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
		fprintf(stderr, "btrace-bpf: no running recorder found in %s%s\n", BT_CTL_DIR,
			stale ? " (only stale sockets)" : "");
		return -1;
	}
	if (n > 1) {
		fprintf(stderr, "btrace-bpf: several recorders are running (pids %s): pick one with --pid PID\n", pids);
		return -1;
	}
	snprintf(path, len, "%s", found[0]);
	return 0;
}

int cmd_ctl(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char path[PATH_MAX] = "", line[BT_CTL_MAX_LINE] = "", why[512] = "";
	const char *cmd;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *end;
			long pid = strtol(optarg, &end, 10);

			if (*optarg == 0 || *end || pid <= 0 || pid > INT_MAX) {
				fprintf(stderr, "btrace-bpf: ctl: bad pid '%s'\n", optarg);
				return 2;
			}
			snprintf(path, sizeof(path), "%s/%ld.sock", BT_CTL_DIR, pid);
			if (access(path, F_OK)) {
				fprintf(stderr, "btrace-bpf: no recorder with pid %ld (no %s)\n", pid, path);
				return 1;
			}
			break;
		}
		case 'c':
			snprintf(path, sizeof(path), "%s", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "btrace-bpf: ctl: missing command (status, dump, resize, app-resize, trigger, stop)\n");
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "status") && strcmp(cmd, "dump") && strcmp(cmd, "resize") && strcmp(cmd, "app-resize") &&
	    strcmp(cmd, "trigger") && strcmp(cmd, "stop")) {
		fprintf(stderr, "btrace-bpf: ctl: unknown command '%s' (status, dump, resize, app-resize, trigger, stop)\n",
			cmd);
		return 2;
	}
	if (!strcmp(cmd, "resize") || !strcmp(cmd, "app-resize")) {
		uint64_t sz;

		if (argc - optind != 2 || parse_size(argv[optind + 1], &sz)) {
			fprintf(stderr, "btrace-bpf: ctl: usage: %s SIZE, a positive size like 256M or 1G\n", cmd);
			return 2;
		}
	} else if (!strcmp(cmd, "trigger")) {
		if (argc - optind != 2) {
			fprintf(stderr, "btrace-bpf: ctl: usage: trigger NAME\n");
			return 2;
		}
	} else if (!strcmp(cmd, "dump")) {
		if (!(argc - optind == 1 || (argc - optind == 3 && !strcmp(argv[optind + 1], "-o")))) {
			fprintf(stderr, "btrace-bpf: ctl: usage: dump [-o FILE]\n");
			return 2;
		}
	} else if (argc - optind != 1) {
		fprintf(stderr, "btrace-bpf: ctl: %s takes no arguments\n", cmd);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (strchr(argv[i], '\n') || strchr(argv[i], ' ') ||
		    strlen(line) + strlen(argv[i]) + 2 >= sizeof(line)) {
			fprintf(stderr, "btrace-bpf: ctl: bad argument '%s'\n", argv[i]);
			return 2;
		}
		if (i > optind)
			strcat(line, " ");
		strcat(line, argv[i]);
	}
	if (!path[0] && find_socket(path, sizeof(path)))
		return 1;
	r = bt_ctl_request(path, line, stdout, why, sizeof(why));
	if (r) {
		fprintf(stderr, "btrace-bpf: %s\n", why);
		return 1;
	}
	return 0;
}
