// SPDX-License-Identifier: MIT
/*
 * test_prog_misses.c - events that go missing without a seq gap are counted
 * and shown:
 *   - the kernel skips a nested run of a program (tests/progs/nest_test.bpf.c makes
 *     it happen once per trigger) and bt_obj_prog_misses() reads exactly that
 *     count from bpf_prog_info.recursion_misses (real kernel, root);
 *   - those counts go through a dump (PMIS section) into report --stats;
 *   - a reader that does not know PMIS skips it (optional section);
 *   - sched_switch chain breaks with no seq gap (a switch the kernel never
 *     reported) are found and reported, breaks across a gap are not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "harness.h"
#include "dump_fixture.h"
#include "btrace_buffer.h"
#include "compact.h"
#include "dump.h"
#include "dump_format.h"
#include "export.h"
#include "prog_misses.h"
#include "switch_chain.h"
#include "nest_test.skel.h"

#define NCPUS 2
static char tmpdir[256];

static void put_switch(struct bt_buffer *b, uint32_t cpu, uint32_t seq, uint64_t ts, uint32_t prev, uint32_t next)
{
	struct bt_ev_sched_switch e = {
		.h = { .ts_ns = ts, .seq = seq, .tid = prev, .tgid = prev, .cpu = (uint16_t)cpu, .type = BT_EV_SCHED_SWITCH },
		.prev_tid = prev, .next_tid = next, .prev_prio = 120, .next_prio = 120,
	};
	fx_store(b, e.h.cpu, &e.h, sizeof(e));
}

/* A dump of b with the given program table; its report --stats text in *rep. */
static struct bt_dump *dump_with(struct bt_buffer *b, const struct bt_prog_miss *pm, size_t npm, const char *name,
				 char **rep)
{
	static const struct bt_task tasks[] = { { .tid = 300, .tgid = 300, .comm = "hidden" } };
	uint64_t drops[NCPUS * BT_GROUP_MAX] = { 0 };
	char path[512], err[256];
	struct bt_dump_info info = {
		.ncpus = NCPUS, .ngroups = BT_GROUP_MAX, .rb_drops = drops, .dump_seq = 1, .reason = "test",
		.groups_enabled = 1, .tasks = tasks, .ntasks = 1, .prog_misses = pm, .nprog_misses = npm,
	};
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if (bt_dump_write(b, &info, NULL, path, 0, NULL, 0, NULL, err, sizeof(err))) {
		fprintf(stderr, "  write: %s\n", err);
		return NULL;
	}
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	if (!d) {
		fprintf(stderr, "  open: %s\n", err);
		return NULL;
	}
	size_t len = 0;
	FILE *f = open_memstream(rep, &len);
	bt_dump_report(d, 1, f);
	fclose(f);
	return d;
}

static struct bt_buffer *small_buffer(void)
{
	struct bt_config cfg = { .size = 64 << 10, .block_size = 1024, .ncores = NCPUS };
	char err[128];
	return bt_buffer_create(&cfg, err, sizeof(err));
}

struct kv_find {
	const char *key;
	uint64_t v;
};

static void kv_cb(void *ctx, const char *key, uint64_t v)
{
	struct kv_find *k = ctx;
	if (!strcmp(key, k->key))
		k->v = v;
}

