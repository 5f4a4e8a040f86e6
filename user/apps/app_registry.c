// SPDX-License-Identifier: MIT
/*
 * app_registry.c - applications traced in-process (btrace.h), recorder side.
 *
 * Registration arrives on the control thread ("app-register NAME"): the
 * peer's pid comes from SO_PEERCRED, never from the request. We create a
 * memfd, seal its size (the application can then never make our mapping
 * fault), initialise the header and pass the fd back. The connection stays
 * open: the application sends "name ID TEXT" lines for its interned names
 * (and "rename NAME" if it names itself after registering),
 * we send "buffer" + a new fd on a resize, and EOF means the process ended
 * (or closed the library). An exited application's buffers stay readable:
 * its last events are exactly what a crash investigation wants. The oldest
 * exited application is released when the table is full.
 *
 * Resize replaces the buffer: the old one is still dumped until the new one
 * has been filled once, then its pages are punched out and it is unmapped.
 *
 * Locking: one mutex for the table; the I/O thread takes it per message,
 * dumps and resizes hold it for their duration.
 */
#include "app_registry_int.h"
#include "func_watch.h"
#include "dump.h"
#include "dump_format.h"
#include "func_batch.h"
#include "func_names.h"
#include "util.h"
#include "fd_pass.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#define ALIVE_CHECK_MS 500 /* how often registrants are checked to be alive */

static void buf_release(struct abuf *b)
{
	if (b->v.base) {
		/* The application may still map it: punching frees the pages
		 * for both of us; a late writer there faults in a zero page. */
		fallocate(b->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)b->v.size);
		munmap(b->v.base, b->v.size);
	}
	if (b->fd >= 0)
		close(b->fd);
	memset(b, 0, sizeof(*b));
	b->fd = -1;
}

static int buf_create(struct bt_apps *r, uint64_t size, uint32_t pid, struct abuf *out, char *why, size_t whylen)
{
	uint32_t A, N;
	uint64_t mo, co, dof;
	int err = bt_app_geometry(size, r->cfg.block_size, r->cfg.ncores, &A, &N, why, whylen);
	if (err)
		return err;
	uint64_t total = bt_app_shm_layout(r->cfg.block_size, A, N, r->cfg.ncores, &mo, &co, &dof);
	int fd = memfd_create("btrace-app", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)total) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot create an application buffer: %s", strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		snprintf(why, whylen, "cannot map an application buffer: %s", strerror(-err));
		close(fd);
		return err;
	}
	bt_app_shm_init(base, r->cfg.block_size, A, N, r->cfg.ncores, pid);
	*out = (struct abuf){
		.v = { .base = base, .size = total, .bsize = r->cfg.block_size, .A = A, .N = N, .R = N / A,
		       .ncores = r->cfg.ncores, .pid = pid },
		.fd = fd,
		.data_size = (uint64_t)N * r->cfg.block_size,
	};
	return 0;
}

/* A buffer the application made itself before it registered (a forked
 * child writes from its first call, app_shm.h) and passed with its
 * registration. Untrusted like its contents: it must be a memfd we can
 * seal against shrinking (our mapping can then never fault), its header's
 * geometry valid, its size what that geometry needs and at most the
 * largest buffer we give (or BT_APP_EARLY_SIZE). Read from our own copy
 * of the geometry from then on. Takes fd. */
