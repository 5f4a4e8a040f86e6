// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uprobe.bpf.c - user-space probes of `btrace-bpf record -u/-U`: uprobes,
 * uretprobes and USDT probes into the same ring buffer as the kernel events.
 *
 * Three generic programs, each attached many times by user/probes/uprobes.c; what
 * one attachment is about travels in its BPF cookie (bpf_get_attach_cookie(),
 * for USDT bpf_usdt_cookie()):
 *
 *   bits  0..23  probe id of the event to emit (BT_UC_NONE: emit nothing)
 *   bits 24..47  stamp id: push/pop an entry timestamp for the return probe
 *                with this id (BT_UC_NONE: no timestamp)
 *   bits 48..55  integer arguments to capture (entry, USDT)
 *
 * The layout is duplicated in user/probes/uprobes.c (BT_UC_*): keep both in step.
 *
 * Fast path, as in record.bpf.c: one lookup of this CPU's struct
 * bt_cpu_state, seq = atomic fetch-add (taken even if the reservation
 * fails), this CPU's ring rings[cpu] and bpf_ringbuf_reserve (either failing:
 * ++drops[BT_GROUP_UPROBE]), fill, submit with BPF_RB_NO_WAKEUP (FORCE_WAKEUP
 * past wakeup_bytes in that ring, checked every 64th event of a CPU),
 * ++emitted[BT_GROUP_UPROBE].
 *
 * `rings` and `cpu_state` are declared exactly as in record.bpf.c: the
 * loader hands record's maps over with bpf_map__reuse_fd() before load, so
 * both skeletons write the same per-CPU rings and the same per-CPU sequence.
 *
 * Return probes and durations: for a `%return` probe user space also attaches
 * the entry program with a stamp id. The entry pushes (timestamp, stack
 * pointer) on a small per-(thread, probe) stack in `stamps`; the return pops
 * the frame whose stack pointer matches its own. Frames of calls that never
 * returned (longjmp, exceptions, a thread killed mid-call) are deeper than
 * the returning one and are discarded on the way; a return whose entry was
 * not stamped (stack full, LRU eviction, attached mid-call) gets duration 0.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"

/*
 * libbpf's USDT support: libbpf fills the argument specs of every USDT
 * attachment into the map __bpf_usdt_specs of this object and gives the spec
 * id as the BPF cookie. <bpf/usdt.bpf.h> declares them, but it includes
 * <linux/errno.h> -> <asm/errno.h>, which the BPF target only finds with the
 * multiarch include directory (-I/usr/include/$(gcc -dumpmachine)); without
 * it the same declarations (libbpf 1.1 layout) are made here. The argument
 * reader below is ours either way: one spec lookup for all arguments instead
 * of one per bpf_usdt_arg() call.
 */
#if __has_include(<asm/errno.h>)
#include <bpf/usdt.bpf.h>
#else
#define BPF_USDT_MAX_SPEC_CNT 256
#define BPF_USDT_MAX_IP_CNT (4 * BPF_USDT_MAX_SPEC_CNT)
enum __bpf_usdt_arg_type {
	BPF_USDT_ARG_CONST,
	BPF_USDT_ARG_REG,
	BPF_USDT_ARG_REG_DEREF,
};
struct __bpf_usdt_arg_spec {
	__u64 val_off;
	enum __bpf_usdt_arg_type arg_type;
	short reg_off;
	bool arg_signed;
	char arg_bitshift;
};
#define BPF_USDT_MAX_ARG_CNT 12
struct __bpf_usdt_spec {
	struct __bpf_usdt_arg_spec args[BPF_USDT_MAX_ARG_CNT];
	__u64 usdt_cookie;
	short arg_cnt;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BPF_USDT_MAX_SPEC_CNT);
	__type(key, int);
	__type(value, struct __bpf_usdt_spec);
} __bpf_usdt_specs SEC(".maps") __weak;
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPF_USDT_MAX_IP_CNT);
	__type(key, long);
	__type(value, __u32);
} __bpf_usdt_ip_to_spec_id SEC(".maps") __weak;
#endif