/* The kernel skips nest_inner's nested run once per trigger. */
static void test_kernel_skips(void)
{
	if (geteuid() != 0) {
		printf("# not root: no BPF\n");
		return;
	}
	struct nest_test_bpf *skel = nest_test_bpf__open();
	REQUIRE(skel, "open: %s", strerror(errno));
	skel->rodata->target_tgid = (uint32_t)getpid();
	skel->rodata->target_nr = SYS_getppid;
	int r = nest_test_bpf__load(skel);
	if (!r)
		r = nest_test_bpf__attach(skel);
	if (r) {
		nest_test_bpf__destroy(skel);
		REQUIRE(0, "load/attach: %d", r);
	}
	for (int i = 0; i < 25; i++)
		syscall(SYS_getppid);
	nest_test_bpf__detach(skel);
	uint64_t trig = skel->bss->triggers, inner = skel->bss->inner_runs;
	struct bt_prog_miss pm[4];
	size_t n = bt_obj_prog_misses(skel->obj, pm, 4);
	uint64_t m_inner = UINT64_MAX, m_trig = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(pm[i].name, "nest_inner"))
			m_inner = pm[i].misses;
		if (!strcmp(pm[i].name, "nest_trigger"))
			m_trig = pm[i].misses;
	}
	CHECK(n == 2 && pm[0].prog_id && pm[1].prog_id, "%zu programs", n);
	CHECK(trig >= 25 && inner == trig, "triggers %" PRIu64 ", inner runs %" PRIu64, trig, inner);
	CHECK(m_inner == trig && m_trig == 0, "misses: nest_inner %" PRIu64 " (want %" PRIu64 "), nest_trigger %" PRIu64,
	      m_inner, trig, m_trig);

	/* The kernel's counts, end to end: dump -> reader -> report --stats. */
	struct bt_buffer *b = small_buffer();
	REQUIRE(b, "buffer");
	put_switch(b, 0, 0, 1000, 0, 300);
	char *rep = NULL, want[128];
	struct bt_dump *d = dump_with(b, pm, n, "misses.btd", &rep);
	REQUIRE(d, "dump");
	size_t dn;
	const struct bt_prog_miss *dm = bt_dump_prog_misses(d, &dn);
	CHECK(dm && dn == n && bt_dump_prog_misses_total(d) == trig, "dump: %zu programs, %" PRIu64 " misses", dn,
	      bt_dump_prog_misses_total(d));
	snprintf(want, sizeof(want), "program runs skipped by the kernel (recursion, no event, no seq): %" PRIu64
		 " in 2 programs", trig);
	CHECK(strstr(rep, want), "report --stats lacks '%s':\n%s", want, rep);
	snprintf(want, sizeof(want), "    nest_inner: %" PRIu64 "\n", trig);
	CHECK(strstr(rep, want) && !strstr(rep, "nest_trigger:"), "per program: %s", rep);
	free(rep);
	/* ... and convert: the loss counters of the Perfetto and JSON traces */
	struct kv_find kf = { .key = "loss.kernel_skipped_runs", .v = UINT64_MAX };
	struct kv_find kp = { .key = "loss.kernel_skipped_runs.nest_inner", .v = UINT64_MAX };
	struct bt_export_prep prep;
	REQUIRE(bt_export_prepare(d, &prep) == 0, "prepare");
	bt_export_losses(&prep, kv_cb, &kf);
	bt_export_losses(&prep, kv_cb, &kp);
	bt_export_prep_free(&prep);
	CHECK(kf.v == trig && kp.v == trig, "convert losses: %" PRIu64 ", nest_inner %" PRIu64, kf.v, kp.v);
	for (int fmt = 0; fmt < 2; fmt++) {
		char out[300], err[256];
		struct bt_export_opts eo = { .format = fmt ? BT_EXPORT_JSON : BT_EXPORT_PERFETTO };
		struct bt_export_stats est;
		snprintf(out, sizeof(out), "%s/misses.%s", tmpdir, fmt ? "json" : "pftrace");
		CHECK(bt_export_file(d, out, &eo, &est, err, sizeof(err)) == 0, "convert: %s", err);
		size_t flen;
		char *img = (char *)h_read_file(out, &flen);
		snprintf(want, sizeof(want), "\"loss.kernel_skipped_runs\":%" PRIu64, trig);
		CHECK(img && memmem(img, flen, fmt ? want : "loss.kernel_skipped_runs.nest_inner",
				    strlen(fmt ? want : "loss.kernel_skipped_runs.nest_inner")),
		      "%s output lacks the kernel's skipped runs", fmt ? "JSON" : "Perfetto");
		free(img);
	}
	bt_dump_close(d);
	bt_buffer_destroy(b);
	nest_test_bpf__destroy(skel);
}

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0, Z_NULL, 0), p, (uInt)n);
}

/* A reader that does not know PMIS skips it: rename the section to an
 * unknown type (as PMIS looks to an older reader), fix the checksums. */
