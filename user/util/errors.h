/* SPDX-License-Identifier: MIT */
/*
 * errors.h - the one error convention (docs/architecture.md, "Errors"):
 * a function returns 0 (or a count) on success and -errno on failure; one
 * that explains its failures writes one line into (err, errlen) or into a
 * malloc'd *err, with these helpers.
 */
#ifndef BTRACE_ERRORS_H
#define BTRACE_ERRORS_H
#include <stdarg.h>
#include <stddef.h>

/* One line into err (when err and errlen are set), then return -e. */
int bt_errf(char *err, size_t errlen, int e, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The line alone, where the return is decided elsewhere. */
void bt_errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void bt_verrmsg(char *err, size_t errlen, const char *fmt, va_list ap);

/* Messages of any length (never cut): *err becomes a malloc'd line, the one
 * it held is freed (err NULL: none kept), then -e is returned. The caller
 * frees *err. */
int bt_errs(char **err, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Append to the malloc'd string *s (NULL: a new one). 0, or -ENOMEM (*s kept). */
int bt_strcatf(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