/* Cookie layout (see above; mirrored in user/probes/uprobes.c). */
#define BT_UC_ID_BITS 24
#define BT_UC_NONE ((1u << BT_UC_ID_BITS) - 1)
#define BT_UC_ID(c) ((__u32)(c) & BT_UC_NONE)
#define BT_UC_STAMP(c) ((__u32)((c) >> 24) & BT_UC_NONE)
#define BT_UC_NARGS(c) ((__u32)((c) >> 48) & 0xff)

/* Entry frames kept per (thread, return probe): deeper recursion is not
 * timed (its returns get duration 0), shallower frames still are. */
#define BT_STAMP_DEPTH 8

/* The stack pointer at the return, relative to the one at the entry of the
 * same call: x86 pops the return address, arm64 returns through a register. */
#if defined(__TARGET_ARCH_x86)
#define BT_RET_SP_ADJ 8
#else
#define BT_RET_SP_ADJ 0
#endif

/* The 6th integer argument: libbpf 1.1's bpf_tracing.h stops at PARM5. */
#ifndef PT_REGS_PARM6
#if defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (__PT_REGS_CAST(x)->r9)
#elif defined(__TARGET_ARCH_arm64)
#define PT_REGS_PARM6(x) (__PT_REGS_CAST(x)->regs[5])
#elif defined(__TARGET_ARCH_riscv)
#define PT_REGS_PARM6(x) (__PT_REGS_CAST(x)->a5)
#else
#define PT_REGS_PARM6(x) 0
#endif
#endif

/* Read-only data, set by user space before load. */
const volatile __u32 max_args = BT_MAX_UARGS; /* upper limit on captured arguments */


/* `rings` is replaced by record's array of per-CPU rings (bpf_map__reuse_fd),
 * or by one that user/probes/uprobes.c makes (see bt_uprobes_open). */
/* Uprobe programs may run preemptibly (migration disabled only): one taken
 * off the CPU between taking a held sys_enter and reading it could read
 * another task's. They never flush: a thread hitting a uprobe is not inside
 * a system call, and the enter of another thread on this CPU was flushed
 * when that thread was switched out (emit.bpf.h: deferred sys_enter). */
#define BT_EMIT_NO_SYS_FLUSH
#include "emit.bpf.h"
#include "stacks_emit.bpf.h"

/* --ustack: every entry and USDT hit takes its call stacks. Set by the loader. */
const volatile __u32 take_ustack = 0;

struct bt_stamp_key {
	__u32 tid;
	__u32 stamp_id;
};

struct bt_stamp_frame {
	__u64 ts;
	__u64 sp;
};

struct bt_stamp_stack {
	__u32 depth;
	__u32 pad;
	struct bt_stamp_frame f[BT_STAMP_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192); /* resized by user space */
	__type(key, struct bt_stamp_key);
	__type(value, struct bt_stamp_stack);
} stamps SEC(".maps");

/* The fast path is emit.bpf.h's; uprobes run with interrupts on. */

static __always_inline __u32 bt_nargs(__u64 cookie)
{
	__u32 n = BT_UC_NARGS(cookie);

	if (n > max_args)
		n = max_args;
	return n > BT_MAX_UARGS ? BT_MAX_UARGS : n;
}

/* ---- entry timestamps ---------------------------------------------------- */

/* Frame index for the verifier: d is in range already, the mask (behind a
 * compiler barrier, so clang cannot drop it) proves it. */
static __always_inline __u32 bt_slot(__u32 i)
{
	barrier_var(i);
	return i & (BT_STAMP_DEPTH - 1);
}

static __always_inline void bt_stamp_push(__u32 stamp_id, __u64 ts, __u64 sp)
{
	struct bt_stamp_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .stamp_id = stamp_id };
	struct bt_stamp_stack *s;
	__u32 d;

	s = bpf_map_lookup_elem(&stamps, &k);
	if (!s) {
		struct bt_stamp_stack init = {
			.depth = 1,
			.f[0] = { .ts = ts, .sp = sp },
		};
		bpf_map_update_elem(&stamps, &k, &init, BPF_ANY);
		return;
	}
	d = s->depth;
	if (d > BT_STAMP_DEPTH)
		d = BT_STAMP_DEPTH;
	/* Frames of abandoned calls (no return seen) at or below this stack
	 * pointer are discarded, so an entry always lands on top of its callers. */
	for (int i = 0; i < BT_STAMP_DEPTH; i++) {
		if (d == 0 || s->f[bt_slot(d - 1)].sp > sp)
			break;
		d--;
	}
	if (d < BT_STAMP_DEPTH) {
		__u32 j = bt_slot(d);

		s->f[j].ts = ts;
		s->f[j].sp = sp;
		d++;
	}
	s->depth = d;
}

