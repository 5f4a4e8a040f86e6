// SPDX-License-Identifier: MIT
/*
 * json_str.c - JSON string literals (json_str.h).
 */
#include <stdio.h>
#include <string.h>
#include "json_str.h"
#include "pbwriter.h"

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
		} else if ((l = pbw_utf8_seq_len(u + i, n - i)) == 0) {
			fputs("\\ufffd", out);
			i++;
		} else {
			fwrite(u + i, 1, l, out);
			i += l;
		}
	}
	fputc('"', out);
}
