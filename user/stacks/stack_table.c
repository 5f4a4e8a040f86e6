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
 * generation, last use and doom mark are the drain's alone; its epoch and
 * the epochs (which a dump's births copy) are written under `lock`.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stack_table.h"
#include "mapping_capture.h"
#include "perf_maps.h"
#include "py_codes.h"
#include "util.h"

#define GEN_RING 64   /* ended generations whose end is remembered */
#define ORPHANS 64    /* unnamed user stacks waiting for their process's fork */
#define GENS_PER_WINDOW 8
/* Frees whose epoch a dump tells apart exactly; an id freed in an older
 * one still in the window is judged by the oldest kept (later) epoch:
 * more of its events say reclaimed, none shows another stack. */
#define EPOCH_RING 256

struct entry {
	uint64_t hash;   /* 0: free (under lock) */
	uint32_t tgid;
	uint16_t kind, flags;
	uint32_t nframes;
	struct bt_dump_frame *frames; /* NULL until defined */
	uint64_t last_gen; /* drain: newest generation that named it */
	uint64_t last_use; /* drain: the last pass that named it */
	uint64_t born;     /* under lock: the epoch its id was last freed in, 0 never */
	uint64_t doomed_at; /* drain: the pass it was doomed in (last named then or before) */
	int doomed;        /* drain: forgotten by the kernel, freed next pass unless named: DOOM_* */
};
enum { DOOM_NONE, DOOM_WINDOW, DOOM_FULL /* for room, though events still name it */ };

struct bt_stack_table {
	uint32_t max, nslots;
	uint64_t *slot_hash; /* 0: empty */
	uint32_t *slot_id;
	struct bt_mapcap *maps;  /* drain thread; its file table read under lock */
	struct bt_perfmaps *jit; /* names of anonymous code (its own lock) */
	struct bt_pycodes *py;   /* names of Python code objects (its own lock) */
	/* drain thread only: reclamation */
	struct bt_stack_reclaim_ops ops;
	int reclaim;
	uint64_t gen, gen_start, nblocks_max;
	uint64_t gen_end[GEN_RING]; /* blocks_used when generation g ended, at g % GEN_RING */
	uint32_t *free_ids, nfree;
	uint32_t *doomed, ndoomed; /* each id once (entry's doomed set) */
	uint64_t pass;      /* passes so far: last_use's clock */
	uint32_t new_ids;   /* ids handed out this pass */
	int said_full, said_lost; /* logged once */
	uint32_t ncpus;
	uint64_t *hi_ts;    /* [ncpus]: the newest time of a stack event drained from each CPU */
	uint64_t *scratch; /* [max] hashes */
	uint32_t *fresh, nfresh; /* ids referenced before their frames came, this pass */
	pthread_mutex_t lock;
	/* under lock */
	struct entry *e;     /* [max] */
	uint32_t n, live;
	uint32_t holds; /* dumps holding the table: nothing is freed */
	uint64_t overflow, unresolved, reclaimed, evicted, frames;
	/* epochs ep_first..ep_next-1 (from 1): hi_ts at a free, at e % EPOCH_RING;
	 * those up to ep_retired are out of the window (their ids' older
	 * events are overwritten) */
	uint64_t *ep_ts;                /* [EPOCH_RING * ncpus] */
	uint64_t ep_blocks[EPOCH_RING]; /* blocks_used at the free */
	uint64_t ep_first, ep_next, ep_retired;
	uint64_t pre_exec; /* stacks named from the parent's maps (name_from_parent) */
	struct orphan {
		uint32_t id, tgid;
	} orphan[ORPHANS]; /* latest user stacks in no file of their process, waiting for its fork */
	uint32_t orphan_next;
	/* the user frames of new stacks, for the symbol loader (a ring of
	 * BT_NEW_FRAMES_MAX; NULL until bt_stack_table_keep_new_frames) */
	struct bt_frame_ref *newf;
	uint32_t newf_head, newf_n;
	uint64_t newf_dropped, newf_added;
	/* who waits for new frames and files (bt_stack_table_set_waker); the
	 * drain's own: the work it was last woken for, and when */
	int (*wake)(void *arg);
	void *wake_arg;
	uint64_t wake_sig, wake_ns;
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
	t->ncpus = 1;
	t->hi_ts = calloc(1, sizeof(*t->hi_ts));
	t->ep_ts = calloc(EPOCH_RING, sizeof(*t->ep_ts));
	t->ep_first = t->ep_next = 1;
	t->maps = bt_mapcap_new();
	t->jit = bt_perfmaps_new(NULL);
	t->py = bt_pycodes_new();
	if (t->jit && bt_perfmaps_start(t->jit))
		bt_warn("cannot start the perf map reader: JIT frames are named from what a dump finds");
	if (!t->slot_hash || !t->slot_id || !t->e || !t->free_ids || !t->doomed || !t->fresh || !t->scratch ||
	    !t->hi_ts || !t->ep_ts || !t->maps || !t->jit || !t->py)
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
		free(t->hi_ts);
		free(t->ep_ts);
		bt_mapcap_free(t->maps);
		bt_perfmaps_free(t->jit);
		bt_pycodes_free(t->py);
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
	free(t->hi_ts);
	free(t->ep_ts);
	free(t->newf);
	bt_mapcap_free(t->maps);
	bt_perfmaps_free(t->jit);
	bt_pycodes_free(t->py);
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
		t->e[id - 1].last_use = t->pass;
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
		if (!t->said_lost) {
			t->said_lost = 1;
			bt_warn("stack table full (--max-stacks %u)%s: new stacks are lost (counted: ctl status, report --stats)",
				t->max, t->reclaim ? ", faster than it frees its oldest" : "");
		}
		return BT_STACK_LOST;
	}
	/* undefined until its frames come; the id keeps the epoch of its free */
	t->e[id - 1] = (struct entry){ .hash = hash, .last_gen = t->gen, .last_use = t->pass, .born = t->e[id - 1].born };
	t->live++;
	t->new_ids++;
	pthread_mutex_unlock(&t->lock);
	t->slot_hash[i] = hash;
	t->slot_id[i] = id;
	if (t->reclaim && t->nfresh < t->max)
		t->fresh[t->nfresh++] = id; /* an id is handed out once per pass at most */
	return id;
}

