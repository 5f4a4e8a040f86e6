// SPDX-License-Identifier: MIT
/*
 * trigger_spec.c - parse `record --trigger SPEC` (syntax in trigger_spec.h).
 * Strict: every malformed spec is refused with one line saying what was
 * expected; nothing is guessed.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "trigger_spec.h"
#include "util.h"

static const char *const kind_names[BT_TRIG_KIND_MAX] = {
	[BT_TRIG_NONE] = "none",           [BT_TRIG_SCHED_LATENCY] = "sched-latency",
	[BT_TRIG_OFFCPU] = "offcpu",       [BT_TRIG_SYSCALL] = "syscall",
	[BT_TRIG_FUNC] = "func",           [BT_TRIG_CRASH] = "crash",
	[BT_TRIG_OOM] = "oom",             [BT_TRIG_APP] = "app",
	[BT_TRIG_APP_SLICE] = "app-slice", [BT_TRIG_CTL] = "ctl",
	[BT_TRIG_APP_FUNC] = "app-func",
	[BT_TRIG_UPROBE] = "uprobe",
};

const char *bt_trigger_kind_name(uint32_t kind)
{
	return kind < BT_TRIG_KIND_MAX ? kind_names[kind] : "?";
}

/* The signals `crash` watches by default: those whose default action dumps core. */
#define CRASH_DEFAULT_SIGS                                                                                     \
	((1ull << SIGSEGV) | (1ull << SIGBUS) | (1ull << SIGILL) | (1ull << SIGFPE) | (1ull << SIGABRT) |      \
	 (1ull << SIGTRAP) | (1ull << SIGSYS))

static int signal_nr(const char *s)
{
	uint64_t v;

	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	if (parse_uint(s, 63, &v) == 0)
		return v ? (int)v : -1;
	for (int i = 1; i < 64; i++) {
		const char *a = sigabbrev_np(i);

		if (a && strcmp(a, s) == 0)
			return i;
	}
	return -1;
}

/* A value as text: "12.4 ms", "SIGSEGV", ... into buf. fine: to the
 * microsecond, for measured values, so that one just over its threshold
 * ("5.042 ms > 5.0 ms") never reads as equal to it. */
static const char *bt_trigger_value_str(uint32_t kind, uint64_t value, bool fine, char *buf, size_t len)
{
	const char *a;

	switch (kind) {
	case BT_TRIG_CRASH:
		a = value < 64 ? sigabbrev_np((int)value) : NULL;
		if (a)
			snprintf(buf, len, "SIG%s", a);
		else
			snprintf(buf, len, "signal %llu", (unsigned long long)value);
		break;
	case BT_TRIG_SCHED_LATENCY:
	case BT_TRIG_OFFCPU:
	case BT_TRIG_SYSCALL:
	case BT_TRIG_FUNC:
	case BT_TRIG_APP_SLICE:
	case BT_TRIG_APP_FUNC:
		if (value >= 1000000000ull)
			snprintf(buf, len, fine ? "%.6f s" : "%.3f s", (double)value / 1e9);
		else if (value >= 1000000ull)
			snprintf(buf, len, fine ? "%.3f ms" : "%.1f ms", (double)value / 1e6);
		else
			snprintf(buf, len, fine ? "%.3f us" : "%.1f us", (double)value / 1e3);
		break;
	default:
		snprintf(buf, len, "%s", "");
	}
	return buf;
}

/* ---- system call names ------------------------------------------------------- */

