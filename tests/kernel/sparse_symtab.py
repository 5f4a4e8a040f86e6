#!/usr/bin/env python3
"""sparse_symtab.py FILE GIB: make FILE's .symtab claim GIB GiB (a hostile
user's binary, tests/kernel/test_hostile.sh and tests/unit/test_elf_load.c):
the section header now points at a sparse hole appended to the file, which
costs no disk but whose whole size a reader that trusts it takes in memory."""
import struct
import sys

path, gib = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or eh[4] != 2:
        sys.exit("not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", eh, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", eh, 0x3A)
    f.seek(0, 2)
    end = (f.tell() + 4095) & ~4095
    for i in range(shnum):
        f.seek(shoff + i * shentsize)
        sh = f.read(shentsize)
        if struct.unpack_from("<I", sh, 4)[0] == 2:  # SHT_SYMTAB
            size = (gib << 30) // 24 * 24
            f.seek(shoff + i * shentsize + 0x18)
            f.write(struct.pack("<QQ", end, size))
            f.truncate(end + size)
            break
    else:
        sys.exit("no .symtab")