void bt_stack_table_note(struct bt_stack_table *t, uint32_t cpu, uint64_t ts)
{
	/* Relaxed: the drain alone writes; partner of the relaxed loads in
	 * bt_stack_table_births (another thread: any value it saw is one this
	 * one had, an older one only judges more events reclaimed). */
	if (cpu < t->ncpus && ts > t->hi_ts[cpu])
		__atomic_store_n(&t->hi_ts[cpu], ts, __ATOMIC_RELAXED);
}

void bt_stack_table_wake(struct bt_stack_table *t)
{
	size_t nfiles;
	uint64_t sig;

	if (!t->wake)
		return;
	pthread_mutex_lock(&t->lock);
	/* Each term only grows: the sum changes when any does (a frame
	 * queued, a file added or first landed in, the first id handed out:
	 * n never shrinks, freed ids are reused). */
	bt_mapcap_files(t->maps, &nfiles);
	sig = t->newf_added + nfiles + bt_mapcap_ntried(t->maps) + (t->n > 0);
	pthread_mutex_unlock(&t->lock);
	if (sig == t->wake_sig)
		return;
	uint64_t now = bt_now_ns();
	/* at most every BT_STACK_WAKE_NS; refused (its lock busy): the next
	 * pass tries again. Called without t->lock: the loader takes its own
	 * lock, then t->lock (caught_up). */
	if (now - t->wake_ns >= BT_STACK_WAKE_NS && t->wake(t->wake_arg)) {
		t->wake_sig = sig;
		t->wake_ns = now;
	}
}

void bt_stack_table_set_waker(struct bt_stack_table *t, int (*wake)(void *arg), void *arg)
{
	t->wake = wake;
	t->wake_arg = arg;
	t->wake_sig = 0;
}

