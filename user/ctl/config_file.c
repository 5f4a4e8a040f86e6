// SPDX-License-Identifier: MIT
/*
 * config_file.c - options from a configuration file (config_file.h).
 *
 * The file only produces "--NAME[=VALUE]" arguments; the command's own
 * parser checks the values, so a file and a command line accept exactly the
 * same things and say the same things about bad values.
 *
 * The file is trusted like the command line (its on-dump runs as the
 * recorder's user, root), so it must be a regular file that only its
 * reader or root can change; it is opened without blocking (a FIFO) and
 * read to at most MAX_FILE bytes (/dev/zero is not a regular file anyway).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "config_file.h"
#include "errors.h"
#include "trusted_file.h"

#define MAX_LINE 4096
#define MAX_FILE (1 << 20) /* bytes of configuration read at most */

struct args {
	int n, cap;
	char **v;
};

/* Where each argument taken from the file came from: line[i] for argument
 * i (0: the command line's), for bt_config_origin. One file per process. */
static struct {
	char *path;
	int *line;
	int n;
} origin;

static int note_origin(int i, int lineno)
{
	if (i >= origin.n) {
		int n = (i + 1) * 2;
		int *l = realloc(origin.line, (size_t)n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memset(l + origin.n, 0, (size_t)(n - origin.n) * sizeof(*l));
		origin.line = l;
		origin.n = n;
	}
	origin.line[i] = lineno;
	return 0;
}

const char *bt_config_origin(int i, char *buf, size_t len)
{
	if (!origin.path || i < 0 || i >= origin.n || !origin.line[i])
		return NULL;
	snprintf(buf, len, "%s:%d", origin.path, origin.line[i]);
	return buf;
}

static int push(struct args *a, char *s)
{
	if (!s)
		return -ENOMEM;
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **v = realloc(a->v, (size_t)cap * sizeof(*v));

		if (!v) {
			free(s);
			return -ENOMEM;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}


static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A "quoted value" in place: 0, or -1 if the quotes are not closed at its end. */
static int unquote(char *v)
{
	char *w = v;
	size_t n = strlen(v);

	if (n < 2 || v[0] != '"')
		return v[0] == '"' ? -1 : 0;
	for (char *r = v + 1; *r; r++) {
		if (*r == '\\' && (r[1] == '"' || r[1] == '\\')) {
			*w++ = *++r;
		} else if (*r == '"') {
			if (r[1])
				return -1; /* text after the closing quote */
			*w = '\0';
			return 0;
		} else {
			*w++ = *r;
		}
	}
	return -1;
}

static int truth(const char *v)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		return 1;
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		return 0;
	return -1;
}

/* The configuration in *f, opened if it is a regular file no other user
 * can change: 0, or -errno with the reason in err. */
static int open_trusted(const char *path, FILE **f, char *err, size_t errlen)
{
	int fd = bt_open_regular(path);
	struct stat st;
	uid_t me = geteuid();

	if (fd == -ENOEXEC)
		return bt_errf(err, errlen, EINVAL, "configuration %s is not a regular file", path);
	if (fd < 0)
		return bt_errf(err, errlen, -fd, "cannot read configuration %s: %s", path, strerror(-fd));
	if (fstat(fd, &st) || (st.st_uid != me && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return bt_errf(err, errlen, EPERM,
			    "configuration %s may be changed by another user (owner uid %u, mode %03o): it must "
			    "belong to root%s and be writable by its owner only (chmod go-w)",
			    path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), me ? " or you" : "");
	}
	if (st.st_size > MAX_FILE) {
		close(fd);
		return bt_errf(err, errlen, EFBIG, "configuration %s is larger than %d bytes", path, MAX_FILE);
	}
	*f = fdopen(fd, "r");
	if (!*f) {
		int e = errno;
		close(fd);
		return bt_errf(err, errlen, e, "cannot read configuration %s: %s", path, strerror(e));
	}
	return 0;
}

static int read_file(const char *path, bt_cfg_lookup lookup, void *ctx, struct args *a, char *err, size_t errlen)
{
	FILE *f = NULL;
	char line[MAX_LINE + 2];
	int lineno = 0, ret = open_trusted(path, &f, err, errlen);
	long total = 0;

	if (ret)
		return ret;
	while (!ret && fgets(line, sizeof(line), f)) {
		total += (long)strlen(line);
		if (total > MAX_FILE) { /* grew since it was looked at */
			ret = bt_errf(err, errlen, EFBIG, "configuration %s is larger than %d bytes", path, MAX_FILE);
			break;
		}
		char *s, *eq, *name, *val = NULL, *arg;
		size_t nl;
		int kind;

		lineno++;
		nl = strlen(line);
		if (nl > MAX_LINE && line[nl - 1] != '\n') {
			ret = bt_errf(err, errlen, EINVAL, "%s:%d: line longer than %d characters", path, lineno, MAX_LINE);
			break;
		}
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq) {
			*eq = '\0';
			val = trim(eq + 1);
		}
		name = trim(s);
		if (name[0] == '-' && name[1] == '-')
			name += 2; /* "--events = x" is what was meant */
		kind = *name ? lookup(name, ctx) : BT_CFG_UNKNOWN;
		if (kind == BT_CFG_UNKNOWN || !strcmp(name, "config")) {
			ret = bt_errf(err, errlen, EINVAL, "%s:%d: unknown option '%s' (see btrace-bpf record --help)", path,
				   lineno, name);
			break;
		}
		if (val && unquote(val)) {
			ret = bt_errf(err, errlen, EINVAL, "%s:%d: %s: unbalanced quotes in '%s'", path, lineno, name, val);
			break;
		}
		if (kind == BT_CFG_VALUE) {
			if (!val || !*val) {
				ret = bt_errf(err, errlen, EINVAL, "%s:%d: %s needs a value: %s = VALUE", path, lineno, name,
					   name);
				break;
			}
			if (asprintf(&arg, "--%s=%s", name, val) < 0)
				arg = NULL;
		} else {
			int t = val ? truth(val) : 1;

			if (t < 0) {
				ret = bt_errf(err, errlen, EINVAL, "%s:%d: %s is a switch: give it alone, or = yes / no", path,
					   lineno, name);
				break;
			}
			if (!t)
				continue;
			if (asprintf(&arg, "--%s", name) < 0)
				arg = NULL;
		}
		ret = push(a, arg);
		if (!ret)
			ret = note_origin(a->n - 1, lineno);
		if (ret)
			bt_errf(err, errlen, ENOMEM, "out of memory");
	}
	if (!ret && ferror(f))
		ret = bt_errf(err, errlen, EIO, "cannot read configuration %s: %s", path, strerror(errno));
	fclose(f);
	return ret;
}

