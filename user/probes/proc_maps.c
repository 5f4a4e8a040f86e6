// SPDX-License-Identifier: MIT
/*
 * proc_maps.c - which file a probe's BINARY names: a path, a name looked up
 * in a process's memory maps (/proc/PID/maps), in the library directories or
 * on PATH; and a path this process can open for it (/proc/PID/root/...,
 * /proc/PID/map_files/... when the target sees another file system).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>
#include "proc_maps.h"
#include "util.h"

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int check_pid(int pid, char **err)
{
	char p[64], st[256];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (!f) {
		if (errno == ENOENT)
			return bt_errs(err, ESRCH, "no process with pid %d", pid);
		return bt_errs(err, errno, "cannot read %s: %s", p, strerror(errno));
	}
	if (!fgets(st, sizeof(st), f))
		st[0] = '\0';
	fclose(f);
	/* "pid (comm) S ...": a zombie has no memory left to probe. */
	char *rp = strrchr(st, ')');
	if (rp && (rp[2] == 'Z' || rp[2] == 'X'))
		return bt_errs(err, ESRCH, "process %d has already exited (zombie)", pid);
	return 0;
}

/* "Name:" and "Tgid:" of /proc/ID/status (or ID/task/ID/status). */
static int read_status(const char *p, char *name, size_t namelen, int *tgid)
{
	char line[256];
	FILE *f = fopen(p, "re");

	if (!f)
		return -errno;
	*tgid = 0;
	if (namelen)
		name[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Name:", 5) == 0 && namelen) {
			char *v = line + 5;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(name, namelen, "%s", v);
		} else if (strncmp(line, "Tgid:", 5) == 0) {
			*tgid = atoi(line + 5);
		}
	}
	fclose(f);
	return *tgid > 0 ? 0 : -EINVAL;
}

int bt_proc_tgid(int id, int *tgid, char *comm, size_t commlen, char *tcomm, size_t tcommlen, char **err)
{
	char p[64], own[64];
	int r, t2;

	if (id <= 0)
		return bt_errs(err, EINVAL, "bad pid %d", id);
	/* /proc/ID exists for thread ids too (unlisted): its status says Tgid. */
	snprintf(p, sizeof(p), "/proc/%d/status", id);
	r = read_status(p, tcomm ? tcomm : own, tcomm ? tcommlen : sizeof(own), tgid);
	if (r == -ENOENT || r == -ESRCH)
		return bt_errs(err, ESRCH, "no process or thread with id %d", id);
	if (r)
		return bt_errs(err, -r, "cannot read %s: %s", p, strerror(-r));
	if (comm && commlen) {
		snprintf(p, sizeof(p), "/proc/%d/status", *tgid);
		if (read_status(p, comm, commlen, &t2) || t2 != *tgid)
			snprintf(comm, commlen, "?");
	}
	return 0;
}

struct map_ent {
	uint64_t start, end, off;
	dev_t dev;
	ino_t ino;
	int exec;
	char path[PATH_MAX];
};

/* File-backed mappings of pid ("self" when pid <= 0). Returns the count or -errno. */
static long read_maps(int pid, struct map_ent **out, char **err)
{
	char p[64], line[PATH_MAX + 256];
	struct map_ent *v = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	if (pid > 0)
		snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	else
		snprintf(p, sizeof(p), "/proc/self/maps");
	f = fopen(p, "re");
	if (!f) {
		int e = errno;

		if (e == ENOENT && pid > 0)
			return bt_errs(err, ESRCH, "no process with pid %d", pid);
		if (e == EACCES || e == EPERM)
			return bt_errs(err, EACCES,
				    "permission denied reading %s: run as root (or with ptrace access to process %d)",
				    p, pid);
		return bt_errs(err, e, "cannot read %s: %s", p, strerror(e));
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, perms, &off, &maj, &min, &ino, &pos) < 7)
			continue;
		char *path = line + pos;
		path[strcspn(path, "\n")] = '\0';
		if (path[0] != '/')
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct map_ent *nv = realloc(v, nc * sizeof(*v));

			if (!nv) {
				free(v);
				fclose(f);
				return bt_errs(err, ENOMEM, "out of memory");
			}
			v = nv, cap = nc;
		}
		struct map_ent *m = &v[n++];
		m->start = s, m->end = e, m->off = off;
		m->dev = makedev(maj, min);
		m->ino = (ino_t)ino;
		m->exec = perms[2] == 'x';
		size_t pl = strlen(path);
		if (pl > 10 && strcmp(path + pl - 10, " (deleted)") == 0)
			path[pl - 10] = '\0';
		snprintf(m->path, sizeof(m->path), "%s", path);
	}
	int rerr = ferror(f);
	fclose(f);
	if (rerr) {
		free(v);
		return bt_errs(err, EIO, "cannot read %s", p);
	}
	if (n == 0 && pid > 0) {
		free(v);
		/* A process with no file mapping: a kernel thread, or a zombie. */
		return bt_errs(err, ESRCH, "process %d has no user memory (a kernel thread, or exiting)", pid);
	}
	*out = v;
	return (long)n;
}

