// SPDX-License-Identifier: MIT
/*
 * elf_symbols.c - an ELF file's function symbols (.symtab, .dynsym, with
 * symbol versions), loadable segments and USDT notes (.note.stapsdt), read
 * with libelf; and the resolution of a function, demangled C++ name or
 * address to the file offset a uprobe takes, with suggestions when a name is
 * not found.
 */
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf_symbols.h"
#include "insn_bounds.h"
#include "symbol_names.h"
#include "util.h"

void bt_elf_free(struct bt_elf_file *ef)
{
	for (size_t i = 0; i < ef->nf; i++) {
		free(ef->f[i].name);
		free(ef->f[i].dem);
	}
	free(ef->f);
	free(ef->by_addr);
	free(ef->seg);
	free(ef->notes);
	free(ef->msg);
}

static int efunc_cmp(const void *a, const void *b)
{
	const struct bt_elf_func *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int bind_rank(unsigned char bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static uint16_t host_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#elif defined(__riscv)
	return EM_RISCV;
#elif defined(__powerpc64__)
	return EM_PPC64;
#elif defined(__s390x__)
	return EM_S390;
#else
	return EM_NONE;
#endif
}

static void parse_stapsdt(Elf *e, Elf_Scn *scn, int cls, struct bt_elf_file *ef)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off, asz = cls == ELFCLASS64 ? 8 : 4;
	GElf_Nhdr nh;

	(void)e;
	if (!d)
		return;
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		off = next;
		if (nh.n_type != 3 || nh.n_namesz != 8 || memcmp((char *)d->d_buf + name_off, "stapsdt", 8) != 0)
			continue;
		if (nh.n_descsz < 3 * asz + 3)
			continue;
		const char *desc = (const char *)d->d_buf + desc_off, *end = desc + nh.n_descsz;
		const char *prov = desc + 3 * asz, *name, *args;
		name = memchr(prov, '\0', (size_t)(end - prov));
		if (!name++ || name >= end)
			continue;
		args = memchr(name, '\0', (size_t)(end - name));
		if (!args++ || args > end)
			continue;
		unsigned na = 0;
		if (args < end) {
			const char *a = args;
			int in = 0;
			for (; a < end && *a; a++) {
				if (*a != ' ' && !in)
					na++, in = 1;
				else if (*a == ' ')
					in = 0;
			}
		}
		size_t j;
		for (j = 0; j < ef->nnotes; j++)
			if (strcmp(ef->notes[j].provider, prov) == 0 && strcmp(ef->notes[j].name, name) == 0)
				break;
		if (j < ef->nnotes)
			continue;
		struct bt_elf_note *nv = realloc(ef->notes, (ef->nnotes + 1) * sizeof(*nv));
		if (!nv)
			return;
		ef->notes = nv;
		snprintf(nv[ef->nnotes].provider, sizeof(nv->provider), "%s", prov);
		snprintf(nv[ef->nnotes].name, sizeof(nv->name), "%s", name);
		nv[ef->nnotes].nargs = na;
		ef->nnotes++;
	}
}

/* What bt_elf_load's steps share. */
struct elf_load {
	Elf *e;
	const char *path; /* for messages */
	char **err;
	size_t shnum, shstrndx;
	unsigned char *sec_exec; /* [section index]: holds code */
	Elf_Data *versym;
};

/* Open attach read-only if it is a regular ELF file: the descriptor, or
 * -errno with the reason in *err. */
static int open_elf_file(const char *attach, const char *path, char **err)
{
	unsigned char magic[4];
	struct stat st;
	/* Paths come from other processes' maps: a FIFO or a device put
	 * there must not block the recorder (O_NONBLOCK), nor be read. */
	int fd = open(attach, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			return bt_errs(err, EACCES, "permission denied opening %s", path);
		return bt_errs(err, errno, "cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return bt_errs(err, ENOEXEC, "%s is not a regular file (not a program or shared library)", path);
	}
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0) {
		close(fd);
		return bt_errs(err, ENOEXEC, "%s is not an ELF file (not a program or shared library)", path);
	}
	return fd;
}

/* The ELF header: a program or shared library of this machine, with
 * readable section and program header tables. */
