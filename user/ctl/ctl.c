// SPDX-License-Identifier: MIT
/*
 * ctl.c - control socket of a running recorder (server thread and client).
 *
 * Protocol: the client connects, writes one line "CMD ARG...\n"; the server
 * answers with any number of text lines, then "ok\n" or "error: WHY\n", and
 * closes. While a request runs longer than KEEPALIVE_MS the server thread
 * sends a line "." every KEEPALIVE_MS or so, before the reply's first line
 * (the client skips them): a dump of a big buffer on a slow machine may take
 * minutes, and the client tells a recorder at work from a frozen one by
 * silence, not by the request's length. Each connection is served by its
 * own thread (up to MAX_CLIENTS at once): a dump that takes seconds, or a client that connects
 * and says nothing, must not hold up a status, a resize or an application
 * registering. What must not run concurrently is serialized by the handlers
 * (dumps by the recorder's dump lock, resizes by the buffer).
 */
#include "ctl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* A client writes its request as it connects: one that sends nothing for
 * FIRST_BYTE_MS, or not a whole line in REQUEST_LINE_MS, is dropped. */
#define FIRST_BYTE_MS 2000
#define REQUEST_LINE_MS 5000
/* With every slot taken, a new connection takes the slot of the oldest
 * client still without a request, connected at least this long. */
#define EVICT_AFTER_MS 200
#define KEEPALIVE_MS 2000
#define KEEPALIVE_NS (KEEPALIVE_MS * 1000000ull)
/* The client's bounds: no line (not even a keepalive: a recorder frozen,
 * or one from before keepalives) for SILENCE_S; a request running its
 * timeout in all (a handler stuck while the recorder lives). */
#define SILENCE_S 120
#define BUSY_RETRY_MS 100 /* "busy": every slot runs a request; asked again */
#define NOTICE_S 10 /* on a terminal, say once that the recorder is at work */
#define KEEPALIVE_LINE "."
#define MAX_CLIENTS 16
#define SEND_TIMEOUT_S 2 /* a reply the client does not read */

struct bt_ctl_server {
	int fd;
	int stop_pipe[2];
	pthread_t thread;
	/* Connections being served, one thread each. */
	pthread_mutex_t clients_lock;
	pthread_cond_t clients_done; /* nclients dropped */
	int nclients;
	int cfd[MAX_CLIENTS];        /* -1: free slot; shut down by bt_ctl_stop */
	uint64_t next_alive[MAX_CLIENTS]; /* a request runs: its next keepalive (bt_now_ns); 0: none */
	uint64_t waiting[MAX_CLIENTS]; /* no whole request yet: connected at (bt_now_ns); 0: has one */
	bt_ctl_handler handler;
	void *ctx;
	bt_ctl_adopt_handler adopt; /* "app-register": keeps the connection */
	void *adopt_ctx;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat bound; /* the socket file we bound (device, inode) */
};

static int fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	strcpy(a->sun_path, path);
	return 0;
}

/* Connect to a socket path; returns the fd or -errno. */
static int ctl_connect(const char *path)
{
	struct sockaddr_un a;
	int fd, err = fill_addr(&a, path);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int n = poll(&p, 1, ms);

	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		/* MSG_NOSIGNAL: a client that went away must not kill the recorder. */
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_str(int fd, const char *s)
{
	return write_all(fd, s, strlen(s));
}

/* Read one line (without '\n') of at most max-1 bytes; -EPIPE at EOF. */
static int read_line(int fd, char *buf, size_t max, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < max) {
		int err = wait_fd(fd, POLLIN, timeout_ms);
		ssize_t r;

		if (err)
			return err;
		r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0 && n == 0)
			return -EPIPE;
		if (r == 0 || buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return n + 1 >= max ? -E2BIG : 0;
}

/* ---- server ----------------------------------------------------------------- */

/* One byte of the request, and the descriptor passed with it, if any
 * (*fdp: the last one; any before it is closed). */
static ssize_t read_byte(int fd, char *c, int *fdp)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { .iov_base = c, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

	if (r > 0)
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
			    h->cmsg_len == CMSG_LEN(sizeof(int))) {
				if (*fdp >= 0)
					close(*fdp);
				memcpy(fdp, CMSG_DATA(h), sizeof(int));
			}
	return r;
}