/* Does file name `base` answer to `name`? "libc" matches libc.so.6 and
 * libc-2.31.so, "libc.so" matches libc.so.6, not libcrypto.so. */
static int name_matches(const char *base, const char *name)
{
	size_t ln = strlen(name);

	if (strcmp(base, name) == 0)
		return 1;
	if (strncmp(base, name, ln) != 0)
		return 0;
	const char *r = base + ln;
	if (strncmp(r, ".so", 3) == 0 && (r[3] == '\0' || r[3] == '.'))
		return 1;
	if ((r[0] == '.' || r[0] == '-') && isdigit((unsigned char)r[1]))
		return 1;
	return 0;
}

static int is_elf_file(const char *path)
{
	unsigned char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return 0;
	r = pread(fd, m, 4, 0);
	close(fd);
	return r == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

/* A path this process can open for mapping m of pid. */
static void attach_path_for(int pid, const struct map_ent *m, char *attach, size_t len)
{
	struct stat st;
	char p[PATH_MAX + 64];

	if (stat(m->path, &st) == 0 && st.st_ino == m->ino) {
		snprintf(attach, len, "%s", m->path);
		return;
	}
	if (pid > 0) {
		snprintf(p, sizeof(p), "/proc/%d/root%s", pid, m->path);
		if (stat(p, &st) == 0 && st.st_ino == m->ino) {
			snprintf(attach, len, "%s", p);
			return;
		}
		/* Deleted or replaced since it was mapped: the mapping itself. */
		snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
		if (stat(p, &st) == 0 && st.st_ino == m->ino) {
			snprintf(attach, len, "%s", p);
			return;
		}
	}
	snprintf(attach, len, "%s", m->path);
}

static const char *const lib_dirs[] = {
#if defined(__x86_64__)
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
#endif
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
};

/* The best match of `name` in dir (exact name first), an ELF file. */
static int find_in_dir(const char *dir, const char *name, char *out, size_t len)
{
	char p[PATH_MAX], best[PATH_MAX] = "";
	struct dirent *de;
	DIR *d;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (is_elf_file(p)) {
		snprintf(out, len, "%s", p);
		return 1;
	}
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!name_matches(de->d_name, name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (!is_elf_file(p)) /* libc.so is a linker script */
			continue;
		/* Prefer the shortest name: libc.so.6 over libc.so.6.debug-ish names. */
		if (!best[0] || strlen(p) < strlen(best))
			snprintf(best, sizeof(best), "%s", p);
	}
	closedir(d);
	if (!best[0])
		return 0;
	snprintf(out, len, "%s", best);
	return 1;
}

/*
 * `name` looked up on PATH as execvp(3) does (the first executable regular
 * file, in PATH order; an empty PATH entry is the current directory), with
 * symlinks followed: the real file into out. 1 if found. Scripts are passed
 * over (a pyenv shim runs some python3 ELF further on; it has no symbols).
 */
static int find_on_path(const char *name, char *out, size_t len)
{
	const char *env = getenv("PATH"), *dir, *end;
	char p[PATH_MAX], real[PATH_MAX];
	struct stat st;

	if (!env)
		env = "/usr/local/bin:/usr/bin:/bin";
	for (dir = env;; dir = end + 1) {
		size_t dl;

		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		dl = (size_t)(end - dir);
		if ((size_t)snprintf(p, sizeof(p), "%.*s%s%s", (int)dl, dir, dl ? "/" : "", name) < sizeof(p) &&
		    stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0 && realpath(p, real) &&
		    is_elf_file(real)) {
			snprintf(out, len, "%s", real);
			return 1;
		}
		if (!*end)
			return 0;
	}
}

/* Files of maps that answer to name (distinct inodes). */
static size_t maps_matches(const struct map_ent *m, size_t n, const char *name, size_t *idx, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!name_matches(base_name(m[i].path), name))
			continue;
		size_t j;
		for (j = 0; j < k; j++)
			if (m[idx[j]].ino == m[i].ino && m[idx[j]].dev == m[i].dev)
				break;
		if (j < k) {
			/* Keep the executable mapping: map_files needs its range. */
			if (m[i].exec && !m[idx[j]].exec)
				idx[j] = i;
			continue;
		}
		if (k < max)
			idx[k++] = i;
	}
	return k;
}

