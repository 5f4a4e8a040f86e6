// SPDX-License-Identifier: MIT
/*
 * export_json_text.c - the JSON exporter's text: a JSON string (escaped,
 * invalid UTF-8 replaced), an event opened, its args, closed, a metadata
 * ("M") event; and the per-thread state the event writers share (pid of a
 * tid, its name, open syscall and uprobe entries).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_str.h"
#include "export_json_int.h"

/* ---- JSON text -------------------------------------------------------------- */

/* A JSON string of at most maxlen bytes of s (stops at NUL): escapes quotes,
 * backslashes and control characters, replaces invalid UTF-8 with U+FFFD. */
void jx_jstr(struct jx *j, const char *s, size_t maxlen)
{
	char buf[512];
	size_t o = 0;
	size_t n = s ? strnlen(s, maxlen) : 0;
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
}

/* microseconds with three decimals from ns */
static void jts(struct jx *j, const char *key, uint64_t ns)
{
	bt_sink_printf(j->out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
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

/* A duration such that ts + dur, added in floating point by the reader as
 * Chrome, speedscope and trace processor do, is exactly the double of `to`
 * as jts writes it: a slice ending where the next begins never overlaps it
 * by an ulp (back-to-back CPU runs drew a staircase). b - a of two doubles
 * this close is exact, so a + (b - a) == b; printed to round-trip: 15
 * digits when they do (short), else 17, which always do. */
void jx_ev_dur(struct jx *j, uint64_t from, uint64_t to)
{
	if (to <= from) {
		JW(j, ",\"dur\":0");
		return;
	}
	double d = us_double(to) - us_double(from);
	char b[40];
	snprintf(b, sizeof(b), "%.15g", d);
	if (strtod(b, NULL) != d)
		snprintf(b, sizeof(b), "%.17g", d);
	bt_sink_printf(j->out, ",\"dur\":%s", b);
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

