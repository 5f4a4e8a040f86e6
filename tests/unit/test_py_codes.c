// SPDX-License-Identifier: MIT
/*
 * test_py_codes.c - Python frames' user side: code objects' names as the
 * BPF side sends them (user/stacks/py_codes.c: kept per process, control
 * bytes replaced, a record that is not one refused and counted), and the
 * interpreter found in Debian's python3.11 (user/stacks/py_offsets.c:
 * _PyRuntime, _PyEval_EvalFrameDefault, Py_Version 3.11, the offsets
 * known), in pyenv's 3.10-3.13 where installed (3.13's from its
 * _Py_DebugOffsets), a binary that is not one refused, debug offsets of
 * another version or layout refused.
 *
 * `test_py_codes --offsets FILE` prints FILE's offsets as the recorder
 * finds them, for tests/kernel/py_offsets_check.py to check against a
 * live interpreter.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "py_codes.h"
#include "py_offsets.h"

/* Line tables and the line of each instruction (byte offset), printed by
 * CPython's own co_lines() for this function in pyenv's 3.10.13 and 3.12.1:
 *   def f(n):
 *       s = 0
 *       for i in range(n):
 *           if i % 3:
 *               s += i * i
 *           else:
 *               s -= 1
 *       return s
 * (-1: an instruction of no line). */
