// SPDX-License-Identifier: MIT
/*
 * probe_spec.c - parsing of one -u / -U probe spec (syntax in probe_spec.h).
 * Pure text work: nothing is looked up here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include "probe_spec.h"
#include "util.h"

/* Copy with truncation check. */
static int scopy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

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

static int parse(const char *spec, int usdt, struct bt_uprobe_spec *out, char *buf, char **err);

int bt_uprobe_parse(const char *spec, int usdt, struct bt_uprobe_spec *out, char **err)
{
	char *buf;
	int r;

	memset(out, 0, sizeof(*out));
	out->usdt = !!usdt;
	if (!spec || !*spec)
		return bt_errs(err, EINVAL, "%s: empty probe spec", usdt ? "-U" : "-u");
	buf = strdup(spec); /* any length: only each part has a limit */
	if (!buf)
		return bt_errs(err, ENOMEM, "out of memory");
	r = parse(spec, usdt, out, buf, err);
	free(buf);
	return r;
}

/* The work of bt_uprobe_parse on buf, a copy of spec it may cut up. */
static int parse(const char *spec, int usdt, struct bt_uprobe_spec *out, char *buf, char **err)
{
	const char *opt = usdt ? "-U" : "-u";
	char *fn, *plus;
	size_t len = strlen(buf);
	long c;

	if (usdt) {
		/* [BINARY:]PROVIDER:NAME, split from the right (a path may hold ':'). */
		char *n = strrchr(buf, ':'), *p;

		if (!n || n == buf || !n[1])
			return bt_errs(err, EINVAL,
				    "-U '%s': expected BINARY:PROVIDER:NAME (e.g. -U /usr/bin/python3:python:function__entry)",
				    spec);
		*n++ = '\0';
		p = strrchr(buf, ':');
		if (p) {
			*p++ = '\0';
			if (!buf[0])
				return bt_errs(err, EINVAL, "-U '%s': empty binary before the provider", spec);
		} else {
			p = buf;
		}
		if (!*p)
			return bt_errs(err, EINVAL, "-U '%s': empty provider", spec);
		if (scopy(out->binary, sizeof(out->binary), p == buf ? "" : buf, p == buf ? 0 : strlen(buf)) ||
		    scopy(out->provider, sizeof(out->provider), p, strlen(p)) ||
		    scopy(out->name, sizeof(out->name), n, strlen(n)))
			return bt_errs(err, EINVAL, "-U '%s': a part is too long (binary %zu bytes at most, provider and name %zu)",
				       spec, sizeof(out->binary) - 1, sizeof(out->provider) - 1);
		return 0;
	}

	if (len > 7 && strcmp(buf + len - 7, "%return") == 0) {
		out->retprobe = 1;
		buf[len - 7] = '\0';
	} else if (strchr(buf, '%')) {
		return bt_errs(err, EINVAL, "%s '%s': unknown suffix '%s' (only %%return)", opt, spec,
			    strchr(buf, '%'));
	}
	c = single_colon(buf);
	if (c >= 0) {
		buf[c] = '\0';
		if (c == 0)
			return bt_errs(err, EINVAL, "-u '%s': empty binary before ':'", spec);
		if (scopy(out->binary, sizeof(out->binary), buf, (size_t)c))
			return bt_errs(err, EINVAL, "-u '%s': binary path too long (%zu bytes at most)", spec,
				       sizeof(out->binary) - 1);
		fn = buf + c + 1;
	} else {
		fn = buf;
	}
	if (!*fn)
		return bt_errs(err, EINVAL, "-u '%s': no function (expected [BINARY:]FUNCTION[+OFFSET][%%return])",
			    spec);
	/* +OFFSET: a '+' followed by a number to the end ("operator+" has none). */
	plus = strrchr(fn, '+');
	if (plus && plus > fn && plus[1] && isdigit((unsigned char)plus[1])) {
		int r = parse_num(plus + 1, &out->offset);

		if (r)
			return bt_errs(err, EINVAL, "-u '%s': bad offset '%s' (decimal or 0x hex)", spec, plus + 1);
		*plus = '\0';
	}
	if (fn[0] == '0' && (fn[1] == 'x' || fn[1] == 'X')) {
		if (parse_num(fn, &out->addr))
			return bt_errs(err, EINVAL, "-u '%s': bad address '%s'", spec, fn);
		out->has_addr = 1;
		out->addr += out->offset;
		out->offset = 0;
	} else if (scopy(out->func, sizeof(out->func), fn, strlen(fn))) {
		return bt_errs(err, EINVAL, "-u '%s': function name too long (%zu bytes at most)", spec,
			       sizeof(out->func) - 1);
	}
	if (out->retprobe && out->offset)
		return bt_errs(err, EINVAL,
			    "-u '%s': a return probe goes on the function's entry; drop +%" PRIu64 " or %%return",
			    spec, out->offset);
	return 0;
}

