// SPDX-License-Identifier: MIT
/*
 * gen_hostile_elf.c - writes the hostile binaries of
 * tests/kernel/test_unwind_hostile.sh: static x86-64 executables that spin
 * for SECONDS (time(2) in a loop, so they are sampled on CPU) and carry
 * call-frame information no real program has.
 *
 *   gen_hostile_elf fdes N OUT SECONDS    N FDEs (3 rows each) in .eh_frame,
 *                                         all listed in .eh_frame_hdr
 *   gen_hostile_elf sparse SIZE_MB OUT SECONDS
 *                                         a few FDEs, but a .eh_frame
 *                                         section that declares SIZE_MB
 *                                         (a sparse hole: the file takes
 *                                         a few KiB of disk)
 *
 * Each gets a random GNU build-id, so no table cache knows it. Written in C
 * so millions of FDEs take well under a second.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BASE 0x400000ull
#define CODE_OFF 0x100u
#define NOTE_OFF 0x180u
#define HDR_OFF 0x1000u
#define FDE_PC 0x10000000ull /* the FDEs describe code nobody runs: only their number matters */

static uint8_t *buf;
static size_t cap;

static void put(size_t off, const void *p, size_t n)
{
	if (off + n > cap) {
		fprintf(stderr, "gen_hostile_elf: layout overflow\n");
		exit(1);
	}
	memcpy(buf + off, p, n);
}

static void put32(size_t off, uint32_t v) { put(off, &v, 4); }

