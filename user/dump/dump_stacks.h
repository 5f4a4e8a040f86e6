/* SPDX-License-Identifier: MIT */
/*
 * dump_stacks.h - the call-stack table of a dump (section STKP, or STCK
 * from earlier recorders: docs/dump-format.md): stacks, their frames as (mapping, offset, symbol),
 * the mappings (path, build-id, device, inode), the symbols every frame
 * references (names resolved when the dump was written, so a dump read on
 * another machine or after the binary is gone still shows them), and the
 * counters of stacks that could not be taken or stored.
 */
#ifndef BTRACE_DUMP_STACKS_H
#define BTRACE_DUMP_STACKS_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "events.h"

#define BT_STACK_KERNEL 0
#define BT_STACK_USER 1
#define BT_STACK_F_TRUNCATED 0x1 /* cut short: bits 8..15 say why (enum bt_stack_why) */
#define BT_STACK_F_UNDEFINED 0x2 /* its frames never arrived, or a free id (no frames) */
#define BT_STACK_F_ALL 0x3     /* the flags STKP and STCK store */
/* Why a truncated stack was cut, in bits 8..15 of bt_dump_stack.flags:
 * stored in section STKW, not in STKP's flags (an earlier reader refuses
 * flags it does not know, and skips STKW). 1..6 are the BPF walker's
 * (bpf/events.h enum bt_stack_cut), the others the recorder's. */
#define BT_STACK_WHY_SHIFT 8
#define BT_STACK_WHY(flags) (((unsigned)(flags) >> BT_STACK_WHY_SHIFT) & 0xffu)
#define BT_STACK_F_WHY(why) ((uint16_t)((unsigned)(why) << BT_STACK_WHY_SHIFT))
enum bt_stack_why {
	BT_WHY_UNKNOWN = 0,   /* not said: a dump of an earlier recorder */
	BT_WHY_NO_PROC = 1,   /* the process's mappings were not known yet: the leaf only */
	BT_WHY_NO_MAP = 2,    /* an address in no executable mapping */
	BT_WHY_ANON = 3,      /* anonymous executable memory (JIT code) */
	BT_WHY_SIGNAL = 4,    /* a signal frame */
	BT_WHY_BAD_FRAME = 5, /* an unreadable stack word or an invalid frame */
	BT_WHY_NO_TABLE = 6,  /* a binary with no unwind table (being built, or refused) */
	BT_WHY_DEPTH = 16,    /* the frame limit (BT_MAX_FRAMES) reached */
	BT_WHY_NOT_CODE = 17, /* a frame-pointer walk reached an address that is no user code */
	BT_WHY_NO_ROOT = 18,  /* the walk ended at a frame that is not a thread's start */
	BT_WHY_COPY_SHORT = 19, /* walked on from a stack copy (a table built late), which ended first */
};
/* "no mapping", ...: what report's "[truncated: ...]" marker says; NULL for
 * BT_WHY_UNKNOWN; a reason this reader does not know: "reason N" in buf. */
const char *bt_stack_why_text(unsigned why, char *buf, size_t len);
/* Length of a symbol name without its trailing ELF version ("@VER" or
 * "@@VER", VER an upper-case letter then letters, digits, '_' and '.'):
 * "clock_nanosleep@@GLIBC_2.17" is clock_nanosleep wherever a function is
 * named; report --stacks -v keeps the version. */
size_t bt_sym_name_len(const char *name);
/* How an unnamed user address outside every file is spelled everywhere:
 * "[unknown] (anonymous)". */
#define BT_ANON_FRAME_NAME "[unknown] (anonymous)"
/* A user frame with map BT_DMAP_NONE and this bit in off is a Python
 * frame (bpf/python_frames.bpf.h): off is its code object's key, its
 * symbol "qualname (file:first line)". As bpf/events.h says it. */
#ifndef BT_FRAME_PY_BIT
#define BT_FRAME_PY_BIT (1ull << 63)
#endif

