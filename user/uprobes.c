// SPDX-License-Identifier: MIT
/*
 * uprobes.c - `record -u/-U`: user-space probes (see uprobes.h for the spec
 * syntax and the API).
 *
 *   specs x pids --parse--> bt_uprobe_spec
 *                --resolve--> binary (maps of the pid / library dirs / PATH)
 *                             -> ELF (libelf: .symtab, .dynsym, PT_LOAD, stapsdt notes)
 *                             -> file offset, probe table row (struct bt_probe_desc)
 *                --attach--> bpf/uprobe.bpf.c (record's ring and cpu_state reused),
 *                            one BPF link per (place, pid, kind), cookie = ids + nargs
 *
 * Everything is resolved before anything is loaded or attached, so a bad
 * spec costs no BPF work; attaching is all or nothing.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "uprobes.h"
#include "kernel_features.h"
#include "uprobe.skel.h"

/* Cookie layout, mirrored from bpf/uprobe.bpf.c (BT_UC_*): keep in step. */
#define BT_UC_NONE 0xffffffu
static uint64_t bt_cookie(uint32_t id, uint32_t stamp, uint32_t nargs)
{
	return (uint64_t)(id & BT_UC_NONE) | (uint64_t)(stamp & BT_UC_NONE) << 24 |
	       (uint64_t)(nargs & 0xff) << 48;
}

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* kernel-internal, what uprobe_register() returns */
#endif

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

/* Copy with truncation check. */
static int scopy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ---- spec parsing ------------------------------------------------------------- */

static int parse_num(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int base = 10;

	if (!*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return -EINVAL;
	}
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -EINVAL;
		if (v > (UINT64_MAX - d) / (unsigned)base)
			return -ERANGE;
		v = v * (unsigned)base + d;
	}
	*out = v;
	return 0;
}

/* Index of the first ':' that is not part of "::" (C++ scopes), -1 if none. */
static long single_colon(const char *s)
{
	for (long i = 0; s[i]; i++) {
		if (s[i] != ':')
			continue;
		if (s[i + 1] == ':') {
			i++;
			continue;
		}
		return i;
	}
	return -1;
}

int bt_uprobe_parse(const char *spec, int usdt, struct bt_uprobe_spec *out, char *err, size_t errlen)
{
	const char *opt = usdt ? "-U" : "-u";
	char buf[512], *fn, *plus;
	size_t len;
	long c;

	memset(out, 0, sizeof(*out));
	out->usdt = !!usdt;
	if (!spec || !*spec)
		return fail(err, errlen, EINVAL, "%s: empty probe spec", opt);
	len = strlen(spec);
	if (len >= sizeof(buf))
		return fail(err, errlen, EINVAL, "%s '%.64s...': probe spec too long", opt, spec);
	memcpy(buf, spec, len + 1);

	if (usdt) {
		/* [BINARY:]PROVIDER:NAME, split from the right (a path may hold ':'). */
		char *n = strrchr(buf, ':'), *p;

		if (!n || n == buf || !n[1])
			return fail(err, errlen, EINVAL,
				    "-U '%s': expected BINARY:PROVIDER:NAME (e.g. -U /usr/bin/python3:python:function__entry)",
				    spec);
		*n++ = '\0';
		p = strrchr(buf, ':');
		if (p) {
			*p++ = '\0';
			if (!buf[0])
				return fail(err, errlen, EINVAL, "-U '%s': empty binary before the provider", spec);
		} else {
			p = buf;
		}
		if (!*p)
			return fail(err, errlen, EINVAL, "-U '%s': empty provider", spec);
		if (scopy(out->binary, sizeof(out->binary), p == buf ? "" : buf, p == buf ? 0 : strlen(buf)) ||
		    scopy(out->provider, sizeof(out->provider), p, strlen(p)) ||
		    scopy(out->name, sizeof(out->name), n, strlen(n)))
			return fail(err, errlen, EINVAL, "-U '%s': a part is too long", spec);
		return 0;
	}

	if (len > 7 && strcmp(buf + len - 7, "%return") == 0) {
		out->retprobe = 1;
		buf[len - 7] = '\0';
	} else if (strchr(buf, '%')) {
		return fail(err, errlen, EINVAL, "%s '%s': unknown suffix '%s' (only %%return)", opt, spec,
			    strchr(buf, '%'));
	}
	c = single_colon(buf);
	if (c >= 0) {
		buf[c] = '\0';
		if (c == 0)
			return fail(err, errlen, EINVAL, "-u '%s': empty binary before ':'", spec);
		if (scopy(out->binary, sizeof(out->binary), buf, (size_t)c))
			return fail(err, errlen, EINVAL, "-u '%s': binary path too long", spec);
		fn = buf + c + 1;
	} else {
		fn = buf;
	}
	if (!*fn)
		return fail(err, errlen, EINVAL, "-u '%s': no function (expected [BINARY:]FUNCTION[+OFFSET][%%return])",
			    spec);
	/* +OFFSET: a '+' followed by a number to the end ("operator+" has none). */
	plus = strrchr(fn, '+');
	if (plus && plus > fn && plus[1] && isdigit((unsigned char)plus[1])) {
		int r = parse_num(plus + 1, &out->offset);

		if (r)
			return fail(err, errlen, EINVAL, "-u '%s': bad offset '%s' (decimal or 0x hex)", spec, plus + 1);
		*plus = '\0';
	}
	if (fn[0] == '0' && (fn[1] == 'x' || fn[1] == 'X')) {
		if (parse_num(fn, &out->addr))
			return fail(err, errlen, EINVAL, "-u '%s': bad address '%s'", spec, fn);
		out->has_addr = 1;
		out->addr += out->offset;
		out->offset = 0;
	} else if (scopy(out->func, sizeof(out->func), fn, strlen(fn))) {
		return fail(err, errlen, EINVAL, "-u '%s': function name too long", spec);
	}
	if (out->retprobe && out->offset)
		return fail(err, errlen, EINVAL,
			    "-u '%s': a return probe goes on the function's entry; drop +%" PRIu64 " or %%return",
			    spec, out->offset);
	return 0;
}

/* ---- C++ demangling (libstdc++'s __cxa_demangle, loaded on first use) -------- */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn demangler;
static int demangler_tried;