#define SC(n) { #n, SYS_##n }
static const struct {
	const char *name;
	long nr;
} syscalls[] = {
	SC(read), SC(write), SC(openat), SC(close), SC(fsync), SC(fdatasync), SC(pread64), SC(pwrite64),
	SC(readv), SC(writev), SC(preadv), SC(pwritev), SC(nanosleep), SC(clock_nanosleep), SC(futex),
	SC(epoll_wait), SC(epoll_pwait), SC(ppoll), SC(pselect6), SC(wait4), SC(waitid), SC(accept4),
	SC(connect), SC(sendto), SC(recvfrom), SC(sendmsg), SC(recvmsg), SC(ioctl), SC(mmap), SC(munmap),
	SC(mprotect), SC(brk), SC(msync), SC(sync), SC(syncfs), SC(fallocate), SC(ftruncate), SC(renameat2),
	SC(unlinkat), SC(mkdirat), SC(execve), SC(clone), SC(clone3), SC(exit_group), SC(getdents64),
	SC(newfstatat), SC(statx), SC(io_uring_enter), SC(io_getevents), SC(splice), SC(sendfile),
	SC(copy_file_range), SC(flock), SC(fcntl), SC(sched_yield), SC(rt_sigtimedwait), SC(rt_sigsuspend),
	SC(getrandom), SC(bpf), SC(perf_event_open), SC(mount), SC(umount2),
#ifdef SYS_open
	SC(open), SC(poll), SC(select), SC(pause), SC(accept), SC(stat), SC(fork),
#endif
};
#undef SC

long bt_syscall_nr(const char *name)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (strcmp(syscalls[i].name, name) == 0)
			return syscalls[i].nr;
	return -1;
}

const char *bt_syscall_name(long nr)
{
	for (size_t i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (syscalls[i].nr == nr)
			return syscalls[i].name;
	return NULL;
}

/* ---- parser ------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen, const char *spec, const char *fmt,
						      ...)
{
	char m[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "--trigger '%s': %s", spec, m);
	return -EINVAL;
}

/* ">T" at s: the threshold. */
static int threshold(const char *spec, const char *s, uint64_t *ns, char *err, size_t errlen)
{
	if (*s != '>')
		return fail(err, errlen, spec, "expected '>' and a duration after the condition (e.g. >5ms)");
	if (!s[1])
		return fail(err, errlen, spec, "missing duration after '>' (e.g. >5ms)");
	if (parse_duration(s + 1, ns) || !strpbrk(s + 1, "numsh"))
		return fail(err, errlen, spec, "bad duration '%s': give a number with a unit (500us, 5ms, 2s)", s + 1);
	return 0;
}

/* The condition: everything before the first comma outside parentheses (a
 * C++ probe name may have commas inside its argument list). */
static size_t cond_len(const char *s)
{
	int depth = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] == '(')
			depth++;
		else if (s[i] == ')' && depth)
			depth--;
		else if (s[i] == ',' && !depth)
			break;
	}
	return i;
}