#define BT_DMAP_KERNEL 0u         /* frame.map of kernel addresses (off = address) */
#define BT_DMAP_NONE 0xffffffffu  /* a user address no file maps (off = address) */
#define BT_DMAP_DELETED 0x1       /* bt_dump_map.flags: the file was deleted when captured */

struct bt_dump_frame {
	uint32_t map; /* BT_DMAP_KERNEL, 1 + index into maps, or BT_DMAP_NONE */
	uint32_t sym; /* 1 + index into syms, 0 unknown */
	uint64_t off; /* file offset (user), address (kernel, none) */
};
struct bt_dump_stack {
	uint32_t tgid;     /* user stacks: the process; kernel: 0 */
	uint16_t kind;     /* BT_STACK_KERNEL / BT_STACK_USER */
	uint16_t flags;    /* BT_STACK_F_* */
	uint32_t nframes;  /* innermost first */
	uint64_t first;    /* index of its first frame in frames[] */
};
struct bt_dump_map {
	const char *path;
	uint32_t flags;
	uint64_t dev, ino;
	uint8_t build_id[20];
	uint32_t build_id_len;
};
struct bt_dump_sym {
	const char *name;      /* demangled */
	uint32_t map;          /* as in frames */
	uint64_t start, size;  /* file offset (user) or address (kernel) of its first byte; size 0 unknown */
};

