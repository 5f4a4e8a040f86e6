/* SPDX-License-Identifier: MIT */
/*
 * kernel_features.h - what the running kernel must support before the BPF
 * programs are loaded, checked up front so a kernel that is too old gets a
 * message naming the missing feature and the Linux version that added it,
 * not a verifier log (docs/manual.md: "Kernel compatibility").
 */
#ifndef BTRACE_KERNEL_FEATURES_H
#define BTRACE_KERNEL_FEATURES_H

#include <stddef.h>

/* The recorder's programs: BPF ring buffers (5.8), atomic fetch-and-add in
 * BPF (5.12). 0, or -errno with a message in err. */
int bt_kernel_check_record(char *err, size_t errlen);

/* The user-space probe programs: BPF cookies of uprobes (5.15). 0, or
 * -errno with a message in err. */
int bt_kernel_check_uprobes(char *err, size_t errlen);

#endif
