// SPDX-License-Identifier: MIT
/*
 * triggers.c - the trigger thread (see triggers.h): hits in, one dump
 * request per accepted hit out, after its trigger's delay, carrying the
 * hits that came during that delay (merged); the counts of every hit's end.
 *
 * Locking: `lock` guards the per-trigger state and the queue of user-space
 * hits; the thread calls dump() without it. User-space hits are queued and
 * the eventfd written, so bt_triggers_hit() never waits for the thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "trigger_bpf.h"
#include "triggers.h"
#include "util.h"

#define INQ_MAX 64 /* user-space hits waiting for the thread; more are counted dropped */

/* The hits of one trigger handed on together: the accepted one, then those
 * merged into it during its delay. */
struct due_hits {
	struct bt_trigger_fired f[BT_TRIG_NAMED];
	size_t n;
	uint64_t unnamed;
};

struct tstate {
	/* user-space side (the kernel's are added in stats); dumps, merged
	 * and dropped of hits handed on are told by bt_triggers_account() */
	uint64_t hits, limited, merged, dumps, dropped, lost;
	uint64_t last_accept;                /* CLOCK_BOOTTIME of the last accepted hit, 0 none */
	int pending;                         /* an accepted hit waits for its delay */
	struct bt_trigger_fired pend[BT_TRIG_NAMED]; /* [0] the accepted hit, then hits merged into it */
	size_t npend;
	uint64_t unnamed;                    /* hits merged beyond those named in pend */
};

struct bt_triggers {
	struct bt_trigger_spec *v;
	size_t n;
	struct bt_trig_bpf *kb; /* NULL: no kernel condition */
	int efd, epfd;
	pthread_t th;
	int started;
	atomic_int quit; /* relaxed: the eventfd write after it wakes the thread */
	bt_trigger_dump_fn dump;
	void *ctx;

	pthread_mutex_t lock;
	int stopped; /* under lock: bt_triggers_stop() ran, hits are ignored */
	struct tstate st[BT_TRIG_MAX];
	struct bt_trigger_fired inq[INQ_MAX];
	size_t ninq;
	/* Accepted hits to announce once the lock is dropped (a slow stderr
	 * must not hold the lock bt_triggers_hit() takes from the drain). At
	 * most one pending hit per trigger, so BT_TRIG_MAX is enough. */
	struct bt_trigger_fired said[BT_TRIG_MAX];
	size_t nsaid;
};

size_t bt_triggers_count(const struct bt_triggers *t)
{
	return t ? t->n : 0;
}

const struct bt_trigger_spec *bt_triggers_spec(const struct bt_triggers *t, size_t i)
{
	return i < t->n ? &t->v[i] : NULL;
}

int bt_triggers_find(const struct bt_triggers *t, const char *name)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void fill(const struct bt_triggers *t, struct bt_trigger_fired *f, size_t i)
{
	const struct bt_trigger_spec *s = &t->v[i];

	f->trig = (uint32_t)i;
	f->threshold_ns = s->threshold_ns;
	memcpy(f->name, s->name, sizeof(f->name));
	memcpy(f->cond, s->cond, sizeof(f->cond));
}

/* Under lock: a hit of trigger f->trig seen now (boottime). counted: the
 * kernel already counted it as a hit. */
static void accept_hit(struct bt_triggers *t, struct bt_trigger_fired *f, uint64_t now, int counted)
{
	struct tstate *s = &t->st[f->trig];
	const struct bt_trigger_spec *sp = &t->v[f->trig];

	if (!counted)
		s->hits++;
	if (s->pending) {
		/* Its dump is not taken yet and will hold this event: one dump
		 * names both (merged when that dump is written). */
		f->seen_ns = now;
		f->due_ns = s->pend[0].due_ns;
		if (s->npend < BT_TRIG_NAMED)
			s->pend[s->npend++] = *f;
		else
			s->unnamed++;
		return;
	}
	if (s->last_accept && now - s->last_accept < sp->limit_ns) {
		s->limited++;
		return;
	}
	s->last_accept = now;
	s->pending = 1;
	f->seen_ns = now;
	f->due_ns = now + sp->after_ns;
	s->pend[0] = *f;
	s->npend = 1;
	s->unnamed = 0;
	if (t->nsaid < BT_TRIG_MAX)
		t->said[t->nsaid++] = *f;
}

