// SPDX-License-Identifier: MIT
/*
 * on_dump.c - the --on-dump commands (on_dump.h).
 *
 * The dump thread starts a command with posix_spawn and returns at once.
 * The reaper thread polls the running ones (waitpid on their pids only,
 * never on other children) every 50 ms while any runs, and sleeps on a
 * condition variable otherwise; it enforces the timeouts.
 *
 * A command runs in its own session (and process group, id = its pid): a
 * job lasts until the whole group is gone, not only the shell, and a
 * timeout signals the group. Otherwise a child that ignores SIGTERM
 * outlived its shell, whose death ended the job before SIGKILL was sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "on_dump.h"
#include "log.h"
#include "util.h"

#define POLL_NS 50000000ull

extern char **environ;

struct job {
	pid_t pid;
	uint64_t start, deadline; /* CLOCK_MONOTONIC ns */
	int killed;               /* 0, SIGTERM sent, SIGKILL sent */
	int leader_done, status;  /* the shell was reaped, with this status */
	char *path;
};

struct bt_hooks {
	char *cmd;         /* with "$@" appended */
	char *shown;       /* as given, for the log */
	uint64_t timeout_ns;
	pthread_t reaper;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job was added, or quit */
	struct job jobs[BT_HOOKS_MAX_RUNNING];
	uint32_t njobs;
	int quit;          /* reap what runs, then exit */
	struct bt_hook_stats st;
};

/* Log the end of job j (lock held). */
static void finished(struct bt_hooks *h, struct job *j, int status)
{
	double secs = (double)(bt_now_ns() - j->start) / 1e9;

	if (j->killed) {
		h->st.timed_out++;
		h->st.failed++;
		bt_log(BT_LOG_ERR, "on-dump command '%s' for %s killed after %.1fs (--on-dump-timeout); %" PRIu64
		       " failed so far", h->shown, j->path ? j->path : "?", secs, h->st.failed);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		h->st.succeeded++;
		bt_log(BT_LOG_INFO, "on-dump command for %s done in %.1fs", j->path ? j->path : "?", secs);
	} else {
		char how[64];

		h->st.failed++;
		if (WIFEXITED(status))
			snprintf(how, sizeof(how), "exit status %d", WEXITSTATUS(status));
		else
			snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
		bt_log(BT_LOG_ERR, "on-dump command '%s' for %s failed: %s after %.1fs; %" PRIu64 " failed so far",
		       h->shown, j->path ? j->path : "?", how, secs, h->st.failed);
	}
	free(j->path);
	*j = h->jobs[--h->njobs];
}

static void *reaper_main(void *arg)
{
	struct bt_hooks *h = arg;

	pthread_setname_np(pthread_self(), "btrace-on-dump");
	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->njobs && !h->quit)
			pthread_cond_wait(&h->cond, &h->lock);
		if (!h->njobs && h->quit)
			break;
		uint64_t now = bt_now_ns();
		for (uint32_t i = 0; i < h->njobs;) {
			struct job *j = &h->jobs[i];
			int status = 0;

			if (!j->leader_done) {
				pid_t r = waitpid(j->pid, &status, WNOHANG);
				if (r == j->pid || (r < 0 && errno == ECHILD)) {
					j->leader_done = 1;
					j->status = r == j->pid ? status : 0;
				}
			}
			/* Done once nothing of its group is left; or, SIGKILLed and
			 * the grace over, given up on (a process stuck in the
			 * kernel: counted as killed). */
			if (j->leader_done && ((kill(-j->pid, 0) < 0 && errno == ESRCH) ||
					       (j->killed == SIGKILL && now >= j->deadline))) {
				finished(h, j, j->status);
				continue; /* slot i now holds another job */
			}
			if (now >= j->deadline && j->killed != SIGKILL) {
				/* The whole session: a shell's children too. */
				int sig = j->killed ? SIGKILL : SIGTERM;

				kill(-j->pid, sig);
				j->killed = sig;
				j->deadline = now + BT_HOOKS_KILL_GRACE_NS;
			}
			i++;
		}
		if (h->njobs) {
			struct timespec ts = { 0, (long)POLL_NS };

			pthread_mutex_unlock(&h->lock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&h->lock);
		}
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

struct bt_hooks *bt_hooks_new(const char *cmd, uint64_t timeout_ns)
{
	struct bt_hooks *h = calloc(1, sizeof(*h));
	int e;

