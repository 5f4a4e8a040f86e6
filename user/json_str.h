/* SPDX-License-Identifier: MIT */
/*
 * json_str.h - a C string as a JSON string literal: quotes, backslashes and
 * control characters escaped, invalid UTF-8 replaced by U+FFFD.
 */
#ifndef BTRACE_JSON_STR_H
#define BTRACE_JSON_STR_H
#include <stdio.h>

/* At most maxlen bytes of s (stops at NUL; NULL is ""), quotes included. */
void bt_json_str(FILE *out, const char *s, size_t maxlen);
#endif