static int check_elf_header(struct elf_load *l, size_t *phnum)
{
	GElf_Ehdr eh;

	if (elf_kind(l->e) != ELF_K_ELF || !gelf_getehdr(l->e, &eh))
		return bt_errs(l->err, ENOEXEC, "%s: unreadable ELF file (%s)", l->path, elf_errmsg(-1));
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return bt_errs(l->err, ENOEXEC, "%s is an ELF %s, not a program or shared library", l->path,
			       eh.e_type == ET_REL    ? "object file"
			       : eh.e_type == ET_CORE ? "core dump"
						      : "file of unknown type");
	if (host_machine() != EM_NONE && eh.e_machine != host_machine())
		return bt_errs(l->err, ENOEXEC, "%s is built for another architecture (ELF machine %u)", l->path,
			       eh.e_machine);
	if (elf_getshdrnum(l->e, &l->shnum) || elf_getshdrstrndx(l->e, &l->shstrndx) || elf_getphdrnum(l->e, phnum))
		return bt_errs(l->err, ENOEXEC, "%s: corrupt ELF headers (%s)", l->path, elf_errmsg(-1));
	return 0;
}

/* Loadable segments: virtual address -> file offset. */
static int load_segments(struct elf_load *l, size_t phnum, struct bt_elf_file *ef)
{
	ef->seg = calloc(phnum ? phnum : 1, sizeof(*ef->seg));
	if (!ef->seg)
		return bt_errs(l->err, ENOMEM, "out of memory");
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(l->e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		ef->seg[ef->nseg++] = (struct bt_elf_seg){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags };
	}
	return 0;
}

/* Sections: executable ones, the symbol-version table, USDT notes. */
static int scan_sections(struct elf_load *l, struct bt_elf_file *ef)
{
	l->sec_exec = calloc(l->shnum ? l->shnum : 1, 1);
	if (!l->sec_exec)
		return bt_errs(l->err, ENOMEM, "out of memory");
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(l->e, scn));) {
		GElf_Shdr sh;
		const char *nm = NULL;

		if (!gelf_getshdr(scn, &sh))
			continue;
		size_t idx = elf_ndxscn(scn);
		if (idx < l->shnum && (sh.sh_flags & SHF_EXECINSTR))
			l->sec_exec[idx] = 1;
		if (sh.sh_type == SHT_SYMTAB)
			ef->has_symtab = 1;
		else if (sh.sh_type == SHT_GNU_versym && sh.sh_size <= BT_ELF_SYMTAB_MAX)
			l->versym = elf_getdata(scn, NULL);
		else if (sh.sh_type == SHT_NOTE && sh.sh_size <= BT_ELF_SYMTAB_MAX &&
			 (nm = elf_strptr(l->e, l->shstrndx, sh.sh_name)) && strcmp(nm, ".note.stapsdt") == 0)
			parse_stapsdt(l->e, scn, gelf_getclass(l->e), ef);
	}
	return 0;
}

/* A symbol table and its strings are read whole (libelf's ELF_C_READ):
 * one that claims more than BT_ELF_SYMTAB_MAX (a user's sparse 4 GiB
 * .symtab made a dump take 4.2 GiB) is skipped, and said. */
static int symtab_in_bounds(struct elf_load *l, const GElf_Shdr *sh, struct bt_elf_file *ef)
{
	GElf_Shdr strs;
	Elf_Scn *ss = elf_getscn(l->e, sh->sh_link);

	if (sh->sh_size <= BT_ELF_SYMTAB_MAX && ss && gelf_getshdr(ss, &strs) && strs.sh_size <= BT_ELF_SYMTAB_MAX)
		return 1;
	ef->symtab_skipped = 1;
	return 0;
}

/* One function symbol into ef->f (grown by doubling, *cap). */
static int add_func(struct elf_load *l, struct bt_elf_file *ef, size_t *cap, const char *name, const GElf_Sym *s,
		    int hidden)
{
	if (ef->nf == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct bt_elf_func *nf = realloc(ef->f, nc * sizeof(*nf));
		if (!nf)
			return bt_errs(l->err, ENOMEM, "out of memory");
		ef->f = nf, *cap = nc;
	}
	struct bt_elf_func *f = &ef->f[ef->nf];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return bt_errs(l->err, ENOMEM, "out of memory");
	f->vaddr = s->st_value;
	f->size = s->st_size;
	f->bind = GELF_ST_BIND(s->st_info);
	f->type = GELF_ST_TYPE(s->st_info);
	f->hidden = (unsigned char)hidden;
	ef->nf++;
	return 0;
}