/* Under lock: take the accepted hits to announce; unlock, then say_hits(). */
static size_t take_said(struct bt_triggers *t, struct bt_trigger_fired *out)
{
	size_t n = t->nsaid;

	memcpy(out, t->said, n * sizeof(*out));
	t->nsaid = 0;
	return n;
}

static void say_hits(const struct bt_triggers *t, const struct bt_trigger_fired *f, size_t n)
{
	char d[256];

	for (size_t i = 0; i < n; i++) {
		const struct bt_trigger_spec *sp = &t->v[f[i].trig];

		bt_warn("trigger %s fired: %s%s", sp->name, bt_trigger_describe(&f[i], d, sizeof(d)),
			sp->after_ns ? "; dumping after the delay" : "");
	}
}

static void on_kernel_hit(void *ctx, const struct bt_trig_hit *h)
{
	struct bt_triggers *t = ctx;
	struct bt_trigger_fired f;

	if (h->trig >= t->n)
		return;
	memset(&f, 0, sizeof(f));
	fill(t, &f, h->trig);
	f.kind = t->v[h->trig].kind;
	f.ts_ns = h->ts_ns;
	f.value = h->value;
	f.aux = h->aux;
	f.tid = h->tid;
	f.tgid = h->tgid;
	f.cpu = h->cpu;
	memcpy(f.comm, h->comm, sizeof(f.comm));
	f.comm[sizeof(f.comm) - 1] = '\0';
	accept_hit(t, &f, bt_boottime_ns(), 1);
}

void bt_triggers_hit(struct bt_triggers *t, size_t i, uint32_t kind, uint64_t ts_ns, uint64_t value, uint32_t tid,
		     uint32_t tgid, const char *comm)
{
	struct bt_trigger_fired *f;
	uint64_t one = 1;

	if (!t || i >= t->n)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->stopped) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (t->ninq == INQ_MAX) {
		t->st[i].hits++;
		t->st[i].dropped++;
		pthread_mutex_unlock(&t->lock);
		return;
	}
	f = &t->inq[t->ninq++];
	memset(f, 0, sizeof(*f));
	fill(t, f, i);
	f->kind = kind;
	f->ts_ns = ts_ns ? ts_ns : bt_boottime_ns();
	f->value = value;
	f->aux = -1;
	f->tid = tid;
	f->tgid = tgid;
	f->cpu = UINT32_MAX;
	if (comm)
		snprintf(f->comm, sizeof(f->comm), "%s", comm);
	pthread_mutex_unlock(&t->lock);
	if (write(t->efd, &one, sizeof(one)) < 0) {
		/* the counter cannot overflow at 2^64-2: the thread reads it */
	}
}

void bt_triggers_app(struct bt_triggers *t, const char *name, uint32_t kind, uint64_t ts_ns, uint64_t value,
		     uint32_t tid, uint32_t tgid, const char *comm)
{
	for (size_t i = 0; t && i < t->n; i++) {
		const struct bt_trigger_spec *s = &t->v[i];

		if (s->kind != kind || strcmp(s->arg, name) != 0)
			continue;
		if (kind == BT_TRIG_APP_SLICE && value <= s->threshold_ns)
			continue;
		bt_triggers_hit(t, i, kind, ts_ns, value, tid, tgid, comm);
	}
}

