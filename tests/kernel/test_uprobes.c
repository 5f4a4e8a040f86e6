// SPDX-License-Identifier: MIT
/*
 * test_uprobes.c - user-space probes (user/probes/uprobes.c, bpf/uprobe.bpf.c).
 *
 * Without root: spec parsing, library lookup in our own maps, ELF symbol
 * lookup (C, C++ mangled and demangled, suggestions, stripped binaries,
 * addresses), every resolution error.
 *
 * As root, for real on the running kernel: a ring buffer and a cpu_state map
 * are created here as record's loader would, bt_uprobes_open() attaches to
 * build/tests/uprobe_target processes (see that file for the workload), the
 * events are read back with ring_buffer__consume() and checked exactly:
 * counts, arguments, return values, durations, order per thread, the pid
 * filter, attach-then-start without a pid, several pids, USDT, libc, the
 * target exiting, and all-or-nothing attachment.
 *
 * BT_VERBOSE=1 shows libbpf's warnings.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "harness.h"
#include "events.h"
#include "uprobes.h"
#include "util.h"

/* The workload of tests/workloads/uprobe_target.c. */
#define THREADS 2
#define N_ADD 50
#define N_ARGS6 5
#define FIB_N 6
#define FIB_CALLS 15 /* calls of bt_fib(6): fib(6) = 8 -> 2 * 8 - 1 */
#define N_SLEEP 3
#define SLEEP_US 2000
#define N_BAZ 7
#define N_BAR_INT 3
#define N_BAR_LONG 4
#define N_MALLOC 9
#define MALLOC_SIZE 4242
#define N_TICK 20
/* bt_ident's second instruction (ret), in hex without 0x. */
#if defined(__aarch64__)
#define IDENT_RET "4"
#else
#define IDENT_RET "3"
#endif

static char target[PATH_MAX / 2];
static int verbose, is_root;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (verbose && level != LIBBPF_DEBUG)
		vfprintf(stderr, fmt, ap);
	return 0;
}

static int contains(const char *s, const char *sub)
{
	return s && strstr(s, sub) != NULL;
}

/* ---- spec parsing -------------------------------------------------------------- */

static void test_parse(void)
{
	struct bt_uprobe_spec s;
	char *err = NULL;

	REQUIRE(bt_uprobe_parse("myfunc", 0, &s, &err) == 0, "%s", err);
	CHECK(!s.binary[0] && strcmp(s.func, "myfunc") == 0 && !s.retprobe && !s.offset, "myfunc");

	REQUIRE(bt_uprobe_parse("libc:malloc%return", 0, &s, &err) == 0, "%s", err);
	CHECK(strcmp(s.binary, "libc") == 0 && strcmp(s.func, "malloc") == 0 && s.retprobe, "libc:malloc%%return");

	REQUIRE(bt_uprobe_parse("/usr/bin/x:f+0x10", 0, &s, &err) == 0, "%s", err);
	CHECK(strcmp(s.binary, "/usr/bin/x") == 0 && strcmp(s.func, "f") == 0 && s.offset == 16, "offset");
	REQUIRE(bt_uprobe_parse("f+12", 0, &s, &err) == 0, "%s", err);
	CHECK(s.offset == 12, "decimal offset %llu", (unsigned long long)s.offset);

	/* C++ scopes are not binary separators. */
	REQUIRE(bt_uprobe_parse("foo::bar", 0, &s, &err) == 0, "%s", err);
	CHECK(!s.binary[0] && strcmp(s.func, "foo::bar") == 0, "foo::bar -> '%s' '%s'", s.binary, s.func);
	REQUIRE(bt_uprobe_parse("libx:ns::C::m(int, long)%return", 0, &s, &err) == 0, "%s", err);
	CHECK(strcmp(s.binary, "libx") == 0 && strcmp(s.func, "ns::C::m(int, long)") == 0 && s.retprobe,
	      "'%s' '%s'", s.binary, s.func);
	REQUIRE(bt_uprobe_parse("libx:operator+", 0, &s, &err) == 0, "%s", err);
	CHECK(strcmp(s.func, "operator+") == 0 && !s.offset, "operator+");

	REQUIRE(bt_uprobe_parse("bin:0x1139", 0, &s, &err) == 0, "%s", err);
	CHECK(s.has_addr && s.addr == 0x1139 && !s.func[0], "address");

	REQUIRE(bt_uprobe_parse("bin:prov:name", 1, &s, &err) == 0, "%s", err);
	CHECK(s.usdt && strcmp(s.binary, "bin") == 0 && strcmp(s.provider, "prov") == 0 && strcmp(s.name, "name") == 0,
	      "usdt");
	REQUIRE(bt_uprobe_parse("prov:name", 1, &s, &err) == 0, "%s", err);
	CHECK(!s.binary[0] && strcmp(s.provider, "prov") == 0, "usdt without binary");

	/* Errors: one line each. */
	CHECK(bt_uprobe_parse("", 0, &s, &err) == -EINVAL, "empty");
	CHECK(bt_uprobe_parse("libc:", 0, &s, &err) == -EINVAL && contains(err, "no function"), "%s", err);
	CHECK(bt_uprobe_parse(":f", 0, &s, &err) == -EINVAL, "empty binary");
	CHECK(bt_uprobe_parse("f%entry", 0, &s, &err) == -EINVAL && contains(err, "%return"), "%s", err);
	CHECK(bt_uprobe_parse("f+0x10%return", 0, &s, &err) == -EINVAL && contains(err, "entry"), "%s",
	      err);
	CHECK(bt_uprobe_parse("f+0xzz", 0, &s, &err) == -EINVAL, "bad offset");
	CHECK(bt_uprobe_parse("nameonly", 1, &s, &err) == -EINVAL && contains(err, "PROVIDER"), "%s", err);
	CHECK(!strchr(err, '\n'), "one line");
}

static void test_edit_distance(void)
{
	CHECK(bt_edit_distance("malloc", "malloc") == 0, "same");
	CHECK(bt_edit_distance("mallok", "malloc") == 1, "one");
	CHECK(bt_edit_distance("", "abc") == 3, "empty");
	CHECK(bt_edit_distance("kitten", "sitting") == 3, "kitten");
}

/* ---- resolution ------------------------------------------------------------------ */

