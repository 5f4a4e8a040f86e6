// SPDX-License-Identifier: MIT
/*
 * test_debug_file.c - finding separate debug files without trusting the
 * binary (user/probes/debug_file.c), and reading other users' files
 * through a sealed copy (user/probes/trusted_file.c).
 *
 * The ELF file with a build-id is this test's own binary.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "debug_file.h"
#include "elf_symbols.h"
#include "trusted_file.h"

static char dir[256], self_exe[512]; /* this binary (a shell's /proc/self/exe is the shell's) */
static uint8_t bid[20];
static uint32_t bid_len;

static int copy_file(const char *from, const char *to)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd);
}

static void path_of(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

static void test_by_build_id(void)
{
	char d[512], p[600], *found = NULL;
	int n = snprintf(d, sizeof(d), "%s/dbg/.build-id/%02x", dir, bid[0]);
	REQUIRE(n > 0 && bid_len >= 2, "build-id of self (%u bytes)", bid_len);
	snprintf(p, sizeof(p), "%s/dbg", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/dbg/.build-id", dir);
	mkdir(p, 0755);
	mkdir(d, 0755);
	n = snprintf(p, sizeof(p), "%s/", d);
	for (uint32_t i = 1; i < bid_len; i++)
		n += snprintf(p + n, sizeof(p) - (size_t)n, "%02x", bid[i]);
	snprintf(p + n, sizeof(p) - (size_t)n, ".debug");
	/* a file of another build under the right name: refused */
	REQUIRE(copy_file("/bin/true", p) == 0, "cp");
	char dirs[600];
	snprintf(dirs, sizeof(dirs), "/nonexistent:%s/dbg", dir);
	int fd = bt_debug_file_open("/usr/bin/x", bid, bid_len, NULL, dirs, &found);
	CHECK(fd == -ENOENT && !found, "another build's file refused: %d", fd);
	if (fd >= 0)
		close(fd);
	/* the right one: found in the second directory */
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	fd = bt_debug_file_open("/usr/bin/x", bid, bid_len, NULL, dirs, &found);
	CHECK(fd >= 0 && found && strcmp(found, p) == 0, "found by build-id: %d %s", fd, found ? found : "-");
	if (fd >= 0)
		close(fd);
	free(found);
}

static void alarm_fail(int sig)
{
	(void)sig;
	static const char m[] = "  FAIL: an open blocked (FIFO)\n";
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void test_debug_link(void)
{
	char bin[512], p[600], *found = NULL;
	path_of(bin, sizeof(bin), "bin");
	mkdir(bin, 0755);
	path_of(bin, sizeof(bin), "bin/prog");
	/* a link that climbs out: never followed, even to a good file */
	path_of(p, sizeof(p), "escape.debug");
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	int fd = bt_debug_file_open(bin, NULL, 0, "../escape.debug", NULL, &found);
	CHECK(fd == -ENOENT && !found, "'../escape.debug' refused: %d", fd);
	fd = bt_debug_file_open(bin, NULL, 0, "..", NULL, &found);
	CHECK(fd == -ENOENT, "'..' refused: %d", fd);
	/* a FIFO by that name: skipped at once, never waited on */
	path_of(p, sizeof(p), "bin/pipe.debug");
	REQUIRE(mkfifo(p, 0644) == 0, "mkfifo");
	signal(SIGALRM, alarm_fail);
	alarm(5);
	fd = bt_debug_file_open(bin, NULL, 0, "pipe.debug", NULL, &found);
	alarm(0);
	CHECK(fd == -ENOENT && !found, "FIFO refused: %d", fd);
	/* a plain name next to the binary, then in its .debug/ */
	path_of(p, sizeof(p), "bin/.debug");
	mkdir(p, 0755);
	path_of(p, sizeof(p), "bin/.debug/prog.debug");
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	fd = bt_debug_file_open(bin, NULL, 0, "prog.debug", NULL, &found);
	CHECK(fd >= 0 && found && strcmp(found, p) == 0, "found in .debug/: %s", found ? found : "-");
	if (fd >= 0)
		close(fd);
	free(found);
	found = NULL;
	/* with a build-id wanted, a linked file of another build is not it */
	path_of(p, sizeof(p), "bin/other.debug");
	REQUIRE(copy_file("/bin/true", p) == 0, "cp");
	fd = bt_debug_file_open(bin, bid, bid_len, "other.debug", NULL, &found);
	CHECK(fd == -ENOENT, "linked file of another build refused: %d", fd);
}

/* Whether fd is a sealed memfd of `size` bytes. */
static int is_sealed_copy(int fd, off_t size)
{
	char l[64], t[128];
	struct stat st;
	snprintf(l, sizeof(l), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(l, t, sizeof(t) - 1);
	if (n <= 0)
		return 0;
	t[n] = 0;
	int seals = fcntl(fd, F_GET_SEALS);
	return strstr(t, "memfd:") && seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_WRITE) &&
	       fstat(fd, &st) == 0 && st.st_size == size;
}

static void test_trusted_fd(void)
{
	char p[600];
	path_of(p, sizeof(p), "users-file");
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	struct stat st;
	REQUIRE(stat(p, &st) == 0, "stat");
	int src = open(p, O_RDONLY);
	REQUIRE(src >= 0, "open");
	if (geteuid() != 0) {
		printf("# not root: cannot give a file to another user; ownership not tested\n");
		close(src);
		return;
	}
	/* root's, 0644: used as it is */
	chmod(p, 0644);
	int fd = bt_trusted_fd(src);
	CHECK(fd >= 0 && !is_sealed_copy(fd, st.st_size), "root's file used as it is");
	if (fd >= 0)
		close(fd);
	/* root's but group-writable: copied */
	chmod(p, 0664);
	fd = bt_trusted_fd(src);
	CHECK(fd >= 0 && is_sealed_copy(fd, st.st_size), "group-writable file copied");
	if (fd >= 0)
		close(fd);
	/* another user's: copied, and the copy outlives a truncation */
	chmod(p, 0644);
	REQUIRE(chown(p, 65534, 65534) == 0, "chown");
	fd = bt_trusted_fd(src);
	CHECK(fd >= 0 && is_sealed_copy(fd, st.st_size), "another user's file copied and sealed");
	if (truncate(p, 0) == 0 && fd >= 0)
		CHECK(is_sealed_copy(fd, st.st_size), "the copy keeps its size when the file is emptied");
	if (fd >= 0)
		close(fd);
	close(src);
	/* not a regular file */
	CHECK(bt_open_regular("/dev/null") == -ENOEXEC, "a device refused");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/bt-debug-file.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	ssize_t sl = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (sl <= 0)
		return 1;
	self_exe[sl] = 0;
	int self = open(self_exe, O_RDONLY);
	bid_len = self >= 0 ? bt_elf_build_id(self, bid, sizeof(bid)) : 0;
	if (self >= 0)
		close(self);
	RUN(test_by_build_id);
	RUN(test_debug_link);
	RUN(test_trusted_fd);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return h_nfail_tests ? 1 : 0;
}
