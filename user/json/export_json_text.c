// SPDX-License-Identifier: MIT
/*
 * export_json_text.c - the JSON exporter's text: a JSON string (escaped,
 * invalid UTF-8 replaced), an event opened, its args, closed, a metadata
 * ("M") event; and the per-thread state the event writers share (pid of a
 * tid, its name, open syscall and uprobe entries).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_str.h"
#include "util.h"
#include "export_json_int.h"

/* ---- JSON text -------------------------------------------------------------- */

/* A JSON string of at most maxlen bytes of s (stops at NUL), escaped first
 * as report escapes names (bt_escape_text: control characters and invalid
 * UTF-8 as "\xNN", so no viewer prints them raw), then as JSON wants:
 * quotes and backslashes. */
void jx_jstr(struct jx *j, const char *raw, size_t maxlen)
{
	char buf[512];
	size_t o = 0;
	size_t rn = raw ? strnlen(raw, maxlen) : 0;
	char small[BT_ESCAPED_LEN(64)], *s = rn <= 64 ? small : malloc(BT_ESCAPED_LEN(rn));

	if (!s) {
		bt_sink_write(j->out, "\"\"", 2);
		return;
	}
	bt_escape_text(raw, rn, s, BT_ESCAPED_LEN(rn));
	size_t n = strlen(s);
	const unsigned char *u = (const unsigned char *)s;

	buf[o++] = '"';
	for (size_t i = 0; i < n;) {
		if (o > sizeof(buf) - 16) {
			bt_sink_write(j->out, buf, o);
			o = 0;
		}
		unsigned c = u[i];
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\u%04x", c);
			i++;
		} else {
			size_t l = bt_utf8_seq_len(u + i, n - i);
			if (!l) {
				memcpy(buf + o, "\\ufffd", 6);
				o += 6;
				i++;
			} else {
				memcpy(buf + o, u + i, l);
				o += l;
				i += l;
			}
		}
	}
	buf[o++] = '"';
	bt_sink_write(j->out, buf, o);
	if (s != small)
		free(s);
}

/* ns as exact microseconds in the shortest form: "7000001", "7000001.5",
 * "7000001.025" (never "7000001.000": the trailing zeros were 4 bytes an
 * event). b holds JX_US_LEN; returns the length. */
size_t jx_us(char *b, uint64_t ns)
{
	unsigned f = (unsigned)(ns % 1000);
	int n = snprintf(b, JX_US_LEN, "%" PRIu64, ns / 1000);
	if (f) {
		n += snprintf(b + n, JX_US_LEN - (size_t)n, ".%03u", f);
		while (b[n - 1] == '0')
			b[--n] = '\0';
	}
	return (size_t)n;
}

static void jts(struct jx *j, const char *key, uint64_t ns)
{
	char b[JX_US_LEN];
	size_t n = jx_us(b, ns);
	bt_sink_printf(j->out, ",\"%s\":", key);
	bt_sink_write(j->out, b, n);
}

void jx_ev_open(struct jx *j, const char *ph, const char *name, const char *cat, uint64_t ts, uint32_t pid,
		uint32_t tid)
{
	if (j->nevents_out)
		JW(j, ",\n{\"ph\":\"");
	else
		JW(j, "\n{\"ph\":\"");
	bt_sink_write(j->out, ph, strlen(ph));
	JW(j, "\",\"name\":");
	jx_jstr(j, name, 256);
	if (cat) {
		JW(j, ",\"cat\":");
		jx_jstr(j, cat, 128);
	}
	jx_size_mark(j, ts);
	jts(j, "ts", ts);
	bt_sink_printf(j->out, ",\"pid\":%u,\"tid\":%u", pid, tid);
	j->nevents_out = 1;
	j->nargs = -1;
	j->st->records++;
}

/* The double a reader parses from ns as jts writes it: the decimal
 * ns/1000 correctly rounded, as strtod does; ns and 1000 are exact doubles
 * (ns < 2^53) and IEEE division rounds correctly, so it is ns / 1000.0. */
static double us_double(uint64_t ns)
{
	return (double)ns / 1000.0;
}

/* d's exact decimal into t (d > 0, finite) where it has at most 15
 * significant digits (d = M / 2^s, its decimal s fraction digits: fast,
 * no printf or strtod); 0 where it has more. */
static int exact_decimal(char *t, size_t len, double d)
{
	int e;
	uint64_t m = (uint64_t)ldexp(frexp(d, &e), 53); /* d = m * 2^(e - 53), exactly */
	int s = 53 - e;

	while (s > 0 && !(m & 1)) {
		m >>= 1;
		s--;
	}
	if (s < 0 || s > 19) /* 2^-s to 19 digits; past 2^64 whole */
		return 0;
	uint64_t ip = m >> s, fr = m & ((1ull << s) - 1), p5 = 1;
	for (int i = 0; i < s; i++)
		p5 *= 5;
	uint64_t fd = fr * p5; /* < 10^s: the s fraction digits */
	int idig = 0, fdig = 0;
	for (uint64_t v = ip; v; v /= 10)
		idig++;
	for (uint64_t v = fd; v; v /= 10)
		fdig++;
	if ((ip ? idig + s : fdig) > 15) /* without a whole part, the fraction's zeros before its digits do not count */
		return 0;
	if (s)
		snprintf(t, len, "%" PRIu64 ".%0*" PRIu64, ip, s, fd);
	else
		snprintf(t, len, "%" PRIu64, ip);
	return 1;
}

