// SPDX-License-Identifier: MIT
/*
 * dwarf_lines.c - source locations from DWARF (see dwarf_lines.h).
 *
 * libdwfl rather than our own DWARF reader: it finds separate debug files
 * (build-id, debuglink), follows dwz's shared .debug files, inflates
 * compressed sections and reads every DWARF version GCC and clang emit;
 * Debian keeps it current. One Dwfl per file, reported offline: addresses
 * are link-time addresses plus the bias libdwfl placed the module at.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dwarf_lines.h"
#include "symbol_names.h"

struct dem { /* mangled name (libdw's, stable until dwfl_end) -> demangled */
	const char *key;
	char *val;
};

struct bt_dwarf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwfl_Callbacks cb;
	char *path; /* the debuginfo search path cb points at */
	int no_dwarf;
	Dwarf_Addr bias;
	struct dem *dem;
	size_t ndem, demcap; /* demcap: power of two */
};

struct bt_dwarf *bt_dwarf_open(int fd, const char *name, const char *debug_dirs)
{
	struct bt_dwarf *dw = calloc(1, sizeof(*dw));
	int dfd = -1;

	if (!dw)
		return NULL;
	/* The user's directories first, then libdwfl's default: the file's own
	 * directory, its .debug/, /usr/lib/debug (build-id and debuglink). */
	if (asprintf(&dw->path, "%s%s:.debug:/usr/lib/debug", debug_dirs ? debug_dirs : "", debug_dirs ? ":" : "") <
	    0) {
		dw->path = NULL;
		goto fail;
	}
	dw->cb.find_elf = dwfl_build_id_find_elf;
	dw->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	dw->cb.section_address = dwfl_offline_section_address;
	dw->cb.debuginfo_path = &dw->path;
	dw->dwfl = dwfl_begin(&dw->cb);
	if (!dw->dwfl)
		goto fail;
	dfd = dup(fd); /* libdwfl closes what it is given */
	if (dfd < 0)
		goto fail;
	dw->mod = dwfl_report_offline(dw->dwfl, name, name, dfd);
	if (!dw->mod) {
		close(dfd);
		goto fail;
	}
	dwfl_report_end(dw->dwfl, NULL, NULL);
	if (!dwfl_module_getdwarf(dw->mod, &dw->bias))
		dw->no_dwarf = 1;
	return dw;
fail:
	bt_dwarf_close(dw);
	return NULL;
}

void bt_dwarf_close(struct bt_dwarf *dw)
{
	if (!dw)
		return;
	if (dw->dwfl)
		dwfl_end(dw->dwfl);
	for (size_t i = 0; i < dw->demcap; i++)
		free(dw->dem[i].val);
	free(dw->dem);
	free(dw->path);
	free(dw);
}

int bt_dwarf_has_info(const struct bt_dwarf *dw)
{
	return dw && !dw->no_dwarf;
}

const char *bt_dwarf_debug_file(struct bt_dwarf *dw)
{
	const char *main_file = NULL, *debug_file = NULL;

	if (!dw || dw->no_dwarf)
		return NULL;
	dwfl_module_info(dw->mod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug_file);
	return debug_file && (!main_file || strcmp(debug_file, main_file) != 0) ? debug_file : NULL;
}

/* The demangled form of a C++ linkage name, cached; NULL if it is none. */
static const char *demangled(struct bt_dwarf *dw, const char *mangled)
{
	if (strncmp(mangled, "_Z", 2) != 0)
		return NULL;
	if (2 * (dw->ndem + 1) > dw->demcap) {
		size_t cap = dw->demcap ? dw->demcap * 2 : 256;
		struct dem *d = calloc(cap, sizeof(*d));
		if (!d)
			return NULL;
		for (size_t i = 0; i < dw->demcap; i++) {
			if (!dw->dem[i].key)
				continue;
			size_t k = ((uintptr_t)dw->dem[i].key >> 3) & (cap - 1);
			while (d[k].key)
				k = (k + 1) & (cap - 1);
			d[k] = dw->dem[i];
		}
		free(dw->dem);
		dw->dem = d;
		dw->demcap = cap;
	}
	size_t k = ((uintptr_t)mangled >> 3) & (dw->demcap - 1);
	while (dw->dem[k].key) {
		if (dw->dem[k].key == mangled)
			return dw->dem[k].val;
		k = (k + 1) & (dw->demcap - 1);
	}
	dw->dem[k].key = mangled;
	dw->dem[k].val = bt_demangle(mangled); /* NULL remembered too */
	dw->ndem++;
	return dw->dem[k].val;
}

/* A function's name: its linkage name demangled (C++: with its class and
 * parameters), else its plain name; both may sit on the abstract origin
 * an inlined copy points to. */
static const char *die_func_name(struct bt_dwarf *dw, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (n) {
		const char *d = demangled(dw, n);
		if (d)
			return d;
	}
	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	return n;
}

static uint32_t die_udata(Dwarf_Die *die, unsigned attr)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (!dwarf_attr(die, attr, &a) || dwarf_formudata(&a, &v) != 0 || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

int bt_dwarf_lookup(struct bt_dwarf *dw, uint64_t vaddr, struct bt_src_line *out, int max, uint64_t *entry)
{
	Dwarf_Addr addr = vaddr + dw->bias, cubias = 0;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *ln;
	int lineno = 0, col = 0, n = 0, nscopes;
	const char *file;

	*entry = 0;
	if (!dw || dw->no_dwarf || max < 1)
		return 0;
	ln = dwfl_module_getsrc(dw->mod, addr);
	file = ln ? dwfl_lineinfo(ln, NULL, &lineno, &col, NULL, NULL) : NULL;
	if (!file || lineno <= 0)
		return 0;
	struct bt_src_line cur = { file, NULL, (uint32_t)lineno, col > 0 ? (uint32_t)col : 0 };
	cu = dwfl_module_addrdie(dw->mod, addr, &cubias);
	nscopes = cu ? dwarf_getscopes(cu, addr - cubias, &scopes) : 0;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	/* Innermost scope first: each inlined call is a line inside the
	 * inlined function, and its call site is where the next one out is.
	 * Past an inlined call, libdw's scopes continue in the function's
	 * abstract definition: the concrete ones around it are asked for
	 * anew, from that DIE. */
	for (int i = 0; i < nscopes && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		cur.func = die_func_name(dw, &scopes[i]);
		out[n++] = cur;
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr pc;
			if (dwarf_entrypc(&scopes[i], &pc) == 0)
				*entry = pc; /* DWARF's addresses are link-time ones */
			break;
		}
		uint32_t cf = die_udata(&scopes[i], DW_AT_call_file);
		const char *f = files && cf < nfiles ? dwarf_filesrc(files, cf, NULL, NULL) : NULL;
		cur = (struct bt_src_line){ f ? f : "?", NULL, die_udata(&scopes[i], DW_AT_call_line),
					    die_udata(&scopes[i], DW_AT_call_column) };
		Dwarf_Die *outer = NULL;
		int nouter = dwarf_getscopes_die(&scopes[i], &outer);
		free(scopes);
		scopes = outer;
		nscopes = nouter;
		i = 0; /* outer[0] is the inlined call itself */
	}
	free(scopes);
	if (!n) /* line table, no scope (assembly, or a CU without DIEs) */
		out[n++] = cur;
	return n;
}
