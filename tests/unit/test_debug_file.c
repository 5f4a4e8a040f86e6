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
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>
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
	int fd = bt_debug_file_open("/usr/bin/x", bid, bid_len, NULL, 0, dirs, &found);
	CHECK(fd == -ENOENT && !found, "another build's file refused: %d", fd);
	if (fd >= 0)
		close(fd);
	/* the right one: found in the second directory */
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	fd = bt_debug_file_open("/usr/bin/x", bid, bid_len, NULL, 0, dirs, &found);
	CHECK(fd >= 0 && found && strcmp(found, p) == 0, "found by build-id: %d %s", fd, found ? found : "-");
	if (fd >= 0)
		close(fd);
	free(found);
}

static uint32_t file_crc32(const char *path)
{
	size_t n;
	unsigned char *b = h_read_file(path, &n);
	uint32_t c = b ? (uint32_t)crc32(crc32(0, Z_NULL, 0), b, (uInt)n) : 0;
	free(b);
	return c;
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
	int fd = bt_debug_file_open(bin, NULL, 0, "../escape.debug", 0, NULL, &found);
	CHECK(fd == -ENOENT && !found, "'../escape.debug' refused: %d", fd);
	fd = bt_debug_file_open(bin, NULL, 0, "..", 0, NULL, &found);
	CHECK(fd == -ENOENT, "'..' refused: %d", fd);
	/* a FIFO by that name: skipped at once, never waited on */
	path_of(p, sizeof(p), "bin/pipe.debug");
	REQUIRE(mkfifo(p, 0644) == 0, "mkfifo");
	signal(SIGALRM, alarm_fail);
	alarm(5);
	fd = bt_debug_file_open(bin, NULL, 0, "pipe.debug", 0, NULL, &found);
	alarm(0);
	CHECK(fd == -ENOENT && !found, "FIFO refused: %d", fd);
	/* a plain name next to the binary, then in its .debug/ */
	path_of(p, sizeof(p), "bin/.debug");
	mkdir(p, 0755);
	path_of(p, sizeof(p), "bin/.debug/prog.debug");
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	/* no build-id: the link's CRC decides (a wrong one: not it) */
	uint32_t crc = file_crc32(p);
	fd = bt_debug_file_open(bin, NULL, 0, "prog.debug", crc + 1, NULL, &found);
	CHECK(fd == -ENOENT && !found, "wrong CRC refused: %d", fd);
	fd = bt_debug_file_open(bin, NULL, 0, "prog.debug", crc, NULL, &found);
	CHECK(fd >= 0 && found && strcmp(found, p) == 0, "found in .debug/: %s", found ? found : "-");
	if (fd >= 0)
		close(fd);
	free(found);
	found = NULL;
	/* with a build-id wanted, a linked file of another build is not it */
	path_of(p, sizeof(p), "bin/other.debug");
	REQUIRE(copy_file("/bin/true", p) == 0, "cp");
	fd = bt_debug_file_open(bin, bid, bid_len, "other.debug", 0, NULL, &found);
	CHECK(fd == -ENOENT, "linked file of another build refused: %d", fd);

	/* a link naming a 64 GiB sparse ELF file: refused by its size, not
	 * read (the old code read all of it for the CRC: minutes) */
	path_of(p, sizeof(p), "bin/huge.debug");
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	REQUIRE(fd >= 0 && write(fd, "\177ELF", 4) == 4 && ftruncate(fd, 64ll << 30) == 0, "sparse file");
	close(fd);
	signal(SIGALRM, alarm_fail);
	alarm(5);
	fd = bt_debug_file_open(bin, NULL, 0, "huge.debug", 0, NULL, &found);
	alarm(0);
	CHECK(fd == -ENOENT && !found, "a 64 GiB sparse debug link refused unread: %d", fd);
	unlink(p);
	/* a symbolic link next to the binary: not followed, even to a file
	 * of the right CRC (root would read what it names, e.g. /etc/shadow) */
	path_of(p, sizeof(p), "bin/.debug/prog.debug");
	char l[600];
	path_of(l, sizeof(l), "bin/sym.debug");
	REQUIRE(symlink(p, l) == 0, "symlink");
	fd = bt_debug_file_open(bin, NULL, 0, "sym.debug", crc, NULL, &found);
	CHECK(fd == -ENOENT && !found, "a debug link that is a symlink refused: %d %s", fd, found ? found : "");
	if (fd >= 0)
		close(fd);
	free(found);
	found = NULL;
	/* a file that is no ELF is never CRC'd, even with the right CRC */
	path_of(p, sizeof(p), "bin/text.debug");
	FILE *t = fopen(p, "w");
	REQUIRE(t && fputs("root:$6$secret:19000::::::\n", t) >= 0 && fclose(t) == 0, "text file");
	fd = bt_debug_file_open(bin, NULL, 0, "text.debug", file_crc32(p), NULL, &found);
	CHECK(fd == -ENOENT && !found, "a non-ELF debug link refused: %d", fd);
	if (fd >= 0)
		close(fd);
	free(found);
}

static void test_mappable(void)
{
	char p[600];
	path_of(p, sizeof(p), "users-file");
	REQUIRE(copy_file(self_exe, p) == 0, "cp");
	int fd = open(p, O_RDONLY);
	REQUIRE(fd >= 0, "open");
	struct statfs sf;
	int local = fstatfs(fd, &sf) == 0 && (sf.f_type == 0xEF53 || sf.f_type == 0x01021994 || sf.f_type == 0x58465342);
	if (geteuid() != 0) {
		printf("# not root: cannot give a file to another user; ownership not tested\n");
		close(fd);
		return;
	}
	chmod(p, 0644);
	CHECK(bt_file_mappable(fd) == local, "root's 0644 file on a local file system: mapped (%d)", local);
	chmod(p, 0664);
	CHECK(!bt_file_mappable(fd), "group-writable: read, not mapped");
	chmod(p, 0644);
	REQUIRE(chown(p, 65534, 65534) == 0, "chown");
	CHECK(!bt_file_mappable(fd), "another user's: read, not mapped");
	close(fd);
	/* never opened unless regular: a device, a FIFO, a link to a device */
	CHECK(bt_open_regular("/dev/null") == -ENOEXEC, "a device refused");
	path_of(p, sizeof(p), "link-to-dev");
	CHECK(symlink("/dev/null", p) == 0 && bt_open_regular(p) == -ENOEXEC, "a link to a device refused");
	path_of(p, sizeof(p), "fifo");
	CHECK(mkfifo(p, 0644) == 0 && bt_open_regular(p) == -ENOEXEC, "a FIFO refused");
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
	RUN(test_mappable);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return h_nfail_tests ? 1 : 0;
}
