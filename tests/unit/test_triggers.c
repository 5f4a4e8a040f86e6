// SPDX-License-Identifier: MIT
/*
 * test_triggers.c - `record --trigger` without a kernel: the spec parser
 * (every field of every kind, defaults and names), the text a dump shows,
 * and the TRIG dump section (round trip; truncated, oversized and
 * inconsistent payloads refused).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "dump_format.h"
#include "harness.h"
#include "trigger_spec.h"
#include "func_watch.h"

static struct bt_trigger_spec parse_ok(const char *s)
{
	struct bt_trigger_spec t;
	char err[512] = "";

	memset(&t, 0xab, sizeof(t));
	if (bt_trigger_parse(s, &t, err, sizeof(err)))
		CHECK(0, "'%s' refused: %s", s, err);
	return t;
}

static void test_parse_kinds(void)
{
	struct bt_trigger_spec t = parse_ok("sched-latency>5ms,comm=nginx,after=200ms");

	CHECK(t.kind == BT_TRIG_SCHED_LATENCY && t.threshold_ns == 5000000, "kind %u thr %llu", t.kind,
	      (unsigned long long)t.threshold_ns);
	CHECK(!strcmp(t.comm, "nginx") && t.after_ns == 200000000 && t.has_after && !t.has_limit, "options");
	CHECK(!strcmp(t.cond, "sched-latency>5ms"), "cond '%s'", t.cond);
	t = parse_ok("offcpu>1s,pid=42,limit=0");
	CHECK(t.kind == BT_TRIG_OFFCPU && t.threshold_ns == 1000000000ull && t.tgid == 42 && t.has_limit && !t.limit_ns,
	      "offcpu");
	t = parse_ok("syscall:fsync>50ms");
	CHECK(t.kind == BT_TRIG_SYSCALL && t.nr == bt_syscall_nr("fsync") && t.nr >= 0 && t.threshold_ns == 50000000,
	      "syscall:fsync nr %lld", (long long)t.nr);
	t = parse_ok("syscall>10us,nr=0");
	CHECK(t.kind == BT_TRIG_SYSCALL && t.nr == 0 && t.threshold_ns == 10000, "syscall nr=0");
	t = parse_ok("syscall>10us");
	CHECK(t.nr == -1, "syscall without nr: any (%lld)", (long long)t.nr);
	t = parse_ok("func:/usr/bin/app:ns::f(int, char)>16ms,name=frame");
	CHECK(t.kind == BT_TRIG_FUNC && !strcmp(t.arg, "/usr/bin/app:ns::f(int, char)") && t.threshold_ns == 16000000 &&
	      !strcmp(t.name, "frame"), "func arg '%s' (a comma inside the parentheses)", t.arg);
	t = parse_ok("crash");
	CHECK(t.kind == BT_TRIG_CRASH && (t.sigmask & (1ull << SIGSEGV)) && (t.sigmask & (1ull << SIGABRT)) &&
	      !(t.sigmask & (1ull << SIGKILL)) && !(t.sigmask & (1ull << SIGTERM)), "crash default set");
	t = parse_ok("crash,sig=SEGV+SIGBUS+6");
	CHECK(t.sigmask == ((1ull << SIGSEGV) | (1ull << SIGBUS) | (1ull << 6)), "sig= %llx",
	      (unsigned long long)t.sigmask);
	t = parse_ok("oom");
	CHECK(t.kind == BT_TRIG_OOM, "oom");
	t = parse_ok("app:stall");
	CHECK(t.kind == BT_TRIG_APP && !strcmp(t.arg, "stall") && !t.threshold_ns, "app");
	t = parse_ok("app:frame>16ms");
	CHECK(t.kind == BT_TRIG_APP_SLICE && !strcmp(t.arg, "frame") && t.threshold_ns == 16000000, "app slice");
	t = parse_ok("app-func:render>16ms,pid=42");
	CHECK(t.kind == BT_TRIG_APP_FUNC && !strcmp(t.arg, "render") && t.threshold_ns == 16000000 && t.tgid == 42,
	      "app-func");
	t = parse_ok("app-func:ns::f<int>(int, char)>2ms");
	CHECK(t.kind == BT_TRIG_APP_FUNC && !strcmp(t.arg, "ns::f<int>(int, char)") && t.threshold_ns == 2000000,
	      "app-func C++ name '%s' (the last '>' ends it)", t.arg);
	CHECK(bt_func_watch_match("render", "render") && bt_func_watch_match("ns::f", "ns::f(int)") &&
	      bt_func_watch_match("ns::f(int)", "ns::f(int)") && !bt_func_watch_match("ns::f(int)", "ns::f(char)") &&
	      !bt_func_watch_match("nap", "nap_thread") && !bt_func_watch_match("f", "f+0x10"),
	      "app-func names: exact, or the C++ name without its parameters");
	t = parse_ok("ctl,name=manual");
	CHECK(t.kind == BT_TRIG_CTL && !strcmp(t.name, "manual"), "ctl");
	t = parse_ok("uprobe:libc:malloc");
	CHECK(t.kind == BT_TRIG_UPROBE && !strcmp(t.arg, "libc:malloc"), "uprobe");
}

static void test_parse_bad(void)
{
	static const char *const bad[] = {
		"", "sched-latency", "sched-latency>", "sched-latency>5", "sched-latency>-5ms", "sched-latency>0ms",
		"offcpu<5ms", "latency>5ms", "syscall:>5ms", "syscall:nosuch>5ms", "syscall:read", "func>5ms",
		"func:>5ms", "func:libc:read", "func:libc:read%return>5ms", "app:", "app", "app-func", "app-func:",
		"app-func:f", "app-func:>5ms", "app-func:f>5", "app-funcs:f>5ms", "crash,sig=", "crash,sig=NOPE",
		"crash,nr=1", "syscall>1ms,nr=5000", "offcpu>1ms,after=soon", "offcpu>1ms,limit=5",
		"offcpu>1ms,pid=0", "offcpu>1ms,pid=-1", "offcpu>1ms,comm=0123456789abcdef", "offcpu>1ms,,x=1",
		"offcpu>1ms,", "offcpu>1ms,color=red", "offcpu>1ms,name=a b", "offcpu>1ms,name=", "ctl,pid=1", ",oom",
		"uprobe:",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bt_trigger_spec t;
		char err[512] = "";
		int r = bt_trigger_parse(bad[i], &t, err, sizeof(err));

		CHECK(r == -EINVAL, "'%s' accepted", bad[i]);
		CHECK(!strncmp(err, "--trigger '", 11) && !strchr(err, '\n'), "'%s': message '%s'", bad[i], err);
	}
}

static void test_finish_names(void)
{
	struct bt_trigger_spec v[4];
	char err[256] = "";

	v[0] = parse_ok("crash");
	v[1] = parse_ok("crash,comm=x");
	v[2] = parse_ok("oom,name=crash-2,after=1s");
	v[3] = parse_ok("oom");
	REQUIRE(bt_trigger_finish(v, 4, 7, 9, err, sizeof(err)) == 0, "%s", err);
	CHECK(!strcmp(v[0].name, "crash") && !strcmp(v[1].name, "crash-3") && !strcmp(v[3].name, "oom"),
	      "names %s %s %s", v[0].name, v[1].name, v[3].name);
	CHECK(v[0].after_ns == 7 && v[0].limit_ns == 9 && v[2].after_ns == 1000000000ull && v[2].limit_ns == 9,
	      "defaults");
	v[1] = parse_ok("ctl,name=crash");
	v[0] = parse_ok("crash");
	v[0].name[0] = 0;
	strcpy(v[0].name, "crash");
	CHECK(bt_trigger_finish(v, 2, 0, 0, err, sizeof(err)) == -EINVAL && strstr(err, "'crash'"), "duplicate: %s",
	      err);
}

static void test_describe(void)
{
	struct bt_trigger_fired f = { .kind = BT_TRIG_SCHED_LATENCY, .value = 12400000, .threshold_ns = 5000000,
				      .tid = 4312, .tgid = 4312, .aux = -1, .comm = "nginx" };
	char b[256];

	CHECK(!strcmp(bt_trigger_describe(&f, b, sizeof(b)), "sched-latency 12.400 ms > 5.0 ms, tid 4312 (nginx)"), "%s",
	      b);
	f.kind = BT_TRIG_SYSCALL;
	f.aux = bt_syscall_nr("fsync");
	f.tgid = 4300;
	CHECK(!strcmp(bt_trigger_describe(&f, b, sizeof(b)), "syscall fsync 12.400 ms > 5.0 ms, tid 4312 pid 4300 (nginx)"),
	      "%s", b);
	f.kind = BT_TRIG_CRASH;
	f.value = SIGSEGV;
	CHECK(!strcmp(bt_trigger_describe(&f, b, sizeof(b)), "crash SIGSEGV, tid 4312 pid 4300 (nginx)"), "%s", b);
}

static void test_section_roundtrip(void)
{
	struct bt_dump_trigger t[2] = {
		{ .name = "lat", .cond = "sched-latency>5ms", .kind = BT_TRIG_SCHED_LATENCY, .threshold_ns = 5000000,
		  .after_ns = 1, .limit_ns = 2,
		  .st = { .hits = 10, .dumps = 3, .skipped = 6, .lost = 1, .merged = 2, .limited = 4, .dropped = 1 },
		  .unnamed = 7 },
		{ .name = "manual", .cond = "ctl", .kind = BT_TRIG_CTL },
	};
	struct bt_trigger_fired f = { .trig = 1, .kind = BT_TRIG_CTL, .ts_ns = 11, .seen_ns = 12, .due_ns = 13,
				      .value = 14, .threshold_ns = 15, .aux = -1, .tid = 16, .tgid = 17, .cpu = 18,
				      .comm = "c", .name = "manual", .cond = "ctl" };
	struct bt_dump_trigger *tt;
	struct bt_trigger_fired *ff;
	size_t nt, nf;
	uint8_t *p;
	char err[256];
	int64_t len = bt_dump_triggers_encode(t, 2, &f, 1, &p);

	REQUIRE(len == 16 + 2 * 296 + 280, "len %lld", (long long)len);
	REQUIRE(bt_dump_triggers_decode(p, (uint64_t)len, &tt, &nt, &ff, &nf, err, sizeof(err)) == 0, "%s", err);
	CHECK(nt == 2 && nf == 1, "counts");
	CHECK(!strcmp(tt[0].name, "lat") && !strcmp(tt[0].cond, "sched-latency>5ms") && tt[0].st.hits == 10 &&
	      tt[0].st.dumps == 3 && tt[0].st.skipped == 6 && tt[0].st.lost == 1 && tt[0].limit_ns == 2 &&
	      tt[0].st.merged == 2 && tt[0].st.limited == 4 && tt[0].st.dropped == 1 && tt[0].st.pending == 0 &&
	      tt[0].unnamed == 7 && tt[1].unnamed == 0,
	      "trigger 0");
	CHECK(ff[0].trig == 1 && ff[0].ts_ns == 11 && ff[0].due_ns == 13 && ff[0].value == 14 && ff[0].aux == -1 &&
	      ff[0].tid == 16 && ff[0].cpu == 18 && !strcmp(ff[0].name, "manual"), "hit");
	free(tt);
	free(ff);
	{ /* an older recorder's 256-byte records: skipped read as limited, lost as dropped */
		size_t olen = 16 + 256 + 0;
		uint8_t *o = calloc(1, olen);
		struct btd_trig_head oh = { .ntriggers = 1, .trig_size = 256, .nfired = 0, .fired_size = 280 };
		struct btd_trigger ot = { .hits = 9, .dumps = 2, .skipped = 5, .lost = 1 };

		memcpy(o, &oh, sizeof(oh));
		memcpy(o + 16, &ot, 256);
		REQUIRE(bt_dump_triggers_decode(o, olen, &tt, &nt, &ff, &nf, err, sizeof(err)) == 0, "%s", err);
		CHECK(tt[0].st.limited == 5 && tt[0].st.dropped == 1 && tt[0].st.pending == 1 && tt[0].st.merged == 0,
		      "old record: limited %lu dropped %lu pending %lu", (unsigned long)tt[0].st.limited,
		      (unsigned long)tt[0].st.dropped, (unsigned long)tt[0].st.pending);
		free(tt);
		free(ff);
		free(o);
	}
	{ /* a 288-byte record (before unnamed): read whole, unnamed 0 */
		size_t olen = 16 + 288;
		uint8_t *o = calloc(1, olen);
		struct btd_trig_head oh = { .ntriggers = 1, .trig_size = 288, .nfired = 0, .fired_size = 280 };
		struct btd_trigger ot = { .hits = 9, .dumps = 2, .merged = 3, .limited = 4, .unnamed = 5 };

		memcpy(o, &oh, sizeof(oh));
		memcpy(o + 16, &ot, 288);
		REQUIRE(bt_dump_triggers_decode(o, olen, &tt, &nt, &ff, &nf, err, sizeof(err)) == 0, "%s", err);
		CHECK(tt[0].st.merged == 3 && tt[0].st.limited == 4 && tt[0].unnamed == 0, "288-byte record: unnamed %lu",
		      (unsigned long)tt[0].unnamed);
		free(tt);
		free(ff);
		free(o);
	}
	/* damaged: short, longer than its counts, a hit naming no trigger, huge counts */
	CHECK(bt_dump_triggers_decode(p, 8, &tt, &nt, &ff, &nf, err, sizeof(err)) == -EINVAL, "short");
	CHECK(bt_dump_triggers_decode(p, (uint64_t)len - 1, &tt, &nt, &ff, &nf, err, sizeof(err)) == -EINVAL,
	      "truncated");
	((struct btd_fired *)(p + 16 + 2 * 296))->trig = 2;
	CHECK(bt_dump_triggers_decode(p, (uint64_t)len, &tt, &nt, &ff, &nf, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "names trigger 2"), "%s", err);
	((struct btd_trig_head *)p)->ntriggers = 100000;
	CHECK(bt_dump_triggers_decode(p, (uint64_t)len, &tt, &nt, &ff, &nf, err, sizeof(err)) == -EINVAL, "huge");
	((struct btd_trig_head *)p)->ntriggers = 2;
	((struct btd_trig_head *)p)->trig_size = 100;
	CHECK(bt_dump_triggers_decode(p, (uint64_t)len, &tt, &nt, &ff, &nf, err, sizeof(err)) == -EINVAL,
	      "record smaller than known");
	free(p);
}

int main(void)
{
	RUN(test_parse_kinds);
	RUN(test_parse_bad);
	RUN(test_finish_names);
	RUN(test_describe);
	RUN(test_section_roundtrip);
	return h_nfail_tests ? 1 : 0;
}
