# py_offsets_check.py - the offsets the recorder finds in a CPython
# interpreter (user/stacks/py_offsets.c: a table for 3.10-3.12, 3.13's
# _Py_DebugOffsets), checked against the running interpreter's own memory
# (ctypes), walked as bpf/python_frames.bpf.h walks it. Run with the
# interpreter checked; arguments: the name=value line that
# `build/tests/test_py_codes --offsets FILE` prints for its binary or
# libpython. Prints "ok" or what differs; exit status 0 when all agree.
# Used by test_python_frames.sh and test_python_versions.sh.
import ctypes
import sys
import threading

BT_PY_CFRAME, BT_PY_ENTRY_EACH, BT_PY_ENTRY_SHIM, BT_PY_TID_PTHREAD, BT_PY_LASTI_INT = 1, 2, 4, 8, 16
OWNED_BY_CSTACK = 3

O = {k: int(v, 0) for k, v in (a.split("=", 1) for a in sys.argv[1:])}
# _PyRuntime where the process has it (the executable or libpython)
RUNTIME = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
FLAGS = O["flags"]


def u64(a):
    return ctypes.c_uint64.from_address(a).value


def s(a):
    return ctypes.string_at(a + O["str_data"]).decode()  # a compact ASCII str's data


def fs_base():
    # arch_prctl(ARCH_GET_FS): the BPF side compares 3.10's thread_id with it
    v = ctypes.c_uint64()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(158, 0x1003, ctypes.byref(v))
    return v.value


def leaf():
    # ctypes only (no Python helper) until fr is read: its frame would be current
    Q = ctypes.c_uint64.from_address
    ts = Q(Q(RUNTIME + O["interp_head"]).value + O["threads_head"]).value
    fr = Q(ts + O["tstate_frame"]).value
    if FLAGS & BT_PY_CFRAME:
        fr = Q(fr + O["cframe_frame"]).value
    bad = []
    if O["version"] != sys.version_info[0] << 8 | sys.version_info[1]:
        bad.append("version %#x" % O["version"])
    if FLAGS & BT_PY_TID_PTHREAD:
        if u64(ts + O["tstate_tid"]) != threading.get_ident():
            bad.append("thread_id")
        elif sys.platform == "linux" and u64(ts + O["tstate_tid"]) != fs_base():
            bad.append("thread_id is not the fs base")
    elif u64(ts + O["tstate_tid"]) != threading.get_native_id():
        bad.append("native_thread_id")
    if u64(ts + O["tstate_next"]) != 0:
        bad.append("next (one thread)")
    py = sys._getframe()
    name = "co_name" if sys.version_info < (3, 11) else "co_qualname"
    last_entry = False
    while fr and py:
        if FLAGS & BT_PY_ENTRY_SHIM and ctypes.c_uint8.from_address(fr + O["frame_entry"]).value == OWNED_BY_CSTACK:
            fr = u64(fr + O["frame_prev"])  # the C call's shim: the frame before it began the call
            last_entry = True
            continue
        last_entry = bool(FLAGS & BT_PY_ENTRY_EACH) or (
            not FLAGS & BT_PY_ENTRY_SHIM and ctypes.c_uint8.from_address(fr + O["frame_entry"]).value != 0)
        code = u64(fr + O["frame_code"])
        if code != id(py.f_code):
            bad.append("f_code at %s" % py.f_code.co_name)
            break
        if s(u64(code + O["code_name"])) != getattr(py.f_code, name):
            bad.append(name)
        if s(u64(code + O["code_file"])) != py.f_code.co_filename:
            bad.append("co_filename")
        if ctypes.c_int.from_address(code + O["code_line"]).value != py.f_code.co_firstlineno:
            bad.append("co_firstlineno")
        lt = u64(code + O["code_lines"])
        n = len(py.f_code.co_linetable)
        if lt != id(py.f_code.co_linetable) or u64(lt + O["bytes_size"]) != n or \
                ctypes.string_at(lt + O["bytes_data"], n) != py.f_code.co_linetable:
            bad.append("co_linetable at %s" % py.f_code.co_name)
        # the instruction a caller runs (its call), as f_lasti says in bytes
        if FLAGS & BT_PY_LASTI_INT:
            at = ctypes.c_int.from_address(fr + O["frame_instr"]).value * 2
        else:
            at = u64(fr + O["frame_instr"]) - (code + O["code_code"])
        if py is not sys._getframe() and at != py.f_lasti:
            bad.append("instruction %d, f_lasti %d at %s" % (at, py.f_lasti, py.f_code.co_name))
        fr = u64(fr + O["frame_prev"])
        py = py.f_back
    if FLAGS & BT_PY_ENTRY_SHIM and fr and ctypes.c_uint8.from_address(fr + O["frame_entry"]).value == OWNED_BY_CSTACK:
        fr = u64(fr + O["frame_prev"])
        last_entry = True
    if py is not None or fr or not last_entry:
        bad.append("previous / the C call's first frame at the outermost frame")
    return bad


def a():
    return b()


def b():
    return leaf()


bad = a()
print("ok" if not bad else "differ: " + ", ".join(bad))
sys.exit(1 if bad else 0)