static void test_find_binary(void)
{
	char path[PATH_MAX], att[PATH_MAX];
	char *err = NULL;
	int r;

	/* Our own maps: "libc" is the libc.so.6 we run on. */
	r = bt_uprobe_find_binary(getpid(), "libc", path, sizeof(path), att, sizeof(att), &err);
	REQUIRE(r == 0, "libc in own maps: %s", err);
	CHECK(contains(path, "/libc.so.6") || contains(path, "/libc-"), "libc -> %s", path);
	r = bt_uprobe_find_binary(getpid(), "c", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && contains(path, "libc"), "c -> %s (%s)", path, err);
	r = bt_uprobe_find_binary(getpid(), "libelf", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && contains(path, "libelf"), "libelf -> %s (%s)", path, err);
	char self[PATH_MAX / 2] = "", *base;
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[l > 0 ? l : 0] = '\0';
	base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	r = bt_uprobe_find_binary(getpid(), base, path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && strcmp(path, self) == 0, "own executable by name -> %s (%s)", path, err);
	/* The executable of a pid. */
	r = bt_uprobe_find_binary(getpid(), "", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && strcmp(path, self) == 0, "exe -> %s (%s)", path, err);

	/* Not mapped: the message lists what is. */
	r = bt_uprobe_find_binary(getpid(), "libnothere", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == -ENOENT && contains(err, "libnothere") && contains(err, "libc"), "%d %s", r, err);
	/* No pid: the library directories. */
	r = bt_uprobe_find_binary(-1, "libc", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && contains(path, "libc.so.6"), "no pid libc -> %s (%s)", path, err);
	r = bt_uprobe_find_binary(-1, "", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == -EINVAL && contains(err, "-p"), "no binary, no pid: %s", err);
	r = bt_uprobe_find_binary(-1, "/no/such/file", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == -ENOENT && contains(err, "no such file"), "%s", err);
	r = bt_uprobe_find_binary(0x7ffffff0, "libc", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == -ESRCH && contains(err, "no process with pid"), "%d %s", r, err);

	/* No pid: a program name as the shell finds it, before the libraries.
	 * "elf" is also libelf.so.1 (our maps, the library directories). In a
	 * PATH of ours: dir1/elf, a shell script (passed over, as it has no
	 * code to probe), then dir2/elf -> elf-1.0 (a symlink, followed), then
	 * dir3/elf (not reached). */
	char dir[] = "/tmp/bt-path-XXXXXX", f[PATH_MAX], cmd[PATH_MAX * 3], npath[PATH_MAX * 3], real[PATH_MAX];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	REQUIRE(mkdtemp(dir), "mkdtemp");
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; mkdir d1 d2 d3; printf '#!/bin/sh\nexec true\n' >d1/elf; chmod +x d1/elf; "
		 "cp '%s' d2/elf-1.0; ln -s elf-1.0 d2/elf; cp '%s' d3/elf",
		 dir, target, target);
	REQUIRE(system(cmd) == 0, "%s", cmd);
	snprintf(npath, sizeof(npath), "%s/d1:%s/d2:%s/d3:/usr/bin:/bin", dir, dir, dir);
	setenv("PATH", npath, 1);
	r = bt_uprobe_find_binary(-1, "elf", path, sizeof(path), att, sizeof(att), &err);
	snprintf(f, sizeof(f), "%s/d2/elf-1.0", dir);
	CHECK(r == 0 && realpath(f, real) && strcmp(path, real) == 0 && strcmp(att, real) == 0,
	      "no pid: 'elf' is the program on PATH, symlink followed: %s (want %s) %s", path, f, err);
	r = bt_uprobe_find_binary(-1, "libelf", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && contains(path, "/libelf"), "no pid: 'libelf' is still the library: %s %s", path, err);
	/* With a pid, names are what the process maps, PATH or not. */
	r = bt_uprobe_find_binary(getpid(), "elf", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r == 0 && contains(path, "libelf"), "pid: 'elf' is the libelf it maps: %s %s", path, err);
	if (saved) {
		setenv("PATH", saved, 1);
		free(saved);
	} else {
		unsetenv("PATH");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0, "cleanup");
	/* python3 (install-deps): a symlink on Debian, never libpython3.x.so. */
	r = bt_uprobe_find_binary(-1, "python3", path, sizeof(path), att, sizeof(att), &err);
	CHECK(r != 0 || !contains(path, "libpython"), "python3 -> %s %s", path, err);
}