static cxa_demangle_fn get_demangler(void)
{
	if (!demangler_tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		demangler_tried = 1;
		if (h)
			demangler = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return demangler;
}

char *bt_demangle(const char *sym)
{
	cxa_demangle_fn f;
	int status = -1;
	char *r;

	if (!sym || strncmp(sym, "_Z", 2) != 0)
		return NULL;
	f = get_demangler();
	if (!f)
		return NULL;
	r = f(sym, NULL, NULL, &status);
	if (status != 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* Compare ignoring white space ("foo::bar(int, long)" == "foo::bar(int,long)"). */
static int eq_nospace(const char *a, const char *b)
{
	for (;;) {
		while (*a == ' ')
			a++;
		while (*b == ' ')
			b++;
		if (*a != *b)
			return 0;
		if (!*a)
			return 1;
		a++, b++;
	}
}

/* Length of a demangled name without its parameter list: "ns::f(int) const"
 * -> "ns::f". Template arguments in <> are kept. */
static size_t demangled_base_len(const char *d)
{
	int angle = 0;
	size_t i;

	for (i = 0; d[i]; i++) {
		if (d[i] == '<')
			angle++;
		else if (d[i] == '>')
			angle--;
		else if (d[i] == '(' && angle <= 0 && i > 0)
			return i;
	}
	return i;
}

/* ---- suggestions ---------------------------------------------------------------- */

unsigned bt_edit_distance(const char *a, const char *b)
{
	unsigned row[256], la = (unsigned)strnlen(a, 255), lb = (unsigned)strnlen(b, 255);

	for (unsigned j = 0; j <= lb; j++)
		row[j] = j;
	for (unsigned i = 1; i <= la; i++) {
		unsigned diag = row[0], t;

		row[0] = i;
		for (unsigned j = 1; j <= lb; j++) {
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			t = row[j];
			row[j] = best;
			diag = t;
		}
	}
	return row[lb];
}

#define BT_NSUGGEST 4
struct suggest {
	char name[BT_NSUGGEST][256];
	unsigned score[BT_NSUGGEST];
	size_t n;
};

/* Offer `cand` (a symbol or demangled base name) as a suggestion for `q`. */
static void suggest_add(struct suggest *sg, const char *q, const char *cand)
{
	size_t lq = strlen(q), lc = strlen(cand);
	unsigned score, limit = lq < 6 ? 2 : (unsigned)(lq / 3);

	if (lc > 255 || !lc)
		return;
	/* Substring either way ("alloc" -> "malloc", "foo::bar" for "bar"):
	 * as good as one edit, ranked by the length difference. */
	if ((lq >= 3 && strstr(cand, q)) || (lc >= 3 && strstr(q, cand)))
		score = 1 + (unsigned)(lc > lq ? lc - lq : lq - lc) / 4;
	else if ((lc > lq ? lc - lq : lq - lc) > limit)
		return;
	else
		score = bt_edit_distance(q, cand) * 2;
	if (score > limit * 2)
		return;
	for (size_t i = 0; i < sg->n; i++)
		if (strcmp(sg->name[i], cand) == 0)
			return;
	size_t pos = sg->n;
	while (pos > 0 && sg->score[pos - 1] > score)
		pos--;
	if (pos >= BT_NSUGGEST)
		return;
	if (sg->n < BT_NSUGGEST)
		sg->n++;
	for (size_t i = sg->n - 1; i > pos; i--) {
		memcpy(sg->name[i], sg->name[i - 1], sizeof(sg->name[i]));
		sg->score[i] = sg->score[i - 1];
	}
	memcpy(sg->name[pos], cand, lc + 1);
	sg->score[pos] = score;
}

static void suggest_format(const struct suggest *sg, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sg->n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", sg->name[i]);
}

/* ---- processes and their maps ------------------------------------------------- */

static int check_pid(int pid, char *err, size_t errlen)
{
	char p[64], st[256];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	f = fopen(p, "re");
	if (!f) {
		if (errno == ENOENT)
			return fail(err, errlen, ESRCH, "no process with pid %d", pid);
		return fail(err, errlen, errno, "cannot read %s: %s", p, strerror(errno));
	}
	if (!fgets(st, sizeof(st), f))
		st[0] = '\0';
	fclose(f);
	/* "pid (comm) S ...": a zombie has no memory left to probe. */
	char *rp = strrchr(st, ')');
	if (rp && (rp[2] == 'Z' || rp[2] == 'X'))
		return fail(err, errlen, ESRCH, "process %d has already exited (zombie)", pid);
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
static long read_maps(int pid, struct map_ent **out, char *err, size_t errlen)
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
			return fail(err, errlen, ESRCH, "no process with pid %d", pid);
		if (e == EACCES || e == EPERM)
			return fail(err, errlen, EACCES,
				    "permission denied reading %s: run as root (or with ptrace access to process %d)",
				    p, pid);
		return fail(err, errlen, e, "cannot read %s: %s", p, strerror(e));
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
				return fail(err, errlen, ENOMEM, "out of memory");
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
		return fail(err, errlen, EIO, "cannot read %s", p);
	}
	if (n == 0 && pid > 0) {
		free(v);
		/* A process with no file mapping: a kernel thread, or a zombie. */
		return fail(err, errlen, ESRCH, "process %d has no user memory (a kernel thread, or exiting)", pid);
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
			  size_t attachlen, char *err, size_t errlen)
{
	struct map_ent *m = NULL;
	struct stat st;
	char p[PATH_MAX + 64];
	long n;
	int r;

	if (pid > 0 && (r = check_pid(pid, err, errlen)))
		return r;
	if (!binary || !binary[0]) {
		ssize_t l;

		if (pid <= 0)
			return fail(err, errlen, EINVAL,
				    "no binary given: write BINARY:FUNCTION (-u) or BINARY:PROVIDER:NAME (-U), or give -p PID "
				    "to probe that process's executable");
		snprintf(p, sizeof(p), "/proc/%d/exe", pid);
		l = readlink(p, path, pathlen - 1);
		if (l < 0) {
			if (errno == EACCES || errno == EPERM)
				return fail(err, errlen, EACCES,
					    "permission denied reading %s: run as root (or with ptrace access to process %d)",
					    p, pid);
			if (errno == ENOENT)
				return fail(err, errlen, ESRCH, "process %d has no executable (a kernel thread?)", pid);
			return fail(err, errlen, errno, "cannot read %s: %s", p, strerror(errno));
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
				return fail(err, errlen, EINVAL, "%s is not a regular file", binary);
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
			return fail(err, errlen, EACCES, "permission denied: %s", binary);
		return fail(err, errlen, ENOENT, "no such file: %s", binary);
	}

	/* A name: the target's maps first. */
	n = read_maps(pid, &m, err, errlen);
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
			char list[512];
			size_t o = 0;

			for (size_t i = 0; i < k && o < sizeof(list); i++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", m[idx[i]].path);
			r = fail(err, errlen, EINVAL, "'%s' matches several files mapped by %s: %s; give the path",
				 binary, pid > 0 ? "the process" : "this process", list);
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
			char list[512];
			size_t o = 0, shown = 0;

			for (long i = 0; i < n && o < sizeof(list) && shown < 10; i++) {
				int dup = 0;
				for (long j = 0; j < i && !dup; j++)
					dup = m[j].exec && m[j].ino == m[i].ino && m[j].dev == m[i].dev;
				if (dup || !m[i].exec)
					continue;
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", shown ? ", " : "",
						      base_name(m[i].path));
				shown++;
			}
			r = fail(err, errlen, ENOENT,
				 "process %d maps no library or executable named '%s' (it maps: %s); give a path", pid,
				 binary, shown ? list : "nothing executable");
			free(m);
			return r;
		}
		free(m);
	}
	/* No process: library directories, then PATH. */
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		char alt[300];

		if (find_in_dir(lib_dirs[i], binary, path, pathlen))
			goto found;
		snprintf(alt, sizeof(alt), "lib%s", binary);
		if (strncmp(binary, "lib", 3) != 0 && !strchr(binary, '.') &&
		    find_in_dir(lib_dirs[i], alt, path, pathlen))
			goto found;
	}
	const char *env = getenv("PATH");
	char pathv[4096];
	snprintf(pathv, sizeof(pathv), "%s", env && *env ? env : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	for (char *save = NULL, *dir = strtok_r(pathv, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(p, sizeof(p), "%s/%s", dir, binary);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
			snprintf(path, pathlen, "%s", p);
			goto found;
		}
	}
	return fail(err, errlen, ENOENT,
		    "cannot find '%s': no such library in the library directories nor program on PATH; give its path",
		    binary);
found:
	snprintf(attach, attachlen, "%s", path);
	return 0;
}

/* ---- ELF files --------------------------------------------------------------- */

struct efunc {
	char *name;
	char *dem; /* demangled, filled on demand */
	uint64_t vaddr, size;
	unsigned char bind, type, hidden, dem_done;
};

struct eseg {
	uint64_t vaddr, memsz, off, filesz;
	uint32_t flags;
};

struct enote {
	char provider[128], name[128];
	unsigned nargs;
};

struct elf_file {
	char attach[PATH_MAX];
	dev_t dev;
	ino_t ino;
	int has_symtab;
	struct efunc *f;
	size_t nf;
	struct eseg *seg;
	size_t nseg;
	struct enote *notes;
	size_t nnotes;
	/* a load failure is remembered with its message */
	int err;
	char msg[512];
};

static void elf_file_free(struct elf_file *ef)
{
	for (size_t i = 0; i < ef->nf; i++) {
		free(ef->f[i].name);
		free(ef->f[i].dem);
	}
	free(ef->f);
	free(ef->seg);
	free(ef->notes);
}

static int efunc_cmp(const void *a, const void *b)
{
	const struct efunc *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static int bind_rank(unsigned char bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static uint16_t host_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#elif defined(__riscv)
	return EM_RISCV;
#elif defined(__powerpc64__)
	return EM_PPC64;
#elif defined(__s390x__)
	return EM_S390;
#else
	return EM_NONE;
#endif
}

static void parse_stapsdt(Elf *e, Elf_Scn *scn, int cls, struct elf_file *ef)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off, asz = cls == ELFCLASS64 ? 8 : 4;
	GElf_Nhdr nh;

	(void)e;
	if (!d)
		return;
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		off = next;
		if (nh.n_type != 3 || nh.n_namesz != 8 || memcmp((char *)d->d_buf + name_off, "stapsdt", 8) != 0)
			continue;
		if (nh.n_descsz < 3 * asz + 3)
			continue;
		const char *desc = (const char *)d->d_buf + desc_off, *end = desc + nh.n_descsz;
		const char *prov = desc + 3 * asz, *name, *args;
		name = memchr(prov, '\0', (size_t)(end - prov));
		if (!name++ || name >= end)
			continue;
		args = memchr(name, '\0', (size_t)(end - name));
		if (!args++ || args > end)
			continue;
		unsigned na = 0;
		if (args < end) {
			const char *a = args;
			int in = 0;
			for (; a < end && *a; a++) {
				if (*a != ' ' && !in)
					na++, in = 1;
				else if (*a == ' ')
					in = 0;
			}
		}
		size_t j;
		for (j = 0; j < ef->nnotes; j++)
			if (strcmp(ef->notes[j].provider, prov) == 0 && strcmp(ef->notes[j].name, name) == 0)
				break;
		if (j < ef->nnotes)
			continue;
		struct enote *nv = realloc(ef->notes, (ef->nnotes + 1) * sizeof(*nv));
		if (!nv)
			return;
		ef->notes = nv;
		snprintf(nv[ef->nnotes].provider, sizeof(nv->provider), "%s", prov);
		snprintf(nv[ef->nnotes].name, sizeof(nv->name), "%s", name);
		nv[ef->nnotes].nargs = na;
		ef->nnotes++;
	}
}

/* Load the function symbols, loadable segments and USDT notes of `attach`. */
static int elf_load(const char *attach, const char *path, struct elf_file *ef, char *err, size_t errlen)
{
	unsigned char magic[4];
	size_t shnum = 0, shstrndx = 0, phnum = 0, cap = 0;
	unsigned char *sec_exec = NULL;
	Elf_Data *versym = NULL;
	GElf_Ehdr eh;
	Elf_Scn *scn;
	Elf *e = NULL;
	int fd, r = 0;

	fd = open(attach, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			return fail(err, errlen, EACCES, "permission denied opening %s", path);
		return fail(err, errlen, errno, "cannot open %s: %s", path, strerror(errno));
	}
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0) {
		close(fd);
		return fail(err, errlen, ENOEXEC, "%s is not an ELF file (not a program or shared library)", path);
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		close(fd);
		return fail(err, errlen, EINVAL, "libelf: %s", elf_errmsg(-1));
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		r = fail(err, errlen, ENOEXEC, "%s: unreadable ELF file (%s)", path, elf_errmsg(-1));
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		r = fail(err, errlen, ENOEXEC, "%s is an ELF %s, not a program or shared library", path,
			 eh.e_type == ET_REL ? "object file" : eh.e_type == ET_CORE ? "core dump" : "file of unknown type");
		goto out;
	}
	if (host_machine() != EM_NONE && eh.e_machine != host_machine()) {
		r = fail(err, errlen, ENOEXEC, "%s is built for another architecture (ELF machine %u)", path,
			 eh.e_machine);
		goto out;
	}
	if (elf_getshdrnum(e, &shnum) || elf_getshdrstrndx(e, &shstrndx) || elf_getphdrnum(e, &phnum)) {
		r = fail(err, errlen, ENOEXEC, "%s: corrupt ELF headers (%s)", path, elf_errmsg(-1));
		goto out;
	}
	/* Loadable segments: virtual address -> file offset. */
	ef->seg = calloc(phnum ? phnum : 1, sizeof(*ef->seg));
	sec_exec = calloc(shnum ? shnum : 1, 1);
	if (!ef->seg || !sec_exec) {
		r = fail(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		ef->seg[ef->nseg++] = (struct eseg){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags };
	}
	/* Sections: executable ones, the symbol-version table, USDT notes. */
	for (scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		const char *nm;

		if (!gelf_getshdr(scn, &sh))
			continue;
		size_t idx = elf_ndxscn(scn);
		if (idx < shnum && (sh.sh_flags & SHF_EXECINSTR))
			sec_exec[idx] = 1;
		if (sh.sh_type == SHT_SYMTAB)
			ef->has_symtab = 1;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = elf_getdata(scn, NULL);
		else if (sh.sh_type == SHT_NOTE && (nm = elf_strptr(e, shstrndx, sh.sh_name)) &&
			 strcmp(nm, ".note.stapsdt") == 0)
			parse_stapsdt(e, scn, gelf_getclass(e), ef);
	}
	/* Function symbols of .symtab and .dynsym. */
	for (scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t nsym = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < nsym; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			unsigned char type = GELF_ST_TYPE(s.st_info);
			if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || !s.st_value)
				continue;
			if (type != STT_FUNC && type != STT_GNU_IFUNC &&
			    !(type == STT_NOTYPE && s.st_shndx < shnum && sec_exec[s.st_shndx]))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			if (ef->nf == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct efunc *nf = realloc(ef->f, nc * sizeof(*nf));
				if (!nf) {
					r = fail(err, errlen, ENOMEM, "out of memory");
					goto out;
				}
				ef->f = nf, cap = nc;
			}
			struct efunc *f = &ef->f[ef->nf];
			memset(f, 0, sizeof(*f));
			f->name = strdup(name);
			if (!f->name) {
				r = fail(err, errlen, ENOMEM, "out of memory");
				goto out;
			}
			f->vaddr = s.st_value;
			f->size = s.st_size;
			f->bind = GELF_ST_BIND(s.st_info);
			f->type = type;
			/* A non-default symbol version (memcpy@GLIBC_2.2.5 next to memcpy@@GLIBC_2.14). */
			if (sh.sh_type == SHT_DYNSYM && versym && (i + 1) * sizeof(uint16_t) <= versym->d_size)
				f->hidden = (((const uint16_t *)versym->d_buf)[i] & 0x8000) != 0;
			ef->nf++;
		}
	}
	/* One entry per (name, address): .symtab repeats .dynsym. */
	if (ef->nf) {
		size_t k = 0;

		qsort(ef->f, ef->nf, sizeof(*ef->f), efunc_cmp);
		for (size_t i = 0; i < ef->nf; i++) {
			if (k && strcmp(ef->f[k - 1].name, ef->f[i].name) == 0 && ef->f[k - 1].vaddr == ef->f[i].vaddr) {
				struct efunc *p = &ef->f[k - 1];
				if (bind_rank(ef->f[i].bind) < bind_rank(p->bind))
					p->bind = ef->f[i].bind;
				if (!ef->f[i].hidden)
					p->hidden = 0;
				if (!p->size)
					p->size = ef->f[i].size;
				free(ef->f[i].name);
				continue;
			}
			ef->f[k++] = ef->f[i];
		}
		ef->nf = k;
	}