enum bt_stack_counter {
	BT_STKC_STACKS,        /* stacks in the table */
	BT_STKC_MAX_STACKS,    /* its bound (--max-stacks) */
	BT_STKC_OVERFLOW,      /* stack references that found the table full (events say lost) */
	BT_STKC_UNDEFINED,     /* stacks whose frames never arrived */
	BT_STKC_KERNEL_ERR,    /* kernel stacks the kernel could not take */
	BT_STKC_USER_ERR,      /* user stacks the kernel could not take */
	BT_STKC_DEF_DROPS,     /* new stacks whose frames did not fit in the ring buffer */
	BT_STKC_TRUNCATED,     /* stacks marked truncated */
	BT_STKC_UNRESOLVED,    /* user frames in no file mapping (anonymous code, process gone) */
	BT_STKC_NO_FD,         /* mapped files kept by path only (symbols read later, if still there) */
	BT_STKC_OFFCPU_SHORT,  /* blocks shorter than --offcpu-min (dropped by design) */
	BT_STKC_OFFCPU_NOMEM,  /* blocks not followed: the kernel's pending table was full */
	BT_STKC_SAMPLES,       /* sampling program runs (idle excluded) */
	BT_STKC_SAMPLE_HZ,     /* --sample rate, 0 off */
	BT_STKC_NO_SRCLINES,   /* 1: recorded with --no-source-lines */
	BT_STKC_NO_KSYMS,      /* 1: /proc/kallsyms unreadable or its addresses hidden (no CAP_SYSLOG) */
	BT_STKC_NOT_LOADED_FILES,  /* files (and kallsyms) still loading when the dump was written */
	BT_STKC_NOT_LOADED_FRAMES, /* frames left unnamed for that reason */
	BT_STKC_RECLAIMED,     /* stacks freed (their ids reused): no retained event named them, or evicted */
	BT_STKC_LINES_LATE,    /* frames left without source lines: the dump's DWARF time was spent */
	/* the unwinder (docs/unwinding.md): why user stacks ended early, what its tables hold */
	BT_STKC_UNW_WALKS,     /* user stacks walked with unwind tables */
	BT_STKC_UNW_NO_PROC,   /* user stacks of processes not loaded yet: their leaf only, truncated */
	BT_STKC_UNW_NO_MAP,    /* walks ended at an address in no executable mapping (truncated; never a frame) */
	BT_STKC_UNW_ANON,      /* frames in anonymous code, JIT (frame pointers followed; a bad one cuts: BT_WHY_ANON) */
	BT_STKC_UNW_SIGNAL,    /* walks ended at a signal frame (truncated) */
	BT_STKC_UNW_BAD,       /* walks ended at unreadable stack or an invalid frame (truncated) */
	BT_STKC_UNW_FP,        /* frames without an unwind row: frame pointers followed */
	BT_STKC_UNW_NO_TABLE,  /* frames in binaries without a table (memory bound, no .eh_frame) */
	BT_STKC_UNW_BINARIES,  /* binaries with a table */
	BT_STKC_UNW_ROWS,      /* rows in the tables */
	BT_STKC_UNW_MAX_ROWS,  /* their bound (--unwind-mem / 8), 0: unwinding off */
	BT_STKC_UNW_MEM_FULL,  /* binaries left without a table: --unwind-mem reached */
	BT_STKC_UNW_NO_EH,     /* binaries without a usable .eh_frame */
	BT_STKC_UNW_PROCS_FULL,/* process loads refused: the per-process map was full */
	BT_STKC_UNW_MAPS_DROP, /* executable mappings beyond the per-process bound */
	BT_STKC_UNW_CACHE_FAILED, /* tables not stored in --unwind-cache (full disk, budget) */
	BT_STKC_UNW_PENDING,   /* walks ended at a file whose table was being built (truncated) */
	BT_STKC_UNW_FILES_UNOPENED, /* files the BPF side asked a table for that could not be opened */
	/* a full table (stack_table.h): the stacks named longest ago give way */
	BT_STKC_EVICTED,       /* of the reclaimed: freed while events in the buffer still named them */
	BT_STKC_RECLAIMED_REFS,/* stack ids of this dump's events that say BT_STACK_RECLAIMED */
	BT_STKC_PRE_EXEC,      /* user stacks taken before an exec, named from the parent's maps */
	BT_STKC_UNW_REFUSED,   /* binaries whose table was refused: too many FDEs, or past the build budget */
	BT_STKC_UNW_UNSUPPORTED,      /* rule ranges of the tables the walker cannot follow (frame pointers there) */
	BT_STKC_UNW_UNSUPPORTED_BINS, /* binaries with any */
	BT_STKC_UNW_LEAF_ROWS,        /* rows whose CFA register only the leaf frame has */
	/* stacks copied where a walk stopped at a table not built yet (stack_copies.h) */
	BT_STKC_COPY_TAKEN,    /* copies the BPF side sent */
	BT_STKC_COPY_RATE,     /* walks not copied: over the rate bound (their stacks stay cut) */
	BT_STKC_COPY_RING,     /* copies that did not fit in the ring buffer (stay cut) */
	BT_STKC_COPY_DONE,     /* stacks walked on from their copy to the outermost frame */
	BT_STKC_COPY_CUT,      /* ... walked on, but cut again (the copy ended, a bad frame...: their reason) */
	BT_STKC_COPY_WAITING,  /* copies still waiting for a table when the dump was written (stay cut) */
	BT_STKC_COPY_MEM,      /* copies dropped: the recorder's memory bound for them was reached (stay cut) */
	BT_STKC_COPY_EXPIRED,  /* copies whose table never came: walked as far as the tables went */
	BT_STKC_COPY_OLD,      /* walks not copied: a process older than 5 s (its later samples walk whole) */
	/* anonymous code (JIT): its frames in the table's stacks (perf_maps.h) */
	BT_STKC_JIT_NAMED,     /* named from their runtime's perf map (/tmp/perf-PID.map) */
	BT_STKC_JIT_UNNAMED,   /* without an entry there (no map, a process gone before it was read) */
	/* Python frames (bpf/python_frames.bpf.h) */
	BT_STKC_PY_WALKS,      /* user stacks whose Python frames were read */
	BT_STKC_PY_FRAMES,     /* Python frames put in stacks */
	BT_STKC_PY_UNKNOWN,    /* stacks in an interpreter of a version without offsets: native frames only */
	BT_STKC_PY_NO_THREAD,  /* stacks in an interpreter whose thread state was not found: native only */
	BT_STKC_PY_UNREADABLE, /* Python walks cut by unreadable interpreter memory */
	BT_STKC_PY_CUT,        /* Python walks cut at BT_PY_MAX_FRAMES or the stack's frame bound */
	BT_STKC_PY_CODE_DROPS, /* code objects whose names did not fit in the ring */
	BT_STKC_PY_NAMED,      /* the table's Python frames named */
	BT_STKC_PY_UNNAMED,    /* ... not: their code's names never arrived ("[python code not interned]") */
	BT_STKC_PY_INTERPS,    /* CPython interpreters found in the binaries */
	BT_STKC_PY_UNKNOWN_BINS,/* ... of a version without offsets */
	BT_STKC_MAX,
};

