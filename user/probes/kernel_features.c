// SPDX-License-Identifier: MIT
/*
 * kernel_features.c - probes of the BPF features the programs need, each
 * with the Linux version that added it (kernel_features.h). A probe that
 * cannot decide (no permission, out of memory) lets the load go ahead: the
 * loaders report its failure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"

static const char *release(void)
{
	static struct utsname u;

	return uname(&u) == 0 ? u.release : "unknown";
}

/* 1 if the verifier accepts an atomic fetch-and-add (BPF_ATOMIC | BPF_FETCH,
 * Linux 5.12; seq numbers of programs that can nest need it), 0 if not,
 * -errno if it cannot tell. */
static int has_atomic_fetch(void)
{
	const struct bpf_insn insns[] = {
		/* *(u64 *)(r10 - 8) = 0; r2 = 1; r2 = atomic_fetch_add(r10 - 8, r2) */
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_2,
		  .off = -8, .imm = BPF_ADD | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bt_probe_atomic", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == EINVAL ? 0 : -errno;
}

/* 1 if a BPF ring buffer can be created (Linux 5.8), 0 if the kernel does
 * not know the map type (EINVAL), -errno if it cannot tell (no permission:
 * libbpf_probe_bpf_map_type() would say "unsupported" there). */
static int has_ringbuf(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bt_probe_rb", 0, 0, (__u32)sysconf(_SC_PAGESIZE), NULL);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == EINVAL ? 0 : -errno;
}

int bt_kernel_check_record(char *err, size_t errlen)
{
	if (has_ringbuf() == 0) {
		snprintf(err, errlen, "this kernel (%s) has no BPF ring buffers: btrace-bpf needs Linux 5.8 "
			 "or later (5.12 for everything it records)", release());
		return -EOPNOTSUPP;
	}
	if (has_atomic_fetch() == 0) {
		snprintf(err, errlen, "this kernel (%s) has no atomic fetch-and-add in BPF programs: "
			 "btrace-bpf needs Linux 5.12 or later", release());
		return -EOPNOTSUPP;
	}
	return 0;
}

int bt_kernel_check_uprobes(char *err, size_t errlen)
{
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 0) {
		snprintf(err, errlen, "this kernel (%s) has no BPF cookies for uprobes "
			 "(bpf_get_attach_cookie): user-space probes and USDT need Linux 5.15 or later",
			 release());
		return -EOPNOTSUPP;
	}
	return 0;
}
