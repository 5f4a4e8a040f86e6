// SPDX-License-Identifier: MIT
/*
 * py_codes.c - Python code objects' names (see py_codes.h): an
 * open-addressing table of (tgid, key) -> name, grown at 3/4 full; and
 * the line of an instruction from the code's line table (bt_py_line).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "py_codes.h"
#include "hash_mix.h"

struct pycode {
	uint64_t key; /* 0: empty slot (a frame's key has BT_FRAME_PY_BIT) */
	uint32_t tgid;
	char *name;
};

struct bt_pycodes {
	pthread_mutex_t lock;
	struct pycode *slot;
	size_t cap, n;
	struct bt_pycode_stats st;
};

struct bt_pycodes *bt_pycodes_new(void)
{
	struct bt_pycodes *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pthread_mutex_init(&pc->lock, NULL);
	return pc;
}

void bt_pycodes_free(struct bt_pycodes *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->cap; i++)
		free(pc->slot[i].name);
	free(pc->slot);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

static size_t home(const struct bt_pycodes *pc, uint32_t tgid, uint64_t key)
{
	return bt_u64_mix(key ^ bt_u64_mix(tgid)) & (pc->cap - 1);
}

/* The slot of (tgid, key), or the empty one where it would go. */
static struct pycode *lookup(struct bt_pycodes *pc, uint32_t tgid, uint64_t key)
{
	size_t i = home(pc, tgid, key);

	while (pc->slot[i].key && (pc->slot[i].key != key || pc->slot[i].tgid != tgid))
		i = (i + 1) & (pc->cap - 1);
	return &pc->slot[i];
}

static int grow(struct bt_pycodes *pc)
{
	size_t cap = pc->cap ? pc->cap * 2 : 1024, old = pc->cap;
	struct pycode *was = pc->slot, *s = calloc(cap, sizeof(*s));

	if (!s)
		return -1;
	pc->slot = s;
	pc->cap = cap;
	for (size_t i = 0; i < old; i++)
		if (was[i].key)
			*lookup(pc, was[i].tgid, was[i].key) = was[i];
	free(was);
	return 0;
}

/* Printable bytes of a NUL-terminated field of at most len bytes; control
 * bytes become '?': the names are the traced program's. */
static void copy_field(char *dst, const char *src, size_t len)
{
	size_t i;

	for (i = 0; i < len - 1 && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
	dst[i] = 0;
}

/* 3.11+'s locations table (CPython's Objects/locations.md): an entry's
 * first byte has bit 7, its code (bits 3-6) and its length in code units
 * less one (bits 0-2); a varint is 6-bit chunks, bit 6 saying more. */
static int varint(const uint8_t *lt, size_t len, size_t *i, unsigned *out)
{
	unsigned v = 0, shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 24)
			return -1;
		b = lt[(*i)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return 0;
}

int bt_py_line(const uint8_t *lt, size_t len, int v310, int first, int instr)
{
	long line = first, end = 0, start;
	size_t i = 0;

	if (instr < 0)
		return first; /* not started: CPython says its first line */
	if (v310) {
		/* 3.10: (bytes delta, signed line delta) pairs; -128: no line */
		for (; i + 1 < len; i += 2) {
			int ld = (int8_t)lt[i + 1];

			start = end;
			end += lt[i];
			if (ld != -128)
				line += ld;
			if (instr >= start && instr < end)
				return ld == -128 ? -1 : (int)line;
		}
		return -1;
	}
	while (i < len) {
		uint8_t b = lt[i++];
		unsigned code = (b >> 3) & 15, u = 0;
		long delta = 0;

		if (!(b & 128))
			return -1; /* not an entry's first byte: a table this does not know */
		if (code == 13 || code == 14) {
			if (varint(lt, len, &i, &u))
				return -1;
			delta = (u & 1) ? -(long)(u >> 1) : (long)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		start = end;
		end += ((b & 7) + 1) * 2;
		if (instr >= start && instr < end)
			return code == 15 ? -1 : (int)line;
		while (i < len && !(lt[i] & 128)) /* the entry's other bytes (columns) */
			i++;
	}
	return -1;
}

void bt_pycodes_add(struct bt_pycodes *pc, const void *rec, uint32_t len)
{
	const struct bt_raw_py_code *r = rec;
	char name[sizeof(r->name) + 1], file[sizeof(r->file) + 1], *text;
	struct pycode *s;
	int line = -1;

	pthread_mutex_lock(&pc->lock);
	if (len < sizeof(*r) || !(r->key & BT_FRAME_PY_BIT)) {
		pc->st.malformed++;
		pthread_mutex_unlock(&pc->lock);
		return;
	}
	copy_field(name, r->name, sizeof(r->name));
	copy_field(file, r->file, sizeof(r->file));
	if (!(r->flags & BT_PY_CODE_NO_INSTR) && r->lt_len <= sizeof(r->linetable))
		line = bt_py_line(r->linetable, r->lt_len, !!(r->flags & BT_PY_CODE_LT_310), (int)r->line, r->instr);
	if (line < 0) {
		line = (int)r->line; /* the code's first line, counted */
		pc->st.first_line++;
	}
	if ((pc->n + 1) * 4 > pc->cap * 3 && (pc->n >= BT_PYCODES_MAX || grow(pc))) {
		pc->st.full++;
		pthread_mutex_unlock(&pc->lock);
		return;
	}
	size_t tl = strlen(name) + strlen(file) + 32;
	if (!(text = malloc(tl))) {
		pc->st.full++;
		pthread_mutex_unlock(&pc->lock);
		return;
	}
	snprintf(text, tl, "%s (%s:%d)", name[0] ? name : "[unreadable]", file[0] ? file : "?", line);
	s = lookup(pc, r->h.tgid, r->key);
	if (s->key) {
		free(s->name); /* sent again (py_code_seen forgot it): the same code */
	} else {
		pc->n++;
		pc->st.codes++;
	}
	s->key = r->key;
	s->tgid = r->h.tgid;
	s->name = text;
	pthread_mutex_unlock(&pc->lock);
}

int bt_pycodes_find(struct bt_pycodes *pc, uint32_t tgid, uint64_t key, char *buf, size_t len)
{
	int found = 0;

	pthread_mutex_lock(&pc->lock);
	if (pc->cap) {
		struct pycode *s = lookup(pc, tgid, key);
		if (s->key) {
			snprintf(buf, len, "%s", s->name);
			found = 1;
		}
	}
	pthread_mutex_unlock(&pc->lock);
	return found;
}

void bt_pycodes_stats(struct bt_pycodes *pc, struct bt_pycode_stats *st)
{
	pthread_mutex_lock(&pc->lock);
	*st = pc->st;
	pthread_mutex_unlock(&pc->lock);
}
