// SPDX-License-Identifier: MIT
/*
 * btrace_app.c - the application side of in-process tracing (btrace.h).
 *
 * Writers: any thread, any time. An event is: per-call-site cached name id,
 * per-thread seq (TLS), sched_getcpu() (rseq-backed in glibc), one vDSO clock
 * read, then the block buffer's fast path on the shared buffer: FAA on the
 * CPU's block's alloc word, fill in place, FAA on its conf word. The layout
 * and algorithm are described in app_shm.h.
 *
 * The connection thread finds a recorder, registers, maps the buffer the
 * recorder sends, sends every interned name, publishes the buffer to writers
 * (btrace_on_ + g_buf), and then waits on the socket: a new buffer (resize) is
 * swapped in, EOF (recorder gone) turns tracing off and looks for the next
 * recorder. Buffers are never unmapped: a writer preempted between loading
 * g_buf and its confirm may still touch the old one. When a buffer stops
 * being used its pages are given back with a hole punch (the recorder's
 * copy is its own business); a late writer then only faults in a zero page.
 *
 * A name interned while attached is sent by the interning thread itself,
 * nonblocking, before its first event: once in the socket it reaches the
 * recorder even if the process exits or dies the next instant (handing it
 * to the connection thread lost it whenever the process exited before that
 * thread ran). Only what the socket cannot take now waits in a queue the
 * connection thread sends. The buffer's header counts the names interned:
 * the recorder shows those it never received as lost.
 */
#include "btrace.h"
#include "app_shm.h"
#include "app_write.h"
#include "funcs_write.h"
#include "fd_pass.h"

#include <dirent.h>
#include <link.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CTL_DIR "/run/btrace-bpf"

int btrace_on_;
#define g_buf btrace_buf_

/* names: process-local table, sent to each recorder we attach to */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **names;   /* names[id - 1] */
static uint32_t nnames, names_cap;
static int conn_fd = -1; /* under names_lock; written by the connection thread only */
/* Lines for the recorder (names, rename) the socket could not take at once,
 * under names_lock. Every send on the socket is made under names_lock and
 * nonblocking, from the head of this queue or, when it is empty, straight
 * from the caller: lines never interleave, an application thread never
 * blocks on the socket. */
static char *outq;
static size_t outq_len, outq_cap;
static int wake_fd = -1; /* eventfd: the queue is not empty */
static long flush_delay_ms; /* BTRACE_TEST_FLUSH_DELAY_MS: tests hold the queue back */

/* A forked child's registration, sent with its own buffer (early_register);
 * the connection thread serves it instead of connecting. Set before that
 * thread is created (pthread_create orders it), read only by it. */
static int early_sock = -1;
/* 1 from an early registration until the recorder answered it (the
 * connection thread clears it): the recorder reads our mappings before
 * it answers, so a process that exits sooner waits for it (early_exit). */
static atomic_int early_pending;

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static char app_name[64];
static int disabled;
static int atfork_set; /* handlers registered (start() runs again in a forked child) */

/* Slices the recorder watches (its `--trigger app:NAME>T`), from "watch NS
 * NAME" lines: an END of one lasting longer than ns sends "slice ...". The
 * connection thread fills an entry, then publishes it by a release store of
 * nwatch (its partner: the acquire load in slice_end()); id is resolved
 * when the name is interned (relaxed: a late id only misses a slice). */
#define MAX_WATCH 16
#define OBJECTS_MS 100 /* how often a function-tracing process looks for libraries loaded */
static struct watch {
	char name[BT_APP_NAME_MAX + 1];
	uint64_t ns;
	uint32_t id; /* 0: name not interned yet */
} watches[MAX_WATCH];
static atomic_uint nwatch;
#define tls btrace_tls_

static uint8_t *reserve(struct app_buf *b, uint32_t core, uint32_t len, struct bt_app_meta **mtp)
{
	uint32_t got;
	return btrace_reserve_(b, core, len, len, &got, mtp);
}

static void queue_line(const char *line, size_t n);

