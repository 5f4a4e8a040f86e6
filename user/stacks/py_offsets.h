/* SPDX-License-Identifier: MIT */
/*
 * py_offsets.h - CPython interpreters found in a binary, for the BPF side's
 * Python frames (bpf/python.h, bpf/python_frames.bpf.h).
 */
#ifndef BTRACE_PY_OFFSETS_H
#define BTRACE_PY_OFFSETS_H
#include <gelf.h>
#include <linux/types.h>
#include "../../bpf/python.h"

/* Is elf (opened from path, for its name) a CPython interpreter: exports
 * _PyRuntime and _PyEval_EvalFrameDefault? 1 and *out filled (known 0 if
 * its version has no offsets here), or 0. */
int bt_py_probe(Elf *elf, const char *path, struct bt_py_file *out);
/* 3.13's _Py_DebugOffsets (n u64s from _PyRuntime's start) as the walk's
 * offsets: 0, or -1 if they are not a 3.13 interpreter's. */
int bt_py_debug_offsets(const uint64_t *d, size_t n, struct bt_py_offsets *o);
/* The offsets of version (PY_VERSION_HEX >> 16) from the table, or NULL. */
const struct bt_py_offsets *bt_py_offsets_of(uint32_t version);
#endif
