// SPDX-License-Identifier: MIT
/*
 * handover_exec.c - the in-place upgrade (ctl upgrade): this process runs
 * the binary it started from again (a package installed since put a new
 * file at that path), with its own command line and the buffer's memfd
 * as --resume-fd. Same pid: systemd, the parent and the control socket's
 * users see one recorder that records on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "handover.h"

#define CMDLINE_MAX (256u << 10) /* the kernel's own bound on arguments is larger; ours is a recorder's */

/* /proc/self/cmdline into *buf, NUL-separated; the count of words, or -errno. */
static int read_cmdline(char **buf, size_t *len)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), n = 0;
	char *b = malloc(CMDLINE_MAX + 1);
	size_t got = 0;
	ssize_t r;

	if (fd < 0 || !b) {
		n = fd < 0 ? -errno : -ENOMEM;
		free(b);
		if (fd >= 0)
			close(fd);
		return n;
	}
	while (got < CMDLINE_MAX && (r = read(fd, b + got, CMDLINE_MAX - got)) > 0)
		got += (size_t)r;
	close(fd);
	if (got == CMDLINE_MAX || !got) {
		free(b);
		return got ? -E2BIG : -EINVAL;
	}
	if (b[got - 1] != '\0')
		b[got++] = '\0';
	for (size_t i = 0; i < got; i++)
		n += b[i] == '\0';
	*buf = b;
	*len = got;
	return n;
}

int bt_ho_exec(const char *exe, int memfd, char *err, size_t errlen)
{
	char *cl = NULL, fdarg[16];
	size_t len = 0;
	int n = read_cmdline(&cl, &len), k = 0;

	if (n < 0) {
		snprintf(err, errlen, "cannot read this recorder's command line: %s", strerror(-n));
		return n;
	}
	char **argv = calloc((size_t)n + 3, sizeof(*argv));
	if (!argv) {
		free(cl);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* Its words, less a --resume-fd of its own (this start's came from
	 * systemd or a parent; the next one's is this memfd). */
	for (char *w = cl; w < cl + len; w += strlen(w) + 1) {
		if (!strcmp(w, "--resume-fd")) {
			w += strlen(w) + 1;
			if (w >= cl + len)
				break;
			continue;
		}
		if (!strncmp(w, "--resume-fd=", 12))
			continue;
		argv[k++] = w;
	}
	snprintf(fdarg, sizeof(fdarg), "%d", memfd);
	argv[k++] = "--resume-fd";
	argv[k++] = fdarg;
	argv[k] = NULL;
	/* The memfd crosses the exec; nothing else of ours needs to. */
	int ret;
	if (fcntl(memfd, F_SETFD, 0)) {
		ret = -errno;
		snprintf(err, errlen, "the buffer's memory file: %s", strerror(-ret));
	} else {
		execv(exe, argv);
		ret = -errno;
		snprintf(err, errlen, "cannot execute %s: %s", exe, strerror(-ret));
	}
	free(argv);
	free(cl);
	return ret ? ret : -EINVAL;
}
