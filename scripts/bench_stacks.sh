#!/usr/bin/env bash
# bench_stacks.sh - call stacks (record --sample / --stacks), run by `make bench`:
#
#   sampling  CPU cost of sampling: two CPU-bound stack_workload_nofp processes
#             (no frame pointers, ~8-frame stacks) for SECS seconds while
#             `record -e power --sample HZ` runs, at the default 49 Hz and at
#             999 Hz: the recorder's CPU time (its threads' schedstat) plus the
#             kernel's run time of handle_cpu_sample (kernel.bpf_stats_enabled),
#             as % of one CPU, in the steady state from WARM_SECS after the
#             workloads start (the one-time symbol loads before it are
#             reported apart). Beside it, at 999 Hz, the slowdown of a fixed
#             CPU-bound job (sha256 of 1 GiB per CPU) under btrace-bpf and
#             under `perf record -F 999 -g -a`, interleaved with no tracing.
#             The BPF share includes the unwinder's mmap and exec hooks;
#             apart: mmap+munmap loops (bench/mmap_loop: executable file
#             pages, the hook's full path, and anonymous ones) and
#             fork+exec of /bin/true, with a recorder at 49 Hz and without.
#   bytes     bytes per stored sample: buffer bytes written / events (nearly
#             all samples) of a dump at 999 Hz, then with the stack table
#             amortized: after SECS (a window that has not wrapped yet), and
#             over a whole 4 MiB window (a flight recorder's steady state:
#             BYTES_FULL_SECS, 80 s, fills it); perf's perf.data bytes / samples at
#             the same rate.
#   offcpu    `perf bench sched pipe` (pinned to CPU 0) under `record -e sched
#             --sample 0` (the floor of the recorder) and with --stacks switch,
#             --stacks switch,wakeup: per-wakeup cost.
#   unwind    complete-stack share on packaged programs without frame pointers
#             (python3.11 loop, perl regex, sqlite3 recursive query): the
#             share of samples whose user stack reaches __libc_start_call_main,
#             btrace-bpf (unwind tables) vs perf -g vs perf --call-graph dwarf,
#             all three on the same process at once; the unwind-table memory
#             for every binary of every process running (ctl status).
#             Off-CPU: --stacks switch with tables vs --unwind-mem 0 (the
#             kernel's frame-pointer walk) on perf bench sched pipe.
#   reclaim   the stack table following the window (stack_table.h): the
#             drain's work per event and the table's memory with reclamation
#             off, on, and off with a table of every stack of the run
#             (bench/stack_reclaim, interleaved, medians); then a recorder
#             under process churn (stack_churn, --max-stacks 256) for SECS:
#             its CPU, peak RSS, stacks reclaimed and lost.
#   symbolize time to write a dump holding ~100k samples (10 kHz for 5 s on
#             every CPU; its stack table symbolized then, with source lines
#             from DWARF, then the same with --no-source-lines) and to read
#             it back with `report --profile`.
#
# Usage: scripts/bench_stacks.sh [--quick] [--no-md]. Results on stdout, the
# table into BENCHMARKS.md between <!-- stacks:begin --> and <!-- stacks:end -->.
# Needs root and perf (scripts/install-deps.sh --bench). About 2 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BT=$PWD/build/btrace-bpf
WL=$PWD/build/tests/stack_workload_nofp # no frame pointers: the unwinder walks
. scripts/bench_lib.sh
. scripts/bench_md.sh
bench_args "$@"
[ "$(id -u)" -eq 0 ] || { echo "bench_stacks: needs root" >&2; exit 1; }
[ -x "$BT" ] && [ -x "$WL" ] || { echo "bench_stacks: make tool tests first" >&2; exit 1; }
have_perf=0
perf --version >/dev/null 2>&1 && have_perf=1
SECS=${SECS:-10}
REPS=${REPS:-3}
PIPE_LOOPS=${PIPE_LOOPS:-100000}
[ "$quick" -eq 1 ] && SECS=3 REPS=1 PIPE_LOOPS=30000
bench_workdir stacks
NCPU=$(nproc)
TCK=$(getconf CLK_TCK)
MD=$TMP/md
: >"$MD"
md() { printf '%s\n' "$*" >>"$MD"; }

