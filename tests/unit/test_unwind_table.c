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
	CHECK(bt_unwind_rows_build(e, &R, NULL) == 0, "build");
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
	CHECK(!e || bt_unwind_rows_build(e, &r, NULL) < 0, "garbage accepted");
	if (e)
		elf_end(e);
	e = elf_memory((char *)"not an elf", 10);
	CHECK(!e || bt_unwind_rows_build(e, &r, NULL) < 0, "text accepted");
	if (e)
		elf_end(e);
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
	bt_unwind_rows_free(&R);
	return h_done();
}
