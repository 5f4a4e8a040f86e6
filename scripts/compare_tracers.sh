#!/usr/bin/env bash
# compare_tracers.sh - btrace-bpf against ftrace and perf on the real kernel at
# equal memory: the latest continuous (gap-free) window each keeps, checked
# call by call against the workload's own count. `make bench-compare` runs it;
# `make bench` does not (~15 s a run: about 20 minutes at the defaults).
#
#   workloads  bench/cmp_load, paced getpid()/getppid() calls whose pattern
#              numbers every call (decoded by scripts/compare_analyze.py):
#              skewed   = CPU 0 makes RATE calls/s, CPU 1 wakes every 1 ms
#                         and makes 8 calls (about 1/30 of CPU 0's events)
#              balanced = CPU 0 and CPU 1 each make RATE calls/s
#              each for SECS seconds, several times what any buffer holds.
#   tracers    the same events (sched_switch, sched_wakeup, sched_wakeup_new,
#              sched_migrate_task, sched_process_fork/exec/exit, task_rename,
#              raw_syscalls sys_enter/sys_exit = record -e sched,syscalls)
#              and the same memory budget B (8 and 32 MiB):
#              btrace-bpf  record -m (B - RING) --ring-size RING, final dump
#                          (the BPF rings count in the budget); three times:
#                          without the cold tier, with --cold-tier COLD_PCT
#                          (75) lz4 and with it zstd (level 1); all its
#                          threads' CPU counted (drain, compressor)
#              ftrace      a tracefs instance, buffer_size_kb = B / CPUs,
#                          overwrite mode, trace_clock boot, `trace` read at the end
#              perf        perf record --overwrite -a -m (B / CPUs / 4 KiB pages)
#                          -k mono, read at the end (SIGINT)
#              no tracer   the baseline of the CPU cost
#   The workload starts SETTLE seconds after the tracer (after 0.3 s of a
#   busy shell, so something is sampled): its one-time work (btrace-bpf
#   loads the running binaries' symbols and unwind tables and, once stacks
#   arrive, the kernel's symbols; perf its maps) is reported apart, as
#   start-up CPU, not spread over the calls.
#   Every repetition runs every (workload, budget, tracer) once, the tracer
#   order rotated; medians over the repetitions.
#
# Usage: scripts/compare_tracers.sh [--quick] [--no-md] [--keep] [--results FILE]
#   --quick  1 repetition, 8 MiB only, 2 s runs, no BENCHMARKS.md (checks the harness)
#   --keep   keep the work directory (traces, results.jsonl) and print its path
#   --results FILE  no runs: tables, figure and BENCHMARKS.md from the
#            results.jsonl of an earlier run (kept with --keep)
# Environment: REPS (3), BUDGETS ("8 32", MiB), WORKLOADS ("skewed balanced"),
#   TOOLS ("none btrace-default btrace-lz4 btrace-zstd btrace ftrace perf"), COLD_PCT (75), SECS (4), RATE (250000 calls/s per busy
#   CPU), RING (1M, btrace-bpf's BPF rings in total), SETTLE (3 s; 0.3 with --quick).
# Results: one JSON line per run in the work directory's results.jsonl, the
# tables on stdout and into BENCHMARKS.md between <!-- compare:begin --> and
# <!-- compare:end -->, the figure docs/compare-last-n.png (gnuplot).
# Needs root, 2+ CPUs, perf, gnuplot (scripts/install-deps.sh --bench).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
. scripts/bench_md.sh

quick=0 write_md=1 keep=0 from=''
while [ $# -gt 0 ]; do
	arg=$1; shift
	case "$arg" in
	--results) from=$(realpath "${1:?--results FILE}") || exit 2; shift ;;
	--quick) quick=1 write_md=0 ;;
	--no-md) write_md=0 ;;
	--keep) keep=1 ;;
	-h|--help) sed -n '2,38s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "compare_tracers: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done
if [ "$quick" -eq 1 ]; then
	REPS=${REPS:-1} BUDGETS=${BUDGETS:-8} SECS=${SECS:-2} SETTLE=${SETTLE:-0.3}
