// SPDX-License-Identifier: MIT
/*
 * test_elf_load.c - bt_elf_load (user/probes/elf_symbols.c) on a hostile
 * user's binary: a .symtab that claims 4 GiB (a sparse hole: no disk) is
 * skipped and said, with the reader's memory bounded; the same binary
 * without the lie loads its functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "elf_symbols.h"

static char dir[] = "/tmp/test_elf_load.XXXXXX";

/* bt_elf_load(path) in a child: its peak RSS in KiB, -1 if it crashed;
 * *skipped and *nf as the child saw them. */
static long load_peak_rss(const char *path, int *skipped, size_t *nf)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		static struct bt_elf_file ef;
		char *err = NULL;
		alarm(120);
		int r = bt_elf_load(path, path, &ef, &err);
		long out[2] = { r ? -1 : ef.symtab_skipped, (long)ef.nf };
		if (write(pfd[1], out, sizeof(out)) != sizeof(out))
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	int st = 0;
	struct rusage ru;
	wait4(pid, &st, 0, &ru);
	long in[2] = { -1, 0 };
	if (read(pfd[0], in, sizeof(in)) != sizeof(in))
		in[0] = -1;
	close(pfd[0]);
	*skipped = (int)in[0];
	*nf = (size_t)in[1];
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? ru.ru_maxrss : -1;
}

static void test_sparse_symtab(void)
{
	char copy[300], cmd[1024];
	int skipped;
	size_t nf, nf_full;

	snprintf(copy, sizeof(copy), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), copy);
	REQUIRE(system(cmd) == 0, "cp");
	long kb = load_peak_rss(copy, &skipped, &nf_full);
	CHECK(kb > 0 && skipped == 0 && nf_full > 20, "the binary as built: %zu functions (peak %ld KiB)", nf_full,
	      kb);
	snprintf(cmd, sizeof(cmd), "python3 tests/kernel/sparse_symtab.py '%s' 4", copy);
	REQUIRE(system(cmd) == 0, "sparse_symtab.py");
	kb = load_peak_rss(copy, &skipped, &nf);
	/* the old loader read all 4 GiB into memory */
	CHECK(kb > 0 && kb < (256 << 10), "a .symtab claiming 4 GiB: peak RSS %ld KiB (bound 256 MiB)", kb);
	CHECK(skipped == 1 && nf < nf_full, "the table skipped and said: skipped=%d, %zu functions (.dynsym)", skipped,
	      nf);
	unlink(copy);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_sparse_symtab);
	rmdir(dir);
	return h_done();
}
