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

struct bt_kallsyms *bt_kallsyms_load(void)
{
	struct bt_kallsyms *k = calloc(1, sizeof(*k));
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	int nonzero = 0, e = 0;

	if (!k || !f) {
		e = k ? errno : ENOMEM;
		goto fail;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256], mod[128] = "";

		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod) < 3)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		nonzero |= addr != 0;
		if (add(k, addr, name, mod[0] ? mod : NULL)) {
			e = ENOMEM;
			goto fail;
		}
	}
	fclose(f);
	f = NULL;
	if (!nonzero) {
		e = EPERM; /* addresses hidden: kptr_restrict */
		goto fail;
	}
	qsort(k->s, k->n, sizeof(*k->s), ksym_cmp);
	return k;
fail:
	if (f)
		fclose(f);
	bt_kallsyms_free(k);
	errno = e;
	return NULL;
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

