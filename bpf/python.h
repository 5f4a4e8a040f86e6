/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * python.h - CPython interpreters as the BPF side reads them
 * (bpf/python_frames.bpf.h), shared with the recorder that finds them in
 * the binaries it builds unwind tables for (user/stacks/py_offsets.c).
 *
 * A file exporting _PyRuntime and _PyEval_EvalFrameDefault (python3.x, or
 * libpython3.x.so) gets an entry in `py_files` under its (dev, ino), and
 * bit BT_UNWIND_FILE_PY in its unwind_files entry, so the walk looks it up
 * only for frames of such files. The offsets are of the version the file
 * says it is (Py_Version, else its name; 3.13+: the _Py_DebugOffsets the
 * interpreter keeps at the start of _PyRuntime); a version without offsets
 * gets known = 0: its frames stay native, counted.
 *
 * One walk reads every version: bt_py_offsets is the layout of one, its
 * flags say how its frames chain (3.10: a PyFrameObject per C call of the
 * eval loop; 3.11: _PyInterpreterFrame marked is_entry; 3.12+: a shim
 * frame owned by the C stack between the C calls) and where the thread's
 * current frame is (3.11-3.12: through a _PyCFrame).
 */
#ifndef BTRACE_PYTHON_H
#define BTRACE_PYTHON_H

#define BT_UNWIND_FILE_PY 1u   /* struct bt_unwind_file.reserved: a CPython interpreter */
#define BT_PY_MAX_FRAMES 64    /* Python frames per stack (deeper: cut, counted) */
#define BT_PY_THREADS 32       /* thread states looked at to find the sampled thread's */
#define BT_PY_NAME_LEN 96      /* a code object's qualified name, bytes read (NUL included) */
#define BT_PY_FILE_LEN 160     /* ... its file name */

/* bt_py_offsets.flags */
#define BT_PY_CFRAME 1u       /* tstate_frame points to a _PyCFrame: the frame at cframe_frame */
#define BT_PY_ENTRY_EACH 2u   /* each frame is its own C call (3.10's PyFrameObject) */
#define BT_PY_ENTRY_SHIM 4u   /* frame_entry is the owner byte: BT_PY_OWNED_BY_CSTACK is a shim
			       * frame (no code) ending a C call's frames; else: the is_entry byte */
#define BT_PY_TID_PTHREAD 8u  /* tstate_tid holds pthread_self() (x86-64: the thread's fs base) */
#define BT_PY_LASTI_INT 16u   /* frame_instr is 3.10's int f_lasti (an index), else a pointer
			       * into the code at code_code; and 3.10's line table format */
#define BT_PY_OWNED_BY_CSTACK 3 /* 3.12+'s FRAME_OWNED_BY_CSTACK */

/* Byte offsets of what the walk reads, for one CPython version. */
struct bt_py_offsets {
	__u16 interp_head;   /* _PyRuntime.interpreters.head */
	__u16 threads_head;  /* PyInterpreterState.threads.head */
	__u16 tstate_next;   /* PyThreadState.next */
	__u16 tstate_tid;    /* PyThreadState.native_thread_id (3.10: thread_id) */
	__u16 tstate_frame;  /* PyThreadState.cframe (3.10: frame; 3.13: current_frame) */
	__u16 cframe_frame;  /* _PyCFrame.current_frame (with BT_PY_CFRAME) */
	__u16 frame_code;    /* _PyInterpreterFrame.f_code (3.10: f_code; 3.13: f_executable) */
	__u16 frame_prev;    /* _PyInterpreterFrame.previous (3.10: f_back) */
	__u16 frame_entry;   /* _PyInterpreterFrame.is_entry, or .owner: a byte (3.10: unused) */
	__u16 code_line;     /* PyCodeObject.co_firstlineno (an int) */
	__u16 code_file;     /* PyCodeObject.co_filename */
	__u16 code_name;     /* PyCodeObject.co_qualname (3.10: co_name) */
	__u16 str_data;      /* a compact ASCII str's characters (sizeof(PyASCIIObject)) */
	__u16 flags;         /* BT_PY_* above */
	__u16 frame_instr;   /* _PyInterpreterFrame.prev_instr (3.10: f_lasti; 3.13: instr_ptr) */
	__u16 code_code;     /* PyCodeObject.co_code_adaptive (3.10: unused) */
	__u16 code_lines;    /* PyCodeObject.co_linetable (a bytes object) */
	__u16 bytes_size;    /* PyBytesObject.ob_size */
	__u16 bytes_data;    /* PyBytesObject.ob_sval */
	__u16 reserved[1];
};

/* Value of py_files. Addresses are ELF addresses (as unwind rows'). */
struct bt_py_file {
	__u64 runtime;        /* _PyRuntime */
	__u64 eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's [start, end) */
	__u32 version;        /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	__u32 known;          /* 1: o holds this version's offsets */
	struct bt_py_offsets o;
};

#endif