/* Where in the source a user frame is (section SLOC, optional): for one
 * code address the stacks reference, the chain of source locations from the
 * innermost inlined call out to the frame's own function, read from DWARF
 * when the dump was written. */
struct bt_dump_srcline {
	const char *file; /* source path as DWARF names it */
	const char *func; /* the function this line is in (inlined, but the last: the frame's own); NULL unknown */
	uint32_t line, col; /* col 0: unknown */
};
struct bt_dump_srcloc {
	uint32_t map;    /* 1 + mapping index */
	uint32_t nlines; /* 1..BT_SRCLOC_MAX_DEPTH, innermost first */
	uint64_t off;    /* the file offset looked up (bt_frame_lookup_off) */
	uint64_t first;  /* index of its first line in lines[] */
};

struct bt_dump_stacks {
	uint32_t nstacks, nmaps, nsyms;
	uint64_t nframes;
	struct bt_dump_stack *stacks; /* id i + 1 is stacks[i] */
	struct bt_dump_frame *frames;
	struct bt_dump_map *maps;
	struct bt_dump_sym *syms;
	uint64_t counters[BT_STKC_MAX];
	/* source lines (SLOC): locs sorted by (map, off), no two alike */
	uint32_t nlocs;
	uint64_t nlines;
	struct bt_dump_srcloc *locs;
	struct bt_dump_srcline *lines;
	/* binaries that lost their unwind table (UNWL, optional): refused or
	 * over --unwind-mem, the latest ones, each with why */
	uint32_t nlost;
	struct bt_dump_unwlost { const char *path, *why; } *lost;
	char *lost_strtab; /* decoded UNWL: lost's strings point into it */
	/* owned storage */
	char *strtab;   /* decoded: names and paths point into it */
	char **owned;   /* or: strings to free one by one */
	char *loc_strtab; /* decoded SLOC: its files and functions point into it */
	size_t nowned;
};

/* A kernel event's stack ids (kstack, ustack), if it is a stack event of
 * its full size: what a dump's fix_event rewrites. NULL otherwise. */
static inline struct bt_ev_sample *bt_stack_event(struct bt_event_hdr *ev, uint32_t len)
{
	if ((ev->type != BT_EV_CPU_SAMPLE && ev->type != BT_EV_OFFCPU && ev->type != BT_EV_WAKER &&
	     ev->type != BT_EV_PROBE_STACK) || len < sizeof(struct bt_ev_sample))
		return NULL;
	return (struct bt_ev_sample *)ev;
}

/* A stack table's births as bt_stack_births_id (stack_table.h) reads
 * them: which ids were freed in which epoch, each epoch's per-CPU time,
 * each CPU's newest stack event drained when taken (hi_ts). The hand-over
 * saves them with the table's snapshot: a start after the recorder judges
 * its events' ids the same way. */
struct bt_stack_births_arrays {
	uint32_t n, ncpus, nring;
	const uint32_t *slot;  /* [n]: 0 never freed, else 1 + epoch ring slot */
	const uint64_t *ep_ts; /* [nring * ncpus] */
	const uint64_t *hi_ts; /* [ncpus] */
};

/* Encode into a malloc'd payload (*out): packed, section STKP (what a dump
 * gets), else STCK's fixed records (what earlier recorders wrote). Its
 * length, or -errno (-EINVAL: stacks or frames that do not add up). */