/* A slice ended after dur ns: tell the recorder if it watches the name. */
static void slice_end(uint32_t id, uint64_t dur, uint64_t ts, uint32_t tid)
{
	/* Acquire: pairs with the release store in add_watch(). */
	unsigned n = atomic_load_explicit(&nwatch, memory_order_acquire);
	char line[160];

	for (unsigned i = 0; i < n && i < MAX_WATCH; i++) {
		if (__atomic_load_n(&watches[i].id, __ATOMIC_RELAXED) != id || dur <= watches[i].ns)
			continue;
		int k = snprintf(line, sizeof(line), "slice %" PRIu64 " %u %" PRIu64 " %s\n", ts, tid, dur,
				 watches[i].name);
		if (k > 0 && (size_t)k < sizeof(line)) {
			pthread_mutex_lock(&names_lock);
			queue_line(line, (size_t)k);
			pthread_mutex_unlock(&names_lock);
		}
		return;
	}
}

static void write_event_busy(struct app_buf *b, struct tstate *t, unsigned type, uint32_t id, unsigned nargs,
			     const int64_t *args)
{
	if (__builtin_expect(!t->tid, 0))
		t->tid = (uint32_t)syscall(SYS_gettid);
	if (t->fbat)
		btrace_funcs_break_(t); /* the open function batch numbers its records from its seq */
	uint32_t seq = t->seq++;
	if (nargs > BTRACE_MAX_ARGS)
		nargs = BTRACE_MAX_ARGS;
	int cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	if (__builtin_expect((uint32_t)cpu >= b->ncores, 0)) {
		/* a CPU the recorder did not size the buffer for: it would refuse the block */
		atomic_fetch_add_explicit(&b->shm->stats.dropped, 1, memory_order_relaxed);
		return;
	}
	uint32_t core = (uint32_t)cpu;
	uint32_t len = bt_app_entry_size(nargs);
	struct bt_app_meta *mt;
	uint64_t ts = now_boot();
	if (type == BTRACE_TYPE_BEGIN) {
		if (t->sdepth < SLICE_DEPTH) {
			t->sid[t->sdepth] = id;
			t->sts[t->sdepth] = ts;
		}
		t->sdepth++;
	} else if (type == BTRACE_TYPE_END && t->sdepth) {
		uint32_t d = --t->sdepth;
		if (d < SLICE_DEPTH)
			slice_end(t->sid[d], ts - t->sts[d], ts, t->tid);
	}
	uint8_t *p = reserve(b, core, len, &mt);
	if (!p)
		return;
	struct bt_ev_app *ev = (struct bt_ev_app *)(p + BT_ENTRY_HDR);
	ev->h.ts_ns = ts;
	ev->h.seq = seq;
	ev->h.tid = t->tid;
	ev->h.tgid = b->shm->pid;
	ev->h.cpu = (uint16_t)cpu;
	ev->h.type = (uint16_t)type;
	ev->name_id = id;
	ev->nargs = (uint16_t)nargs;
	ev->flags = 0;
	for (unsigned i = 0; i < nargs; i++)
		ev->args[i] = args[i];
	put_hdr(p, len, BT_ENTRY_DATA);
	btrace_confirm_(mt, len);
}

/* An event takes the thread's seq, which its function records share: it
 * holds fbusy like a hook, so a signal handler's event that interrupts it
 * (or interrupts a hook) is dropped and counted rather than given a seq
 * the interrupted write is about to use; a handler's function records are
 * kept and written after it (btrace_funcs_nested_). */
static void write_event(unsigned type, uint32_t id, unsigned nargs, const int64_t *args)
{
	/* Acquire: pairs with the release store in attach(): the mapping and
	 * geometry are visible before the pointer. */
	struct app_buf *b = atomic_load_explicit(&g_buf, memory_order_acquire);
	if (!b)
		return;
	struct tstate *t = &tls;
	if (__builtin_expect(t->fbusy, 0)) {
		btrace_dropped_nested_(t);
		return;
	}
	t->fbusy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	write_event_busy(b, t, type, id, nargs, args);
	atomic_signal_fence(memory_order_seq_cst);
	/* Function records a signal handler made meanwhile (btrace_funcs.c
	 * keeps them): after the event, as they came. */
	if (__builtin_expect(t->fpw != t->fpr, 0))
		btrace_funcs_flush_(t);
	atomic_signal_fence(memory_order_seq_cst);
	t->fbusy = 0;
}

/* ---- names ------------------------------------------------------------------ */

/* Blocking send of a whole message (registration, before any name). */
static int send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Under names_lock: send what the socket takes now without blocking.
 * Returns the bytes sent, or -1 when the connection is broken (the
 * connection thread sees it too and detaches). */