/* Reading another user's maps without privileges. */
static void test_permission_denied(void)
{
	int st, pfd[2];
	pid_t c;

	if (!is_root) {
		char path[PATH_MAX], att[PATH_MAX];
		char *err = NULL;
		int r = bt_uprobe_find_binary(1, "libc", path, sizeof(path), att, sizeof(att), &err);
		CHECK(r == -EACCES && contains(err, "permission denied"), "%d %s", r, err);
		return;
	}
	REQUIRE(pipe(pfd) == 0, "pipe");
	c = fork();
	REQUIRE(c >= 0, "fork");
	if (c == 0) {
		char path[PATH_MAX], att[PATH_MAX];
		char *err = NULL;
		int r;

		close(pfd[0]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		r = bt_uprobe_find_binary(1, "libc", path, sizeof(path), att, sizeof(att), &err);
		if (write(pfd[1], err ? err : "", err ? strlen(err) + 1 : 1) < 0)
			_exit(3);
		_exit(r == -EACCES ? 0 : 1);
	}
	close(pfd[1]);
	char msg[512] = "";
	ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged lookup in pid 1: status %d: %s", st, msg);
	CHECK(contains(msg, "permission denied") && contains(msg, "root"), "%s", msg);
}

static int sym(const char *binary, const char *spec, struct bt_uprobe_sym *out, char **err)
{
	struct bt_uprobe_spec s;
	int r = bt_uprobe_parse(spec, 0, &s, err);

	return r ? r : bt_uprobe_find_symbol(binary, binary, &s, out, err);
}

static void test_symbols(void)
{
	struct bt_uprobe_sym s, s2;
	char *err = NULL;
	int r;

	r = sym(target, "bt_add", &s, &err);
	REQUIRE(r == 0, "bt_add: %s", err);
	CHECK(strcmp(s.name, "bt_add") == 0 && s.vaddr && s.file_off && s.size, "bt_add %s", s.name);
	/* +OFFSET: only at an instruction boundary (bt_ident: a 3-byte mov, ret). */
	struct bt_uprobe_sym id;
	REQUIRE(sym(target, "bt_ident", &id, &err) == 0, "bt_ident: %s", err);
	r = sym(target, "bt_ident+" IDENT_RET, &s2, &err);
	CHECK(r == 0 && s2.file_off == id.file_off + strtoul(IDENT_RET, NULL, 0) &&
		      strcmp(s2.name, "bt_ident+0x" IDENT_RET) == 0,
	      "+" IDENT_RET ": %s %s", s2.name, err);
	r = sym(target, "bt_ident+1", &s2, &err);
	CHECK(r == -EINVAL && contains(err, "inside an instruction") && contains(err, "bt_ident+0x0") &&
		      contains(err, "bt_ident+0x" IDENT_RET),
	      "+1 inside the mov: %d %s", r, err);
	r = sym(target, "bt_add+2", &s2, &err);
	CHECK(r == -EINVAL && contains(err, "inside an instruction") && contains(err, "bt_add+0x0"), "+2: %s", err);
	r = sym(target, "bt_add+0x1000", &s2, &err);
	CHECK(r == -EINVAL && contains(err, "outside") && contains(err, "bt_add"), "too far: %s", err);

	/* C++: mangled, demangled base name, full signature, overloads. */
	r = sym(target, "foo::baz", &s2, &err);
	CHECK(r == 0 && strcmp(s2.name, "foo::baz(int)") == 0, "foo::baz: %s %s", s2.name, err);
	r = sym(target, "_ZN3foo3barEi", &s2, &err);
	CHECK(r == 0 && strcmp(s2.name, "foo::bar(int)") == 0, "mangled: %s %s", s2.name, err);
	r = sym(target, "foo::bar(long)", &s2, &err);
	CHECK(r == 0 && strcmp(s2.name, "foo::bar(long)") == 0, "signature: %s %s", s2.name, err);
	r = sym(target, "foo::bar", &s2, &err);
	CHECK(r == -EINVAL && contains(err, "overloaded") && contains(err, "foo::bar(int)") &&
		      contains(err, "foo::bar(long)"),
	      "overloads: %s", err);

	/* Not found: the closest names. */
	r = sym(target, "bt_ad", &s2, &err);
	CHECK(r == -ENOENT && contains(err, "not found") && contains(err, "bt_add"), "suggest: %s", err);
	r = sym(target, "foo::bax", &s2, &err);
	CHECK(r == -ENOENT && contains(err, "foo::baz"), "suggest C++: %s", err);
	r = sym(target, "zzzzzzzzzzzzzzzzzz", &s2, &err);
	CHECK(r == -ENOENT && contains(err, "no similar"), "%s", err);
	CHECK(!strchr(err, '\n'), "one line");

	/* An address, as nm prints it, names its function. */
	char a[64];
	snprintf(a, sizeof(a), "0x%llx", (unsigned long long)id.vaddr + strtoul(IDENT_RET, NULL, 0));
	r = sym(target, a, &s2, &err);
	CHECK(r == 0 && s2.file_off == id.file_off + strtoul(IDENT_RET, NULL, 0) &&
		      strcmp(s2.name, "bt_ident+0x" IDENT_RET) == 0,
	      "address: %s %s", s2.name, err);
	snprintf(a, sizeof(a), "0x%llx", (unsigned long long)id.vaddr + 1);
	r = sym(target, a, &s2, &err);
	CHECK(r == -EINVAL && contains(err, "inside an instruction"), "address inside the mov: %s", err);
	r = sym(target, "0x10", &s2, &err);
	CHECK(r != 0 && (contains(err, "outside") || contains(err, "not code")), "bad address: %s", err);

	/* libc: the symbol table of the library, with suggestions. */
	char libc[PATH_MAX], att[PATH_MAX];
	REQUIRE(bt_uprobe_find_binary(getpid(), "libc", libc, sizeof(libc), att, sizeof(att), &err) == 0,
		"%s", err);
	r = sym(att, "malloc", &s2, &err);
	CHECK(r == 0, "libc malloc: %s", err);
	r = sym(att, "mallok", &s2, &err);
	CHECK(r == -ENOENT && contains(err, "malloc"), "mallok: %s", err);
}

/* C++ built by g++ (tests/workloads/cxx_target.cc): clones are not overloads, a
 * template is found without its return type. */
static void test_cxx_symbols(void)
{
	char cxx[PATH_MAX];
	char *err = NULL;
	struct bt_uprobe_sym s, ref;
	int r;

	snprintf(cxx, sizeof(cxx), "%.*s/cxx_target", (int)(strrchr(target, '/') - target), target);
	if (access(cxx, X_OK) != 0) {
		CHECK(0, "%s missing (make tests)", cxx);
		return;
	}
	REQUIRE(sym(cxx, "_Z4worki", &ref, &err) == 0, "%s", err);
	r = sym(cxx, "work", &s, &err);
	CHECK(r == 0 && s.vaddr == ref.vaddr && strcmp(s.name, "work(int)") == 0,
	      "work: the function, not its 5 clones: %d %s %s", r, s.name, err);
	r = sym(cxx, "work(int)", &s, &err);
	CHECK(r == 0 && s.vaddr == ref.vaddr, "work(int): %d %s", r, err);
	r = sym(cxx, "work(int) [clone .cold]", &s, &err);
	CHECK(r == 0 && s.vaddr != ref.vaddr && strcmp(s.name, "work(int) [clone .cold]") == 0,
	      "a clone by its demangled name: %d %s", r, err);
	r = sym(cxx, "_Z4worki.part.0", &s, &err);
	CHECK(r == 0 && s.vaddr != ref.vaddr, "a clone by its symbol: %d %s", r, err);
	r = sym(cxx, "only_cloned", &s, &err);
	CHECK(r == -ENOENT && contains(err, "only as a compiler clone") && contains(err, "_Z11only_clonedi.constprop.0"),
	      "only a clone: %d %s", r, err);

	REQUIRE(sym(cxx, "_Z4tmaxIlET_S0_S0_", &ref, &err) == 0, "%s", err);
	const char *as_long[] = { "tmax<long>(long, long)", "tmax<long>(long,long)", "tmax<long>",
				  "long tmax<long>(long, long)" };
	for (size_t i = 0; i < sizeof(as_long) / sizeof(as_long[0]); i++) {
		r = sym(cxx, as_long[i], &s, &err);
		CHECK(r == 0 && s.vaddr == ref.vaddr, "template '%s' without its return type: %d %s", as_long[i], r,
		      err);
	}
	r = sym(cxx, "tmax<int>", &s, &err);
	CHECK(r == 0 && s.vaddr != ref.vaddr && contains(s.name, "tmax<int>(int, int)"), "tmax<int>: %d %s", r, err);
	r = sym(cxx, "tmax", &s, &err);
	CHECK(r == -EINVAL && contains(err, "overloaded") && contains(err, "tmax<int>") && contains(err, "tmax<long>"),
	      "tmax: every instantiation: %d %s", r, err);
	r = sym(cxx, "tmax<lon>", &s, &err);
	CHECK(r == -ENOENT && contains(err, "tmax<long>"), "tmax<lon>: suggestions without the return type: %s", err);

	/* The name scanner on what g++ prints. */
	size_t nl;
	const char *n = bt_demangled_name("std::vector<int, std::allocator<int> > ns::f<int>(int) const", &nl);
	CHECK(nl == 10 && strncmp(n, "ns::f<int>(", 11) == 0, "return type with spaces in <>: %.*s", (int)nl, n);
	n = bt_demangled_name("ns::C::operator<<(int)", &nl);
	CHECK(nl == 17 && strncmp(n, "ns::C::operator<<", nl) == 0, "operator<<: %.*s", (int)nl, n);
	n = bt_demangled_name("operator new(unsigned long)", &nl);
	CHECK(nl == 12 && strncmp(n, "operator new", nl) == 0, "operator new: %.*s", (int)nl, n);
	CHECK(bt_demangled_is_clone("f(int) [clone .isra.0]") && bt_demangled_is_clone("f() [clone .lto_priv.0]") &&
		      !bt_demangled_is_clone("f(int)"),
	      "clones");
}

/* A message is never cut, however long: a binary under a 1,600-byte path,
 * an ambiguous name (the message ends with its advice), through every layer
 * (symbol lookup, resolution of the probe table). */
static void test_long_messages(void)
{
	char dir[PATH_MAX], p[PATH_MAX], cmd[PATH_MAX * 2 + 64], spec[PATH_MAX + 32];
	const char *tail = "write the full signature or the mangled name";
	struct bt_uprobe_sym s;
	char *err = NULL;
	int r;

	snprintf(dir, sizeof(dir), "/tmp/bt-long-%d", (int)getpid());
	REQUIRE(mkdir(dir, 0700) == 0, "mkdir %s", dir);
	for (int i = 0; i < 8; i++) { /* 8 levels of 200 bytes */
		size_t l = strlen(dir);
		dir[l++] = '/';
		memset(dir + l, 'a' + i, 199);
		dir[l + 199] = '\0';
		REQUIRE(mkdir(dir, 0700) == 0, "mkdir level %d", i);
	}
	snprintf(p, sizeof(p), "%s/uprobe_target", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", target, p);
	REQUIRE(system(cmd) == 0, "cp");
	r = sym(p, "foo::bar", &s, &err);
	size_t el = err ? strlen(err) : 0, tl = strlen(tail);
	CHECK(r == -EINVAL && contains(err, p) && el > tl && strcmp(err + el - tl, tail) == 0,
	      "symbol lookup: %zu bytes, whole path and the advice at its end: %s", el, err);
	snprintf(spec, sizeof(spec), "%s:foo::bar", p);
	const char *specs[] = { spec };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 1, .nargs = -1 };
	struct bt_probe_desc *t = NULL;
	size_t n = 0;
	r = bt_uprobes_resolve(&o, &t, &n, &err);
	el = err ? strlen(err) : 0;
	CHECK(r == -EINVAL && contains(err, spec) && contains(err, "foo::bar(long)") && el > tl &&
		      strcmp(err + el - tl, tail) == 0,
	      "probe table: %zu bytes: %s", el, err);
	/* Messages built piece by piece grow as needed. */
	char *m = NULL;
	for (int i = 0; i < 1000; i++)
		REQUIRE(bt_strcatf(&m, "%s%d", i ? "," : "", i) == 0, "strcatf");
	CHECK(m && strlen(m) == 3889 && strncmp(m + strlen(m) - 4, ",999", 4) == 0, "strcatf: %zu", m ? strlen(m) : 0);
	free(m);
	free(err);
	snprintf(cmd, sizeof(cmd), "rm -rf '/tmp/bt-long-%d'", (int)getpid());
	CHECK(system(cmd) == 0, "cleanup");
}

static void test_not_elf_and_stripped(void)
{
	char dir[] = "/tmp/bt-uprobes-XXXXXX", p[PATH_MAX], cmd[PATH_MAX * 2 + 64];
	char *err = NULL;
	struct bt_uprobe_sym s, ref;
	int fd, r;

	REQUIRE(mkdtemp(dir), "mkdtemp");
	snprintf(p, sizeof(p), "%s/notelf", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	REQUIRE(fd >= 0, "create");
	CHECK(write(fd, "#!/bin/sh\necho hi\n", 18) == 18, "write");
	close(fd);
	r = sym(p, "main", &s, &err);
	CHECK(r == -ENOEXEC && contains(err, "not an ELF file"), "not ELF: %d %s", r, err);
	unlink(p);

	/* A FIFO where a mapping's file was (paths come from other
	 * processes): refused at once, never opened for a blocking read. */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	REQUIRE(mkfifo(p, 0600) == 0, "mkfifo");
	r = sym(p, "main", &s, &err);
	CHECK(r == -ENOEXEC && contains(err, "not a regular file"), "fifo: %d %s", r, err);
	unlink(p);

	/* A stripped copy of the target: .dynsym only. */
	snprintf(p, sizeof(p), "%s/stripped", dir);
	snprintf(cmd, sizeof(cmd), "strip -o '%s' '%s' 2>/dev/null", p, target);
	if (system(cmd) != 0) {
		printf("# strip unavailable: stripped-binary case skipped\n");
	} else {
		r = sym(p, "bt_add", &s, &err);
		CHECK(r == -ENOENT && contains(err, "stripped") && contains(err, "0xADDRESS"), "stripped: %s", err);
		REQUIRE(sym(target, "bt_add", &ref, &err) == 0, "%s", err);
		char a[64];
		snprintf(a, sizeof(a), "0x%llx", (unsigned long long)ref.vaddr);
		r = sym(p, a, &s, &err);
		CHECK(r == 0 && s.file_off == ref.file_off, "address in stripped binary: %s", err);
		unlink(p);
	}
	rmdir(dir);
}

/* Publishes its thread id, stays until told (-1). */
static void *tid_thread(void *arg)
{
	int *tid = arg;

	__atomic_store_n(tid, (int)gettid(), __ATOMIC_RELEASE); /* pairs with the acquire in test_resolve_table */
	while (__atomic_load_n(tid, __ATOMIC_ACQUIRE) != -1) /* pairs with the release in test_resolve_table */
		usleep(1000);
	return NULL;
}

static void test_resolve_table(void)
{
	char usdt_ok[PATH_MAX + 32], usdt_bad[PATH_MAX + 32], add[PATH_MAX + 32];
	char *err = NULL;
	struct bt_probe_desc *t = NULL;
	size_t n = 0;
	int r;

	snprintf(usdt_ok, sizeof(usdt_ok), "%s:btrace_test:tick", target);
	snprintf(usdt_bad, sizeof(usdt_bad), "%s:btrace_test:tock", target);
	snprintf(add, sizeof(add), "%s:bt_add%%return", target);
	const char *specs[] = { add, "libc:malloc" };
	const char *usdts[] = { usdt_ok };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 2, .usdts = usdts, .nusdts = 1, .nargs = -1 };

	r = bt_uprobes_resolve(&o, &t, &n, &err);
	REQUIRE(r == 0, "%s", err);
	REQUIRE(n == 3, "%zu rows", n);
	CHECK(t[0].id == 0 && t[0].flags == BT_PROBE_RETURN && t[0].pid == -1 && t[0].nargs == 0 &&
		      strcmp(t[0].func, "bt_add") == 0 && strcmp(t[0].spec, add) == 0,
	      "row 0: %u %u %d %s", t[0].flags, t[0].nargs, t[0].pid, t[0].func);
	CHECK(t[1].id == 1 && t[1].flags == 0 && t[1].nargs == 6 && contains(t[1].binary, "libc") &&
		      strcmp(t[1].func, "malloc") == 0,
	      "row 1: %s %s", t[1].binary, t[1].func);
	CHECK(t[2].flags == BT_PROBE_USDT && t[2].nargs == 2 && strcmp(t[2].func, "btrace_test:tick") == 0,
	      "row 2: %u %u %s", t[2].flags, t[2].nargs, t[2].func);
	free(t);

	/* Two pids: one row per spec and pid. */
	int pids[] = { getpid(), getppid() };
	struct bt_uprobe_opts o2 = { .specs = specs + 1, .nspecs = 1, .pids = pids, .npids = 2, .nargs = 3 };
	r = bt_uprobes_resolve(&o2, &t, &n, &err);
	if (r == -EACCES || r == -ENOENT) {
		/* the parent may not map libc (static) or not be readable */
		printf("# two-pid resolution skipped: %s\n", err);
	} else {
		REQUIRE(r == 0, "%s", err);
		CHECK(n == 2 && t[0].pid == pids[0] && t[1].pid == pids[1] && t[0].nargs == 3 && t[1].id == 1,
		      "two pids: n %zu", n);
		free(t);
	}

	/* A thread id is resolved to its process. */
	{
		pthread_t th;
		int tid = 0, tgid = 0;
		char comm[64], tcomm[64];

		REQUIRE(pthread_create(&th, NULL, tid_thread, &tid) == 0, "pthread_create");
		while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE)) /* pairs with the release in tid_thread */
			usleep(1000);
		CHECK(bt_proc_tgid(tid, &tgid, comm, sizeof(comm), tcomm, sizeof(tcomm), &err) == 0 &&
			      tgid == getpid() && tid != getpid(),
		      "tgid of thread %d: %d (%s)", tid, tgid, err);
		struct bt_uprobe_opts ot = { .specs = specs + 1, .nspecs = 1, .pids = &tid, .npids = 1, .nargs = -1 };
		r = bt_uprobes_resolve(&ot, &t, &n, &err);
		CHECK(r == 0 && n == 1 && t[0].pid == getpid(), "-p TID: row of the process: %d %d %s", r,
		      r ? 0 : t[0].pid, err);
		if (!r)
			free(t);
		__atomic_store_n(&tid, -1, __ATOMIC_RELEASE); /* pairs with the acquire in tid_thread */
		pthread_join(th, NULL);
		CHECK(bt_proc_tgid(0x7ffffff0, &tgid, NULL, 0, NULL, 0, &err) == -ESRCH, "no such id: %s",
		      err);
	}

	const char *bad[] = { usdt_bad };
	struct bt_uprobe_opts o3 = { .usdts = bad, .nusdts = 1, .nargs = -1 };
	r = bt_uprobes_resolve(&o3, &t, &n, &err);
	CHECK(r == -ENOENT && contains(err, "btrace_test:tick") && contains(err, "-U '"), "usdt: %s", err);
	struct bt_uprobe_opts o4 = { .specs = specs, .nspecs = 1, .nargs = 7 };
	r = bt_uprobes_resolve(&o4, &t, &n, &err);
	CHECK(r == -EINVAL && contains(err, "--uargs"), "nargs 7: %s", err);
	const char *nobin[] = { "bt_add" };
	struct bt_uprobe_opts o5 = { .specs = nobin, .nspecs = 1, .nargs = -1 };
	r = bt_uprobes_resolve(&o5, &t, &n, &err);
	CHECK(r == -EINVAL && contains(err, "-u 'bt_add'") && contains(err, "-p"), "no binary: %s", err);
}

