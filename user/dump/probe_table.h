/* SPDX-License-Identifier: MIT */
/*
 * probe_table.h - rows of the two dump sections the recorder's probes fill
 * (docs/dump-format.md): the probe table (PROB: probe id in uprobe/USDT
 * events -> what was attached, so a report can name functions) and the runs
 * of its BPF programs the kernel skipped (PMIS). The dump format owns them;
 * user/probes/ (uprobes.c, prog_misses.c) fills them.
 */
#ifndef BTRACE_PROBE_TABLE_H
#define BTRACE_PROBE_TABLE_H
#include <stdint.h>

#define BT_PROBE_RETURN 0x1 /* uretprobe (%return) */
#define BT_PROBE_USDT   0x2 /* USDT provider:name */
#define BT_PROBE_ENDED  0x4 /* the probe's process had ended when the table was taken */

struct bt_probe_desc {
	uint32_t id;
	uint32_t flags;      /* BT_PROBE_* */
	int32_t pid;         /* -1: every process mapping the binary */
	uint32_t nargs;      /* integer arguments captured at entry */
	uint64_t offset;     /* file offset attached to */
	char spec[256];      /* as the user wrote it */
	char binary[256];    /* resolved path */
	char func[128];      /* symbol (demangled if C++), or provider:name for USDT */
};

/* Runs of one BPF program the kernel skipped (recursion_misses, see
 * prog_misses.h); dumps carry them (dump.h: bt_dump_info.prog_misses). */
struct bt_prog_miss {
	char name[64];
	uint64_t misses;
	uint32_t prog_id;
};
#endif