int64_t bt_dump_stacks_encode(const struct bt_dump_stacks *s, int packed, uint8_t **out);
/* Decode and validate a payload (STKP if packed, else STCK) into a zeroed
 * s: 0, or -EBADMSG with one line in err (-ENOMEM). decoded_max bounds
 * STKP's decoded stacks and frames (2 bytes of it can become 16): the
 * reader's body bound, BTRACE_DUMP_MAX_BODY (dump_open.c). */
int bt_dump_stacks_decode(const uint8_t *p, uint64_t len, int packed, uint64_t decoded_max, struct bt_dump_stacks *s,
			  char *err, size_t errlen);
void bt_dump_stacks_release(struct bt_dump_stacks *s);
/* STKW <-> the truncation reasons of s's stacks (bits 8..15 of their
 * flags). Encode: a malloc'd payload in *out and its length, 0 (nothing
 * out) when no stack has a reason, or -errno. Decode into s, whose stack
 * table is already decoded: 0 (a version this reader does not know is
 * skipped), or -EBADMSG with one line in err. */
int64_t bt_dump_stackwhy_encode(const struct bt_dump_stacks *s, uint8_t **out);
int bt_dump_stackwhy_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen);

/* The decoders' refusal: "corrupt dump: PART: ..." into err; -EBADMSG. */
__attribute__((format(printf, 4, 5))) int bt_dump_corrupt(char *err, size_t errlen, const char *part,
							   const char *fmt, ...);

/* UNWL <-> s's lost unwind tables (dump_unwlost.c). Encode: a malloc'd
 * payload in *out and its length, 0 when none was lost, or -errno. Decode
 * into s: 0 (a version this reader does not know is skipped), or -EBADMSG
 * with one line in err. */
#define BT_UNWLOST_MAX 64u
#define BT_UNWLOST_STR_MAX 4096u
int64_t bt_dump_unwlost_encode(const struct bt_dump_stacks *s, uint8_t **out);
int bt_dump_unwlost_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen);

/* Validation bounds. */
#define BT_STACKS_MAX_COUNT (1u << 24)
#define BT_STACKS_MAX_FRAMES 512u
#define BT_SRCLOC_MAX_DEPTH 32u

/* The file offset a frame's symbol and source line are looked up at: a
 * return address (every user frame but the innermost) minus one, the call
 * instruction itself, so a call that ends its function is not put in the
 * next one. */
static inline uint64_t bt_frame_lookup_off(uint64_t off, uint32_t f_index)
{
	return f_index && off ? off - 1 : off;
}

/* What runs a user frame outside every file, as shown beside its name:
 * "python" (a Python frame: off has BT_FRAME_PY_BIT),
 * "jit" (anonymous code named from a perf map); NULL for any other frame. */
const char *bt_frame_origin(const struct bt_dump_stacks *s, const struct bt_dump_frame *f);
/* A Python frame's name "hot (/tmp/x.py:12)" made its function's,
 * "hot (/tmp/x.py)", in place (one function whichever line it runs);
 * returns the line, 0 if the name has none (left as it is). */
int bt_py_drop_line(char *name);
/* SLOC <-> s's locs and lines (dump_srclocs.c). Encode: a malloc'd payload
 * in *out, its length, or -errno. Decode into s, whose stack table is already
 * decoded (mapping indices are checked against it): 0 (a version this
 * reader does not know is skipped: no lines), or -EBADMSG with one line in
 * err. */
int64_t bt_dump_srclocs_encode(const struct bt_dump_stacks *s, uint8_t **out);
int bt_dump_srclocs_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen);
/* The source lines of (map, lookup offset), NULL if none. */
const struct bt_dump_srcloc *bt_dump_srcloc_find(const struct bt_dump_stacks *s, uint32_t map, uint64_t off);
/* The source lines of frame f, at index f_index (innermost 0) of its
 * stack; NULL if none (kernel and unmapped frames have none). */
const struct bt_dump_srcloc *bt_dump_frame_srcloc(const struct bt_dump_stacks *s, const struct bt_dump_frame *f,
						  uint32_t f_index);
#endif