static void test_optional_section(void)
{
	struct bt_prog_miss pm[1] = { { .name = "handle_x", .misses = 7, .prog_id = 9 } };
	struct bt_buffer *b = small_buffer();
	char *rep = NULL, path[512], err[256];
	REQUIRE(b, "buffer");
	put_switch(b, 0, 0, 1000, 0, 300);
	struct bt_dump *d = dump_with(b, pm, 1, "opt.btd", &rep);
	REQUIRE(d, "dump");
	bt_dump_close(d);
	free(rep);
	snprintf(path, sizeof(path), "%s/opt.btd", tmpdir);
	size_t len;
	uint8_t *img = h_read_file(path, &len);
	REQUIRE(img, "read");
	struct btd_header h;
	memcpy(&h, img, sizeof(h));
	size_t off = h.header_size, found = 0;
	while (off + sizeof(struct btd_section) <= len) {
		struct btd_section s;
		memcpy(&s, img + off, sizeof(s));
		if (s.type == BTD_SEC_PROG_MISSES) {
			CHECK(s.flags == 0, "PMIS must not be required (flags %u)", s.flags);
			s.type = BTD_FOURCC('Z', 'Z', 'Z', 'Z');
			memcpy(img + off, &s, sizeof(s));
			found = 1;
			break;
		}
		off += sizeof(s) + btd_pad8(s.len);
	}
	REQUIRE(found, "no PMIS section");
	h.body_crc = h.raw_crc = crc(img + h.header_size, h.body_len);
	memcpy(img, &h, sizeof(h));
	h.header_crc = crc(img, offsetof(struct btd_header, header_crc));
	memcpy(img, &h, sizeof(h));
	d = bt_dump_open_mem(img, len, err, sizeof(err));
	size_t n = 1;
	CHECK(d && !bt_dump_prog_misses(d, &n) && n == 0, "unknown optional section: %s", d ? "read" : err);
	if (d) {
		size_t ne;
		bt_dump_events(d, &ne);
		CHECK(ne == 1, "events %zu", ne);
	}
	bt_dump_close(d);
	free(img);
	bt_buffer_destroy(b);
}

/* Chain breaks: CPU 0 switches to 300, then 400 switches away with no gap
 * (300's switch-away never reported); CPU 1 has a break across a gap. */
static void test_switch_chain(void)
{
	struct bt_buffer *b = small_buffer();
	REQUIRE(b, "buffer");
	put_switch(b, 0, 0, 1000, 0, 300);
	put_switch(b, 0, 1, 2000, 400, 0); /* break, no gap */
	put_switch(b, 0, 2, 3000, 0, 500);
	put_switch(b, 0, 3, 4000, 500, 0); /* chain holds */
	put_switch(b, 1, 0, 1500, 0, 600);
	put_switch(b, 1, 5, 2500, 700, 0); /* break, seqs 1..4 missing: explained */
	char *rep = NULL;
	struct bt_dump *d = dump_with(b, NULL, 0, "chain.btd", &rep);
	REQUIRE(d, "dump");
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_switch_chain ch;
	CHECK(bt_switch_chain(ev, n, NCPUS, &ch) == 0 && ch.switches == 6 && ch.breaks == 2 && ch.unexplained == 1 &&
		      ch.ntids == 1 && ch.tids[0] == 300,
	      "switches %" PRIu64 " breaks %" PRIu64 " unexplained %" PRIu64 " tids %zu", ch.switches, ch.breaks,
	      ch.unexplained, ch.ntids);
	CHECK(strstr(rep, "sched_switch chain breaks: 2, 1 without a seq gap (switch-aways the kernel did not report; of 300 hidden)"),
	      "report:\n%s", rep);
	CHECK(strstr(rep, "program runs skipped by the kernel: not recorded"), "no PMIS: %s", rep);
	free(rep);
	bt_dump_close(d);
	bt_buffer_destroy(b);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_prog_misses.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	libbpf_set_print(NULL);
	RUN(test_kernel_skips);
	RUN(test_optional_section);
	RUN(test_switch_chain);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return h_done();
}