static int buf_adopt(struct bt_apps *r, int fd, uint32_t pid, struct abuf *out, char *why, size_t whylen)
{
	struct bt_app_shm h;
	struct statfs sf;
	struct stat st;
	uint64_t mo, co, dof, total, largest = r->cfg.funcs_buffer_size > r->cfg.buffer_size
							   ? r->cfg.funcs_buffer_size : r->cfg.buffer_size;
	const char *bad = NULL;

	if (fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		bad = "not a memfd";
	else if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		bad = "cannot be sealed";
	else if (fstat(fd, &st) < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		bad = "unreadable";
	else if (h.magic != BT_APP_SHM_MAGIC || h.version != BT_APP_SHM_VERSION || h.block_size < BT_MIN_BLOCK_SIZE ||
		 h.block_size > BT_MAX_BLOCK_SIZE || (h.block_size & (h.block_size - 1)) || h.ncores == 0 ||
		 h.ncores > BT_APP_MAX_CORES || h.active == 0 || h.nblocks % h.active ||
		 h.nblocks / h.active < BT_APP_MIN_BLOCKS_PER_META)
		bad = "not an application buffer";
	else if ((uint64_t)h.nblocks * h.block_size > (largest > BT_APP_EARLY_SIZE ? largest : BT_APP_EARLY_SIZE))
		bad = "larger than the buffers this recorder gives";
	else if ((total = bt_app_shm_layout(h.block_size, h.active, h.nblocks, h.ncores, &mo, &co, &dof)) !=
		 (uint64_t)st.st_size)
		bad = "its size does not match its geometry";
	if (bad) {
		snprintf(why, whylen, "the buffer passed with the registration is %s", bad);
		close(fd);
		return -EINVAL;
	}
	void *base = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		int err = -errno;
		snprintf(why, whylen, "cannot map the buffer passed with the registration: %s", strerror(-err));
		close(fd);
		return err;
	}
	*out = (struct abuf){
		.v = { .base = base, .size = total, .bsize = h.block_size, .A = h.active, .N = h.nblocks,
		       .R = h.nblocks / h.active, .ncores = h.ncores, .pid = pid },
		.fd = fd,
		.data_size = (uint64_t)h.nblocks * h.block_size,
	};
	return 0;
}

static void app_free(struct app *a)
{
	for (uint32_t i = 0; i < a->nbufs; i++)
		buf_release(&a->bufs[i]);
	if (a->conn >= 0)
		close(a->conn);
	free(a->names);
	bt_func_names_free(a->fnames);
	bt_func_watch_free(a->fw);
	free(a);
}

/* Under lock. The process is gone (or misbehaved): keep its data. */
static void app_gone(struct app *a)
{
	if (a->conn >= 0) {
		close(a->conn);
		a->conn = -1;
	}
	if (!(a->flags & BT_APP_EXITED)) {
		a->flags |= BT_APP_EXITED;
		a->exit_ts = bt_boottime_ns();
	}
}

/* Under lock: "name ID TEXT". Malformed lines are counted and ignored. */
/* Under lock: "trigger TS TID NAME" (BTRACE_TRIGGER), or with slice
 * "slice TS TID DUR NAME" (a watched slice ended after DUR ns). Untrusted:
 * a time not in the past is replaced by now; tid and DUR are only reported. */
static void app_trigger(struct bt_apps *r, struct app *a, char *line, int slice)
{
	char *end, *e2, *e3;
	unsigned long long ts = strtoull(line, &end, 10);
	unsigned long tid = strtoul(end, &e2, 10);
	unsigned long long dur = 0;
	struct timespec now;
	uint64_t n;

	if (slice) {
		dur = strtoull(e2, &e3, 10);
		if (e3 == e2)
			e2 = end; /* malformed: refused below */
		else
			e2 = e3;
	}
	if (end == line || *end != ' ' || e2 == end || *e2 != ' ' || !e2[1] || tid > UINT32_MAX) {
		a->names_bad++;
		return;
	}
	clock_gettime(CLOCK_BOOTTIME, &now);
	n = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	if (!ts || ts > n)
		ts = n;
	if (r->cfg.trigger)
		r->cfg.trigger(r->cfg.trigger_ctx, e2 + 1, slice ? BT_TRIG_APP_SLICE : BT_TRIG_APP, ts, dur, (uint32_t)tid,
			       a->pid, a->name);
}

static void app_line(struct bt_apps *r, struct app *a, char *line)
{
	char *end;
	if (strncmp(line, "rename ", 7) == 0 && line[7]) {
		/* btrace_init(NAME) after the library registered with its comm */
		snprintf(a->name, sizeof(a->name), "%.15s", line + 7);
		return;
	}
	if (strcmp(line, "maps") == 0) {
		/* it loaded or unloaded a library: its mappings now, while it
		 * lives (a dump after it exits names functions from these) */
		if (a->fnames)
			bt_func_names_refresh(a->fnames);
		a->maps_reads++;
		return;
	}
	if (strncmp(line, "trigger ", 8) == 0 || strncmp(line, "slice ", 6) == 0) {
		app_trigger(r, a, line + (line[0] == 't' ? 8 : 6), line[0] == 's');
		return;
	}
	if (strncmp(line, "name ", 5) != 0) {
		a->names_bad++;
		return;
	}
	unsigned long id = strtoul(line + 5, &end, 10);
	if (end == line + 5 || *end != ' ' || id == 0 || id > BT_APP_MAX_NAMES) {
		a->names_bad++;
		return;
	}
	const char *text = end + 1;
	if (strlen(text) > BT_APP_NAME_MAX) {
		a->names_bad++;
		return;
	}
	if (id > a->names_cap) {
		uint32_t cap = a->names_cap ? a->names_cap : 64;
		while (cap < id)
			cap *= 2;
		if (cap > BT_APP_MAX_NAMES)
			cap = BT_APP_MAX_NAMES;
		void *n = realloc(a->names, (size_t)cap * BTD_APP_NAME_LEN);
		if (!n) {
			a->names_bad++;
			return;
		}
		memset((char *)n + (size_t)a->names_cap * BTD_APP_NAME_LEN, 0,
		       (size_t)(cap - a->names_cap) * BTD_APP_NAME_LEN);
		a->names = n;
		a->names_cap = cap;
	}
	char *dst = a->names[id - 1];
	memset(dst, 0, BTD_APP_NAME_LEN);
	for (size_t i = 0; text[i]; i++)
		dst[i] = (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
	if (id > a->nnames)
		a->nnames = (uint32_t)id;
}

/* Under lock: read what the application sent; returns -1 at EOF/error, 1
 * when more may be waiting, 0 when all was read. At most 64 KiB per call:
 * a flooding application cannot hold the lock. */
static int app_input(struct bt_apps *r, struct app *a)
{
	char buf[4096];
	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = recv(a->conn, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		if (n == 0)
			return -1;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				a->line[a->linelen] = 0;
				app_line(r, a, a->line);
				a->linelen = 0;
			} else if (a->linelen + 1 < sizeof(a->line)) {
				a->line[a->linelen++] = buf[i];
			} else {
				a->names_bad++; /* overlong line: dropped up to its newline */
				a->linelen = 0;
			}
		}
	}
	return 1; /* more may be waiting: the next poll says so */
}