void bt_stack_table_set_reclaim(struct bt_stack_table *t, const struct bt_stack_reclaim_ops *ops)
{
	uint32_t ncpus = ops->ncpus ? ops->ncpus : 1;
	uint64_t *hi = calloc(ncpus, sizeof(*hi)), *ep = calloc((size_t)EPOCH_RING * ncpus, sizeof(*ep));

	t->ops = *ops;
	t->reclaim = ops->forget && ops->held;
	if (!hi || !ep) {
		/* only the window frees, never a stack retained events name */
		bt_warn("out of memory: a full stack table loses new stacks");
		free(hi);
		free(ep);
		return;
	}
	pthread_mutex_lock(&t->lock); /* before the drain starts: nothing was freed yet */
	free(t->hi_ts);
	free(t->ep_ts);
	t->hi_ts = hi;
	t->ep_ts = ep;
	t->ncpus = ncpus;
	pthread_mutex_unlock(&t->lock);
}

uint64_t bt_stack_table_hold(struct bt_stack_table *t)
{
	pthread_mutex_lock(&t->lock);
	t->holds++;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void bt_stack_table_release(struct bt_stack_table *t, uint64_t token)
{
	(void)token;
	pthread_mutex_lock(&t->lock);
	t->holds--;
	pthread_mutex_unlock(&t->lock);
}

/* ---- births: what a dump writes for an event's stack id --------------------- */

struct bt_stack_births {
	uint32_t n, ncpus;
	uint32_t *slot;   /* [n]: 0 never freed (or out of the window), else 1 + epoch ring slot */
	uint64_t *ep_ts;  /* [EPOCH_RING * ncpus] */
	uint64_t *hi_ts;  /* [ncpus]: hi_ts when taken */
	uint64_t reclaimed;
};

/* Under lock: the ring slot whose times judge an id freed in epoch e, -1 none. */
static long epoch_slot(const struct bt_stack_table *t, uint64_t e)
{
	if (!e || e <= t->ep_retired)
		return -1;
	if (e < t->ep_first)
		e = t->ep_first; /* dropped from the ring: a later epoch says more reclaimed */
	return (long)(e % EPOCH_RING);
}

struct bt_stack_births *bt_stack_table_births(struct bt_stack_table *t)
{
	struct bt_stack_births *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	pthread_mutex_lock(&t->lock);
	b->n = t->n;
	b->ncpus = t->ncpus;
	b->slot = calloc(t->n ? t->n : 1, sizeof(*b->slot));
	b->ep_ts = malloc((size_t)EPOCH_RING * t->ncpus * sizeof(*b->ep_ts));
	b->hi_ts = malloc(t->ncpus * sizeof(*b->hi_ts));
	if (b->slot && b->ep_ts && b->hi_ts) {
		memcpy(b->ep_ts, t->ep_ts, (size_t)EPOCH_RING * t->ncpus * sizeof(*b->ep_ts));
		for (uint32_t c = 0; c < t->ncpus; c++) /* partner: bt_stack_table_note */
			b->hi_ts[c] = __atomic_load_n(&t->hi_ts[c], __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < t->n; i++)
			b->slot[i] = (uint32_t)(epoch_slot(t, t->e[i].born) + 1);
	}
	pthread_mutex_unlock(&t->lock);
	if (!b->slot || !b->ep_ts || !b->hi_ts) {
		bt_stack_births_free(b);
		return NULL;
	}
	return b;
}

uint32_t bt_stack_births_id(struct bt_stack_births *b, uint32_t id, uint32_t cpu, uint64_t ts)
{
	if (!id || BT_STACK_ID_GONE(id))
		return id;
	if (!b)
		return BT_STACK_RECLAIMED;
	/* an id beyond n was first handed out after the births: never freed */
	if (id > b->n || !b->slot[id - 1])
		return id;
	if (cpu < b->ncpus && ts > b->ep_ts[(size_t)(b->slot[id - 1] - 1) * b->ncpus + cpu])
		return id; /* drained after the free: the id's stack now */
	b->reclaimed++;
	return BT_STACK_RECLAIMED;
}

uint64_t bt_stack_births_reclaimed(const struct bt_stack_births *b)
{
	return b ? b->reclaimed : 0;
}

void bt_stack_births_free(struct bt_stack_births *b)
{
	if (!b)
		return;
	free(b->slot);
	free(b->ep_ts);
	free(b->hi_ts);
	free(b);
}

void bt_stack_births_view(const struct bt_stack_births *b, struct bt_stack_births_arrays *v)
{
	*v = (struct bt_stack_births_arrays){ .n = b->n, .ncpus = b->ncpus, .nring = EPOCH_RING, .slot = b->slot,
					      .ep_ts = b->ep_ts, .hi_ts = b->hi_ts };
}

/* Phase 2: free the doomed stacks that stayed unnamed, in a new epoch.
 * Refused (kept doomed, tried next pass) while a dump holds the table, or
 * when the kernel side cannot say which hashes it holds. */
static void free_doomed(struct bt_stack_table *t, uint64_t blocks_used)
{
	uint64_t epoch = 0;
	uint64_t *held = NULL;
	long nheld;

	nheld = t->ops.held(t->ops.ctx, &held);
	if (nheld < 0)
		return;
	if (nheld > 0)
		qsort(held, (size_t)nheld, sizeof(*held), bt_cmp_u64);
	pthread_mutex_lock(&t->lock);
	if (t->holds) {
		/* A dump may have copied their events and took the births:
		 * they keep their ids until it is done. */
		pthread_mutex_unlock(&t->lock);
		free(held);
		return;
	}
	for (uint32_t k = 0; k < t->ndoomed; k++) {
		uint32_t id = t->doomed[k];
		struct entry *e = &t->e[id - 1];

		int why = e->doomed;

		e->doomed = DOOM_NONE;
		if (e->last_use > e->doomed_at || (nheld && bsearch(&e->hash, held, (size_t)nheld, sizeof(*held), bt_cmp_u64))) {
			continue; /* named since (an event in flight), or a blocked task holds it */
		}
		if (!epoch) {
			/* The epoch of this free: an event drained so far is
			 * at or before its CPU's time here. */
			if (t->ep_next - t->ep_first == EPOCH_RING)
				t->ep_first++;
			epoch = t->ep_next++;
			memcpy(t->ep_ts + (epoch % EPOCH_RING) * t->ncpus, t->hi_ts, t->ncpus * sizeof(*t->hi_ts));
			t->ep_blocks[epoch % EPOCH_RING] = blocks_used;
		}
		index_remove(t, e->hash);
		t->frames -= e->frames ? e->nframes : 0;
		free(e->frames);
		*e = (struct entry){ .born = epoch };
		t->free_ids[t->nfree++] = id;
		t->live--;
		t->reclaimed++;
		t->evicted += why == DOOM_FULL;
	}
	pthread_mutex_unlock(&t->lock);
	t->ndoomed = 0;
	free(held);
}

/* Phase 1: doom the stacks last named in generation g or before (not
 * doomed yet), and have the kernel side forget them. */
static void doom(struct bt_stack_table *t, uint64_t g)
{
	uint32_t nh = 0;

	for (uint32_t id = 1; id <= t->n; id++) {
		struct entry *e = &t->e[id - 1];

		if (!e->hash || e->doomed || e->last_gen > g) /* hash: the drain's own write, read back */
			continue;
		e->doomed = DOOM_WINDOW;
		e->doomed_at = t->pass;
		t->doomed[t->ndoomed++] = id;
		t->scratch[nh++] = e->hash;
	}
	if (nh)
		t->ops.forget(t->ops.ctx, t->scratch, nh);
}

/* Phase 1 when the table is nearly full: doom the want stacks named
 * longest ago (not in this pass; none a blocked task holds, they could not
 * be freed), though events in the buffer still name them. */
static void doom_oldest(struct bt_stack_table *t, uint32_t want)
{
	uint64_t *held = NULL, *use = t->scratch;
	uint32_t nc = 0, nh = 0;
	long nheld = t->ops.held(t->ops.ctx, &held);

	if (nheld < 0)
		return;
	if (nheld > 0)
		qsort(held, (size_t)nheld, sizeof(*held), bt_cmp_u64);
#define CANDIDATE(e) ((e)->hash && !(e)->doomed && (e)->last_use < t->pass && \
		      !(nheld > 0 && bsearch(&(e)->hash, held, (size_t)nheld, sizeof(*held), bt_cmp_u64)))
	for (uint32_t id = 1; id <= t->n; id++)
		if (CANDIDATE(&t->e[id - 1]))
			use[nc++] = t->e[id - 1].last_use;
	if (nc) {
		/* the want-th oldest last use: those before it go, and of
		 * those at it as many as make want */
		qsort(use, nc, sizeof(*use), bt_cmp_u64);
		if (want > nc)
			want = nc;
		uint64_t cut = use[want - 1];
		uint32_t at_cut = 0;
		while (at_cut < want && use[want - 1 - at_cut] == cut)
			at_cut++;
		for (uint32_t id = 1; id <= t->n && nh < want; id++) {
			struct entry *e = &t->e[id - 1];

			if (!CANDIDATE(e) || e->last_use > cut || (e->last_use == cut && !at_cut))
				continue;
			if (e->last_use == cut)
				at_cut--;
			e->doomed = DOOM_FULL;
			e->doomed_at = t->pass;
			t->doomed[t->ndoomed++] = id;
			t->scratch[nh++] = e->hash; /* use[] is done with below nh */
		}
	}
#undef CANDIDATE
	free(held);
	if (!nh)
		return;
	if (!t->said_full) {
		t->said_full = 1;
		bt_warn("stack table full (--max-stacks %u) before the buffer's window moved on: from now on the stacks "
			"named longest ago give way to new ones, and their older events say their stack was reclaimed "
			"(counted: ctl status, report --stats)", t->max);
	}
	t->ops.forget(t->ops.ctx, t->scratch, nh);
}

