/* SPDX-License-Identifier: MIT */
/* probes.h - the probe table: probe id (in uprobe/USDT events) -> what was attached.
 * Stored in every dump so a report can name functions. */
#ifndef BTRACE_PROBES_H
#define BTRACE_PROBES_H
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
#endif
