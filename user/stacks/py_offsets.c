// SPDX-License-Identifier: MIT
/*
 * py_offsets.c - which binaries are CPython interpreters, and the offsets
 * of the structures the BPF side reads in them (see py_offsets.h).
 *
 * As the OpenTelemetry eBPF profiler and py-spy do, the interpreter is
 * known by its exported symbols (.dynsym: a stripped Debian python3.11
 * keeps them): _PyRuntime, the root of the interpreter and thread states,
 * and _PyEval_EvalFrameDefault, the C function each Python frame runs in.
 * The version is Py_Version's value (3.11+), else the file's name
 * (python3.10, libpython3.10.so.1.0).
 *
 * 3.13 and later keep the offsets a debugger needs in the interpreter
 * itself (_Py_DebugOffsets, at the start of _PyRuntime's initialised
 * data): read from the file, for the versions whose frame layout the walk
 * knows. 3.10-3.12 have none, and a stock system no debug data: their
 * offsets are per version, measured on builds with debug data (gdb) and on
 * a live interpreter of each (tests/kernel/py_offsets_check.py reads its
 * own memory with ctypes and compares). The fields read keep their
 * places within a minor version (CPython's internal ABI for debuggers).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "py_offsets.h"

struct py_version {
	uint32_t version;
	struct bt_py_offsets o;
};

static const struct py_version versions[] = {
	/* 3.10: a PyFrameObject per C call, found by pthread_self(); 3.10.13 */
	{ 0x030a, { .interp_head = 32, .threads_head = 8, .tstate_next = 8, .tstate_tid = 176,
		    .tstate_frame = 24, .frame_code = 32, .frame_prev = 24, .code_line = 40,
		    .code_file = 104, .code_name = 112, .str_data = 48, .frame_instr = 96, .code_lines = 120,
		    .bytes_size = 16, .bytes_data = 32, .flags = BT_PY_ENTRY_EACH | BT_PY_TID_PTHREAD | BT_PY_LASTI_INT } },
	/* 3.11: Debian bookworm's 3.11.2 and 3.11.7 */
	{ 0x030b, { .interp_head = 40, .threads_head = 16, .tstate_next = 8, .tstate_tid = 160,
		    .tstate_frame = 56, .cframe_frame = 8, .frame_code = 32, .frame_prev = 48,
		    .frame_entry = 68, .code_line = 72, .code_file = 112, .code_name = 128, .str_data = 48,
		    .frame_instr = 56, .code_code = 184, .code_lines = 136, .bytes_size = 16, .bytes_data = 32,
		    .flags = BT_PY_CFRAME } },
	/* 3.12: the C call's shim frame, owned by the C stack; 3.12.1 */
	{ 0x030c, { .interp_head = 40, .threads_head = 72, .tstate_next = 8, .tstate_tid = 144,
		    .tstate_frame = 56, .cframe_frame = 0, .frame_code = 0, .frame_prev = 8,
		    .frame_entry = 70, .code_line = 68, .code_file = 112, .code_name = 128, .str_data = 40,
		    .frame_instr = 56, .code_code = 192, .code_lines = 136, .bytes_size = 16, .bytes_data = 32,
		    .flags = BT_PY_CFRAME | BT_PY_ENTRY_SHIM } },
};

const struct bt_py_offsets *bt_py_offsets_of(uint32_t version)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].version == version)
			return &versions[i].o;
	return NULL;
}

/* The len bytes at ELF address v, from the section that holds them. */
static int read_at(Elf *elf, uint64_t v, void *out, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    v < sh.sh_addr || v + len > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || v - sh.sh_addr + len > d->d_size)
			return -1;
		memcpy(out, (const char *)d->d_buf + (v - sh.sh_addr), len);
		return 0;
	}
	return -1;
}

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), as u64
 * indices: the fields the walk reads. Its layout is 3.13's: later
 * versions add fields (and tag f_executable), so only 0x030d is read. */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2, DO_INTERP_HEAD = 5, DO_THREADS_HEAD = 9, DO_TSTATE_NEXT = 21,
	DO_TSTATE_FRAME = 23, DO_TSTATE_TID = 25, DO_FRAME_PREV = 29, DO_FRAME_CODE = 30, DO_FRAME_INSTR = 31,
	DO_FRAME_OWNER = 33, DO_CODE_FILE = 35, DO_CODE_QUALNAME = 37, DO_CODE_LINETABLE = 38, DO_CODE_LINE = 39,
	DO_CODE_ADAPTIVE = 43, DO_BYTES_SIZE = 65, DO_BYTES_DATA = 66, DO_ASCII_SIZE = 70, DO_N = 71
};