out:
	free(sec_exec);
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

static const char *efunc_dem(struct efunc *f)
{
	if (!f->dem_done) {
		f->dem = bt_demangle(f->name);
		f->dem_done = 1;
	}
	return f->dem;
}

/* Executable segment holding vaddr: the file offset, or -EFAULT/-ENOEXEC. */
static int vaddr_to_off(const struct elf_file *ef, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < ef->nseg; i++) {
		const struct eseg *s = &ef->seg[i];

		if (vaddr < s->vaddr || vaddr >= s->vaddr + s->filesz)
			continue;
		if (!(s->flags & PF_X))
			return -ENOEXEC;
		*off = vaddr - s->vaddr + s->off;
		return 0;
	}
	return -EFAULT;
}

/* The function containing vaddr (for naming addresses), NULL if none. */
static struct efunc *func_at(struct elf_file *ef, uint64_t vaddr)
{
	struct efunc *best = NULL;

	for (size_t i = 0; i < ef->nf; i++) {
		struct efunc *f = &ef->f[i];
		if (vaddr >= f->vaddr && vaddr < f->vaddr + (f->size ? f->size : 1) &&
		    (!best || bind_rank(f->bind) < bind_rank(best->bind)))
			best = f;
	}
	return best;
}

static void display_name(struct efunc *f, char *out, size_t len)
{
	const char *d = efunc_dem(f);

	snprintf(out, len, "%s", d ? d : f->name);
}

