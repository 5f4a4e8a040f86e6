/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * unwind.h - the unwind tables user stacks are walked with in BPF
 * (bpf/unwind_walk.bpf.h), shared by the BPF side and the recorder that
 * fills them (user/stacks/unwind_procs.c). docs/unwinding.md has the design.
 *
 * Rows: compiled from a binary's .eh_frame, one per change of the rules,
 * sorted by address, all binaries' rows in one array (`unwind_rows`, sized
 * by --unwind-mem). A row holds from its pc up to the next row's.
 * Files: (dev, ino) -> the file's run of rows (shared by every process
 * mapping it), written by the recorder once per binary.
 * Processes: tgid -> its executable mappings, sorted by start, each naming
 * its file. Kept by the BPF side as the kernel makes mappings (exec, mmap,
 * mprotect, fork), so a process is walkable from its first sample, and
 * read from /proc by the recorder for the processes running at start.
 */
#ifndef BTRACE_UNWIND_H
#define BTRACE_UNWIND_H

#define BT_UNWIND_MAPS 128      /* executable mappings per process (more: counted, not walked) */
#define BT_UNWIND_MAPS_STEPS 8  /* binary-search steps over them: log2(BT_UNWIND_MAPS) + 1 */
#define BT_UNWIND_ROW_STEPS 25  /* over a binary's rows: at most 2^24 rows per binary */
#define BT_UNWIND_MAX_ROWS (1u << 24)

/* What the caller's frame is, at a pc (x86-64; the return address is
 * always at CFA - 8). A row's kind byte holds the kind in its low 4 bits
 * and, for BT_UROW_REG and BT_UROW_DEREF, a DWARF register number (0-15:
 * rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15) in its high 4. */
enum bt_urow_kind {
	BT_UROW_NONE = 0,   /* no call-frame information here: frame pointers, if valid */
	BT_UROW_SP = 1,     /* CFA = rsp + cfa_off8 * 8 */
	BT_UROW_BP = 2,     /* CFA = rbp + cfa_off8 * 8 */
	BT_UROW_PLT = 3,    /* PLT stub: CFA = rsp + 8, + 8 more from byte cfa_off8 of each 16 */
	BT_UROW_END = 4,    /* the return address is undefined: the outermost frame (_start, clone) */
	BT_UROW_SIGNAL = 5, /* a signal frame (sigreturn trampoline): the walk stops, marked */
	/* CFA = reg + cfa_off8 * 8, reg neither rsp nor rbp (OpenSSL's
	 * assembly keeps the entry rsp in rax, r11, ...): the walk knows
	 * such a register in the leaf frame only (pt_regs); above it, frame
	 * pointers, as for NONE. */
	BT_UROW_REG = 6,
	/* CFA = *(reg + off) + add (OpenSSL's .cfi_cfa_expression
	 * "%rsp+40,deref,+8": the entry rsp stored in its frame), off and
	 * add in cfa_off8 (BT_UROW_DEREF_OFF/ADD); rsp and rbp at any
	 * depth, other registers in the leaf frame only. */
	BT_UROW_DEREF = 7,
};
#define BT_UROW_KIND(k) ((k) & 15)
#define BT_UROW_REGNO(k) ((k) >> 4)
/* BT_UROW_DEREF's cfa_off8: off / 8 in its low 10 bits (signed), add / 8 in its high 6. */
#define BT_UROW_DEREF_OFF8(c) ((int)((__u32)(c) << 22) >> 22)
#define BT_UROW_DEREF_ADD8(c) ((__u32)(c) >> 10)
#define BT_UROW_DEREF_ENC(off8, add8) ((__u16)(((__u32)(add8) << 10) | ((__u32)(off8) & 0x3ff)))
struct bt_unwind_row {
	__u32 pc;       /* ELF address (p_vaddr space) where the row starts */
	__u8 kind;      /* enum bt_urow_kind, and a register (above) */
	__s8 bp_off8;   /* rbp saved at CFA + bp_off8 * 8; 0: rbp unchanged */
	__u16 cfa_off8; /* see kind */
};

enum bt_umap_kind {
	BT_UMAP_FILE = 0,    /* a file: its table looked up in unwind_files by (dev, ino) at each walk */
	BT_UMAP_NOTABLE = 1, /* a file the recorder could not open: frame pointers */
	BT_UMAP_ANON = 2,    /* executable anonymous memory (JIT): the walk stops there, marked */
};
struct bt_unwind_map {
	__u64 start;     /* mapping [start, start + len) */
	__u32 len;
	__u32 off;       /* the file offset of start */
	__u64 ino;       /* the file (BT_UMAP_FILE): the kernel's inode number ... */
	__u32 dev;       /* ... and its super block's s_dev (MKDEV: major << 20 | minor) */
	__u32 kind;      /* enum bt_umap_kind */
};
struct bt_unwind_proc {
	__u32 n;   /* mappings in m, sorted by start */
	__u32 gen; /* bumped by each change the BPF side makes (the recorder checks it) */
	__u64 mm;  /* the mm_struct they are of; 0: written by the recorder, any */
	struct bt_unwind_map m[BT_UNWIND_MAPS];
};

/* A file as the kernel knows it, the key of its table. The vDSO (no file)
 * is { 0, 0 }. */
struct bt_unwind_fkey {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};
#define BT_UNWIND_SEGS 4 /* executable PT_LOADs per file (more: the first ones) */
/* A file's table (unwind_files): rows [first, first + count) of
 * unwind_rows; a mapping at file offset off holds ELF addresses
 * off + delta of the segment whose [lo, hi) holds off (none: delta 0). */
struct bt_unwind_file {
	__u32 first;
	__u32 count : 24, kind : 8; /* kind: BT_UMAP_FILE, or BT_UMAP_NOTABLE (frame pointers) */
	__u32 nseg;
	__u32 reserved;
	struct {
		__u32 lo, hi;
		__s64 delta;
	} seg[BT_UNWIND_SEGS];
};

/* A file the BPF side met in a new mapping without a table (unwind_fwant):
 * the mapping, to open it through /proc/TGID/map_files while the process
 * lives, and its path's components, innermost first, to open it after. */
#define BT_UNWIND_PATH_PARTS 16
#define BT_UNWIND_PART_LEN 64
struct bt_unwind_fwant {
	__u64 start, end;
	__u32 tgid;
	__u32 nparts; /* components read; BT_UNWIND_PATH_PARTS + 1: the path is longer */
	char part[BT_UNWIND_PATH_PARTS][BT_UNWIND_PART_LEN];
};

#endif