static void stack_pass(struct bt_stack_table *t, uint64_t blocks_used, uint64_t nblocks, uint64_t cold_from,
		       uint64_t slack)
{
	uint32_t nh = 0;

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
		free_doomed(t, blocks_used);
	if (nblocks > t->nblocks_max)
		t->nblocks_max = nblocks; /* a grown buffer keeps old blocks longer */
	/* The oldest position any event retained may be in: the buffer's
	 * (at its largest: a shrink may keep older blocks in the slots it
	 * keeps) or the cold tier's, whichever is older. Positions below it
	 * are gone from both. */
	uint64_t kept_from = blocks_used + 1 > t->nblocks_max ? blocks_used + 1 - t->nblocks_max : 0;
	if (cold_from < kept_from)
		kept_from = cold_from;
	/* Epochs the window has moved past: their ids' older events are gone
	 * (an epoch dropped from the ring goes with the oldest kept). */
	pthread_mutex_lock(&t->lock);
	while (t->ep_retired + 1 < t->ep_next) {
		uint64_t e = t->ep_retired + 1 < t->ep_first ? t->ep_first : t->ep_retired + 1;
		if (t->ep_blocks[e % EPOCH_RING] + slack >= kept_from)
			break;
		t->ep_retired++;
	}
	pthread_mutex_unlock(&t->lock);
	/* Nearly full: free room for the next passes' new stacks now, the
	 * oldest first, rather than losing the newest. Doomed now, freed at
	 * the next pass (or once a dump lets go): room for two passes' new
	 * stacks and a burst (at least 1/8 of the table: a dump may hold it
	 * for a few passes), counting the doomed still to be freed. Below
	 * that, room is made up to it and a batch more (the scan stays rare,
	 * and a dump holding the table a few passes finds slack), never past
	 * half the table: dooming the room wanted on top of what was free took
	 * stacks named a second ago after a burst (CI, 2026-12-05). */
	uint32_t room = t->nfree + (t->max - t->n), batch = t->max / 16 ? t->max / 16 : 1, want = 2 * batch;
	if (t->new_ids > want / 4)
		want = 4 * t->new_ids < t->max / 2 ? 4 * t->new_ids : t->max / 2;
	t->new_ids = 0;
	if (room + t->ndoomed < want) {
		uint32_t target = want + batch < t->max / 2 ? want + batch : t->max / 2;
		/* (a table under 4 stacks: half of it is below want) */
		doom_oldest(t, target > room + t->ndoomed ? target - room - t->ndoomed : 1);
	}
	/* GENS_PER_WINDOW generations over the whole window, the tier's too:
	 * the ring of their ends reaches back past its oldest */
	uint64_t window = blocks_used >= kept_from && blocks_used - kept_from + 1 > nblocks ? blocks_used - kept_from + 1
											    : nblocks;
	uint64_t step = window / GENS_PER_WINDOW ? window / GENS_PER_WINDOW : 1;
	if (blocks_used - t->gen_start < step)
		return;
	/* Every event named in generation gen is in a block taken by now. */
	t->gen_end[t->gen % GEN_RING] = blocks_used;
	t->gen++;
	t->gen_start = blocks_used;
	/* The newest ended generation whose blocks are all gone: below the
	 * oldest position kept, in the buffer and in the tier. */
	for (uint64_t g = t->gen; g-- > 0 && t->gen - g <= GEN_RING;) {
		if (t->gen_end[g % GEN_RING] + slack < kept_from) {
			doom(t, g);
			break;
		}
	}
}