/* Find spec->func among ef's functions. */
static int find_func(struct elf_file *ef, const char *path, const struct bt_uprobe_spec *spec,
		     struct efunc **out, char *err, size_t errlen)
{
	const char *q = spec->func;
	char qbuf[256];
	struct efunc *cand[16];
	size_t nc = 0, ncand_total = 0;
	const char *at = strchr(q, '@');

	/* "malloc@GLIBC_2.2.5": the version is not kept; match the name. */
	if (at && at > q) {
		snprintf(qbuf, sizeof(qbuf), "%.*s", (int)(at - q), q);
		q = qbuf;
	}
	for (size_t i = 0; i < ef->nf; i++)
		if (strcmp(ef->f[i].name, q) == 0) {
			if (nc < 16)
				cand[nc++] = &ef->f[i];
			ncand_total++;
		}
	/* A C++ function written demangled: "ns::f(int)" exactly, or "ns::f" for
	 * every overload. */
	int via_dem = 0;
	if (!nc && strncmp(q, "_Z", 2) != 0 && get_demangler()) {
		int full = strchr(q, '(') != NULL;

		for (size_t i = 0; i < ef->nf; i++) {
			if (strncmp(ef->f[i].name, "_Z", 2) != 0)
				continue;
			const char *d = efunc_dem(&ef->f[i]);
			if (!d)
				continue;
			int ok = full ? eq_nospace(d, q)
				      : (demangled_base_len(d) == strlen(q) && strncmp(d, q, strlen(q)) == 0);
			if (!ok)
				continue;
			if (nc < 16)
				cand[nc++] = &ef->f[i];
			ncand_total++;
		}
		via_dem = nc > 0;
	}
	if (!nc) {
		struct suggest sg = { .n = 0 };
		char list[512];

		for (size_t i = 0; i < ef->nf; i++) {
			struct efunc *f = &ef->f[i];
			const char *d = strncmp(f->name, "_Z", 2) == 0 ? efunc_dem(f) : NULL;

			suggest_add(&sg, q, f->name);
			if (d) {
				/* Demangled base names suggest themselves ("foo::bar"). */
				char b[256];
				size_t bl = demangled_base_len(d);
				if (bl < sizeof(b)) {
					memcpy(b, d, bl);
					b[bl] = '\0';
					suggest_add(&sg, q, b);
				}
			}
		}
		suggest_format(&sg, list, sizeof(list));
		if (!ef->has_symtab) {
			char known[64];

			if (ef->nf)
				snprintf(known, sizeof(known), "only its %zu exported functions are named", ef->nf);
			else
				snprintf(known, sizeof(known), "no function is named");
			return fail(err, errlen, ENOENT,
				    "symbol '%s' not found in %s, which is stripped (no .symtab: %s)%s%s; give an "
				    "address instead: %s:0xADDRESS (from nm on an unstripped copy)",
				    spec->func, path, known, sg.n ? "; closest: " : "", sg.n ? list : "", path);
		}
		return fail(err, errlen, ENOENT, "symbol '%s' not found in %s%s%s", spec->func, path,
			    sg.n ? "; closest: " : "; no similar names", sg.n ? list : "");
	}
	/* Several candidates: the default version over hidden ones, global
	 * over weak over local; C++ overloads are the user's to choose. */
	struct efunc *best = cand[0];
	int distinct = 0;
	for (size_t i = 1; i < nc; i++) {
		struct efunc *c = cand[i];
		if (c->vaddr == best->vaddr)
			continue;
		if (via_dem) {
			distinct = 1;
			continue;
		}
		if (c->hidden != best->hidden) {
			if (!c->hidden)
				best = c;
			continue;
		}
		if (bind_rank(c->bind) != bind_rank(best->bind)) {
			if (bind_rank(c->bind) < bind_rank(best->bind))
				best = c;
			continue;
		}
		distinct = 1;
	}
	if (distinct) {
		char list[768];
		size_t o = 0;

		for (size_t i = 0; i < nc && o < sizeof(list); i++) {
			if (via_dem)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", efunc_dem(cand[i]));
			else
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s0x%" PRIx64, i ? ", " : "",
						      cand[i]->vaddr);
		}
		if (via_dem)
			return fail(err, errlen, EINVAL,
				    "'%s' is overloaded in %s (%zu functions): %s; write the full signature or the "
				    "mangled name",
				    spec->func, path, ncand_total, list);
		return fail(err, errlen, EINVAL,
			    "%zu different functions are named '%s' in %s (at %s); give one as %s:0xADDRESS",
			    ncand_total, spec->func, path, list, path);
	}
	*out = best;
	return 0;
}