static const uint8_t lt_310[] = { 0x04, 0x01, 0x0c, 0x01, 0x08, 0x01, 0x0e, 0x01, 0x0a, 0x02, 0x04, 0x01 };
static const int lines_310[][2] = {
	{ 0, 3 }, { 2, 3 }, { 4, 4 }, { 6, 4 }, { 8, 4 }, { 10, 4 }, { 12, 4 }, { 14, 4 }, { 16, 5 }, { 18, 5 },
	{ 20, 5 }, { 22, 5 }, { 24, 6 }, { 26, 6 }, { 28, 6 }, { 30, 6 }, { 32, 6 }, { 34, 6 }, { 36, 6 },
	{ 38, 8 }, { 40, 8 }, { 42, 8 }, { 44, 8 }, { 46, 8 }, { 48, 9 }, { 50, 9 }
};
static const uint8_t lt_312[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xdc, 0x0d, 0x12, 0x90, 0x31, 0x8b, 0x58, 0xf2, 0x00, 0x04, 0x05,
	0x13, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x8a, 0x35, 0xd8, 0x0c, 0x0d, 0x90, 0x11, 0x90, 0x51, 0x91,
	0x15, 0x89, 0x4a, 0x89, 0x41, 0xe0, 0x0c, 0x0d, 0x90, 0x11, 0x89, 0x46, 0x89, 0x41, 0xf0, 0x09, 0x04, 0x05,
	0x13, 0xf0, 0x0a, 0x00, 0x0c, 0x0d, 0x80, 0x48
};
static const int lines_312[][2] = {
	{ 0, 2 }, { 2, 3 }, { 4, 3 }, { 6, 4 }, { 8, 4 }, { 10, 4 }, { 12, 4 }, { 14, 4 }, { 16, 4 }, { 18, 4 },
	{ 20, 4 }, { 22, 4 }, { 24, 4 }, { 26, 4 }, { 28, 4 }, { 30, 4 }, { 32, 4 }, { 34, 5 }, { 36, 5 },
	{ 38, 5 }, { 40, 5 }, { 42, 5 }, { 44, 6 }, { 46, 6 }, { 48, 6 }, { 50, 6 }, { 52, 6 }, { 54, 6 },
	{ 56, 6 }, { 58, 6 }, { 60, 6 }, { 62, 8 }, { 64, 8 }, { 66, 8 }, { 68, 8 }, { 70, 8 }, { 72, 8 },
	{ 74, 4 }, { 76, 9 }, { 78, 9 }
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* bt_py_line against CPython's own: every instruction of both formats;
 * before the first, past a cut table, and a table of another format */
static void test_lines(void)
{
	int bad = 0, first_bad = -1;

	for (size_t i = 0; i < N(lines_310); i++)
		if (bt_py_line(lt_310, sizeof(lt_310), 1, 2, lines_310[i][0]) != lines_310[i][1] && !bad++)
			first_bad = lines_310[i][0];
	CHECK(!bad, "3.10: %d instructions differ, the first at %d", bad, first_bad);
	bad = 0;
	for (size_t i = 0; i < N(lines_312); i++)
		if (bt_py_line(lt_312, sizeof(lt_312), 0, 2, lines_312[i][0]) != lines_312[i][1] && !bad++)
			first_bad = lines_312[i][0];
	CHECK(!bad, "3.12: %d instructions differ, the first at %d", bad, first_bad);
	CHECK(bt_py_line(lt_312, sizeof(lt_312), 0, 2, -2) == 2 && bt_py_line(lt_310, sizeof(lt_310), 1, 2, -2) == 2,
	      "not started: the first line");
	CHECK(bt_py_line(lt_312, 12, 0, 2, 76) == -1 && bt_py_line(lt_310, 4, 1, 2, 48) == -1, "past a cut table: none");
	CHECK(bt_py_line(lt_312, 12, 0, 2, 2) == 3, "before the cut: known");
	CHECK(bt_py_line(lt_312, sizeof(lt_312), 0, 2, 1000) == -1 && bt_py_line(lt_310, 0, 1, 2, 0) == -1,
	      "past the code: none");
	CHECK(bt_py_line(lt_310, sizeof(lt_310), 0, 2, 4) == -1, "3.10's table read as 3.11+'s: refused");
	static const uint8_t long_varint[] = { 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }; /* code 14, unending */
	CHECK(bt_py_line(long_varint, sizeof(long_varint), 0, 1, 0) == -1, "a varint past the table: refused");
}

/* A record carrying its instruction and line table: named with the line */
static void test_record_line(void)
{
	struct bt_pycodes *pc = bt_pycodes_new();
	struct bt_pycode_stats st;
	struct bt_raw_py_code r;
	char buf[400];

	REQUIRE(pc, "new");
	memset(&r, 0, sizeof(r));
	r.h.type = BT_RAW_PY_CODE;
	r.h.tgid = 7;
	r.key = BT_FRAME_PY_BIT | 1;
	r.line = 2;
	r.instr = 36; /* if i % 3 */
	snprintf(r.name, sizeof(r.name), "f");
	snprintf(r.file, sizeof(r.file), "/t.py");
	memcpy(r.linetable, lt_312, sizeof(lt_312));
	r.lt_len = sizeof(lt_312);
	bt_pycodes_add(pc, &r, sizeof(r));
	r.key = BT_FRAME_PY_BIT | 2;
	r.flags = BT_PY_CODE_LT_310;
	r.instr = 40; /* s -= 1 */
	memcpy(r.linetable, lt_310, sizeof(lt_310));
	r.lt_len = sizeof(lt_310);
	bt_pycodes_add(pc, &r, sizeof(r));
	r.key = BT_FRAME_PY_BIT | 3;
	r.flags = BT_PY_CODE_LT_CUT;
	r.lt_len = 4; /* cut before instr 40: its first line, counted */
	memcpy(r.linetable, lt_312, sizeof(lt_312));
	bt_pycodes_add(pc, &r, sizeof(r));
	r.key = BT_FRAME_PY_BIT | 4;
	r.flags = 0;
	r.lt_len = 60000; /* more than the record holds: not read */
	bt_pycodes_add(pc, &r, sizeof(r));
	CHECK(bt_pycodes_find(pc, 7, BT_FRAME_PY_BIT | 1, buf, sizeof(buf)) && !strcmp(buf, "f (/t.py:5)"), "%s", buf);
	CHECK(bt_pycodes_find(pc, 7, BT_FRAME_PY_BIT | 2, buf, sizeof(buf)) && !strcmp(buf, "f (/t.py:8)"), "%s", buf);
	CHECK(bt_pycodes_find(pc, 7, BT_FRAME_PY_BIT | 3, buf, sizeof(buf)) && !strcmp(buf, "f (/t.py:2)"), "%s", buf);
	CHECK(bt_pycodes_find(pc, 7, BT_FRAME_PY_BIT | 4, buf, sizeof(buf)) && !strcmp(buf, "f (/t.py:2)"), "%s", buf);
	bt_pycodes_stats(pc, &st);
	CHECK(st.codes == 4 && st.first_line == 2, "codes %llu first_line %llu", (unsigned long long)st.codes,
	      (unsigned long long)st.first_line);
	bt_pycodes_free(pc);
}


static struct bt_raw_py_code rec(uint32_t tgid, uint64_t key, const char *name, const char *file, uint32_t line)
{
	struct bt_raw_py_code r;

	memset(&r, 0, sizeof(r));
	r.h.type = BT_RAW_PY_CODE;
	r.h.tgid = tgid;
	r.key = key;
	r.line = line;
	snprintf(r.name, sizeof(r.name), "%s", name);
	snprintf(r.file, sizeof(r.file), "%s", file);
	return r;
}

static void test_names(void)
{
	struct bt_pycodes *pc = bt_pycodes_new();
	struct bt_pycode_stats st;
	struct bt_raw_py_code r;
	char buf[400];

	REQUIRE(pc, "new");
	r = rec(10, BT_FRAME_PY_BIT | 0x1000, "hot", "/tmp/x.py", 3);
	bt_pycodes_add(pc, &r, sizeof(r));
	r = rec(11, BT_FRAME_PY_BIT | 0x1000, "Other.m", "/tmp/y.py", 7); /* same key, another process */
	bt_pycodes_add(pc, &r, sizeof(r));
	r = rec(10, BT_FRAME_PY_BIT | 0x2000, "bad\nname\x1b", "/tmp/x.py", 9);
	bt_pycodes_add(pc, &r, sizeof(r));
	CHECK(bt_pycodes_find(pc, 10, BT_FRAME_PY_BIT | 0x1000, buf, sizeof(buf)) && !strcmp(buf, "hot (/tmp/x.py:3)"),
	      "%s", buf);
	CHECK(bt_pycodes_find(pc, 11, BT_FRAME_PY_BIT | 0x1000, buf, sizeof(buf)) &&
		      !strcmp(buf, "Other.m (/tmp/y.py:7)"), "%s", buf);
	CHECK(bt_pycodes_find(pc, 10, BT_FRAME_PY_BIT | 0x2000, buf, sizeof(buf)) &&
		      !strcmp(buf, "bad?name? (/tmp/x.py:9)"), "%s", buf);
	CHECK(!bt_pycodes_find(pc, 12, BT_FRAME_PY_BIT | 0x1000, buf, sizeof(buf)), "another process's");
	r = rec(10, 0x3000, "nokey", "/tmp/x.py", 1); /* no BT_FRAME_PY_BIT: not a frame's key */
	bt_pycodes_add(pc, &r, sizeof(r));
	bt_pycodes_add(pc, &r, 40); /* cut short */
	bt_pycodes_stats(pc, &st);
	CHECK(st.codes == 3 && st.malformed == 2, "codes %llu malformed %llu", (unsigned long long)st.codes,
	      (unsigned long long)st.malformed);
	/* many: the table grows */
	for (uint64_t i = 0; i < 5000; i++) {
		r = rec(20, BT_FRAME_PY_BIT | (0x10000 + i * 16), "f", "/tmp/z.py", (uint32_t)i);
		bt_pycodes_add(pc, &r, sizeof(r));
	}
	CHECK(bt_pycodes_find(pc, 20, BT_FRAME_PY_BIT | (0x10000 + 4321 * 16), buf, sizeof(buf)) &&
		      !strcmp(buf, "f (/tmp/z.py:4321)"), "%s", buf);
	bt_pycodes_free(pc);
}

static int probe(const char *path, struct bt_py_file *pf)
{
	int fd = open(path, O_RDONLY), r = -1;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		r = bt_py_probe(elf, path, pf);
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}

static void test_probe(void)
{
	struct bt_py_file pf;
	int r = probe("/usr/bin/python3.11", &pf);

	if (r < 0) {
		printf("# no /usr/bin/python3.11: its probe not checked\n");
	} else {
		CHECK(r == 1 && pf.version == 0x030b && pf.known == 1, "r %d version %x known %u", r, pf.version,
		      pf.known);
		CHECK(pf.runtime && pf.eval_lo && pf.eval_hi > pf.eval_lo, "addresses");
		CHECK(pf.o.tstate_tid == 160 && pf.o.frame_entry == 68, "3.11's offsets");
	}
	CHECK(probe("/bin/sh", &pf) == 0, "sh is not an interpreter");
	CHECK(bt_py_offsets_of(0x030a) && bt_py_offsets_of(0x030b) && bt_py_offsets_of(0x030c) &&
		      !bt_py_offsets_of(0x030d) && !bt_py_offsets_of(0x0309),
	      "3.10-3.12 in the table, 3.13 from the binary");
}

/* pyenv's builds, where installed: each version found, with its layout */
static void test_pyenv(void)
{
	static const struct {
		const char *lib;
		uint32_t version;
		uint16_t flags, tstate_frame, code_name;
	} v[] = {
		{ "/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0", 0x030a,
		  BT_PY_ENTRY_EACH | BT_PY_TID_PTHREAD | BT_PY_LASTI_INT,
		  24, 112 },
		{ "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", 0x030b, BT_PY_CFRAME, 56, 128 },
		{ "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 0x030c, BT_PY_CFRAME | BT_PY_ENTRY_SHIM,
		  56, 128 },
		/* measured with gdb on its debug data: current_frame 0x48, owner 0x46, threads.head 0x1cb0 */
		{ "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", 0x030d, BT_PY_ENTRY_SHIM, 72, 128 },
	};
	struct bt_py_file pf;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int r = probe(v[i].lib, &pf);

		if (r < 0) {
			printf("# no %s: not checked\n", v[i].lib);
			continue;
		}
		CHECK(r == 1 && pf.version == v[i].version && pf.known, "%s: r %d version %x known %u", v[i].lib, r,
		      pf.version, pf.known);
		CHECK(pf.o.flags == v[i].flags && pf.o.tstate_frame == v[i].tstate_frame &&
			      pf.o.code_name == v[i].code_name,
		      "%s: flags %x tstate_frame %u code_name %u", v[i].lib, pf.o.flags, pf.o.tstate_frame,
		      pf.o.code_name);
		if (v[i].version == 0x030d)
			CHECK(pf.o.threads_head == 0x1cb0 && pf.o.frame_entry == 0x46 && pf.o.str_data == 40 &&
				      pf.o.interp_head == 0x278,
			      "3.13.0's debug offsets: threads_head %#x owner %#x str %u interp_head %#x",
			      pf.o.threads_head, pf.o.frame_entry, pf.o.str_data, pf.o.interp_head);
	}
}

