// SPDX-License-Identifier: MIT
/*
 * dwarf_lines.c - source locations from DWARF (see dwarf_lines.h).
 *
 * libdw reads the DWARF (every version GCC and clang emit, compressed
 * sections, dwz's shared files); the search for the unit and function
 * holding an address is ours: libdw's needs .debug_aranges, which clang
 * and rustc do not emit (elfutils 0.188), and its scope walk skips
 * namespaces, where C++ functions live. So:
 *   - the compilation units' address ranges, read once per file;
 *   - per unit, on first use, its functions' ranges (namespaces, classes
 *     and structures descended: methods defined there);
 *   - per lookup, from the function, the inlined calls and blocks whose
 *     ranges hold the address, down to the innermost.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "debug_file.h"
#include "dwarf_lines.h"
#include "symbol_names.h"
#include "trusted_file.h"

#define NEST_MAX 64 /* DIE depth followed (namespaces, classes, blocks, inlined calls) */

struct range {
	uint64_t lo, hi; /* [lo, hi) */
	Dwarf_Off die;   /* the function's DIE, or the unit's */
};

struct unit {
	Dwarf_Off die;       /* its unit DIE */
	struct range *fns;   /* its functions' ranges, sorted; built on first use */
	size_t nfns;
	int indexed;
};

struct dem { /* mangled name (libdw's, stable until dwarf_end) -> demangled */
	const char *key;
	char *val;
};

enum { F_MAIN, F_DEBUG, F_ALT, F_N }; /* the file, its debug file, dwz's shared file */

struct bt_dwarf {
	int fd[F_N]; /* -1: none */
	Elf *elf[F_N];
	int mapped[F_N]; /* 1: only root can change the file, so it is mapped */
	Dwarf *dbg, *alt;
	struct unit *units;
	size_t nunits;
	struct range *ur; /* units' ranges (die = unit index), sorted */
	size_t nur;
	struct dem *dem;
	size_t ndem, demcap; /* demcap: power of two */
	uint64_t indexed;    /* units indexed so far (bt_dwarf_units_indexed) */
	uint64_t debug_bytes; /* of the files opened (bt_dwarf_debug_bytes) */
};

/* ---- ranges --------------------------------------------------------------- */

struct rvec {
	struct range *r;
	size_t n, cap;
};

static int rvec_push(struct rvec *v, uint64_t lo, uint64_t hi, Dwarf_Off die)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *p = realloc(v->r, cap * sizeof(*v->r));
		if (!p)
			return -ENOMEM;
		v->r = p;
		v->cap = cap;
	}
	v->r[v->n++] = (struct range){ lo, hi, die };
	return 0;
}

/* Every address range of die into v (tagged `tag`). */
static int push_ranges(struct rvec *v, Dwarf_Die *die, Dwarf_Off tag)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (hi > lo && rvec_push(v, lo, hi, tag))
			return -ENOMEM;
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The range holding addr (the last starting at or below it), NULL if none. */
static const struct range *range_find(const struct range *r, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges rarely nest (a unit inside another's span): look a few back */
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++)
		if (addr < r[i].hi)
			return &r[i];
	return NULL;
}

/* ---- opening ---------------------------------------------------------------- */

static int index_units(struct bt_dwarf *dw)
{
	struct rvec v = { 0 };
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t type;

	while (dwarf_get_units(dw->dbg, cu, &next, NULL, &type, &cudie, NULL) == 0) {
		cu = next;
		if (type != DW_UT_compile)
			continue; /* type units, dwz's partial units, skeletons: no code of their own */
		if (dw->nunits % 64 == 0) {
			void *p = realloc(dw->units, (dw->nunits + 64) * sizeof(*dw->units));
			if (!p)
				goto nomem;
			dw->units = p;
		}
		dw->units[dw->nunits] = (struct unit){ .die = dwarf_dieoffset(&cudie) };
		if (push_ranges(&v, &cudie, dw->nunits))
			goto nomem;
		dw->nunits++;
	}
	if (v.n)
		qsort(v.r, v.n, sizeof(*v.r), by_lo);
	dw->ur = v.r;
	dw->nur = v.n;
	return 0;
nomem:
	free(v.r);
	return -ENOMEM;
}