static int resolve_sym_in(struct elf_file *ef, const char *path, const struct bt_uprobe_spec *spec,
			  struct bt_uprobe_sym *out, char *err, size_t errlen)
{
	struct efunc *f = NULL;
	char nm[128];
	int r;

	memset(out, 0, sizeof(*out));
	if (spec->has_addr) {
		out->vaddr = spec->addr;
		f = func_at(ef, spec->addr);
		if (f) {
			display_name(f, nm, sizeof(nm));
			if (spec->addr == f->vaddr)
				snprintf(out->name, sizeof(out->name), "%s", nm);
			else
				snprintf(out->name, sizeof(out->name), "%.100s+0x%" PRIx64, nm, spec->addr - f->vaddr);
			out->size = f->size;
		} else {
			snprintf(out->name, sizeof(out->name), "0x%" PRIx64, spec->addr);
		}
	} else {
		r = find_func(ef, path, spec, &f, err, errlen);
		if (r)
			return r;
		display_name(f, nm, sizeof(nm));
		if (f->type == STT_GNU_IFUNC)
			return fail(err, errlen, EINVAL,
				    "'%s' in %s is an indirect function (ifunc): the implementation is picked at run "
				    "time; probe the implementation (e.g. __%s_avx2, see nm -D) instead",
				    spec->func, path, f->name);
		if (f->size && spec->offset >= f->size)
			return fail(err, errlen, EINVAL, "offset +0x%" PRIx64 " is outside %s, which is %" PRIu64
				    " bytes long", spec->offset, nm, f->size);
		out->vaddr = f->vaddr + spec->offset;
		out->size = f->size;
		if (spec->offset)
			snprintf(out->name, sizeof(out->name), "%.100s+0x%" PRIx64, nm, spec->offset);
		else
			snprintf(out->name, sizeof(out->name), "%s", nm);
	}
	r = vaddr_to_off(ef, out->vaddr, &out->file_off);
	if (r == -ENOEXEC)
		return fail(err, errlen, EINVAL, "0x%" PRIx64 " (%s) in %s is not code (a data segment)", out->vaddr,
			    out->name, path);
	if (r)
		return fail(err, errlen, EINVAL,
			    "address 0x%" PRIx64 " is outside %s's loadable segments (addresses are as nm/objdump "
			    "print them)",
			    out->vaddr, path);
	return 0;
}

int bt_uprobe_find_symbol(const char *attach, const char *path, const struct bt_uprobe_spec *spec,
			  struct bt_uprobe_sym *out, char *err, size_t errlen)
{
	struct elf_file ef;
	int r;

	memset(&ef, 0, sizeof(ef));
	r = elf_load(attach, path, &ef, err, errlen);
	if (!r)
		r = resolve_sym_in(&ef, path, spec, out, err, errlen);
	elf_file_free(&ef);
	return r;
}

/* ---- resolution of all specs ------------------------------------------------- */

enum { K_ENTRY, K_RETURN, K_USDT };

struct rprobe {
	struct bt_probe_desc d;
	char attach[PATH_MAX];
	dev_t dev;
	ino_t ino;
	char provider[128], name[128];
};

struct resolver {
	struct elf_file *files;
	size_t nfiles;
};

static void resolver_free(struct resolver *rs)
{
	for (size_t i = 0; i < rs->nfiles; i++)
		elf_file_free(&rs->files[i]);
	free(rs->files);
}

static int resolver_get(struct resolver *rs, const char *attach, const char *path, struct elf_file **out,
			dev_t *dev, ino_t *ino, char *err, size_t errlen)
{
	struct stat st;
	struct elf_file *nf;

	if (stat(attach, &st))
		return fail(err, errlen, errno, "cannot open %s: %s", path, strerror(errno));
	*dev = st.st_dev;
	*ino = st.st_ino;
	for (size_t i = 0; i < rs->nfiles; i++) {
		if (rs->files[i].dev == st.st_dev && rs->files[i].ino == st.st_ino) {
			if (rs->files[i].err) {
				snprintf(err, errlen, "%s", rs->files[i].msg);
				return rs->files[i].err;
			}
			*out = &rs->files[i];
			return 0;
		}
	}
	nf = realloc(rs->files, (rs->nfiles + 1) * sizeof(*nf));
	if (!nf)
		return fail(err, errlen, ENOMEM, "out of memory");
	rs->files = nf;
	nf = &rs->files[rs->nfiles++];
	memset(nf, 0, sizeof(*nf));
	snprintf(nf->attach, sizeof(nf->attach), "%s", attach);
	nf->dev = st.st_dev;
	nf->ino = st.st_ino;
	nf->err = elf_load(attach, path, nf, nf->msg, sizeof(nf->msg));
	if (nf->err) {
		snprintf(err, errlen, "%s", nf->msg);
		return nf->err;
	}
	*out = nf;
	return 0;
}