/* Duration of the call returning with stack pointer ret_sp, 0 if unknown. */
static __always_inline __u64 bt_stamp_pop(__u32 stamp_id, __u64 now, __u64 ret_sp)
{
	struct bt_stamp_key k = { .tid = (__u32)bpf_get_current_pid_tgid(), .stamp_id = stamp_id };
	struct bt_stamp_stack *s;
	__u64 dur = 0, entry_sp = ret_sp - BT_RET_SP_ADJ;
	__u32 d;

	s = bpf_map_lookup_elem(&stamps, &k);
	if (!s)
		return 0;
	d = s->depth;
	if (d > BT_STAMP_DEPTH)
		d = BT_STAMP_DEPTH;
	/* Discard deeper frames (calls that never returned), then match. */
	for (int i = 0; i < BT_STAMP_DEPTH; i++) {
		if (d == 0 || s->f[bt_slot(d - 1)].sp >= entry_sp)
			break;
		d--;
	}
	if (d > 0) {
		struct bt_stamp_frame *f = &s->f[bt_slot(d - 1)];

		if (f->sp == entry_sp) {
			dur = now > f->ts ? now - f->ts : 0;
			d--;
		}
	}
	s->depth = d;
	return dur;
}

/* ---- programs ------------------------------------------------------------- */

/* Both programs do their stamp work before reserving, with the clock read
 * once for the stamp and the event: the reservation is then checked once and
 * submitted in the same block. (Stamping between reserve and submit kept the
 * pointer live across the stamp code, and the compiler tested it for NULL a
 * second time, which the 6.1 verifier rejects: see bt_begin_at.) */
/* --ustack: the stacks of the hit, as an event of their own just before it. */
static __always_inline void bt_probe_stack(void *ctx, __u32 id)
{
	struct bt_stack_stats *ss;
	__u64 kh, uh;

	if (!take_ustack || !(ss = bt_stack_stats_get()))
		return;
	kh = bt_stack_take(ctx, BT_STK_SLOT_PROBE, 0, ss);
	uh = bt_stack_take(ctx, BT_STK_SLOT_PROBE, 1, ss);
	bt_stacks_emit(BT_EV_PROBE_STACK, kh, uh, id, 0, 0, 0, BT_IRQS_ON);
}

SEC("uprobe")
int bt_uprobe_entry(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 id = BT_UC_ID(cookie), stamp = BT_UC_STAMP(cookie);
	__u64 ts = bpf_ktime_get_boot_ns();
	struct bt_cpu_state *st;
	struct bt_ev_uprobe *e;
	void *ring;

	if (bt_stopped) /* no stamp either (emit.bpf.h) */
		return 0;
	if (stamp != BT_UC_NONE)
		bt_stamp_push(stamp, ts, PT_REGS_SP(ctx));
	if (id == BT_UC_NONE)
		return 0;
	bt_probe_stack(ctx, id);
	e = bt_begin_at(sizeof(*e), BT_GROUP_UPROBE, BT_EV_UPROBE_ENTRY, BT_IRQS_ON, ts, &st, &ring);
	if (!e)
		return 0;

	__u32 n = bt_nargs(cookie);
	e->probe_id = id;
	e->nargs = n;
	e->duration_ns = 0;
	e->ret = 0;
	e->args[0] = n > 0 ? PT_REGS_PARM1(ctx) : 0;
	e->args[1] = n > 1 ? PT_REGS_PARM2(ctx) : 0;
	e->args[2] = n > 2 ? PT_REGS_PARM3(ctx) : 0;
	e->args[3] = n > 3 ? PT_REGS_PARM4(ctx) : 0;
	e->args[4] = n > 4 ? PT_REGS_PARM5(ctx) : 0;
	e->args[5] = n > 5 ? PT_REGS_PARM6(ctx) : 0;
	bt_commit(e, st, ring, BT_GROUP_UPROBE, BT_IRQS_ON);
	return 0;
}