/* ---- real attachment (root) ---------------------------------------------------- */

struct child {
	pid_t pid;
	int out; /* its stdout */
};

/* Start the target; wait for its "ready" line. */
static int child_start(struct child *c, const char *const *extra)
{
	const char *argv[8] = { target };
	int p[2], k = 1;
	char line[64];
	size_t o = 0;

	for (; extra && *extra && k < 7; extra++)
		argv[k++] = *extra;
	argv[k] = NULL;
	if (pipe(p))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(target, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	c->out = p[0];
	while (o < sizeof(line) - 1) {
		struct pollfd pf = { .fd = c->out, .events = POLLIN };
		if (poll(&pf, 1, 5000) != 1 || read(c->out, line + o, 1) != 1)
			return -EIO;
		if (line[o] == '\n')
			break;
		o++;
	}
	line[o] = '\0';
	return strncmp(line, "ready ", 6) == 0 ? 0 : -EIO;
}

/* Let it run; wait for it to exit. 0 if it exited with status 0. */
static int child_finish(struct child *c, int go)
{
	int st = 0;

	if (go)
		kill(c->pid, SIGUSR1);
	for (int i = 0; i < 1000; i++) {
		pid_t w = waitpid(c->pid, &st, WNOHANG);
		if (w == c->pid) {
			close(c->out);
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
		}
		usleep(10000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &st, 0);
	close(c->out);
	return -ETIMEDOUT;
}

struct evs {
	struct bt_ev_uprobe *v;
	size_t n, cap;
	size_t bad_len;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct evs *e = ctx;

	if (len != sizeof(struct bt_ev_uprobe)) {
		e->bad_len++;
		return 0;
	}
	if (e->n == e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 1024;
		void *nv = realloc(e->v, nc * sizeof(*e->v));
		if (!nv)
			return -ENOMEM;
		e->v = nv, e->cap = nc;
	}
	memcpy(&e->v[e->n++], data, sizeof(*e->v));
	return 0;
}

static int rb_fd = -1, cs_fd = -1;

static int make_maps(void)
{
	if (rb_fd < 0)
		rb_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, 8u << 20, NULL);
	if (cs_fd < 0)
		cs_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "cpu_state", sizeof(__u32),
				       sizeof(struct bt_cpu_state), 1, NULL);
	return rb_fd >= 0 && cs_fd >= 0 ? 0 : -errno;
}

