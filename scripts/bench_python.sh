#!/usr/bin/env bash
# bench_python.sh - the cost of CPython frames (bpf/python_frames.bpf.h), run
# by `make bench`: one CPU-bound Debian python3.11 per CPU
# (tests/workloads/py_chain.py: 5 Python frames deep, hot in a -> b -> hot)
# for SECS seconds while `record -e power --sample 49 --comm python3.11`
# runs (the python processes alone: on a shared machine the others' builds
# would weigh more than what is measured), with Python frames and with
# --no-python-frames, the two alternated REPS times in one run: the recorder's CPU (its threads' schedstat) plus the kernel's run
# time of handle_cpu_sample (kernel.bpf_stats_enabled; it includes the
# tail-called user half, where the Python walk runs), as % of one CPU, in
# the steady state from WARM_SECS after the workloads start; medians, and
# the ratio with/without of BPF ns per sample. The recorder's CPU in the
# warm-up (a new binary's symbols and tables, once per binary: ~0.2 s,
# begun some seconds after its first stack) is shown apart; WARM_SECS
# (default 25) leaves it out of the steady state.
#
# Usage: scripts/bench_python.sh [--quick] [--no-md]. Results on stdout, the
# table into BENCHMARKS.md between <!-- python:begin --> and
# <!-- python:end -->. Needs root and /usr/bin/python3.11. About 2 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BT=${BT:-$PWD/build/btrace-bpf} # BT=FILE: another build, side by side
PY=/usr/bin/python3.11
. scripts/bench_lib.sh
. scripts/bench_md.sh
bench_args "$@"
[ "$(id -u)" -eq 0 ] || { echo "bench_python: needs root" >&2; exit 1; }
[ -x "$BT" ] || { echo "bench_python: make tool first" >&2; exit 1; }
[ -x "$PY" ] || { echo "bench_python: no $PY: skipped"; exit 0; }
SECS=${SECS:-10}
REPS=${REPS:-3}
WARM_SECS=${WARM_SECS:-25}
HZ=${HZ:-49}
[ "$quick" -eq 1 ] && SECS=4 REPS=1 WARM_SECS=3
bench_workdir python
NCPU=$(nproc)

rec_start() { # ARGS...: a recorder, its running processes loaded; sets RPID
	: >"$TMP/rec.log"
	rm -f "$TMP/ctl.sock"
	"$BT" record --ctl "$TMP/ctl.sock" -o "$TMP/out" "$@" 2>"$TMP/rec.log" &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 200); do grep -q "recording (pid $RPID)" "$TMP/rec.log" && break; sleep 0.05; done
	for _ in $(seq 1200); do
		"$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | grep -q 'running processes loaded' && break
		sleep 0.1
	done
}
rec_stop() { kill -INT "$RPID"; wait "$RPID" 2>/dev/null; }
# NAME's run time and runs, over this recorder's programs only
prog_ns() { bpftool prog show -j 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); maps=set(int(x) for x in sys.argv[2:])
d=[p for p in d if p.get("name")==sys.argv[1] and maps & set(p.get("map_ids",[]))]
print(sum(p.get("run_time_ns",0) for p in d), sum(p.get("run_cnt",0) for p in d))' "$1" \
	$(grep -h '^map_id:' /proc/"${RPID:-0}"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); }

