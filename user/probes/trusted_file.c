// SPDX-License-Identifier: MIT
/*
 * trusted_file.c - other users' files read without trusting them (see
 * trusted_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <gelf.h>
#include "trusted_file.h"

/* An O_PATH descriptor of path: with no_links, none of its components may
 * be a symbolic link (openat2's RESOLVE_NO_SYMLINKS). */
static int open_path(const char *path, int no_links)
{
	if (!no_links)
		return open(path, O_PATH | O_CLOEXEC);
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
	return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

static int open_regular(const char *path, int no_links)
{
	struct stat st;
	char self[64];
	int p = open_path(path, no_links); /* opens nothing: no driver, no FIFO partner */

	if (p < 0)
		return -errno;
	if (fstat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(p);
		return -ENOEXEC;
	}
	/* the very inode looked at, whatever the path names now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", p);
	int fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int e = errno;
	close(p);
	return fd < 0 ? -e : fd;
}

int bt_open_regular(const char *path)
{
	return open_regular(path, 0);
}

int bt_open_regular_nolinks(const char *path)
{
	return open_regular(path, 1);
}

/* Local file systems where only root can change a file root owns without
 * group or other write. */
static int local_fs(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:     /* ext2, ext3, ext4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs */
	case 0xF2F52010: /* f2fs */
	case 0x73717368: /* squashfs (read-only) */
	case 0xE0F5E1E2: /* erofs (read-only) */
		return 1;
	default:
		return 0;
	}
}

/* fd's file is regular, root's, and no group or other may write it, on a
 * file system that also_overlay allows. */
static int root_only(int fd, int also_overlay)
{
	struct stat st;
	struct statfs sf;

	if (fstat(fd, &st) != 0 || fstatfs(fd, &sf) != 0)
		return 0;
	return S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	       (local_fs(sf.f_type) || (also_overlay && (unsigned long)sf.f_type == 0x794C7630 /* overlayfs */));
}

int bt_file_mappable(int fd)
{
	return root_only(fd, 0);
}

int bt_file_root_only(int fd)
{
	return root_only(fd, 1);
}

uint64_t bt_elf_debug_bytes(Elf *e)
{
	size_t shstrndx;
	uint64_t sum = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return UINT64_MAX;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(e, shstrndx, sh.sh_name)))
			return UINT64_MAX;
		if (strncmp(nm, ".debug_", 7) != 0 && strncmp(nm, ".zdebug_", 8) != 0)
			continue;
		if (sh.sh_type == SHT_NOBITS)
			continue;
		sum += sh.sh_size;
		if (sum > BT_UNTRUSTED_READ_MAX)
			return sum; /* before reading a compression header of it */
		GElf_Chdr ch;
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			sum += ch.ch_size;
	}
	return sum;
}
