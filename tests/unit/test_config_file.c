// SPDX-License-Identifier: MIT
/*
 * test_config_file.c - `record --config FILE`: lines become long options
 * placed before the command line's, quoting, switches, and a clear
 * FILE:LINE error for every kind of bad line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/stat.h>
#include "harness.h"
#include "config_file.h"

static char path[] = "/tmp/btrace-cfg-XXXXXX";

/* A small option table: switches waking, no-final-dump; the rest take values. */
static int lookup(const char *name, void *ctx)
{
	static const char *const values[] = { "events", "buffer-size", "uprobe", "on-dump", "output-dir", NULL };
	(void)ctx;
	if (!strcmp(name, "waking") || !strcmp(name, "no-final-dump"))
		return BT_CFG_SWITCH;
	for (int i = 0; values[i]; i++)
		if (!strcmp(name, values[i]))
			return BT_CFG_VALUE;
	return BT_CFG_UNKNOWN;
}

static void write_cfg(const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

/* Expand "record ARGS..." with the file; the result joined by '|'. */
static int expand(const char *text, char *out, size_t len, char *err, int n, ...)
{
	char *argv[16] = { "record" };
	char **nv = NULL;
	int nc = 0, ret;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		argv[i + 1] = va_arg(ap, char *);
	va_end(ap);
	if (text)
		write_cfg(text);
	err[0] = '\0';
	ret = bt_config_expand(n + 1, argv, lookup, NULL, &nc, &nv, err, 256);
	out[0] = '\0';
	if (ret == 0) {
		for (int i = 0; i < nc; i++)
			snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "|" : "", nv[i]);
		CHECK(nv[nc] == NULL, "argv is NULL-terminated");
		bt_config_free(nc, nv);
	}
	return ret;
}

static void test_lines_become_options(void)
{
	char out[1024], err[256];
	int r = expand("# service options\n"
		       "\n"
		       "events = sched,irq\n"
		       "  buffer-size=16M   \n"
		       "\twaking\n"
		       "uprobe = libc:malloc\n"
		       "uprobe = libc:free\n"
		       "on-dump = \"  ship \\\"$1\\\" # not a comment  \"\n"
		       "no-final-dump = no\n"
		       "--output-dir = /var/lib/x\n",
		       out, sizeof(out), err, 2, "--config", path);
	CHECK(r == 0, "%s", err);
	CHECK(!strcmp(out, "record|--events=sched,irq|--buffer-size=16M|--waking|--uprobe=libc:malloc|"
			   "--uprobe=libc:free|--on-dump=  ship \"$1\" # not a comment  |--output-dir=/var/lib/x"),
	      "got %s", out);
}

static void test_command_line_comes_after(void)
{
	char out[1024], err[256];
	char arg[300];

	snprintf(arg, sizeof(arg), "--config=%s", path);
	int r = expand("buffer-size = 16M\n", out, sizeof(out), err, 4, "-m", "32M", arg, "-v");
	CHECK(r == 0, "%s", err);
	CHECK(!strcmp(out, "record|--buffer-size=16M|-m|32M|-v"), "got %s", out);
	r = expand(NULL, out, sizeof(out), err, 2, "-m", "8M");
	CHECK(r == 0 && !strcmp(out, "record|-m|8M"), "no --config: a copy (%s)", out);
	/* After "--" nothing is an option. */
	r = expand(NULL, out, sizeof(out), err, 3, "--", "--config", "x");
	CHECK(r == 0 && !strcmp(out, "record|--|--config|x"), "got %s", out);
}