static int resolve_one(struct resolver *rs, const char *text, const struct bt_uprobe_spec *s, int pid,
		       unsigned nargs, struct rprobe *rp, char *err, size_t errlen)
{
	const char *opt = s->usdt ? "-U" : "-u";
	char path[PATH_MAX], attach[PATH_MAX], msg[1024];
	struct elf_file *ef = NULL;
	int r;

	memset(rp, 0, sizeof(*rp));
	r = bt_uprobe_find_binary(pid, s->binary, path, sizeof(path), attach, sizeof(attach), msg, sizeof(msg));
	if (!r)
		r = resolver_get(rs, attach, path, &ef, &rp->dev, &rp->ino, msg, sizeof(msg));
	if (r)
		return fail(err, errlen, -r, "%s '%s': %s", opt, text, msg);
	rp->d.pid = pid > 0 ? pid : -1;
	snprintf(rp->d.spec, sizeof(rp->d.spec), "%s", text);
	snprintf(rp->d.binary, sizeof(rp->d.binary), "%.255s", path);
	snprintf(rp->attach, sizeof(rp->attach), "%s", attach);
	if (s->usdt) {
		size_t j;
		struct suggest sg = { .n = 0 };
		char want[260], list[1100], nm[260];

		for (j = 0; j < ef->nnotes; j++)
			if (strcmp(ef->notes[j].provider, s->provider) == 0 && strcmp(ef->notes[j].name, s->name) == 0)
				break;
		if (j == ef->nnotes) {
			if (!ef->nnotes)
				return fail(err, errlen, ENOENT, "-U '%s': %s has no USDT probes (no .note.stapsdt)", text,
					    path);
			snprintf(want, sizeof(want), "%s:%s", s->provider, s->name);
			for (j = 0; j < ef->nnotes; j++) {
				snprintf(nm, sizeof(nm), "%s:%s", ef->notes[j].provider, ef->notes[j].name);
				suggest_add(&sg, want, nm);
			}
			if (!sg.n) /* nothing close: list a few */
				for (j = 0; j < ef->nnotes && sg.n < BT_NSUGGEST; j++)
					snprintf(sg.name[sg.n++], sizeof(sg.name[0]), "%.127s:%.127s", ef->notes[j].provider,
						 ef->notes[j].name);
			suggest_format(&sg, list, sizeof(list));
			return fail(err, errlen, ENOENT, "-U '%s': no USDT probe %s in %s (it has %zu; %s: %s)", text,
				    want, path, ef->nnotes, sg.n < ef->nnotes ? "closest" : "all", list);
		}
		rp->d.flags = BT_PROBE_USDT;
		rp->d.nargs = ef->notes[j].nargs < nargs ? ef->notes[j].nargs : nargs;
		snprintf(rp->d.func, sizeof(rp->d.func), "%.63s:%.63s", s->provider, s->name);
		snprintf(rp->provider, sizeof(rp->provider), "%s", s->provider);
		snprintf(rp->name, sizeof(rp->name), "%s", s->name);
		return 0;
	}
	struct bt_uprobe_sym sym;
	r = resolve_sym_in(ef, path, s, &sym, msg, sizeof(msg));
	if (r)
		return fail(err, errlen, -r, "%s '%s': %s", opt, text, msg);
	rp->d.flags = s->retprobe ? BT_PROBE_RETURN : 0;
	rp->d.nargs = s->retprobe ? 0 : nargs;
	rp->d.offset = sym.file_off;
	snprintf(rp->d.func, sizeof(rp->d.func), "%s", sym.name);
	return 0;
}

static int resolve_all(const struct bt_uprobe_opts *o, struct rprobe **out, size_t *nout, char *err,
		       size_t errlen)
{
	struct resolver rs = { 0 };
	size_t ntext = o->nspecs + o->nusdts, npid = o->npids ? o->npids : 1, n = 0;
	unsigned nargs = o->nargs < 0 ? BT_UPROBE_DEFAULT_NARGS : (unsigned)o->nargs;
	struct rprobe *v;
	int r = 0;

	*out = NULL;
	*nout = 0;
	if (o->nargs > BT_MAX_UARGS)
		return fail(err, errlen, EINVAL, "--uargs %d: at most %d arguments", o->nargs, BT_MAX_UARGS);
	if (!ntext)
		return fail(err, errlen, EINVAL, "no probes given");
	if (ntext * npid >= BT_UC_NONE)
		return fail(err, errlen, E2BIG, "too many probes (%zu)", ntext * npid);
	for (size_t i = 0; i < o->npids; i++)
		if (o->pids[i] <= 0)
			return fail(err, errlen, EINVAL, "bad pid %d", o->pids[i]);
	v = calloc(ntext * npid, sizeof(*v));
	if (!v)
		return fail(err, errlen, ENOMEM, "out of memory");
	for (size_t t = 0; t < ntext && !r; t++) {
		int usdt = t >= o->nspecs;
		const char *text = usdt ? o->usdts[t - o->nspecs] : o->specs[t];
		struct bt_uprobe_spec s;

		r = bt_uprobe_parse(text, usdt, &s, err, errlen);
		for (size_t p = 0; p < npid && !r; p++) {
			int dup = 0;
			for (size_t q = 0; q < p && !dup; q++)
				dup = o->pids[q] == o->pids[p];
			if (dup) /* -p 12 -p 12: once */
				continue;
			r = resolve_one(&rs, text, &s, o->npids ? o->pids[p] : -1, nargs, &v[n], err, errlen);
			if (!r) {
				v[n].d.id = (uint32_t)n;
				n++;
			}
		}
	}
	resolver_free(&rs);
	if (r) {
		free(v);
		return r;
	}
	*out = v;
	*nout = n;
	return 0;
}