# rec_start ARGS...: a recorder in the background; sets RPID
# Measurements start once the unwinder has loaded the tables of every
# running process (a start-up cost, measured apart: LOAD_S, LOAD_CPU_S).
rec_start() {
	local t0 ok=0
	: >"$TMP/rec.log"
	rm -f "$TMP/ctl.sock"
	t0=$(date +%s%N)
	"$BT" record --ctl "$TMP/ctl.sock" -o "$TMP/out" --unwind-cache "$TMP/uwcache" "$@" 2>"$TMP/rec.log" &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 200); do grep -q "recording (pid $RPID)" "$TMP/rec.log" && { ok=1; break; }; sleep 0.05; done
	if [ "$ok" = 0 ]; then
		echo "bench_stacks: recorder did not start: $(cat "$TMP/rec.log")" >&2
		exit 1
	fi
	for _ in $(seq 1200); do
		"$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | grep -q '^unwinding:.*loading the running' || break
		sleep 0.1
	done
	if [ -z "${LOAD_S:-}" ] && "$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | grep -q '^unwinding:'; then
		LOAD_S=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
		LOAD_CPU_S=$(awk -v t="$(cpu_ticks "$RPID")" -v tck="$TCK" 'BEGIN { printf "%.1f", t / tck }')
		echo "unwinder start-up: the running processes' tables loaded in ${LOAD_S}s (${LOAD_CPU_S}s of recorder CPU), recording meanwhile" >&2
	fi
	# the unwinder's own time, first with an empty table cache, then warm
	local u
	u=$("$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | sed -n 's/^unwinding:.*loaded in \([0-9.]*\) s (\([0-9.]*\) s of it.*/\1 \2/p')
	if [ -n "$u" ] && [ -z "${UNW_COLD:-}" ]; then UNW_COLD=$u
	elif [ -n "$u" ] && [ -z "${UNW_WARM:-}" ]; then UNW_WARM=$u; fi
}
rec_stop() { kill -INT "$RPID"; wait "$RPID" 2>/dev/null; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# The recorder's CPU time in ns, summed over its threads' schedstat: exact run
# time, where ticks (10 ms) charge a whole tick to a thread that wakes on the
# timer (the drain every 20 ms), which made the 49 Hz figure swing 0.5-1.5%.
# NAME's run time and runs, over this recorder's programs only (those
# using a map RPID holds): the machine may run other recorders, whose
# programs have the same names
prog_ns() { bpftool prog show -j 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); maps=set(int(x) for x in sys.argv[2:])
d=[p for p in d if p.get("name")==sys.argv[1] and maps & set(p.get("map_ids",[]))]
print(sum(p.get("run_time_ns",0) for p in d), sum(p.get("run_cnt",0) for p in d))' "$1" \
	$(grep -h '^map_id:' /proc/"${RPID:-0}"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u); }
# the unwinder's mmap and exec hooks (bpf/unwind_walk.bpf.h): run time, runs
hooks_ns() {
	local a b t=0 c=0
	for p in handle_unwind_mmap handle_unwind_exec handle_unwind_exec_maps; do
		read -r a b <<<"$(prog_ns "$p")"
		t=$((t + ${a:-0})) c=$((c + ${b:-0}))
	done
	echo "$t $c"
}
busy() { # N processes of the workload for SECS; their pids in BUSY
	BUSY=()
	for _ in $(seq "$NCPU"); do
		echo go | "$WL" "$SECS" 0 1 >/dev/null 2>&1 &
		BUSY+=($!)
	done
}
busy_wait() { wait "${BUSY[@]}" 2>/dev/null; }

STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
sysctl -qw kernel.bpf_stats_enabled=1 || echo "bench_stacks: cannot enable bpf stats: BPF time not counted" >&2
echo "bench_stacks: $NCPU CPUs, kernel $(uname -r), ${SECS}s per run"
md "Kernel $(uname -r), $NCPU CPUs, commit $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d')."
md "Command: \`sudo scripts/bench_stacks.sh\` (part of \`make bench\`)."
md "Load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: other engineers' builds and qemu runs; ratios are side by side in this one run)."
md ""

# ---- sampling cost ----------------------------------------------------------------
# Steady state: the window starts WARM_SECS after the workloads, once the
# recorder's one-time work on them is done (symbol files of the machine's and
# the workload's binaries, kernel symbols: loaded once per binary, not per
# sample); that work is reported apart, as the recorder's CPU in those seconds.
WARM_SECS=${WARM_SECS:-3}
sampling_cost() { # HZ -> "pct recorder_pct bpf_pct samples ns_per_sample warmup_pct"
	local hz=$1 t0 t1 b0 c0 b1 c1 h0 h1 tw secs_was=$SECS
	rec_start -e power --sample "$hz" --unwind-mem 64M -m 16M --no-final-dump
	tw=$(bench_cpu_ns "$RPID")
	SECS=$((secs_was + WARM_SECS))
	busy
	SECS=$secs_was
	sleep "$WARM_SECS"
	read -r b0 c0 <<<"$(prog_ns handle_cpu_sample)"
	read -r h0 _ <<<"$(hooks_ns)"
	t0=$(bench_cpu_ns "$RPID")
	sleep "$SECS"
	read -r b1 c1 <<<"$(prog_ns handle_cpu_sample)"
	read -r h1 _ <<<"$(hooks_ns)"
	t1=$(bench_cpu_ns "$RPID")
	busy_wait
	rec_stop
	# BPF: the sample program and the unwinder's mmap/exec hooks (the
	# machine's other processes map and exec meanwhile: they count too)
	awk -v t="$((t1 - t0))" -v b="$((b1 - b0))" -v c="$((c1 - c0))" -v s="$SECS" -v h="$((h1 - h0))" \
		-v w="$((t0 - tw))" -v ws="$WARM_SECS" 'BEGIN {
		r = t / 1e9 / s * 100; k = (b + h) / 1e9 / s * 100
		printf "%.3f %.3f %.3f %d %.0f %.1f\n", r + k, r, k, c, c ? b / c : 0, w / 1e9 / ws * 100 }'
}
for hz in 49 999; do
	read -r tot rp kp ns nps wp <<<"$(sampling_cost $hz)"
	echo "sampling $hz Hz: ${tot}% of a CPU (recorder ${rp}%, BPF ${kp}%), $ns samples, ${nps} ns per sample in BPF; the first ${WARM_SECS}s, recorder ${wp}%"
	eval "S_$hz=\"$tot $rp $kp $ns $nps $wp\""