int bt_py_debug_offsets(const uint64_t *d, size_t n, struct bt_py_offsets *o)
{
	static const struct { int i; size_t at; } f[] = {
		{ DO_INTERP_HEAD, offsetof(struct bt_py_offsets, interp_head) },
		{ DO_THREADS_HEAD, offsetof(struct bt_py_offsets, threads_head) },
		{ DO_TSTATE_NEXT, offsetof(struct bt_py_offsets, tstate_next) },
		{ DO_TSTATE_TID, offsetof(struct bt_py_offsets, tstate_tid) },
		{ DO_TSTATE_FRAME, offsetof(struct bt_py_offsets, tstate_frame) },
		{ DO_FRAME_CODE, offsetof(struct bt_py_offsets, frame_code) },
		{ DO_FRAME_PREV, offsetof(struct bt_py_offsets, frame_prev) },
		{ DO_FRAME_OWNER, offsetof(struct bt_py_offsets, frame_entry) },
		{ DO_CODE_LINE, offsetof(struct bt_py_offsets, code_line) },
		{ DO_CODE_FILE, offsetof(struct bt_py_offsets, code_file) },
		{ DO_CODE_QUALNAME, offsetof(struct bt_py_offsets, code_name) },
		{ DO_ASCII_SIZE, offsetof(struct bt_py_offsets, str_data) },
		{ DO_FRAME_INSTR, offsetof(struct bt_py_offsets, frame_instr) },
		{ DO_CODE_ADAPTIVE, offsetof(struct bt_py_offsets, code_code) },
		{ DO_CODE_LINETABLE, offsetof(struct bt_py_offsets, code_lines) },
		{ DO_BYTES_SIZE, offsetof(struct bt_py_offsets, bytes_size) },
		{ DO_BYTES_DATA, offsetof(struct bt_py_offsets, bytes_data) },
	};

	memset(o, 0, sizeof(*o));
	if (n < DO_N || memcmp(d, "xdebugpy", 8) || d[DO_VERSION] >> 16 != 0x030d || d[DO_FREE_THREADED])
		return -1;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint16_t v = (uint16_t)d[f[i].i];

		if (d[f[i].i] > 0xfff8)
			return -1; /* not an offset: a layout this does not know */
		memcpy((char *)o + f[i].at, &v, sizeof(v));
	}
	o->flags = BT_PY_ENTRY_SHIM;
	return 0;
}

/* "python3.11", "libpython3.11.so.1.0": 0x030b; 0 if the name says no version. */
static uint32_t version_from_name(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL, *p;
	unsigned major, minor;

	base = base ? base + 1 : path;
	if (!base || !(p = strstr(base, "python")))
		return 0;
	if (sscanf(p + 6, "%u.%u", &major, &minor) != 2 || major != 3 || minor > 99)
		return 0;
	return major << 8 | minor;
}

int bt_py_probe(Elf *elf, const char *path, struct bt_py_file *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t runtime = 0, eval = 0, eval_size = 0, pyver = 0;
	int have_ver = 0;

	memset(out, 0, sizeof(*out));
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    !(name = elf_strptr(elf, sh.sh_link, s.st_name)) || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				runtime = s.st_value;
			} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
				eval = s.st_value;
				eval_size = s.st_size;
			} else if (!strcmp(name, "Py_Version")) {
				pyver = s.st_value;
				have_ver = 1;
			}
		}
	}
	if (!runtime || !eval || !eval_size)
		return 0;
	out->runtime = runtime;
	out->eval_lo = eval;
	out->eval_hi = eval + eval_size;
	uint32_t hex = 0;
	if (have_ver && read_at(elf, pyver, &hex, sizeof(hex)) == 0 && hex >> 24 == 3)
		out->version = hex >> 16;
	else
		out->version = version_from_name(path);
	uint64_t dbg[DO_N];
	const struct bt_py_offsets *o = bt_py_offsets_of(out->version);
	if (!o && out->version >= 0x030d && read_at(elf, runtime, dbg, sizeof(dbg)) == 0 &&
	    bt_py_debug_offsets(dbg, DO_N, &out->o) == 0) {
		out->known = 1; /* the interpreter's own */
	} else if (o) {
		out->o = *o;
		out->known = 1;
	}
	return 1;
}
