// SPDX-License-Identifier: MIT
/*
 * export_file.c - a dump converted to a file or standard output: pre-pass,
 * the exporter the options name, and atomic file output (a temporary file
 * renamed over the target when complete, removed on error).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export.h"
#include "atomic_file.h"

/* ---- file output ------------------------------------------------------------ */

static int run_export(const struct bt_dump *d, struct bt_sink *s, const struct bt_export_opts *o,
		      struct bt_export_stats *st, char *err, size_t errlen)
{
	struct bt_export_prep p;
	int r = bt_export_prepare_filtered(d, &p, o->filter);
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	if (o->format == BT_EXPORT_JSON)
		r = bt_export_json(&p, s, o, st, err, errlen);
	else if (o->format == BT_EXPORT_PPROF)
		r = bt_export_pprof(&p, s, o, st, err, errlen);
	else
		r = bt_export_perfetto(&p, s, o, st, err, errlen);
	bt_export_prep_free(&p);
	return r;
}

int bt_export_file(const struct bt_dump *d, const char *path, const struct bt_export_opts *o,
		   struct bt_export_stats *st, char *err, size_t errlen)
{
	struct bt_export_stats dummy;
	char tmp[PATH_MAX];
	int fd, r;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (err && errlen)
		err[0] = '\0';
	if (!strcmp(path, "-")) {
		struct bt_sink *s = bt_sink_new(STDOUT_FILENO, o->gzip || o->format == BT_EXPORT_PPROF);
		if (!s) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		r = run_export(d, s, o, st, err, errlen);
		st->raw_bytes = bt_sink_raw_bytes(s);
		int f = bt_sink_finish(s, &st->bytes);
		if (!r && f) {
			r = f;
			snprintf(err, errlen, "write error on standard output: %s", strerror(-f));
		}
		return r;
	}

	fd = bt_atomic_create(path, tmp, sizeof(tmp), err, errlen);
	if (fd < 0)
		return fd;
	/* mkostemp's 0600 stays: a trace holds what the dump (0600) holds. */
	struct bt_sink *s = bt_sink_new(fd, o->gzip || o->format == BT_EXPORT_PPROF);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		bt_atomic_abort(fd, tmp);
		return -ENOMEM;
	}
	r = run_export(d, s, o, st, err, errlen);
	st->raw_bytes = bt_sink_raw_bytes(s);
	int f = bt_sink_finish(s, &st->bytes);
	if (!r && f < 0) {
		r = f;
		snprintf(err, errlen, "write error on %s: %s", tmp, strerror(-f));
	}
	if (r < 0) {
		bt_atomic_abort(fd, tmp);
		return r;
	}
	return bt_atomic_commit(fd, tmp, path, err, errlen);
}
