// SPDX-License-Identifier: MIT
/* prog_misses.c - runs of loaded BPF programs the kernel skipped. */
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "prog_misses.h"

size_t bt_obj_prog_misses(const struct bpf_object *obj, struct bt_prog_miss *out, size_t max)
{
	struct bpf_program *p;
	size_t n = 0;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0) /* not loaded (autoload off) */
			continue;
		if (n == max)
			break;
		memset(&info, 0, sizeof(info));
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", bpf_program__name(p));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			out[n].misses = info.recursion_misses;
			out[n].prog_id = info.id;
		}
		n++;
	}
	return n;
}