/* Function symbols of .symtab and .dynsym. */
static int load_func_symbols(struct elf_load *l, struct bt_elf_file *ef)
{
	size_t cap = 0;

	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(l->e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		if (!symtab_in_bounds(l, &sh, ef) || !(d = elf_getdata(scn, NULL)))
			continue;
		size_t nsym = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < nsym; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			unsigned char type = GELF_ST_TYPE(s.st_info);
			if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || !s.st_value)
				continue;
			if (type != STT_FUNC && type != STT_GNU_IFUNC &&
			    !(type == STT_NOTYPE && s.st_shndx < l->shnum && l->sec_exec[s.st_shndx]))
				continue;
			name = elf_strptr(l->e, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			/* A non-default symbol version (memcpy@GLIBC_2.2.5 next to memcpy@@GLIBC_2.14). */
			int hidden = sh.sh_type == SHT_DYNSYM && l->versym &&
				     (i + 1) * sizeof(uint16_t) <= l->versym->d_size &&
				     (((const uint16_t *)l->versym->d_buf)[i] & 0x8000) != 0;
			int r = add_func(l, ef, &cap, name, &s, hidden);
			if (r)
				return r;
		}
	}
	return 0;
}

/* One entry per (name, address): .symtab repeats .dynsym. */
static void dedup_funcs(struct bt_elf_file *ef)
{
	size_t k = 0;

	if (!ef->nf)
		return;
	qsort(ef->f, ef->nf, sizeof(*ef->f), efunc_cmp);
	for (size_t i = 0; i < ef->nf; i++) {
		if (k && strcmp(ef->f[k - 1].name, ef->f[i].name) == 0 && ef->f[k - 1].vaddr == ef->f[i].vaddr) {
			struct bt_elf_func *p = &ef->f[k - 1];
			if (bind_rank(ef->f[i].bind) < bind_rank(p->bind))
				p->bind = ef->f[i].bind;
			if (!ef->f[i].hidden)
				p->hidden = 0;
			if (!p->size)
				p->size = ef->f[i].size;
			free(ef->f[i].name);
			continue;
		}
		ef->f[k++] = ef->f[i];
	}
	ef->nf = k;
}

/* Load the function symbols, loadable segments and USDT notes of `attach`. */
int bt_elf_load(const char *attach, const char *path, struct bt_elf_file *ef, char **err)
{
	struct elf_load l = { .path = path, .err = err };
	size_t phnum = 0;
	int fd, r;

	if (ef->attach != attach)
		snprintf(ef->attach, sizeof(ef->attach), "%s", attach);
	if ((fd = open_elf_file(attach, path, err)) < 0)
		return fd;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		close(fd);
		return bt_errs(err, EINVAL, "libelf: %s", elf_errmsg(-1));
	}
	l.e = elf_begin(fd, ELF_C_READ, NULL); /* not mapped: see bt_elf_build_id */
	if (!l.e)
		r = bt_errs(err, ENOEXEC, "%s: unreadable ELF file (%s)", path, elf_errmsg(-1));
	else if (!(r = check_elf_header(&l, &phnum)) && !(r = load_segments(&l, phnum, ef)) &&
		 !(r = scan_sections(&l, ef)) && !(r = load_func_symbols(&l, ef)))
		dedup_funcs(ef);
	if (ef->symtab_skipped) {
		char e[BT_ESCAPED_LEN(256)];
		bt_warn("%s: a symbol table larger than %llu MiB was not read: its functions stay unnamed",
			bt_escape_text(path, 256, e, sizeof(e)), BT_ELF_SYMTAB_MAX >> 20);
	}
	free(l.sec_exec);
	if (l.e)
		elf_end(l.e);
	close(fd);
	return r;
}

static const char *efunc_dem(struct bt_elf_func *f)
{
	if (!f->dem_done) {
		f->dem = bt_demangle(f->name);
		f->dem_done = 1;
	}
	return f->dem;
}

/* Executable segment holding vaddr: the file offset, or -EFAULT/-ENOEXEC. */
static int vaddr_to_off(const struct bt_elf_file *ef, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < ef->nseg; i++) {
		const struct bt_elf_seg *s = &ef->seg[i];

		if (vaddr < s->vaddr || vaddr >= s->vaddr + s->filesz)
			continue;
		if (!(s->flags & PF_X))
			return -ENOEXEC;
		*off = vaddr - s->vaddr + s->off;
		return 0;
	}
	return -EFAULT;
}