/* Under lock: read everything the application sent so far (its names),
 * then mark it gone at EOF. Bounded: all 65535 names fit in 8 MiB. */
void bt_app_drain_input(struct bt_apps *r, struct app *a)
{
	int more = 1;
	for (int i = 0; i < 128 && more == 1 && a->conn >= 0; i++)
		more = app_input(r, a);
	if (more < 0)
		app_gone(a);
}

/* Under lock: names the application interned (its own count, untrusted:
 * clamped) that we never received. Their events show name#ID. */
uint64_t bt_app_names_lost(const struct app *a, uint64_t interned)
{
	uint64_t lost = 0;
	if (interned > BT_APP_MAX_NAMES)
		interned = BT_APP_MAX_NAMES;
	for (uint64_t id = 1; id <= interned; id++)
		lost += id > a->names_cap || !a->names[id - 1][0];
	return lost;
}

/* Under lock: the names count of the application's buffers. */
uint64_t bt_app_names_interned(const struct app *a)
{
	uint64_t n = 0;
	for (uint32_t b = 0; b < a->nbufs; b++) {
		struct bt_app_shm *sh = (struct bt_app_shm *)a->bufs[b].v.base;
		uint64_t x = atomic_load_explicit(&sh->stats.names, memory_order_relaxed);
		n = x > n ? x : n;
	}
	return n;
}

/* Under lock: drop older buffers once the current one has been filled once. */
static void retire_old(struct app *a)
{
	if (a->nbufs < 2)
		return;
	const struct bt_app_shm *s = (const void *)a->bufs[0].v.base;
	uint64_t g = atomic_load_explicit(&((struct bt_app_shm *)s)->global, memory_order_relaxed);
	if (g >= (uint64_t)a->bufs[0].v.A + a->bufs[0].v.N) {
		while (a->nbufs > 1)
			buf_release(&a->bufs[--a->nbufs]);
	}
}

