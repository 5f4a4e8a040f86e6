/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * task.bpf.h - what a program reads of a task without any map or read-only
 * data: its system call number at sys_exit, its name compared with one
 * given. Shared by record.bpf.c, trigger.bpf.c and trigger_fire.bpf.h (so
 * the trigger side needs nothing of record's). Included after vmlinux.h,
 * events.h and the libbpf headers.
 */
#ifndef BTRACE_TASK_BPF_H
#define BTRACE_TASK_BPF_H

/* The system call number at sys_exit (the tracepoint gives only the return
 * value): what syscall_get_nr() reads on each architecture. */
static __always_inline __s64 bt_syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return (__s64)regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	return (__s64)regs->syscallno;
#else
	return -1;
#endif
}

/* Compare a NUL-padded task name with a reference name (BT_COMM_LEN bytes). */
static __always_inline bool bt_comm_equal(const char *a, const volatile char *b)
{
#pragma unroll
	for (int i = 0; i < BT_COMM_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

#endif /* BTRACE_TASK_BPF_H */
