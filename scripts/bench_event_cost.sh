#!/usr/bin/env bash
# bench_event_cost.sh - where the CPU per traced call goes, side by side in
# one run: no tracer, btrace-bpf without and with the cold tier (lz4, zstd).
#
# Workload: bench/cmp_load (the bench-compare workload: paced getpid() and
# getppid() calls, skewed: CPU 0 makes RATE calls/s), record -e sched,syscalls.
# Per call of the workload, in ns:
#   workload  the workload's own CPU above the no-tracer run: the
#             tracepoints and the BPF programs run inside its system calls
#   bpf       of which the programs' own run time (BPF run-time statistics,
#             enabled through a file descriptor: bench/bpf_stats_on.c)
#   drain     the drain thread (BPF rings -> compaction -> block buffer)
#   cold      the cold tier's compressor thread
#   other     the recorder's other threads (main, dump, ...)
#   total     workload + drain + cold + other: the extra CPU per call
#   ftrace    (CONFIGS=... ftrace) the same events in a tracefs instance of
#             the same memory: all of its cost is in the workload's column
# Medians over REPS rotated repetitions. Usage: sudo scripts/bench_event_cost.sh
# Env: REPS (3), SECS (4), RATE (250000), BUDGET (8M), RING (1M), SETTLE
#   (3 s between the recorder's start and the workload's: its start-up apart),
#   CONFIGS ("none off lz4 zstd"; also "default", "ftrace").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/bench_lib.sh
REPS=${REPS:-3} SECS=${SECS:-4} SETTLE=${SETTLE:-3} RATE=${RATE:-250000} BUDGET=${BUDGET:-8M} RING=${RING:-1M}
BT=build/btrace-bpf LOAD=build/bench/cmp_load STATS=build/bench/bpf_stats_on
for b in "$BT" "$LOAD" "$STATS"; do [ -x "$b" ] || { echo "bench_event_cost: $b missing (make benches)" >&2; exit 1; }; done
[ "$(id -u)" -eq 0 ] || { echo "bench_event_cost: needs root" >&2; exit 1; }
# The statistics stay on while bpf_stats_on runs us (each program run then
# pays two clock reads, ~20-30 ns, in every configuration alike).
[ -n "${BT_STATS_ON:-}" ] || BT_STATS_ON=1 exec "$STATS" "$0" "$@"
TMP=$(mktemp -d /tmp/bt-cost.XXXXXX)
REC=''
trap '[ -n "$REC" ] && kill -INT "$REC" 2>/dev/null; wait 2>/dev/null; ft_stop; rm -rf "$TMP"' EXIT

# ftrace at the same events and memory (a tracefs instance, overwrite mode,
# boot clock), the in-kernel peer of the costs above
TRACEFS=/sys/kernel/tracing
[ -d "$TRACEFS/instances" ] || TRACEFS=/sys/kernel/debug/tracing
INST=$TRACEFS/instances/btrace_cost_$$
FT_EVENTS=(sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task
	sched/sched_process_fork sched/sched_process_exec sched/sched_process_exit task/task_rename
	raw_syscalls/sys_enter raw_syscalls/sys_exit)
ft_start()
{
	local kb e
	kb=$(numfmt --from=iec "$BUDGET")
	mkdir "$INST" || exit 1
	echo boot >"$INST/trace_clock"
	echo 1 >"$INST/options/overwrite"
	echo $((kb / 1024 / $(nproc))) >"$INST/buffer_size_kb"
	for e in "${FT_EVENTS[@]}"; do echo 1 >"$INST/events/$e/enable" || exit 1; done
	echo 1 >"$INST/tracing_on"
}
ft_stop()
{
	[ -d "$INST" ] || return 0
	echo 0 >"$INST/tracing_on"
	echo >"$INST/set_event"
	rmdir "$INST"
}

# thread_ns PID [NAME]: CPU ns of the process's threads named NAME (all:
# no NAME)
thread_ns()
{
	bench_threads_ns "$1" | awk -v n="${2:-}" 'n == "" || $1 == n { s += $2 } END { printf "%.0f\n", s }'
}

