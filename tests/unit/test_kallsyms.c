// SPDX-License-Identifier: MIT
/* test_kallsyms.c - the kernel symbol snapshot (user/stacks/kallsyms.c):
 * /proc/kallsyms's line shapes read by hand, text symbols only, module
 * names kept, hidden addresses refused, and the real file read as root. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "kallsyms.h"

static struct bt_kallsyms *from(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct bt_kallsyms *k = f ? bt_kallsyms_read(f) : NULL;

	if (f)
		fclose(f);
	return k;
}

static void test_shapes(void)
{
	char big[2048];
	const char *text = "ffffffff81000000 T _stext\n"
			   "ffffffff81000100 t local_fn\n"
			   "ffffffff81000200 D some_data\n"      /* data: not a frame */
			   "ffffffff81000300 W weak_fn\n"
			   "garbage line\n"
			   "ffffffff81000400 T\n"                /* no name */
			   "ffffffffc0100000 t mod_fn\t[xfs]\n"
			   "ffffffffc0100100 t unclosed\t[xfs\n" /* module bracket unclosed: no module */
			   "ffffffffc0100200 T last_fn\n";
	struct bt_kallsyms *k = from(text);
	uint64_t start = 0, size = 0;
	const char *n;

	CHECK(k != NULL, "a table from well-formed lines");
	if (!k)
		return;
	n = bt_kallsyms_find(k, 0xffffffff81000010, &start, &size);
	CHECK(n && strcmp(n, "_stext") == 0 && start == 0xffffffff81000000 && size == 0x100, "_stext and its size: %s",
	      n ? n : "(none)");
	n = bt_kallsyms_find(k, 0xffffffff81000250, &start, &size);
	CHECK(n && strcmp(n, "local_fn") == 0, "a data symbol is skipped: %s", n ? n : "(none)");
	n = bt_kallsyms_find(k, 0xffffffff81000350, &start, &size);
	CHECK(n && strcmp(n, "weak_fn") == 0, "weak symbols kept: %s", n ? n : "(none)");
	n = bt_kallsyms_find(k, 0xffffffffc0100010, &start, &size);
	CHECK(n && strcmp(n, "mod_fn [xfs]") == 0, "a module's symbol named with its module: %s", n ? n : "(none)");
	n = bt_kallsyms_find(k, 0xffffffffc0100110, &start, &size);
	CHECK(n && strcmp(n, "unclosed") == 0, "an unclosed module bracket: the name alone: %s", n ? n : "(none)");
	n = bt_kallsyms_find(k, 0xffffffffc0100210, &start, &size);
	CHECK(n && strcmp(n, "last_fn") == 0, "the last line: %s", n ? n : "(none)");
	bt_kallsyms_free(k);

	/* A name longer than the line buffer: skipped whole, the next line read. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "ffffffff81000000 T ", 19);
	snprintf(big + sizeof(big) - 40, 40, "\nffffffff81000500 T after_long\n");
	k = from(big);
	n = k ? bt_kallsyms_find(k, 0xffffffff81000510, &start, &size) : NULL;
	CHECK(n && strcmp(n, "after_long") == 0, "a line past the buffer skipped, the next one read: %s",
	      n ? n : "(none)");
	CHECK(k && !bt_kallsyms_find(k, 0xffffffff81000010, &start, &size), "the over-long line left no symbol");
	bt_kallsyms_free(k);
}

static void test_hidden(void)
{
	struct bt_kallsyms *k = from("0000000000000000 T _stext\n0000000000000000 t f\n");

	CHECK(k == NULL && errno == EPERM, "all addresses 0 (kptr_restrict): refused with EPERM");
	k = from("");
	CHECK(k == NULL && errno == EPERM, "an empty file: refused");
}

static void test_real(void)
{
	struct bt_kallsyms *k;
	uint64_t start, size;

	if (geteuid() != 0) {
		printf("ok %d - the real /proc/kallsyms # SKIP not root\n", ++h_ntests);
		return;
	}
	k = bt_kallsyms_load();
	CHECK(k != NULL, "/proc/kallsyms read (%s)", k ? "ok" : strerror(errno));
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	unsigned long long a = 0;
	char t, name[256] = "";
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &t, name) == 3 && t == 'T' && strcmp(name, "schedule") == 0)
			break;
	if (f)
		fclose(f);
	const char *n = k ? bt_kallsyms_find(k, a + 1, &start, &size) : NULL;
	CHECK(n && strcmp(n, "schedule") == 0 && start == a, "schedule found at its address: %s", n ? n : "(none)");
	bt_kallsyms_free(k);
}

int main(void)
{
	RUN(test_shapes);
	RUN(test_hidden);
	RUN(test_real);
	return h_done();
}
