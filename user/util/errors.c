// SPDX-License-Identifier: MIT
/*
 * errors.c - the error convention's helpers (see errors.h). No dependency
 * beyond libc: libbtrace links it into applications.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "errors.h"

int bt_errs(char **err, int e, const char *fmt, ...)
{
	va_list ap;
	char *m = NULL;

	if (!err)
		return -e;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	free(*err);
	*err = m ? m : strdup("out of memory formatting a message");
	return -e;
}

int bt_strcatf(char **s, const char *fmt, ...)
{
	va_list ap;
	char *add = NULL, *n;
	size_t have = *s ? strlen(*s) : 0, len;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&add, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	len = (size_t)r;
	n = realloc(*s, have + len + 1);
	if (!n) {
		free(add);
		return -ENOMEM;
	}
	memcpy(n + have, add, len + 1);
	free(add);
	*s = n;
	return 0;
}

void bt_verrmsg(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
}

void bt_errmsg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bt_verrmsg(err, errlen, fmt, ap);
	va_end(ap);
}

int bt_errf(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bt_verrmsg(err, errlen, fmt, ap);
	va_end(ap);
	return -e;
}