done
read -r tot49 _ <<<"$S_49"

# the unwinder's hooks on a loop of mmaps (executable: a code mapping
# recorded; anonymous: the early exit) and of execs, without and with a
# recorder at 49 Hz, interleaved, the fastest of REPS; the hooks' own run
# time per call from bpf_stats
ML=$PWD/build/bench/mmap_loop
MMAP_N=${MMAP_N:-200000}
EXEC_N=${EXEC_N:-300}
[ "$quick" -eq 1 ] && MMAP_N=50000 EXEC_N=100
execs() { # ns per fork+exec of /bin/true
	local t0 t1
	t0=$(date +%s%N)
	for _ in $(seq "$EXEC_N"); do /bin/true; done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / EXEC_N))
}
declare -A HK
if [ -x "$ML" ]; then
	for _ in $(seq "$REPS"); do
		for mode in exec anon; do HK[none_$mode]+="$("$ML" $mode "$MMAP_N" /bin/true | awk '{ print $5 }') "; done
		HK[none_fork]+="$(execs) "
		rec_start -e power --sample 49 --unwind-mem 64M -m 16M --no-final-dump
		read -r m0 n0 <<<"$(prog_ns handle_unwind_mmap)"
		for mode in exec anon; do HK[rec_$mode]+="$("$ML" $mode "$MMAP_N" /bin/true | awk '{ print $5 }') "; done
		read -r m1 n1 <<<"$(prog_ns handle_unwind_mmap)"
		read -r e0 f0 <<<"$(hooks_ns)"
		HK[rec_fork]+="$(execs) "
		read -r e1 f1 <<<"$(hooks_ns)"
		rec_stop
		HK[mmap_bpf]+="$(((m1 - m0) / ((n1 - n0) ? (n1 - n0) : 1))) "
		# per exec: the exec programs plus the mmaps ld.so makes for it
		HK[exec_bpf]+="$(((e1 - e0) / EXEC_N)) "
	done
	for k in none_exec none_anon none_fork rec_exec rec_anon rec_fork mmap_bpf exec_bpf; do
		eval "HK_$k=$(echo "${HK[$k]}" | tr ' ' '\n' | grep . | sort -n | head -1)"
	done
	echo "hooks: mmap+munmap exec ${HK_none_exec} -> ${HK_rec_exec} ns, anon ${HK_none_anon} -> ${HK_rec_anon} ns (mmap hook ${HK_mmap_bpf} ns a run); fork+exec ${HK_none_fork} -> ${HK_rec_fork} ns (hooks ${HK_exec_bpf} ns an exec)"
