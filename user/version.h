/* SPDX-License-Identifier: MIT */
/*
 * version.h - the version of btrace-bpf, from the file VERSION (the build
 * passes it as -DBT_VERSION; see mk/dist.mk).
 */
#ifndef BTRACE_VERSION_H
#define BTRACE_VERSION_H
#ifndef BT_VERSION
#define BT_VERSION "unknown"
#endif
#endif
