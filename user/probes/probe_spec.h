/* SPDX-License-Identifier: MIT */
/* probe_spec.h - one -u / -U argument, parsed (the syntax is in uprobes.h). */
#ifndef BTRACE_PROBE_SPEC_H
#define BTRACE_PROBE_SPEC_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* One parsed -u / -U argument. */
struct bt_uprobe_spec {
	char binary[PATH_MAX]; /* "" = the executable of the -p process */
	char func[1024];   /* symbol as written; "" when has_addr */
	char provider[128], name[128]; /* usdt */
	uint64_t addr;     /* has_addr: virtual address in the binary */
	uint64_t offset;   /* +OFFSET */
	int has_addr;
	int retprobe;      /* %return */
	int usdt;
};

/* Parse `spec` (usdt: a -U argument). 0, or -EINVAL with one line in err. */
int bt_uprobe_parse(const char *spec, int usdt, struct bt_uprobe_spec *out, char **err);
#endif
