// SPDX-License-Identifier: MIT
/*
 * export_names.c - stacks and function names as the exporters write them
 * (see export_names.h).
 */
#include <string.h>
#include <linux/types.h>
#include "events.h"
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

const char *bt_export_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const struct bt_dump_stack *bt_export_stack(const struct bt_dump_stacks *s, uint32_t id)
{
	return id && id != BT_STACK_LOST && id <= s->nstacks ? &s->stacks[id - 1] : NULL;
}

int bt_export_stack_lost(const struct bt_dump_stacks *s, uint32_t id)
{
	const struct bt_dump_stack *st = bt_export_stack(s, id);
	return id == BT_STACK_LOST || (st && (st->flags & BT_STACK_F_UNDEFINED));
}

int bt_export_pair_labelled(const struct bt_dump_stacks *s, uint32_t kstack, uint32_t ustack)
{
	const struct bt_dump_stack *k = bt_export_stack(s, kstack), *u = bt_export_stack(s, ustack);
	return bt_export_stack_lost(s, kstack) || bt_export_stack_lost(s, ustack) ||
	       !((k && k->nframes) || (u && u->nframes));
}