static int parse_cond(const char *spec, char *c, struct bt_trigger_spec *t, char *err, size_t errlen)
{
	char *gt;

	if (strncmp(c, "sched-latency", 13) == 0 && (c[13] == '>' || !c[13])) {
		t->kind = BT_TRIG_SCHED_LATENCY;
		return threshold(spec, c + 13, &t->threshold_ns, err, errlen);
	}
	if (strncmp(c, "offcpu", 6) == 0 && (c[6] == '>' || !c[6])) {
		t->kind = BT_TRIG_OFFCPU;
		return threshold(spec, c + 6, &t->threshold_ns, err, errlen);
	}
	if (strncmp(c, "syscall", 7) == 0 && (c[7] == '>' || c[7] == ':' || !c[7])) {
		t->kind = BT_TRIG_SYSCALL;
		if (c[7] == ':') {
			gt = strchr(c + 8, '>');
			if (gt)
				*gt = '\0';
			if (!c[8])
				return fail(err, errlen, spec, "missing system call name after 'syscall:'");
			t->nr = bt_syscall_nr(c + 8);
			if (t->nr < 0)
				return fail(err, errlen, spec, "unknown system call '%s' (give its number with nr=N)",
					    c + 8);
			snprintf(t->arg, sizeof(t->arg), "%.255s", c + 8);
			if (!gt)
				return fail(err, errlen, spec, "expected '>' and a duration after the condition (e.g. >5ms)");
			*gt = '>';
			return threshold(spec, gt, &t->threshold_ns, err, errlen);
		}
		return threshold(spec, c + 7, &t->threshold_ns, err, errlen);
	}
	if (strncmp(c, "func:", 5) == 0 || strcmp(c, "func") == 0 || strncmp(c, "func>", 5) == 0) {
		t->kind = BT_TRIG_FUNC;
		gt = strrchr(c, '>');
		if (c[4] != ':' || (gt && gt == c + 5) || (!gt && !c[5]))
			return fail(err, errlen, spec, "func needs a probe: func:[BINARY:]FUNCTION>T");
		if (!gt)
			return fail(err, errlen, spec, "expected '>' and a duration after the probe (e.g. func:app:render>16ms)");
		if ((size_t)(gt - (c + 5)) >= sizeof(t->arg))
			return fail(err, errlen, spec, "probe too long");
		memcpy(t->arg, c + 5, (size_t)(gt - (c + 5)));
		if (strstr(t->arg, "%return"))
			return fail(err, errlen, spec, "give the function without %%return: the trigger times entry to return");
		return threshold(spec, gt, &t->threshold_ns, err, errlen);
	}
	if (strcmp(c, "crash") == 0) {
		t->kind = BT_TRIG_CRASH;
		t->sigmask = CRASH_DEFAULT_SIGS;
		return 0;
	}
	if (strcmp(c, "oom") == 0) {
		t->kind = BT_TRIG_OOM;
		return 0;
	}
	if (strcmp(c, "ctl") == 0) {
		t->kind = BT_TRIG_CTL;
		return 0;
	}
	if (strncmp(c, "app-func", 8) == 0) {
		/* the last '>': C++ names may hold some (f<int>) */
		gt = strrchr(c, '>');
		if (c[8] != ':' || !c[9] || !gt || gt == c + 9)
			return fail(err, errlen, spec,
				    "app-func needs a function and a duration: app-func:NAME>T (e.g. app-func:render>16ms)");
		if ((size_t)(gt - (c + 9)) >= sizeof(t->arg))
			return fail(err, errlen, spec, "function name longer than 255 characters");
		snprintf(t->arg, sizeof(t->arg), "%.*s", (int)(gt - (c + 9)), c + 9);
		t->kind = BT_TRIG_APP_FUNC;
		return threshold(spec, gt, &t->threshold_ns, err, errlen);
	}
	if (strncmp(c, "app:", 4) == 0 || strcmp(c, "app") == 0) {
		gt = strchr(c, '>');
		if (gt)
			*gt = '\0';
		if (c[3] != ':' || !c[4])
			return fail(err, errlen, spec, "app needs an event name: app:NAME or app:NAME>T");
		if (strlen(c + 4) > 63)
			return fail(err, errlen, spec, "application event name longer than 63 characters");
		snprintf(t->arg, sizeof(t->arg), "%s", c + 4);
		if (!gt) {
			t->kind = BT_TRIG_APP;
			return 0;
		}
		*gt = '>';
		t->kind = BT_TRIG_APP_SLICE;
		return threshold(spec, gt, &t->threshold_ns, err, errlen);
	}
	if (strncmp(c, "uprobe:", 7) == 0) {
		t->kind = BT_TRIG_UPROBE;
		if (!c[7])
			return fail(err, errlen, spec, "uprobe needs a probe: uprobe:[BINARY:]FUNCTION");
		snprintf(t->arg, sizeof(t->arg), "%.255s", c + 7);
		return 0;
	}
	return fail(err, errlen, spec,
		    "unknown condition '%s': expected sched-latency>T, offcpu>T, syscall[:NAME]>T, func:PROBE>T, "
		    "crash, oom, app:NAME[>T], app-func:NAME>T, ctl or uprobe:PROBE", c);
}

