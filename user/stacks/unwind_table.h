/* SPDX-License-Identifier: MIT */
/*
 * unwind_table.h - a binary's call-frame information (.eh_frame, and
 * .debug_frame in it or in its debug file) compiled into the rows the BPF
 * walker reads (bpf/unwind.h): for each address range, where the caller's
 * frame is (CFA from rsp, rbp or another register, or read from the
 * stack at one of them; PLT stubs, the outermost frame, signal frames)
 * and where rbp was saved. Read with libdw's CFI interpreter.
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
#define BT_UNWIND_ROWS_VERSION 4 /* 2: .debug_frame read too; 3: keyed by source CRC too; 4: CFA on any register, deref */

struct bt_unwind_rows {
	struct bt_unwind_row *rows; /* sorted by pc, no two neighbours alike */
	uint32_t n;
	uint32_t fdes;        /* FDEs read */
	uint32_t debug_fdes;  /* of them, found in .debug_frame */
	uint32_t unsupported; /* rows whose rules the walker cannot follow (kept as NONE) */
};

/* Compile elf's .eh_frame (found through PT_GNU_EH_FRAME, so stripped
 * files work) and its .debug_frame, or if it has none, that of debug (its
 * separate debug file; NULL: none); where both describe an address,
 * .eh_frame's rules are used. 0, -ENOENT (neither has any), -ENOTSUP (an
 * encoding or an address the rows cannot hold), -ENOMEM, -ECANCELED
 * (*cancel became non-zero: a big binary under an emulated CPU takes
 * seconds, and a recorder stopping must not wait for it; NULL: never).
 * Free with bt_unwind_rows_free. */
int bt_unwind_rows_build(Elf *elf, Elf *debug, struct bt_unwind_rows *out, const atomic_int *cancel);
/* The same within a budget: stop(arg) asked every few hundred FDEs (NULL:
 * never), -ECANCELED when it says so; more than BT_UNWIND_MAX_FDES FDEs:
 * -EFBIG before any is read. */
#define BT_UNWIND_MAX_FDES (4u << 20)
int bt_unwind_rows_build_within(Elf *elf, Elf *debug, struct bt_unwind_rows *out, int (*stop)(void *), void *arg);
/* A CRC of elf's call-frame information as stored (.eh_frame_hdr,
 * .eh_frame, .debug_frame): two files share rows only if their build-ids
 * and this agree, since a build-id is a note anyone can write. */
uint32_t bt_unwind_source_crc(Elf *elf);
/* Whether elf has a .debug_frame (else its debug file is worth a look). */
int bt_unwind_has_debug_frame(Elf *elf);
/* Rows whose CFA is a register the walker knows in the leaf frame only
 * (not rsp or rbp): followed there, frame pointers above it. */
uint32_t bt_unwind_rows_leaf_only(const struct bt_unwind_rows *r);
void bt_unwind_rows_free(struct bt_unwind_rows *r);
#endif