static void drain(struct evs *e)
{
	struct ring_buffer *rb = ring_buffer__new(rb_fd, on_event, e, NULL);

	if (!rb)
		return;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
}

/* Sum of emitted/drops of the uprobe group over CPUs. */
static void cpu_sums(uint64_t *emitted, uint64_t *drops)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bt_cpu_state *st = calloc((size_t)ncpu, sizeof(*st));
	__u32 k = 0;

	*emitted = *drops = 0;
	if (!st || bpf_map_lookup_elem(cs_fd, &k, st)) {
		free(st);
		return;
	}
	for (int i = 0; i < ncpu; i++) {
		*emitted += st[i].emitted[BT_GROUP_UPROBE];
		*drops += st[i].drops[BT_GROUP_UPROBE];
	}
	free(st);
}

static size_t count(const struct evs *e, uint32_t id, uint16_t type)
{
	size_t k = 0;

	for (size_t i = 0; i < e->n; i++)
		k += e->v[i].probe_id == id && e->v[i].h.type == type;
	return k;
}

static int fib(int n)
{
	return n <= 2 ? 1 : fib(n - 1) + fib(n - 2);
}

enum {
	P_ADD, P_ADD_RET, P_ARGS6, P_FIB, P_FIB_RET, P_SLEEP_RET, P_BAZ, P_BAR_INT, P_BAR_LONG_RET, P_MALLOC,
	P_MALLOC_RET, P_TICK, P_COUNT
};