fi
awk -v t="$tot49" 'BEGIN { exit !(t <= 1.0) }' && echo "PASS default sampling (49 Hz) <= 1% of a CPU: ${tot49}%" ||
	echo "FAIL default sampling (49 Hz) > 1% of a CPU: ${tot49}%"

[ -n "${ONLY_COST:-}" ] && exit 0 # the sampling cost and the hooks only (no BENCHMARKS.md)

# slowdown of a fixed job: none / btrace 999 / perf 999, interleaved
job() { # seconds for sha256 of 1 GiB on every CPU
	local t0 t1
	t0=$(date +%s%N)
	local js=()
	for _ in $(seq "$NCPU"); do
		head -c 1G /dev/zero | sha256sum >/dev/null &
		js+=($!)
	done
	wait "${js[@]}"
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000000" | bc
}
declare -A JOB
for r in $(seq "$REPS"); do
	JOB[none]+="$(job) "
	rec_start -e power --sample 999 --unwind-mem 64M -m 16M --no-final-dump
	JOB[btrace]+="$(job) "
	rec_stop
	if [ "$have_perf" -eq 1 ]; then
		perf record -F 999 -g -a -o "$TMP/perf.data" -q -- sleep 3600 >/dev/null 2>&1 &
		ppid=$!
		sleep 1
		JOB[perf]+="$(job) "
		kill -INT "$ppid"; wait "$ppid" 2>/dev/null
	fi
done
minof() { tr ' ' '\n' | grep . | sort -n | head -1; }
j_none=$(echo "${JOB[none]}" | minof)
j_bt=$(echo "${JOB[btrace]}" | minof)
j_perf=$(echo "${JOB[perf]:-}" | minof)
slow() { [ -n "$1" ] && awk -v a="$1" -v b="$j_none" 'BEGIN { printf "%+.1f%%", (a / b - 1) * 100 }' || echo "n/a"; }
echo "fixed job (best of $REPS): none ${j_none}s, btrace 999 Hz ${j_bt}s ($(slow "$j_bt")), perf -F 999 -g -a ${j_perf:-n/a}s ($(slow "$j_perf"))"

