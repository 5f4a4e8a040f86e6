// SPDX-License-Identifier: MIT
/*
 * json_str.c - UTF-8 sequences and JSON string literals (json_str.h).
 */
#include <stdio.h>
#include <string.h>
#include "json_str.h"

size_t bt_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp, min;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	cp = c & (0xffu >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void bt_json_str(FILE *out, const char *s, size_t maxlen)
{
	size_t n = s ? strnlen(s, maxlen) : 0;
	const unsigned char *u = (const unsigned char *)s;

	fputc('"', out);
	for (size_t i = 0; i < n;) {
		unsigned c = u[i];
		size_t l;

		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc((int)c, out);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			i++;
		} else if ((l = bt_utf8_seq_len(u + i, n - i)) == 0) {
			fputs("\\ufffd", out);
			i++;
		} else {
			fwrite(u + i, 1, l, out);
			i += l;
		}
	}
	fputc('"', out);
}