int bt_uprobe_find_binary(int pid, const char *binary, char *path, size_t pathlen, char *attach,
			  size_t attachlen, char **err)
{
	struct map_ent *m = NULL;
	struct stat st;
	char p[PATH_MAX + 64];
	long n;
	int r;

	if (pid > 0 && (r = check_pid(pid, err)))
		return r;
	if (!binary || !binary[0]) {
		ssize_t l;

		if (pid <= 0)
			return bt_errs(err, EINVAL,
				    "no binary given: write BINARY:FUNCTION (-u) or BINARY:PROVIDER:NAME (-U), or give -p PID "
				    "to probe that process's executable");
		snprintf(p, sizeof(p), "/proc/%d/exe", pid);
		l = readlink(p, path, pathlen - 1);
		if (l < 0) {
			if (errno == EACCES || errno == EPERM)
				return bt_errs(err, EACCES,
					    "permission denied reading %s: run as root (or with ptrace access to process %d)",
					    p, pid);
			if (errno == ENOENT)
				return bt_errs(err, ESRCH, "process %d has no executable (a kernel thread?)", pid);
			return bt_errs(err, errno, "cannot read %s: %s", p, strerror(errno));
		}
		path[l] = '\0';
		if (l > 10 && strcmp(path + l - 10, " (deleted)") == 0)
			path[l - 10] = '\0';
		struct stat s2;
		if (stat(path, &st) == 0 && stat(p, &s2) == 0 && st.st_ino == s2.st_ino && st.st_dev == s2.st_dev)
			snprintf(attach, attachlen, "%s", path);
		else
			snprintf(attach, attachlen, "%s", p);
		return 0;
	}
	if (strchr(binary, '/')) {
		snprintf(path, pathlen, "%s", binary);
		if (stat(binary, &st) == 0) {
			if (!S_ISREG(st.st_mode))
				return bt_errs(err, EINVAL, "%s is not a regular file", binary);
			snprintf(attach, attachlen, "%s", binary);
			return 0;
		}
		r = errno;
		if (pid > 0 && binary[0] == '/') {
			snprintf(p, sizeof(p), "/proc/%d/root%s", pid, binary);
			if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				snprintf(attach, attachlen, "%s", p);
				return 0;
			}
		}
		if (r == EACCES)
			return bt_errs(err, EACCES, "permission denied: %s", binary);
		return bt_errs(err, ENOENT, "no such file: %s", binary);
	}

	/* No process: a program name as the shell finds it, before any library
	 * ("python3" is /usr/bin/python3 -> python3.11, not libpython3.11.so). */
	if (pid <= 0 && find_on_path(binary, path, pathlen))
		goto found;
	/* A name: the target's maps first. */
	n = read_maps(pid, &m, err);
	if (n < 0 && pid > 0)
		return (int)n;
	if (n >= 0) {
		size_t idx[8], k;
		char alt[300];

		k = maps_matches(m, (size_t)n, binary, idx, 8);
		if (k == 0 && strncmp(binary, "lib", 3) != 0 && !strchr(binary, '.')) {
			snprintf(alt, sizeof(alt), "lib%s", binary);
			k = maps_matches(m, (size_t)n, alt, idx, 8);
		}
		if (k > 1) {
			/* An exact basename wins over prefix matches. */
			size_t exact = SIZE_MAX;
			for (size_t i = 0; i < k; i++)
				if (strcmp(base_name(m[idx[i]].path), binary) == 0)
					exact = exact == SIZE_MAX ? i : SIZE_MAX - 1;
			if (exact < SIZE_MAX - 1) {
				idx[0] = idx[exact];
				k = 1;
			}
		}
		if (k > 1) {
			char *list = NULL;

			for (size_t i = 0; i < k; i++)
				bt_strcatf(&list, "%s%s", i ? ", " : "", m[idx[i]].path);
			r = bt_errs(err, EINVAL, "'%s' matches several files mapped by %s: %s; give the path",
				 binary, pid > 0 ? "the process" : "this process", list ? list : "");
			free(list);
			free(m);
			return r;
		}
		if (k == 1) {
			snprintf(path, pathlen, "%s", m[idx[0]].path);
			attach_path_for(pid, &m[idx[0]], attach, attachlen);
			free(m);
			return 0;
		}
		if (pid > 0) {
			/* Say what the process does map. */
			char *list = NULL;
			size_t shown = 0, files = 0;

			for (long i = 0; i < n; i++) {
				int dup = 0;
				for (long j = 0; j < i && !dup; j++)
					dup = m[j].exec && m[j].ino == m[i].ino && m[j].dev == m[i].dev;
				if (dup || !m[i].exec)
					continue;
				files++;
				if (shown < 10) /* the first ten, then how many more */
					bt_strcatf(&list, "%s%s", shown++ ? ", " : "", base_name(m[i].path));
			}
			if (files > shown)
				bt_strcatf(&list, " and %zu more", files - shown);
			r = bt_errs(err, ENOENT,
				 "process %d maps no library or executable named '%s' (it maps: %s); give a path", pid,
				 binary, list ? list : "nothing executable");
			free(list);
			free(m);
			return r;
		}
		free(m);
	}
	/* No process, no program of that name: the library directories. */
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		char alt[300];

		if (find_in_dir(lib_dirs[i], binary, path, pathlen))
			goto found;
		snprintf(alt, sizeof(alt), "lib%s", binary);
		if (strncmp(binary, "lib", 3) != 0 && !strchr(binary, '.') &&
		    find_in_dir(lib_dirs[i], alt, path, pathlen))
			goto found;
	}
	return bt_errs(err, ENOENT,
		    "cannot find '%s': no such program on PATH nor library in the library directories; give its path",
		    binary);
found:
	snprintf(attach, attachlen, "%s", path);
	return 0;
}