/* The function containing vaddr (for naming addresses), NULL if none. */
static struct bt_elf_func *func_at(struct bt_elf_file *ef, uint64_t vaddr)
{
	struct bt_elf_func *best = NULL;

	for (size_t i = 0; i < ef->nf; i++) {
		struct bt_elf_func *f = &ef->f[i];
		if (vaddr >= f->vaddr && vaddr < f->vaddr + (f->size ? f->size : 1) &&
		    (!best || bind_rank(f->bind) < bind_rank(best->bind)))
			best = f;
	}
	return best;
}

/*
 * A probe at f+off must start an instruction: decode f from its entry. A
 * probe inside an instruction either fails in the kernel or, worse, is taken
 * and silently changes what the instruction computes.
 */
static int check_boundary(const struct bt_elf_file *ef, const char *path, const struct bt_elf_func *f,
			  const char *nm, uint64_t off, char **err)
{
	struct bt_insn_where w;
	uint64_t foff, len = f->size ? f->size : off + 16, avail = 0;
	uint8_t *code;
	int fd, r;

	if (!off)
		return 0;
	if (vaddr_to_off(ef, f->vaddr, &foff))
		return 0; /* not in a code segment: said by the caller */
	for (size_t i = 0; i < ef->nseg; i++)
		if (f->vaddr >= ef->seg[i].vaddr && f->vaddr < ef->seg[i].vaddr + ef->seg[i].filesz)
			avail = ef->seg[i].vaddr + ef->seg[i].filesz - f->vaddr;
	if (len > avail)
		len = avail;
	if (len > (64u << 20))
		return bt_errs(err, EFBIG, "%s in %s is %" PRIu64 " bytes long: too long to decode", nm, path,
			    len);
	code = malloc(len ? len : 1);
	if (!code)
		return bt_errs(err, ENOMEM, "out of memory");
	errno = 0;
	fd = open(ef->attach, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, code, len, (off_t)foff) != (ssize_t)len) {
		r = errno ? errno : EIO;
		free(code);
		if (fd >= 0)
			close(fd);
		return bt_errs(err, r, "cannot read the code of %s in %s: %s", nm, path, strerror(r));
	}
	close(fd);
	r = bt_insn_boundary(code, len, f->vaddr, off, &w);
	free(code);
	if (r == 1 || r == -ENOTSUP) /* no decoder here: the kernel's checks only */
		return 0;
	if (r == 0 && w.has_next)
		return bt_errs(err, EINVAL,
			    "offset +0x%" PRIx64 " is inside an instruction of %s in %s, not at its start: a probe "
			    "there would corrupt it; the nearest instruction boundaries are %s+0x%" PRIx64
			    " and %s+0x%" PRIx64,
			    off, nm, path, nm, w.prev, nm, w.next);
	if (r == -EILSEQ)
		return bt_errs(err, EINVAL,
			    "cannot tell whether +0x%" PRIx64 " starts an instruction of %s in %s: bytes at +0x%" PRIx64
			    " do not decode as an instruction (data in code?); probe the function entry or an offset "
			    "before +0x%" PRIx64,
			    off, nm, path, w.bad_at, w.bad_at);
	return bt_errs(err, -r, "cannot decode %s in %s: %s", nm, path, strerror(-r));
}

/* The name to show: demangled if C++. */
static const char *display_name(struct bt_elf_func *f)
{
	const char *d = efunc_dem(f);

	return d ? d : f->name;
}

/* Does demangled d answer to q: the signature (full: "tmax<long>(long, long)",
 * with or without a template's return type) or the name ("ns::f",
 * "tmax<long>")? A clone answers as the function it was made from. */
static int dem_matches(const char *d, const char *q, int full)
{
	const char *c = strstr(d, " [clone .");
	char *own = NULL;
	size_t nl, ql = strlen(q);
	int ok;

	if (c) {
		own = strndup(d, (size_t)(c - d));
		if (!own)
			return 0;
		d = own;
	}
	if (full) {
		ok = bt_demangled_eq(d, q) || bt_demangled_eq(bt_demangled_sig(d), q);
	} else {
		const char *n = bt_demangled_name(d, &nl);
		ok = (nl == ql && strncmp(n, q, ql) == 0) ||
		     (bt_demangled_base_len(d) == ql && strncmp(d, q, ql) == 0);
		/* "tmax" names every instantiation of the template tmax<T>. */
		if (!ok && nl > ql && n[nl - 1] == '>') {
			size_t i = nl - 1;
			int depth = 0;
			do {
				depth += n[i] == '>' ? 1 : n[i] == '<' ? -1 : 0;
			} while (depth && i-- > 0);
			ok = !depth && i == ql && strncmp(n, q, ql) == 0;
		}
	}
	free(own);
	return ok;
}

