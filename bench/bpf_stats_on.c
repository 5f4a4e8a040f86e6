// SPDX-License-Identifier: MIT
/*
 * bpf_stats_on.c - run a command with the kernel's BPF run-time statistics
 * on (run_cnt, run_time_ns in /proc/PID/fdinfo of every program).
 *
 *     bpf_stats_on CMD [ARG...]
 *
 * The statistics stay on while a BPF_ENABLE_STATS file descriptor is open,
 * which needs no write to /proc/sys (kernel.bpf_stats_enabled may be
 * read-only, as in containers): the benchmarks wrap their measured section
 * in this. Exit status: CMD's, or 125 if the statistics cannot be enabled.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>

int main(int argc, char **argv)
{
	int fd, st;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: bpf_stats_on CMD [ARG...]\n");
		return 125;
	}
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		fprintf(stderr, "bpf_stats_on: cannot enable BPF run-time statistics: %s\n", strerror(-fd));
		return 125;
	}
	pid = fork();
	if (pid < 0) {
		perror("bpf_stats_on: fork");
		return 125;
	}
	if (pid == 0) {
		close(fd);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "bpf_stats_on: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
