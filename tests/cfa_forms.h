/* SPDX-License-Identifier: MIT */
/*
 * cfa_forms.h - two functions whose call-frame information uses the forms
 * OpenSSL's assembly does (x86-64), for the unwinder's tests
 * (unit/test_unwind_table.c, workloads/unwind_cfa.c):
 *
 *   cfa_reg_spin(n):  CFA = r11 + 8 while it spins (`mov %rsp,%r11;
 *                     .cfi_def_cfa_register %r11`, then rsp realigned),
 *                     as bn_mul_mont's prologue keeps it in rax;
 *   cfa_deref_call(n): CFA = *(rsp + 40) + 16 while it calls
 *                     cfa_reg_spin(n) (the entry rsp stored in the frame,
 *                     `.cfi_cfa_expression %rsp+40,deref,+8` in OpenSSL's
 *                     perlasm), with rbp zeroed: no frame pointer to fall
 *                     back on.
 *
 * The labels cfa_reg_loop and cfa_deref_ret mark where each rule holds.
 */
#ifndef BTRACE_TESTS_CFA_FORMS_H
#define BTRACE_TESTS_CFA_FORMS_H
#include <stdint.h>

void cfa_reg_spin(uint64_t n);
void cfa_deref_call(uint64_t n);
extern const char cfa_reg_loop[], cfa_deref_ret[];

__asm__(".text\n"
	".globl cfa_reg_spin, cfa_reg_loop\n"
	".type cfa_reg_spin, @function\n"
	"cfa_reg_spin:\n"
	".cfi_startproc\n"
	"	mov %rsp, %r11\n"
	".cfi_def_cfa_register %r11\n"
	"	push %rbx\n"
	".cfi_offset %rbx, -16\n"
	"	sub $72, %rsp\n"
	"	and $-64, %rsp\n" /* rsp no longer says where the CFA is */
	"cfa_reg_loop:\n"
	"	dec %rdi\n"
	"	jnz cfa_reg_loop\n"
	"	mov -8(%r11), %rbx\n"
	"	mov %r11, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	".cfi_same_value %rbx\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfa_reg_spin, .-cfa_reg_spin\n"

	".globl cfa_deref_call, cfa_deref_ret\n"
	".type cfa_deref_call, @function\n"
	"cfa_deref_call:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_offset %rbp, -16\n"
	"	mov %rsp, %rax\n" /* CFA - 16 */
	".cfi_def_cfa_register %rax\n"
	"	sub $128, %rsp\n"
	"	and $-64, %rsp\n"
	"	mov %rax, 40(%rsp)\n"
	/* DW_CFA_def_cfa_expression, 5 bytes: DW_OP_breg7 40, DW_OP_deref,
	 * DW_OP_plus_uconst 16 */
	".cfi_escape 0x0f, 0x05, 0x77, 0x28, 0x06, 0x23, 0x10\n"
	"	xor %ebp, %ebp\n"
	"	call cfa_reg_spin\n"
	"cfa_deref_ret:\n"
	"	mov 40(%rsp), %rsp\n"
	".cfi_def_cfa %rsp, 16\n"
	"	pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	".cfi_same_value %rbp\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfa_deref_call, .-cfa_deref_call\n");
#endif