/* The request line (without '\n'): its first byte within FIRST_BYTE_MS,
 * all of it within REQUEST_LINE_MS, so a silent or trickling client frees
 * its slot soon. -ETIMEDOUT, -EPIPE at EOF before the '\n', -E2BIG. A
 * descriptor sent with the line (an application's own buffer, made before
 * it registered: app_registry.c) goes to *fdp, else -1; the caller owns it. */
static int read_request(int fd, char *buf, size_t max, int *fdp)
{
	uint64_t t0 = bt_now_ns();
	size_t n = 0;

	*fdp = -1;
	while (n + 1 < max) {
		int64_t left = (n ? REQUEST_LINE_MS : FIRST_BYTE_MS) - (int64_t)((bt_now_ns() - t0) / 1000000);
		int err = left > 0 ? wait_fd(fd, POLLIN, (int)left) : -ETIMEDOUT;
		ssize_t r;

		if (err)
			return err;
		r = read_byte(fd, buf + n, fdp);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) /* a line cut short (a client dropped) is not run */
			return -EPIPE;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return n + 1 >= max ? -E2BIG : 0;
}

/* -E2BIG if the line has more than BT_CTL_MAX_ARGS words (never cut). */
static int split_args(char *line, char **argv)
{
	int argc = 0;
	char *save = NULL;

	for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (argc == BT_CTL_MAX_ARGS)
			return -E2BIG;
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	return argc;
}

/* The request on slot starts (1) or is answered (0). The server thread
 * sends keepalives only to busy slots, under clients_lock: once this
 * returns with 0, no keepalive can follow, so the reply is the stream's end. */
static void set_busy(struct bt_ctl_server *s, int slot, int busy)
{
	pthread_mutex_lock(&s->clients_lock);
	s->next_alive[slot] = busy ? bt_now_ns() + KEEPALIVE_NS : 0;
	pthread_mutex_unlock(&s->clients_lock);
}

/* Called by the server thread: a line KEEPALIVE_LINE to each client whose
 * request has run another KEEPALIVE_MS. Never blocks: a client whose socket
 * is full has unread lines, a skipped keepalive costs it nothing. Returns
 * the number of clients. */
static int send_keepalives(struct bt_ctl_server *s)
{
	uint64_t now = bt_now_ns();
	int n;

	pthread_mutex_lock(&s->clients_lock);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->cfd[i] >= 0 && s->next_alive[i] && now >= s->next_alive[i]) {
			(void)send(s->cfd[i], KEEPALIVE_LINE "\n", 2, MSG_DONTWAIT | MSG_NOSIGNAL);
			s->next_alive[i] = now + KEEPALIVE_NS;
		}
	n = s->nclients;
	pthread_mutex_unlock(&s->clients_lock);
	return n;
}

/* Returns 1 if the connection was handed over (not to be closed here);
 * a descriptor passed with the request goes to *passed (owned by the
 * caller unless the handover took it: then -1). */
static int serve_request(struct bt_ctl_server *s, int c, int slot, int *passed)
{
	char line[BT_CTL_MAX_LINE], why[512] = "", *argv[BT_CTL_MAX_ARGS + 1];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char *reply = NULL;
	size_t rlen = 0;
	FILE *out;
	int argc, ret;

	/* The socket is 0600 in a 0700 directory; check the peer anyway. */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		write_str(c, "error: permission denied (run btrace-bpf ctl as root)\n");
		return 0;
	}
	ret = read_request(c, line, sizeof(line), passed);
	pthread_mutex_lock(&s->clients_lock);
	s->waiting[slot] = 0; /* from here on, not taken by a new connection */
	pthread_mutex_unlock(&s->clients_lock);
	if (ret == -ETIMEDOUT) {
		write_str(c, "error: no request line in time (send the command as you connect)\n");
		return 0;
	}
	if (ret < 0) {
		write_str(c, "error: bad request\n");
		return 0;
	}
	argc = split_args(line, argv);
	if (argc < 0) {
		write_str(c, "error: too many words in the command\n");
		return 0;
	}
	if (argc >= 1 && strcmp(argv[0], BT_CTL_ADOPT_CMD) == 0) {
		if (!s->adopt) {
			write_str(c, "error: this recorder does not take applications\n");
			return 0;
		}
		s->adopt(s->adopt_ctx, c, (uint32_t)cred.pid, *passed, argc, argv);
		*passed = -1;
		return 1;
	}
	out = open_memstream(&reply, &rlen);
	if (!out)
		return 0;
	if (argc == 0) {
		ret = -EINVAL;
		snprintf(why, sizeof(why), "empty command");
	} else {
		set_busy(s, slot, 1);
		ret = s->handler(s->ctx, argc, argv, out, why, sizeof(why));
		set_busy(s, slot, 0);
	}
	if (ret == 0)
		fputs("ok\n", out);
	else
		fprintf(out, "error: %s\n", why[0] ? why : strerror(-ret));
	fclose(out);
	write_all(c, reply, rlen);
	free(reply);
	return 0;
}

