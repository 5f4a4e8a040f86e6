// SPDX-License-Identifier: MIT
/*
 * dump_stack_names.c - how a dump's stacks are spelled wherever they are
 * shown (report, every exporter): a truncation reason's words, a symbol
 * name without its ELF version (see dump_stacks.h).
 */
#include <stdio.h>
#include <string.h>
#include "dump_stacks.h"

const char *bt_stack_why_text(unsigned why, char *buf, size_t len)
{
	switch (why) {
	case BT_WHY_UNKNOWN:
		return NULL;
	case BT_WHY_NO_PROC:
		return "process not loaded yet";
	case BT_WHY_NO_MAP:
		return "no mapping";
	case BT_WHY_ANON:
		return "anonymous code";
	case BT_WHY_SIGNAL:
		return "signal frame";
	case BT_WHY_BAD_FRAME:
		return "bad frame";
	case BT_WHY_NO_TABLE:
		return "no unwind table";
	case BT_WHY_DEPTH:
		return "depth limit";
	case BT_WHY_NOT_CODE:
		return "not a code address";
	case BT_WHY_NO_ROOT:
		return "walk ended early";
	case BT_WHY_COPY_SHORT:
		return "stack copy ended";
	}
	snprintf(buf, len, "reason %u", why); /* a newer recorder's */
	return buf;
}

static int ver_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

size_t bt_sym_name_len(const char *name)
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

const char *bt_frame_origin(const struct bt_dump_stacks *s, const struct bt_dump_frame *f)
{
	if (f->map != BT_DMAP_NONE || !f->sym || f->sym > s->nsyms)
		return NULL;
	return (f->off & BT_FRAME_PY_BIT) ? "python" : "jit";
}

int bt_py_drop_line(char *name)
{
	size_t n = strlen(name), i;
	int line = 0;

	if (n < 4 || name[n - 1] != ')')
		return 0;
	for (i = n - 1; i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9'; i--)
		;
	if (i == n - 1 || i < 2 || name[i - 1] != ':' || n - 1 - i > 9)
		return 0;
	for (size_t k = i; k < n - 1; k++)
		line = line * 10 + (name[k] - '0');
	memmove(name + i - 1, name + n - 1, 2); /* ")" and its NUL */
	return line;
}