static void test_attach_pid(void)
{
	char args6[PATH_MAX + 32];
	char *err = NULL;
	struct child c, other;
	struct evs e = { 0 };
	struct bt_uprobes *u;

	REQUIRE(make_maps() == 0, "cannot create maps: %s", strerror(errno));
	REQUIRE(child_start(&c, NULL) == 0, "cannot start %s", target);
	REQUIRE(child_start(&other, NULL) == 0, "cannot start a second target");
	snprintf(args6, sizeof(args6), "%s:bt_args6", target);
	const char *specs[] = { "bt_add", "bt_add%return", args6, "bt_fib", "bt_fib%return", "bt_sleep_us%return",
				"uprobe_target:foo::baz", "_ZN3foo3barEi", "foo::bar(long)%return", "libc:malloc",
				"libc:malloc%return" };
	const char *usdts[] = { "uprobe_target:btrace_test:tick" };
	int pids[] = { c.pid };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 11, .usdts = usdts, .nusdts = 1,
				    .pids = pids, .npids = 1, .nargs = -1 };

	u = bt_uprobes_open(&o, rb_fd, cs_fd, &err);
	if (!u) {
		child_finish(&c, 1);
		child_finish(&other, 1);
	}
	REQUIRE(u, "bt_uprobes_open: %s", err);
	/* 7 entry probes (bt_add, args6, fib, baz, bar(int), malloc share with
	 * their %return), 2 stamp-only entries (sleep, bar(long)), 5 returns, 1 USDT. */
	CHECK(bt_uprobes_nattached(u) == 14, "%zu links", bt_uprobes_nattached(u));
	size_t nt;
	const struct bt_probe_desc *t = bt_uprobes_table(u, &nt);
	REQUIRE(nt == P_COUNT, "%zu probes", nt);
	CHECK(!(t[0].flags & BT_PROBE_ENDED), "not ended yet");
	CHECK(strcmp(t[P_BAZ].func, "foo::baz(int)") == 0 && strcmp(t[P_BAR_INT].func, "foo::bar(int)") == 0,
	      "demangled names: %s %s", t[P_BAZ].func, t[P_BAR_INT].func);
	CHECK(t[P_ADD].pid == c.pid && contains(t[P_MALLOC].binary, "libc"), "table pid/binary");

	CHECK(child_finish(&other, 1) == 0, "other target failed");
	CHECK(child_finish(&c, 1) == 0, "target failed");
	drain(&e);

	int ended[4];
	CHECK(bt_uprobes_poll_exited(u, ended, 4) == 1 && ended[0] == c.pid, "exit seen");
	CHECK(bt_uprobes_poll_exited(u, ended, 4) == 0, "exit reported once");
	t = bt_uprobes_table(u, &nt);
	CHECK(t[0].flags & BT_PROBE_ENDED, "table says the process ended");

	uint64_t emitted, drops;
	cpu_sums(&emitted, &drops);
	printf("# %zu events, emitted %llu, drops %llu\n", e.n, (unsigned long long)emitted,
	       (unsigned long long)drops);
	CHECK(e.bad_len == 0, "%zu events of the wrong size", e.bad_len);
	CHECK(emitted == e.n && drops == 0, "emitted %llu != received %zu (drops %llu)", (unsigned long long)emitted,
	      e.n, (unsigned long long)drops);

	/* The pid filter: nothing from the other process. */
	size_t foreign = 0;
	for (size_t i = 0; i < e.n; i++)
		foreign += e.v[i].h.tgid != (uint32_t)c.pid;
	CHECK(foreign == 0, "%zu events from other processes (other target %d)", foreign, other.pid);

	CHECK(count(&e, P_ADD, BT_EV_UPROBE_ENTRY) == THREADS * N_ADD, "bt_add entries %zu",
	      count(&e, P_ADD, BT_EV_UPROBE_ENTRY));
	CHECK(count(&e, P_ADD_RET, BT_EV_UPROBE_RETURN) == THREADS * N_ADD, "bt_add returns %zu",
	      count(&e, P_ADD_RET, BT_EV_UPROBE_RETURN));
	CHECK(count(&e, P_ARGS6, BT_EV_UPROBE_ENTRY) == THREADS * N_ARGS6, "args6");
	CHECK(count(&e, P_FIB, BT_EV_UPROBE_ENTRY) == THREADS * FIB_CALLS, "fib entries %zu",
	      count(&e, P_FIB, BT_EV_UPROBE_ENTRY));
	CHECK(count(&e, P_FIB_RET, BT_EV_UPROBE_RETURN) == THREADS * FIB_CALLS, "fib returns");
	CHECK(count(&e, P_SLEEP_RET, BT_EV_UPROBE_RETURN) == THREADS * N_SLEEP, "sleep returns");
	CHECK(count(&e, P_BAZ, BT_EV_UPROBE_ENTRY) == THREADS * N_BAZ, "foo::baz %zu",
	      count(&e, P_BAZ, BT_EV_UPROBE_ENTRY));
	CHECK(count(&e, P_BAR_INT, BT_EV_UPROBE_ENTRY) == THREADS * N_BAR_INT, "foo::bar(int)");
	CHECK(count(&e, P_BAR_LONG_RET, BT_EV_UPROBE_RETURN) == THREADS * N_BAR_LONG, "foo::bar(long) returns");
	CHECK(count(&e, P_TICK, BT_EV_USDT) == THREADS * N_TICK, "usdt %zu", count(&e, P_TICK, BT_EV_USDT));
	CHECK(count(&e, P_MALLOC, BT_EV_UPROBE_ENTRY) == count(&e, P_MALLOC_RET, BT_EV_UPROBE_RETURN),
	      "malloc entries %zu != returns %zu", count(&e, P_MALLOC, BT_EV_UPROBE_ENTRY),
	      count(&e, P_MALLOC_RET, BT_EV_UPROBE_RETURN));

	/* Per thread, in ring order (a total order: one ring, reservations
	 * serialized), every sequence exactly as the workload made it. */
	uint32_t tids[16];
	size_t ntids = 0;
	for (size_t i = 0; i < e.n; i++) {
		size_t j;
		for (j = 0; j < ntids && tids[j] != e.v[i].h.tid; j++)
			;
		if (j == ntids && ntids < 16)
			tids[ntids++] = e.v[i].h.tid;
	}
	CHECK(ntids == THREADS, "%zu threads seen", ntids);
	for (size_t ti = 0; ti < ntids; ti++) {
		long add_i = 0, add_ret_i = 0, k6 = 0, baz = 0, bar_l = 0, tick = 0, mal = 0, mal_pending = 0;
		int fstack[64], fdepth = 0, fib_bad = 0, nest_bad = 0, last_fib_entry = -1;
		uint64_t fib_outer = 0, fib_max_inner = 0, prev_seq_ts = 0;
		int add_open = 0, bad = 0, order_bad = 0;

		for (size_t i = 0; i < e.n; i++) {
			const struct bt_ev_uprobe *v = &e.v[i];
			if (v->h.tid != tids[ti])
				continue;
			if (v->h.ts_ns < prev_seq_ts)
				order_bad++;
			prev_seq_ts = v->h.ts_ns;
			switch (v->probe_id) {
			case P_ADD:
				if (v->nargs != 6 || v->args[0] != (uint64_t)add_i || v->args[1] != (uint64_t)(1000 + add_i) ||
				    add_open)
					bad++;
				add_i++, add_open = 1;
				break;
			case P_ADD_RET:
				if (v->ret != (uint64_t)(1000 + 2 * add_ret_i) || !add_open || !v->duration_ns)
					bad++;
				add_ret_i++, add_open = 0;
				break;
			case P_ARGS6:
				for (int a = 0; a < 6; a++)
					if (v->args[a] != (uint64_t)(10 * k6 + a + 1))
						bad++;
				k6++;
				break;
			case P_FIB:
				if (fdepth < 64)
					fstack[fdepth++] = (int)v->args[0];
				last_fib_entry = (int)v->args[0];
				break;
			case P_FIB_RET: {
				int n = fdepth > 0 ? fstack[--fdepth] : -1;
				if (n < 0 || v->ret != (uint64_t)fib(n) || !v->duration_ns)
					fib_bad++;
				if (fdepth == 0)
					fib_outer = v->duration_ns;
				else if (v->duration_ns > fib_max_inner)
					fib_max_inner = v->duration_ns;
				break;
			}
			case P_SLEEP_RET:
				if (v->ret != SLEEP_US || v->duration_ns < SLEEP_US * 1000ull || v->duration_ns > 1000000000ull)
					bad++, printf("# sleep ret %llu duration %llu\n", (unsigned long long)v->ret,
						      (unsigned long long)v->duration_ns);
				break;
			case P_BAZ:
				if ((uint32_t)v->args[0] != (uint32_t)baz)
					bad++;
				baz++;
				break;
			case P_BAR_LONG_RET:
				if (v->ret != (uint64_t)(bar_l + 2) || !v->duration_ns)
					bad++;
				bar_l++;
				break;
			case P_MALLOC:
				mal_pending = v->args[0] == MALLOC_SIZE;
				break;
			case P_MALLOC_RET:
				if (mal_pending) {
					mal++;
					if (!v->ret || !v->duration_ns)
						bad++;
				}
				mal_pending = 0;
				break;
			case P_TICK:
				if (v->nargs != 2 || v->args[0] != (uint64_t)tick || v->args[1] != (uint64_t)(tick * tick))
					bad++;
				tick++;
				break;
			}
		}
		(void)last_fib_entry;
		if (fib_outer < fib_max_inner)
			nest_bad++;
		CHECK(!bad, "thread %u: %d wrong events", tids[ti], bad);
		CHECK(!order_bad, "thread %u: %d events out of time order", tids[ti], order_bad);
		CHECK(add_i == N_ADD && add_ret_i == N_ADD, "thread %u: bt_add %ld/%ld", tids[ti], add_i, add_ret_i);
		CHECK(!fib_bad && fdepth == 0 && !nest_bad, "thread %u: fib bad %d depth %d nest %d", tids[ti], fib_bad,
		      fdepth, nest_bad);
		CHECK(tick == N_TICK && baz == N_BAZ && bar_l == N_BAR_LONG && k6 == N_ARGS6,
		      "thread %u: ticks %ld baz %ld bar %ld args6 %ld", tids[ti], tick, baz, bar_l, k6);
		CHECK(mal == N_MALLOC, "thread %u: %ld malloc(%d) calls with a return", tids[ti], mal, MALLOC_SIZE);
	}
	bt_uprobes_destroy(u);
	free(e.v);
}

