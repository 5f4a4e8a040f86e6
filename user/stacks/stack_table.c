// SPDX-License-Identifier: MIT
/*
 * stack_table.c - the recorder's call-stack table (see stack_table.h).
 *
 * hash -> id: open addressing over 2x max_stacks slots, written by the drain
 * thread only. Stacks: an array of max_stacks entries; `n` (ids handed out),
 * each entry's frames and the mapping capture's file table are written
 * under `lock`, which a dump takes to copy them. The drain holds it while it
 * resolves a new user stack (that may read /proc/PID/maps): a dump's copy
 * may wait that long, the drain waits at most for a copy.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "stack_table.h"
#include "mapping_capture.h"

struct entry {
	uint32_t tgid;
	uint16_t kind, flags;
	uint32_t nframes;
	struct bt_dump_frame *frames; /* NULL until defined */
};

struct bt_stack_table {
	uint32_t max, nslots;
	uint64_t *slot_hash; /* 0: empty */
	uint32_t *slot_id;
	struct bt_mapcap *maps;  /* drain thread; its file table read under lock */
	pthread_mutex_t lock;
	/* under lock */
	struct entry *e;     /* [max] */
	uint32_t n;
	uint64_t overflow, unresolved, truncated;
};

struct bt_stack_table *bt_stack_table_new(uint32_t max_stacks)
{
	struct bt_stack_table *t = calloc(1, sizeof(*t));

	if (!t || !max_stacks)
		goto fail;
	t->max = max_stacks;
	t->nslots = 16;
	while (t->nslots < 2ull * max_stacks)
		t->nslots *= 2;
	t->slot_hash = calloc(t->nslots, sizeof(*t->slot_hash));
	t->slot_id = calloc(t->nslots, sizeof(*t->slot_id));
	t->e = calloc(max_stacks, sizeof(*t->e));
	t->maps = bt_mapcap_new();
	if (!t->slot_hash || !t->slot_id || !t->e || !t->maps)
		goto fail;
	pthread_mutex_init(&t->lock, NULL);
	return t;
fail:
	if (t) {
		free(t->slot_hash);
		free(t->slot_id);
		free(t->e);
		bt_mapcap_free(t->maps);
		free(t);
	}
	return NULL;
}