/* Find spec->func among ef's functions. */
static int find_func(struct bt_elf_file *ef, const char *path, const struct bt_uprobe_spec *spec,
		     struct bt_elf_func **out, char **err)
{
	const char *q = spec->func;
	char qbuf[sizeof(spec->func)];
	struct bt_elf_func *cand[16];
	size_t nc = 0, ncand_total = 0;
	const char *at = strchr(q, '@');

	/* "malloc@GLIBC_2.2.5": the version is not kept; match the name. */
	if (at && at > q) {
		snprintf(qbuf, sizeof(qbuf), "%.*s", (int)(at - q), q);
		q = qbuf;
	}
	for (size_t i = 0; i < ef->nf; i++)
		if (strcmp(ef->f[i].name, q) == 0) {
			if (nc < 16)
				cand[nc++] = &ef->f[i];
			ncand_total++;
		}
	/* A C++ function written demangled: "ns::f(int)" exactly, or "ns::f" for
	 * every overload. Compiler clones of a function (f(int) [clone .cold])
	 * are parts or copies of it, not overloads: only named when nothing else
	 * is there. */
	int via_dem = 0;
	struct bt_elf_func *clone = NULL;
	if (!nc && strncmp(q, "_Z", 2) != 0 && bt_demangler_available()) {
		int full = bt_demangled_base_len(q) < strlen(q);

		for (size_t i = 0; i < ef->nf; i++) {
			if (strncmp(ef->f[i].name, "_Z", 2) != 0)
				continue;
			const char *d = efunc_dem(&ef->f[i]);
			if (!d)
				continue;
			if (bt_demangled_is_clone(d) && !(full && bt_demangled_eq(d, q))) {
				if (!clone && dem_matches(d, q, full))
					clone = &ef->f[i];
				continue;
			}
			if (!dem_matches(d, q, full) && !(full && bt_demangled_eq(d, q)))
				continue;
			if (nc < 16)
				cand[nc++] = &ef->f[i];
			ncand_total++;
		}
		via_dem = nc > 0;
	}
	if (!nc && clone)
		return bt_errs(err, ENOENT,
			    "'%s' in %s exists only as a compiler clone, %s (the compiler specialized or split it): "
			    "probe the clone by its symbol name, %s",
			    spec->func, path, efunc_dem(clone), clone->name);
	if (!nc) {
		struct bt_suggest sg = { .n = 0 };
		char *list;

		for (size_t i = 0; i < ef->nf; i++) {
			struct bt_elf_func *f = &ef->f[i];
			const char *d = strncmp(f->name, "_Z", 2) == 0 ? efunc_dem(f) : NULL;

			bt_suggest_add(&sg, q, f->name);
			if (d) {
				/* Demangled names suggest themselves ("foo::bar", "tmax<long>"). */
				char b[256];
				size_t bl;
				const char *bn = bt_demangled_name(d, &bl);
				if (bl < sizeof(b)) {
					memcpy(b, bn, bl);
					b[bl] = '\0';
					bt_suggest_add(&sg, q, b);
				}
			}
		}
		list = bt_suggest_format(&sg);
		if (!ef->has_symtab) {
			char known[64];
			int r;

			if (ef->nf)
				snprintf(known, sizeof(known), "only its %zu exported functions are named", ef->nf);
			else
				snprintf(known, sizeof(known), "no function is named");
			r = bt_errs(err, ENOENT,
				    "symbol '%s' not found in %s, which is stripped (no .symtab: %s)%s%s; give an "
				    "address instead: %s:0xADDRESS (from nm on an unstripped copy)",
				    spec->func, path, known, sg.n ? "; closest: " : "", sg.n && list ? list : "", path);
			free(list);
			return r;
		}
		int r = bt_errs(err, ENOENT, "symbol '%s' not found in %s%s%s", spec->func, path,
				sg.n ? "; closest: " : "; no similar names", sg.n && list ? list : "");
		free(list);
		return r;
	}
	/* Several candidates: the default version over hidden ones, global
	 * over weak over local; C++ overloads are the user's to choose. */
	struct bt_elf_func *best = cand[0];
	int distinct = 0;
	for (size_t i = 1; i < nc; i++) {
		struct bt_elf_func *c = cand[i];
		if (c->vaddr == best->vaddr)
			continue;
		if (via_dem) {
			distinct = 1;
			continue;
		}
		if (c->hidden != best->hidden) {
			if (!c->hidden)
				best = c;
			continue;
		}
		if (bind_rank(c->bind) != bind_rank(best->bind)) {
			if (bind_rank(c->bind) < bind_rank(best->bind))
				best = c;
			continue;
		}
		distinct = 1;
	}
	if (distinct) {
		char *list = NULL;
		int r;

		for (size_t i = 0; i < nc; i++) {
			if (via_dem)
				bt_strcatf(&list, "%s%s", i ? ", " : "", efunc_dem(cand[i]));
			else
				bt_strcatf(&list, "%s0x%" PRIx64, i ? ", " : "", cand[i]->vaddr);
		}
		if (ncand_total > nc)
			bt_strcatf(&list, " and %zu more", ncand_total - nc);
		if (via_dem)
			r = bt_errs(err, EINVAL,
				    "'%s' is overloaded in %s (%zu functions): %s; write the full signature or the "
				    "mangled name",
				    spec->func, path, ncand_total, list ? list : "");
		else
			r = bt_errs(err, EINVAL,
				    "%zu different functions are named '%s' in %s (at %s); give one as %s:0xADDRESS",
				    ncand_total, spec->func, path, list ? list : "", path);
		free(list);
		return r;
	}
	*out = best;
	return 0;
}