# ---- bytes per sample -------------------------------------------------------------
# bytes_of SECS SIZE: "bytes events samples stack_table_bytes" of a dump
# of SECS of busy CPUs, 999 Hz, an uncompressed dump of an -m SIZE buffer
bytes_of() {
	rm -rf "$TMP/out"
	rec_start -e power --sample 999 --unwind-mem 64M -m "$2" -z 0
	local secs_was=$SECS
	SECS=$1
	busy
	busy_wait
	SECS=$secs_was
	rec_stop
	local dump
	dump=$(ls "$TMP"/out/*.btd | head -1)
	"$BT" report --stats "$dump" >"$TMP/stats"
	local nsamp nev
	nsamp=$("$BT" report -e cpu_sample "$dump" | grep -c ': cpu_sample:')
	nev=$(awk '/^events:/ { print $2; exit }' "$TMP/stats")
	python3 - "$dump" "$nev" "$nsamp" <<'EOF'
import struct, sys
# the buffer bytes of the dump's blocks ("used" of each BLCK) and the stack table's size (STKP)
data = open(sys.argv[1], "rb").read()
body = data[512:]
off = used = stck = 0
while off + 16 <= len(body):
    typ, flags, ln = struct.unpack_from("<IIQ", body, off)
    name = struct.pack("<I", typ)
    if name == b"BLCK":
        used += struct.unpack_from("<I", body, off + 16 + 28)[0]
    elif name in (b"STKP", b"STCK"):
        stck = ln
    off += 16 + ((ln + 7) & ~7)
print(used, sys.argv[2], sys.argv[3], stck)
EOF
}
# per_ev A B N: (A + B) / N to 0.1
per_ev() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", n ? (a + b) / n : 0 }'; }
read -r used nev nsamp stck <<<"$(bytes_of "$SECS" 64M | tail -1)"
bps=$(per_ev "$used" 0 "$nev")
bps_all=$(per_ev "$used" "$stck" "$nev")
echo "bytes per sample: ${bps} B in the buffer ($nsamp samples of $nev events, $used bytes of blocks), ${bps_all} B with the stack table ($stck B), after ${SECS}s"
# 4 MiB hold ~134 k samples: 67 s at 999 Hz on 2 CPUs (--quick: 512K, 10 s)
FULL_SECS=${BYTES_FULL_SECS:-80} FULL_SIZE=4M
[ "$quick" -eq 1 ] && FULL_SECS=10 FULL_SIZE=512K
read -r fused fnev fnsamp fstck <<<"$(bytes_of "$FULL_SECS" "$FULL_SIZE" | tail -1)"
fbps=$(per_ev "$fused" 0 "$fnev")
fbps_all=$(per_ev "$fused" "$fstck" "$fnev")
echo "bytes per sample over a whole ${FULL_SIZE} window (${FULL_SECS}s): ${fbps} B in the buffer ($fnev events, $fnsamp samples), ${fbps_all} B with the stack table ($fstck B)"
awk -v b="$fbps_all" 'BEGIN { exit !(b <= 32) }' && echo "PASS <= 32 B per stored sample with the stack table, whole window: $fbps_all" ||
	echo "FAIL > 32 B per stored sample with the stack table, whole window: $fbps_all"
perf_bps=n/a
if [ "$have_perf" -eq 1 ]; then
	busy
	perf record -F 999 -g -a -o "$TMP/perf2.data" -q -- sleep "$SECS" >/dev/null 2>&1
	busy_wait
	psamp=$(perf report -i "$TMP/perf2.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
	psize=$(stat -c %s "$TMP/perf2.data")
	perf_bps=$(awk -v s="$psize" -v n="${psamp:-0}" 'BEGIN { printf "%.1f", n ? s / n : 0 }')
	echo "perf record -F 999 -g -a: $psize bytes for ${psamp:-?} samples: ${perf_bps} B per sample"
fi

# ---- off-CPU stacks on perf bench sched pipe --------------------------------------
declare -A PIPE
pipe_run() { taskset -c 0 perf bench sched pipe -l "$PIPE_LOOPS" 2>/dev/null | awk '/usecs\/op/ { print $1; exit }'; }
for r in $(seq "$REPS"); do
	PIPE[none]+="$(pipe_run) "
	for cfg in floor switch switchfp both; do
		case $cfg in
		switchfp) rec_start -e sched --sample 0 --stacks switch --unwind-mem 0 -m 64M --no-final-dump ;;
		floor) rec_start -e sched --sample 0 -m 64M --no-final-dump ;;
		switch) rec_start -e sched --sample 0 --stacks switch --unwind-mem 64M -m 64M --no-final-dump ;;
		both) rec_start -e sched --sample 0 --stacks switch,wakeup --unwind-mem 64M -m 64M --no-final-dump ;;
		esac
		PIPE[$cfg]+="$(pipe_run) "
		rec_stop
	done
done
p_none=$(echo "${PIPE[none]}" | minof)
for cfg in floor switch switchfp both; do eval "p_$cfg=$(echo "${PIPE[$cfg]}" | minof)"; done
echo "perf bench sched pipe (usecs/op, best of $REPS): none $p_none, record -e sched $p_floor, +stacks switch $p_switch (frame pointers only: $p_switchfp), +switch,wakeup $p_both"

# ---- unwinding: complete stacks on packaged programs, table memory -----------------
W=$TMP/w
. tests/workloads/packaged_inputs.sh
packaged_inputs "$W"
# perf_complete FILE: % of samples whose callchain reaches __libc_start_call_main
perf_complete() {
	perf script -i "$1" -F ip,sym 2>/dev/null | awk 'BEGIN { RS = "" } { n++; if ($0 ~ /__libc_start_call_main/) c++ }
		END { printf "%.1f\n", n ? 100 * c / n : 0 }'
}
declare -A UNW
for prog in python3 perl sqlite3; do
	case $prog in
	python3) comm=python3.11; cmd=(/usr/bin/python3.11 "$W/loop.py" 6); in=/dev/null ;;
	perl) comm=perl; cmd=(perl "$W/re.pl" 6); in=/dev/null ;;
	sqlite3) comm=sqlite3; cmd=(sqlite3 :memory:); in=$W/rec.sql ;;
	esac
	command -v "${cmd[0]}" >/dev/null 2>&1 || continue
	rm -rf "$TMP/out"
	rec_start -e power --sample 499 --unwind-mem 64M --comm "$comm" -m 32M
	# as a recorder that has run a while: the running processes loaded
	# (its start-up is the row measured apart)
	for _ in $(seq 600); do
		"$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | grep -q 'running processes loaded' && break
		sleep 0.1
	done
	[ "$prog" = python3 ] && "$BT" ctl --ctl "$TMP/ctl.sock" status 2>/dev/null | grep '^unwinding' >"$TMP/unw_status"
	"${cmd[@]}" <"$in" >/dev/null 2>&1 &
	wpid=$!
	sleep 0.5
	if [ "$have_perf" -eq 1 ]; then
		perf record -q -e cpu-clock -F 499 -g -o "$TMP/pg.data" -p "$wpid" -- sleep 4 >/dev/null 2>&1 &
		pg=$!
		perf record -q -e cpu-clock -F 499 --call-graph dwarf -o "$TMP/pd.data" -p "$wpid" -- sleep 4 >/dev/null 2>&1
		wait "$pg"
	else
		sleep 4
	fi
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	rec_stop
	dump=$(ls "$TMP"/out/*.btd | head -1)
	bt=$("$BT" report --folded "$dump" | awk '{ t += $NF; if ($0 ~ /;__libc_start_call_main;/) c += $NF }
		END { printf "%.1f %d\n", t ? 100 * c / t : 0, t }')
	pgs=n/a pds=n/a
	if [ "$have_perf" -eq 1 ]; then pgs=$(perf_complete "$TMP/pg.data"); pds=$(perf_complete "$TMP/pd.data"); fi
	UNW[$prog]="$bt $pgs $pds"
	echo "complete stacks, $prog: btrace-bpf ${bt% *}% (of ${bt#* } samples), perf -g $pgs%, perf --call-graph dwarf $pds%"
done
unw_mem=$(sed -n 's/.*tables: \([0-9]*\) binaries ([^)]*), \([0-9]*\) of [0-9]* rows.*/\1 \2/p' "$TMP/unw_status" 2>/dev/null)
read -r unw_bins unw_rows <<<"${unw_mem:-0 0}"
nprocs=$(ls -d /proc/[0-9]* | wc -l)
echo "unwind tables for the $nprocs processes running: $unw_bins binaries, $unw_rows rows = $((unw_rows * 8 / 1024)) KiB"

# ---- symbolization of ~100k samples ------------------------------------------------
# Twice: with source lines (DWARF read at dump time: the workload's own, and
# glibc's debug file where libc6-dbg is installed) and with --no-source-lines.
for sl in lines nolines; do
	rm -rf "$TMP/out"
	if [ "$sl" = lines ]; then rec_start -e power --sample 10000 -m 256M -z 1; else rec_start -e power --sample 10000 -m 256M -z 1 --no-source-lines; fi
	busy
	for _ in $(seq "$SECS"); do ls -R /usr/lib >/dev/null 2>&1; done &
	lsp=$!
	sleep 5
	rec_stop
	busy_wait
	wait "$lsp" 2>/dev/null
	dump=$(ls "$TMP"/out/*.btd | head -1)
	dsec=$(sed -n 's/.*dump 1 written to .* (exit, \([0-9]*\) events, [^,]*, \([0-9.]*\)s[,)].*/\2/p' "$TMP/rec.log")
	t0=$(date +%s%N)
	"$BT" report --profile "$dump" >/dev/null
	t1=$(date +%s%N)
	rsec=$(echo "scale=3; ($t1 - $t0) / 1000000000" | bc)
	nbig=$("$BT" report -e cpu_sample "$dump" | grep -c ': cpu_sample:')
	nstk=$("$BT" report --stats "$dump" | sed -n 's/.*call stacks: \([0-9]*\) distinct.*/\1/p')
	nloc=$("$BT" report --stats "$dump" | sed -n 's/.*source lines: \([0-9]*\) code addresses.*/\1/p')
	eval "SYM_$sl=\"$nbig $nstk $dsec $rsec ${nloc:-0}\""
	echo "dump of $nbig samples ($nstk distinct stacks, ${nloc:-0} addresses with source lines, $sl): written (symbolized) in ${dsec}s; report --profile reads it in ${rsec}s"
done
[ -e /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 && libcdbg="libc6-dbg installed" || libcdbg="no libc6-dbg"

# ---- stack table reclamation ---------------------------------------------------------
RECL_EVENTS=${RECL_EVENTS:-4000000}
[ "$quick" -eq 1 ] && RECL_EVENTS=1000000
"$PWD/build/bench/stack_reclaim" "$RECL_EVENTS" "$((REPS * 2 + 1))" >"$TMP/reclaim" || echo "bench_stacks: stack_reclaim failed" >&2
cat "$TMP/reclaim"
recl_field() { # CONFIG-PREFIX -> "ns mib pct reclaimed"
	sed -nE "s/^stack_reclaim $1: ([0-9.]+) ns .*table ([0-9.]+) MiB, last window's events with their stack ([0-9.]+)%, ([0-9]+) stacks reclaimed.*/\1 \2 \3 \4/p" "$TMP/reclaim"
}
read -r rc_off_ns rc_off_mib rc_off_pct _ <<<"$(recl_field 'off \(max 16384\)')"
read -r rc_on_ns rc_on_mib rc_on_pct rc_on_n <<<"$(recl_field 'on \(max 16384\)')"
read -r rc_all_ns rc_all_mib rc_all_pct _ <<<"$(recl_field 'off, table of every stack')"
CHURN=$PWD/build/tests/stack_churn
if [ -x "$CHURN" ]; then
	: >"$TMP/rec.log"
	"$BT" record --ctl "$TMP/ctl.sock" -o "$TMP/out" --no-final-dump --sample 99 --max-stacks 256 -e sched \
		--comm stack_churn -m 64K -b 256 2>"$TMP/rec.log" &
	RPID=$!
	PIDS+=("$RPID")
	for _ in $(seq 200); do grep -q "recording (pid $RPID)" "$TMP/rec.log" && break; sleep 0.05; done
	t0=$(cpu_ticks "$RPID")
	"$CHURN" "$SECS" 50 >"$TMP/churn.out"
	t1=$(cpu_ticks "$RPID")
	churn_st=$("$BT" ctl --ctl "$TMP/ctl.sock" status 2>&1 | grep '^stacks:')
	churn_hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$RPID/status")
	rec_stop
	churn_cpu=$(awk -v t="$((t1 - t0))" -v tck="$TCK" -v s="$SECS" 'BEGIN { printf "%.2f", t / tck / s * 100 }')
	churn_kids=$(awk '/^children/ { print $2 }' "$TMP/churn.out")
	churn_recl=$(echo "$churn_st" | sed -nE 's/.*; ([0-9]+) reclaimed.*/\1/p')
	churn_lost=$(echo "$churn_st" | sed -nE 's/.*lost: ([0-9]+) table full.*/\1/p')
	echo "reclaim under churn: $churn_kids processes in ${SECS}s, recorder ${churn_cpu}% of a CPU, peak RSS ${churn_hwm} KiB, $churn_recl stacks reclaimed, $churn_lost lost (table full)"
fi

# ---- table --------------------------------------------------------------------------
read -r t49 r49 k49 n49 ns49 w49 <<<"$S_49"
read -r t999 r999 k999 n999 ns999 w999 <<<"$S_999"
md "| measure | btrace-bpf | baseline |"
md "|---|---|---|"
md "| sampling cost at the default 49 Hz, 2 busy CPUs, % of one CPU (steady state: ${SECS}s from ${WARM_SECS}s after the workloads start; BPF: the sample program and the unwinder's mmap/exec hooks) | ${t49}% (recorder ${r49}%, BPF ${k49}%; ${ns49} ns per sample) | target <= 1% |"
md "| the recorder in the ${WARM_SECS}s before: one-time loads of the symbol files (the machine's and the workload's binaries) and kernel symbols | ${w49}% of a CPU at 49 Hz, ${w999}% at 999 Hz | per new binary, not per sample |"
[ -n "${HK_none_exec:-}" ] && md "| the unwinder's mmap hook (sys_exit_mmap), mmap+munmap of a file's page, ns (recorder at 49 Hz vs none; fastest of $REPS x $MMAP_N) | executable: ${HK_rec_exec} (none ${HK_none_exec}); anonymous: ${HK_rec_anon} (none ${HK_none_anon}); the hook's run ${HK_mmap_bpf} ns | |"
[ -n "${HK_none_fork:-}" ] && md "| the exec hooks (sched_process_exec, and ld.so's mmaps), fork+exec of /bin/true from bash, us | $((HK_rec_fork / 1000)) (none $((HK_none_fork / 1000))); the hooks' run ${HK_exec_bpf} ns an exec | |"
md "| sampling cost at 999 Hz, % of one CPU | ${t999}% (recorder ${r999}%, BPF ${k999}%; ${ns999} ns per sample) | |"
md "| fixed CPU job (sha256, 1 GiB per CPU) under sampling at 999 Hz | ${j_bt}s ($(slow "$j_bt")) | none ${j_none}s; perf record -F 999 -g -a ${j_perf:-n/a}s ($(slow "$j_perf")) |"
md "| bytes per stored sample (999 Hz), a whole ${FULL_SIZE} window (${FULL_SECS}s) | ${fbps} B; ${fbps_all} B with the stack table (target <= 32) | perf.data: ${perf_bps} B per sample |"
md "| the same after ${SECS}s (a window not yet full: the table weighs more) | ${bps} B; ${bps_all} B with the stack table | |"
md "| perf bench sched pipe, usecs/op | +stacks switch ${p_switch} (unwind tables), +switch,wakeup ${p_both} | +stacks switch with frame pointers only (--unwind-mem 0) ${p_switchfp}; record -e sched ${p_floor} (floor); none ${p_none} |"
for prog in python3 perl sqlite3; do
	[ -n "${UNW[$prog]:-}" ] || continue
	read -r ub un upg upd <<<"${UNW[$prog]}"
	md "| $prog (packaged, no frame pointers): samples whose user stack reaches __libc_start_call_main | ${ub}% of $un | perf -g ${upg}%; perf --call-graph dwarf ${upd}% |"
done
md "| recorder start-up to the running processes' tables loaded (BPF programs loaded, tables built while recording) | ${LOAD_S:-n/a}s, ${LOAD_CPU_S:-n/a}s of CPU | measured apart: the rows above start once it is done |"
read -r uc_s uc_b <<<"${UNW_COLD:-n/a n/a}"
read -r uw_s uw_b <<<"${UNW_WARM:-n/a n/a}"
md "| the unwinder loading every running process, tables cached on disk (a restart) | ${uw_s}s (${uw_b}s reading tables) | tables compiled (an empty cache, the first start): ${uc_s}s (${uc_b}s compiling) |"
md "| unwind tables for every binary of the $nprocs processes running | $unw_bins binaries, $unw_rows rows, $((unw_rows * 8 / 1024)) KiB (8 B a row) | |"
md "| stack table under churn, drain work per event (a new 32-frame stack every 4 events; bench/stack_reclaim, $RECL_EVENTS events) | reclaim on: ${rc_on_ns} ns, table ${rc_on_mib} MiB, last window's events with their stack ${rc_on_pct}% (${rc_on_n} stacks reclaimed) | off, --max-stacks 16384: ${rc_off_ns} ns, ${rc_off_mib} MiB, ${rc_off_pct}%; off with a table of every stack: ${rc_all_ns} ns, ${rc_all_mib} MiB (grows with the run), ${rc_all_pct}% |"
[ -n "${churn_kids:-}" ] && md "| recorder under process churn (stack_churn, ${churn_kids} processes in ${SECS}s, 99 Hz, --max-stacks 256) | ${churn_cpu}% of a CPU, peak RSS ${churn_hwm} KiB; ${churn_recl} stacks reclaimed, ${churn_lost} lost to a full table | |"
read -r nb_l ns_l ds_l rs_l nl_l <<<"$SYM_lines"
read -r nb_n ns_n ds_n rs_n nl_n <<<"$SYM_nolines"
md "| dump of ${nb_l} samples (${ns_l} distinct stacks), symbolized with source lines (${nl_l} code addresses; $libcdbg) | ${ds_l}s to write; report --profile ${rs_l}s | --no-source-lines: ${nb_n} samples (${ns_n} stacks) ${ds_n}s to write; report --profile ${rs_n}s |"
if [ "$write_md" -eq 1 ]; then
	{ echo "<!-- stacks:begin -->"; echo "## Call stacks (scripts/bench_stacks.sh)"; echo; cat "$MD"; echo "<!-- stacks:end -->"; } >"$TMP/sect"
	bench_md_put stacks "$TMP/sect"
fi