static ssize_t send_some(const char *s, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = send(conn_fd, s + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* Under names_lock: send a line to the recorder, or queue what the socket
 * cannot take now for the connection thread (dropped when not connected:
 * every name is sent again at the next registration). */
static void queue_line(const char *line, size_t n)
{
	if (conn_fd < 0)
		return;
	if (outq_len == 0) {
		ssize_t w = send_some(line, n);
		if (w < 0)
			return; /* the recorder is gone: it counts what it never got */
		line += w;
		n -= (size_t)w;
		if (!n)
			return;
	}
	if (outq_len + n > outq_cap) {
		size_t cap = outq_cap ? outq_cap * 2 : 4096;
		while (cap < outq_len + n)
			cap *= 2;
		char *q = realloc(outq, cap);
		if (!q)
			return; /* the name stays unknown to this recorder: events show its id */
		outq = q;
		outq_cap = cap;
	}
	memcpy(outq + outq_len, line, n);
	outq_len += n;
	uint64_t one = 1;
	ssize_t w = write(wake_fd, &one, sizeof(one)); /* nonblocking eventfd */
	(void)w;
}

/* Under names_lock. */
static void send_name(uint32_t id)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "name %u %s\n", id, names[id - 1]);
	queue_line(line, (size_t)n);
}

/* The loaded objects' generation (dl_iterate_phdr's adds + subs): it moves
 * when a library is loaded or unloaded. 0 when the loader does not say. */
static int objects_cb(struct dl_phdr_info *i, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(i->dlpi_subs))
		*(unsigned long long *)arg = i->dlpi_adds + i->dlpi_subs;
	return 1; /* the first object says it */
}

static unsigned long long objects_generation(void)
{
	unsigned long long g = 0;
	dl_iterate_phdr(objects_cb, &g);
	return g;
}

/* The generation when the registration line was made: the recorder reads
 * our mappings when it takes that line. */
static unsigned long long objects_gen;

/* Connection thread: a library was loaded or unloaded since the last
 * look: "maps" tells the recorder to read our mappings again now, while
 * we live, so a dump after we exit still names the library's functions
 * (it reads them only at registration otherwise). */
static void note_objects(unsigned long long *gen)
{
	unsigned long long g = objects_generation();
	if (g == *gen)
		return;
	*gen = g;
	pthread_mutex_lock(&names_lock);
	queue_line("maps\n", 5);
	pthread_mutex_unlock(&names_lock);
}

/* Connection thread: send what the socket takes of the queue. Returns the
 * bytes still queued, or -1 when the connection is broken. */
static ssize_t flush_queue(void)
{
	pthread_mutex_lock(&names_lock);
	ssize_t w = outq_len ? send_some(outq, outq_len) : 0;
	if (w > 0) {
		memmove(outq, outq + w, outq_len - (size_t)w);
		outq_len -= (size_t)w;
	}
	ssize_t left = w < 0 ? -1 : (ssize_t)outq_len;
	pthread_mutex_unlock(&names_lock);
	return left;
}

/* Under names_lock: tell the recorder, through the buffer's header, how
 * many names there are (it counts those it never received as lost). */
static void note_names(struct app_buf *b)
{
	if (b)
		atomic_store_explicit(&b->shm->stats.names, nnames, memory_order_relaxed);
}