void bt_stack_table_pass(struct bt_stack_table *t, uint64_t blocks_used, uint64_t nblocks, uint64_t cold_from,
			 uint64_t slack)
{
	pthread_mutex_lock(&t->lock); /* bt_mapcap_files' readers hold it */
	bt_mapcap_tick(t->maps);
	pthread_mutex_unlock(&t->lock);
	if (!t->reclaim)
		return;
	stack_pass(t, blocks_used, nblocks, cold_from, slack);
	t->pass++; /* after: the next pass's names are newer than any doom */
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
	t->newf_added++;
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

/* The walker's reasons are the dump's (dump_stacks.h). */
_Static_assert((int)BT_CUT_NO_PROC == (int)BT_WHY_NO_PROC && (int)BT_CUT_NO_MAP == (int)BT_WHY_NO_MAP &&
		       (int)BT_CUT_ANON == (int)BT_WHY_ANON && (int)BT_CUT_SIGNAL == (int)BT_WHY_SIGNAL &&
		       (int)BT_CUT_BAD_FRAME == (int)BT_WHY_BAD_FRAME && (int)BT_CUT_NO_TABLE == (int)BT_WHY_NO_TABLE &&
		       (int)BT_CUT_REASONS <= (int)BT_WHY_DEPTH,
	       "truncation reasons");

/* A definition's flags -> the stack's: truncated, and why (the walker's
 * reason; else the frame limit). */
static uint16_t stack_flags(uint32_t def_flags)
{
	if (def_flags & BT_STACKDEF_CUT)
		return BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_STACKDEF_WHY(def_flags));
	if (def_flags & BT_STACKDEF_FULL)
		return BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_WHY_DEPTH);
	return 0;
}

