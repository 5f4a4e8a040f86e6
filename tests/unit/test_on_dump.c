// SPDX-License-Identifier: MIT
/*
 * test_on_dump.c - --on-dump commands (on_dump.c) as real processes: each
 * run gets the dump's path and environment, starting one never waits for
 * it, failures and timeouts are counted, a timeout kills the command's
 * children too (and a command ignoring SIGTERM gets SIGKILL), at most
 * BT_HOOKS_MAX_RUNNING run at once, our file descriptors do not leak into
 * them, and destroy waits for the running ones. The test process blocks
 * SIGTERM like the recorder does: commands must still get it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "on_dump.h"
#include "util.h"

static char dir[] = "/tmp/btrace-ondump-XXXXXX";

static void script(const char *name, const char *body, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0755);
}

static char *slurp(const char *name)
{
	char p[512];
	size_t n;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unsigned char *b = h_read_file(p, &n);
	if (!b)
		return NULL;
	char *s = realloc(b, n + 1);
	s[n] = '\0';
	return s;
}

/* Wait until cond (re-evaluated) or secs pass. */
#define WAIT_UNTIL(cond, secs)                                                     \
	do {                                                                       \
		for (int w_ = 0; w_ < (secs) * 100 && !(cond); w_++)               \
			usleep(10000);                                             \
	} while (0)

static void test_runs_with_path_and_env(void)
{
	char cmd[600], body[600];
	snprintf(body, sizeof(body),
		 "echo \"$#|$1|$BTRACE_DUMP|$BTRACE_MANIFEST|$BTRACE_DUMP_REASON|${NOTIFY_SOCKET-unset}\" >>%s/runs", dir);
	script("record.sh", body, cmd, sizeof(cmd));
	setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
	struct bt_hooks *h = bt_hooks_new(cmd, 10000000000ull);
	REQUIRE(h, "new");
	CHECK(bt_hooks_run(h, "/d/one.btd", "/d/one.btd.json", "signal") == 0, "run 1");
	CHECK(bt_hooks_run(h, "/d/two words.btd", "/d/two words.btd.json", "trigger") == 0, "run 2");
	bt_hooks_destroy(h);
	unsetenv("NOTIFY_SOCKET");
	char *runs = slurp("runs");
	REQUIRE(runs, "no run");
	/* Either order: they ran concurrently. */
	CHECK(strstr(runs, "1|/d/one.btd|/d/one.btd|/d/one.btd.json|signal|unset\n") != NULL, "%s", runs);
	CHECK(strstr(runs, "1|/d/two words.btd|/d/two words.btd|/d/two words.btd.json|trigger|unset\n") != NULL,
	      "%s", runs);
	int lines = 0;
	for (char *p = runs; *p; p++)
		lines += *p == '\n';
	CHECK(lines == 2, "each ran once: %d lines", lines);
	free(runs);
}

static void test_never_waits_and_counts(void)
{
	struct bt_hook_stats st;
	struct bt_hooks *h = bt_hooks_new("sleep 2; exit 3; :", 10000000000ull);
	REQUIRE(h, "new");
	uint64_t t0 = bt_now_ns();
	CHECK(bt_hooks_run(h, "/d/a.btd", NULL, "signal") == 0, "run");
	uint64_t dt = bt_now_ns() - t0;
	CHECK(dt < 500000000ull, "starting took %.3fs", (double)dt / 1e9);
	bt_hooks_get_stats(h, &st);
	CHECK(st.started == 1 && st.running == 1 && st.failed == 0, "running");
	WAIT_UNTIL((bt_hooks_get_stats(h, &st), st.running == 0), 10);
	CHECK(st.failed == 1 && st.succeeded == 0 && st.timed_out == 0, "exit 3 is a failure (%lu)",
	      (unsigned long)st.failed);
	CHECK(bt_hooks_run(h, "/d/b.btd", NULL, "signal") == 0, "run");
	bt_hooks_destroy(h);
	/* A command that cannot run is a failure of the shell, exit 127. */
	h = bt_hooks_new("/nonexistent/ship-dump", 10000000000ull);
	REQUIRE(h, "new");
	bt_hooks_run(h, "/d/c.btd", NULL, "signal");
	WAIT_UNTIL((bt_hooks_get_stats(h, &st), st.running == 0), 10);
	CHECK(st.failed == 1, "missing command counted as failed");
	bt_hooks_destroy(h);
}