fi
REPS=${REPS:-3}
BUDGETS=${BUDGETS:-8 32}
WORKLOADS=${WORKLOADS:-skewed balanced}
TOOLS=${TOOLS:-none btrace-default btrace-lz4 btrace-zstd btrace ftrace perf}
COLD_PCT=${COLD_PCT:-75}
SECS=${SECS:-4}
RATE=${RATE:-250000}
RING=${RING:-1M}
SETTLE=${SETTLE:-3}
LIGHT_PERIOD_US=1000 LIGHT_CALLS=8

BT=build/btrace-bpf LOAD=build/bench/cmp_load EVD=build/bench/btd_events
AN=$ROOT/scripts/compare_analyze.py
FT_EVENTS=(sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task
	sched/sched_process_fork sched/sched_process_exec sched/sched_process_exit task/task_rename
	raw_syscalls/sys_enter raw_syscalls/sys_exit)
PERF_EVENTS=$(printf '%s,' "${FT_EVENTS[@]}" | sed 's|/|:|g; s/,$//')

die() { echo "compare_tracers: $*" >&2; exit 1; }
note() { echo "compare_tracers: $*" >&2; }

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, tracefs, perf -a): sudo make bench-compare"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs"
make --no-print-directory -s "$BT" "$LOAD" "$EVD" >/dev/null 2>&1 || note "cannot rebuild: using the binaries built"
for b in "$BT" "$LOAD" "$EVD"; do [ -x "$b" ] || die "$b missing (make)"; done
command -v python3 >/dev/null || die "python3 missing"
have_perf=0; command -v perf >/dev/null 2>&1 && have_perf=1
have_gnuplot=0; command -v gnuplot >/dev/null 2>&1 && have_gnuplot=1
[ "$have_perf" -eq 1 ] || note "perf missing (scripts/install-deps.sh --bench): perf runs skipped"
[ "$have_gnuplot" -eq 1 ] || note "gnuplot missing (scripts/install-deps.sh --bench): no figure"
TRACEFS=/sys/kernel/tracing
[ -e $TRACEFS/instances ] || mount -t tracefs nodev $TRACEFS 2>/dev/null || die "cannot mount tracefs"
NCPU=$(nproc)

TMP=$(mktemp -d /tmp/compare_tracers.XXXXXX) || die "mktemp failed"
INST=$TRACEFS/instances/btrace_compare_$$
TR_PID=''
cleanup()
{
	[ "$BASHPID" = "$$" ] || return 0
	[ -n "$TR_PID" ] && kill -KILL "$TR_PID" 2>/dev/null
	wait 2>/dev/null
	ft_remove
	if [ "$keep" -eq 1 ]; then echo "compare_tracers: work directory kept: $TMP"; else rm -rf "$TMP"; fi
}
ft_remove()
{
	[ -d "$INST" ] || return 0
	echo 0 >"$INST/tracing_on" 2>/dev/null
	echo >"$INST/set_event" 2>/dev/null
	rmdir "$INST" 2>/dev/null || note "could not remove $INST"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Private copies: a rebuild in the tree during the run changes nothing.
mkdir -p "$TMP/bin" && cp "$BT" "$LOAD" "$EVD" "$TMP/bin/" || die "cannot copy the binaries"
BT=$TMP/bin/btrace-bpf LOAD=$TMP/bin/cmp_load EVD=$TMP/bin/btd_events
RES=$TMP/results.jsonl
: >"$RES"

# CPU time (ns) of a process, all its threads: the scheduler's run time
# (/proc/PID/task/*/schedstat, first field), exact unlike tick counts
proc_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ n += $1 } END { printf "%.0f\n", n }'; }