/* Under lock (the scan's callback): a watched call of application a ran long. */
static void func_hit(void *ctx, uint32_t trig, uint64_t ts, uint64_t dur, uint32_t tid)
{
	struct app *a = ctx;
	if (a->reg->cfg.func_trigger)
		a->reg->cfg.func_trigger(a->reg->cfg.trigger_ctx, trig, ts, dur, tid, a->pid, a->name);
}

/* Under lock: follow the function records of the live applications
 * (app-func triggers); an application that just exited gets a last scan. */
static void watch_funcs(struct bt_apps *r)
{
	for (size_t i = 0; i < r->napps; i++) {
		struct app *a = r->apps[i];
		if (!a->fw || (a->flags & BT_APP_EXITED && a->fw_final))
			continue;
		a->fw_final = !!(a->flags & BT_APP_EXITED);
		bt_func_watch_scan(a->fw, &a->bufs[0].v, a->fnames); /* out of memory: the next scan tries again */
	}
}

/* Under lock: a registrant that exited while another process (a child it
 * forked, or one it passed the connection to) holds its connection is
 * exited: its pid, not the socket, says whether it lives. */
static void mark_dead_gone(struct bt_apps *r)
{
	for (size_t i = 0; i < r->napps; i++) {
		struct app *a = r->apps[i];
		if (a->conn >= 0 && kill((pid_t)a->pid, 0) < 0 && errno == ESRCH) {
			bt_app_drain_input(r, a);
			app_gone(a);
		}
	}
}

#define IO_NICE (-10) /* the drain's (BT_DRAIN_NICE) */

static void *io_thread(void *arg)
{
	struct bt_apps *r = arg;
	struct pollfd *p = NULL;
	struct app **who = NULL;
	size_t cap = 0;
	uint64_t last_watch = 0, last_alive = 0;
	/* Application triggers pass here (their lines, the app-func watcher):
	 * the drain's priority, so a load of busy loops does not hold a hit
	 * for tens of ms while the application overwrites its call. */
	if (r->cfg.trigger || r->cfg.nfwatch)
		bt_thread_nice(IO_NICE, "application I/O thread");
	for (;;) {
		reg_lock(r);
		if (r->stop) {
			reg_unlock(r, "the I/O thread's poll set");
			break;
		}
		if (cap < r->napps + 1) {
			size_t ncap = (r->napps + 1) * 2;
			struct pollfd *np = realloc(p, ncap * sizeof(*np));
			if (np)
				p = np;
			struct app **nw = np ? realloc(who, ncap * sizeof(*nw)) : NULL;
			if (nw)
				who = nw;
			if (!np || !nw) {
				/* Out of memory: try again in a moment; the apps keep writing. */
				reg_unlock(r, "the I/O thread's poll set");
				usleep(100000);
				continue;
			}
			cap = ncap;
		}
		size_t n = 0;
		p[n++] = (struct pollfd){ .fd = r->wake[0], .events = POLLIN };
		for (size_t i = 0; i < r->napps; i++)
			if (r->apps[i]->conn >= 0) {
				who[n] = r->apps[i];
				p[n++] = (struct pollfd){ .fd = r->apps[i]->conn, .events = POLLIN };
			}
		reg_unlock(r, "the I/O thread's poll set");
		/* app-func triggers: the buffers are followed every WATCH_MS */
		if (poll(p, n, r->cfg.nfwatch ? WATCH_MS : 1000) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			char c[64];
			while (read(r->wake[0], c, sizeof(c)) > 0)
				;
		}
		reg_lock(r);
		for (size_t i = 1; i < n; i++) {
			if (!p[i].revents)
				continue;
			/* The app may have been released meanwhile: check it is still ours. */
			int found = 0;
			for (size_t j = 0; j < r->napps && !found; j++)
				found = r->apps[j] == who[i];
			if (found && who[i]->conn == p[i].fd && app_input(r, who[i]) < 0)
				app_gone(who[i]);
		}
		for (size_t j = 0; j < r->napps; j++)
			retire_old(r->apps[j]);
		if (bt_boottime_ns() - last_alive >= ALIVE_CHECK_MS * 1000000ull) {
			mark_dead_gone(r);
			last_alive = bt_boottime_ns();
		}
		if (r->cfg.nfwatch && bt_boottime_ns() - last_watch >= WATCH_MS * 1000000ull) {
			watch_funcs(r);
			last_watch = bt_boottime_ns();
		}
		reg_unlock(r, "the I/O pass (lines, function watch)");
	}
	free(p);
	free(who);
	return NULL;
}