/* Frames fr, none of which is in a file of its process (map NONE, off the
 * address looked up): a stack taken before an exec (bt_mapcap_parent)?
 * Named from the parent's maps if every frame is in a file there (junk
 * would not be); 1 if so. Under the lock. */
static int name_from_parent(struct bt_stack_table *t, uint32_t ppid, struct bt_dump_frame *fr, uint32_t nf,
			    uint64_t ts)
{
	struct bt_dump_frame pf[BT_MAX_FRAMES];

	if (!ppid || !nf || nf > BT_MAX_FRAMES)
		return 0;
	for (uint32_t k = 0; k < nf; k++) {
		uint64_t off;
		uint32_t map = bt_mapcap_resolve_at(t->maps, ppid, fr[k].off, ts, &off);
		if (map == BT_DMAP_NONE)
			return 0;
		pf[k] = (struct bt_dump_frame){ .map = map, .sym = 0, .off = k ? off + 1 : off };
	}
	memcpy(fr, pf, nf * sizeof(*fr));
	t->pre_exec++;
	for (uint32_t k = 0; k < nf && t->newf; k++)
		keep_new_frame(t, fr[k].map, bt_frame_lookup_off(fr[k].off, k));
	return 1;
}

/* A fork applied (after the pass its child's first stacks came in): the
 * child's stacks left unnamed wait for it in t->orphan. Under the lock. */
static void forked(struct bt_stack_table *t, uint32_t child, uint32_t parent)
{
	bt_mapcap_forked(t->maps, child, parent);
	for (uint32_t i = 0; i < ORPHANS; i++) {
		uint32_t id = t->orphan[i].id;
		if (!id || t->orphan[i].tgid != child)
			continue;
		t->orphan[i].id = 0;
		struct entry *e = id <= t->n ? &t->e[id - 1] : NULL;
		if (!e || !e->frames || e->tgid != child || e->kind != BT_STACK_USER)
			continue; /* freed, or its id given to another stack since */
		uint32_t k = 0;
		while (k < e->nframes && e->frames[k].map == BT_DMAP_NONE)
			k++;
		if (k == e->nframes && name_from_parent(t, parent, e->frames, e->nframes, 0))
			t->unresolved -= e->nframes;
	}
}