/* The shortest duration text that is exact for every reader: trace
 * processor takes llround(dur * 1000) ns (it must be to - from); Chrome
 * adds ts + dur in floating point, and speedscope does so after taking the
 * thread's first ts off every ts. A slice ending where the next begins
 * must end on that double in both, or it overlaps it by an ulp (a
 * staircase in Chrome, the next run nested in this one in speedscope).
 * All three hold where dur is exactly d = b - a (then the sums are exact
 * at any base) and d is to - from to the ns: its exact decimal where that
 * has 15 significant digits or fewer, else the shortest of 15 to 17 digits
 * that parses back to it. Where d is not (ts past 2^42 us, 51 days after
 * boot, whose doubles are ~1 ns apart; a slice longer than the time since
 * boot at its start) speedscope's rule cannot hold with trace
 * processor's: the shortest "%.kf" both others end on (below). */
void jx_ev_dur(struct jx *j, uint64_t from, uint64_t to)
{
	if (to <= from) {
		JW(j, ",\"dur\":0");
		return;
	}
	double a = us_double(from), b = us_double(to), d = b - a;
	char t[48];

	if (a + d == b && llround(d * 1000.0) == (long long)(to - from)) {
		if (!exact_decimal(t, sizeof(t), d))
			for (int k = 15; k <= 17; k++) {
				snprintf(t, sizeof(t), "%.*g", k, d);
				if (strtod(t, NULL) == d)
					break;
			}
	} else {
		/* a text within half an ulp of d (Chrome ends on b) and half a ns
		 * of the duration (trace processor's ns): the shortest "%.kf" of
		 * the middle of both ranges; where they do not meet (doubles
		 * 2 ns apart, 102 days after boot) the duration's exact decimal */
		unsigned f = (unsigned)((to - from) % 1000);
		int k0 = !f ? 0 : f % 10 ? 3 : f % 100 ? 2 : 1, k;
		double u = nextafter(b, INFINITY) - b, dn = (double)(to - from) / 1000.0;
		double lo = fmax(d - u / 2, dn - 0.0005), hi = fmin(d + u / 2, dn + 0.0005), mid = (lo + hi) / 2;
		for (k = k0; k <= 12; k++) {
			snprintf(t, sizeof(t), "%.*f", k, mid);
			double x = strtod(t, NULL);
			if (a + x == b && llround(x * 1000.0) == (long long)(to - from))
				break;
		}
		if (k > 12)
			snprintf(t, sizeof(t), "%.*f", k0, dn);
	}
	bt_sink_printf(j->out, ",\"dur\":%s", t);
}

static void arg_key(struct jx *j, const char *k)
{
	if (j->nargs < 0) {
		JW(j, ",\"args\":{");
		j->nargs = 0;
	}
	if (j->nargs++)
		JW(j, ",");
	jx_jstr(j, k, 128);
	JW(j, ":");
}

void jx_arg_u(struct jx *j, const char *k, uint64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "%" PRIu64, v);
}

void jx_arg_i(struct jx *j, const char *k, int64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "%" PRId64, v);
}

void jx_arg_hex(struct jx *j, const char *k, uint64_t v)
{
	arg_key(j, k);
	bt_sink_printf(j->out, "\"0x%" PRIx64 "\"", v);
}

void jx_arg_s(struct jx *j, const char *k, const char *v, size_t maxlen)
{
	arg_key(j, k);
	jx_jstr(j, v, maxlen);
}

void jx_arg_b(struct jx *j, const char *k, int v)
{
	arg_key(j, k);
	if (v)
		JW(j, "true");
	else
		JW(j, "false");
}

void jx_ev_close(struct jx *j)
{
	if (j->nargs >= 0)
		JW(j, "}");
	JW(j, "}");
}

void jx_meta(struct jx *j, const char *what, uint32_t pid, uint32_t tid, const char *key, const char *sval,
	     int64_t ival)
{
	jx_size_pause(j); /* names are no record's: a window keeps those it needs */
	if (j->nevents_out)
		JW(j, ",\n");
	else
		JW(j, "\n");
	bt_sink_printf(j->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"%s\":", what, pid, tid,
		       key);
	if (sval)
		jx_jstr(j, sval, 256);
	else
		bt_sink_printf(j->out, "%" PRId64, ival);
	JW(j, "}}");
	j->nevents_out = 1;
	j->st->records++;
}

/* ---- helpers ------------------------------------------------------------------ */

uint32_t jx_pid_of(struct jx *j, uint32_t tid, uint32_t tgid_hint)
{
	if (tgid_hint)
		return tgid_hint;
	const struct bt_xthread *t = bt_export_thread(j->p, tid);
	return t && t->tgid ? t->tgid : tid;
}

const char *jx_comm(struct jx *j, uint32_t tid, uint32_t cpu)
{
	return bt_namer_comm(j->nm, tid, cpu);
}

struct jthread *jx_thread_state(struct jx *j, uint32_t tid)
{
	uint32_t idx;
	if (bt_u32map_get(&j->tmap, tid, &idx))
		return &j->th[idx];
	if (j->nth == j->capth) {
		size_t cap = j->capth ? j->capth * 2 : 256;
		void *q = realloc(j->th, cap * sizeof(*j->th));
		if (!q)
			return NULL;
		j->th = q;
		j->capth = cap;
	}
	if (bt_u32map_put(&j->tmap, tid, (uint32_t)j->nth) < 0)
		return NULL;
	memset(&j->th[j->nth], 0, sizeof(j->th[j->nth]));
	j->th[j->nth].tid = tid;
	return &j->th[j->nth++];
}

