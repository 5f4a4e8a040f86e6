// SPDX-License-Identifier: MIT
/*
 * unwind_table.c - .eh_frame and .debug_frame -> unwind rows (see
 * unwind_table.h).
 *
 * The FDEs are found in .eh_frame_hdr's sorted table (what the C++ runtime
 * and libgcc use too) and by walking .debug_frame's entries; within each FDE, libdw's dwarf_cfi_addrframe gives
 * the rules at an address and the range they hold for, so the rows come
 * out one range after the other. A gap between FDEs gets a NONE row, so an
 * address in it never borrows its predecessor's rules.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "trusted_file.h"
#include "unwind_table.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define MAX_REG 15 /* DWARF 0-15: the general registers; a row's kind byte holds one (unwind.h) */
#define MAX_ROWS_PER_FDE 65536u
#define DEBUG_FRAME_MAX (64u << 20) /* bytes of .debug_frame read (libc's .eh_frame: 0.2 MiB) */

struct out {
	struct bt_unwind_rows *r;
	uint32_t cap;
};

static int push(struct out *o, uint64_t pc, struct bt_unwind_row row)
{
	struct bt_unwind_rows *r = o->r;

	if (pc > UINT32_MAX)
		return -ENOTSUP;
	row.pc = (uint32_t)pc;
	if (r->n) {
		struct bt_unwind_row *p = &r->rows[r->n - 1];
		if (p->pc == row.pc) { /* an empty range before: this one wins */
			*p = row;
			goto merge;
		}
		if (p->kind == row.kind && p->bp_off8 == row.bp_off8 && p->cfa_off8 == row.cfa_off8)
			return 0;
	}
	if (r->n == o->cap) {
		uint32_t cap = o->cap ? o->cap * 2 : 4096;
		void *n;
		if (cap > BT_UNWIND_MAX_ROWS)
			return -ENOTSUP;
		n = realloc(r->rows, cap * sizeof(*r->rows));
		if (!n)
			return -ENOMEM;
		r->rows = n;
		o->cap = cap;
	}
	r->rows[r->n++] = row;
	return 0;
merge:
	if (r->n >= 2) {
		struct bt_unwind_row *p = &r->rows[r->n - 2], *q = &r->rows[r->n - 1];
		if (p->kind == q->kind && p->bp_off8 == q->bp_off8 && p->cfa_off8 == q->cfa_off8)
			r->n--;
	}
	return 0;
}

/* A register rule "saved at CFA + off": libdw's expression for it. */
static int cfa_offset(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (nops == 1) {
		*off = 0;
		return 0;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 0;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) && ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return 0;
	}
	return -1;
}

/* A register + offset operation (DW_OP_bregN, or DW_OP_bregx as libdw gives the CFA). */
static int breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return 1;
	}
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return 1;
	}
	return 0;
}

/* CFA = *(reg + off) + add, as OpenSSL's assembly says it when it keeps
 * the entry rsp in its frame (.cfi_cfa_expression %rsp+40,deref,+8):
 * DW_OP_bregN off, DW_OP_deref, then DW_OP_plus_uconst add or nothing.
 * Only what a row holds (BT_UROW_DEREF). */
static int deref_cfa(const Dwarf_Op *ops, size_t nops, unsigned *reg, int64_t *off, int64_t *add)
{
	if (nops < 2 || nops > 3 || !breg(&ops[0], reg, off) || *reg > MAX_REG || ops[1].atom != DW_OP_deref)
		return 0;
	*add = 0;
	if (nops == 3) {
		if (ops[2].atom != DW_OP_plus_uconst || ops[2].number > 63 * 8)
			return 0;
		*add = (int64_t)ops[2].number;
	}
	return *off % 8 == 0 && *off / 8 >= -512 && *off / 8 <= 511 && *add % 8 == 0;
}

/* The row for frame f's rules. */
static struct bt_unwind_row classify(Dwarf_Frame *f, int signal, uint32_t *unsupported)
{
	struct bt_unwind_row row = { 0 };
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off, c;
	unsigned reg;