	if (!h)
		return NULL;
	h->timeout_ns = timeout_ns;
	h->shown = strdup(cmd);
	if (!h->shown || asprintf(&h->cmd, "%s \"$@\"", cmd) < 0) {
		free(h->shown);
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	e = pthread_create(&h->reaper, NULL, reaper_main, h);
	if (e) {
		free(h->cmd);
		free(h->shown);
		free(h);
		errno = e;
		return NULL;
	}
	return h;
}

/* environ plus our three variables, without NOTIFY_SOCKET (systemd's, for
 * the recorder alone). *envp and the strings are malloc'd. */
static char **make_env(const char *dump, const char *manifest, const char *reason)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "NOTIFY_SOCKET=", 14) && strncmp(environ[i], "BTRACE_DUMP=", 12) &&
		    strncmp(environ[i], "BTRACE_MANIFEST=", 16) && strncmp(environ[i], "BTRACE_DUMP_REASON=", 19))
			env[k++] = environ[i];
	if (asprintf(&env[k++], "BTRACE_DUMP=%s", dump) < 0)
		env[--k] = NULL;
	if (asprintf(&env[k++], "BTRACE_MANIFEST=%s", manifest ? manifest : "") < 0)
		env[--k] = NULL;
	if (asprintf(&env[k++], "BTRACE_DUMP_REASON=%s", reason) < 0)
		env[--k] = NULL;
	return env;
}

static void free_env(char **env)
{
	/* Only ours were allocated; the others are environ's. */
	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], "BTRACE_DUMP=", 12) || !strncmp(env[i], "BTRACE_MANIFEST=", 16) ||
		    !strncmp(env[i], "BTRACE_DUMP_REASON=", 19))
			free(env[i]);
	free(env);
}

static int spawn(struct bt_hooks *h, const char *dump, char **env, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	char *argv[] = { "sh", "-c", h->cmd, "sh", (char *)dump, NULL };
	int e;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* Nothing of ours leaks in: not our BPF, perf or socket fds. */
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	/* The recorder blocks its signals in every thread; the command gets
	 * the defaults back. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGUSR1);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGCHLD);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	e = posix_spawn(pid, "/bin/sh", &fa, &at, argv, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -e;
}

int bt_hooks_run(struct bt_hooks *h, const char *dump_path, const char *manifest_path, const char *reason)
{
	char **env;
	struct job *j;
	pid_t pid;
	int e;

	pthread_mutex_lock(&h->lock);
	if (h->njobs == BT_HOOKS_MAX_RUNNING) {
		h->st.skipped++;
		pthread_mutex_unlock(&h->lock);
		bt_log(BT_LOG_ERR, "on-dump command not run for %s: %d still running; %" PRIu64 " skipped so far",
		       dump_path, BT_HOOKS_MAX_RUNNING, h->st.skipped);
		return -EBUSY;
	}
	env = make_env(dump_path, manifest_path, reason);
	e = env ? spawn(h, dump_path, env, &pid) : -ENOMEM;
	if (env)
		free_env(env);
	if (e) {
		h->st.failed++;
		pthread_mutex_unlock(&h->lock);
		bt_log(BT_LOG_ERR, "cannot run the on-dump command for %s: %s", dump_path, strerror(-e));
		return e;
	}
	j = &h->jobs[h->njobs++];
	j->pid = pid;
	j->start = bt_now_ns();
	j->deadline = j->start + h->timeout_ns;
	j->killed = 0;
	j->leader_done = 0;
	j->path = strdup(dump_path); /* NULL if out of memory: logged as "?" */
	h->st.started++;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return 0;
}

void bt_hooks_get_stats(struct bt_hooks *h, struct bt_hook_stats *st)
{
	pthread_mutex_lock(&h->lock);
	*st = h->st;
	st->running = h->njobs;
	pthread_mutex_unlock(&h->lock);
}

void bt_hooks_destroy(struct bt_hooks *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	if (h->njobs)
		bt_log(BT_LOG_NOTICE, "waiting for %u on-dump command%s (at most --on-dump-timeout)", h->njobs,
		       h->njobs == 1 ? "" : "s");
	h->quit = 1;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->reaper, NULL);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h->cmd);
	free(h->shown);
	free(h);
}