static int parse_option(const char *spec, char *o, struct bt_trigger_spec *t, char *err, size_t errlen)
{
	char *v = strchr(o, '=');
	uint64_t x;

	if (!v || v == o)
		return fail(err, errlen, spec, "option '%s' is not KEY=VALUE (name=, comm=, pid=, nr=, sig=, after=, limit=)",
			    o);
	*v++ = '\0';
	if (!*v)
		return fail(err, errlen, spec, "option %s= has no value", o);
	if (strcmp(o, "name") == 0) {
		if (strlen(v) >= sizeof(t->name))
			return fail(err, errlen, spec, "name longer than %zu characters", sizeof(t->name) - 1);
		for (const char *p = v; *p; p++)
			if (!(*p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			      (*p >= 'A' && *p <= 'Z')))
				return fail(err, errlen, spec, "name '%s': use letters, digits, '-', '_' and '.'", v);
		snprintf(t->name, sizeof(t->name), "%s", v);
	} else if (strcmp(o, "comm") == 0) {
		if (strlen(v) > 15)
			return fail(err, errlen, spec, "comm '%s' is longer than a task name (15 characters)", v);
		snprintf(t->comm, sizeof(t->comm), "%s", v);
	} else if (strcmp(o, "pid") == 0) {
		if (parse_uint(v, INT32_MAX, &x) || !x)
			return fail(err, errlen, spec, "pid '%s' is not a process id", v);
		t->tgid = (uint32_t)x;
	} else if (strcmp(o, "nr") == 0) {
		if (t->kind != BT_TRIG_SYSCALL)
			return fail(err, errlen, spec, "nr= is for syscall triggers only");
		if (parse_uint(v, 4095, &x))
			return fail(err, errlen, spec, "nr '%s' is not a system call number", v);
		t->nr = (int64_t)x;
	} else if (strcmp(o, "sig") == 0) {
		if (t->kind != BT_TRIG_CRASH)
			return fail(err, errlen, spec, "sig= is for crash triggers only");
		t->sigmask = 0;
		for (char *s = strtok(v, "+"); s; s = strtok(NULL, "+")) {
			int n = signal_nr(s);

			if (n < 0)
				return fail(err, errlen, spec, "unknown signal '%s' (SEGV, BUS, ILL, FPE, ABRT, ... or a number)", s);
			t->sigmask |= 1ull << n;
		}
		if (!t->sigmask)
			return fail(err, errlen, spec, "sig= names no signal");
	} else if (strcmp(o, "after") == 0 || strcmp(o, "limit") == 0) {
		int after = o[0] == 'a';

		if (strcmp(v, "0") == 0)
			x = 0;
		else if (parse_duration(v, &x) || !strpbrk(v, "numsh"))
			return fail(err, errlen, spec, "%s '%s': give a duration with a unit (200ms, 1s)", o, v);
		if (after) {
			t->after_ns = x;
			t->has_after = 1;
		} else {
			t->limit_ns = x;
			t->has_limit = 1;
		}
	} else {
		return fail(err, errlen, spec, "unknown option '%s' (name=, comm=, pid=, nr=, sig=, after=, limit=)", o);
	}
	return 0;
}

int bt_trigger_parse(const char *s, struct bt_trigger_spec *out, char *err, size_t errlen)
{
	struct bt_trigger_spec t;
	char buf[1024], *p;
	size_t cl;
	int r;

	memset(&t, 0, sizeof(t));
	t.nr = -1;
	if (!s || !*s)
		return fail(err, errlen, s ? s : "", "empty trigger: give a condition (e.g. sched-latency>5ms)");
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "...", "spec too long");
	snprintf(buf, sizeof(buf), "%s", s);
	cl = cond_len(buf);
	if (cl == 0)
		return fail(err, errlen, s, "no condition before the first ','");
	if (cl >= sizeof(t.cond))
		return fail(err, errlen, s, "condition too long");
	memcpy(t.cond, buf, cl);
	p = buf + cl;
	if (*p) {
		*p++ = '\0';
		if (!*p)
			return fail(err, errlen, s, "empty option (two commas, or a trailing one)");
	}
	r = parse_cond(s, buf, &t, err, errlen);
	if (r)
		return r;
	while (*p) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		if (!*p)
			return fail(err, errlen, s, "empty option (two commas, or a trailing one)");
		r = parse_option(s, p, &t, err, errlen);
		if (r)
			return r;
		if (!comma)
			break;
		p = comma + 1;
		if (!*p)
			return fail(err, errlen, s, "empty option (two commas, or a trailing one)");
	}
	if ((t.comm[0] || t.tgid) && t.kind == BT_TRIG_CTL)
		return fail(err, errlen, s, "comm= and pid= do not apply to ctl (it has no task)");
	*out = t;
	return 0;
}

