// SPDX-License-Identifier: MIT
/*
 * kallsyms.c - kernel text symbols snapshot (see kallsyms.h). Names live in
 * one string pool; the table is sorted by address once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kallsyms.h"

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset into pool */
};

struct bt_kallsyms {
	struct ksym *s;
	size_t n, cap;
	char *pool;
	size_t plen, pcap;
};

void bt_kallsyms_free(struct bt_kallsyms *k)
{
	if (!k)
		return;
	free(k->s);
	free(k->pool);
	free(k);
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add(struct bt_kallsyms *k, uint64_t addr, const char *name, const char *mod)
{
	size_t len = strlen(name) + (mod ? strlen(mod) + 3 : 0) + 1;

	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 65536;
		void *p = realloc(k->s, cap * sizeof(*k->s));
		if (!p)
			return -ENOMEM;
		k->s = p;
		k->cap = cap;
	}
	if (k->plen + len > k->pcap) {
		size_t cap = k->pcap ? k->pcap * 2 : 1 << 21;
		while (cap < k->plen + len)
			cap *= 2;
		char *p = realloc(k->pool, cap);
		if (!p)
			return -ENOMEM;
		k->pool = p;
		k->pcap = cap;
	}
	if (mod)
		snprintf(k->pool + k->plen, len, "%s [%s]", name, mod);
	else
		memcpy(k->pool + k->plen, name, len);
	k->s[k->n++] = (struct ksym){ addr, (uint32_t)k->plen };
	k->plen += len;
	return 0;
}

/* One line, "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]": 1 and the
 * fields (name and module NUL-terminated in place, truncated at 255 and 127
 * bytes as before), 0 for a line of another shape. By hand, not sscanf:
 * 120k lines, and sscanf was a quarter of the symbol loader's first load. */
static int parse_line(char *line, unsigned long long *addr, char *type, char **name, char **mod)
{
	char *p = line, *end;

	*addr = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || !end[1] || end[2] != ' ')
		return 0;
	*type = end[1];
	p = end + 3;
	size_t n = strcspn(p, " \t\n");
	if (!n)
		return 0;
	*name = p;
	p += n;
	char *after = p + strspn(p, " \t");
	(*name)[n < 255 ? n : 255] = '\0';
	*mod = NULL;
	if (*after == '[') {
		char *close = strchr(after + 1, ']');
		size_t m = close ? (size_t)(close - after - 1) : 0;
		if (m) {
			after[1 + (m < 127 ? m : 127)] = '\0';
			*mod = after + 1;
		}
	}
	return 1;
}

struct bt_kallsyms *bt_kallsyms_read(FILE *f)
{
	struct bt_kallsyms *k = calloc(1, sizeof(*k));
	char line[1024];
	int nonzero = 0, e = 0;

	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, *name, *mod;

		if (!strchr(line, '\n') && !feof(f)) { /* longer than any name: skip the rest */
			int c;
			while ((c = getc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (!parse_line(line, &addr, &type, &name, &mod))
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		nonzero |= addr != 0;
		if (add(k, addr, name, mod)) {
			e = ENOMEM;
			goto fail;
		}
	}
	if (!nonzero) {
		e = EPERM; /* addresses hidden: kptr_restrict */
		goto fail;
	}
	qsort(k->s, k->n, sizeof(*k->s), ksym_cmp);
	return k;
fail:
	bt_kallsyms_free(k);
	errno = e;
	return NULL;
}

struct bt_kallsyms *bt_kallsyms_load(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct bt_kallsyms *k;
	int e;

	if (!f)
		return NULL;
	setvbuf(f, NULL, _IOFBF, 1 << 16); /* fewer reads of the generated file */
	k = bt_kallsyms_read(f);
	e = errno;
	fclose(f);
	errno = e;
	return k;
}

const char *bt_kallsyms_find(const struct bt_kallsyms *k, uint64_t addr, uint64_t *start, uint64_t *size)
{
	size_t lo = 0, hi = k ? k->n : 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (k->s[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct ksym *s = &k->s[lo - 1];
	uint64_t next = lo < k->n ? k->s[lo].addr : s->addr + 4096;
	if (addr - s->addr > (1u << 20))
		return NULL;
	*start = s->addr;
	*size = next - s->addr;
	return k->pool + s->name;
}