uint32_t btrace_intern(const char *name)
{
	uint32_t id = 0;
	if (!name)
		return 0;
	pthread_mutex_lock(&names_lock);
	for (uint32_t i = 0; i < nnames; i++)
		if (strncmp(names[i], name, BT_APP_NAME_MAX) == 0) {
			id = i + 1;
			goto out;
		}
	if (nnames >= BT_APP_MAX_NAMES)
		goto out;
	if (nnames == names_cap) {
		uint32_t cap = names_cap ? names_cap * 2 : 64;
		char **n = realloc(names, cap * sizeof(*n));
		if (!n)
			goto out;
		names = n;
		names_cap = cap;
	}
	char *copy = strndup(name, BT_APP_NAME_MAX);
	if (!copy)
		goto out;
	for (char *c = copy; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	names[nnames++] = copy;
	id = nnames;
	send_name(id);
	for (unsigned i = 0; i < atomic_load_explicit(&nwatch, memory_order_relaxed); i++)
		if (strcmp(watches[i].name, copy) == 0)
			__atomic_store_n(&watches[i].id, id, __ATOMIC_RELAXED);
	/* After the send: a recorder that sees the count finds the line in
	 * the socket (or counts it lost). Acquire: pairs with the release
	 * store in publish() (b->shm is set before the pointer). */
	note_names(atomic_load_explicit(&g_buf, memory_order_acquire));
out:
	pthread_mutex_unlock(&names_lock);
	return id;
}

void btrace_event(unsigned type, uint32_t name_id, unsigned nargs, const int64_t *args)
{
	if (__atomic_load_n(&btrace_on_, __ATOMIC_RELAXED))
		write_event(type, name_id, nargs, args);
}

void btrace_emit_(unsigned type, uint32_t *id_cache, const char *name, unsigned nargs, const int64_t *args)
{
	uint32_t id = 0;
	if (name) {
		id = __atomic_load_n(id_cache, __ATOMIC_RELAXED);
		if (__builtin_expect(!id, 0)) {
			id = btrace_intern(name);
			if (!id)
				return;
			__atomic_store_n(id_cache, id, __ATOMIC_RELAXED);
		}
	}
	write_event(type, id, nargs, args);
}

void btrace_trigger_(uint32_t *id_cache, const char *name)
{
	char line[160];
	int n;

	/* The trace shows the call; the recorder hears of it at once. */
	btrace_emit_(BTRACE_TYPE_INSTANT, id_cache, name, 0, NULL);
	n = snprintf(line, sizeof(line), "trigger %" PRIu64 " %u %.63s\n", now_boot(), (uint32_t)syscall(SYS_gettid),
		     name);
	if (n <= 0 || (size_t)n >= sizeof(line) || strchr(name, '\n'))
		return;
	pthread_mutex_lock(&names_lock);
	queue_line(line, (size_t)n);
	pthread_mutex_unlock(&names_lock);
}

/* ---- the connection thread ---------------------------------------------------- */

static int connect_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_recorder(void)
{
	const char *env = getenv("BTRACE_CTL");
	if (env && *env)
		return connect_path(env);
	DIR *d = opendir(CTL_DIR);
	if (!d)
		return -1;
	struct dirent *de;
	int fd = -1;
	while (fd < 0 && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[300];
		if (n < 6 || strcmp(de->d_name + n - 5, ".sock") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", CTL_DIR, de->d_name);
		fd = connect_path(path);
	}
	closedir(d);
	return fd;
}

/* Read one line (and a passed fd, if any) from the recorder. Returns the
 * line length, 0 at EOF, -1 on error. *fdp gets a received fd or -1. */
static int recv_line(int s, char *line, size_t max, int *fdp)
{
	size_t n = 0;
	*fdp = -1;
	while (n + 1 < max) {
		char c;
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} cm;
		struct iovec iov = { .iov_base = &c, .iov_len = 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
				     .msg_controllen = sizeof(cm.buf) };
		ssize_t r = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -1 : 0;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
				int fd;
				memcpy(&fd, CMSG_DATA(h), sizeof(fd));
				if (*fdp >= 0)
					close(*fdp);
				*fdp = fd;
			}
		if (c == '\n')
			break;
		line[n++] = c;
	}
	line[n] = 0;
	return (int)n + 1;
}

/* Map and check a buffer the recorder sent; NULL if it is not one. */
static struct app_buf *map_buffer(int fd)
{
	struct bt_app_shm hdr;
	if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || hdr.magic != BT_APP_SHM_MAGIC ||
	    hdr.version != BT_APP_SHM_VERSION || hdr.active == 0 || hdr.ncores == 0 ||
	    hdr.nblocks % hdr.active || hdr.nblocks / hdr.active < BT_APP_MIN_BLOCKS_PER_META ||
	    hdr.block_size < BT_MIN_BLOCK_SIZE || hdr.block_size > BT_MAX_BLOCK_SIZE ||
	    (hdr.block_size & (hdr.block_size - 1)))
		return NULL;
	uint64_t mo, co, dof;
	uint64_t total = bt_app_shm_layout(hdr.block_size, hdr.active, hdr.nblocks, hdr.ncores, &mo, &co, &dof);
	if (total != hdr.total_size || mo != hdr.meta_off || co != hdr.cores_off || dof != hdr.data_off)
		return NULL;
	/* Populated: otherwise the first pass over the buffer takes a page
	 * fault every few dozen events, inside them (~2.3 us each here). */
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (base == MAP_FAILED)
		return NULL;
	struct app_buf *b = btrace_buf_view_(base, total, fd);
	if (!b)
		munmap(base, total);
	return b;
}

