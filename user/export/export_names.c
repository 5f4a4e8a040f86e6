// SPDX-License-Identifier: MIT
/*
 * export_names.c - stacks and function names as the exporters write them
 * (see export_names.h).
 */
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "export_names.h"

size_t bt_export_sym_len(const char *name)
{
	return bt_sym_name_len(name); /* report strips the same way */
}

const char *bt_export_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const struct bt_dump_stack *bt_export_stack(const struct bt_dump_stacks *s, uint32_t id)
{
	return id && !BT_STACK_ID_GONE(id) && id <= s->nstacks ? &s->stacks[id - 1] : NULL;
}

int bt_export_stack_lost(const struct bt_dump_stacks *s, uint32_t id)
{
	const struct bt_dump_stack *st = bt_export_stack(s, id);
	return BT_STACK_ID_GONE(id) || (st && (st->flags & BT_STACK_F_UNDEFINED));
}

uint64_t bt_export_sample_period(const struct bt_dump_stacks *s)
{
	uint64_t hz = s ? s->counters[BT_STKC_SAMPLE_HZ] : 0;
	return hz ? 1000000000ull / hz : 10000000ull;
}

int bt_export_pair_labelled(const struct bt_dump_stacks *s, uint32_t kstack, uint32_t ustack)
{
	const struct bt_dump_stack *k = bt_export_stack(s, kstack), *u = bt_export_stack(s, ustack);
	return bt_export_stack_lost(s, kstack) || bt_export_stack_lost(s, ustack) ||
	       !((k && k->nframes) || (u && u->nframes));
}
