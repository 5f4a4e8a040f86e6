/* SPDX-License-Identifier: MIT */
/* elf_symbols.h - function symbols, loadable segments and USDT notes of an
 * ELF file, and the resolution of a probe spec to a file offset. */
#ifndef BTRACE_ELF_SYMBOLS_H
#define BTRACE_ELF_SYMBOLS_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probe_spec.h"

struct bt_uprobe_sym {
	uint64_t vaddr;    /* link-time address of the probed instruction */
	uint64_t size;     /* the function's size, 0 if unknown */
	uint64_t file_off; /* file offset of the probed instruction (what uprobes take) */
	char *name;        /* what to show: symbol (demangled), plus +0xOFF; malloc'd, the caller frees */
};

/* Resolve spec (not usdt) in the ELF file `attach` (`path` names it in
 * messages). 0 or -errno + err (with suggestions). */
int bt_uprobe_find_symbol(const char *attach, const char *path, const struct bt_uprobe_spec *spec,
			  struct bt_uprobe_sym *out, char **err);

/* ---- a loaded ELF file (the resolver keeps one per file it meets) ---- */

struct bt_elf_func {
	char *name;
	char *dem; /* demangled, filled on demand */
	uint64_t vaddr, size;
	unsigned char bind, type, hidden, dem_done;
};

struct bt_elf_seg {
	uint64_t vaddr, memsz, off, filesz;
	uint32_t flags;
};

struct bt_elf_note {
	char provider[128], name[128];
	unsigned nargs;
};

struct bt_elf_file {
	char attach[PATH_MAX];
	dev_t dev;
	ino_t ino;
	int has_symtab;
	int symtab_skipped; /* a symbol table over BT_ELF_SYMTAB_MAX was not read */
	struct bt_elf_func *f;
	size_t nf;
	struct bt_elf_seg *seg;
	size_t nseg;
	struct bt_elf_note *notes;
	size_t nnotes;
	size_t *by_addr; /* f indices by address (bt_elf_func_at_vaddr), built on first use */
	size_t nby;
	/* a load failure is remembered with its message */
	int err;
	char *msg; /* malloc'd */
};

/* The most bytes of one symbol table, or of its strings, read from a file
 * (whole, into memory): a table claiming more is skipped (its functions
 * are then unnamed) and symtab_skipped set. */
#define BT_ELF_SYMTAB_MAX (256ull << 20)

/* Load the function symbols, loadable segments and USDT notes of `attach`
 * (`path` names it in messages) into a zeroed ef. 0 or -errno + err. */
int bt_elf_load(const char *attach, const char *path, struct bt_elf_file *ef, char **err);
void bt_elf_free(struct bt_elf_file *ef);
/* Resolve spec (not usdt) among ef's functions and segments. 0 or -errno + err. */
int bt_elf_resolve_sym(struct bt_elf_file *ef, const char *path, const struct bt_uprobe_spec *spec,
		       struct bt_uprobe_sym *out, char **err);

/* Symbolization (stack_symbols.c): the link-time address of file offset
 * off: 0, or -ENOENT if no loadable segment holds it. */
int bt_elf_offset_to_vaddr(const struct bt_elf_file *ef, uint64_t off, uint64_t *vaddr);
/* The function containing link-time address vaddr, NULL if none; a symbol
 * without a size covers up to the next one. By address: a separate debug
 * file's segments have no file offsets. */
struct bt_elf_func *bt_elf_func_at_vaddr(struct bt_elf_file *ef, uint64_t vaddr);
/* Its name to show: demangled for C++, else as in the symbol table. */
const char *bt_elf_func_name(struct bt_elf_func *f);
/* The GNU build-id of the ELF file at fd into out (at most len bytes); its
 * length, 0 if none. The file is read, not mapped. */
uint32_t bt_elf_build_id(int fd, uint8_t *out, uint32_t len);
#define BT_BUILD_ID_MAX 20 /* bytes of a build-id captured and compared */
/* Whether the ELF file at fd has that build-id (its first len bytes, at
 * most BT_BUILD_ID_MAX: what was captured). */
int bt_elf_build_id_is(int fd, const uint8_t *build_id, uint32_t len);
#endif