int bt_uprobes_resolve(const struct bt_uprobe_opts *o, struct bt_probe_desc **table, size_t *n, char *err,
		       size_t errlen)
{
	struct rprobe *v;
	size_t nv;
	int r = resolve_all(o, &v, &nv, err, errlen);

	if (r)
		return r;
	*table = calloc(nv ? nv : 1, sizeof(**table));
	if (!*table) {
		free(v);
		return fail(err, errlen, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nv; i++)
		(*table)[i] = v[i].d;
	*n = nv;
	free(v);
	return 0;
}

/* ---- load and attach -------------------------------------------------------------- */

struct uatt {
	int kind, pid;
	uint32_t id, stamp, nargs;
	size_t probe; /* the rprobe it serves (attach path, names) */
	struct bpf_link *link;
};

struct target {
	int pid, pidfd, ended, reported;
};

struct bt_uprobes {
	struct uprobe_bpf *skel;
	struct rprobe *rp;
	struct bt_probe_desc *table;
	size_t n;
	struct uatt *att;
	size_t natt;
	struct target *tg; /* under lock: the dump thread and the main loop both look */
	size_t ntg;
	pthread_mutex_t lock;
	int ring_fd;  /* the one ring every CPU writes into, -1: the caller's per-CPU rings */
	int own_ring; /* ring_fd when made here (closed by destroy), else -1 */
};

static int same_place(const struct rprobe *a, const struct rprobe *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->d.offset == b->d.offset && a->d.pid == b->d.pid;
}

/* Entry attachments (emitting, stamping or both), return and USDT ones. */
static int plan(struct bt_uprobes *u, char *err, size_t errlen)
{
	u->att = calloc(u->n * 2 + 1, sizeof(*u->att));
	if (!u->att)
		return fail(err, errlen, ENOMEM, "out of memory");
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		if (d->flags & (BT_PROBE_USDT | BT_PROBE_RETURN))
			continue;
		u->att[u->natt++] = (struct uatt){ K_ENTRY, d->pid, d->id, BT_UC_NONE, d->nargs, i, NULL };
	}
	/* Every return probe needs an entry stamp: share an entry probe at the
	 * same place (for the same pid) if there is one without a stamp yet. */
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		size_t j;
		if (!(d->flags & BT_PROBE_RETURN))
			continue;
		for (j = 0; j < u->natt; j++)
			if (u->att[j].kind == K_ENTRY && u->att[j].stamp == BT_UC_NONE &&
			    same_place(&u->rp[u->att[j].probe], &u->rp[i]))
				break;
		if (j < u->natt)
			u->att[j].stamp = d->id;
		else
			u->att[u->natt++] = (struct uatt){ K_ENTRY, d->pid, BT_UC_NONE, d->id, 0, i, NULL };
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct bt_probe_desc *d = &u->rp[i].d;
		if (d->flags & BT_PROBE_RETURN)
			u->att[u->natt++] = (struct uatt){ K_RETURN, d->pid, d->id, d->id, 0, i, NULL };
		else if (d->flags & BT_PROBE_USDT)
			u->att[u->natt++] = (struct uatt){ K_USDT, d->pid, d->id, BT_UC_NONE, d->nargs, i, NULL };
	}
	return 0;
}

static int attach_one(struct bt_uprobes *u, struct uatt *a, char *err, size_t errlen)
{
	const struct rprobe *rp = &u->rp[a->probe];
	const char *what = rp->d.func;
	int e;

	if (a->kind == K_USDT) {
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = bt_cookie(a->id, a->stamp, a->nargs));
		a->link = bpf_program__attach_usdt(u->skel->progs.bt_usdt, a->pid, rp->attach, rp->provider, rp->name,
						   &uo);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, po, .bpf_cookie = bt_cookie(a->id, a->stamp, a->nargs),
			    .retprobe = a->kind == K_RETURN);
		a->link = bpf_program__attach_uprobe_opts(
			a->kind == K_RETURN ? u->skel->progs.bt_uprobe_return : u->skel->progs.bt_uprobe_entry,
			a->pid, rp->attach, rp->d.offset, &po);
	}
	if (a->link)
		return 0;
	e = errno ? errno : EINVAL;
	a->link = NULL;
	const char *opt = rp->d.flags & BT_PROBE_USDT ? "-U" : "-u";
	if (a->pid > 0 && (e == ESRCH || kill(a->pid, 0) != 0))
		return fail(err, errlen, ESRCH, "%s '%s': process %d exited before the probe was attached", opt,
			    rp->d.spec, a->pid);
	if (e == EPERM || e == EACCES)
		return fail(err, errlen, e,
			    "%s '%s': permission denied attaching to %s: run as root (or with CAP_BPF, CAP_PERFMON and "
			    "ptrace access to the process)",
			    opt, rp->d.spec, rp->d.binary);
	if (e == ENOTSUPP || e == EINVAL || e == EOPNOTSUPP)
		return fail(err, errlen, e,
			    "%s '%s': the kernel cannot probe %s at %s+0x%" PRIx64 ": not an instruction boundary, or "
			    "an instruction uprobes cannot step over; try the function entry or another offset",
			    opt, rp->d.spec, what, rp->d.binary, (uint64_t)rp->d.offset);
	if (e == E2BIG && a->kind == K_USDT)
		return fail(err, errlen, e, "-U '%s': too many USDT probe sites", rp->d.spec);
	return fail(err, errlen, e, "%s '%s': cannot attach to %s in %s: %s", opt, rp->d.spec, what, rp->d.binary,
		    strerror(e));
}

static int open_targets(struct bt_uprobes *u, const struct bt_uprobe_opts *o)
{
	u->tg = calloc(o->npids ? o->npids : 1, sizeof(*u->tg));
	if (!u->tg)
		return -ENOMEM;
	for (size_t i = 0; i < o->npids; i++) {
		size_t j;
		for (j = 0; j < u->ntg; j++)
			if (u->tg[j].pid == o->pids[i])
				break;
		if (j < u->ntg)
			continue;
		struct target *t = &u->tg[u->ntg++];
		t->pid = o->pids[i];
#ifdef SYS_pidfd_open
		t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
#else
		t->pidfd = -1;
#endif
	}
	return 0;
}

/* Called with u->lock held. */
static void check_targets(struct bt_uprobes *u)
{
	for (size_t i = 0; i < u->ntg; i++) {
		struct target *t = &u->tg[i];

		if (t->ended)
			continue;
		if (t->pidfd >= 0) {
			struct pollfd p = { .fd = t->pidfd, .events = POLLIN };
			t->ended = poll(&p, 1, 0) == 1;
		} else {
			t->ended = kill(t->pid, 0) != 0 && errno == ESRCH;
		}
	}
}

/*
 * Before load: what `rings` becomes. rings_fd is record's array of per-CPU
 * rings (reused as it is), or one ring buffer (given, or made here when
 * rings_fd < 0) that every CPU's slot will point to (fill_rings, after load).
 */
static int setup_rings(struct bt_uprobes *u, int rings_fd, char *err, size_t errlen)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int r, ncpus;

	if (rings_fd >= 0) {
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(rings_fd, &info, &len))
			return fail(err, errlen, errno, "cannot inspect the ring buffer map: %s", strerror(errno));
		if (info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS) {
			r = bpf_map__reuse_fd(u->skel->maps.rings, rings_fd);
			if (r)
				return fail(err, errlen, -r, "cannot share the ring buffers with the uprobe programs: %s",
					    strerror(-r));
			return 0;
		}
		if (info.type != BPF_MAP_TYPE_RINGBUF)
			return fail(err, errlen, EINVAL, "map %d is neither a ring buffer nor an array of them",
				    rings_fd);
		u->ring_fd = rings_fd;
	} else {
		u->own_ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bt_uprobe_ring", 0, 0,
					     BT_UPROBE_RING_SIZE, NULL);
		if (u->own_ring < 0)
			return fail(err, errlen, errno, "cannot create the ring buffer: %s", strerror(errno));
		u->ring_fd = u->own_ring;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return fail(err, errlen, ncpus ? -ncpus : EINVAL, "cannot count the possible CPUs: %s",
			    strerror(ncpus ? -ncpus : EINVAL));
	r = bpf_map__set_max_entries(u->skel->maps.rings, (uint32_t)ncpus);
	if (r)
		return fail(err, errlen, -r, "cannot size the array of ring buffers: %s", strerror(-r));
	return 0;
}