void bt_triggers_stats(struct bt_triggers *t, size_t i, struct bt_trigger_stats *out)
{
	struct bt_trig_count k;

	memset(out, 0, sizeof(*out));
	if (!t || i >= t->n)
		return;
	pthread_mutex_lock(&t->lock);
	out->hits = t->st[i].hits;
	out->limited = t->st[i].limited;
	out->merged = t->st[i].merged;
	out->dumps = t->st[i].dumps;
	out->dropped = t->st[i].dropped;
	pthread_mutex_unlock(&t->lock);
	if (t->kb && t->v[i].kind < BT_TRIG_KERNEL_MAX && bt_trig_bpf_count(t->kb, (uint32_t)i, &k) == 0) {
		out->hits += k.hits;
		out->limited += k.suppressed;
		out->merged += k.merged;
		out->lost = k.lost;
		out->dropped += k.lost;
	}
	out->skipped = out->merged + out->limited;
	uint64_t ended = out->dumps + out->merged + out->limited + out->dropped;
	out->pending = out->hits > ended ? out->hits - ended : 0;
}

void bt_triggers_account(struct bt_triggers *t, size_t i, uint64_t dumps, uint64_t merged, uint64_t dropped)
{
	if (!t || i >= t->n)
		return;
	pthread_mutex_lock(&t->lock);
	t->st[i].dumps += dumps;
	t->st[i].merged += merged;
	t->st[i].dropped += dropped;
	pthread_mutex_unlock(&t->lock);
}

/* Under lock: trigger i's pending hits into out (the accepted one first). */
static struct due_hits take_pending(struct tstate *s)
{
	struct due_hits d;

	memcpy(d.f, s->pend, s->npend * sizeof(s->pend[0]));
	d.n = s->npend;
	d.unnamed = s->unnamed;
	s->pending = 0;
	s->npend = 0;
	s->unnamed = 0;
	return d;
}

static void *trigger_main(void *arg)
{
	struct bt_triggers *t = arg;

	pthread_setname_np(pthread_self(), "btrace-trigger");
	/* A hit waits for nothing else: under a load of busy loops a thread
	 * of normal priority took up to ~190 ms to get its turn, while an
	 * application at full speed overwrote the call the hit is about
	 * (its copy is taken here). It sleeps otherwise. Refused, it runs at
	 * the drain's nice (-10, loader.h), above the workload. */
	bt_thread_realtime("trigger thread", -10);
	while (!atomic_load_explicit(&t->quit, memory_order_relaxed)) {
		struct epoll_event ev[4];
		struct bt_trigger_fired said[BT_TRIG_MAX];
		struct due_hits due[BT_TRIG_MAX];
		size_t ndue = 0, nsaid;
		uint64_t now = bt_boottime_ns(), next = UINT64_MAX, cnt;
		int timeout = -1, nev;

		pthread_mutex_lock(&t->lock);
		for (size_t i = 0; i < t->n; i++) {
			struct tstate *s = &t->st[i];

			if (!s->pending)
				continue;
			if (s->pend[0].due_ns <= now)
				due[ndue++] = take_pending(s);
			else if (s->pend[0].due_ns < next)
				next = s->pend[0].due_ns;
		}
		pthread_mutex_unlock(&t->lock);
		for (size_t i = 0; i < ndue; i++)
			t->dump(t->ctx, due[i].f, due[i].n, due[i].unnamed);
		if (ndue)
			continue; /* time moved on while dump() ran */
		if (next != UINT64_MAX)
			timeout = (int)((next - now + 999999) / 1000000);
		nev = epoll_wait(t->epfd, ev, 4, timeout);
		if (nev < 0 && errno != EINTR) {
			bt_warn("trigger thread: epoll_wait: %s; triggers stop", strerror(errno));
			break;
		}
		for (int k = 0; k < nev; k++) {
			if (ev[k].data.u32 == 0) {
				if (read(t->efd, &cnt, sizeof(cnt)) < 0) {
					/* EAGAIN: another wakeup already took it */
				}
			} else if (t->kb) {
				pthread_mutex_lock(&t->lock);
				bt_trig_bpf_consume(t->kb, on_kernel_hit, t);
				nsaid = take_said(t, said);
				pthread_mutex_unlock(&t->lock);
				say_hits(t, said, nsaid);
			}
		}
		pthread_mutex_lock(&t->lock);
		now = bt_boottime_ns();
		for (size_t i = 0; i < t->ninq; i++)
			accept_hit(t, &t->inq[i], now, 0);
		t->ninq = 0;
		nsaid = take_said(t, said);
		pthread_mutex_unlock(&t->lock);
		say_hits(t, said, nsaid);
	}
	return NULL;
}

