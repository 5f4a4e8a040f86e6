// SPDX-License-Identifier: MIT
/*
 * stack_table.c - the recorder's call-stack table (see stack_table.h).
 *
 * hash -> id: open addressing over 2x max_stacks slots (deletion by
 * backward shift), written by the drain thread only. Stacks: an array of
 * max_stacks entries; `n` (ids handed out, free ones included), each
 * entry's hash and frames and the mapping capture's file table are written
 * under `lock`, which a dump takes to copy them. The drain holds it while it
 * resolves a new user stack (that may read /proc/PID/maps): a dump's copy
 * may wait that long, the drain waits at most for a copy. An entry's
 * generation and doom mark are the drain's alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stack_table.h"
#include "mapping_capture.h"

#define GEN_RING 64   /* ended generations whose end is remembered */
#define GENS_PER_WINDOW 8

struct entry {
	uint64_t hash;   /* 0: free (under lock) */
	uint32_t tgid;
	uint16_t kind, flags;
	uint32_t nframes;
	struct bt_dump_frame *frames; /* NULL until defined */
	uint64_t last_gen; /* drain: newest generation that named it */
	int doomed;        /* drain: forgotten by the kernel, freed next pass unless named */
};

struct bt_stack_table {
	uint32_t max, nslots;
	uint64_t *slot_hash; /* 0: empty */
	uint32_t *slot_id;
	struct bt_mapcap *maps;  /* drain thread; its file table read under lock */
	/* drain thread only: reclamation */
	struct bt_stack_reclaim_ops ops;
	int reclaim;
	uint64_t gen, gen_start, nblocks_max;
	uint64_t gen_end[GEN_RING]; /* blocks_used when generation g ended, at g % GEN_RING */
	uint32_t *free_ids, nfree;
	uint32_t *doomed, ndoomed;
	uint64_t doom_gen; /* the doomed were last named in this generation or before */
	uint64_t *scratch; /* [max] hashes */
	uint32_t *fresh, nfresh; /* ids referenced before their frames came, this pass */
	pthread_mutex_t lock;
	/* under lock */
	struct entry *e;     /* [max] */
	uint32_t n, live;
	uint32_t holds, holds_old; /* dumps holding the table; of those, begun before the last doom */
	uint64_t hold_epoch; /* a hold's token: bumped by each doom */
	uint64_t doom_epoch; /* hold_epoch from the last doom on: tokens below it began before it */
	uint64_t overflow, unresolved, reclaimed, frames;
	/* the user frames of new stacks, for the symbol loader (a ring of
	 * BT_NEW_FRAMES_MAX; NULL until bt_stack_table_keep_new_frames) */
	struct bt_frame_ref *newf;
	uint32_t newf_head, newf_n;
	uint64_t newf_dropped;
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
	t->free_ids = calloc(max_stacks, sizeof(*t->free_ids));
	t->doomed = calloc(max_stacks, sizeof(*t->doomed));
	t->fresh = calloc(max_stacks, sizeof(*t->fresh));
	t->scratch = calloc(max_stacks, sizeof(*t->scratch));
	t->maps = bt_mapcap_new();
	if (!t->slot_hash || !t->slot_id || !t->e || !t->free_ids || !t->doomed || !t->fresh || !t->scratch ||
	    !t->maps)
		goto fail;
	pthread_mutex_init(&t->lock, NULL);
	return t;
fail:
	if (t) {
		free(t->slot_hash);
		free(t->slot_id);
		free(t->e);
		free(t->free_ids);
		free(t->doomed);
		free(t->fresh);
		free(t->scratch);
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
	free(t->free_ids);
	free(t->doomed);
	free(t->fresh);
	free(t->scratch);
	free(t->newf);
	bt_mapcap_free(t->maps);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint32_t home_slot(const struct bt_stack_table *t, uint64_t hash)
{
	return (uint32_t)(hash ^ (hash >> 32)) & (t->nslots - 1);
}

/* Slot of hash: its own, or the empty one where it goes. */
static uint32_t find_slot(const struct bt_stack_table *t, uint64_t hash)
{
	uint32_t i = home_slot(t, hash);

	while (t->slot_hash[i] && t->slot_hash[i] != hash)
		i = (i + 1) & (t->nslots - 1);
	return i; /* never full: at most max of 2x max slots used */
}

/* Remove hash from the index: the probe chains behind it are shifted back
 * so that every hash stays reachable from its home slot without tombstones. */
static void index_remove(struct bt_stack_table *t, uint64_t hash)
{
	uint32_t mask = t->nslots - 1, i = find_slot(t, hash), j = i;

	if (t->slot_hash[i] != hash)
		return;
	for (;;) {
		t->slot_hash[i] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!t->slot_hash[j])
				return;
			uint32_t k = home_slot(t, t->slot_hash[j]);
			/* j stays if its home lies cyclically in (i, j] */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		t->slot_hash[i] = t->slot_hash[j];
		t->slot_id[i] = t->slot_id[j];
		i = j;
	}
}

uint32_t bt_stack_table_ref(struct bt_stack_table *t, uint64_t hash)
{
	uint32_t i, id;

	if (hash == BT_HASH_NONE)
		return 0;
	if (hash == BT_HASH_LOST)
		return BT_STACK_LOST;
	i = find_slot(t, hash);
	if (t->slot_hash[i]) {
		id = t->slot_id[i];
		t->e[id - 1].last_gen = t->gen;
		return id;
	}
	pthread_mutex_lock(&t->lock);
	if (t->nfree)
		id = t->free_ids[--t->nfree];
	else if (t->n < t->max)
		id = ++t->n;
	else {
		t->overflow++;
		pthread_mutex_unlock(&t->lock);
		return BT_STACK_LOST;
	}
	t->e[id - 1] = (struct entry){ .hash = hash, .last_gen = t->gen }; /* undefined until its frames come */
	t->live++;
	pthread_mutex_unlock(&t->lock);
	t->slot_hash[i] = hash;
	t->slot_id[i] = id;
	if (t->reclaim && t->nfresh < t->max)
		t->fresh[t->nfresh++] = id; /* an id is handed out once per pass at most */
	return id;
}

void bt_stack_table_set_reclaim(struct bt_stack_table *t, const struct bt_stack_reclaim_ops *ops)
{
	t->ops = *ops;
	t->reclaim = ops->forget && ops->held;
}

uint64_t bt_stack_table_hold(struct bt_stack_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint64_t token = t->hold_epoch;
	t->holds++;
	pthread_mutex_unlock(&t->lock);
	return token;
}

void bt_stack_table_release(struct bt_stack_table *t, uint64_t token)
{
	pthread_mutex_lock(&t->lock);
	t->holds--;
	if (token < t->doom_epoch)
		t->holds_old--; /* it began before the doomed were doomed: counted by doom() */
	pthread_mutex_unlock(&t->lock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Phase 2: free the doomed stacks that stayed unnamed. Refused (kept
 * doomed, tried next pass) while a dump that began before they were doomed
 * holds the table, or when the kernel side cannot say which hashes it holds. */
static void free_doomed(struct bt_stack_table *t)
{
	uint64_t *held = NULL;
	long nheld;

	nheld = t->ops.held(t->ops.ctx, &held);
	if (nheld < 0)
		return;
	if (nheld > 0)
		qsort(held, (size_t)nheld, sizeof(*held), cmp_u64);
	pthread_mutex_lock(&t->lock);
	if (t->holds_old) {
		/* A dump that began before they were doomed may have copied
		 * their events: they must keep their ids until it is done. */
		pthread_mutex_unlock(&t->lock);
		free(held);
		return;
	}
	for (uint32_t k = 0; k < t->ndoomed; k++) {
		uint32_t id = t->doomed[k];
		struct entry *e = &t->e[id - 1];

		e->doomed = 0;
		if (e->last_gen > t->doom_gen || (nheld && bsearch(&e->hash, held, (size_t)nheld, sizeof(*held), cmp_u64))) {
			continue; /* named since (an event in flight), or a blocked task holds it */
		}
		index_remove(t, e->hash);
		t->frames -= e->frames ? e->nframes : 0;
		free(e->frames);
		*e = (struct entry){ 0 };
		t->free_ids[t->nfree++] = id;
		t->live--;
		t->reclaimed++;
	}
	pthread_mutex_unlock(&t->lock);
	t->ndoomed = 0;
	free(held);
}

/* Phase 1: doom the stacks last named in generation g or before, and have
 * the kernel side forget them. */
static void doom(struct bt_stack_table *t, uint64_t g)
{
	uint32_t nh = 0;

	for (uint32_t id = 1; id <= t->n; id++) {
		struct entry *e = &t->e[id - 1];

		if (!e->hash || e->last_gen > g) /* hash: the drain's own write, read back */
			continue;
		e->doomed = 1;
		t->doomed[t->ndoomed++] = id;
		t->scratch[nh++] = e->hash;
	}
	t->doom_gen = g;
	/* Dumps holding the table now may have copied events of the doomed;
	 * those that begin later cannot (the events are overwritten). */
	pthread_mutex_lock(&t->lock);
	/* A new epoch: a hold that begins from here on has not copied their
	 * events. (The pass count was used before, and a dump that began
	 * after the doom in the same pass was taken for an old one: its
	 * release took holds_old below zero, which wrapped, and nothing was
	 * ever freed again.) */
	t->doom_epoch = ++t->hold_epoch;
	t->holds_old = t->holds;
	pthread_mutex_unlock(&t->lock);
	if (nh)
		t->ops.forget(t->ops.ctx, t->scratch, nh);
}

void bt_stack_table_pass(struct bt_stack_table *t, uint64_t blocks_used, uint64_t nblocks, uint64_t slack)
{
	uint32_t nh = 0;

	pthread_mutex_lock(&t->lock); /* bt_mapcap_files' readers hold it */
	bt_mapcap_tick(t->maps);
	pthread_mutex_unlock(&t->lock);
	if (!t->reclaim)
		return;
	/* Referenced before their frames came and still without: the kernel
	 * may think it sent them (a hash freed while its event was in
	 * flight). Forgotten, the next occurrence sends the frames. */
	for (uint32_t k = 0; k < t->nfresh; k++) {
		struct entry *e = &t->e[t->fresh[k] - 1];
		if (e->hash && !e->frames) /* frames: the drain's own write */
			t->scratch[nh++] = e->hash;
	}
	t->nfresh = 0;
	if (nh)
		t->ops.forget(t->ops.ctx, t->scratch, nh);
	if (t->ndoomed)
		free_doomed(t);
	if (nblocks > t->nblocks_max)
		t->nblocks_max = nblocks; /* a grown buffer keeps old blocks longer */
	uint64_t step = nblocks / GENS_PER_WINDOW ? nblocks / GENS_PER_WINDOW : 1;
	if (blocks_used - t->gen_start < step)
		return;
	/* Every event named in generation gen is in a block taken by now. */
	t->gen_end[t->gen % GEN_RING] = blocks_used;
	t->gen++;
	t->gen_start = blocks_used;
	if (t->ndoomed)
		return; /* still held by a dump: doom more once those are done */
	/* The newest ended generation whose blocks have all been overwritten:
	 * a block is overwritten once the buffer has taken nblocks more. */
	for (uint64_t g = t->gen; g-- > 0 && t->gen - g <= GEN_RING;) {
		if (t->gen_end[g % GEN_RING] + t->nblocks_max + slack <= blocks_used) {
			doom(t, g);
			break;
		}
	}
}

/* Under lock: a user frame of a new stack, queued for the symbol loader;
 * the oldest goes when the ring is full (counted). */
static void keep_new_frame(struct bt_stack_table *t, uint32_t map, uint64_t off)
{
	if (t->newf_n == BT_NEW_FRAMES_MAX) {
		t->newf_head = (t->newf_head + 1) % BT_NEW_FRAMES_MAX;
		t->newf_n--;
		t->newf_dropped++;
	}
	t->newf[(t->newf_head + t->newf_n++) % BT_NEW_FRAMES_MAX] = (struct bt_frame_ref){ map, off };
}

int bt_stack_table_keep_new_frames(struct bt_stack_table *t)
{
	struct bt_frame_ref *r = calloc(BT_NEW_FRAMES_MAX, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&t->lock);
	if (t->newf)
		free(r);
	else
		t->newf = r;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

size_t bt_stack_table_take_frames(struct bt_stack_table *t, struct bt_frame_ref *out, size_t max, size_t *left,
				  uint64_t *dropped)
{
	size_t n = 0;

	pthread_mutex_lock(&t->lock);
	while (n < max && t->newf_n) {
		out[n++] = t->newf[t->newf_head];
		t->newf_head = (t->newf_head + 1) % BT_NEW_FRAMES_MAX;
		t->newf_n--;
	}
	if (left)
		*left = t->newf_n;
	if (dropped)
		*dropped = t->newf_dropped;
	pthread_mutex_unlock(&t->lock);
	return n;
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
			map = bt_mapcap_resolve_at(t->maps, d->h.tgid, k ? ip - 1 : ip, d->h.ts_ns, &off);
			if (k && map != BT_DMAP_NONE)
				off += 1;
			if (map == BT_DMAP_NONE)
				unresolved++;
		}
		fr[k] = (struct bt_dump_frame){ .map = map, .sym = 0, .off = off };
		if (user && t->newf && map != BT_DMAP_NONE)
			keep_new_frame(t, map, bt_frame_lookup_off(off, k));
	}
	struct entry *e = &t->e[id - 1];
	e->tgid = user ? d->h.tgid : 0;
	e->kind = user ? BT_STACK_USER : BT_STACK_KERNEL;
	e->flags = flags;
	e->nframes = nf;
	e->frames = fr;
	t->unresolved += unresolved;
	t->frames += nf;
	pthread_mutex_unlock(&t->lock);
}

void bt_stack_table_task_event(struct bt_stack_table *t, const struct bt_event_hdr *h)
{
	const struct bt_ev_task *e = (const struct bt_ev_task *)h;

	/* a fork's child that leads its process took a pid maybe held by an
	 * exited process; exec replaced the maps */
	int forget = h->type == BT_EV_PROCESS_EXEC || (h->type == BT_EV_PROCESS_FORK && e->tid == e->tgid);
	int exited = h->type == BT_EV_PROCESS_EXIT && e->tid == e->tgid;

	if (forget || exited) {
		pthread_mutex_lock(&t->lock);
		if (forget)
			bt_mapcap_forget(t->maps, e->tgid);
		else
			bt_mapcap_exited(t->maps, e->tgid);
		pthread_mutex_unlock(&t->lock);
	}
}

void bt_stack_table_counts(struct bt_stack_table *t, struct bt_stack_counts *c)
{
	pthread_mutex_lock(&t->lock);
	*c = (struct bt_stack_counts){ t->live, t->overflow, t->reclaimed, t->frames };
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
		} else if (e->hash)
			undefined++; /* a free id (no event names it) is not a loss */
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
	s->counters[BT_STKC_STACKS] = t->live;
	s->counters[BT_STKC_RECLAIMED] = t->reclaimed;
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

size_t bt_stack_table_nmaps(struct bt_stack_table *t, size_t *tried)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	bt_mapcap_files(t->maps, &n);
	if (tried)
		*tried = bt_mapcap_ntried(t->maps);
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t bt_stack_table_tried_first(struct bt_stack_table *t, uint32_t *maps, size_t n)
{
	size_t nf, k = 0;

	pthread_mutex_lock(&t->lock);
	const struct bt_mapfile *f = bt_mapcap_files(t->maps, &nf);
	for (size_t i = 0; i < n; i++)
		if (maps[i] >= 1 && maps[i] <= nf && (f[maps[i] - 1].flags & BT_MAPFILE_TRIED)) {
			uint32_t m = maps[i];
			maps[i] = maps[k];
			maps[k++] = m;
		}
	pthread_mutex_unlock(&t->lock);
	return k;
}

int bt_stack_table_map_copy(struct bt_stack_table *t, uint32_t map, struct bt_dump_map *m, char *path, size_t pathlen,
			    int *fd)
{
	size_t n;
	int r = -ENOENT;

	*fd = -1;
	pthread_mutex_lock(&t->lock);
	const struct bt_mapfile *f = bt_mapcap_files(t->maps, &n);
	if (map >= 1 && map <= n) {
		const struct bt_mapfile *x = &f[map - 1];

		if (!(x->flags & BT_MAPFILE_TRIED)) {
			pthread_mutex_unlock(&t->lock);
			return -EAGAIN;
		}
		snprintf(path, pathlen, "%s", x->path);
		*m = (struct bt_dump_map){ .path = path, .flags = x->flags & BT_MAPFILE_DELETED ? BT_DMAP_DELETED : 0,
					   .dev = x->dev, .ino = x->ino, .build_id_len = x->build_id_len };
		memcpy(m->build_id, x->build_id, BT_BUILD_ID_MAX);
		/* a copy: the table may close its own while the caller reads */
		*fd = x->fd >= 0 ? fcntl(x->fd, F_DUPFD_CLOEXEC, 0) : -1;
		r = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}