/* spin until time(NULL) reaches its first value + secs, then exit(0) */
static size_t code(uint8_t *c, uint32_t secs)
{
	static const uint8_t head[] = { 0xb8, 0xc9, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05, /* time(NULL) */
					0x49, 0x89, 0xc4,			     /* mov r12, rax */
					0x49, 0x81, 0xc4 };			     /* add r12, imm32 */
	static const uint8_t loop[] = { 0xb8, 0xc9, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05, /* time(NULL) */
					0x4c, 0x39, 0xe0,			     /* cmp rax, r12 */
					0x7c, 0xf2,				     /* jl loop */
					0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05 }; /* exit(0) */
	size_t n = 0;
	memcpy(c, head, sizeof(head));
	n += sizeof(head);
	memcpy(c + n, &secs, 4);
	n += 4;
	memcpy(c + n, loop, sizeof(loop));
	return n + sizeof(loop);
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "fdes") && strcmp(argv[1], "sparse"))) {
		fprintf(stderr, "usage: gen_hostile_elf fdes N OUT SECONDS | sparse SIZE_MB OUT SECONDS\n");
		return 2;
	}
	int sparse = !strcmp(argv[1], "sparse");
	uint64_t n = strtoull(argv[2], NULL, 0), big = 0;
	uint32_t secs = (uint32_t)strtoul(argv[4], NULL, 0);
	if (sparse) {
		big = n << 20;
		n = 16;
	}
	if (!n || n > (64u << 20)) {
		fprintf(stderr, "gen_hostile_elf: N out of range\n");
		return 2;
	}
	/* .eh_frame_hdr, then .eh_frame: a CIE and n FDEs of 24 bytes */
	size_t eh_off = (HDR_OFF + 12 + 8 * n + 7) & ~(size_t)7;
	size_t eh_len = 24 + 24 * n + 4; /* + a zero terminator */
	size_t shstr_off = eh_off + eh_len, sh_off = (shstr_off + 64 + 7) & ~(size_t)7;
	cap = sh_off + 4 * sizeof(Elf64_Shdr);
	if (!(buf = calloc(1, cap))) {
		perror("gen_hostile_elf");
		return 1;
	}

	/* the code, and its build-id note */
	uint8_t c[64];
	put(CODE_OFF, c, code(c, secs));
	uint32_t nh[3] = { 4, 20, NT_GNU_BUILD_ID };
	put(NOTE_OFF, nh, sizeof(nh));
	put(NOTE_OFF + 12, "GNU", 4);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int i = 0; i < 20; i++)
		buf[NOTE_OFF + 16 + i] = (uint8_t)rand();

	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, count udata4,
	 * table datarel sdata4 (relative to the header) */
	static const uint8_t hh[4] = { 1, 0x1b, 0x03, 0x3b };
	put(HDR_OFF, hh, 4);
	put32(HDR_OFF + 4, (uint32_t)(eh_off - (HDR_OFF + 4)));
	put32(HDR_OFF + 8, (uint32_t)n);
	/* the CIE: "zR", code align 1, data align -8, RA r16, FDEs pcrel
	 * sdata4; CFA = rsp + 8, RA at CFA - 8 */
	static const uint8_t cie[24] = { 20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
					 0x0c, 7, 8, 0x90, 1, 0, 0 };
	put(eh_off, cie, sizeof(cie));
	for (uint64_t i = 0; i < n; i++) {
		size_t f = eh_off + 24 + 24 * i;
		uint64_t pc = FDE_PC + 16 * i;
		/* length, CIE pointer, pc_begin (pcrel), range 16, no augmentation;
		 * advance 4: CFA + 16, advance 4: CFA + 24 (3 rows) */
		uint8_t fde[24] = { 20, 0, 0, 0 };
		uint32_t ciep = (uint32_t)(f + 4 - eh_off), pcrel = (uint32_t)(pc - (BASE + f + 8)), range = 16;
		memcpy(fde + 4, &ciep, 4);
		memcpy(fde + 8, &pcrel, 4);
		memcpy(fde + 12, &range, 4);
		static const uint8_t ins[8] = { 0, 0x44, 0x0e, 16, 0x44, 0x0e, 24, 0 };
		memcpy(fde + 16, ins, 8);
		put(f, fde, sizeof(fde));
		put32(HDR_OFF + 12 + 8 * i, (uint32_t)(pc - (BASE + HDR_OFF)));
		put32(HDR_OFF + 16 + 8 * i, (uint32_t)(BASE + f - (BASE + HDR_OFF)));
	}

	/* sections: null, .eh_frame_hdr, .eh_frame (big: declared SIZE_MB),
	 * .shstrtab */
	static const char names[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";
	put(shstr_off, names, sizeof(names));
	uint64_t eh_decl = big ? big : eh_len;
	Elf64_Shdr sh[4] = { { 0 } };
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = BASE + HDR_OFF,
			      .sh_offset = HDR_OFF, .sh_size = 12 + 8 * n, .sh_addralign = 4 };
	sh[2] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = BASE + eh_off,
			      .sh_offset = eh_off, .sh_size = eh_decl, .sh_addralign = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = 25, .sh_type = SHT_STRTAB, .sh_offset = shstr_off, .sh_size = sizeof(names),
			      .sh_addralign = 1 };
	put(sh_off, sh, sizeof(sh));

	/* one RX PT_LOAD over the written bytes, the header, the note */
	Elf64_Phdr ph[3] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = BASE, .p_paddr = BASE,
		  .p_filesz = shstr_off, .p_memsz = shstr_off, .p_align = 0x1000 },
		{ .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_offset = HDR_OFF, .p_vaddr = BASE + HDR_OFF,
		  .p_paddr = BASE + HDR_OFF, .p_filesz = 12 + 8 * n, .p_memsz = 12 + 8 * n, .p_align = 4 },
		{ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = NOTE_OFF, .p_vaddr = BASE + NOTE_OFF,
		  .p_paddr = BASE + NOTE_OFF, .p_filesz = 36, .p_memsz = 36, .p_align = 4 },
	};
	put(sizeof(Elf64_Ehdr), ph, sizeof(ph));
	Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_entry = BASE + CODE_OFF, .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = sh_off,
			  .e_ehsize = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 3,
			  .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 3 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	put(0, &eh, sizeof(eh));

	int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, buf, cap) != (ssize_t)cap ||
	    (big && ftruncate(fd, (off_t)(eh_off + big + 4096))) || close(fd)) {
		fprintf(stderr, "gen_hostile_elf: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	free(buf);
	return 0;
}