/* An Elf of our copy of fd for libdw: mapped if only root can change the
 * file, else read, at most BT_UNTRUSTED_READ_MAX bytes of DWARF. */
static int open_elf(struct bt_dwarf *dw, int which, int fd)
{
	if ((dw->fd[which] = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return -1;
	int map = bt_file_mappable(fd);
	dw->mapped[which] = map;
	Elf *e = elf_begin(dw->fd[which], map ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
	if (!e)
		return -1;
	dw->elf[which] = e;
	if (elf_kind(e) != ELF_K_ELF)
		return -1;
	uint64_t n = bt_elf_debug_bytes(e);
	if (!map && n > BT_UNTRUSTED_READ_MAX)
		return -1;
	dw->debug_bytes += n;
	return 0;
}

/* dwz's shared file, found by us (libdw would open the path the file
 * names, blocking, and map it): 0, or -1 if named and not found. */
static int open_alt(struct bt_dwarf *dw, const char *debug_dirs)
{
	const char *name;
	const void *bid;
	ssize_t n = dwelf_dwarf_gnu_debugaltlink(dw->dbg, &name, &bid);

	if (n == 0)
		return 0;
	if (n < 2)
		return -1;
	int fd = bt_debug_file_open(NULL, bid, (uint32_t)n, NULL, 0, debug_dirs, NULL);
	if (fd < 0)
		return -1;
	int r = open_elf(dw, F_ALT, fd);
	close(fd);
	if (r || !(dw->alt = dwarf_begin_elf(dw->elf[F_ALT], DWARF_C_READ, NULL)))
		return -1;
	dwarf_setalt(dw->dbg, dw->alt);
	return 0;
}

/* The DWARF of file `which` (opened), its shared file, its units. */
static int begin(struct bt_dwarf *dw, int which, const char *debug_dirs)
{
	dw->dbg = dwarf_begin_elf(dw->elf[which], DWARF_C_READ, NULL);
	if (!dw->dbg)
		return -1;
	if (open_alt(dw, debug_dirs) == 0 && index_units(dw) == 0 && dw->nunits)
		return 0;
	dwarf_end(dw->dbg);
	dw->dbg = NULL;
	free(dw->units);
	free(dw->ur);
	dw->units = NULL;
	dw->ur = NULL;
	dw->nunits = dw->nur = 0;
	return -1;
}

/* Read files (another user's) are not kept open: a descriptor would pin the
 * file (a deleted one's blocks) for as long as the cache holds it, past
 * mapping_capture's bound. dwarf_begin_elf has read every debug section
 * by now (within BT_UNTRUSTED_READ_MAX), so libelf needs the fd no more. */
static struct bt_dwarf *release_fds(struct bt_dwarf *dw)
{
	for (int i = 0; i < F_N; i++)
		if (dw->fd[i] >= 0 && !dw->mapped[i] && dw->elf[i] && elf_cntl(dw->elf[i], ELF_C_FDDONE) == 0) {
			close(dw->fd[i]);
			dw->fd[i] = -1;
		}
	return dw;
}

struct bt_dwarf *bt_dwarf_open(int fd, const char *path, const uint8_t *build_id, uint32_t len,
			       const char *debug_dirs)
{
	struct bt_dwarf *dw = calloc(1, sizeof(*dw));
	const void *bid = NULL;

	if (!dw)
		return NULL;
	for (int i = 0; i < F_N; i++)
		dw->fd[i] = -1;
	if (elf_version(EV_CURRENT) == EV_NONE || open_elf(dw, F_MAIN, fd)) /* not ELF: refused there */
		goto fail;
	/* the same build as captured (its first 20 bytes): a file rewritten in
	 * place since is not it */
	ssize_t n = dwelf_elf_gnu_build_id(dw->elf[F_MAIN], &bid);
	if (len && (n < (ssize_t)len || memcmp(bid, build_id, len) != 0))
		goto fail;
	if (begin(dw, F_MAIN, debug_dirs) == 0)
		return release_fds(dw);
	/* stripped (or no unit of its own): its debug file */
	GElf_Word crc = 0;
	const char *link = dwelf_elf_gnu_debuglink(dw->elf[F_MAIN], &crc);
	int dfd = bt_debug_file_open(path, n > 0 ? bid : NULL, n > 0 ? (uint32_t)n : 0, link, crc, debug_dirs, NULL);
	if (dfd < 0)
		goto fail;
	int r = open_elf(dw, F_DEBUG, dfd);
	close(dfd);
	if (r == 0 && begin(dw, F_DEBUG, debug_dirs) == 0)
		return release_fds(dw);
fail:
	bt_dwarf_close(dw);
	return NULL;
}

uint64_t bt_dwarf_debug_bytes(const struct bt_dwarf *dw)
{
	return dw ? dw->debug_bytes : 0;
}

void bt_dwarf_close(struct bt_dwarf *dw)
{
	if (!dw)
		return;
	if (dw->dbg)
		dwarf_end(dw->dbg);
	if (dw->alt) /* set with dwarf_setalt: ours to end */
		dwarf_end(dw->alt);
	for (int i = 0; i < F_N; i++) {
		if (dw->elf[i])
			elf_end(dw->elf[i]);
		if (dw->fd[i] >= 0)
			close(dw->fd[i]);
	}
	for (size_t i = 0; i < dw->nunits; i++)
		free(dw->units[i].fns);
	free(dw->units);
	free(dw->ur);
	for (size_t i = 0; i < dw->demcap; i++)
		free(dw->dem[i].val);
	free(dw->dem);
	free(dw);
}

/* ---- names ------------------------------------------------------------------ */

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
 * an inlined copy points to, or on the declaration it specifies. */
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
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

static uint32_t die_udata(Dwarf_Die *die, unsigned attr)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (!dwarf_attr(die, attr, &a) || dwarf_formudata(&a, &v) != 0 || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

/* ---- a unit's functions ------------------------------------------------------ */

/* Functions defined inside function fn, in it or its blocks, with code of
 * their own elsewhere (GCC's OpenMP bodies, Fortran's internal
 * procedures). */
static int index_nested(struct rvec *v, Dwarf_Die *fn, int depth)
{
	Dwarf_Die c;

	if (depth >= NEST_MAX || dwarf_child(fn, &c) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_subprogram && push_ranges(v, &c, dwarf_dieoffset(&c)))
			return -ENOMEM;
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block) && index_nested(v, &c, depth + 1))
			return -ENOMEM;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/* Functions with code under die (children, and those of namespaces,
 * classes and structures, where C++ defines them). */
static int index_fns(struct rvec *v, Dwarf_Die *die, int depth)
{
	Dwarf_Die c;

	if (depth >= NEST_MAX || dwarf_child(die, &c) != 0)
		return 0;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			if (push_ranges(v, &c, dwarf_dieoffset(&c)) || index_nested(v, &c, depth + 1))
				return -ENOMEM;
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (index_fns(v, &c, depth + 1))
				return -ENOMEM;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static struct unit *unit_indexed(struct bt_dwarf *dw, size_t i)
{
	struct unit *u = &dw->units[i];
	Dwarf_Die cu;

	if (u->indexed)
		return u;
	struct rvec v = { 0 };
	if (!dwarf_offdie(dw->dbg, u->die, &cu) || index_fns(&v, &cu, 0)) {
		free(v.r);
		return NULL; /* asked again next time */
	}
	if (v.n)
		qsort(v.r, v.n, sizeof(*v.r), by_lo);
	u->fns = v.r;
	u->nfns = v.n;
	u->indexed = 1;
	dw->indexed++;
	return u;
}

/* ---- lookup ------------------------------------------------------------------ */

static int scope_tag(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block || tag == DW_TAG_subprogram;
}

uint64_t bt_dwarf_units_indexed(const struct bt_dwarf *dw)
{
	return dw ? dw->indexed : 0;
}

int bt_dwarf_decoded_at(const struct bt_dwarf *dw, uint64_t vaddr)
{
	const struct range *ur = dw ? range_find(dw->ur, dw->nur, vaddr) : NULL;

	return !ur || dw->units[ur->die].indexed;
}

int bt_dwarf_lookup(struct bt_dwarf *dw, uint64_t vaddr, struct bt_src_line *out, int max, uint64_t *entry)
{
	Dwarf_Die path[NEST_MAX], cu, fn;
	int depth = 0, n = 0;

	*entry = 0;
	if (!dw || max < 1)
		return 0;
	const struct range *ur = range_find(dw->ur, dw->nur, vaddr);
	if (!ur || !dwarf_offdie(dw->dbg, dw->units[ur->die].die, &cu))
		return 0;
	/* the innermost line: the line table's row at vaddr (line 0: the
	 * compiler made up the code, no line; kept, its calls still are) */
	Dwarf_Line *ln = dwarf_getsrc_die(&cu, vaddr);
	struct bt_src_line cur = { NULL, NULL, 0, 0 };
	if (ln) {
		int l = 0, c = 0;
		cur.file = dwarf_linesrc(ln, NULL, NULL);
		dwarf_lineno(ln, &l);
		dwarf_linecol(ln, &c);
		cur.line = l > 0 ? (uint32_t)l : 0;
		cur.col = c > 0 ? (uint32_t)c : 0;
	}
	/* the function, then the scopes inside it that hold vaddr */
	struct unit *u = unit_indexed(dw, ur->die);
	const struct range *fr = u ? range_find(u->fns, u->nfns, vaddr) : NULL;
	if (fr && dwarf_offdie(dw->dbg, fr->die, &fn)) {
		path[depth++] = fn;
		for (;;) {
			Dwarf_Die c;
			int found = 0;
			if (depth == NEST_MAX || dwarf_child(&path[depth - 1], &c) != 0)
				break;
			do {
				if (scope_tag(dwarf_tag(&c)) && dwarf_haspc(&c, vaddr) == 1) {
					path[depth++] = c;
					found = 1;
					break;
				}
			} while (dwarf_siblingof(&c, &c) == 0);
			if (!found)
				break;
		}
		Dwarf_Addr pc;
		if (dwarf_entrypc(&fn, &pc) == 0)
			*entry = pc;
	}
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (dwarf_getsrcfiles(&cu, &files, &nfiles) != 0)
		files = NULL;
	/* Innermost first: each inlined call is a line inside the inlined
	 * function, and its call site is where the next one out is. */
	struct bt_src_line chain[NEST_MAX];
	for (int i = depth; i-- > 0;) {
		int tag = dwarf_tag(&path[i]);
		if (tag == DW_TAG_lexical_block)
			continue;
		cur.func = die_func_name(dw, &path[i]);
		chain[n++] = cur;
		if (tag == DW_TAG_subprogram)
			break;
		uint32_t cf = die_udata(&path[i], DW_AT_call_file);
		const char *f = files && cf < nfiles ? dwarf_filesrc(files, cf, NULL, NULL) : NULL;
		cur = (struct bt_src_line){ f, NULL, die_udata(&path[i], DW_AT_call_line),
					    die_udata(&path[i], DW_AT_call_column) };
	}
	if (!n) { /* no function (assembly): the line alone */
		if (!cur.file)
			return 0;
		chain[n++] = cur;
	}
	/* too deep: keep the outer end (the frame's own function) */
	int skip = n > max ? n - max : 0;
	for (int i = skip; i < n; i++) {
		out[i - skip] = chain[i];
		if (!out[i - skip].file)
			out[i - skip].file = "?";
	}
	return n - skip;
}