static int serve_one(struct bt_ctl_server *s, int c, int slot)
{
	int passed = -1;
	int adopted = serve_request(s, c, slot, &passed);

	if (passed >= 0)
		close(passed); /* only a registration takes one */
	return adopted;
}

struct client {
	struct bt_ctl_server *s;
	int fd, slot;
};

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct bt_ctl_server *s = cl->s;
	int adopted = serve_one(s, cl->fd, cl->slot);

	pthread_mutex_lock(&s->clients_lock);
	s->cfd[cl->slot] = -1;
	s->waiting[cl->slot] = 0;
	if (!adopted)
		close(cl->fd); /* under the lock: bt_ctl_stop never shuts down a reused number */
	s->nclients--;
	pthread_cond_broadcast(&s->clients_done);
	pthread_mutex_unlock(&s->clients_lock);
	free(cl);
	return NULL;
}

/* A free slot, under clients_lock. With none, the oldest client that has
 * not sent a whole request (nothing unread either) after EVICT_AFTER_MS is
 * shut down and its slot awaited: clients that connect and say nothing
 * never lock out a request. -1 when every slot runs a request. */
static int take_slot(struct bt_ctl_server *s)
{
	uint64_t now = bt_now_ns(), oldest = 0;
	int victim = -1, pending;

	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->cfd[i] < 0)
			return i;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->waiting[i] && now - s->waiting[i] >= EVICT_AFTER_MS * 1000000ull &&
		    (!oldest || s->waiting[i] < oldest) && ioctl(s->cfd[i], FIONREAD, &pending) == 0 && !pending) {
			oldest = s->waiting[i];
			victim = i;
		}
	if (victim < 0)
		return -1;
	static const char bye[] = "error: no request while every control slot was taken\n";

	(void)send(s->cfd[victim], bye, sizeof(bye) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(s->cfd[victim], SHUT_RDWR); /* its thread sees EOF, frees the slot */
	s->waiting[victim] = 0;
	for (int tries = 0; tries < 20; tries++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->clients_done, &s->clients_lock, &ts);
		for (int i = 0; i < MAX_CLIENTS; i++)
			if (s->cfd[i] < 0)
				return i;
	}
	return -1;
}

/* Hand connection c to a thread of its own; refuse it when MAX_CLIENTS
 * requests are being served. */
static void dispatch(struct bt_ctl_server *s, int c)
{
	struct client *cl = malloc(sizeof(*cl));
	pthread_attr_t attr;
	pthread_t t;
	int slot = -1;
	/* A client that stops reading must not keep its handler in send()
	 * forever: bt_ctl_stop() waits for every handler. */
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };

	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&s->clients_lock);
	slot = cl ? take_slot(s) : -1;
	if (slot >= 0) {
		s->cfd[slot] = c;
		s->waiting[slot] = bt_now_ns();
		s->nclients++;
	}
	pthread_mutex_unlock(&s->clients_lock);
	if (slot < 0) {
		char drop[256];

		free(cl);
		write_str(c, "error: busy: every control slot runs a request, try again\n");
		/* The request unread would reset the connection before the
		 * client reads why: take what it sent. */
		while (recv(c, drop, sizeof(drop), MSG_DONTWAIT) > 0)
			;
		close(c);
		return;
	}
	*cl = (struct client){ .s = s, .fd = c, .slot = slot };
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, client_main, cl) != 0) {
		pthread_mutex_lock(&s->clients_lock);
		s->cfd[slot] = -1;
		s->nclients--;
		pthread_cond_broadcast(&s->clients_done);
		pthread_mutex_unlock(&s->clients_lock);
		free(cl);
		write_str(c, "error: cannot start a thread for this connection\n");
		close(c);
	}
	pthread_attr_destroy(&attr);
}

