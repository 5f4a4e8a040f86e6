/* SPDX-License-Identifier: MIT */
/*
 * unwind_table.h - a binary's .eh_frame compiled into the rows the BPF
 * walker reads (bpf/unwind.h): for each address range, where the caller's
 * frame is (CFA from rsp or rbp, PLT stubs, the outermost frame, signal
 * frames) and where rbp was saved. Read with libdw's CFI interpreter.
 */
#ifndef BTRACE_UNWIND_TABLE_H
#define BTRACE_UNWIND_TABLE_H
#include <gelf.h>
#include <stdatomic.h>
#include <stdint.h>
#include <linux/types.h>
#include "unwind.h"

/* The rows' format and the rules that compile them: a table cached on
 * disk (unwind_cache.h) is used only if it says the same. Bump it when
 * either changes. */
#define BT_UNWIND_ROWS_VERSION 1

struct bt_unwind_rows {
	struct bt_unwind_row *rows; /* sorted by pc, no two neighbours alike */
	uint32_t n;
	uint32_t fdes;        /* FDEs read */
	uint32_t unsupported; /* rows whose rules the walker cannot follow (kept as NONE) */
};

/* Compile elf's .eh_frame (found through PT_GNU_EH_FRAME, so stripped
 * files work). 0, -ENOENT (no .eh_frame_hdr table), -ENOTSUP (an encoding or
 * an address the rows cannot hold), -ENOMEM, -ECANCELED (*cancel became
 * non-zero: a big binary under an emulated CPU takes seconds, and a
 * recorder stopping must not wait for it; NULL: never). Free with
 * bt_unwind_rows_free. */
int bt_unwind_rows_build(Elf *elf, struct bt_unwind_rows *out, const atomic_int *cancel);
void bt_unwind_rows_free(struct bt_unwind_rows *r);
#endif
