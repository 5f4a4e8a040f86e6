// SPDX-License-Identifier: MIT
/*
 * util.c - strict size/duration parsing, escaping, files (see util.h).
 *
 * strtoull() is not used on purpose: it accepts leading spaces, a sign
 * ("-5" wraps to a huge value) and prefixes, none of which a size may have.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "util.h"
#include "json_str.h" /* bt_utf8_seq_len */

/* Scan [0-9]+ at *sp. Returns 0 with the value, -EINVAL if no digit,
 * -ERANGE on overflow (the digits are still consumed). */
static int scan_digits(const char **sp, uint64_t *v)
{
	const char *s = *sp;
	uint64_t x = 0;
	int err = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			err = -ERANGE;
		else
			x = x * 10 + d;
	}
	*sp = s;
	*v = x;
	return err;
}

static int mul_checked(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b && a > UINT64_MAX / b)
		return -ERANGE;
	*out = a * b;
	return 0;
}

uint64_t bt_mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

int parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mult = 1, r;
	int err;

	if (!s)
		return -EINVAL;
	err = scan_digits(&s, &v);
	if (err == -EINVAL)
		return err;
	switch (*s) {
	case 'k': case 'K': mult = 1ull << 10; s++; break;
	case 'm': case 'M': mult = 1ull << 20; s++; break;
	case 'g': case 'G': mult = 1ull << 30; s++; break;
	case 't': case 'T': mult = 1ull << 40; s++; break;
	default: break;
	}
	/* Optional "B" or (after a multiplier) "iB". */
	if (mult > 1 && (*s == 'i' || *s == 'I') && (s[1] == 'b' || s[1] == 'B'))
		s += 2;
	else if (*s == 'b' || *s == 'B')
		s++;
	if (*s)
		return -EINVAL;
	if (err)
		return err;
	if (v == 0)
		return -EINVAL;
	if (mul_checked(v, mult, &r))
		return -ERANGE;
	*out = r;
	return 0;
}

int parse_duration(const char *s, uint64_t *out_ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "ns", 1 },
		{ "us", 1000 },
		{ "ms", 1000000 },
		{ "s", 1000000000ull },
		{ "", 1000000000ull },
		{ "m", 60 * 1000000000ull },
		{ "min", 60 * 1000000000ull },
		{ "h", 3600 * 1000000000ull },
	};
	uint64_t v, r, frac = 0, scale = 1;
	int err;

	if (!s)
		return -EINVAL;
	err = scan_digits(&s, &v);
	if (err == -EINVAL)
		return err;
	if (*s == '.') { /* a decimal fraction: 1.5s, 0.25ms (up to 9 digits) */
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++)
			if (scale < 1000000000ull) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(s, units[i].unit) != 0 || (strcmp(units[i].unit, "m") == 0 && strcmp(s, "M") == 0))
			continue;
		if (err)
			return err;
		if (mul_checked(v, units[i].ns, &r))
			return -ERANGE;
		r += (uint64_t)((long double)frac * (long double)units[i].ns / (long double)scale);
		if (r == 0)
			return -EINVAL;
		*out_ns = r;
		return 0;
	}
	return -EINVAL;
}

int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int err;

	if (!s)
		return -EINVAL;
	err = scan_digits(&s, &v);
	if (err == -EINVAL || *s)
		return -EINVAL;
	if (err || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

const char *format_size(uint64_t bytes, char *buf, unsigned len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	double v = (double)bytes;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const char *format_duration(uint64_t ns, char *buf, unsigned len)
{
	static const struct {
		uint64_t ns;
		const char *unit;
	} units[] = { { 3600000000000ull, "h" }, { 60000000000ull, "m" }, { 1000000000ull, "s" },
		      { 1000000ull, "ms" }, { 1000ull, "us" }, { 1, "ns" } };

	if (!ns) {
		snprintf(buf, len, "0s");
		return buf;
	}
	/* In the largest unit it reaches: whole (1h, 250ms) or to 4 digits
	 * (1.5s, 1.5m): what a user would write, never 3.6e+03s. */
	size_t i = 0;
	while (ns < units[i].ns)
		i++;
	if (ns % units[i].ns == 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].unit);
	else
		snprintf(buf, len, "%.4g%s", (double)ns / (double)units[i].ns, units[i].unit);
	return buf;
}

void bt_thread_nice(int nice, const char *what)
{
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice))
		bt_info("%s keeps normal priority: %s", what, strerror(errno));
}

void bt_thread_realtime(const char *what, int fallback_nice)
{
	struct sched_param p = { .sched_priority = 1 };
	int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);

	if (!e)
		return;
	/* Refused also to root: a cpu cgroup with CONFIG_RT_GROUP_SCHED and
	 * no real-time runtime of its own (cpu.rt_runtime_us 0, the default
	 * for a new group), or no CAP_SYS_NICE. */
	bt_info("%s: no real-time priority (%s), nice %d instead", what, strerror(e), fallback_nice);
	bt_thread_nice(fallback_nice, what);
}

int bt_mkdir_p(const char *dir, mode_t mode)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	struct stat st;

	if (n == 0 || n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	/* Each prefix ending at a slash, then the whole name. */
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		p[i] = c;
	}
	/* EEXIST also answers for a file of that name. */
	if (stat(dir, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int bt_write_full(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t r = write(fd, b, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

const char *bt_escape_text(const char *s, size_t maxlen, char *buf, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = s ? strnlen(s, maxlen) : 0, o = 0;

	if (!len)
		return buf;
	for (size_t i = 0; i < n;) {
		char esc[16];
		size_t l = bt_utf8_seq_len(u + i, n - i), k;
		unsigned c = u[i];
		if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
			esc[0] = '\\';
			esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : '\\';
			k = 2, l = 1;
		} else if (!l || c < 0x20 || c == 0x7f) {
			k = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", c), l = 1;
		} else if (l == 2 && c == 0xc2 && u[i + 1] < 0xa0) { /* C1 control, U+0080..U+009F */
			k = (size_t)snprintf(esc, sizeof(esc), "\\xc2\\x%02x", u[i + 1]);
		} else {
			memcpy(esc, u + i, l);
			k = l;
		}
		if (o + k >= len)
			break;
		memcpy(buf + o, esc, k);
		o += k;
		i += l;
	}
	buf[o] = '\0';
	return buf;
}

int bt_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t bt_str_hash(const char *s, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}