static void *serve(void *arg)
{
	struct bt_ctl_server *s = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = s->stop_pipe[0], .events = POLLIN } };
		int c, n;

		/* Awake every KEEPALIVE_MS / 4 only while clients are served. */
		n = poll(p, 2, send_keepalives(s) ? KEEPALIVE_MS / 4 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			continue;
		if (p[1].revents)
			break;
		c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		dispatch(s, c);
	}
	return NULL;
}

/* Whether a socket bound at path is open in a live process: /proc/net/unix
 * lists every bound socket (of this network namespace) with its path. A
 * socket file left by a process that died is not there. -1: cannot tell. */
static int socket_bound(const char *path)
{
	char line[512], real[PATH_MAX];
	FILE *f = fopen("/proc/net/unix", "re");
	int found = 0;

	if (!f)
		return -1;
	if (!realpath(path, real))
		real[0] = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* Num RefCount Protocol Flags Type St Inode Path */
		char *p = line;
		for (int field = 0; field < 7 && p; field++) {
			p = strchr(p, ' ');
			while (p && *p == ' ')
				p++;
		}
		if (!p || !*p)
			continue;
		p[strcspn(p, "\n")] = 0;
		found = !strcmp(p, path) || (real[0] && !strcmp(p, real));
	}
	fclose(f);
	return found;
}

int bt_ctl_dump_args(int argc, char *const *argv, const char **path)
{
	*path = NULL;
	if (argc == 3 && !strcmp(argv[1], "-o"))
		*path = argv[2];
	else if (argc != 1)
		return -EINVAL;
	return 0;
}