static void test_bad_lines(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "events = sched\nbufer-size = 1M\n", ":2: unknown option 'bufer-size'" },
		{ "buffer-size\n", ":1: buffer-size needs a value" },
		{ "buffer-size =   \n", ":1: buffer-size needs a value" },
		{ "waking = maybe\n", ":1: waking is a switch" },
		{ "on-dump = \"ship\n", ":1: on-dump: unbalanced quotes" },
		{ "on-dump = \"a\" b\n", ":1: on-dump: unbalanced quotes" },
		{ "config = /etc/other\n", ":1: unknown option 'config'" },
		{ "= 5\n", ":1: unknown option ''" },
	};
	char out[1024], err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = expand(cases[i].text, out, sizeof(out), err, 2, "--config", path);
		CHECK(r == -EINVAL && strstr(err, cases[i].want) && strstr(err, path), "case %zu: %d '%s'", i, r,
		      err);
	}
	/* A line too long to be a line. */
	char *big = malloc(10000);
	memset(big, 'a', 9998);
	memcpy(big, "events = ", 9);
	big[9998] = '\n';
	big[9999] = '\0';
	int r = expand(big, out, sizeof(out), err, 2, "--config", path);
	CHECK(r == -EINVAL && strstr(err, ":1: line longer than"), "%s", err);
	free(big);
	r = expand(NULL, out, sizeof(out), err, 2, "--config", "/nonexistent/btrace.conf");
	CHECK(r == -ENOENT && strstr(err, "cannot read configuration /nonexistent/btrace.conf"), "%s", err);
	r = expand(NULL, out, sizeof(out), err, 1, "--config");
	CHECK(r == -EINVAL && strstr(err, "--config needs a FILE"), "%s", err);
	r = expand(NULL, out, sizeof(out), err, 4, "--config", path, "--config", path);
	CHECK(r == -EINVAL && strstr(err, "twice"), "%s", err);
}

/* A file whose on-dump runs as root must be root's to change; a FIFO or a
 * device is refused at once (it used to block, or loop on /dev/zero). */
static void test_untrusted_files(void)
{
	char out[1024], err[256], fifo[64];
	int r;

	write_cfg("events = sched\n");
	chmod(path, 0666);
	r = expand(NULL, out, sizeof(out), err, 2, "--config", path);
	CHECK(r == -EPERM && strstr(err, "may be changed by another user") && strstr(err, "mode 666"),
	      "a world-writable file: %d %s", r, err);
	chmod(path, 0620);
	r = expand(NULL, out, sizeof(out), err, 2, "--config", path);
	CHECK(r == -EPERM, "a group-writable file: %d %s", r, err);
	chmod(path, 0644);
	if (geteuid() == 0 && chown(path, 65534, 65534) == 0) {
		r = expand(NULL, out, sizeof(out), err, 2, "--config", path);
		CHECK(r == -EPERM && strstr(err, "owner uid 65534"), "a file of user nobody: %d %s", r, err);
		CHECK(chown(path, 0, 0) == 0, "chown back");
	}
	r = expand(NULL, out, sizeof(out), err, 2, "--config", path);
	CHECK(r == 0, "the owner's file, 0644: %d %s", r, err);

	snprintf(fifo, sizeof(fifo), "%s.fifo", path);
	REQUIRE(mkfifo(fifo, 0600) == 0, "mkfifo");
	alarm(10); /* the old code blocked here for ever */
	r = expand(NULL, out, sizeof(out), err, 2, "--config", fifo);
	CHECK(r == -EINVAL && strstr(err, "not a regular file"), "a FIFO: %d %s", r, err);
	r = expand(NULL, out, sizeof(out), err, 2, "--config", "/dev/zero");
	CHECK(r == -EINVAL && strstr(err, "not a regular file"), "/dev/zero: %d %s", r, err);
	alarm(0);
	unlink(fifo);

	/* more than 1 MiB of comments: refused by its size */
	FILE *f = fopen(path, "w");
	for (int i = 0; f && i < (1 << 20) / 64 + 1; i++)
		fprintf(f, "# %61s\n", "padding");
	if (f)
		fclose(f);
	r = expand(NULL, out, sizeof(out), err, 2, "--config", path);
	CHECK(r == -EFBIG && strstr(err, "larger than"), "a 1 MiB file: %d %s", r, err);
}

int main(void)
{
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	RUN(test_lines_become_options);
	RUN(test_command_line_comes_after);
	RUN(test_bad_lines);
	RUN(test_untrusted_files);
	unlink(path);
	return h_done();
}
