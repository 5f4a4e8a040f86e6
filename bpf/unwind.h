/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * unwind.h - the unwind tables user stacks are walked with in BPF
 * (bpf/unwind_walk.bpf.h), shared by the BPF side and the recorder that
 * fills them (user/stacks/unwind_procs.c). docs/unwinding.md has the design.
 *
 * Rows: compiled from a binary's .eh_frame, one per change of the rules,
 * sorted by address, all binaries' rows in one array (`unwind_rows`, sized
 * by --unwind-mem). A row holds from its pc up to the next row's.
 * Processes: tgid -> its executable mappings, sorted by start, each naming
 * its binary's run of rows (shared by every process mapping that binary).
 */
#ifndef BTRACE_UNWIND_H
#define BTRACE_UNWIND_H

#define BT_UNWIND_MAPS 128      /* executable mappings per process (more: counted, not walked) */
#define BT_UNWIND_MAPS_STEPS 8  /* binary-search steps over them: log2(BT_UNWIND_MAPS) + 1 */
#define BT_UNWIND_ROW_STEPS 25  /* over a binary's rows: at most 2^24 rows per binary */
#define BT_UNWIND_MAX_ROWS (1u << 24)

/* What the caller's frame is, at a pc (x86-64; the return address is
 * always at CFA - 8). */
enum bt_urow_kind {
	BT_UROW_NONE = 0,   /* no call-frame information here: frame pointers, if valid */
	BT_UROW_SP = 1,     /* CFA = rsp + cfa_off8 * 8 */
	BT_UROW_BP = 2,     /* CFA = rbp + cfa_off8 * 8 */
	BT_UROW_PLT = 3,    /* PLT stub: CFA = rsp + 8, + 8 more from byte cfa_off8 of each 16 */
	BT_UROW_END = 4,    /* the return address is undefined: the outermost frame (_start, clone) */
	BT_UROW_SIGNAL = 5, /* a signal frame (sigreturn trampoline): the walk stops, marked */
};
struct bt_unwind_row {
	__u32 pc;       /* ELF address (p_vaddr space) where the row starts */
	__u8 kind;      /* enum bt_urow_kind */
	__s8 bp_off8;   /* rbp saved at CFA + bp_off8 * 8; 0: rbp unchanged */
	__u16 cfa_off8; /* see kind */
};

enum bt_umap_kind {
	BT_UMAP_ROWS = 0,    /* a file with rows [first, first + count) (count 0: frame pointers) */
	BT_UMAP_NOTABLE = 1, /* a file whose table is missing (memory bound, no .eh_frame): frame pointers */
	BT_UMAP_ANON = 2,    /* executable anonymous memory (JIT): the walk stops there, marked */
};
struct bt_unwind_map {
	__u64 start;     /* mapping [start, start + len) */
	__u32 len;
	__u32 elf_start; /* the ELF address of `start` */
	__u32 first;     /* index of its first row in unwind_rows */
	__u32 count : 24, kind : 8;
};
struct bt_unwind_proc {
	__u32 n; /* mappings in m, sorted by start */
	__u32 reserved;
	struct bt_unwind_map m[BT_UNWIND_MAPS];
};

/* Why a user stack walk ended (user-space counters, bt_stack_stats). */
#endif
