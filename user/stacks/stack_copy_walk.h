/* SPDX-License-Identifier: MIT */
/*
 * stack_copy_walk.h - a user stack walked on in user space from the copy
 * the BPF side took where its walk stopped at a binary whose table was not
 * built yet (bpf/stack_copy.bpf.h), once the table is published: the same
 * rows, read the same way, and the same rules as the BPF walker's step
 * (bt_uw_step, bpf/unwind_walk.bpf.h), on the copied bytes instead of the
 * live stack. Pure: no process is read (it is often gone by then).
 */
#ifndef BTRACE_STACK_COPY_WALK_H
#define BTRACE_STACK_COPY_WALK_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"
#include "unwind.h"

/* Where a file's table is looked up. */
struct bt_copy_tables {
	/* The table of file k into *f: 0, or -ENOENT (not built yet). */
	int (*file)(void *arg, const struct bt_unwind_fkey *k, struct bt_unwind_file *f);
	void *arg;
	const struct bt_unwind_row *rows; /* the rows array all tables index */
	uint32_t nrows;                   /* its length */
};

/* The frames found after the copy's stop frame, as the BPF walker emits
 * them (struct bt_stack_frame_file: ip, ino, dev_off). */
struct bt_copy_walk {
	struct bt_stack_frame_file fr[BT_MAX_FRAMES];
	/* The stop frame as the copy's mappings place it (ino 0, dev_off
	 * BT_FRAME_NO_FILE: in none): its definition may have named it
	 * before the recorder knew the file's path (stack_table.c). */
	struct bt_stack_frame_file stop;
	uint32_t n;
	uint32_t why; /* 0: complete (the outermost frame reached); else enum bt_stack_why */
};

#define BT_COPYW_DONE 0
#define BT_COPYW_WAIT 1 /* a binary on the way has no table yet: try again later */
/* Walk on from copy c (len bytes, checked whole: a bad record is
 * -EINVAL). At most max_new frames are added (more: why = depth limit).
 * give_up: a binary still without a table ends the walk there (why = no
 * table) instead of BT_COPYW_WAIT. */
int bt_copy_walk(const struct bt_raw_stack_copy *c, size_t len, const struct bt_copy_tables *tb, uint32_t max_new,
		 int give_up, struct bt_copy_walk *out);
/* The length a copy record of len bytes must have, or 0 if its header
 * does not hold (shorter than the header, or its counts past len). */
size_t bt_copy_record_len(const struct bt_raw_stack_copy *c, size_t len);
#endif