/* Give a buffer's pages back; its mapping stays (see the top comment). */
static void release_pages(struct app_buf *b)
{
	for (; b; b = b->older)
		if (b->fd >= 0) {
			fallocate(b->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)b->size);
			close(b->fd);
			b->fd = -1;
		}
}

/* Make b the buffer writers use; the one before stays mapped behind it (a
 * writer preempted after loading g_buf may still be in it). Returns it. */
static struct app_buf *publish(struct app_buf *b)
{
	struct app_buf *old = atomic_load_explicit(&g_buf, memory_order_relaxed);
	b->older = old;
	/* Release: pairs with the acquire loads in write_event() and
	 * btrace_attached(): the mapping, geometry and early flag are
	 * visible before the pointer. */
	atomic_store_explicit(&g_buf, b, memory_order_release);
	__atomic_store_n(&btrace_on_, 1, __ATOMIC_RELAXED);
	btrace_funcs_attached_(1);
	return old;
}

int btrace_attach_fd_(int fd)
{
	struct app_buf *b = map_buffer(fd);
	if (!b)
		return -EINVAL;
	b->fd = -1; /* the caller owns it: a detach never punches it */
	btrace_funcs_calibrate_(10);
	publish(b);
	return 0;
}

/* Connection thread: "watch NS NAME" from the recorder. */
static void add_watch(const char *arg)
{
	char *end;
	unsigned long long ns = strtoull(arg, &end, 10);
	unsigned n = atomic_load_explicit(&nwatch, memory_order_relaxed);

	if (end == arg || *end != ' ' || !end[1] || strlen(end + 1) > BT_APP_NAME_MAX || n >= MAX_WATCH)
		return;
	pthread_mutex_lock(&names_lock);
	struct watch *w = &watches[n];
	snprintf(w->name, sizeof(w->name), "%s", end + 1);
	w->ns = ns;
	w->id = 0;
	for (uint32_t i = 0; i < nnames; i++)
		if (strcmp(names[i], w->name) == 0)
			w->id = i + 1;
	/* Release: the entry is complete before slice_end() can see it. */
	atomic_store_explicit(&nwatch, n + 1, memory_order_release);
	pthread_mutex_unlock(&names_lock);
}

static void detach(int s)
{
	__atomic_store_n(&btrace_on_, 0, __ATOMIC_RELAXED);
	btrace_funcs_attached_(0);
	atomic_store_explicit(&nwatch, 0, memory_order_relaxed); /* the next recorder sends its own */
	struct app_buf *b = atomic_exchange_explicit(&g_buf, NULL, memory_order_acq_rel);
	pthread_mutex_lock(&names_lock);
	conn_fd = -1;
	free(outq);
	outq = NULL;
	outq_len = outq_cap = 0;
	pthread_mutex_unlock(&names_lock);
	close(s);
	release_pages(b);
}

/* The registration line: " funcs" when the hooks are linked
 * (func_hooks.c), " early" when a buffer of our own goes with it; a
 * recorder before these ignores the words. */
static void register_line(char *line, size_t max, int early, int forked)
{
	/* Not in a forked child's early registration (it may run where the
	 * loader's lock is not to be taken): its first look sends "maps". */
	if (btrace_funcs_linked_ && !early)
		objects_gen = objects_generation();
	char parent[32] = "";

	/* A forked child may be gone before the recorder reads its
	 * mappings: they are its parent's. */
	if (forked)
		snprintf(parent, sizeof(parent), " parent=%d", (int)getppid());
	snprintf(line, max, "app-register %s%s%s%s\n", app_name, btrace_funcs_linked_ ? " funcs" : "",
		 early ? " early" : "", parent);
}

/* Serve a recorder on socket s. early: s is a forked child's registration,
 * sent with the buffer it writes in meanwhile (early_register()). */
