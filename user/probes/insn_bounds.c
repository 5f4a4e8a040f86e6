// SPDX-License-Identifier: MIT
/*
 * insn_bounds.c - instruction boundaries of a function, by decoding it from
 * its entry with capstone. A uprobe at an offset inside an instruction
 * replaces a byte of that instruction with a breakpoint: the kernel refuses
 * some such probes but not all, and the ones it takes silently change what
 * the program computes. A maintained decoder, not a length table of ours:
 * x86 lengths (prefixes, VEX/EVEX, new extensions) are easy to get wrong.
 */
#include <errno.h>
#include <capstone/capstone.h>
#include "insn_bounds.h"

static int open_decoder(csh *h)
{
#if defined(__x86_64__)
	return cs_open(CS_ARCH_X86, CS_MODE_64, h) == CS_ERR_OK ? 0 : -ENOMEM;
#elif defined(__aarch64__)
	return cs_open(CS_ARCH_ARM64, CS_MODE_ARM, h) == CS_ERR_OK ? 0 : -ENOMEM;
#else
	(void)h;
	return -ENOTSUP;
#endif
}

int bt_insn_boundary(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t off, struct bt_insn_where *w)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t addr = vaddr;
	cs_insn *insn;
	csh h;
	int r;

	w->prev = 0;
	w->next = 0;
	w->has_next = 0;
	w->bad_at = 0;
	r = open_decoder(&h);
	if (r)
		return r;
	insn = cs_malloc(h);
	if (!insn) {
		cs_close(&h);
		return -ENOMEM;
	}
	r = -EILSEQ;
	/* Walk instruction by instruction: each start is a boundary. */
	while (addr - vaddr <= off) {
		uint64_t start = addr - vaddr;

		if (start == off) {
			r = 1;
			break;
		}
		if (!left || !cs_disasm_iter(h, &p, &left, &addr, insn)) {
			w->bad_at = start;
			r = -EILSEQ;
			break;
		}
		w->prev = start;
		if (addr - vaddr > off) {
			w->next = addr - vaddr;
			w->has_next = 1;
			r = 0;
			break;
		}
	}
	cs_free(insn, 1);
	cs_close(&h);
	return r;
}