# prog_ns PID: total run_time_ns of the process's BPF programs
prog_ns()
{
	local pid=$1 f sum=0 v
	for f in /proc/"$pid"/fdinfo/*; do
		v=$(awk '/^run_time_ns:/ { print $2 }' "$f" 2>/dev/null)
		[ -n "$v" ] && sum=$((sum + v))
	done
	echo "$sum"
}

# one CONFIG: prints "CONFIG calls wl_ns bpf_ns drain_ns cold_ns other_ns"
one()
{
	local cfg=$1 args=() out calls wl d0 d1 c0 c1 a0 a1 b0 b1 log=$TMP/rec.log
	case "$cfg" in
	none) ;;
	default) ;;
	off) args=(--cold-tier off) ;;
	lz4) args=(--cold-tier 75 --cold-codec lz4) ;;
	zstd) args=(--cold-tier 75 --cold-codec zstd:-1) ;;
	esac
	if [ "$cfg" = ftrace ]; then
		ft_start
	elif [ "$cfg" != none ]; then
		rm -rf "$TMP/d"
		"$BT" record -e sched,syscalls -m "$BUDGET" --ring-size "$RING" -z 0 --no-final-dump --no-ctl \
			-o "$TMP/d" "${args[@]}" >"$log" 2>&1 &
		REC=$!
		for _ in $(seq 300); do grep -q 'recording (pid' "$log" && break; sleep 0.1; done
		sleep "$SETTLE"
		d0=$(thread_ns "$REC" btrace-drain) c0=$(thread_ns "$REC" btrace-cold)
		a0=$(thread_ns "$REC") b0=$(prog_ns "$REC")
	fi
	out=$("$LOAD" -m skewed -d "$SECS" -r "$RATE" -o "$TMP/truth")
	calls=$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$out")
	wl=$(sed -n 's/.* cpu_us=\([0-9]*\).*/\1/p' <<<"$out")
	if [ "$cfg" = none ]; then
		echo "$cfg $calls $((wl * 1000)) 0 0 0 0"
		return
	fi
	if [ "$cfg" = ftrace ]; then
		ft_stop
		echo "$cfg $calls $((wl * 1000)) 0 0 0 0"
		return
	fi
	d1=$(thread_ns "$REC" btrace-drain) c1=$(thread_ns "$REC" btrace-cold)
	a1=$(thread_ns "$REC") b1=$(prog_ns "$REC")
	kill -INT "$REC"; wait "$REC" 2>/dev/null; REC=''
	local all=$((a1 - a0))
	echo "$cfg $calls $((wl * 1000)) $((b1 - b0)) $((d1 - d0)) $((c1 - c0)) $((all - (d1 - d0) - (c1 - c0)))"
}

read -r -a CONFIGS <<<"${CONFIGS:-none off lz4 zstd}"
echo "bench_event_cost: $REPS reps x ${CONFIGS[*]}, ${SECS}s at $RATE calls/s (skewed), budget $BUDGET"
for ((rep = 0; rep < REPS; rep++)); do
	for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
		one "${CONFIGS[(i + rep) % ${#CONFIGS[@]}]}" >>"$TMP/res" || exit 1
	done
done
python3 - "$TMP/res" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r[0], []).append([float(x) for x in r[1:]])
def med(cfg, k):
    return statistics.median(v[k] for v in by[cfg])
base = statistics.median(v[1] / v[0] for v in by["none"])
print("| config | calls/run | workload +ns/call | of which BPF | drain | cold tier | other | total extra ns/call |")
print("|---|--:|--:|--:|--:|--:|--:|--:|")
names = {"default": "btrace-bpf (as shipped: tier on, within its budget)",
         "off": "btrace-bpf --cold-tier off", "lz4": "btrace-bpf --cold-tier 75 (lz4)",
         "zstd": "btrace-bpf --cold-tier 75 --cold-codec zstd:-1", "ftrace": "ftrace (same events and memory)"}
for cfg in [c for c in names if c in by]:
    per = lambda k: statistics.median(v[k] / v[0] for v in by[cfg])
    wl = statistics.median(v[1] / v[0] for v in by[cfg]) - base
    bpf, dr, co, ot = per(2), per(3), per(4), per(5)
    print(f"| {names[cfg]} | {med(cfg, 0):.0f} | {wl:.1f} | {bpf:.1f} | {dr:.1f} | {co:.1f} | {ot:.1f} | {wl + dr + co + ot:.1f} |")
EOF
