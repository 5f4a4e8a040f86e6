// SPDX-License-Identifier: MIT
/* test_func_names.c - the function names of a dump's AFUN table
 * (user/dump/dump_sections.c) read back whole at every length: a name whose
 * length is a multiple of 8 fills its padding, with no byte left for a NUL
 * ("clearkey" was read as "clearke"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "btrace_buffer.h"
#include <linux/types.h>
#include "events.h"
#include "dump.h"
#include "dump_format.h"
#include "event_names.h"

#define NNAMES 40
static char names[NNAMES][BTD_FUNC_NAME_MAX + 1];

static int write_apps(void *ctx, struct bt_dump_sink *s)
{
	struct bt_func_name f[NNAMES];
	struct bt_dump_app app = { .pid = 4321, .name = "names" };
	int r = bt_dump_sink_apps(s, &app, 1);
	for (int i = 0; i < NNAMES; i++)
		f[i] = (struct bt_func_name){ .addr = 0x401000 + 16u * (uint64_t)i, .name = names[i] };
	return r < 0 ? r : bt_dump_sink_app_funcs(s, 0, f, NNAMES);
}

static void test_names_whole(void)
{
	char dir[] = "/tmp/test_func_names.XXXXXX", path[512], out[600], err[256];
	REQUIRE(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/n.btd", dir);
	/* lengths 1..33 (8, 16, 24, 32 among them), 63, 64, 1023, 1024 */
	static const int extra[] = { 63, 64, 1023, BTD_FUNC_NAME_MAX, 8, 16, 7 };
	for (int i = 0; i < NNAMES; i++) {
		int len = i < 33 ? i + 1 : extra[i - 33];
		for (int k = 0; k < len; k++)
			names[i][k] = (char)('a' + (i + k) % 26);
		names[i][len] = 0;
	}
	struct bt_config cfg = { .size = 64u << 10, .block_size = 1024, .ncores = 2 };
	struct bt_buffer *b = bt_buffer_create(&cfg, err, sizeof(err));
	REQUIRE(b, "buffer: %s", err);
	struct bt_dump_info info = { .ncpus = 2, .ngroups = BT_GROUP_MAX, .dump_seq = 1, .reason = "ctl",
				     .write_apps = write_apps };
	int r = bt_dump_write(b, &info, NULL, path, 1, out, sizeof(out), NULL, err, sizeof(err));
	bt_buffer_destroy(b);
	REQUIRE(r >= 0, "write: %s", err);
	struct bt_dump *d = bt_dump_open(path, err, sizeof(err));
	REQUIRE(d, "open: %s", err);
	size_t napps;
	const struct bt_dump_app *a = bt_dump_apps(d, &napps);
	REQUIRE(napps == 1 && a[0].nfuncs == NNAMES, "one app with %d names: %zu, %u", NNAMES, napps,
		napps ? a[0].nfuncs : 0);
	for (int i = 0; i < NNAMES; i++) {
		const struct bt_func_name *f = &a[0].funcs[i];
		CHECK(f->addr == 0x401000 + 16u * (uint64_t)i && strcmp(f->name, names[i]) == 0,
		      "name of %zu bytes read as %zu bytes '%.40s'", strlen(names[i]), strlen(f->name), f->name);
	}
	bt_dump_close(d);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	RUN(test_names_whole);
	return h_done();
}
