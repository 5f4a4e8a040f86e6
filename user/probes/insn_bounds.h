/* SPDX-License-Identifier: MIT */
/* insn_bounds.h - is an offset into a function the start of one of its
 * instructions? Decoded with capstone (x86-64, arm64). */
#ifndef BTRACE_INSN_BOUNDS_H
#define BTRACE_INSN_BOUNDS_H
#include <stddef.h>
#include <stdint.h>

/* What bt_insn_boundary() found. */
struct bt_insn_where {
	uint64_t prev;    /* the last instruction start at or before off */
	uint64_t next;    /* the first instruction start after off (valid if has_next) */
	int has_next;
	uint64_t bad_at;  /* -EILSEQ: offset of the undecodable bytes */
};

/*
 * Decode code[0..len) (the function's bytes from its entry, at link-time
 * address vaddr) from the start up to off.
 *   1        off starts an instruction
 *   0        off is inside one: w->prev and w->next are the starts around it
 *   -EILSEQ  bytes before off do not decode (w->bad_at)
 *   -ENOTSUP no decoder for this architecture
 *   -ENOMEM
 */
int bt_insn_boundary(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t off, struct bt_insn_where *w);
#endif
