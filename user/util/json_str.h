/* SPDX-License-Identifier: MIT */
/*
 * json_str.h - text for JSON and protobuf strings: UTF-8 sequences
 * checked, and a C string as a JSON string literal.
 */
#ifndef BTRACE_JSON_STR_H
#define BTRACE_JSON_STR_H
#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the valid UTF-8 sequence at s (n bytes available), or 0
 * if it is not one (overlong, surrogate, truncated, beyond U+10FFFF). */
size_t bt_utf8_seq_len(const unsigned char *s, size_t n);

/* A C string as a JSON string literal: quotes, backslashes and control
 * characters escaped, invalid UTF-8 replaced by U+FFFD. */
/* At most maxlen bytes of s (stops at NUL; NULL is ""), quotes included. */
void bt_json_str(FILE *out, const char *s, size_t maxlen);
#endif