# wait_line FILE REGEX TIMEOUT_S PID
wait_line()
{
	local f=$1 re=$2 deadline=$(($(date +%s) + $3)) pid=$4
	until grep -qE -- "$re" "$f" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || return 1
		[ "$(date +%s)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

stop_wait()
{
	local pid=$1 n=0
	kill -INT "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.05
		n=$((n + 1))
		[ "$n" -ge 1200 ] && { kill -KILL "$pid" 2>/dev/null; break; }
	done
	wait "$pid" 2>/dev/null
}

# one_run TOOL WORKLOAD BUDGET_MIB REP
one_run()
{
	local tool=$1 wl=$2 b=$3 rep=$4 d=$TMP/run-$1-$2-$3-$4
	local per_cpu_kb=$((b * 1024 / NCPU)) t0 t1 p0=0 p1=0 ps=0 rc load_out
	mkdir -p "$d"
	TR_PID=''
	case "$tool" in
	btrace|btrace-default|btrace-cold|btrace-lz4|btrace-zstd)
		local ring_kb cold=(--cold-tier off)
		case "$tool" in
		btrace-default) cold=() ;; # the tier as shipped: on, within its CPU budget
		btrace-cold) cold=(--cold-tier "$COLD_PCT" --cold-codec "${COLD_CODEC:-lz4}") ;;
		btrace-lz4) cold=(--cold-tier "$COLD_PCT" --cold-codec lz4 --cold-cpu off) ;;
		btrace-zstd) cold=(--cold-tier "$COLD_PCT" --cold-codec zstd --cold-cpu off) ;;
		esac
		case "$RING" in
		*K) ring_kb=${RING%K} ;;
		*M) ring_kb=$((${RING%M} * 1024)) ;;
		*) die "RING takes a size in K or M (e.g. 512K)" ;;
		esac
		"$BT" record -e sched,syscalls -m "$((b * 1024 - ring_kb))K" --ring-size "$RING" -z 0 "${cold[@]}" \
			-o "$d/dump" --no-ctl >"$d/rec.log" 2>&1 &
		TR_PID=$!
		wait_line "$d/rec.log" 'recording \(pid' 30 "$TR_PID" || { cat "$d/rec.log" >&2; return 1; }
		;;
	ftrace)
		ft_remove
		mkdir "$INST" || return 1
		echo 0 >"$INST/tracing_on"
		echo boot >"$INST/trace_clock"
		echo 1 >"$INST/options/overwrite"
		echo "$per_cpu_kb" >"$INST/buffer_size_kb"
		for e in "${FT_EVENTS[@]}"; do echo 1 >"$INST/events/$e/enable" || return 1; done
		echo 1 >"$INST/tracing_on"
		;;
	perf)
		perf record --overwrite -a -m "$((per_cpu_kb / 4))" -k mono -e "$PERF_EVENTS" \
			-o "$d/perf.data" >"$d/rec.log" 2>&1 &
		TR_PID=$!
		sleep 1
		kill -0 "$TR_PID" 2>/dev/null || { cat "$d/rec.log" >&2; return 1; }
		;;
	none) ;;
	esac
	[ -n "$TR_PID" ] && ps=$(proc_ns "$TR_PID")
	# A busy shell at the start of the settle, for every tracer alike: on
	# an idle machine nothing is sampled until the workload runs, and
	# btrace-bpf's one-time loads (kernel symbols, libc's) landed in the
	# measured window at random (~130 ms: ~120 ns a call). No system calls
	# of its own: the workload's are the ones counted.
	timeout 0.3 sh -c 'while :; do :; done' 2>/dev/null
	sleep "$SETTLE"
	[ -n "$TR_PID" ] && p0=$(proc_ns "$TR_PID")
	t0=$(date +%s%N)
	load_out=$("$LOAD" -m "$wl" -d "$SECS" -r "$RATE" -p $LIGHT_PERIOD_US -l $LIGHT_CALLS -o "$d/truth")
	rc=$?
	t1=$(date +%s%N)
	[ -n "$TR_PID" ] && p1=$(proc_ns "$TR_PID")
	case "$tool" in
	ftrace) echo 0 >"$INST/tracing_on" ;;
	btrace*|perf) stop_wait "$TR_PID"; TR_PID='' ;;
	esac
	[ "$rc" -eq 0 ] || { note "workload failed: $load_out"; return 1; }
	local calls; calls=$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$load_out")
	# CPU cost per call: the workload's own CPU time (it includes what the
	# tracepoint probes do inside its system calls) plus the tracer process's
	# (btrace-bpf's drain thread, perf) while the workload ran, in us.
	local cpu_us tr_pct wl_us
	wl_us=$(sed -n 's/.* cpu_us=\([0-9]*\).*/\1/p' <<<"$load_out")
	cpu_us=$(awk -v w="$wl_us" -v p="$((p1 - p0))" -v c="$calls" 'BEGIN { printf "%.4f", (w + p / 1000) / c }')
	tr_pct=$(awk -v p="$((p1 - p0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.2f", p / t * 100 }')
	local meta=(--meta "workload=$wl" --meta "budget_mib=$b" --meta "rep=$rep" --meta "calls=$calls"
		--meta "cpu_us_per_call=$cpu_us" --meta "tracer_cpu_pct=$tr_pct"
		--meta "startup_cpu_ms=$(awk -v p="$((p0 - ps))" 'BEGIN { printf "%.1f", p / 1e6 }')")
	local losses=''
	case "$tool" in
	none)
		python3 -c 'import json, sys; a = sys.argv
