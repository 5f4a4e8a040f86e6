// SPDX-License-Identifier: MIT
/*
 * log.c - one diagnostic line per call, with a priority when stderr is the
 * systemd journal (log.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"

int bt_verbose;

/* -1 unknown yet. Only written with the same value by any racing thread. */
static volatile int journal = -1;

/* systemd sets JOURNAL_STREAM=DEV:INODE of the stream it connected to
 * stdout/stderr; a redirected stderr (2>file) no longer matches. */
static int detect_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* 1 if standard error is the journal's stream (decided once, at the first line). */
static int bt_log_is_journal(void)
{
	if (journal < 0)
		journal = detect_journal();
	return journal;
}

/* "btrace-bpf" or "btrace-bpf COMMAND": the prefix of a line on a terminal. */
static char prog[64] = BT_PROG;

void bt_log_set_command(const char *command)
{
	snprintf(prog, sizeof(prog), "%s%s%s", BT_PROG, command ? " " : "", command ? command : "");
}

const char *bt_log_prog(void)
{
	return prog;
}

void bt_vlog(int level, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (level < BT_LOG_ERR)
		level = BT_LOG_ERR;
	if (level > BT_LOG_DEBUG)
		level = BT_LOG_DEBUG;
	/* The whole message, however long: never cut. */
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	/* One write (stderr is unbuffered), so lines of several threads never
	 * interleave. */
	if (bt_log_is_journal())
		fprintf(stderr, "<%d>%s\n", level, msg ? msg : "(out of memory formatting a message)");
	else
		fprintf(stderr, "%s: %s\n", prog, msg ? msg : "(out of memory formatting a message)");
	free(msg);
}

void bt_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bt_vlog(level, fmt, ap);
	va_end(ap);
}

/* The journal stream: whole lines, each prefixed with the level. */
struct line_sink {
	int level;
	char buf[1024];
	size_t len;
};

static void sink_flush(struct line_sink *ls)
{
	fprintf(stderr, "<%d>%.*s\n", ls->level, (int)ls->len, ls->buf);
	ls->len = 0;
}

static ssize_t sink_write(void *cookie, const char *p, size_t n)
{
	struct line_sink *ls = cookie;

	if (!bt_log_is_journal())
		return (ssize_t)fwrite(p, 1, n, stderr);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n' || ls->len == sizeof(ls->buf))
			sink_flush(ls);
		if (p[i] != '\n')
			ls->buf[ls->len++] = p[i];
	}
	return (ssize_t)n;
}

FILE *bt_log_stream(int level)
{
	static struct line_sink sinks[BT_LOG_DEBUG + 1];
	static FILE *streams[BT_LOG_DEBUG + 1];
	cookie_io_functions_t io = { .write = sink_write };

	if (level < BT_LOG_ERR)
		level = BT_LOG_ERR;
	if (level > BT_LOG_DEBUG)
		level = BT_LOG_DEBUG;
	if (!streams[level]) {
		sinks[level].level = level;
		streams[level] = fopencookie(&sinks[level], "w", io);
		if (!streams[level])
			return stderr;
		setvbuf(streams[level], NULL, _IOLBF, 0);
	}
	return streams[level];
}
