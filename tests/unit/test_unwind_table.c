// SPDX-License-Identifier: MIT
/*
 * test_unwind_table.c - .eh_frame compiled into unwind rows
 * (user/stacks/unwind_table.c), on this test's own binary: rows sorted,
 * a function's entry has CFA = rsp + 8, a function that pushed registers
 * saves rbp below the CFA or leaves it, _start is the outermost frame, the
 * PLT gets its rule; garbage is refused without a crash.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "unwind_table.h"

extern void _start(void);
static struct bt_unwind_rows R;
static uint64_t base;

__attribute__((noinline)) int leafy(int x)
{
	return x * 3 + 1;
}

/* The ELF address of a code address of this program (a PIE: first mapping's start). */
static uint64_t elf_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p - base;
}

static const struct bt_unwind_row *row_at(uint64_t a)
{
	const struct bt_unwind_row *r = NULL;
	for (uint32_t i = 0; i < R.n && R.rows[i].pc <= a; i++)
		r = &R.rows[i];
	return r;
}

static void test_build(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	REQUIRE(fd >= 0, "open self");
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	REQUIRE(e, "elf_begin");
	CHECK(bt_unwind_rows_build(e, NULL, &R, NULL) == 0, "build");
	CHECK(R.n > 10 && R.fdes > 5, "%u rows, %u FDEs", R.n, R.fdes);
	elf_end(e);
	close(fd);
	FILE *m = fopen("/proc/self/maps", "r");
	REQUIRE(m, "maps");
	unsigned long long s;
	CHECK(fscanf(m, "%llx", &s) == 1, "first mapping");
	base = s;
	fclose(m);
}

static void test_sorted(void)
{
	for (uint32_t i = 1; i < R.n; i++)
		CHECK(R.rows[i].pc > R.rows[i - 1].pc, "row %u at %x after %x", i, R.rows[i].pc, R.rows[i - 1].pc);
}

static void test_function_entry(void)
{
	const struct bt_unwind_row *r = row_at(elf_addr((const void *)leafy));
	REQUIRE(r, "a row for leafy");
	CHECK(r->kind == BT_UROW_SP && r->cfa_off8 == 1, "leafy's entry: kind %d, CFA = rsp + %d", r->kind,
	      r->cfa_off8 * 8);
	CHECK(r->bp_off8 == 0, "rbp unchanged at entry (%d)", r->bp_off8);
}

static void test_start_is_outermost(void)
{
	const struct bt_unwind_row *r = row_at(elf_addr((const void *)_start) + 1);
	REQUIRE(r, "a row for _start");
	CHECK(r->kind == BT_UROW_END, "_start: kind %d (want the outermost frame)", r->kind);
}

static void test_saved_rbp(void)
{
	/* Somewhere rbp is saved (main's callers' code, libc's crt): a row
	 * with rbp at CFA - 16 or below, never above the CFA. */
	int saved = 0;
	for (uint32_t i = 0; i < R.n; i++) {
		CHECK(R.rows[i].bp_off8 <= 0, "rbp saved above the CFA at %x", R.rows[i].pc);
		saved += R.rows[i].bp_off8 < 0;
	}
	CHECK(saved > 0, "no row restores rbp");
}

static void test_plt(void)
{
	int plt = 0;
	for (uint32_t i = 0; i < R.n; i++)
		if (R.rows[i].kind == BT_UROW_PLT) {
			plt++;
			CHECK(R.rows[i].cfa_off8 == 10 || R.rows[i].cfa_off8 == 11, "PLT threshold %d", R.rows[i].cfa_off8);
		}
	CHECK(plt >= 1, "no PLT row");
}

static void test_garbage(void)
{
	static char junk[4096];
	struct bt_unwind_rows r;

	memset(junk, 0x5a, sizeof(junk));
	memcpy(junk, ELFMAG, SELFMAG);
	Elf *e = elf_memory(junk, sizeof(junk));
	CHECK(!e || bt_unwind_rows_build(e, NULL, &r, NULL) < 0, "garbage accepted");
	if (e)
		elf_end(e);
	e = elf_memory((char *)"not an elf", 10);
	CHECK(!e || bt_unwind_rows_build(e, NULL, &r, NULL) < 0, "text accepted");
	if (e)
		elf_end(e);
}

/* A build whose own code has its rules in .debug_frame only
 * (stack_workload_dframe): read from there; then the same file with its
 * .debug_frame garbled every way a byte can be: never a crash, never a
 * row out of order. */
static void test_debug_frame(void)
{
	const char *path = "build/tests/stack_workload_dframe";
	struct bt_unwind_rows r;
	size_t len;
	unsigned char *img = h_read_file(path, &len);
	if (!img) {
		printf("# %s not built: skipped\n", path);
		return;
	}
	Elf *e = elf_memory((char *)img, len);
	REQUIRE(e, "elf_memory");
	CHECK(bt_unwind_has_debug_frame(e), "it has a .debug_frame");
	CHECK(bt_unwind_rows_build(e, NULL, &r, NULL) == 0 && r.debug_fdes >= 5, "%u FDEs from .debug_frame", r.debug_fdes);
	bt_unwind_rows_free(&r);
	/* where .debug_frame lies in the file */
	size_t shstrndx, off = 0, size = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	elf_getshdrstrndx(e, &shstrndx);
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".debug_frame")) {
			off = sh.sh_offset;
			size = sh.sh_size;
		}
	elf_end(e);
	REQUIRE(size && off + size <= len, ".debug_frame found");
	unsigned seed = 1;
	int bad = 0;
	for (int round = 0; round < 2000; round++) {
		unsigned char *c = malloc(len);
		REQUIRE(c, "malloc");
		memcpy(c, img, len);
		for (int k = 0; k < 1 + round % 8; k++) {
			seed = seed * 1103515245u + 12345u;
			c[off + (seed >> 8) % size] = (unsigned char)(seed >> 24);
		}
		Elf *g = elf_memory((char *)c, len);
		if (g && bt_unwind_rows_build(g, NULL, &r, NULL) == 0) {
			for (uint32_t i = 1; i < r.n; i++)
				bad += r.rows[i].pc <= r.rows[i - 1].pc;
			bt_unwind_rows_free(&r);
		}
		if (g)
			elf_end(g);
		free(c);
	}
	CHECK(!bad, "%d rows out of order from garbled .debug_frame", bad);
	free(img);
}

int main(void)
{
	elf_version(EV_CURRENT);
	CHECK(leafy(1) == 4, "leafy");
	RUN(test_build);
	RUN(test_sorted);
	RUN(test_function_entry);
	RUN(test_start_is_outermost);
	RUN(test_saved_rbp);
	RUN(test_plt);
	RUN(test_garbage);
	RUN(test_debug_frame);
	bt_unwind_rows_free(&R);
	return h_done();
}