	if (signal) {
		row.kind = BT_UROW_SIGNAL;
		return row;
	}
	if (dwarf_frame_register(f, REG_RA, mem, &ops, &nops) != 0)
		goto unsupported;
	if (nops == 0 && ops == mem) {
		row.kind = BT_UROW_END; /* undefined: nobody called this */
		return row;
	}
	if (cfa_offset(ops, nops, &off) || off != -8)
		goto unsupported;
	if (dwarf_frame_cfa(f, &ops, &nops) != 0 || nops == 0)
		goto unsupported;
	if (nops == 1 && breg(&ops[0], &reg, &c) && reg <= MAX_REG) {
		if (c < 0 || c % 8 || c / 8 > UINT16_MAX)
			goto unsupported;
		row.kind = reg == REG_RSP ? BT_UROW_SP : reg == REG_RBP ? BT_UROW_BP : BT_UROW_REG | reg << 4;
		row.cfa_off8 = (uint16_t)(c / 8);
	} else if (deref_cfa(ops, nops, &reg, &c, &off)) {
		row.kind = BT_UROW_DEREF | reg << 4;
		row.cfa_off8 = BT_UROW_DEREF_ENC(c / 8, off / 8);
	} else if (nops >= 5 && breg(&ops[0], &reg, &c) && reg == REG_RSP && c == 8 && breg(&ops[1], &reg, &c) &&
		   reg == REG_RA) {
		/* The PLT's: rsp + 8 + ((rip & 15) >= N) * 8 (binutils'
		 * expression); N is the literal compared with. */
		size_t k;
		for (k = 2; k + 1 < nops; k++)
			if (ops[k].atom == DW_OP_and && ops[k + 1].atom >= DW_OP_lit0 && ops[k + 1].atom <= DW_OP_lit31)
				break;
		if (k + 1 >= nops)
			goto unsupported;
		row.kind = BT_UROW_PLT;
		row.cfa_off8 = (uint16_t)(ops[k + 1].atom - DW_OP_lit0);
	} else
		goto unsupported;
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &nops) == 0 && nops &&
	    cfa_offset(ops, nops, &off) == 0 && off % 8 == 0 && off / 8 >= INT8_MIN && off / 8 <= INT8_MAX && off)
		row.bp_off8 = (int8_t)(off / 8);
	return row;
unsupported:
	(*unsupported)++;
	row = (struct bt_unwind_row){ 0 };
	return row;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* An FDE's start, and which call-frame information has it. */
struct fde {
	uint64_t addr;
	uint32_t src; /* SRC_EH, SRC_DEBUG */
};
enum { SRC_EH, SRC_DEBUG };

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->src > y->src) - (x->src < y->src); /* .eh_frame's first: it wins a tie */
}

static int add_fde(struct fde **v, size_t *n, size_t *cap, uint64_t addr, uint32_t src)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		void *p = realloc(*v, nc * sizeof(**v));
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct fde){ addr, src };
	return 0;
}

/* The FDEs' start addresses from .eh_frame_hdr. */
static int eh_starts(Elf *elf, struct fde **v, size_t *n, size_t *cap)
{
	size_t nph;
	GElf_Phdr ph;
	Elf_Data *d = NULL;
	uint64_t hdr_vaddr = 0;

	if (elf_getphdrnum(elf, &nph))
		return -ENOENT;
	for (size_t i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			if (ph.p_filesz > 12 + 8ull * BT_UNWIND_MAX_FDES)
				return -EFBIG; /* not read: a sparse file can declare gigabytes */
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			hdr_vaddr = ph.p_vaddr;
			break;
		}
	if (!d || d->d_size < 12)
		return -ENOENT;
	const uint8_t *p = d->d_buf;
	/* version 1; eh_frame_ptr a 4-byte encoding; count udata4; table datarel sdata4 */
	if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || p[2] != 0x03 || p[3] != 0x3b)
		return -ENOTSUP;
	uint32_t cnt = rd32(p + 8);
	if ((uint64_t)cnt * 8 > d->d_size - 12)
		return -ENOTSUP;
	for (uint32_t i = 0; i < cnt; i++)
		if (add_fde(v, n, cap, hdr_vaddr + (uint64_t)(int64_t)(int32_t)rd32(p + 12 + 8ull * i), SRC_EH))
			return -ENOMEM;
	return 0;
}