/* No pid: attach to the binary, then start processes: all of them trigger. */
static void test_attach_then_start(void)
{
	char add[PATH_MAX + 32];
	char *err = NULL;
	struct child a, b;
	struct evs e = { 0 };
	struct bt_uprobes *u;

	REQUIRE(make_maps() == 0, "maps");
	drain(&e); /* leftovers */
	e.n = 0;
	snprintf(add, sizeof(add), "%s:bt_add", target);
	const char *specs[] = { add };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 1, .nargs = 2 };
	u = bt_uprobes_open(&o, rb_fd, cs_fd, &err);
	REQUIRE(u, "%s", err);
	const char *go[] = { "--go", NULL };
	REQUIRE(child_start(&a, go) == 0, "start");
	REQUIRE(child_start(&b, go) == 0, "start");
	CHECK(child_finish(&a, 0) == 0 && child_finish(&b, 0) == 0, "targets failed");
	drain(&e);
	size_t na = 0, nb = 0, bad = 0;
	for (size_t i = 0; i < e.n; i++) {
		na += e.v[i].h.tgid == (uint32_t)a.pid;
		nb += e.v[i].h.tgid == (uint32_t)b.pid;
		bad += e.v[i].nargs != 2 || e.v[i].args[2] != 0 || e.v[i].probe_id != 0;
	}
	CHECK(na == THREADS * N_ADD && nb == THREADS * N_ADD, "started later: %zu and %zu calls, want %d", na, nb,
	      THREADS * N_ADD);
	CHECK(bad == 0, "%zu events with wrong nargs/args", bad);
	size_t nt;
	const struct bt_probe_desc *t = bt_uprobes_table(u, &nt);
	CHECK(nt == 1 && t[0].pid == -1 && t[0].nargs == 2, "table");
	bt_uprobes_destroy(u);
	free(e.v);
}

