// SPDX-License-Identifier: MIT
/*
 * seq_window.c - sequence analysis of a dump's events (see dump.h): every
 * CPU's 32-bit event seqs unwrapped along time order, the seq gaps (events
 * missing from the dump) and duplicates, and the latest continuous window in
 * which no CPU misses an event.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"

struct sq {
	uint64_t seq; /* unwrapped */
	uint64_t ts;
	size_t idx;   /* in the time-ordered event array */
};

static int cmp_sq(const void *a, const void *b)
{
	const struct sq *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Events bucketed by CPU (start[c]..start[c+1]), each bucket in seq order.
 * The 32-bit seq is unwrapped along time order: consecutive events of a CPU
 * differ by less than 2^31 seqs. */
struct seqs {
	size_t *start; /* [ncpus + 1] */
	struct sq *it;
};

static void seqs_free(struct seqs *q)
{
	free(q->start);
	free(q->it);
}

/* Per-CPU seqs are the BPF side's; application events number per thread. */
static int kernel_seq(const struct bt_event_hdr *h, uint32_t ncpus)
{
	return h->cpu < ncpus && !(h->type >= BT_EV_APP_INSTANT && h->type <= BT_EV_APP_FUNC_EXIT);
}

/* The i-th of n time-ordered events as a seq record; 0 if it has no kernel
 * seq. Two sources: a dump's events, or records kept without them. */
typedef int (*seq_get_fn)(const void *src, size_t i, uint32_t ncpus, struct bt_seq_rec *out);

static int get_event(const void *src, size_t i, uint32_t ncpus, struct bt_seq_rec *out)
{
	const struct bt_event_hdr *h = ((const struct bt_dump_event *)src)[i].ev;

	if (!kernel_seq(h, ncpus))
		return 0;
	*out = (struct bt_seq_rec){ .ts = h->ts_ns, .seq = h->seq, .cpu = h->cpu };
	return 1;
}

static int get_rec(const void *src, size_t i, uint32_t ncpus, struct bt_seq_rec *out)
{
	*out = ((const struct bt_seq_rec *)src)[i];
	return out->cpu < ncpus;
}

/* Time order within a CPU, as bt_dump_events' is: time, seq (then the
 * input's order). */
static int cmp_sq_time(const void *a, const void *b)
{
	const struct sq *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorts a CPU's events, which arrive as a few sorted runs (its blocks in
 * the buffer's ring order, the cold tier's before them: 7 runs in 1.3 M
 * events of a 16 MiB dump): the runs are found and merged pairwise, n
 * log(runs) compares where qsort spends n log n. Stable. -ENOMEM leaves
 * the events as they were. */
static int sort_runs(struct sq *a, size_t k, int (*cmp)(const void *, const void *))
{
	size_t nb = 1, *bd;
	struct sq *tmp, *src = a, *dst, *swap;

	for (size_t j = 1; j < k; j++)
		nb += cmp(&a[j - 1], &a[j]) > 0;
	if (nb == 1)
		return 0;
	bd = malloc((nb + 1) * sizeof(*bd));
	tmp = malloc(k * sizeof(*tmp));
	if (!bd || !tmp) {
		free(bd);
		free(tmp);
		return -ENOMEM;
	}
	nb = 0;
	bd[nb++] = 0;
	for (size_t j = 1; j < k; j++)
		if (cmp(&a[j - 1], &a[j]) > 0)
			bd[nb++] = j;
	bd[nb] = k; /* runs [bd[i], bd[i+1]) for i < nb */
	dst = tmp;
	while (nb > 1) {
		size_t out = 0;

		for (size_t i = 0; i < nb; i += 2) {
			size_t lo = bd[i], mid = i + 1 < nb ? bd[i + 1] : bd[nb], hi = i + 1 < nb ? bd[i + 2] : bd[nb];
			size_t x = lo, y = mid, o = lo;

			while (x < mid && y < hi)
				dst[o++] = cmp(&src[y], &src[x]) < 0 ? src[y++] : src[x++];
			memcpy(dst + o, src + x, (mid - x) * sizeof(*dst));
			o += mid - x;
			memcpy(dst + o, src + y, (hi - y) * sizeof(*dst));
			bd[out++] = lo;
		}
		bd[out] = k;
		nb = out;
		swap = src; /* the merged runs are the next pass's source */
		src = dst;
		dst = swap;
	}
	if (src != a)
		memcpy(a, src, k * sizeof(*a));
	free(tmp);
	free(bd);
	return 0;
}

static int seqs_build(seq_get_fn get, const void *src, size_t n, uint32_t ncpus, struct seqs *q)
{
	size_t *fill = calloc(ncpus ? ncpus : 1, sizeof(*fill));
	struct bt_seq_rec r;
	q->start = calloc((size_t)ncpus + 1, sizeof(*q->start));
	q->it = malloc((n ? n : 1) * sizeof(*q->it));
	if (!fill || !q->start || !q->it) {
		free(fill);
		seqs_free(q);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (get(src, i, ncpus, &r))
			q->start[r.cpu + 1]++;
	for (uint32_t c = 0; c < ncpus; c++)
		q->start[c + 1] += q->start[c];
	for (size_t i = 0; i < n; i++)
		if (get(src, i, ncpus, &r))
			q->it[q->start[r.cpu] + fill[r.cpu]++] = (struct sq){ .seq = r.seq, .ts = r.ts, .idx = i };
	for (uint32_t c = 0; c < ncpus; c++) {
		struct sq *a = q->it + q->start[c];
		size_t k = fill[c];
		uint64_t last = 0;

		/* The 32-bit seq is unwrapped along the CPU's time order. */
		if (sort_runs(a, k, cmp_sq_time) < 0)
			goto nomem;
		for (size_t j = 0; j < k; j++) {
			uint32_t s = (uint32_t)a[j].seq;
			if (j == 0)
				last = (1ull << 32) + s; /* headroom for a first event seen out of order */
			else
				last += (uint64_t)(int64_t)(int32_t)(s - (uint32_t)last);
			a[j].seq = last;
		}
		if (sort_runs(a, k, cmp_sq) < 0)
			goto nomem;
	}
	free(fill);
	return 0;
nomem:
	free(fill);
	seqs_free(q);
	return -ENOMEM;
}

static int analyze(seq_get_fn get, const void *src, size_t n, uint32_t ncpus, uint64_t resumed_ts,
		   struct bt_seq_window *w, struct bt_seq_cpu *percpu)
{
	struct seqs q = { 0 };
	memset(w, 0, sizeof(*w));
	w->limit_cpu = -1;
	if (percpu)
		memset(percpu, 0, sizeof(*percpu) * ncpus);
	if (!n || !ncpus)
		return 0;
	struct bt_seq_cpu *pc = percpu ? percpu : calloc(ncpus, sizeof(*pc));
	if (!pc || seqs_build(get, src, n, ncpus, &q) < 0) {
		if (pc != percpu)
			free(pc);
		return -ENOMEM;
	}

	w->first_ts = UINT64_MAX;
	for (uint32_t c = 0; c < ncpus; c++) {
		const struct sq *a = q.it + q.start[c];
		size_t k = q.start[c + 1] - q.start[c];
		struct bt_seq_cpu *p = &pc[c];
		uint64_t gap_ts = 0;
		if (!k)
			continue;
		p->events = k;
		p->first_ts = UINT64_MAX;
		p->first_seq = (uint32_t)a[0].seq;
		p->last_seq = (uint32_t)a[k - 1].seq;
		for (size_t j = 0; j < k; j++) {
			if (a[j].ts < p->first_ts)
				p->first_ts = a[j].ts;
			if (a[j].ts > p->last_ts)
				p->last_ts = a[j].ts;
			if (!j)
				continue;
			uint64_t dlt = a[j].seq - a[j - 1].seq;
			if (dlt == 0) {
				p->dups++;
			} else if (dlt > 1) {
				p->gaps++;
				p->missing += dlt - 1;
				if (a[j].ts >= gap_ts) {
					gap_ts = a[j].ts;
					p->gap_from = (uint32_t)(a[j - 1].seq + 1);
					p->gap_to = (uint32_t)(a[j].seq - 1);
				}
			}
		}
		p->limit = BT_SEQ_LIMIT_NONE;
		p->start_ts = 0;
		if (p->first_seq != 0) {
			/* older events of this CPU existed: it is continuous only
			 * from its oldest retained event on */
			p->limit = BT_SEQ_LIMIT_HISTORY;
			p->start_ts = a[0].ts;
		}
		if (p->gaps && gap_ts >= p->start_ts) {
			p->limit = BT_SEQ_LIMIT_GAP;
			p->start_ts = gap_ts;
		}
		w->events += k;
		w->cpus_with_events++;
		w->gaps += p->gaps;
		w->missing += p->missing;
		w->dups += p->dups;
		if (p->first_ts < w->first_ts)
			w->first_ts = p->first_ts;
		if (p->last_ts > w->last_ts)
			w->last_ts = p->last_ts;
	}
	if (!w->events) {
		w->first_ts = 0;
	} else {
		uint64_t cont = w->first_ts;
		for (uint32_t c = 0; c < ncpus; c++) {
			if (!pc[c].events || pc[c].limit == BT_SEQ_LIMIT_NONE)
				continue;
			if (w->limit_cpu < 0 ? pc[c].start_ts >= cont : pc[c].start_ts > cont) {
				cont = pc[c].start_ts;
				w->limit_cpu = (int32_t)c;
			}
		}
		/* Nothing was recorded while a previous recorder handed over
		 * (bt_dump_restart): the window is continuous from the resume. */
		if (resumed_ts > cont && w->first_ts < resumed_ts) {
			cont = resumed_ts;
			w->limit_cpu = -1;
			w->restart_limit = 1;
		}
		w->cont_start_ts = cont;
		/* The events the window counts are the ones analyzed above. */
		for (uint32_t c = 0; c < ncpus; c++)
			for (size_t j = q.start[c]; j < q.start[c + 1]; j++)
				w->cont_events += q.it[j].ts >= cont;
	}
	seqs_free(&q);
	if (pc != percpu)
		free(pc);
	return 0;
}

int bt_seq_analyze(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_seq_window *w,
		   struct bt_seq_cpu *percpu)
{
	return analyze(get_event, ev, n, ncpus, 0, w, percpu);
}

int bt_seq_analyze_dump(const struct bt_dump *d, const struct bt_dump_event *ev, size_t n, uint32_t ncpus,
			struct bt_seq_window *w, struct bt_seq_cpu *percpu)
{
	const struct bt_dump_restart *rs = bt_dump_restart(d);

	return analyze(get_event, ev, n, ncpus, rs ? rs->resumed_ts : 0, w, percpu);
}

/* The records in any order: seqs_build puts each CPU's in time order. */
int bt_seq_analyze_recs(const struct bt_seq_rec *r, size_t n, uint32_t ncpus, uint64_t resumed_ts, struct bt_seq_window *w)
{
	return analyze(get_rec, r, n, ncpus, resumed_ts, w, NULL);
}

static int cmp_gap(const void *a, const void *b)
{
	const struct bt_seq_gap *x = a, *y = b;
	return x->index < y->index ? -1 : x->index > y->index;
}

int bt_seq_gaps(const struct bt_dump_event *ev, size_t n, uint32_t ncpus, struct bt_seq_gap **out, size_t *nout)
{
	struct seqs q = { 0 };
	size_t cnt = 0, cap = 0;
	struct bt_seq_gap *g = NULL;

	*out = NULL;
	*nout = 0;
	if (!n || !ncpus)
		return 0;
	if (seqs_build(get_event, ev, n, ncpus, &q) < 0)
		return -ENOMEM;
	for (uint32_t c = 0; c < ncpus; c++) {
		const struct sq *a = q.it + q.start[c];
		size_t k = q.start[c + 1] - q.start[c];
		for (size_t j = 1; j < k; j++) {
			uint64_t dlt = a[j].seq - a[j - 1].seq;
			if (dlt <= 1)
				continue;
			if (cnt == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *p = realloc(g, nc * sizeof(*g));
				if (!p) {
					free(g);
					seqs_free(&q);
					return -ENOMEM;
				}
				g = p;
				cap = nc;
			}
			g[cnt++] = (struct bt_seq_gap){
				.index = a[j].idx, .cpu = c, .from_seq = (uint32_t)(a[j - 1].seq + 1), .missing = dlt - 1,
			};
		}
	}
	seqs_free(&q);
	if (cnt)
		qsort(g, cnt, sizeof(*g), cmp_gap);
	*out = g;
	*nout = cnt;
	return 0;
}