int bt_elf_resolve_sym(struct bt_elf_file *ef, const char *path, const struct bt_uprobe_spec *spec,
			  struct bt_uprobe_sym *out, char **err)
{
	struct bt_elf_func *f = NULL;
	const char *nm;
	int r;

	memset(out, 0, sizeof(*out));
	if (spec->has_addr) {
		out->vaddr = spec->addr;
		f = func_at(ef, spec->addr);
		if (f) {
			nm = display_name(f);
			if (spec->addr == f->vaddr)
				bt_strcatf(&out->name, "%s", nm);
			else
				bt_strcatf(&out->name, "%s+0x%" PRIx64, nm, spec->addr - f->vaddr);
			out->size = f->size;
			r = check_boundary(ef, path, f, nm, spec->addr - f->vaddr, err);
			if (r)
				return r;
		} else {
			bt_strcatf(&out->name, "0x%" PRIx64, spec->addr);
		}
	} else {
		r = find_func(ef, path, spec, &f, err);
		if (r)
			return r;
		nm = display_name(f);
		if (f->type == STT_GNU_IFUNC)
			return bt_errs(err, EINVAL,
				    "'%s' in %s is an indirect function (ifunc): the implementation is picked at run "
				    "time; probe the implementation (e.g. __%s_avx2, see nm -D) instead",
				    spec->func, path, f->name);
		if (f->size && spec->offset >= f->size)
			return bt_errs(err, EINVAL, "offset +0x%" PRIx64 " is outside %s, which is %" PRIu64
				    " bytes long", spec->offset, nm, f->size);
		r = check_boundary(ef, path, f, nm, spec->offset, err);
		if (r)
			return r;
		out->vaddr = f->vaddr + spec->offset;
		out->size = f->size;
		if (spec->offset)
			bt_strcatf(&out->name, "%s+0x%" PRIx64, nm, spec->offset);
		else
			bt_strcatf(&out->name, "%s", nm);
	}
	if (!out->name)
		return bt_errs(err, ENOMEM, "out of memory");
	r = vaddr_to_off(ef, out->vaddr, &out->file_off);
	if (r == -ENOEXEC)
		return bt_errs(err, EINVAL, "0x%" PRIx64 " (%s) in %s is not code (a data segment)", out->vaddr,
			    out->name, path);
	if (r)
		return bt_errs(err, EINVAL,
			    "address 0x%" PRIx64 " is outside %s's loadable segments (addresses are as nm/objdump "
			    "print them)",
			    out->vaddr, path);
	return 0;
}

int bt_uprobe_find_symbol(const char *attach, const char *path, const struct bt_uprobe_spec *spec,
			  struct bt_uprobe_sym *out, char **err)
{
	struct bt_elf_file ef;
	int r;