/* _Py_DebugOffsets of another version, layout or build: refused */
static void test_debug_offsets(void)
{
	uint64_t d[80];
	struct bt_py_offsets o;

	memset(d, 0, sizeof(d));
	memcpy(d, "xdebugpy", 8);
	d[1] = 0x030d00f0;
	d[5] = 0x278;
	d[25] = 0xa0;
	d[70] = 40;
	CHECK(bt_py_debug_offsets(d, 80, &o) == 0 && o.interp_head == 0x278 && o.tstate_tid == 0xa0 &&
		      o.str_data == 40 && o.flags == BT_PY_ENTRY_SHIM,
	      "3.13 read");
	CHECK(bt_py_debug_offsets(d, 60, &o) == -1, "too short");
	d[2] = 1;
	CHECK(bt_py_debug_offsets(d, 80, &o) == -1, "free-threaded: refused");
	d[2] = 0;
	d[1] = 0x030e00a0;
	CHECK(bt_py_debug_offsets(d, 80, &o) == -1, "3.14: another layout, refused");
	d[1] = 0x030d00f0;
	d[37] = 1ull << 40;
	CHECK(bt_py_debug_offsets(d, 80, &o) == -1, "an offset that is not one: refused");
	d[37] = 0;
	memcpy(d, "xdebugpz", 8);
	CHECK(bt_py_debug_offsets(d, 80, &o) == -1, "no cookie: refused");
}