void bt_config_free(int argc, char **argv)
{
	free(origin.path);
	free(origin.line);
	memset(&origin, 0, sizeof(origin));
	if (!argv)
		return;
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

int bt_config_expand(int argc, char **argv, bt_cfg_lookup lookup, void *ctx, int *nargc, char ***nargv,
		     char *err, size_t errlen)
{
	struct args a = { 0 };
	const char *path = NULL;
	int cfg_at = -1, ret = 0;

	for (int i = 1; i < argc; i++) {
		const char *p = NULL;
		int skip = 0;

		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc)
				return bt_errf(err, errlen, EINVAL, "--config needs a FILE");
			p = argv[i + 1];
			skip = 1;
		} else if (!strncmp(argv[i], "--config=", 9)) {
			p = argv[i] + 9;
		}
		if (!p)
			continue;
		if (path)
			return bt_errf(err, errlen, EINVAL, "--config given twice");
		if (!*p)
			return bt_errf(err, errlen, EINVAL, "--config needs a FILE");
		path = p;
		cfg_at = i;
		i += skip;
	}
	ret = push(&a, strdup(argv[0]));
	if (!ret && path && !(origin.path = strdup(path)))
		ret = -ENOMEM;
	if (!ret && path)
		ret = read_file(path, lookup, ctx, &a, err, errlen);
	for (int i = 1; !ret && i < argc; i++) {
		if (i == cfg_at) {
			i += !strcmp(argv[i], "--config"); /* and its FILE */
			continue;
		}
		ret = push(&a, strdup(argv[i]));
	}
	if (ret) {
		if (ret == -ENOMEM)
			bt_errf(err, errlen, ENOMEM, "out of memory");
		bt_config_free(a.n, a.v);
		return ret;
	}
	*nargc = a.n;
	*nargv = a.v;
	return 0;
}