struct bt_triggers *bt_triggers_start(const struct bt_trigger_spec *v, size_t n, int ring_fd, int counts_fd,
				      bt_trigger_dump_fn dump, void *ctx, char *err, size_t errlen)
{
	struct bt_triggers *t = calloc(1, sizeof(*t));
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	if (!t || n > BT_TRIG_MAX) {
		snprintf(err, errlen, n > BT_TRIG_MAX ? "too many triggers" : "out of memory");
		free(t);
		return NULL;
	}
	t->efd = t->epfd = -1;
	pthread_mutex_init(&t->lock, NULL);
	t->dump = dump;
	t->ctx = ctx;
	t->n = n;
	t->v = calloc(n ? n : 1, sizeof(*t->v));
	if (!t->v) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	memcpy(t->v, v, n * sizeof(*v));
	t->kb = bt_trig_bpf_open(t->v, n, ring_fd, counts_fd, err, errlen);
	if (!t->kb && errno)
		goto fail;
	t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->efd < 0 || t->epfd < 0) {
		snprintf(err, errlen, "--trigger: %s", strerror(errno));
		goto fail;
	}
	ev.data.u32 = 0;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->efd, &ev) < 0)
		goto fail_errno;
	if (t->kb) {
		ev.data.u32 = 1;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, bt_trig_bpf_fd(t->kb), &ev) < 0)
			goto fail_errno;
	}
	r = pthread_create(&t->th, NULL, trigger_main, t);
	if (r) {
		snprintf(err, errlen, "cannot start the trigger thread: %s", strerror(r));
		goto fail;
	}
	t->started = 1;
	return t;
fail_errno:
	snprintf(err, errlen, "--trigger: %s", strerror(errno));
fail:
	bt_triggers_stop(t);
	bt_triggers_free(t);
	return NULL;
}

/* After the thread is gone: hits still in the kernel ring or the queue are
 * taken, and every pending hit goes to its dump now, its delay cut short:
 * the final dump holds them rather than nothing. */
static void hand_on_rest(struct bt_triggers *t)
{
	struct bt_trigger_fired said[BT_TRIG_MAX];
	struct due_hits due[BT_TRIG_MAX];
	size_t ndue = 0, nsaid;
	uint64_t now = bt_boottime_ns();

	pthread_mutex_lock(&t->lock);
	if (t->kb)
		bt_trig_bpf_consume(t->kb, on_kernel_hit, t);
	for (size_t i = 0; i < t->ninq; i++)
		accept_hit(t, &t->inq[i], now, 0);
	t->ninq = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->st[i].pending)
			due[ndue++] = take_pending(&t->st[i]);
	nsaid = take_said(t, said);
	pthread_mutex_unlock(&t->lock);
	say_hits(t, said, nsaid);
	for (size_t i = 0; i < ndue; i++)
		t->dump(t->ctx, due[i].f, due[i].n, due[i].unnamed);
}

void bt_triggers_stop(struct bt_triggers *t)
{
	uint64_t one = 1;

	if (!t)
		return;
	bt_trig_bpf_detach(t->kb);
	pthread_mutex_lock(&t->lock);
	t->stopped = 1;
	pthread_mutex_unlock(&t->lock);
	if (t->started) {
		atomic_store_explicit(&t->quit, 1, memory_order_relaxed);
		if (write(t->efd, &one, sizeof(one)) < 0) {
			/* nonblocking eventfd: only fails if already readable */
		}
		pthread_join(t->th, NULL);
		t->started = 0;
		hand_on_rest(t);
	}
}

void bt_triggers_free(struct bt_triggers *t)
{
	if (!t)
		return;
	bt_triggers_stop(t);
	bt_trig_bpf_destroy(t->kb);
	if (t->efd >= 0)
		close(t->efd);
	if (t->epfd >= 0)
		close(t->epfd);
	pthread_mutex_destroy(&t->lock);
	free(t->v);
	free(t);
}