static void serve_recorder(int s, int early)
{
	char line[256] = "";
	int fd = -1;
	if (!early) {
		pthread_mutex_lock(&names_lock); /* app_name may be set by btrace_init() */
		register_line(line, sizeof(line), 0, 0);
		pthread_mutex_unlock(&names_lock);
	}
	int answered = (early || send_all(s, line, strlen(line)) == 0) && recv_line(s, line, sizeof(line), &fd) > 0;
	/* Release: pairs with the acquire load in early_exit(). */
	atomic_store_explicit(&early_pending, 0, memory_order_release);
	if (!answered || strcmp(line, "ok") != 0 || fd < 0) {
		if (getenv("BTRACE_VERBOSE") && strncmp(line, "error", 5) == 0)
			fprintf(stderr, "btrace: recorder refused registration: %s\n", line);
		if (fd >= 0)
			close(fd);
		if (early)
			detach(s); /* what went into our own buffer is not traced */
		else
			close(s);
		return;
	}
	struct app_buf *b = map_buffer(fd);
	if (!b) {
		close(fd);
		if (early)
			detach(s);
		else
			close(s);
		return;
	}
	/* Names first: every event the recorder can see names an id it knows
	 * (an early registration sent them behind its line). */
	if (!early) {
		pthread_mutex_lock(&names_lock);
		conn_fd = s;
		outq_len = 0;
		for (uint32_t id = 1; id <= nnames; id++)
			send_name(id);
		pthread_mutex_unlock(&names_lock);
	}
	ssize_t left;
	while ((left = flush_queue()) > 0) {
		struct pollfd pf = { .fd = s, .events = POLLOUT };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
	}
	if (left != 0) {
		detach(s);
		return;
	}
	btrace_funcs_calibrate_(10); /* once per process: ~10 ms */
	/* Nothing before it (a detach cleared g_buf) but an early buffer,
	 * which the recorder reads and frees from now on, as after a resize. */
	struct app_buf *ebuf = publish(b);
	pthread_mutex_lock(&names_lock);
	note_names(b);
	pthread_mutex_unlock(&names_lock);
	if (ebuf && ebuf->fd >= 0) {
		close(ebuf->fd);
		ebuf->fd = -1;
	}

	/* Function records name code by address: a library loaded since the
	 * registration is looked for every OBJECTS_MS while tracing functions. */
	for (;;) {
		struct pollfd pf[2] = { { .fd = s, .events = POLLIN | (left > 0 ? POLLOUT : 0) },
					{ .fd = wake_fd, .events = POLLIN } };
		int pr = poll(pf, 2, btrace_funcs_linked_ ? OBJECTS_MS : -1);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (btrace_funcs_linked_)
			note_objects(&objects_gen);
		if (pf[1].revents) {
			uint64_t v;
			ssize_t rd = read(wake_fd, &v, sizeof(v));
			(void)rd;
			if (flush_delay_ms) {
				struct timespec ts = { flush_delay_ms / 1000, (flush_delay_ms % 1000) * 1000000L };
				nanosleep(&ts, NULL);
			}
		}
		if (pf[1].revents || (pf[0].revents & POLLOUT)) {
			left = flush_queue();
			if (left < 0)
				break;
		}
		if (!(pf[0].revents & ~POLLOUT))
			continue;
		int r = recv_line(s, line, sizeof(line), &fd);
		if (r <= 0)
			break;
		if (strncmp(line, "watch ", 6) == 0) {
			add_watch(line + 6);
		} else if (strcmp(line, "buffer") == 0 && fd >= 0) {
			struct app_buf *nb = map_buffer(fd);
			if (!nb) {
				close(fd);
				continue;
			}
			/* The recorder frees the old buffer's pages. */
			struct app_buf *old = publish(nb);
			pthread_mutex_lock(&names_lock);
			note_names(nb);
			pthread_mutex_unlock(&names_lock);
			if (old && old->fd >= 0) {
				close(old->fd);
				old->fd = -1;
			}
		} else if (fd >= 0) {
			close(fd);
		}
	}
	detach(s);
}

