// SPDX-License-Identifier: MIT
/*
 * fuzz_dump.c - libFuzzer target for the dump reader: open the input as a
 * dump (strictly, then without the crc32 checks so mutations reach the
 * section parser), and walk everything report walks: header, tables, loss
 * counters, blocks, every event's field text, the sequence analysis, and the
 * report and --stats output (to /dev/null). Seeds: tests/fuzz/seeds/fuzz_dump/
 * (written by BTRACE_WRITE_SEEDS=DIR build/tests/test_dump).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "event_names.h"
#include "report_stacks.h"

static FILE *devnull;
static volatile uint64_t sink;

static void walk(struct bt_dump *d)
{
	const struct bt_dump_header *h = bt_dump_header(d);
	size_t n, ntasks, nprobes, nblocks;
	const struct bt_task *tasks = bt_dump_tasks(d, &ntasks);
	const struct bt_probe_desc *probes = bt_dump_probes(d, &nprobes);
	const struct bt_dump_block *blocks = bt_dump_blocks(d, &nblocks);
	const uint64_t *drops = bt_dump_rb_drops(d), *emitted = bt_dump_rb_emitted(d);
	char buf[2048];

	sink += strlen(h->hostname) + strlen(h->kernel) + strlen(h->reason);
	for (size_t i = 0; i < ntasks; i++)
		sink += strlen(tasks[i].comm) + tasks[i].tid;
	for (size_t i = 0; i < nprobes; i++)
		sink += strlen(probes[i].spec) + strlen(probes[i].binary) + strlen(probes[i].func);
	for (size_t i = 0; i < nblocks; i++)
		sink += blocks[i].pos + blocks[i].nentries;
	for (size_t i = 0; i < (size_t)h->ncpus * h->ngroups; i++)
		sink += drops[i] + (emitted ? emitted[i] : 0);
	sink += bt_dump_buffer_stats(d)->padding_bytes + bt_dump_read_stats(d)->blocks_lost;

	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_namer *nm = bt_namer_new(tasks, ntasks);
	for (size_t i = 0; i < n; i++) {
		const struct bt_event_hdr *e = ev[i].ev;
		/* the reader's promises */
		if (ev[i].len < sizeof(*e) || !bt_event_name(e->type) || ev[i].len < bt_event_min_size(e->type) ||
		    e->cpu >= h->ncpus || (i && ev[i - 1].ev->ts_ns > e->ts_ns))
			abort();
		int r = ev[i].app >= 0 ? bt_format_app_fields(buf, sizeof(buf), e, ev[i].len,
						       bt_dump_app_event_name(d, ev[i].app, ((const struct bt_ev_app *)e)->name_id))
				       : bt_format_fields(buf, sizeof(buf), e, ev[i].len, nm, probes, nprobes);
		if (r < 0 || (size_t)r >= sizeof(buf) || strlen(buf) != (size_t)r)
			abort();
		bt_namer_apply(nm, e, ev[i].len);
		sink += (uint64_t)r + strlen(bt_namer_comm(nm, e->tid, e->cpu));
	}
	bt_namer_free(nm);

	struct bt_seq_window w;
	struct bt_seq_cpu *pc = calloc(h->ncpus, sizeof(*pc));
	size_t nk = 0; /* kernel events: the per-CPU seq analysis leaves app events out */
	for (size_t i = 0; i < n; i++)
		nk += ev[i].app < 0;
	if (pc && bt_seq_analyze(ev, n, h->ncpus, &w, pc) == 0) {
		if (w.events != nk || w.cont_events > n || (n && (w.cont_start_ts < w.first_ts || w.cont_start_ts > w.last_ts)))
			abort();
	}
	free(pc);
	struct bt_seq_gap *g;
	size_t ng;
	if (bt_seq_gaps(ev, n, h->ncpus, &g, &ng) == 0) {
		for (size_t i = 0; i < ng; i++)
			if (g[i].index >= n || !g[i].missing)
				abort();
		free(g);
	}
	bt_dump_report(d, 0, devnull);
	bt_dump_report(d, 1, devnull);
	/* call stacks: every frame's text, the profile, the folded stacks */
	for (size_t i = 0; i < n; i++)
		bt_print_event_stacks(devnull, d, ev[i].ev, (int)(i & 1));
	struct bt_stack_filter sf = { 0 };
	bt_report_profile(d, &sf, devnull);
	bt_report_folded(d, &sf, devnull);
	sf.offcpu = 1;
	bt_report_profile(d, &sf, devnull);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	for (int pass = 0; pass < 2; pass++) {
		err[0] = '\0';
		struct bt_dump *d = bt_dump_open_mem_flags(data, size, pass ? BT_DUMP_OPEN_NOCRC : 0, err, sizeof(err));
		if (!d) {
			if (!err[0])
				abort(); /* every refusal says why */
			continue;
		}
		walk(d);
		bt_dump_close(d);
	}
	return 0;
}