int bt_ctl_check_path(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un a;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		(void)bt_errf(err, errlen, 0, "control socket path is %zu bytes, sockets take at most %zu: choose a shorter --ctl PATH",
			strlen(path), sizeof(a.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		(void)bt_errf(err, errlen, 0, "%s exists and is not a socket: choose another path with --ctl", path);
		return -EEXIST;
	}
	fd = ctl_connect(path);
	if (fd >= 0) {
		close(fd);
		(void)bt_errf(err, errlen, 0, "control socket %s is in use by a running recorder (stop it, or pick another path with --ctl)",
			path);
		return -EADDRINUSE;
	}
	/* Refusing connections: stale, unless a live process holds it bound
	 * (and not listening: not ours to take either). */
	if (fd != -ECONNREFUSED || socket_bound(path) != 0) {
		(void)bt_errf(err, errlen, 0, "%s is a socket in use by another program (%s): choose another path with --ctl", path,
			fd == -ECONNREFUSED ? "bound, not accepting" : strerror(-fd));
		return -EADDRINUSE;
	}
	return 1;
}

/* Remove path if it is still the socket st describes (same device and
 * inode, still a socket): never what replaced it. */
static void unlink_if_same(const char *path, const struct stat *st)
{
	struct stat now;

	if (lstat(path, &now) == 0 && S_ISSOCK(now.st_mode) && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		unlink(path);
}

struct bt_ctl_server *bt_ctl_start(const char *path, bt_ctl_handler h, void *ctx, bt_ctl_adopt_handler adopt,
				   void *adopt_ctx, char *err, size_t errlen)
{
	struct bt_ctl_server *s = calloc(1, sizeof(*s));
	struct sockaddr_un a;
	struct stat st;
	int e = 0, r;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->fd = -1;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	for (int i = 0; i < MAX_CLIENTS; i++)
		s->cfd[i] = -1;
	pthread_mutex_init(&s->clients_lock, NULL);
	pthread_cond_init(&s->clients_done, NULL);
	s->handler = h;
	s->ctx = ctx;
	/* Before the thread starts: it reads them without a lock. */
	s->adopt = adopt;
	s->adopt_ctx = adopt_ctx;
	if (path && strlen(path) >= sizeof(s->path)) {
		e = ENAMETOOLONG;
		bt_ctl_check_path(path, err, errlen);
		goto fail;
	}
	if (path)
		snprintf(s->path, sizeof(s->path), "%s", path);
	else
		snprintf(s->path, sizeof(s->path), "%s/%d.sock", BT_CTL_DIR, (int)getpid());
	if (!path && mkdir(BT_CTL_DIR, 0700) < 0 && errno != EEXIST) {
		e = errno;
		(void)bt_errf(err, errlen, 0, "cannot create %s: %s", BT_CTL_DIR, strerror(e));
		goto fail;
	}
	if (fill_addr(&a, s->path)) {
		e = ENAMETOOLONG;
		(void)bt_errf(err, errlen, 0, "control socket path too long: %s", s->path);
		goto fail;
	}
	/* Something there already: a live recorder's (or anyone's) socket is
	 * refused; a stale one (refuses connections, bound by no process) was
	 * left by a recorder that died and is removed. */
	r = bt_ctl_check_path(s->path, err, errlen);
	if (r < 0) {
		e = -r;
		if (!err || !err[0])
			(void)bt_errf(err, errlen, 0, "control socket %s: %s", s->path, strerror(e));
		goto fail;
	}
	if (r == 1 && lstat(s->path, &st) == 0) {
		unlink_if_same(s->path, &st);
		bt_log(BT_LOG_NOTICE, "removed stale control socket %s (left by a recorder that crashed)",
			s->path);
	}
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		e = errno;
		(void)bt_errf(err, errlen, 0, "cannot listen on control socket %s: %s%s", s->path, strerror(e),
			e == EADDRINUSE ? " (another program created it just now)" : "");
		goto fail;
	}
	/* What we bound: the only file bt_ctl_stop() may remove. */
	if (lstat(s->path, &s->bound) < 0) {
		e = errno;
		(void)bt_errf(err, errlen, 0, "control socket %s vanished after bind: %s", s->path, strerror(e));
		goto fail;
	}
	if (chmod(s->path, 0600) < 0 || listen(s->fd, 8) < 0) {
		e = errno;
		(void)bt_errf(err, errlen, 0, "cannot listen on control socket %s: %s", s->path, strerror(e));
		goto fail_unlink;
	}
	if (pipe2(s->stop_pipe, O_CLOEXEC) < 0 || (e = pthread_create(&s->thread, NULL, serve, s)) != 0) {
		e = errno ? errno : e;
		(void)bt_errf(err, errlen, 0, "cannot start the control thread: %s", strerror(e));
		goto fail_unlink;
	}
	return s;

fail_unlink:
	unlink_if_same(s->path, &s->bound);
fail:
	pthread_mutex_destroy(&s->clients_lock);
	pthread_cond_destroy(&s->clients_done);
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	free(s);
	errno = e;
	return NULL;
}

const char *bt_ctl_path(const struct bt_ctl_server *s)
{
	return s->path;
}

void bt_ctl_stop(struct bt_ctl_server *s)
{
	if (!s)
		return;
	/* A fresh pipe takes one byte; only a signal can interrupt it. The
	 * join must happen: the thread uses s. */
	while (write(s->stop_pipe[1], "x", 1) < 0 && errno == EINTR)
		;
	pthread_join(s->thread, NULL);
	/* No new connections; wake the ones waiting for a request, let the
	 * handlers running finish (they use the recorder's state). */
	pthread_mutex_lock(&s->clients_lock);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (s->cfd[i] >= 0)
			shutdown(s->cfd[i], SHUT_RD);
	while (s->nclients)
		pthread_cond_wait(&s->clients_done, &s->clients_lock);
	pthread_mutex_unlock(&s->clients_lock);
	pthread_mutex_destroy(&s->clients_lock);
	pthread_cond_destroy(&s->clients_done);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	close(s->fd);
	/* Only the socket we bound: not a file put there after it was
	 * removed, nor another recorder's socket. */
	unlink_if_same(s->path, &s->bound);
	free(s);
}

/* ---- client ------------------------------------------------------------------ */

/* One connection: 0 ok, 1 the recorder said error (why), 2 it said busy,
 * or -errno. */
static int request_once(const char *path, const char *line, uint64_t deadline, unsigned timeout_s, FILE *out,
			char *why, size_t whylen)
{
	char buf[BT_CTL_MAX_LINE];
	int fd = ctl_connect(path), err, replying = 0, noticed = 0;
	uint64_t t0;

	if (fd < 0) {
		if (fd == -EACCES || fd == -EPERM)
			(void)bt_errf(why, whylen, 0, "permission denied on %s: run as root", path);
		else if (fd == -ECONNREFUSED)
			(void)bt_errf(why, whylen, 0, "no recorder listens on %s (stale socket: the recorder exited)", path);
		else
			(void)bt_errf(why, whylen, 0, "cannot connect to %s: %s", path, strerror(-fd));
		return fd;
	}
	snprintf(buf, sizeof(buf), "%s\n", line);
	err = write_all(fd, buf, strlen(buf));
	/* A recorder that refused the connection (busy) closed it: its
	 * reply may still be there to say why. */
	if (err == -EPIPE || err == -ECONNRESET)
		err = 0;
	t0 = bt_now_ns();
	while (!err) {
		uint64_t now = bt_now_ns(), ran_ms = (now - t0) / 1000000;
		uint64_t left_ms = now < deadline ? (deadline - now) / 1000000 : 0;
		int wait_ms = SILENCE_S * 1000;

		/* A dump of a big buffer can take minutes: wait while the
		 * recorder says it is at work, up to the timeout. */
		if (!left_ms) {
			err = -ETIME;
			break;
		}
		if (left_ms < (uint64_t)wait_ms)
			wait_ms = (int)left_ms;
		err = read_line(fd, buf, sizeof(buf), wait_ms);
		if (err == -ETIMEDOUT && wait_ms < SILENCE_S * 1000)
			err = -ETIME;
		if (err)
			break;
		/* Keepalives come before the reply's first line only. */
		if (!replying && strcmp(buf, KEEPALIVE_LINE) == 0) {
			if (!noticed && ran_ms >= NOTICE_S * 1000 && isatty(STDERR_FILENO)) {
				fprintf(stderr, "btrace-bpf: the recorder is at '%s' for %" PRIu64
						" s; waiting (Ctrl-C stops waiting, not the request)\n",
					line, ran_ms / 1000);
				noticed = 1;
			}
			continue;
		}
		replying = 1;
		if (strcmp(buf, "ok") == 0)
			break;
		if (strncmp(buf, "error: ", 7) == 0) {
			(void)bt_errf(why, whylen, 0, "%s", buf + 7);
			close(fd);
			return strncmp(buf + 7, "busy:", 5) == 0 ? 2 : 1;
		}
		fprintf(out, "%s\n", buf);
	}
	close(fd);
	if (err == -ETIME)
		(void)bt_errf(why, whylen, 0, "stopped waiting for %s after %u s at '%s' (the request may still run; "
			      "ctl --timeout waits longer)", path, timeout_s, line);
	else if (err == -ETIMEDOUT)
		(void)bt_errf(why, whylen, 0, "no word from the recorder at %s for %d s (frozen or stopped); "
			      "the request may still run", path, SILENCE_S);
	else if (err == -E2BIG)
		(void)bt_errf(why, whylen, 0, "a reply line from %s is longer than %d bytes", path, BT_CTL_MAX_LINE - 1);
	else if (err)
		(void)bt_errf(why, whylen, 0, "lost the connection to %s: %s", path, strerror(-err));
	return err;
}

int bt_ctl_request(const char *path, const char *line, unsigned timeout_s, FILE *out, char *why, size_t whylen)
{
	uint64_t deadline;
	int r;

	if (!timeout_s)
		timeout_s = BT_CTL_TIMEOUT_S;
	deadline = bt_now_ns() + timeout_s * 1000000000ull;
	/* Busy: every slot runs a request, each soon done; ask again. */
	while ((r = request_once(path, line, deadline, timeout_s, out, why, whylen)) == 2 &&
	       bt_now_ns() + BUSY_RETRY_MS * 1000000ull < deadline) {
		struct timespec ts = { .tv_nsec = BUSY_RETRY_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (r == 2) {
		char b[512];

		snprintf(b, sizeof(b), "%s", why);
		(void)bt_errf(why, whylen, 0, "recorder at %s still %s after %u s", path, b, timeout_s);
		return 1;
	}
	return r;
}
