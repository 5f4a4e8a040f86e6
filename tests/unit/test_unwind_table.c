// SPDX-License-Identifier: MIT
/*
 * test_unwind_table.c - .eh_frame compiled into unwind rows
 * (user/stacks/unwind_table.c), on this test's own binary: rows sorted,
 * a function's entry has CFA = rsp + 8, a function that pushed registers
 * saves rbp below the CFA or leaves it, _start is the outermost frame, the
 * PLT gets its rule; OpenSSL's forms (CFA on another register, CFA read
 * from the frame: tests/cfa_forms.h) get theirs; garbage is refused
 * without a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cfa_forms.h"
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

/* OpenSSL's assembly: CFA = r11 + 8 in cfa_reg_spin's loop; CFA =
 * *(rsp + 40) + 16 at cfa_deref_call's call, rbp saved at CFA - 16. */
static void test_openssl_forms(void)
{
	const struct bt_unwind_row *r = row_at(elf_addr(cfa_reg_loop));
	REQUIRE(r, "a row for cfa_reg_spin");
	CHECK(BT_UROW_KIND(r->kind) == BT_UROW_REG && BT_UROW_REGNO(r->kind) == 11 && r->cfa_off8 == 1,
	      "cfa_reg_spin: kind %d on register %d, off %d (want CFA = r11 + 8)", BT_UROW_KIND(r->kind),
	      BT_UROW_REGNO(r->kind), r->cfa_off8 * 8);
	r = row_at(elf_addr(cfa_deref_ret) - 1); /* the call, as a return address is looked up */
	REQUIRE(r, "a row for cfa_deref_call");
	CHECK(BT_UROW_KIND(r->kind) == BT_UROW_DEREF && BT_UROW_REGNO(r->kind) == 7 &&
		      BT_UROW_DEREF_OFF8(r->cfa_off8) == 5 && BT_UROW_DEREF_ADD8(r->cfa_off8) == 2 && r->bp_off8 == -2,
	      "cfa_deref_call: kind %d on register %d, off %d, add %d, rbp at CFA%+d (want *(rsp + 40) + 16, CFA-16)",
	      BT_UROW_KIND(r->kind), BT_UROW_REGNO(r->kind), BT_UROW_DEREF_OFF8(r->cfa_off8) * 8,
	      BT_UROW_DEREF_ADD8(r->cfa_off8) * 8, r->bp_off8 * 8);
	CHECK(R.unsupported == 0, "%u ranges of this program's rules not followed", R.unsupported);
	/* the encoding's corners: offsets below the register, the largest add */
	uint16_t c = BT_UROW_DEREF_ENC(-1, 63);
	CHECK(BT_UROW_DEREF_OFF8(c) == -1 && BT_UROW_DEREF_ADD8(c) == 63, "-8/504 decoded as %d/%d",
	      BT_UROW_DEREF_OFF8(c) * 8, BT_UROW_DEREF_ADD8(c) * 8);
	c = BT_UROW_DEREF_ENC(-512, 0);
	CHECK(BT_UROW_DEREF_OFF8(c) == -512 && BT_UROW_DEREF_ADD8(c) == 0, "-4096 decoded as %d",
	      BT_UROW_DEREF_OFF8(c) * 8);
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

/* A file whose PT_GNU_EH_FRAME declares more FDEs than any program has
 * (a sparse file can claim gigabytes): refused before anything is read. */
static void test_huge_refused(void)
{
	static char img[4096];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	struct bt_unwind_rows r;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	ph->p_type = PT_GNU_EH_FRAME;
	ph->p_offset = 1024;
	ph->p_filesz = 1ull << 30; /* 1 GiB: 134 M FDEs' worth */
	Elf *e = elf_memory(img, sizeof(img));
	CHECK(e && bt_unwind_rows_build(e, NULL, &r, NULL) == -EFBIG, "a 1 GiB .eh_frame_hdr not refused");
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
	RUN(test_openssl_forms);
	RUN(test_garbage);
	RUN(test_huge_refused);
	RUN(test_debug_frame);
	bt_unwind_rows_free(&R);
	return h_done();
}
