// SPDX-License-Identifier: MIT
/*
 * loader_copies.c - the loader's pending stack copies (stack_copies.h):
 * their tables are the BPF side's own, read here as the BPF walker reads
 * them, in the loader's one mapping of the rows array, each file's table looked up in
 * unwind_files. Opened with the drain when stacks are walked with unwind
 * tables; the drain adds and finishes copies.
 */
#include <errno.h>
#include <stdint.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "trigger.h"
#include "loader.h"
#include "loader_int.h"
#include "stack_copies.h"
#include "unwind.h"
#include "record.skel.h"

static int files_lookup(void *arg, const struct bt_unwind_fkey *k, struct bt_unwind_file *f)
{
	return bpf_map_lookup_elem((int)(intptr_t)arg, k, f) ? -ENOENT : 0;
}

int bt_loader_copies_open(struct bt_loader *l)
{
	if (!l->unwind_rows || !l->stacks)
		return 0;
	uint32_t nrows = bpf_map__max_entries(l->skel->maps.unwind_rows);
	struct bt_copy_tables tb = { files_lookup, (void *)(intptr_t)bpf_map__fd(l->skel->maps.unwind_files),
				     l->unwind_rows, nrows };
	l->copies = bt_stack_copies_new(&tb);
	return l->copies ? 0 : -ENOMEM;
}

void bt_loader_copies_close(struct bt_loader *l)
{
	bt_stack_copies_free(l->copies);
	l->copies = NULL;
}

void bt_loader_copy_counts(const struct bt_loader *l, struct bt_stack_copy_counts *c)
{
	bt_stack_copies_counts(l->copies, c);
}
