// SPDX-License-Identifier: MIT
/*
 * test_manifest.c - manifests of real dumps (the fuzzer's seed dumps, one
 * with application buffers): valid JSON (checked by Python's parser), the
 * SHA-256 and size of the file (checked against sha256sum), the event
 * count of the reader, the trigger event named from the task table, mode
 * 0600, written atomically with nothing left behind, and no manifest at all
 * for a damaged dump. Also JSON string escaping.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/types.h>
#include "harness.h"
#include "events.h"
#include "dump.h"
#include "dump_dir.h"
#include "json_str.h"
#include "manifest.h"

static char dir[] = "/tmp/btrace-manifest-XXXXXX";
#define SEEDS "tests/fuzz/seeds/fuzz_dump/"

static int copy(const char *from, const char *to)
{
	char c[2100];
	snprintf(c, sizeof(c), "cp '%s' '%s'", from, to);
	return system(c);
}

static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	static char out[4096];
	size_t n;
	if (!p)
		return NULL;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? out : NULL;
}

/* Value of "key": N in a JSON text (the first occurrence), or -1. */
static long long num(const char *json, const char *key)
{
	char k[128];
	snprintf(k, sizeof(k), "\"%s\": ", key);
	const char *p = strstr(json, k);
	return p ? atoll(p + strlen(k)) : -1;
}

static int entries(const char *d)
{
	DIR *x = opendir(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(x)))
		n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	closedir(x);
	return n;
}

static void check_seed(const char *seed, int want_apps)
{
	char dump[512], man[520], err[512], cmd[1200];
	snprintf(dump, sizeof(dump), "%s/btrace-seed-20260101-000000-%s", dir, seed);
	snprintf(cmd, sizeof(cmd), SEEDS "%s", seed);
	REQUIRE(copy(cmd, dump) == 0, "copy %s", seed);
	snprintf(man, sizeof(man), "%s.json", dump);
	int r = bt_manifest_write(dump, NULL, NULL, NULL, err, sizeof(err));
	REQUIRE(r == 0, "%s: %s", seed, err);

	size_t len;
	char *json = (char *)h_read_file(man, &len);
	REQUIRE(json, "no manifest");
	json = realloc(json, len + 1);
	json[len] = '\0';
	CHECK(!strncmp(json, BT_MANIFEST_HEAD, strlen(BT_MANIFEST_HEAD)), "starts with the manifest key");
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s'", man);
	CHECK(run(cmd) != NULL, "%s: not valid JSON:\n%s", seed, json);
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", dump);
	char *sum = run(cmd);
	REQUIRE(sum, "sha256sum");
	sum[64] = '\0';
	char want[100];
	snprintf(want, sizeof(want), "\"sha256\": \"%s\"", sum);
	CHECK(strstr(json, want) != NULL, "%s: sha256 %s not in manifest", seed, sum);
	struct stat st;
	stat(dump, &st);
	CHECK(num(json, "file_size") == (long long)st.st_size, "file_size %lld vs %lld", num(json, "file_size"),
	      (long long)st.st_size);
	stat(man, &st);
	CHECK((st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);

	struct bt_dump *d = bt_dump_open(dump, err, sizeof(err));
	REQUIRE(d, "%s", err);
	size_t n;
	const struct bt_dump_event *ev = bt_dump_events(d, &n);
	struct bt_seq_window w;
	bt_seq_analyze(ev, n, bt_dump_header(d)->ncpus, &w, NULL);
	CHECK(num(json, "total") == (long long)w.events, "events %lld vs %llu", num(json, "total"),
	      (unsigned long long)w.events);
	CHECK(strstr(json, "\"trigger\": null") != NULL, "no trigger given");
	size_t napps;
	bt_dump_apps(d, &napps);
	CHECK(!want_apps || strstr(json, "\"apps\": [{\"pid\": ") != NULL, "apps listed");

	/* The trigger event, named from the dump's task table. */
	size_t ntasks;
	const struct bt_task *t = bt_dump_tasks(d, &ntasks);
	if (ntasks) {
		struct bt_manifest_trigger trig = { .spec = "/usr/bin/x:oops", .tid = t[0].tid, .ts_ns = 1234 };
		struct bt_manifest_recorder rec = { .dumps_written = 3, .dumps_skipped_space = 1 };
		REQUIRE(bt_manifest_write(dump, NULL, &trig, &rec, err, sizeof(err)) == 0, "%s", err);
		free(json);
		json = (char *)h_read_file(man, &len);
		json = realloc(json, len + 1);
		json[len] = '\0';
		char c1[200];
		snprintf(c1, sizeof(c1), "\"event\": {\"ts_ns\": 1234, ");
		CHECK(strstr(json, "\"spec\": \"/usr/bin/x:oops\"") && strstr(json, c1), "trigger: %s", json);
		snprintf(c1, sizeof(c1), "\"tid\": %u, \"pid\": %u, \"comm\": ", t[0].tid, t[0].tgid);
		CHECK(strstr(json, c1) != NULL, "trigger task: %s", c1);
		CHECK(num(json, "dumps_skipped_no_space") == 1 && num(json, "dumps_written") == 3, "recorder counters");
	}
	bt_dump_close(d);
	free(json);
}

static void test_seed_dumps(void)
{
	check_seed("seed-raw-0.btd", 0);
	check_seed("seed-zlib-1.btd", 0);
	check_seed("seed-apps.btd", 1);
	/* Dumps and manifests only: no temporary file left. */
	CHECK(entries(dir) == 6, "%d files", entries(dir));
}

static void test_damaged_dump_has_no_manifest(void)
{
	char dump[512], man[520], err[512];
	snprintf(dump, sizeof(dump), "%s/btrace-bad-20260101-000000-1.btd", dir);
	REQUIRE(copy(SEEDS "seed-zlib-1.btd", dump) == 0, "copy");
	REQUIRE(truncate(dump, 1000) == 0, "truncate");
	snprintf(man, sizeof(man), "%s.json", dump);
	int before = entries(dir);
	int r = bt_manifest_write(dump, NULL, NULL, NULL, err, sizeof(err));
	CHECK(r < 0 && strstr(err, "does not read back"), "%d %s", r, err);
	CHECK(access(man, F_OK) != 0 && entries(dir) == before, "nothing written");
	r = bt_manifest_write("/nonexistent/btrace-x.btd", NULL, NULL, NULL, err, sizeof(err));
	CHECK(r == -ENOENT && strstr(err, "cannot read"), "%d %s", r, err);
}

static void test_json_strings(void)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	bt_json_str(f, "a\"b\\c\n\x01\x7f\xff\xc3\xa9", 64);
	fputc(' ', f);
	bt_json_str(f, NULL, 10);
	fputc(' ', f);
	bt_json_str(f, "truncated", 4);
	fclose(f);
	CHECK(!strcmp(buf, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f\\ufffd\xc3\xa9\" \"\" \"trun\""), "%s", buf);
	free(buf);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(test_seed_dumps);
	RUN(test_damaged_dump_has_no_manifest);
	RUN(test_json_strings);
	char c[600];
	snprintf(c, sizeof(c), "rm -rf %s", dir);
	return system(c) ? 1 : h_done();
}