/* Two processes, two binaries, one open. */
static void test_several_pids(void)
{
	char *err = NULL;
	struct child a, b;
	struct evs e = { 0 };
	struct bt_uprobes *u;

	REQUIRE(make_maps() == 0, "maps");
	drain(&e);
	e.n = 0;
	REQUIRE(child_start(&a, NULL) == 0 && child_start(&b, NULL) == 0, "start");
	const char *specs[] = { "bt_args6", "libc:malloc" };
	int pids[] = { a.pid, b.pid };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 2, .pids = pids, .npids = 2, .nargs = -1 };
	u = bt_uprobes_open(&o, rb_fd, cs_fd, &err);
	if (!u) {
		child_finish(&a, 1);
		child_finish(&b, 1);
	}
	REQUIRE(u, "%s", err);
	size_t nt;
	const struct bt_probe_desc *t = bt_uprobes_table(u, &nt);
	REQUIRE(nt == 4, "%zu rows", nt);
	CHECK(t[0].pid == a.pid && t[1].pid == b.pid && t[2].pid == a.pid && t[3].pid == b.pid, "rows per pid");
	CHECK(child_finish(&a, 1) == 0 && child_finish(&b, 1) == 0, "targets");
	drain(&e);
	size_t args6[2] = { 0 }, mal[2] = { 0 }, mism = 0;
	for (size_t i = 0; i < e.n; i++) {
		const struct bt_ev_uprobe *v = &e.v[i];
		if (v->probe_id >= nt || (uint32_t)t[v->probe_id].pid != v->h.tgid) {
			mism++;
			continue;
		}
		int w = v->h.tgid == (uint32_t)b.pid;
		if (v->probe_id < 2)
			args6[w]++;
		else if (v->args[0] == MALLOC_SIZE)
			mal[w]++;
	}
	CHECK(mism == 0, "%zu events under another pid's probe", mism);
	CHECK(args6[0] == THREADS * N_ARGS6 && args6[1] == THREADS * N_ARGS6, "args6 %zu %zu", args6[0], args6[1]);
	CHECK(mal[0] == THREADS * N_MALLOC && mal[1] == THREADS * N_MALLOC, "malloc %zu %zu", mal[0], mal[1]);
	int ended[4];
	CHECK(bt_uprobes_poll_exited(u, ended, 4) == 2, "both ended");
	bt_uprobes_destroy(u);
	free(e.v);
}

/* A failure on the last probe leaves nothing attached. */
static void test_all_or_nothing(void)
{
	char add[PATH_MAX + 32], unp[PATH_MAX + 32];
	char *err = NULL;
	struct child c;
	struct evs e = { 0 };
	struct bt_uprobes *u;

	REQUIRE(make_maps() == 0, "maps");
	drain(&e);
	e.n = 0;
	REQUIRE(child_start(&c, NULL) == 0, "start");
	snprintf(add, sizeof(add), "%s:bt_add", target);
	snprintf(unp, sizeof(unp), "%s:bt_unprobeable", target);
	const char *specs[] = { add, "libc:malloc%return", unp };
	int pids[] = { c.pid };
	struct bt_uprobe_opts o = { .specs = specs, .nspecs = 3, .pids = pids, .npids = 1, .nargs = -1 };
	u = bt_uprobes_open(&o, rb_fd, cs_fd, &err);
	CHECK(!u, "attached an unprobeable function");
	CHECK(contains(err, "cannot probe") && contains(err, "bt_unprobeable") && !strchr(err, '\n'), "message: %s",
	      err);
	printf("# %s\n", err);
	bt_uprobes_destroy(u);
	CHECK(child_finish(&c, 1) == 0, "target");
	drain(&e);
	CHECK(e.n == 0, "%zu events after a failed open: something stayed attached", e.n);

	/* No such process. */
	int nopid[] = { 0x7ffffff0 };
	const char *one[] = { "libc:malloc" };
	struct bt_uprobe_opts o2 = { .specs = one, .nspecs = 1, .pids = nopid, .npids = 1, .nargs = -1 };
	u = bt_uprobes_open(&o2, rb_fd, cs_fd, &err);
	CHECK(!u && errno == ESRCH && contains(err, "no process with pid"), "no pid: %s", err);
	free(e.v);
}

int main(void)
{
	const char *v = getenv("BT_VERBOSE"), *tb = getenv("TEST_BIN");
	char self[PATH_MAX / 4];
	ssize_t l;

	verbose = v && *v;
	is_root = geteuid() == 0;
	libbpf_set_print(libbpf_print);
	if (tb && *tb) {
		snprintf(target, sizeof(target), "%.1000s/uprobe_target", tb);
	} else {
		l = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[l > 0 ? l : 0] = '\0';
		char *s = strrchr(self, '/');
		if (s)
			*s = '\0';
		snprintf(target, sizeof(target), "%s/uprobe_target", self);
	}
	if (access(target, X_OK) != 0) {
		printf("not ok 1 - %s missing (make tests)\n", target);
		return 1;
	}

	RUN(test_parse);
	RUN(test_edit_distance);
	RUN(test_find_binary);
	RUN(test_permission_denied);
	RUN(test_symbols);
	RUN(test_cxx_symbols);
	RUN(test_long_messages);
	RUN(test_not_elf_and_stripped);
	RUN(test_resolve_table);
	if (!is_root) {
		printf("ok %d - attach tests # SKIP not root\n", ++h_ntests);
		return h_done();
	}
	RUN(test_attach_pid);
	RUN(test_attach_then_start);
	RUN(test_several_pids);
	RUN(test_all_or_nothing);
	if (rb_fd >= 0)
		close(rb_fd);
	if (cs_fd >= 0)
		close(cs_fd);
	return h_done();
}