static int alive(pid_t p)
{
	char s[64], state = 0;
	snprintf(s, sizeof(s), "/proc/%d/stat", (int)p);
	FILE *f = fopen(s, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d %*s %c", &state) != 1)
		state = 0;
	fclose(f);
	return state && state != 'Z';
}

static void test_timeout_kills_the_session(void)
{
	char cmd[600], body[600];
	struct bt_hook_stats st;
	/* A shell with a child: both must go. */
	snprintf(body, sizeof(body), "sleep 60 & echo $! >%s/child; wait", dir);
	script("hang.sh", body, cmd, sizeof(cmd));
	/* 1 s: at 0.3 s a loaded machine's shell was killed before it had
	 * started its child and written its pid. */
	struct bt_hooks *h = bt_hooks_new(cmd, 1000000000ull);
	REQUIRE(h, "new");
	uint64_t t0 = bt_now_ns();
	CHECK(bt_hooks_run(h, "/d/h.btd", NULL, "signal") == 0, "run");
	WAIT_UNTIL((bt_hooks_get_stats(h, &st), st.running == 0), 12);
	double secs = (double)(bt_now_ns() - t0) / 1e9;
	CHECK(st.timed_out == 1 && st.failed == 1, "timed out (%lu)", (unsigned long)st.timed_out);
	/* Under the grace before SIGKILL (5 s after the timeout): the
	 * timeout's SIGTERM ended it. A loaded CI machine took 3.3 s to reap
	 * the group. */
	CHECK(secs < 5.5, "killed after %.2fs (timeout 1s, SIGKILL only after 5 s more)", secs);
	char *c = slurp("child");
	REQUIRE(c, "no child pid");
	pid_t child = (pid_t)atoi(c);
	free(c);
	WAIT_UNTIL(!alive(child), 2);
	CHECK(!alive(child), "the command's child %d was killed too", (int)child);
	bt_hooks_destroy(h);
	/* Ignoring SIGTERM earns SIGKILL after the grace period. */
	h = bt_hooks_new("trap '' TERM; sleep 60; :", 200000000ull);
	REQUIRE(h, "new");
	t0 = bt_now_ns();
	bt_hooks_run(h, "/d/i.btd", NULL, "signal");
	WAIT_UNTIL((bt_hooks_get_stats(h, &st), st.running == 0), 15);
	secs = (double)(bt_now_ns() - t0) / 1e9;
	CHECK(st.timed_out == 1 && st.running == 0, "a command ignoring SIGTERM is killed (%.1fs)", secs);
	CHECK(secs >= 4 && secs < 10, "SIGKILL after the %llus grace: %.1fs", BT_HOOKS_KILL_GRACE_NS / 1000000000ull,
	      secs);
	bt_hooks_destroy(h);
	/* A child that ignores SIGTERM under a shell that does not: the shell
	 * dies of the SIGTERM, the child must still get SIGKILL (it used to
	 * outlive its timeout for ever). The timeout leaves the child time to
	 * set its trap: a loaded CI machine took over 0.2 s to start it, and
	 * the SIGTERM came first. */
	snprintf(body, sizeof(body), "sh -c \"trap '' TERM; echo \\$\\$ >%s/stubborn; exec sleep 60\" & wait", dir);
	script("stubborn.sh", body, cmd, sizeof(cmd));
	h = bt_hooks_new(cmd, 3000000000ull);
	REQUIRE(h, "new");
	t0 = bt_now_ns();
	bt_hooks_run(h, "/d/s.btd", NULL, "signal");
	c = NULL;
	for (int i = 0; i < 500 && !(c && *c); i++) {
		free(c);
		c = slurp("stubborn");
		if (!(c && *c))
			usleep(10000);
	}
	REQUIRE(c && *c, "no stubborn pid");
	child = (pid_t)atoi(c);
	free(c);
	WAIT_UNTIL((bt_hooks_get_stats(h, &st), st.running == 0), 15);
	secs = (double)(bt_now_ns() - t0) / 1e9;
	WAIT_UNTIL(!alive(child), 2);
	CHECK(!alive(child) && st.timed_out == 1, "a child ignoring SIGTERM under a dying shell is killed (%.1fs)",
	      secs);
	if (alive(child))
		kill(child, SIGKILL);
	bt_hooks_destroy(h);
}

static void test_at_most_running(void)
{
	struct bt_hook_stats st;
	struct bt_hooks *h = bt_hooks_new("sleep 1; :", 10000000000ull);
	REQUIRE(h, "new");
	for (int i = 0; i < BT_HOOKS_MAX_RUNNING; i++)
		CHECK(bt_hooks_run(h, "/d/x.btd", NULL, "interval") == 0, "run %d", i);
	CHECK(bt_hooks_run(h, "/d/y.btd", NULL, "interval") == -EBUSY, "one more is refused");
	bt_hooks_get_stats(h, &st);
	CHECK(st.skipped == 1 && st.running == BT_HOOKS_MAX_RUNNING, "skipped counted");
	bt_hooks_destroy(h);
}

static void test_no_fd_leaks_and_destroy_waits(void)
{
	char cmd[600], marker[512];
	/* Without O_CLOEXEC, like a careless library's descriptor. */
	snprintf(marker, sizeof(marker), "%s/leak-marker", dir);
	int fd = open(marker, O_RDWR | O_CREAT, 0600);
	snprintf(cmd, sizeof(cmd), "sleep 0.5; ls -l /proc/self/fd >%s/fds; echo done >%s/done; :", dir, dir);
	struct bt_hooks *h = bt_hooks_new(cmd, 10000000000ull);
	REQUIRE(h, "new");
	bt_hooks_run(h, "/d/f.btd", NULL, "exit");
	bt_hooks_destroy(h); /* waits for it */
	char *done = slurp("done"), *fds = slurp("fds");
	CHECK(done && !strcmp(done, "done\n"), "destroy waited for the command");
	CHECK(fds && strstr(fds, " 0 -> /dev/null") && !strstr(fds, "leak-marker"),
	      "stdin is /dev/null, our descriptors are not inherited: %s", fds ? fds : "none");
	free(done);
	free(fds);
	close(fd);
}

int main(void)
{
	sigset_t s;
	if (!mkdtemp(dir))
		return 1;
	/* As in the recorder: these are blocked in every thread. */
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	RUN(test_runs_with_path_and_env);
	RUN(test_never_waits_and_counts);
	RUN(test_timeout_kills_the_session);
	RUN(test_at_most_running);
	RUN(test_no_fd_leaks_and_destroy_waits);
	char c[600];
	snprintf(c, sizeof(c), "rm -rf %s", dir);
	if (system(c))
		return 1;
	return h_done();
}