static void *conn_thread(void *arg)
{
	const char *e = getenv("BTRACE_RETRY_MS");
	long retry = e ? atol(e) : 1000;
	if (retry < 10)
		retry = 10;
	for (;;) {
		int early = early_sock >= 0;
		int s = early ? early_sock : connect_recorder();
		early_sock = -1;
		if (s >= 0)
			serve_recorder(s, early);
		struct timespec ts = { retry / 1000, (retry % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Under names_lock, before the process runs code of its own (a forked
 * child of an attached parent: fork() has not returned; a process that
 * starts: its constructor): a buffer to write in from the first call
 * (made by make(), sizes in app_early.c), passed with the registration
 * (the recorder reads it as a resize's older buffer), then the names
 * behind it. Registration takes the recorder tens of ms; without this a
 * child's first calls were lost, uncounted. 0, or -1 with nothing changed
 * (no recorder listens, or no memory). */
static int early_register(const struct app_buf *like)
{
	char line[256];
	int s = connect_recorder();
	uint32_t pid = (uint32_t)getpid();
	struct app_buf *b;

	if (s < 0)
		return -1;
	b = like ? btrace_early_buffer_(like->bsize, like->A, like->A * like->R, like->ncores, pid)
		 : btrace_fresh_buffer_(pid);
	register_line(line, sizeof(line), 1, like != NULL);
	if (!b || bt_send_fd_line(s, line, b->fd, MSG_DONTWAIT) < 0 /* a fresh connection takes a line */) {
		if (b) {
			munmap(b->shm, b->size);
			close(b->fd);
			free(b);
		}
		close(s);
		return -1;
	}
	conn_fd = s;
	early_sock = s;
	atomic_store_explicit(&early_pending, 1, memory_order_relaxed);
	for (uint32_t id = 1; id <= nnames; id++)
		send_name(id);
	/* A process that starts with the hooks has no tick rate yet: a short
	 * first measure (refined each second after) rather than the 10 ms the
	 * connection thread takes (a forked child has its parent's). */
	if (btrace_funcs_linked_)
		btrace_funcs_calibrate_(2);
	publish(b);
	note_names(b);
	return 0;
}

/* names_lock held across fork: the child's copy of the table is consistent. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&names_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&names_lock);
}

static void start(void);
static void wait_attached(void);

/* A forked child is traced as a process of its own (as uftrace does): it
 * registers with its own pid and gets a buffer of its own. A child of an
 * attached parent writes from its first call into a buffer it makes
 * before fork() returns there (early_register), so nothing waits. Without
 * a buffer (no recorder to connect to, no memory) it waits as main() does
 * with BTRACE_WAIT_MS. */
static void atfork_child(void)
{
	int was_attached = atomic_load_explicit(&g_buf, memory_order_relaxed) != NULL;

	/* The child has no connection thread yet and must not write into its
	 * parent's buffer: off until its own registration. */
	__atomic_store_n(&btrace_on_, 0, __ATOMIC_RELAXED);
	btrace_funcs_attached_(0);
	/* The forking thread's open function batch is the parent's to close. */
	tls.fbat = NULL;
	tls.fw = tls.fcap = 0;
	/* Close what we inherited (the recorder would otherwise see the
	 * parent's connection alive as long as this child lives); the
	 * mappings stay, a thread of ours may not know yet. */
	struct app_buf *parent = atomic_load_explicit(&g_buf, memory_order_relaxed);
	for (struct app_buf *b = parent; b; b = b->older)
		if (b->fd >= 0) {
			close(b->fd);
			b->fd = -1;
		}
	atomic_store_explicit(&g_buf, NULL, memory_order_relaxed);
	if (conn_fd >= 0)
		close(conn_fd);
	conn_fd = -1;
	/* The parent's early registration may not be served yet (it forked
	 * at once): that socket is the parent's, just closed as conn_fd. */
	early_sock = -1;
	atomic_store_explicit(&early_pending, 0, memory_order_relaxed);
	free(outq);
	outq = NULL;
	outq_len = outq_cap = 0;
	tls.tid = 0;
	tls.seq = 0;
	start_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	/* The eventfd is shared with the parent: the parent's connection
	 * thread would take the child's wake-ups. */
	if (wake_fd >= 0)
		close(wake_fd);
	wake_fd = disabled ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (was_attached && wake_fd >= 0 && !disabled)
		early_register(parent);
	pthread_mutex_unlock(&names_lock); /* held by atfork_prepare() */
	if (!disabled)
		pthread_once(&start_once, start);
	if (was_attached)
		wait_attached();
}

static void start(void)
{
	const char *d = getenv("BTRACE_DISABLE");
	pthread_t t;
	pthread_attr_t at;
	sigset_t all, old;
	if (d && *d && strcmp(d, "0") != 0) {
		disabled = 1;
		return;
	}
	pthread_mutex_lock(&names_lock);
	if (!app_name[0]) {
		int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, app_name, 15) : -1;
		if (fd >= 0)
			close(fd);
		app_name[n > 0 ? n : 0] = 0;
	}
	for (char *c = app_name; *c; c++)
		if (*c == '\n' || *c == ' ' || *c == '\t')
			*c = *c == '\n' ? 0 : '_';
	if (!app_name[0])
		strcpy(app_name, "app");
	pthread_mutex_unlock(&names_lock);
	const char *dl = getenv("BTRACE_TEST_FLUSH_DELAY_MS");
	flush_delay_ms = dl ? atol(dl) : 0;
	if (flush_delay_ms < 0)
		flush_delay_ms = 0;
	if (wake_fd < 0)
		wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wake_fd < 0) {
		disabled = 1;
		return;
	}
	/* With a recorder listening, write from the first call (a forked
	 * child did already, in atfork_child). */
	pthread_mutex_lock(&names_lock);
	if (early_sock < 0 && !atomic_load_explicit(&g_buf, memory_order_relaxed))
		early_register(NULL);
	pthread_mutex_unlock(&names_lock);
	if (!atfork_set) /* once: a child runs start() again */
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atfork_set = 1;
	/* The thread must not take the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 * 1024);
	pthread_create(&t, &at, conn_thread, NULL);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int btrace_init(const char *name)
{
	if (name && *name) {
		pthread_mutex_lock(&names_lock);
		snprintf(app_name, sizeof(app_name), "%.15s", name);
		for (char *c = app_name; *c; c++)
			if (*c == '\n' || *c == ' ' || *c == '\t')
				*c = '_';
		if (conn_fd >= 0) { /* registered already (the constructor was quicker) */
			char line[96];
			int n = snprintf(line, sizeof(line), "rename %s\n", app_name);
			queue_line(line, (size_t)n);
		}
		pthread_mutex_unlock(&names_lock);
	}
	pthread_once(&start_once, start);
	return disabled ? -ENOTSUP : 0;
}

int btrace_attached(void)
{
	/* Acquire: pairs with the release store in publish(); early is
	 * written before the buffer is. An early buffer is not the
	 * recorder's: it may yet refuse the registration. */
	struct app_buf *b = atomic_load_explicit(&g_buf, memory_order_acquire);
	return b && !b->early;
}

/* BTRACE_WAIT_MS=N: the program starts (main runs) only once a recorder
 * has handed over its buffer, or after N ms without one, so a short-lived
 * program built with -finstrument-functions is traced from its first call
 * (registration is asynchronous: without this, calls made before it
 * completes, ~10 ms or more, are not recorded). */
static void wait_attached(void)
{
	const char *w = getenv("BTRACE_WAIT_MS");
	long ms = w ? atol(w) : 0;
	const char *f = getenv("BTRACE_FUNCS");
	int funcs = !(f && strcmp(f, "0") == 0);
	if (disabled || ms <= 0)
		return;
	if (ms > 60000)
		ms = 60000;
	for (long i = 0; i < ms; i++) {
		/* The hooks are on a moment after the buffer is in (publish()). */
		if (btrace_attached() && (!funcs || __atomic_load_n(&btrace_funcs_on_, __ATOMIC_RELAXED)))
			return;
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* A process that exits before the recorder answered its early
 * registration: the names of its calls come from its mappings, which the
 * recorder reads before it answers and cannot read once we are gone
 * (exit() only: _exit and crashes do not wait). At most
 * BTRACE_EXIT_WAIT_MS (default 250; 0: never). */
__attribute__((destructor)) static void early_exit(void)
{
	const char *w = getenv("BTRACE_EXIT_WAIT_MS");
	long ms = w ? atol(w) : 250;

	/* Acquire: pairs with the release store in serve_recorder(). */
	for (long i = 0; i < ms && atomic_load_explicit(&early_pending, memory_order_acquire); i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

__attribute__((constructor)) static void btrace_ctor(void)
{
	pthread_once(&start_once, start);
	wait_attached();
}