/* --offsets FILE: its offsets, one line of name=value */
static int print_offsets(const char *path)
{
	struct bt_py_file pf;

	if (probe(path, &pf) != 1 || !pf.known) {
		fprintf(stderr, "%s: not a CPython interpreter with known offsets\n", path);
		return 1;
	}
	printf("version=%#x interp_head=%u threads_head=%u tstate_next=%u tstate_tid=%u tstate_frame=%u "
	       "cframe_frame=%u frame_code=%u frame_prev=%u frame_entry=%u code_line=%u code_file=%u "
	       "code_name=%u str_data=%u flags=%u frame_instr=%u code_code=%u code_lines=%u bytes_size=%u "
	       "bytes_data=%u\n",
	       pf.version, pf.o.interp_head, pf.o.threads_head, pf.o.tstate_next, pf.o.tstate_tid, pf.o.tstate_frame,
	       pf.o.cframe_frame, pf.o.frame_code, pf.o.frame_prev, pf.o.frame_entry, pf.o.code_line, pf.o.code_file,
	       pf.o.code_name, pf.o.str_data, pf.o.flags, pf.o.frame_instr, pf.o.code_code, pf.o.code_lines,
	       pf.o.bytes_size, pf.o.bytes_data);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--offsets"))
		return print_offsets(argv[2]);
	RUN(test_names);
	RUN(test_lines);
	RUN(test_record_line);
	RUN(test_probe);
	RUN(test_pyenv);
	RUN(test_debug_offsets);
	return h_ntests && h_nfail_tests ? 1 : 0;
}
