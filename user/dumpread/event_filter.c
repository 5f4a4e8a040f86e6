// SPDX-License-Identifier: MIT
/*
 * event_filter.c - the event selection shared by `report` and `convert`
 * (CPUs, pids, types, a time window): parsing and the per-event predicate.
 */
#include "event_filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"

int bt_filter_parse_u32(const char **s, uint32_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return -ERANGE;
		p++;
	}
	*s = p;
	*out = (uint32_t)v;
	return 0;
}

/* [@|-]SECONDS[.FRACTION] of exactly len bytes */
static int parse_time_n(struct bt_time_spec *t, const char *arg, size_t len)
{
	const char *p = arg, *end = arg + len;
	uint64_t sec = 0, frac = 0, scale = 100000000;
	int mode = BT_TIME_AFTER_FIRST, digits = 0;
	if (p < end && *p == '@')
		mode = BT_TIME_ABS, p++;
	else if (p < end && *p == '-')
		mode = BT_TIME_BEFORE_LAST, p++;
	while (p < end && *p >= '0' && *p <= '9') {
		sec = sec * 10 + (uint64_t)(*p++ - '0');
		digits++;
		if (sec > 10000000000ull) /* > 300 years: keeps sec * 1e9 in 64 bits */
			return -ERANGE;
	}
	if (p < end && *p == '.') {
		p++;
		while (p < end && *p >= '0' && *p <= '9') {
			frac += (uint64_t)(*p++ - '0') * scale;
			scale /= 10;
			digits++;
		}
	}
	if (p != end || !digits)
		return -EINVAL;
	t->mode = mode;
	t->ns = sec * 1000000000ull + frac;
	t->set = 1;
	return 0;
}

int bt_filter_parse_time(struct bt_time_spec *t, const char *arg)
{
	return parse_time_n(t, arg, strlen(arg));
}

int bt_filter_parse_time_range(struct bt_event_filter *f, const char *arg)
{
	/* The first "..": "1...2" is 1 .. .2 (an end never starts with "."
	 * unless it is a fraction). */
	const char *dd = strstr(arg, "..");
	if (!dd || (dd == arg && !dd[2]))
		return -EINVAL;
	struct bt_time_spec a = { 0 }, b = { 0 };
	int r;
	if (dd > arg && (r = parse_time_n(&a, arg, (size_t)(dd - arg))) < 0)
		return r;
	if (dd[2] && (r = bt_filter_parse_time(&b, dd + 2)) < 0)
		return r;
	f->since = a;
	f->until = b;
	return 0;
}

int bt_filter_parse_pids(struct bt_event_filter *f, const char *arg)
{
	const char *p = arg;
	for (;;) {
		uint32_t v;
		if (bt_filter_parse_u32(&p, &v) < 0)
			return -EINVAL;
		uint32_t *n = realloc(f->pids, (f->npids + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		f->pids = n;
		f->pids[f->npids++] = v;
		if (*p == '\0')
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

int bt_filter_parse_cpus(struct bt_event_filter *f, const char *arg)
{
	const char *p = arg;
	if (!f->cpus && !(f->cpus = calloc(BT_DUMP_MAX_CPUS / 8, 1)))
		return -ENOMEM;
	for (;;) {
		uint32_t a, b;
		if (bt_filter_parse_u32(&p, &a) < 0)
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (bt_filter_parse_u32(&p, &b) < 0 || b < a)
				return -EINVAL;
		}
		if (b >= BT_DUMP_MAX_CPUS)
			return -ERANGE;
		for (uint32_t c = a; c <= b; c++)
			f->cpus[c / 8] |= (uint8_t)(1u << (c % 8));
		if (*p == '\0')
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

static uint64_t resolve_time(const struct bt_time_spec *t, uint64_t first, uint64_t last, uint64_t dflt)
{
	if (!t->set)
		return dflt;
	switch (t->mode) {
	case BT_TIME_AFTER_FIRST:
		return first + t->ns < first ? UINT64_MAX : first + t->ns;
	case BT_TIME_BEFORE_LAST:
		return t->ns > last ? 0 : last - t->ns;
	default:
		return t->ns;
	}
}

void bt_filter_resolve(struct bt_event_filter *f, uint64_t first_ts, uint64_t last_ts)
{
	f->t0 = resolve_time(&f->since, first_ts, last_ts, 0);
	f->t1 = resolve_time(&f->until, first_ts, last_ts, UINT64_MAX);
}

int bt_filter_cpu_ok(const struct bt_event_filter *f, uint32_t cpu)
{
	return !f->cpus || (cpu < BT_DUMP_MAX_CPUS && (f->cpus[cpu / 8] & (1u << (cpu % 8))));
}

int bt_filter_time_ok(const struct bt_event_filter *f, uint64_t ts)
{
	return ts >= f->t0 && ts <= f->t1;
}

int bt_filter_pid_ok(const struct bt_event_filter *f, uint32_t pid)
{
	if (!f->npids)
		return 1;
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return 1;
	return 0;
}

/* the task an event is about, besides the current one; 0 if none */
static uint32_t subject_tid(const struct bt_event_hdr *h)
{
	switch (h->type) {
	case BT_EV_SCHED_SWITCH:
		return ((const struct bt_ev_sched_switch *)h)->next_tid;
	case BT_EV_SCHED_WAKEUP:
	case BT_EV_SCHED_WAKEUP_NEW:
	case BT_EV_SCHED_WAKING:
		return ((const struct bt_ev_sched_wakeup *)h)->tid;
	case BT_EV_SCHED_MIGRATE:
		return ((const struct bt_ev_sched_migrate *)h)->tid;
	case BT_EV_PROCESS_FORK:
	case BT_EV_PROCESS_EXIT:
	case BT_EV_TASK_RENAME:
		return ((const struct bt_ev_task *)h)->tid;
	default:
		return 0;
	}
}

int bt_filter_match(const struct bt_event_filter *f, const struct bt_event_hdr *h)
{
	if (!bt_filter_time_ok(f, h->ts_ns) || !bt_filter_cpu_ok(f, h->cpu))
		return 0;
	if (f->types && (h->type >= 32 || !(f->types & (1u << h->type))))
		return 0;
	if (f->npids && !bt_filter_pid_ok(f, h->tid) && !bt_filter_pid_ok(f, h->tgid)) {
		uint32_t s = subject_tid(h);
		if (!s || !bt_filter_pid_ok(f, s))
			return 0;
	}
	return 1;
}

int bt_filter_active(const struct bt_event_filter *f)
{
	return f->cpus || f->npids || f->types || f->since.set || f->until.set;
}

void bt_filter_free(struct bt_event_filter *f)
{
	free(f->cpus);
	free(f->pids);
	f->cpus = NULL;
	f->pids = NULL;
	f->npids = 0;
}