# one MODE (on|off) run: "total_pct recorder_pct bpf_pct samples ns_per_sample py_walks warm_pct"
run() {
	local mode=$1 args=() tw t0 t1 b0 c0 b1 c1 w=() walks
	[ "$mode" = off ] && args=(--no-python-frames)
	rec_start -e power --sample "$HZ" --comm python3.11 -m 16M --no-final-dump "${args[@]}"
	for _ in $(seq "$NCPU"); do
		"$PY" tests/workloads/py_chain.py $(((SECS + WARM_SECS + 2) * 1000)) >/dev/null 2>&1 &
		w+=($!)
		PIDS+=($!)
	done
	tw=$(bench_cpu_ns "$RPID")
	sleep "$WARM_SECS"
	read -r b0 c0 <<<"$(prog_ns handle_cpu_sample)"
	t0=$(bench_cpu_ns "$RPID")
	sleep "$SECS"
	read -r b1 c1 <<<"$(prog_ns handle_cpu_sample)"
	t1=$(bench_cpu_ns "$RPID")
	walks=$("$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | sed -n 's/^python frames: .*; \([0-9]*\) stacks with Python frames.*/\1/p')
	kill "${w[@]}" 2>/dev/null
	wait "${w[@]}" 2>/dev/null
	rec_stop
	awk -v t="$((t1 - t0))" -v b="$((b1 - b0))" -v c="$((c1 - c0))" -v s="$SECS" -v wk="${walks:-0}" \
		-v tw="$((t0 - tw))" -v ws="$WARM_SECS" 'BEGIN {
		r = t / 1e9 / s * 100; k = b / 1e9 / s * 100
		printf "%.3f %.3f %.3f %d %.0f %d %.3f\n", r + k, r, k, c, c ? b / c : 0, wk, tw / 1e9 / ws * 100 }'
}

STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 || echo "bench_python: cannot enable bpf stats: BPF time not counted" >&2
echo "bench_python: $NCPU CPUs, kernel $(uname -r), $NCPU python3.11 busy, ${HZ} Hz, ${SECS}s per run, $REPS pairs"
bench_pairs on off "total% recorder% bpf% samples ns/sample python-walks warm-up-recorder%"
for m in on off; do
	eval "T_$m=$(bench_col $m 1) R_$m=$(bench_col $m 2) K_$m=$(bench_col $m 3) N_$m=$(bench_col $m 4) NS_$m=$(bench_col $m 5) W_$m=$(bench_col $m 6) U_$m=$(bench_col $m 7)"
done
ratio=$(awk -v a="$NS_on" -v b="$NS_off" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
echo "with Python frames: ${T_on}% of a CPU (recorder ${R_on}%, BPF ${K_on}%), ${NS_on} ns per sample, ${W_on} stacks with Python frames"
echo "without (--no-python-frames): ${T_off}% of a CPU (recorder ${R_off}%, BPF ${K_off}%), ${NS_off} ns per sample, ${W_off} stacks with Python frames"
echo "BPF ns per sample, with / without: $ratio"
awk -v t="$T_on" 'BEGIN { exit !(t <= 1.0) }' && echo "PASS ${HZ} Hz with Python frames <= 1% of a CPU: ${T_on}%" ||
	echo "FAIL ${HZ} Hz with Python frames > 1% of a CPU: ${T_on}%"

if [ "$write_md" -eq 1 ]; then
	{
		echo "<!-- python:begin -->"
		echo "## Python frames: cost at ${HZ} Hz (scripts/bench_python.sh)"
		echo
		echo "Kernel $(uname -r), $NCPU CPUs, commit $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d'), load average $(cut -d' ' -f1 /proc/loadavg)."
		echo "Command: \`sudo scripts/bench_python.sh\` (part of \`make bench\`): $NCPU busy python3.11"
		echo "(py_chain.py, 5 Python frames deep), \`record -e power --sample $HZ --comm python3.11\` with Python frames and with"
		echo "\`--no-python-frames\`, alternated $REPS times in one run, ${SECS}s each from ${WARM_SECS}s after the"
		echo "workloads start; medians. BPF: handle_cpu_sample's run time (with its tail-called user half)."
		echo
		echo "| | with Python frames | --no-python-frames | with / without |"
		echo "|---|---|---|---|"
		echo "| % of one CPU (recorder + BPF) | ${T_on}% (${R_on}% + ${K_on}%) | ${T_off}% (${R_off}% + ${K_off}%) | target <= 1% |"
		echo "| BPF ns per sample | ${NS_on} | ${NS_off} | ${ratio} |"
		echo "| samples in ${SECS}s; stacks with Python frames | ${N_on}; ${W_on} | ${N_off}; ${W_off} | |"
		echo "| recorder in the first ${WARM_SECS}s (symbols, tables: once per binary) | ${U_on}% | ${U_off}% | |"
		echo
		echo "The Python walk is the difference between the columns; the recorder's own share (its drain"
		echo "and timers, at this rate and load) is in both."
		echo "<!-- python:end -->"
	} >"$TMP/sect"
	bench_md_put python "$TMP/sect"
fi