/* User frame k of tgid (ip; the file the BPF side found it in, ino and
 * dev_off, else BT_FRAME_NO_FILE) -> its map id and *off. Under the lock. */
static uint32_t user_frame(struct bt_stack_table *t, uint32_t tgid, uint64_t ts, uint32_t k, uint64_t ip,
			   uint64_t ino, uint64_t dev_off, uint64_t *off)
{
	/* The file the BPF side found it in: named even if the process is
	 * gone before its maps could be read. */
	uint32_t map = dev_off == BT_FRAME_NO_FILE ? BT_DMAP_NONE
						   : bt_mapcap_resolve_file(t->maps, tgid, (uint32_t)dev_off, ino);
	if (map != BT_DMAP_NONE) {
		*off = dev_off >> 32;
		return map;
	}
	/* Return addresses point after the call: resolve ip - 1 so a call at
	 * a function's end stays in it; store the call site. */
	map = bt_mapcap_resolve_at(t->maps, tgid, k ? ip - 1 : ip, ts, off);
	if (k && map != BT_DMAP_NONE)
		*off += 1;
	return map;
}

void bt_stack_table_define(struct bt_stack_table *t, const struct bt_raw_stack_def *d, uint32_t len)
{
	uint32_t nf = d->nframes, id, user = !!(d->flags & BT_STACKDEF_USER), unresolved = 0, jit_wanted = 0;
	struct bt_dump_frame *fr;

	uint32_t stride = (d->flags & BT_STACKDEF_FILES) ? 3 : 1; /* words per frame */

	if (len < sizeof(*d) || nf > BT_MAX_FRAMES || len < sizeof(*d) + 8ull * stride * nf || !nf)
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
	uint16_t flags = stack_flags(d->flags);
	pthread_mutex_lock(&t->lock);
	for (uint32_t k = 0; k < nf; k++) {
		uint64_t ip = d->ips[k * stride], off = ip;
		uint32_t map = BT_DMAP_KERNEL;

		if (user && stride == 3 && (ip & BT_FRAME_PY_BIT) && d->ips[k * 3 + 2] == BT_FRAME_NO_FILE) {
			/* A Python frame (python_frames.bpf.h): its code's key */
			fr[k] = (struct bt_dump_frame){ .map = BT_DMAP_NONE, .sym = 0, .off = ip };
			continue;
		}
		if (user && (ip < 4096 || ip >= (1ull << 47))) {
			/* Not a user code address: the frame-pointer walk went
			 * through code without frame pointers; the rest is junk. */
			nf = k;
			if (!(d->flags & BT_STACKDEF_CUT)) /* (else the walker said why) */
				flags = BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(BT_WHY_NOT_CODE);
			break;
		}
		if (user) {
			map = user_frame(t, d->h.tgid, d->h.ts_ns, k, ip, stride == 3 ? d->ips[k * 3 + 1] : 0,
					 stride == 3 ? d->ips[k * 3 + 2] : BT_FRAME_NO_FILE, &off);
			if (map == BT_DMAP_NONE)
				unresolved++;
			if (map == BT_DMAP_NONE && !jit_wanted) { /* JIT code: its runtime's perf map, while it lives */
				bt_perfmaps_want(t->jit, d->h.tgid);
				jit_wanted = 1;
			}
		}
		fr[k] = (struct bt_dump_frame){ .map = map, .sym = 0, .off = off };
		if (user && t->newf && map != BT_DMAP_NONE)
			keep_new_frame(t, map, bt_frame_lookup_off(off, k));
	}
	if (user && nf && unresolved == nf) { /* before an exec? */
		if (name_from_parent(t, bt_mapcap_parent(t->maps, d->h.tgid), fr, nf, d->h.ts_ns)) {
			unresolved = 0;
		} else { /* its fork may be applied after this pass */
			t->orphan[t->orphan_next] = (struct orphan){ id, d->h.tgid };
			t->orphan_next = (t->orphan_next + 1) % ORPHANS;
		}
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

/* Frame k of tgid's stack where a copy's walk placed it (ip, ino,
 * dev_off): *out, its source line looked up ahead. Under the lock. */
static uint32_t placed_frame(struct bt_stack_table *t, uint32_t tgid, uint32_t k, const struct bt_stack_frame_file *f,
			     struct bt_dump_frame *out)
{
	uint64_t off = f->ip;
	uint32_t map = user_frame(t, tgid, 0, k, f->ip, f->ino, f->dev_off, &off);

	*out = (struct bt_dump_frame){ .map = map, .sym = 0, .off = off };
	if (t->newf && map != BT_DMAP_NONE)
		keep_new_frame(t, map, bt_frame_lookup_off(off, k));
	return map;
}

int bt_stack_table_finish(struct bt_stack_table *t, uint64_t hash, uint32_t nframes,
			  const struct bt_stack_frame_file *stop, const struct bt_stack_frame_file *more,
			  uint32_t nmore, uint32_t why)
{
	uint32_t i = find_slot(t, hash), unresolved = 0;

	if (!t->slot_hash[i])
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	struct entry *e = &t->e[t->slot_id[i] - 1];
	if (!e->frames || e->hash != hash || e->kind != BT_STACK_USER || e->nframes != nframes ||
	    nframes + nmore > BT_MAX_FRAMES) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT; /* cut short by the recorder (not a code address), or not this stack */
	}
	struct bt_dump_frame *fr = realloc(e->frames, (nframes + nmore) * sizeof(*fr));
	if (!fr) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	e->frames = fr;
	if (stop && stop->dev_off != BT_FRAME_NO_FILE && fr[nframes - 1].map == BT_DMAP_NONE) {
		/* The walk stopped at a file whose table was not built: its
		 * path may have been unknown then, and the process gone. */
		struct bt_dump_frame f;
		if (placed_frame(t, e->tgid, nframes - 1, stop, &f) != BT_DMAP_NONE) {
			fr[nframes - 1] = f;
			t->unresolved -= t->unresolved > 0;
		}
	}
	for (uint32_t k = 0; k < nmore; k++)
		unresolved += placed_frame(t, e->tgid, nframes + k, &more[k], &fr[nframes + k]) == BT_DMAP_NONE;
	e->nframes = nframes + nmore;
	e->flags = why ? BT_STACK_F_TRUNCATED | BT_STACK_F_WHY(why) : 0;
	t->unresolved += unresolved;
	t->frames += nmore;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void bt_stack_table_set_path_source(struct bt_stack_table *t, bt_mapcap_path_fn fn, void *arg)
{
	pthread_mutex_lock(&t->lock);
	bt_mapcap_set_path_source(t->maps, fn, arg);
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
		if (forget) {
			bt_mapcap_forget(t->maps, e->tgid);
			bt_perfmaps_forget(t->jit, e->tgid);
		} else {
			bt_mapcap_exited(t->maps, e->tgid);
			bt_perfmaps_exited(t->jit, e->tgid);
		}
		if (h->type == BT_EV_PROCESS_FORK && e->tid == e->tgid)
			forked(t, e->tgid, h->tgid);
		pthread_mutex_unlock(&t->lock);
	}
}

void bt_stack_table_counts(struct bt_stack_table *t, struct bt_stack_counts *c)
{
	pthread_mutex_lock(&t->lock);
	*c = (struct bt_stack_counts){ .stacks = t->live, .overflow = t->overflow, .reclaimed = t->reclaimed,
				       .evicted = t->evicted, .frames = t->frames, .pre_exec = t->pre_exec };
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
	s->counters[BT_STKC_EVICTED] = t->evicted;
	s->counters[BT_STKC_MAX_STACKS] = t->max;
	s->counters[BT_STKC_OVERFLOW] = t->overflow;
	s->counters[BT_STKC_UNDEFINED] = undefined;
	s->counters[BT_STKC_UNRESOLVED] = t->unresolved;
	s->counters[BT_STKC_PRE_EXEC] = t->pre_exec;
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

struct bt_perfmaps *bt_stack_table_perfmaps(struct bt_stack_table *t)
{
	return t->jit;
}

struct bt_pycodes *bt_stack_table_pycodes(struct bt_stack_table *t)
{
	return t->py;
}