/* elf's .debug_frame section (decompressed), or NULL. */
static Elf_Data *debug_frame_of(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!elf || gelf_getclass(elf) != ELFCLASS64 || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(name, ".debug_frame"))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;
			if (!gelf_getchdr(scn, &ch) || ch.ch_size > DEBUG_FRAME_MAX || elf_compress(scn, 0, 0) < 0)
				return NULL;
		} else if (sh.sh_size > DEBUG_FRAME_MAX) {
			return NULL;
		}
		return elf_getdata(scn, NULL);
	}
	return NULL;
}

int bt_unwind_has_debug_frame(Elf *elf)
{
	return debug_frame_of(elf) != NULL;
}

#define MAX_XRANGES 8
struct xranges {
	uint32_t n;
	struct { uint64_t lo, hi; } r[MAX_XRANGES];
};

/* The executable PT_LOADs' addresses of elf. */
static void exec_ranges(Elf *elf, struct xranges *x)
{
	size_t nph = 0;
	GElf_Phdr ph;

	x->n = 0;
	if (elf_getphdrnum(elf, &nph))
		nph = 0;
	for (size_t i = 0; i < nph && x->n < MAX_XRANGES; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			x->r[x->n].lo = ph.p_vaddr;
			x->r[x->n++].hi = ph.p_vaddr + ph.p_memsz;
		}
}

/* The FDEs' start addresses in .debug_frame (DWARF 32 or 64, 8-byte
 * addresses: x86-64; CIEs skipped). Only FDEs in the binary's code: a
 * linker leaves those of discarded functions at 0 or a placeholder. */
static int debug_starts(Elf_Data *d, const struct xranges *x, struct fde **v, size_t *n, size_t *cap)
{
	const uint8_t *p = d->d_buf, *end = p + d->d_size;

	while (end - p >= 4) {
		uint64_t len = rd32(p), id;
		size_t hl = 4, idl = 4;
		if (len == 0xffffffffu) {
			if (end - p < 12)
				break;
			memcpy(&len, p + 4, 8);
			hl = 12;
			idl = 8;
		}
		if (len > (uint64_t)(end - p) - hl)
			break; /* cut short: what came before stands */
		const uint8_t *q = p + hl, *e = q + len;
		if ((size_t)(e - q) >= idl + 16) {
			id = idl == 4 ? rd32(q) : 0;
			if (idl == 8)
				memcpy(&id, q, 8);
			if (id != (idl == 4 ? 0xffffffffull : UINT64_MAX)) { /* not a CIE: an FDE */
				uint64_t addr, range;
				memcpy(&addr, q + idl, 8);
				memcpy(&range, q + idl + 8, 8);
				int in_code = 0;
				for (uint32_t k = 0; k < x->n; k++)
					in_code |= addr >= x->r[k].lo && addr < x->r[k].hi;
				if (range && in_code && add_fde(v, n, cap, addr, SRC_DEBUG))
					return -ENOMEM;
			}
		}
		p = e;
	}
	return 0;
}

/* A section's raw bytes into crc (by name; none: unchanged). */
static uLong crc_section(Elf *elf, size_t shstrndx, const char *want, uLong crc)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	Elf_Data *d;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, want) && (d = elf_rawdata(scn, NULL)) && d->d_buf)
			return crc32(crc, d->d_buf, (uInt)d->d_size);
	return crc;
}

uint32_t bt_unwind_source_crc(Elf *elf)
{
	size_t shstrndx;
	uLong crc = crc32(0L, Z_NULL, 0);

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	crc = crc_section(elf, shstrndx, ".eh_frame_hdr", crc);
	crc = crc_section(elf, shstrndx, ".eh_frame", crc);
	crc = crc_section(elf, shstrndx, ".debug_frame", crc);
	return (uint32_t)crc;
}

static int cancel_set(void *arg)
{
	/* relaxed: a hint, read again at the next FDE batch */
	return atomic_load_explicit((const atomic_int *)arg, memory_order_relaxed);
}

int bt_unwind_rows_build(Elf *elf, Elf *debug, struct bt_unwind_rows *r, const atomic_int *cancel)
{
	return bt_unwind_rows_build_within(elf, debug, r, cancel ? cancel_set : NULL, (void *)cancel);
}