void bt_stack_table_free(struct bt_stack_table *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		free(t->e[i].frames);
	free(t->e);
	free(t->slot_hash);
	free(t->slot_id);
	bt_mapcap_free(t->maps);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Slot of hash: its own, or the empty one where it goes. */
static uint32_t find_slot(const struct bt_stack_table *t, uint64_t hash)
{
	uint32_t i = (uint32_t)(hash ^ (hash >> 32)) & (t->nslots - 1);

	while (t->slot_hash[i] && t->slot_hash[i] != hash)
		i = (i + 1) & (t->nslots - 1);
	return i; /* never full: at most max of 2x max slots used */
}

uint32_t bt_stack_table_ref(struct bt_stack_table *t, uint64_t hash)
{
	uint32_t i, id;

	if (hash == BT_HASH_NONE)
		return 0;
	if (hash == BT_HASH_LOST)
		return BT_STACK_LOST;
	i = find_slot(t, hash);
	if (t->slot_hash[i])
		return t->slot_id[i];
	pthread_mutex_lock(&t->lock);
	if (t->n == t->max) {
		t->overflow++;
		pthread_mutex_unlock(&t->lock);
		return BT_STACK_LOST;
	}
	id = ++t->n; /* undefined until its frames come */
	pthread_mutex_unlock(&t->lock);
	t->slot_hash[i] = hash;
	t->slot_id[i] = id;
	return id;
}

void bt_stack_table_define(struct bt_stack_table *t, const struct bt_raw_stack_def *d, uint32_t len)
{
	uint32_t nf = d->nframes, id, user = !!(d->flags & BT_STACKDEF_USER), unresolved = 0;
	struct bt_dump_frame *fr;

	if (len < sizeof(*d) || nf > BT_MAX_FRAMES || len < sizeof(*d) + 8ull * nf || !nf)
		return;
	id = bt_stack_table_ref(t, d->hash);
	if (id == 0 || id == BT_STACK_LOST)
		return;
	pthread_mutex_lock(&t->lock);
	int defined = t->e[id - 1].frames != NULL;
	pthread_mutex_unlock(&t->lock);
	if (defined)
		return; /* sent again (the kernel's LRU forgot it): the same stack */
	fr = malloc(nf * sizeof(*fr));
	if (!fr)
		return; /* stays undefined, counted as such */
	uint16_t flags = (d->flags & (BT_STACKDEF_FULL | BT_STACKDEF_CUT)) ? BT_STACK_F_TRUNCATED : 0;
	pthread_mutex_lock(&t->lock);
	for (uint32_t k = 0; k < nf; k++) {
		uint64_t ip = d->ips[k], off = ip;
		uint32_t map = BT_DMAP_KERNEL;

		if (user && (ip < 4096 || ip >= (1ull << 47))) {
			/* Not a user code address: the frame-pointer walk went
			 * through code without frame pointers; the rest is junk. */
			nf = k;
			flags |= BT_STACK_F_TRUNCATED;
			break;
		}
		if (user) {
			/* Return addresses point after the call: resolve ip - 1 so a
			 * call at a function's end stays in it; store the call site. */
			map = bt_mapcap_resolve(t->maps, d->h.tgid, k ? ip - 1 : ip, &off);
			if (k && map != BT_DMAP_NONE)
				off += 1;
			if (map == BT_DMAP_NONE)
				unresolved++;
		}
		fr[k] = (struct bt_dump_frame){ .map = map, .sym = 0, .off = off };
	}
	struct entry *e = &t->e[id - 1];
	e->tgid = user ? d->h.tgid : 0;
	e->kind = user ? BT_STACK_USER : BT_STACK_KERNEL;
	e->flags = flags;
	e->nframes = nf;
	e->frames = fr;
	t->unresolved += unresolved;
	pthread_mutex_unlock(&t->lock);
}

void bt_stack_table_task_event(struct bt_stack_table *t, const struct bt_event_hdr *h)
{
	const struct bt_ev_task *e = (const struct bt_ev_task *)h;

	if (h->type == BT_EV_PROCESS_EXEC || (h->type == BT_EV_PROCESS_EXIT && e->tid == e->tgid)) {
		pthread_mutex_lock(&t->lock);
		bt_mapcap_forget(t->maps, e->tgid);
		pthread_mutex_unlock(&t->lock);
	}
}

void bt_stack_table_counts(struct bt_stack_table *t, uint64_t *nstacks, uint64_t *overflow)
{
	pthread_mutex_lock(&t->lock);
	*nstacks = t->n;
	*overflow = t->overflow;
	pthread_mutex_unlock(&t->lock);
}

int bt_stack_table_snapshot(struct bt_stack_table *t, struct bt_dump_stacks *s)
{
	uint64_t nf = 0, undefined = 0;
	size_t nfiles;
	int r = -ENOMEM;

	pthread_mutex_lock(&t->lock);
	for (uint32_t i = 0; i < t->n; i++)
		nf += t->e[i].nframes;
	const struct bt_mapfile *files = bt_mapcap_files(t->maps, &nfiles);
	s->stacks = calloc(t->n ? t->n : 1, sizeof(*s->stacks));
	s->frames = malloc(nf ? nf * sizeof(*s->frames) : 1);
	s->maps = calloc(nfiles ? nfiles : 1, sizeof(*s->maps));
	s->owned = calloc(nfiles ? nfiles : 1, sizeof(*s->owned));
	if (!s->stacks || !s->frames || !s->maps || !s->owned)
		goto out;
	nf = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct entry *e = &t->e[i];
		s->stacks[i] = (struct bt_dump_stack){ e->tgid, e->kind, e->frames ? e->flags : BT_STACK_F_UNDEFINED,
						       e->frames ? e->nframes : 0, nf };
		if (e->frames) {
			memcpy(s->frames + nf, e->frames, e->nframes * sizeof(*s->frames));
			nf += e->nframes;
		} else
			undefined++;
	}
	for (size_t i = 0; i < nfiles; i++) {
		s->owned[i] = strdup(files[i].path);
		if (!s->owned[i])
			goto out;
		s->nowned++;
		s->maps[i] = (struct bt_dump_map){ .path = s->owned[i],
						   .flags = files[i].flags & BT_MAPFILE_DELETED ? BT_DMAP_DELETED : 0,
						   .dev = files[i].dev, .ino = files[i].ino,
						   .build_id_len = files[i].build_id_len };
		memcpy(s->maps[i].build_id, files[i].build_id, BT_BUILD_ID_MAX);
	}
	s->nstacks = t->n;
	s->nframes = nf;
	s->nmaps = (uint32_t)nfiles;
	s->counters[BT_STKC_STACKS] = t->n;
	s->counters[BT_STKC_MAX_STACKS] = t->max;
	s->counters[BT_STKC_OVERFLOW] = t->overflow;
	s->counters[BT_STKC_UNDEFINED] = undefined;
	s->counters[BT_STKC_UNRESOLVED] = t->unresolved;
	s->counters[BT_STKC_NO_FD] = bt_mapcap_no_fd(t->maps);
	r = 0;
out:
	pthread_mutex_unlock(&t->lock);
	if (r)
		bt_stack_snapshot_free(s);
	return r;
}

void bt_stack_snapshot_free(struct bt_dump_stacks *s)
{
	bt_dump_stacks_release(s);
}

/* The descriptor of map id `map` (for the symbolizer), -1 if none. */
int bt_stack_table_map_fd(struct bt_stack_table *t, uint32_t map)
{
	size_t n;
	int fd = -1;

	pthread_mutex_lock(&t->lock);
	const struct bt_mapfile *f = bt_mapcap_files(t->maps, &n);
	if (map >= 1 && map <= n)
		fd = f[map - 1].fd;
	pthread_mutex_unlock(&t->lock);
	return fd;
}
