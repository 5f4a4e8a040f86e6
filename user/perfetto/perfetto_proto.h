/* SPDX-License-Identifier: MIT */
/*
 * perfetto_proto.h - the field numbers of the Perfetto trace protobuf subset
 * the exporter writes (from protos/perfetto/trace/perfetto_trace.proto;
 * tests/perfetto/perfetto_subset.proto declares the same subset and the unit
 * test decodes our output with it). Numbers only: one place to check them
 * against the proto, apart from the code that writes the messages.
 */
#ifndef BTRACE_PERFETTO_PROTO_H
#define BTRACE_PERFETTO_PROTO_H

/* Trace */
#define TRACE_PACKET 1
/* TracePacket */
#define TP_FTRACE_EVENTS 1
#define TP_PROCESS_TREE 2
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP 8
#define TP_TRUSTED_PACKET_SEQUENCE_ID 10
#define TP_TRACK_EVENT 11
#define TP_SEQUENCE_FLAGS 13
#define TP_FTRACE_STATS 34
#define TP_SYSTEM_INFO 45
#define TP_TRACK_DESCRIPTOR 60
#define TP_INTERNED_DATA 12
#define TP_PERF_SAMPLE 66
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
/* PerfSample */
#define PS_CPU 1
#define PS_PID 2
#define PS_TID 3
#define PS_CALLSTACK_IID 4
/* ClockSnapshot */
#define CS_CLOCKS 1
#define CS_PRIMARY_TRACE_CLOCK 2
#define CLK_CLOCK_ID 1
#define CLK_TIMESTAMP 2
#define BUILTIN_CLOCK_REALTIME 1
#define BUILTIN_CLOCK_BOOTTIME 6
/* SystemInfo, Utsname */
#define SI_UTSNAME 1
#define SI_NUM_CPUS 8
#define UTS_SYSNAME 1
#define UTS_RELEASE 3
#define UTS_MACHINE 4
/* ProcessTree */
#define PT_PROCESSES 1
#define PT_THREADS 2
#define PT_PROC_PID 1
#define PT_PROC_PPID 2
#define PT_PROC_CMDLINE 3
#define PT_PROC_CMDLINE_IS_COMM 9
#define PT_THREAD_TID 1
#define PT_THREAD_NAME 2
#define PT_THREAD_TGID 3
/* FtraceStats, FtraceCpuStats */
#define FS_PHASE 1
#define FS_CPU_STATS 2
#define FS_START_OF_TRACE 1
#define FS_END_OF_TRACE 2
#define FCS_CPU 1
#define FCS_ENTRIES 2
#define FCS_DROPPED_EVENTS 8
#define FCS_READ_EVENTS 9
/* FtraceEventBundle */
#define FB_CPU 1
#define FB_EVENT 2
#define FB_LOST_EVENTS 3
#define FB_COMPACT_SCHED 4
/* FtraceEventBundle.CompactSched */
#define CSCH_SWITCH_TIMESTAMP 1
#define CSCH_SWITCH_PREV_STATE 2
#define CSCH_SWITCH_NEXT_PID 3
#define CSCH_SWITCH_NEXT_PRIO 4
#define CSCH_INTERN_TABLE 5
#define CSCH_SWITCH_NEXT_COMM_INDEX 6
/* FtraceEvent */
#define FE_TIMESTAMP 1
#define FE_PID 2
#define FE_SCHED_SWITCH 4
#define FE_CPU_FREQUENCY 11
#define FE_CPU_IDLE 13
#define FE_SCHED_WAKEUP 17
#define FE_SCHED_WAKING 20
#define FE_SOFTIRQ_ENTRY 24
#define FE_SOFTIRQ_EXIT 25
#define FE_IRQ_HANDLER_ENTRY 36
#define FE_IRQ_HANDLER_EXIT 37
#define FE_SCHED_WAKEUP_NEW 114
#define FE_TASK_RENAME 236
#define FE_SCHED_PROCESS_EXEC 237
#define FE_SCHED_PROCESS_EXIT 238
#define FE_SCHED_PROCESS_FORK 239
#define FE_SYS_ENTER 329
#define FE_SYS_EXIT 330
#define FE_SCHED_MIGRATE_TASK 491
/* SchedSwitchFtraceEvent */
#define SW_PREV_COMM 1
#define SW_PREV_PID 2
#define SW_PREV_PRIO 3
#define SW_PREV_STATE 4
#define SW_NEXT_COMM 5
#define SW_NEXT_PID 6
#define SW_NEXT_PRIO 7
/* SchedWakeup/SchedWaking/SchedWakeupNew FtraceEvent */
#define WK_COMM 1
#define WK_PID 2
#define WK_PRIO 3
#define WK_TARGET_CPU 5
/* SchedMigrateTaskFtraceEvent */
#define MG_COMM 1
#define MG_PID 2
#define MG_ORIG_CPU 4
#define MG_DEST_CPU 5
/* SchedProcessForkFtraceEvent */
#define FK_PARENT_COMM 1
#define FK_PARENT_PID 2
#define FK_CHILD_COMM 3
#define FK_CHILD_PID 4
/* SchedProcessExecFtraceEvent */
#define EX_FILENAME 1
#define EX_PID 2
#define EX_OLD_PID 3
/* SchedProcessExitFtraceEvent */
#define XT_COMM 1
#define XT_PID 2
#define XT_TGID 3
/* TaskRenameFtraceEvent */
#define RN_PID 1
#define RN_OLDCOMM 2
#define RN_NEWCOMM 3
/* IrqHandlerEntry/Exit, SoftirqEntry/Exit */
#define IRQ_IRQ 1
#define IRQ_NAME 2
#define IRQ_RET 2
#define SIRQ_VEC 1
/* CpuFrequency, CpuIdle */
#define PW_STATE 1
#define PW_CPU_ID 2
/* SysEnter, SysExit */
#define SYS_ID 1
#define SYS_RET 2
/* TrackDescriptor, ThreadDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_PROCESS 3
#define TD_THREAD 4
#define TD_PARENT_UUID 5
#define TD_COUNTER 8
#define THD_PID 1
#define THD_TID 2
#define THD_THREAD_NAME 5
/* ProcessDescriptor */
#define PRD_PID 1
#define PRD_PROCESS_NAME 6
/* TrackEvent */
#define TE_CATEGORY_IIDS 3
#define TE_DEBUG_ANNOTATIONS 4
#define TE_NAME_IID 10
#define TE_CALLSTACK_IID 56
#define TE_TYPE 9
#define TE_TRACK_UUID 11
#define TE_CATEGORIES 22
#define TE_NAME 23
#define TE_COUNTER_VALUE 30
#define TE_TYPE_SLICE_BEGIN 1
#define TE_TYPE_SLICE_END 2
#define TE_TYPE_INSTANT 3
#define TE_TYPE_COUNTER 4
/* DebugAnnotation */
#define DA_BOOL_VALUE 2
#define DA_UINT_VALUE 3
#define DA_INT_VALUE 4
#define DA_STRING_VALUE 6
#define DA_POINTER_VALUE 7
#define DA_NAME 10
#define DA_NAME_IID 1
/* InternedData: categories, event names, debug annotation names (EventCategory,
 * EventName, DebugAnnotationName: iid 1, name 2) */
#define ID_EVENT_CATEGORIES 1
#define ID_EVENT_NAMES 2
#define ID_DEBUG_ANNOTATION_NAMES 3
#define IN_IID 1
#define IN_NAME 2

#endif