int bt_unwind_rows_build_within(Elf *elf, Elf *debug, struct bt_unwind_rows *r, int (*stop)(void *), void *arg)
{
	struct out o = { r, 0 };
	struct fde *starts = NULL;
	size_t n = 0, cap = 0;
	Dwarf_CFI *cfi[2] = { NULL, NULL };
	Dwarf *dw = NULL;
	Elf_Data *df;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = eh_starts(elf, &starts, &n, &cap);
	if (ret == -ENOMEM || ret == -EFBIG)
		goto out;
	if (!ret && !(cfi[SRC_EH] = dwarf_getcfi_elf(elf)))
		n = 0;
	/* .debug_frame: code built without unwind tables (-g
	 * -fno-asynchronous-unwind-tables) has its rules there only, in the
	 * binary or its debug file. */
	Elf *dfe = elf;
	if (!(df = debug_frame_of(elf)) && (df = debug_frame_of(debug)))
		dfe = debug;
	/* libdw reads and inflates every debug section when it opens a
	 * file: a small file can declare a huge one. */
	if (df && bt_elf_debug_bytes(dfe) <= BT_UNTRUSTED_READ_MAX &&
	    (dw = dwarf_begin_elf(dfe, DWARF_C_READ, NULL)) && (cfi[SRC_DEBUG] = dwarf_getcfi(dw))) {
		struct xranges x;
		size_t before = n;
		exec_ranges(elf, &x);
		if (debug_starts(df, &x, &starts, &n, &cap)) {
			ret = -ENOMEM;
			goto out;
		}
		r->debug_fdes = (uint32_t)(n - before);
	}
	if (!n) {
		ret = ret ? ret : -ENOENT;
		goto out;
	}
	if (n > BT_UNWIND_MAX_FDES) {
		ret = -EFBIG; /* a binary no real program has: refused, named */
		goto out;
	}
	ret = 0;
	/* Sorted by the linker; not trusted to be, but checked first: 4 M
	 * FDEs take seconds to sort, before the first look at stop. */
	size_t sorted = 1;
	while (sorted < n && cmp_fde(&starts[sorted - 1], &starts[sorted]) <= 0)
		sorted++;
	if (sorted < n)
		qsort(starts, n, sizeof(*starts), cmp_fde);
	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t addr = starts[i].addr, bound = i + 1 < n ? starts[i + 1].addr : UINT64_MAX;
		Dwarf_CFI *c = cfi[starts[i].src];
		uint32_t k;

		if (i && starts[i].addr == starts[i - 1].addr)
			continue;
		if (stop && (i & 255) == 0 && stop(arg)) {
			ret = -ECANCELED;
			break;
		}
		r->fdes++;
		for (k = 0; k < MAX_ROWS_PER_FDE && addr < bound && !ret; k++) {
			Dwarf_Frame *f = NULL;
			Dwarf_Addr s, e;
			bool sig = false;

			if (dwarf_cfi_addrframe(c, addr, &f) != 0)
				break;
			if (dwarf_frame_info(f, &s, &e, &sig) < 0 || e <= addr) {
				free(f);
				break;
			}
			ret = push(&o, addr, classify(f, sig, &r->unsupported));
			free(f);
			addr = e;
		}
		if (!ret && addr < bound)
			ret = push(&o, addr, (struct bt_unwind_row){ .kind = BT_UROW_NONE });
	}
out:
	if (cfi[SRC_EH])
		dwarf_cfi_end(cfi[SRC_EH]);
	if (dw)
		dwarf_end(dw); /* ends cfi[SRC_DEBUG] too */
	free(starts);
	if (ret)
		bt_unwind_rows_free(r);
	return ret;
}

uint32_t bt_unwind_rows_leaf_only(const struct bt_unwind_rows *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->n; i++) {
		unsigned k = BT_UROW_KIND(r->rows[i].kind), reg = BT_UROW_REGNO(r->rows[i].kind);
		n += (k == BT_UROW_REG || k == BT_UROW_DEREF) && reg != REG_RSP && reg != REG_RBP;
	}
	return n;
}

void bt_unwind_rows_free(struct bt_unwind_rows *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