static void wake(struct bt_apps *r)
{
	ssize_t w = write(r->wake[1], "x", 1);
	(void)w;
}

/* Every registered application may hold a buffer of `size` (exited ones
 * too, for the post-mortem dump, which copies them all): the largest one
 * is bounded, and so are all of them together by the memory there is. */
int bt_apps_check_size(uint64_t size, uint32_t max_apps, char *why, size_t whylen)
{
	uint64_t avail = bt_mem_available();
	char s1[32], s2[32];

	if (size > BT_APP_BUFFER_MAX) {
		snprintf(why, whylen, "an application buffer of %s is larger than the %s allowed",
			 format_size(size, s1, sizeof(s1)), format_size(BT_APP_BUFFER_MAX, s2, sizeof(s2)));
		return -EINVAL;
	}
	if (avail && size * max_apps > avail) {
		snprintf(why, whylen,
			 "%u applications (--max-apps) with buffers of %s need more than the %s of memory available",
			 max_apps, format_size(size, s1, sizeof(s1)), format_size(avail, s2, sizeof(s2)));
		return -ENOMEM;
	}
	return 0;
}

struct bt_apps *bt_apps_create(const struct bt_apps_config *cfg, char *err, size_t errlen)
{
	uint32_t A, N;
	int e;
	if (bt_app_geometry(cfg->buffer_size, cfg->block_size, cfg->ncores, &A, &N, err, errlen) < 0) {
		errno = EINVAL;
		return NULL;
	}
	uint64_t fsize = cfg->funcs_buffer_size ? cfg->funcs_buffer_size : cfg->buffer_size;
	if (bt_app_geometry(fsize, cfg->block_size, cfg->ncores, &A, &N, err, errlen) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if ((e = bt_apps_check_size(fsize > cfg->buffer_size ? fsize : cfg->buffer_size,
				    cfg->max_apps ? cfg->max_apps : 64, err, errlen))) {
		errno = -e;
		return NULL;
	}
	struct bt_apps *r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->cfg = *cfg;
	r->cfg.funcs_buffer_size = fsize;
	if (!r->cfg.max_apps)
		r->cfg.max_apps = 64;
	pthread_mutex_init(&r->lock, NULL);
	if (pipe2(r->wake, O_CLOEXEC | O_NONBLOCK) < 0 || pthread_create(&r->thread, NULL, io_thread, r) != 0) {
		snprintf(err, errlen, "cannot start the application thread: %s", strerror(errno));
		free(r);
		return NULL;
	}
	return r;
}

void bt_apps_destroy(struct bt_apps *r)
{
	if (!r)
		return;
	reg_lock(r);
	r->stop = 1;
	reg_unlock(r, "the stop");
	wake(r);
	pthread_join(r->thread, NULL);
	for (size_t i = 0; i < r->napps; i++)
		app_free(r->apps[i]);
	free(r->apps);
	close(r->wake[0]);
	close(r->wake[1]);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void reply_error(int c, const char *fmt, const char *arg)
{
	char line[512];
	int n = snprintf(line, sizeof(line), fmt, arg);
	if (n > 0)
		send(c, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(c);
}

/* Under lock: free pid's exited entries but its newest. */
static void forget_older(struct bt_apps *r, uint32_t pid)
{
	size_t newest = SIZE_MAX;

	for (size_t i = 0; i < r->napps; i++)
		if (r->apps[i]->pid == pid && (r->apps[i]->flags & BT_APP_EXITED) &&
		    (newest == SIZE_MAX || r->apps[i]->registered_ts >= r->apps[newest]->registered_ts))
			newest = i;
	for (size_t i = r->napps; i-- > 0;)
		if (i != newest && r->apps[i]->pid == pid && (r->apps[i]->flags & BT_APP_EXITED)) {
			app_free(r->apps[i]);
			memmove(&r->apps[i], &r->apps[i + 1], (r->napps - i - 1) * sizeof(*r->apps));
			r->napps--;
		}
}

void bt_apps_register(struct bt_apps *r, int c, uint32_t pid, const char *name, int funcs, int early_fd,
		      uint32_t parent)
{
	char why[256];
	struct abuf early = { .fd = -1 };

	/* Its own buffer first, outside the lock (a few system calls). One
	 * we cannot take loses what the process wrote before our answer: it
	 * is registered without it, the refusal counted (early_refused). */
	int early_refused = early_fd >= 0 && buf_adopt(r, early_fd, pid, &early, why, sizeof(why)) < 0;
	reg_lock(r);
	/* A process registers once; a second registration replaces the first
	 * (the library reconnects after the recorder restarted, or after an exec). */
	for (size_t i = 0; i < r->napps; i++)
		if (r->apps[i]->pid == pid && !(r->apps[i]->flags & BT_APP_EXITED)) {
			bt_app_drain_input(r, r->apps[i]); /* names it sent before it reconnected */
			app_gone(r->apps[i]);
		}
	/* ... and keeps one earlier registration for the post-mortem: one
	 * process registering 200 times must not evict the others'. */
	forget_older(r, pid);
	if (r->napps >= r->cfg.max_apps) {
		size_t victim = SIZE_MAX;
		for (size_t i = 0; i < r->napps && victim == SIZE_MAX; i++)
			if (r->apps[i]->flags & BT_APP_EXITED)
				victim = i;
		if (victim == SIZE_MAX) {
			reg_unlock(r, "a registration");
			buf_release(&early);
			reply_error(c, "error: %s\n", "too many traced applications (raise --max-apps)");
			return;
		}
		app_free(r->apps[victim]);
		memmove(&r->apps[victim], &r->apps[victim + 1], (r->napps - victim - 1) * sizeof(*r->apps));
		r->napps--;
	}
	struct app *a = calloc(1, sizeof(*a));
	struct app **na = realloc(r->apps, (r->napps + 1) * sizeof(*na));
	if (!a || !na) {
		free(a);
		if (na)
			r->apps = na;
		reg_unlock(r, "a registration");
		buf_release(&early);
		reply_error(c, "error: %s\n", "out of memory");
		return;
	}
	r->apps = na;
	for (uint32_t i = 0; i < MAX_BUFS; i++)
		a->bufs[i].fd = -1;
	if (buf_create(r, funcs ? r->cfg.funcs_buffer_size : r->cfg.buffer_size, pid, &a->bufs[0], why, sizeof(why)) <
	    0) {
		free(a);
		reg_unlock(r, "a registration");
		buf_release(&early);
		reply_error(c, "error: %s\n", why);
		return;
	}
	a->nbufs = 1;
	a->early_refused = (uint32_t)early_refused;
	if (early.fd >= 0) /* behind ours, as a resized buffer: dumped until ours has been filled once */
		a->bufs[a->nbufs++] = early;
	a->pid = pid;
	a->conn = c;
	a->registered_ts = bt_boottime_ns();
	a->fnames = bt_func_names_new((int)pid);
	/* A forked child that ran and exited before we got here: the
	 * address space it had is its parent's, if that registered. */
	for (size_t i = 0; parent && a->fnames && i < r->napps; i++)
		if (r->apps[i]->pid == parent && r->apps[i]->fnames &&
		    bt_func_names_inherit(a->fnames, r->apps[i]->fnames) == 0)
			break;
	a->reg = r;
	if (r->cfg.nfwatch) {
		struct bt_func_watch_cfg wc = { .n = r->cfg.nfwatch, .names = r->cfg.fwatch_names,
						.ns = r->cfg.fwatch_ns, .trig = r->cfg.fwatch_trig,
						.hit = func_hit, .ctx = a };
		a->fw = bt_func_watch_new(&wc); /* out of memory: its calls are not watched, as status says */
	}
	snprintf(a->name, sizeof(a->name), "%.15s", name && *name ? name : "app");
	if (bt_send_fd_line(c, "ok\n", a->bufs[0].fd, 0) < 0) {
		if (a->nbufs < 2) {
			app_free(a);
			reg_unlock(r, "a registration");
			return;
		}
		/* Gone before our answer (a short child), having written in its
		 * own buffer: kept as exited, with the names it sent. */
		bt_app_drain_input(r, a);
		app_gone(a);
	}
	for (size_t i = 0; i < r->cfg.nwatch && a->conn >= 0; i++) {
		char line[128];
		int n = snprintf(line, sizeof(line), "watch %" PRIu64 " %s\n", r->cfg.watch_ns[i], r->cfg.watch_names[i]);

		/* a fresh socket: room for a few short lines; a failure only
		 * loses this application's slice triggers, counted */
		if (n <= 0 || (size_t)n >= sizeof(line) || send(a->conn, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
			a->names_bad++;
	}
	r->apps[r->napps++] = a;
	reg_unlock(r, "a registration");
	wake(r);
}

int bt_apps_resize(struct bt_apps *r, uint64_t size, char *why, size_t whylen)
{
	uint32_t A, N;
	int n = 0, err = bt_app_geometry(size, r->cfg.block_size, r->cfg.ncores, &A, &N, why, whylen);
	if (err)
		return err;
	if ((err = bt_apps_check_size(size, r->cfg.max_apps, why, whylen)))
		return err;
	reg_lock(r);
	r->cfg.buffer_size = r->cfg.funcs_buffer_size = size; /* for every application from now on */
	for (size_t i = 0; i < r->napps; i++) {
		struct app *a = r->apps[i];
		struct abuf nb;
		if (a->conn < 0)
			continue;
		err = buf_create(r, size, a->pid, &nb, why, whylen);
		if (err)
			break;
		/* Never block on an application that does not read its socket. */
		if (bt_send_fd_line(a->conn, "buffer\n", nb.fd, MSG_DONTWAIT) < 0) {
			buf_release(&nb);
			continue;
		}
		if (a->nbufs == MAX_BUFS)
			buf_release(&a->bufs[--a->nbufs]);
		memmove(&a->bufs[1], &a->bufs[0], a->nbufs * sizeof(a->bufs[0]));
		a->bufs[0] = nb;
		a->nbufs++;
		a->resizes++;
		n++;
	}
	reg_unlock(r, "a resize");
	return err ? err : n;
}

size_t bt_apps_count(struct bt_apps *r, size_t *live)
{
	size_t n, l = 0;
	reg_lock(r);
	n = r->napps;
	for (size_t i = 0; i < n; i++)
		l += r->apps[i]->conn >= 0;
	reg_unlock(r, "a count");
	if (live)
		*live = l;
	return n;
}

void bt_apps_status(struct bt_apps *r, FILE *out)
{
	reg_lock(r);
	if (r->hold_max_site)
		fprintf(out, "apps lock: held at most %.1f ms (%s)\n", (double)r->hold_max_ns / 1e6, r->hold_max_site);
	for (size_t i = 0; i < r->napps; i++) {
		struct app *a = r->apps[i];
		const struct bt_app_shm *s = (const void *)a->bufs[0].v.base;
		char en[BT_ESCAPED_LEN(sizeof(a->name))];
		int bogus = 0;
		uint64_t dropped = app_count(
			atomic_load_explicit(&((struct bt_app_shm *)s)->stats.dropped, memory_order_relaxed), &bogus);
		fprintf(out, "app %u %s %s buffer=%" PRIu64 " buffers=%u names=%u names_lost=%" PRIu64
			" dropped=%" PRIu64 "%s", a->pid, bt_escape_text(a->name, sizeof(a->name), en, sizeof(en)),
			a->conn >= 0 ? "live" : "exited", a->bufs[0].data_size, a->nbufs, a->nnames,
			bt_app_names_lost(a, bt_app_names_interned(a)), dropped, bogus ? "(implausible: the application's word)" : "");
		if (a->early_refused)
			fprintf(out, " early_refused=1"); /* its calls before registering are lost */
		if (a->maps_reads)
			fprintf(out, " maps_reads=%" PRIu64, a->maps_reads);
		if (r->cfg.nfwatch && a->fw) {
			struct bt_func_watch_stats ws;
			bt_func_watch_stats(a->fw, &ws);
			fprintf(out, " watched_records=%" PRIu64 " watched_hits=%" PRIu64 " watched_gaps=%" PRIu64
				" watched_untimed=%" PRIu64, ws.records, ws.hits, ws.gaps, ws.untimed);
		} else if (r->cfg.nfwatch) {
			fprintf(out, " watched=no(out of memory)");
		}
		fputc('\n', out);
	}
	reg_unlock(r, "ctl status");
}

