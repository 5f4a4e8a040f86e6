/* SPDX-License-Identifier: MIT */
/*
 * dump_stacks.h - the call-stack table of a dump (section STCK,
 * docs/dump-format.md): stacks, their frames as (mapping, offset, symbol),
 * the mappings (path, build-id, device, inode), the symbols every frame
 * references (names resolved when the dump was written, so a dump read on
 * another machine or after the binary is gone still shows them), and the
 * counters of stacks that could not be taken or stored.
 */
#ifndef BTRACE_DUMP_STACKS_H
#define BTRACE_DUMP_STACKS_H
#include <stddef.h>
#include <stdint.h>

#define BT_STACK_KERNEL 0
#define BT_STACK_USER 1
#define BT_STACK_F_TRUNCATED 0x1 /* may be cut short: depth limit, or the frame-pointer chain broke */
#define BT_STACK_F_UNDEFINED 0x2 /* its frames never arrived (no frames) */
#define BT_STACK_F_ALL 0x3

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
	BT_STKC_MAX,
};
const char *bt_stack_counter_name(int i);

struct bt_dump_stacks {
	uint32_t nstacks, nmaps, nsyms;
	uint64_t nframes;
	struct bt_dump_stack *stacks; /* id i + 1 is stacks[i] */
	struct bt_dump_frame *frames;
	struct bt_dump_map *maps;
	struct bt_dump_sym *syms;
	uint64_t counters[BT_STKC_MAX];
	/* owned storage */
	char *strtab;   /* decoded: names and paths point into it */
	char **owned;   /* or: strings to free one by one */
	size_t nowned;
};

/* Encode into a malloc'd payload (*out); its length, or -errno. */
int64_t bt_dump_stacks_encode(const struct bt_dump_stacks *s, uint8_t **out);
/* Decode and validate a payload into a zeroed s: 0, or -EBADMSG with one
 * line in err (-ENOMEM). */
int bt_dump_stacks_decode(const uint8_t *p, uint64_t len, struct bt_dump_stacks *s, char *err, size_t errlen);
void bt_dump_stacks_release(struct bt_dump_stacks *s);

/* Validation bounds. */
#define BT_STACKS_MAX_COUNT (1u << 24)
#define BT_STACKS_MAX_FRAMES 512u
#endif