/* After load: with one ring, every CPU writes into it. */
static int fill_rings(struct bt_uprobes *u, char *err, size_t errlen)
{
	const struct bpf_map *m = u->skel->maps.rings;

	if (u->ring_fd < 0)
		return 0;
	for (__u32 c = 0; c < bpf_map__max_entries(m); c++)
		if (bpf_map_update_elem(bpf_map__fd(m), &c, &u->ring_fd, BPF_ANY))
			return fail(err, errlen, errno, "cannot install the ring buffer: %s", strerror(errno));
	return 0;
}

struct bt_uprobes *bt_uprobes_open(const struct bt_uprobe_opts *o, int rings_fd, int cpu_state_fd, char *err,
				   size_t errlen)
{
	struct bt_uprobes *u = calloc(1, sizeof(*u));
	int r, nret = 0, nusdt = 0, nentry = 0;

	if (!u) {
		fail(err, errlen, ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	u->ring_fd = u->own_ring = -1;
	pthread_mutex_init(&u->lock, NULL);
	r = resolve_all(o, &u->rp, &u->n, err, errlen);
	if (r)
		goto fail_out;
	u->table = calloc(u->n, sizeof(*u->table));
	if (!u->table || open_targets(u, o)) {
		r = fail(err, errlen, ENOMEM, "out of memory");
		goto fail_out;
	}
	for (size_t i = 0; i < u->n; i++)
		u->table[i] = u->rp[i].d;
	r = plan(u, err, errlen);
	if (r)
		goto fail_out;
	for (size_t i = 0; i < u->natt; i++) {
		nret += u->att[i].kind == K_RETURN;
		nusdt += u->att[i].kind == K_USDT;
		nentry += u->att[i].kind == K_ENTRY;
	}

	r = bt_kernel_check_uprobes(err, errlen);
	if (r)
		goto fail_out;
	u->skel = uprobe_bpf__open();
	if (!u->skel) {
		r = fail(err, errlen, errno, "cannot open the uprobe BPF object: %s", strerror(errno));
		goto fail_out;
	}
	u->skel->rodata->wakeup_bytes = o->wakeup_bytes;
	u->skel->rodata->max_args = o->nargs < 0 ? BT_UPROBE_DEFAULT_NARGS : (uint32_t)o->nargs;
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_empty, false);
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_entry, nentry > 0);
	bpf_program__set_autoload(u->skel->progs.bt_uprobe_return, nret > 0);
	bpf_program__set_autoload(u->skel->progs.bt_usdt, nusdt > 0);
	bpf_map__set_max_entries(u->skel->maps.stamps, nret ? (o->max_threads ? o->max_threads : 8192) : 1);
	if (nusdt)
		bpf_map__set_max_entries(u->skel->maps.__bpf_usdt_specs, 256 + 64 * (uint32_t)nusdt);
	r = setup_rings(u, rings_fd, err, errlen);
	if (r)
		goto fail_out;
	if (cpu_state_fd >= 0 && (r = bpf_map__reuse_fd(u->skel->maps.cpu_state, cpu_state_fd))) {
		r = fail(err, errlen, -r, "cannot share the cpu_state map with the uprobe programs: %s", strerror(-r));
		goto fail_out;
	}
	r = uprobe_bpf__load(u->skel);
	if (r) {
		int e = -r;
		if (e == EPERM || e == EACCES)
			r = fail(err, errlen, e, "permission denied loading the uprobe programs: run as root (or with "
				 "CAP_BPF and CAP_PERFMON)");
		else
			r = fail(err, errlen, e, "cannot load the uprobe programs: %s (rerun with -vv for libbpf's log)",
				 strerror(e));
		goto fail_out;
	}
	r = fill_rings(u, err, errlen);
	if (r)
		goto fail_out;
	for (size_t i = 0; i < u->natt; i++) {
		r = attach_one(u, &u->att[i], err, errlen);
		if (r)
			goto fail_out;
	}
	return u;

fail_out:
	bt_uprobes_destroy(u);
	errno = r < 0 ? -r : EINVAL;
	return NULL;
}

const struct bt_probe_desc *bt_uprobes_table(struct bt_uprobes *u, size_t *n)
{
	pthread_mutex_lock(&u->lock);
	check_targets(u);
	for (size_t i = 0; i < u->n; i++) {
		u->table[i].flags &= ~(uint32_t)BT_PROBE_ENDED;
		for (size_t j = 0; j < u->ntg; j++)
			if (u->tg[j].ended && u->tg[j].pid == u->table[i].pid)
				u->table[i].flags |= BT_PROBE_ENDED;
	}
	pthread_mutex_unlock(&u->lock);
	*n = u->n;
	return u->table;
}

size_t bt_uprobes_nprobes(const struct bt_uprobes *u)
{
	return u->n;
}

size_t bt_uprobes_nattached(const struct bt_uprobes *u)
{
	size_t k = 0;

	for (size_t i = 0; i < u->natt; i++)
		k += u->att[i].link != NULL;
	return k;
}

int bt_uprobes_prog_stats(const struct bt_uprobes *u, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_program *p;

	*run_ns = *run_cnt = 0;
	bpf_object__for_each_program(p, u->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return -errno;
		*run_ns += info.run_time_ns;
		*run_cnt += info.run_cnt;
	}
	return 0;
}

int bt_uprobes_ringbuf_fd(const struct bt_uprobes *u)
{
	return u->ring_fd;
}

int bt_uprobes_rings_fd(const struct bt_uprobes *u)
{
	return bpf_map__fd(u->skel->maps.rings);
}

int bt_uprobes_cpu_state_fd(const struct bt_uprobes *u)
{
	return bpf_map__fd(u->skel->maps.cpu_state);
}

size_t bt_uprobes_poll_exited(struct bt_uprobes *u, int *pids, size_t max)
{
	size_t k = 0;

	pthread_mutex_lock(&u->lock);
	check_targets(u);
	for (size_t i = 0; i < u->ntg; i++) {
		struct target *t = &u->tg[i];
		if (t->ended && !t->reported && k < max) {
			t->reported = 1;
			pids[k++] = t->pid;
		}
	}
	pthread_mutex_unlock(&u->lock);
	return k;
}

void bt_uprobes_detach(struct bt_uprobes *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->natt; i++) {
		bpf_link__destroy(u->att[i].link);
		u->att[i].link = NULL;
	}
}

void bt_uprobes_destroy(struct bt_uprobes *u)
{
	if (!u)
		return;
	bt_uprobes_detach(u);
	uprobe_bpf__destroy(u->skel);
	if (u->own_ring >= 0)
		close(u->own_ring);
	for (size_t i = 0; i < u->ntg; i++)
		if (u->tg[i].pidfd >= 0)
			close(u->tg[i].pidfd);
	free(u->tg);
	free(u->att);
	free(u->table);
	free(u->rp);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
