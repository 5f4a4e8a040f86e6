/* SPDX-License-Identifier: MIT */
/*
 * py_codes.h - names of Python code objects, as the BPF side sends them
 * (struct bt_raw_py_code, once per code object and process): the key a
 * Python frame carries (BT_FRAME_PY_BIT) -> "qualname (file:line)", the
 * line being run, computed from the code's line table. Kept
 * after the process exits, so a dump names its frames; an exec or a new
 * process under the pid does not clear them (the key holds a generation of
 * the code object, and a process's keys are its own addresses). At most
 * BT_PYCODES_MAX names; past it, counted, the frames stay unnamed.
 *
 * Thread-safe (one lock): the drain adds, the symbolizer looks up.
 */
#ifndef BTRACE_PY_CODES_H
#define BTRACE_PY_CODES_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "../../bpf/events.h"

#define BT_PYCODES_MAX (1u << 18)

struct bt_pycodes;
struct bt_pycodes *bt_pycodes_new(void);
void bt_pycodes_free(struct bt_pycodes *pc);
/* A BT_RAW_PY_CODE record of len bytes: kept (a malformed one counted). */
void bt_pycodes_add(struct bt_pycodes *pc, const void *rec, uint32_t len);
/* The name of tgid's code key into buf: "hot (/tmp/x.py:3)". 1, or 0 if unknown. */
int bt_pycodes_find(struct bt_pycodes *pc, uint32_t tgid, uint64_t key, char *buf, size_t len);
/* The line of the instruction at byte offset instr of a code object whose
 * line table is lt (len bytes; v310: 3.10's pairs, else 3.11+'s
 * locations) and first line first, as CPython's PyCode_Addr2Line: the
 * line, or -1 if the instruction has none or lies past the len bytes. */
int bt_py_line(const uint8_t *lt, size_t len, int v310, int first, int instr);
struct bt_pycode_stats {
	uint64_t codes;     /* names kept */
	uint64_t full;      /* names not kept: BT_PYCODES_MAX reached */
	uint64_t malformed; /* records refused */
	uint64_t first_line;/* named with the code's first line: no line for the instruction known */
};
void bt_pycodes_stats(struct bt_pycodes *pc, struct bt_pycode_stats *st);
#endif