	memset(&ef, 0, sizeof(ef));
	r = bt_elf_load(attach, path, &ef, err);
	if (!r)
		r = bt_elf_resolve_sym(&ef, path, spec, out, err);
	bt_elf_free(&ef);
	return r;
}

/* ---- symbolization: offset -> function ------------------------------------- */

static const struct bt_elf_file *sort_ef; /* qsort has no context argument */

static int by_addr_cmp(const void *a, const void *b)
{
	const struct bt_elf_func *x = &sort_ef->f[*(const size_t *)a], *y = &sort_ef->f[*(const size_t *)b];

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	/* at one address: strongest binding first, then a sized one */
	if (bind_rank(x->bind) != bind_rank(y->bind))
		return bind_rank(x->bind) - bind_rank(y->bind);
	return (y->size != 0) - (x->size != 0);
}

static int build_by_addr(struct bt_elf_file *ef)
{
	size_t k = 0;

	ef->by_addr = malloc((ef->nf ? ef->nf : 1) * sizeof(*ef->by_addr));
	if (!ef->by_addr)
		return -ENOMEM;
	for (size_t i = 0; i < ef->nf; i++)
		ef->by_addr[i] = i;
	sort_ef = ef;
	qsort(ef->by_addr, ef->nf, sizeof(*ef->by_addr), by_addr_cmp);
	sort_ef = NULL;
	/* one function per address: the first (best) of each run */
	for (size_t i = 0; i < ef->nf; i++)
		if (!k || ef->f[ef->by_addr[k - 1]].vaddr != ef->f[ef->by_addr[i]].vaddr)
			ef->by_addr[k++] = ef->by_addr[i];
	ef->nby = k;
	return 0;
}

/* The loadable segment holding file offset off (an executable one if two do). */
static const struct bt_elf_seg *seg_of_offset(const struct bt_elf_file *ef, uint64_t off)
{
	const struct bt_elf_seg *seg = NULL;

	for (size_t i = 0; i < ef->nseg; i++)
		if (off >= ef->seg[i].off && off < ef->seg[i].off + ef->seg[i].filesz &&
		    (!seg || (ef->seg[i].flags & PF_X)))
			seg = &ef->seg[i];
	return seg;
}

int bt_elf_offset_to_vaddr(const struct bt_elf_file *ef, uint64_t off, uint64_t *vaddr)
{
	const struct bt_elf_seg *seg = seg_of_offset(ef, off);

	if (!seg)
		return -ENOENT;
	*vaddr = off - seg->off + seg->vaddr;
	return 0;
}

struct bt_elf_func *bt_elf_func_at_vaddr(struct bt_elf_file *ef, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!ef->by_addr && build_by_addr(ef))
		return NULL;
	hi = ef->nby;
	while (lo < hi) { /* first function above vaddr */
		size_t mid = (lo + hi) / 2;
		if (ef->f[ef->by_addr[mid]].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	struct bt_elf_func *f = &ef->f[ef->by_addr[lo - 1]];
	if (f->size ? vaddr >= f->vaddr + f->size : vaddr - f->vaddr > (1u << 20))
		return NULL; /* past its end (a gap between functions), or far from an unsized symbol */
	return f;
}

const char *bt_elf_func_name(struct bt_elf_func *f)
{
	const char *d = efunc_dem(f);

	return d ? d : f->name;
}

/* Read, not mapped: a file its owner truncates meanwhile must not kill us
 * with SIGBUS (trusted_file.h). */
uint32_t bt_elf_build_id(int fd, uint8_t *out, uint32_t len)
{
	const void *bits;
	uint32_t n = 0;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		return 0;
	/* libdw's reader: program headers' notes, else note sections (a debug
	 * or dwz file has no program headers) */
	ssize_t k = elf_kind(e) == ELF_K_ELF ? dwelf_elf_gnu_build_id(e, &bits) : -1;
	if (k > 0) {
		n = (uint32_t)k < len ? (uint32_t)k : len;
		memcpy(out, bits, n);
	}
	elf_end(e);
	return n;
}

int bt_elf_build_id_is(int fd, const uint8_t *build_id, uint32_t len)
{
	uint8_t bid[BT_BUILD_ID_MAX];

	if (len > sizeof(bid))
		len = sizeof(bid);
	return bt_elf_build_id(fd, bid, sizeof(bid)) >= len && memcmp(bid, build_id, len) == 0;
}
