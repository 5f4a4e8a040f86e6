// SPDX-License-Identifier: MIT
/*
 * export_names.c - function names as the exporters write them (see
 * export_names.h).
 */
#include <string.h>
#include "export_names.h"

static int ver_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

size_t bt_export_sym_len(const char *name)
{
	size_t n = strlen(name);
	const char *at = strrchr(name, '@');
	if (!at || at == name || at[1] < 'A' || at[1] > 'Z')
		return n;
	for (const char *c = at + 1; *c; c++)
		if (!ver_char(*c))
			return n;
	if (at - 1 > name && at[-1] == '@')
		at--;
	return (size_t)(at - name);
}