int bt_trigger_finish(struct bt_trigger_spec *v, size_t n, uint64_t default_after_ns, uint64_t default_limit_ns,
		      char *err, size_t errlen)
{
	if (n > BT_TRIG_MAX) {
		snprintf(err, errlen, "--trigger: at most %d triggers (%zu given)", BT_TRIG_MAX, n);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!v[i].has_after)
			v[i].after_ns = default_after_ns;
		if (!v[i].has_limit)
			v[i].limit_ns = default_limit_ns;
		if (v[i].name[0])
			continue;
		/* Unnamed: its kind, then kind-2, kind-3 ... not taken by any. */
		for (int k = 1;; k++) {
			char nm[BT_TRIG_NAME_LEN];
			int taken = 0;

			if (k == 1)
				snprintf(nm, sizeof(nm), "%s", bt_trigger_kind_name(v[i].kind));
			else
				snprintf(nm, sizeof(nm), "%s-%d", bt_trigger_kind_name(v[i].kind), k);
			for (size_t j = 0; j < n && !taken; j++)
				taken = j != i && strcmp(v[j].name, nm) == 0;
			if (!taken) {
				memcpy(v[i].name, nm, sizeof(nm));
				break;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(v[i].name, v[j].name) == 0) {
				snprintf(err, errlen, "--trigger: two triggers are named '%s': give each its own name=",
					 v[i].name);
				return -EINVAL;
			}
	return 0;
}

const char *bt_trigger_describe(const struct bt_trigger_fired *f, char *buf, size_t len)
{
	char v[32], th[32], who[64] = "", sc[48] = "";
	const char *scn;

	if (f->tid || f->tgid) {
		if (f->tgid && f->tgid != f->tid)
			snprintf(who, sizeof(who), ", tid %u pid %u (%.16s)", f->tid, f->tgid, f->comm[0] ? f->comm : "?");
		else
			snprintf(who, sizeof(who), ", tid %u (%.16s)", f->tid, f->comm[0] ? f->comm : "?");
	}
	if (f->kind == BT_TRIG_SYSCALL && f->aux >= 0) {
		scn = bt_syscall_name((long)f->aux);
		if (scn)
			snprintf(sc, sizeof(sc), " %s", scn);
		else
			snprintf(sc, sizeof(sc), " nr %lld", (long long)f->aux);
	}
	bt_trigger_value_str(f->kind, f->value, true, v, sizeof(v));
	switch (f->kind) {
	case BT_TRIG_SCHED_LATENCY:
	case BT_TRIG_OFFCPU:
	case BT_TRIG_SYSCALL:
	case BT_TRIG_FUNC:
	case BT_TRIG_APP_SLICE:
	case BT_TRIG_APP_FUNC:
		bt_trigger_value_str(f->kind, f->threshold_ns, false, th, sizeof(th));
		snprintf(buf, len, "%s%s %s > %s%s", bt_trigger_kind_name(f->kind), sc, v, th, who);
		break;
	case BT_TRIG_CRASH:
		snprintf(buf, len, "crash %s%s", v, who);
		break;
	case BT_TRIG_OOM:
		snprintf(buf, len, "oom victim%s", who);
		break;
	case BT_TRIG_CTL:
		snprintf(buf, len, "ctl trigger %s", f->name);
		break;
	default: /* app:NAME, uprobe:PROBE: the condition says it all */
		snprintf(buf, len, "%s%s", f->cond[0] ? f->cond : bt_trigger_kind_name(f->kind), who);
	}
	return buf;
}
