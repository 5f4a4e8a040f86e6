#!/usr/bin/env bash
# bench_idle.sh - what the default recorder costs on an idle machine (issue
# 40: under 0.5% of one CPU), run by `make bench`: `record` with no option
# but its output directory and control socket (the events, sampling, buffer
# and cold tier `make run` uses), from WARM_SECS after it started (its
# one-time work: kallsyms, the running processes' tables) for SECS seconds:
# its threads' CPU (schedstat) plus the kernel's run time of every BPF
# program it loaded (kernel.bpf_stats_enabled), as % of one CPU; the same
# with `--cold-tier off` beside it, the two alternated REPS times in one
# run; medians, and each thread's share in the last run with the tier.
#
# Usage: scripts/bench_idle.sh [--quick] [--no-md]. Results on stdout, the
# table into BENCHMARKS.md between <!-- idle:begin --> and <!-- idle:end -->.
# Needs root and a quiet machine (what else runs is what the recorder
# records). About 3 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BT=${BT:-$PWD/build/btrace-bpf} # BT=FILE: another build, side by side
. scripts/bench_lib.sh
. scripts/bench_md.sh
bench_args "$@"
[ "$(id -u)" -eq 0 ] || { echo "bench_idle: needs root" >&2; exit 1; }
[ -x "$BT" ] || { echo "bench_idle: make tool first" >&2; exit 1; }
SECS=${SECS:-20}
REPS=${REPS:-3}
WARM_SECS=${WARM_SECS:-10}
[ "$quick" -eq 1 ] && SECS=5 REPS=1 WARM_SECS=3
bench_workdir idle

rec_start() { # ARGS...: a recorder; sets RPID
	: >"$TMP/rec.log"
	rm -rf "$TMP/ctl.sock" "$TMP/out"
	"$BT" record --ctl "$TMP/ctl.sock" -o "$TMP/out" --no-final-dump "$@" 2>"$TMP/rec.log" &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 200); do grep -q "recording (pid $RPID)" "$TMP/rec.log" && break; sleep 0.05; done
}
rec_stop() { kill -INT "$RPID"; wait "$RPID" 2>/dev/null; }
# run time of every program this recorder holds, ns: the fdinfo of its
# program descriptors (one per program id; links name theirs without a
# time). No bpftool or python3 here: a process started at the window's
# edge is work the recorder does in the window (its samples, its files'
# symbols: 26 ms for a python3 run).
bpf_ns() { awk '/^prog_id:/ { id = $2 } /^run_time_ns:/ { t[id] = $2 }
	END { for (i in t) s += t[i]; printf "%.0f\n", s }' /proc/"${RPID:-0}"/fdinfo/* 2>/dev/null; }
# each thread's CPU, "name ns" per line
threads_ns() { for t in /proc/"$RPID"/task/*; do echo "$(cat "$t/comm" 2>/dev/null) $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)"; done; }

# one MODE (tier|notier) run: "total_pct recorder_pct bpf_pct"
run() {
	local args=() t0 t1 b0 b1
	[ "$1" = notier ] && args=(--cold-tier off)
	rec_start "${args[@]}"
	sleep "$WARM_SECS"
	b0=$(bpf_ns)
	t0=$(bench_cpu_ns "$RPID")
	threads_ns >"$TMP/thr0"
	sleep "$SECS"
	b1=$(bpf_ns)
	t1=$(bench_cpu_ns "$RPID")
	threads_ns >"$TMP/thr1"
	rec_stop
	[ "$1" = tier ] && awk -v s="$SECS" 'NR == FNR { a[$1] += $2; next } { b[$1] += $2 }
		END { for (n in b) printf "%s %.3f\n", n, (b[n] - a[n]) / 1e9 / s * 100 }' "$TMP/thr0" "$TMP/thr1" |
		sort -k2 -rn >"$TMP/threads"
	awk -v t="$((t1 - t0))" -v b="$((b1 - b0))" -v s="$SECS" 'BEGIN {
		r = t / 1e9 / s * 100; k = b / 1e9 / s * 100
		printf "%.3f %.3f %.3f\n", r + k, r, k }'
}

STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 || echo "bench_idle: cannot enable bpf stats: BPF time not counted" >&2
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
echo "bench_idle: $(nproc) CPUs, kernel $(uname -r), the default recorder, ${SECS}s per run from ${WARM_SECS}s after its start, $REPS pairs, load $LOAD0"
bench_pairs tier notier "total% recorder% bpf%"
for m in tier notier; do
	eval "T_$m=$(bench_col $m 1) R_$m=$(bench_col $m 2) K_$m=$(bench_col $m 3)"
done
THR=$(awk '$2 >= 0.001 { printf "%s%s %.3f%%", sep, $1, $2; sep = ", " }' "$TMP/threads")
echo "default (cold tier on): ${T_tier}% of a CPU (recorder ${R_tier}%, BPF ${K_tier}%); its threads: $THR"
echo "--cold-tier off: ${T_notier}% of a CPU (recorder ${R_notier}%, BPF ${K_notier}%)"
awk -v t="$T_tier" 'BEGIN { exit !(t < 0.5) }' && echo "PASS idle default recorder < 0.5% of a CPU: ${T_tier}%" ||
	echo "FAIL idle default recorder >= 0.5% of a CPU: ${T_tier}%"

if [ "$write_md" -eq 1 ]; then
	{
		echo "<!-- idle:begin -->"
		echo "## The default recorder on an idle machine (scripts/bench_idle.sh)"
		echo
		echo "Kernel $(uname -r), $(nproc) CPUs, commit $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d'), load average $LOAD0 before."
		echo "Command: \`sudo scripts/bench_idle.sh\` (part of \`make bench\`): \`record\` with its defaults (events"
		echo "sched, irq, power; 49 Hz samples with stacks; 64 MiB; the cold tier within 0.5% of a CPU) and with"
		echo "\`--cold-tier off\`, alternated $REPS times in one run, ${SECS}s each from ${WARM_SECS}s after the start; medians."
		echo "BPF: the run time of every program the recorder loaded."
		echo
		echo "| | default | --cold-tier off |"
		echo "|---|---|---|"
		echo "| % of one CPU (recorder + BPF) | ${T_tier}% (${R_tier}% + ${K_tier}%) | ${T_notier}% (${R_notier}% + ${K_notier}%) |"
		echo
		echo "Target: the default under 0.5% of one CPU. Its threads in the last run: $THR."
		echo "<!-- idle:end -->"
	} >"$TMP/sect"
	bench_md_put idle "$TMP/sect"
fi
