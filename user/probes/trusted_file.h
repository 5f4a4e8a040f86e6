/* SPDX-License-Identifier: MIT */
/*
 * trusted_file.h - other users' files read without trusting them. A file
 * the recorder maps can be truncated by whoever can write it, and a read
 * of the mapping past the new end kills the recorder with SIGBUS; a path
 * found in another process's maps or in a binary's debug link may name a
 * FIFO, a terminal or a device whose open alone does something. So paths
 * are opened only once known to be regular files, and only files nobody
 * but root can change, on a local file system, are mapped; the others are
 * read (libelf's ELF_C_READ), a bounded number of bytes.
 */
#ifndef BTRACE_TRUSTED_FILE_H
#define BTRACE_TRUSTED_FILE_H
#include <stdint.h>
#include <libelf.h>

/* Bytes of debug sections read from a file that may not be mapped. */
#define BT_UNTRUSTED_READ_MAX (256ull << 20)

/* Open path for reading if it is a regular file (symbolic links
 * followed), without ever opening anything else: it is looked at through
 * an O_PATH descriptor first. Never blocks, never takes a terminal. fd or
 * -errno (-ENOEXEC: not a regular file). */
int bt_open_regular(const char *path);
/* The same, refused (-ELOOP) if any component of path is a symbolic link:
 * for paths in directories another user controls, where a link would make
 * root read what it names. */
int bt_open_regular_nolinks(const char *path);
/* Whether fd's file may be mapped: only root can change it (owner root, no
 * group or other write: POSIX ACLs show in the group bits) and it lives on
 * a local file system whose owner and modes mean what they say (not FUSE,
 * NFS, overlays of containers). */
int bt_file_mappable(int fd);
/* Whether only root can have written fd's file: as bt_file_mappable, and
 * on an overlay too (whose owners and modes are its layers'; a container's
 * files, not mapped: a layer below may change). For what is believed of a
 * file's content, like its build-id, not for mapping it. */
int bt_file_root_only(int fd);

/* Bytes of DWARF sections in e, inflated size counted for compressed ones
 * (what libdw reads and inflates when it opens e); UINT64_MAX if the
 * headers cannot be read. Bound it before dwarf_begin_elf on a file
 * another user controls: a small file can declare a huge section. */
uint64_t bt_elf_debug_bytes(Elf *e);
#endif