print(json.dumps({"tool": "none", "workload": a[1], "budget_mib": int(a[2]), "rep": int(a[3]),
                  "calls": int(a[4]), "cpu_us_per_call": float(a[5])}))' "$wl" "$b" "$rep" "$calls" "$cpu_us" >>"$RES"
		echo "  $wl ${b}M rep $rep none   $load_out, cpu $cpu_us us/call"
		return 0
		;;
	btrace*)
		local dump; dump=$(ls "$d"/dump/*.btd 2>/dev/null | head -1)
		[ -n "$dump" ] || { cat "$d/rec.log" >&2; return 1; }
		"$EVD" "$dump" >"$d/events.txt" || return 1
		"$BT" report --stats "$dump" >"$d/stats.txt"
		losses="rb drops $(sed -n 's/^ *ring-buffer reservation failures: \([0-9]*\).*/\1/p' "$d/stats.txt"); $(sed -n 's/^ *seq gaps: \([0-9]*\) gaps, \([0-9]*\) events missing.*/seq missing \2/p' "$d/stats.txt"); $(sed -n 's/^ *dump read: .* \([0-9]*\) lost .*/blocks lost \1/p' "$d/stats.txt")"
		local rw; rw=$(sed -n 's/^latest continuous window: .*(\([0-9.]*\) s, \([0-9]*\) events).*/\1 \2/p' "$d/stats.txt")
		meta+=(--meta "report_window_s=${rw% *}" --meta "report_window_events=${rw#* }")
		python3 "$AN" run --tool "$tool" --trace "$d/events.txt" --truth "$d/truth" "${meta[@]}" \
			--meta "losses=$losses" >>"$RES" || return 1
		rm -f "$dump" "$d/events.txt"
		;;
	ftrace)
		local ov=0 co=0 dr=0 c s
		for ((c = 0; c < NCPU; c++)); do
			s=$INST/per_cpu/cpu$c/stats
			ov=$((ov + $(sed -n 's/^overrun: //p' "$s"))) co=$((co + $(sed -n 's/^commit overrun: //p' "$s")))
			dr=$((dr + $(sed -n 's/^dropped events: //p' "$s")))
			cat "$s" >>"$d/stats.txt"
		done
		cat "$INST/trace" >"$d/trace.txt"
		ft_remove
		losses="overwritten $ov; commit overrun $co; dropped $dr"
		python3 "$AN" run --tool ftrace --trace "$d/trace.txt" --truth "$d/truth" "${meta[@]}" \
			--meta "losses=$losses" >>"$RES" || return 1
		rm -f "$d/trace.txt"
		;;
	perf)
		local off; off=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
		perf script -i "$d/perf.data" --show-lost-events -F cpu,tid,time,event,trace >"$d/script.txt" 2>"$d/script.err" || return 1
		local lost; lost=$(perf report -i "$d/perf.data" --stats 2>/dev/null | awk '/LOST/ { n += $3 } END { print n + 0 }')
		losses="LOST records $lost"
		python3 "$AN" run --tool perf --trace "$d/script.txt" --truth "$d/truth" --clock-offset "$off" \
			"${meta[@]}" --meta "losses=$losses" >>"$RES" || return 1
		rm -f "$d/perf.data" "$d/script.txt"
		;;
	esac
	tail -1 "$RES" | python3 -c 'import json, sys
