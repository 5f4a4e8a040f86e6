// SPDX-License-Identifier: MIT
/*
 * func_names.c - address -> function name for one process. Mappings come
 * from /proc/PID/maps, taken at registration and refreshed while the
 * process lives, so a dump after it exited still has them; files are
 * opened by their path (through /proc/PID/root while it lives). Every
 * answer is cached: a name resolved once stays the same for later dumps.
 */
#include "func_names.h"
#include "elf_symbols.h"
#include "symbol_names.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fmap {
	uint64_t start, end, off;
	char *path;
};

struct ffile {
	char *path;
	struct bt_elf_file ef;
	int ok;
};

struct fname {
	uint64_t addr;
	char *name; /* NULL: unknown */
};

struct bt_func_names {
	int pid;
	struct fmap *maps;
	size_t nmaps;
	struct ffile *files;
	size_t nfiles;
	struct fname *cache; /* sorted by addr */
	size_t ncache, capcache;
};

static void maps_free(struct fmap *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

int bt_func_names_refresh(struct bt_func_names *fn)
{
	char path[64], line[PATH_MAX + 128];
	snprintf(path, sizeof(path), "/proc/%d/maps", fn->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	struct fmap *m = NULL;
	size_t n = 0, cap = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &pos) < 4 || !pos ||
		    perms[2] != 'x')
			continue;
		char *p = line + pos, *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (*p != '/')
			continue; /* [vdso], anonymous JIT code: no file */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct fmap *x = realloc(m, cap * sizeof(*m));
			if (!x)
				break;
			m = x;
		}
		m[n] = (struct fmap){ s, e, off, strdup(p) };
		if (m[n].path)
			n++;
	}
	fclose(f);
	if (!n) {
		free(m);
		return -ESRCH; /* gone (or nothing mapped): keep what we had */
	}
	maps_free(fn->maps, fn->nmaps);
	fn->maps = m;
	fn->nmaps = n;
	/* Addresses no mapping named before may be in a library loaded since */
	size_t k = 0;
	for (size_t i = 0; i < fn->ncache; i++)
		if (fn->cache[i].name)
			fn->cache[k++] = fn->cache[i];
	fn->ncache = k;
	return 0;
}

struct bt_func_names *bt_func_names_new(int pid)
{
	struct bt_func_names *fn = calloc(1, sizeof(*fn));
	if (!fn)
		return NULL;
	fn->pid = pid;
	bt_func_names_refresh(fn);
	return fn;
}

int bt_func_names_inherit(struct bt_func_names *fn, const struct bt_func_names *from)
{
	struct fmap *m;

	if (fn->nmaps || !from || !from->nmaps)
		return fn->nmaps ? 0 : -ESRCH;
	m = calloc(from->nmaps, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < from->nmaps; i++) {
		m[i] = from->maps[i];
		m[i].path = strdup(from->maps[i].path);
		if (!m[i].path) {
			maps_free(m, i);
			return -ENOMEM;
		}
	}
	fn->maps = m;
	fn->nmaps = from->nmaps;
	return 0;
}

static struct ffile *file_get(struct bt_func_names *fn, const char *path)
{
	for (size_t i = 0; i < fn->nfiles; i++)
		if (strcmp(fn->files[i].path, path) == 0)
			return &fn->files[i];
	struct ffile *x = realloc(fn->files, (fn->nfiles + 1) * sizeof(*x));
	if (!x)
		return NULL;
	fn->files = x;
	struct ffile *f = &fn->files[fn->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	fn->nfiles++;
	/* The process's own view of the file first (another mount namespace). */
	char attach[PATH_MAX + 32], *err = NULL;
	snprintf(attach, sizeof(attach), "/proc/%d/root%s", fn->pid, path);
	if (bt_elf_load(attach, path, &f->ef, &err) == 0) {
		f->ok = 1;
	} else {
		free(err);
		err = NULL;
		bt_elf_free(&f->ef);
		memset(&f->ef, 0, sizeof(f->ef));
		f->ok = bt_elf_load(path, path, &f->ef, &err) == 0;
		free(err);
	}
	return f;
}

static char *resolve(struct bt_func_names *fn, uint64_t addr)
{
	for (size_t i = 0; i < fn->nmaps; i++) {
		const struct fmap *m = &fn->maps[i];
		if (addr < m->start || addr >= m->end)
			continue;
		struct ffile *f = file_get(fn, m->path);
		if (!f || !f->ok)
			return NULL;
		uint64_t foff = addr - m->start + m->off, v = 0;
		int found = 0;
		for (size_t s = 0; s < f->ef.nseg && !found; s++) {
			const struct bt_elf_seg *g = &f->ef.seg[s];
			if (foff >= g->off && foff < g->off + g->filesz) {
				v = foff - g->off + g->vaddr;
				found = 1;
			}
		}
		if (!found)
			return NULL;
		const struct bt_elf_func *best = NULL;
		for (size_t k = 0; k < f->ef.nf; k++) {
			const struct bt_elf_func *e = &f->ef.f[k];
			if (v < e->vaddr || (v >= e->vaddr + e->size && !(v == e->vaddr)))
				continue;
			/* prefer an exact start, then a global symbol */
			if (!best || (e->vaddr == v && best->vaddr != v) || (e->bind == 1 && best->bind != 1))
				best = e;
		}
		if (!best)
			return NULL;
		char *dem = bt_demangle(best->name);
		const char *show = dem ? dem : best->name;
		char *out = NULL;
		if (v == best->vaddr)
			out = strdup(show);
		else if (asprintf(&out, "%s+0x%" PRIx64, show, v - best->vaddr) < 0)
			out = NULL;
		free(dem);
		return out;
	}
	return NULL;
}

const char *bt_func_names_get(struct bt_func_names *fn, uint64_t addr)
{
	size_t lo = 0, hi = fn->ncache;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fn->cache[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < fn->ncache && fn->cache[lo].addr == addr)
		return fn->cache[lo].name;
	if (fn->ncache == fn->capcache) {
		size_t cap = fn->capcache ? fn->capcache * 2 : 256;
		struct fname *x = realloc(fn->cache, cap * sizeof(*x));
		if (!x)
			return NULL;
		fn->cache = x;
		fn->capcache = cap;
	}
	char *name = resolve(fn, addr);
	memmove(&fn->cache[lo + 1], &fn->cache[lo], (fn->ncache - lo) * sizeof(*fn->cache));
	fn->cache[lo] = (struct fname){ addr, name };
	fn->ncache++;
	return name;
}

void bt_func_names_free(struct bt_func_names *fn)
{
	if (!fn)
		return;
	maps_free(fn->maps, fn->nmaps);
	for (size_t i = 0; i < fn->nfiles; i++) {
		free(fn->files[i].path);
		bt_elf_free(&fn->files[i].ef);
	}
	free(fn->files);
	for (size_t i = 0; i < fn->ncache; i++)
		free(fn->cache[i].name);
	free(fn->cache);
	free(fn);
}