SEC("uretprobe")
int bt_uprobe_return(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 id = BT_UC_ID(cookie), stamp = BT_UC_STAMP(cookie);
	__u64 ts = bpf_ktime_get_boot_ns();
	struct bt_cpu_state *st;
	struct bt_ev_uprobe *e;
	void *ring;
	__u64 dur = 0;

	if (bt_stopped)
		return 0;
	if (stamp != BT_UC_NONE)
		dur = bt_stamp_pop(stamp, ts, PT_REGS_SP(ctx));
	e = bt_begin_at(sizeof(*e), BT_GROUP_UPROBE, BT_EV_UPROBE_RETURN, BT_IRQS_ON, ts, &st, &ring);
	if (!e)
		return 0;
	e->probe_id = id;
	e->nargs = 0;
	e->duration_ns = dur;
	e->ret = PT_REGS_RC(ctx);
	e->args[0] = 0;
	e->args[1] = 0;
	e->args[2] = 0;
	e->args[3] = 0;
	e->args[4] = 0;
	e->args[5] = 0;
	bt_commit(e, st, ring, BT_GROUP_UPROBE, BT_IRQS_ON);
	return 0;
}

/* One USDT argument as libbpf's bpf_usdt_arg() decodes it; 0 if unreadable. */
static __always_inline __u64 bt_usdt_arg(struct pt_regs *ctx, const struct __bpf_usdt_arg_spec *a)
{
	unsigned long val = 0;

	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		val = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		if (bpf_probe_read_kernel(&val, sizeof(val), (void *)ctx + a->reg_off))
			return 0;
		break;
	case BPF_USDT_ARG_REG_DEREF:
		if (bpf_probe_read_kernel(&val, sizeof(val), (void *)ctx + a->reg_off))
			return 0;
		if (bpf_probe_read_user(&val, sizeof(val), (void *)val + a->val_off))
			return 0;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		val >>= a->arg_bitshift;
#endif
		break;
	default:
		return 0;
	}
	val <<= a->arg_bitshift;
	if (a->arg_signed)
		val = ((long)val) >> a->arg_bitshift;
	else
		val = val >> a->arg_bitshift;
	return val;
}

SEC("usdt")
int bt_usdt(struct pt_regs *ctx)
{
	int spec_id = (int)bpf_get_attach_cookie(ctx); /* libbpf's spec id */
	struct __bpf_usdt_spec *spec;
	struct bt_cpu_state *st;
	struct bt_ev_uprobe *e;
	void *ring;
	__u64 cookie;
	__u32 n;

	if (bt_stopped)
		return 0;
	spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &spec_id);
	if (!spec)
		return 0;
	cookie = spec->usdt_cookie;
	n = bt_nargs(cookie);
	if (spec->arg_cnt >= 0 && (__u32)spec->arg_cnt < n)
		n = spec->arg_cnt;
	bt_probe_stack(ctx, BT_UC_ID(cookie));
	e = bt_begin(sizeof(*e), BT_GROUP_UPROBE, BT_EV_USDT, BT_IRQS_ON, &st, &ring);
	if (!e)
		return 0;
	e->probe_id = BT_UC_ID(cookie);
	e->nargs = n;
	e->duration_ns = 0;
	e->ret = 0;
#pragma unroll
	for (int i = 0; i < BT_MAX_UARGS; i++)
		e->args[i] = (__u32)i < n ? bt_usdt_arg(ctx, &spec->args[i]) : 0;
	bt_commit(e, st, ring, BT_GROUP_UPROBE, BT_IRQS_ON);
	return 0;
}

/* The floor of the benchmark (scripts/bench_uprobe.sh): the kernel's trap and
 * BPF dispatch with nothing done. Not loaded by the recorder (autoload off). */
SEC("uprobe")
int bt_uprobe_empty(struct pt_regs *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