r = json.load(sys.stdin)
print("  %s %sM rep %s %-6s window %.4f s %7d events (of %d), calls kept %d, missing in window %d, %s, cpu %.3f us/call, tracer %.1f%%" % (
    r["workload"], r["budget_mib"], r["rep"], r["tool"], r["window_s"], r["window_events"], r["events"],
    r["retained_calls"], r["missing_in_window"], r.get("losses", ""), r["cpu_us_per_call"], r["tracer_cpu_pct"]))'
}

START_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
failed=0
tools=($TOOLS)
[ -n "$from" ] && { cp "$from" "$RES" || die "cannot read $from"; REPS_SHOWN=$(python3 -c 'import json, sys
print(max(json.loads(l).get("rep", 0) for l in open(sys.argv[1]) if l.startswith("{")))' "$RES"); REPS=0; START_DATE="${MEASURED:-an earlier run} (tables regenerated from its results.jsonl)"; }
if [ -n "$from" ]; then
	echo "compare_tracers: no runs, the tables of $from ($REPS_SHOWN reps)"
else
	echo "compare_tracers: $REPS reps x workloads ($WORKLOADS) x budgets ($BUDGETS MiB) x tracers ($TOOLS), ${SECS}s runs at $RATE calls/s"
fi
for ((rep = 1; rep <= REPS; rep++)); do
	for wl in $WORKLOADS; do
		for b in $BUDGETS; do
			n=${#tools[@]}
			for ((k = 0; k < n; k++)); do
				t=${tools[$(((k + rep + ${#wl}) % n))]}
				[ "$t" = perf ] && [ "$have_perf" -eq 0 ] && continue
				one_run "$t" "$wl" "$b" "$rep" || { note "run failed: $t $wl ${b}M rep $rep"; failed=$((failed + 1)); }
			done
		done
	done
done

python3 "$AN" table "$RES" >"$TMP/table.md" || die "table failed"
echo
cat "$TMP/table.md"
PNG=docs/compare-last-n.png
if [ "$have_gnuplot" -eq 1 ]; then
	python3 "$AN" plot "$RES" "$TMP/plot" "$TMP/compare.png" && (cd "$TMP/plot" && gnuplot compare.gp) &&
		[ "$write_md" -eq 1 ] && cp "$TMP/compare.png" "$PNG" && echo "compare_tracers: figure $PNG"
fi

if [ "$write_md" -eq 1 ]; then
	KERNEL=$(uname -r) CPU=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
	PERF_VER=$(perf --version 2>/dev/null | awk '{ print $3 }')
	COMMIT=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- bench scripts bpf user 2>/dev/null || echo +dirty)
	{
		echo "<!-- compare:begin -->"
		echo "## Tracer comparison on the real kernel: latest continuous window at equal memory"
		echo ""
		# what was run, from the results (--results: not this call's REPS and TOOLS)
		tools_run=$(python3 "$AN" tools "$RES")
		nruns=$(grep -c . "$RES")
		echo "Reproduce: \`sudo make bench-compare\` (= \`sudo scripts/compare_tracers.sh\`; REPS=${REPS_SHOWN:-$REPS} TOOLS=\"$tools_run\""
		echo "BUDGETS=\"$BUDGETS\" SECS=$SECS RATE=$RATE RING=$RING; $nruns runs of ~15 s: about $(((nruns * 15 + 59) / 60)) minutes; not part of \`make bench\`)."
		echo "Run $START_DATE on kernel $KERNEL, $NCPU CPUs ($CPU), perf $PERF_VER; tree $COMMIT."
		echo ""
		cat "$ROOT/scripts/compare_method.md"
		echo ""
		cat "$TMP/table.md"
		echo ""
		[ -f "$PNG" ] && echo "![which of the last N calls each tracer kept]($PNG)"
		echo "<!-- compare:end -->"
	} >"$TMP/section"
	bench_md_put compare "$TMP/section"
fi
[ "$keep" -eq 1 ] && cp "$RES" "$TMP/results.jsonl" 2>/dev/null
[ "$failed" -eq 0 ] || die "$failed runs failed"
exit 0
