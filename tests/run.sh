#!/usr/bin/env bash
# Runs every test program and ends with one line: "N passed, M failed".
# A test program prints TAP lines ("ok N - name" / "not ok N - name"); a program
# that crashes or exits non-zero without a "not ok" line counts as one failure.
#   TESTS=pattern  run only programs whose name matches (grep -E)
#   SKIP_TESTS=pattern  leave out programs whose name matches (grep -E)
#   STRESS_SECONDS=N  time bound per stress phase (default 3 here, 4 run alone)
#   T_JOBS=N  programs run side by side (default 3; 1 runs one at a time)
#   T_RETRY=0  do not run a failed kernel/ or system/ program a second time
# Programs run T_JOBS at a time (a LIGHT one, below, counts half), each
# printed whole when it ends, except the SOLO ones: they measure time, CPU
# or a peer tracer's view, or load the machine on purpose, and run alone
# once the others are done, the fuzzers beside them at idle priority.
# A kernel/ or system/ program that fails is run once more, alone (their
# bounds are timings on a shared machine): its first run's lines are printed
# whole, and the summary names it under "passed on its second run" with the
# checks that failed first. unit/, stress/ (sanitizers) and fuzz/ are never
# run again.
set -u
cd "$(dirname "$0")/.."
B=build/tests
pass=0 fail=0 skip=0
failed_names=()
retried=() # "NAME: the first run's not ok lines", for the summary
again=()   # indexes of programs to run once more, alone
times=()   # "SECONDS CPU-SECONDS NAME" per program, for the slowest ten at the end
t_start=$SECONDS
filter=${TESTS:-.}
skip_filter=${SKIP_TESTS:-}
jobs=${T_JOBS:-3}
[[ $jobs =~ ^[1-9][0-9]?$ ]] || { echo "tests/run.sh: T_JOBS must be 1-99, not '$jobs'" >&2; exit 2; }
# 3 s a phase: 2.5 M self-checked entries a stress_buffer phase under TSan,
# and make test within 12 minutes (4 s, the programs' default, cost 25 s)
export STRESS_SECONDS=${STRESS_SECONDS:-3}
export BTRACE_BPF=$PWD/build/btrace-bpf
# Test programs linked with libbtrace must not attach to a recorder that
# happens to run on this machine (tests that want one set their own).
export BTRACE_CTL=/nonexistent/btrace-test.sock
export TEST_BIN=$PWD/$B

# Alone: timing bounds against ftrace or perf, CPU or latency budgets, the
# machine loaded on purpose, sanitizer stress runs (each fills both CPUs),
# and the unit's limits (test_unit_caps); the package's build and install
# and the service's quotas and hooks (test_service: 33 s, 13 CPU-s, its
# bounds seconds wide) go beside others.
SOLO='^(system/test_unit_caps$|stress/|kernel/test_(sys_pairs|stacks_churn|cold_tier|cold_budget|dump_app_scale|drain_idle|honest_window|trigger_busy|trigger_pressure|python_versions|funcs_plain|ctl_concurrency|dump_memory|dump_capture|unwind_short|unwind|detach)$)'

# Waiting, not working: unit tests of timeouts and keepalives that sleep
# through them (25 and 22 s, no CPU). They run beside the others without
# taking one of the T_JOBS places.
IDLE='^unit/test_(ctl|on_dump)$'

# Half a place: programs that wait more than they work (under half a CPU
# on average in a full run: kernel/test_trigger 25 s for 9 CPU-s), two of
# them in one of the T_JOBS places. Not test_unwind_hostile (21 s for 10
# alone, 46 s for 24 so: its niced table builder waits for a CPU).
LIGHT='^(kernel/test_(trigger|hostile|ctl|ctl_socket|record|uprobe|uprobes|funcs_edge)|system/test_install)$'

# In the background of the alone phase, at idle priority (SCHED_IDLE): the
# fuzzers, one CPU each for a wall-clock time, no timing of their own and
# no system calls to speak of. They take only what the alone programs
# leave idle (~0.7 of the 2 CPUs), and a program that wakes preempts them
# at once. One at a time.
BACKGROUND='^fuzz/'
# T_JOBS=1: one program at a time, every one of them
[ "$jobs" = 1 ] && IDLE='^$' LIGHT='^$' BACKGROUND='^$'

# The longest of the side-by-side phase (30-80 s each), started first so
# that the phase does not end on one of them running alone.
LONG='^(kernel/test_(convert|app|trigger|handover|unwind_hostile|ctl|record_files)|system/test_package|fuzz/.*)$'

# The programs, in order: NAME, TIMEOUT and the command (quoted for eval).
J_NAME=() J_TO=() J_CMD=()
add() { # name timeout cmd...
	local name=$1 to=$2
	shift 2
	echo "$name" | grep -qE "$filter" || return 0
	[ -n "$skip_filter" ] && echo "$name" | grep -qE "$skip_filter" && return 0
	J_NAME+=("$name") J_TO+=("$to") J_CMD+=("$(printf '%q ' "$@")")
}

# The layout of user/: no include or call cycles, no folder reaching upward.
add "layout/check_layout" 60 python3 scripts/check_layout.py
# Compiled tests: tests/unit/ (no root) and tests/kernel/ (load BPF).
for t in "$B"/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	if [ -f "tests/kernel/$n.c" ]; then add "kernel/$n" 300 "$t"; else add "unit/$n" 300 "$t"; fi
done
for t in tests/unit/test_*.sh; do
	[ -f "$t" ] || continue
	add "unit/$(basename "$t" .sh)" 300 bash "$t"
done
for t in "$B"/stress_*; do
	[ -x "$t" ] || continue
	case "$t" in
	*.tsan) add "stress/$(basename "$t")" 300 env TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 second_deadlock_stack=1" "$t" ;;
	*.asan) add "stress/$(basename "$t")" 300 env ASAN_OPTIONS="abort_on_error=1 detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" "$t" ;;
	*) add "stress/$(basename "$t")" 300 "$t" ;;
	esac
done
for d in kernel system; do
	for t in tests/$d/test_*.sh; do
		[ -f "$t" ] || continue
		add "$d/$(basename "$t" .sh)" 600 bash "$t"
	done
done
for t in "$B"/fuzz_*; do
	[ -x "$t" ] || continue
	# (40 s in the background of the alone phase: 15-25 CPU-s there)
	f=$(basename "$t") s=${FUZZ_SECONDS:-$([ "$jobs" = 1 ] && echo 20 || echo 40)}
	# Seeds are copied so the run never dirties the tree. An undefined
	# behaviour is a failure, not a line in a log nobody reads (UBSan
	# recovers by default: qsort(NULL, 0) went unnoticed, issue 28).
	add "fuzz/$f" 120 env UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" bash -c '
		corpus=$(mktemp -d); trap "rm -rf \"\$corpus\"" EXIT
		cp tests/fuzz/seeds/'"$f"'/* "$corpus"/ 2>/dev/null
		if '"$t"' -max_total_time='"$s"' -rss_limit_mb=2048 "$corpus" >/dev/null 2>&1; then
			echo "ok 1 - '"$f"' ran '"$s"'s without a crash"
		else
			'"$t"' -runs=0 "$corpus" 2>&1 | tail -30
			echo "not ok 1 - '"$f"' crashed"
		fi'
done

# start I: runs program I in the background, its output and result in files
# under $R (I.pid while it runs, I.log, then I.res: "rc seconds cpu-seconds",
# written last).
R=$(mktemp -d)
# lib.sh's waits that ran to their bound: each a delay of the suite (or a
# condition never met), listed at the end
export T_WAIT_LOG=${T_WAIT_LOG:-$R/waits}
# Interrupted (^C, a CI timeout): the programs running are stopped with
# what they started (each timeout leads its own process group, which the
# terminal's ^C does not reach), not left recording with BPF attached.
stop_running() {
	local f g
	for f in "$R"/*.pid; do
		[ -f "$f" ] && read -r g <"$f" && kill -TERM -- "-$g" 2>/dev/null
	done
}
trap 'stop_running; exit 130' INT
trap 'stop_running; exit 143' TERM
trap 'stop_running; wait; rm -rf "$R"' EXIT
# start I [idle]: idle runs it at SCHED_IDLE
start() {
	local i=$1
	(
		t0=$SECONDS
		# timeout leads a process group of its own: what the program
		# leaves running (a load generator whose wrapper was killed) is
		# killed with it, and named, rather than loading every test after it.
		${2:+chrt --idle 0} timeout --kill-after=10 "${J_TO[i]}" bash -c "${J_CMD[i]}" >"$R/$i.log" 2>&1 </dev/null &
		tpid=$!
		echo "$tpid" >"$R/$i.pid"
		wait "$tpid"
		rc=$?
		left=$(pgrep -g "$tpid" -l 2>/dev/null | awk '{ printf "%s%s", (n++ ? ", " : ""), $2 }')
		if [ -n "$left" ]; then
			echo "# left running, killed: $left" >>"$R/$i.log"
			kill -KILL -- "-$tpid" 2>/dev/null
		fi
		# CPU seconds of what it waited for (recorders and loads it
		# reaped): which programs a faster suite must make cheaper.
		times >"$R/$i.cpu" # not in $(...): a subshell has no children
		cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } } END { printf "%.0f", t }' "$R/$i.cpu")
		rm -f "$R/$i.pid"
		echo "$rc $((SECONDS - t0)) $cpu" >"$R/$i.tmp" && mv "$R/$i.tmp" "$R/$i.res"
	) &
}

# finish I FINAL: reads program I's result; prints it and counts it, or
# (FINAL=0, a kernel/ or system/ failure) prints its first run and queues it
# to run once more.
finish() {
	local i=$1 final=$2 name=${J_NAME[$1]} log=$R/$1.log rc secs cpu p f s
	read -r rc secs cpu <"$R/$i.res"
	rm -f "$R/$i.res"
	p=$(grep -cE '^ok [0-9]+' "$log")
	s=$(grep -cE '^ok [0-9]+.*# SKIP' "$log")
	f=$(grep -cE '^not ok [0-9]+' "$log")
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		[ "$rc" -eq 124 ] && echo "  TIMEOUT after ${J_TO[i]}s" >>"$log"
		echo "  exit status $rc" >>"$log"
	fi
	printf '== %s\n' "$name"
	if [ "$f" -ne 0 ] && [ "$final" = 0 ] && [ "${T_RETRY:-1}" != 0 ] && [[ $name == kernel/* || $name == system/* ]]; then
		sed 's/^/    /' "$log"
		first[i]=$(grep -E '^not ok|TIMEOUT|exit status' "$log" | head -3 | cut -c1-160 | paste -sd '|')
		printf '   (%ss, %s CPU-s) failed; run once more, alone\n' "$secs" "$cpu"
		again+=("$i")
		return
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	if [ "$f" -ne 0 ]; then
		failed_names+=("$name")
		sed 's/^/    /' "$log"
	else
		grep -E '^(not )?ok|^#' "$log" | sed 's/^/    /'
		[ "$final" = 1 ] && retried+=("$name: ${first[i]}")
	fi
	printf '   (%ss, %s CPU-s)\n' "$secs" "$cpu"
	times+=("$secs $cpu $name")
}

# weight I: the half places program I takes: 0 IDLE, 1 LIGHT, else 2
weight() {
	if [[ ${J_NAME[$1]} =~ $IDLE ]]; then echo 0; elif [[ ${J_NAME[$1]} =~ $LIGHT ]]; then echo 1; else echo 2; fi
}

# working: the half places the running programs take (BACKGROUND ones
# none while they run beside the alone phase, BG set)
working() {
	local r n=0
	for r in "${running[@]}"; do
		[ -n "${BG:-}" ] && [[ ${J_NAME[r]} =~ $BACKGROUND ]] || n=$((n + $(weight "$r")))
	done
	echo "$n"
}

# run_all MAX FINAL I...: runs the programs, at most MAX places' worth at
# once (a LIGHT program half a place, an IDLE one none); with BG set, the
# BACKGROUND programs of $bg_todo one at a time beside them.
run_all() {
	local max=$1 final=$2 i r w
	shift 2
	local todo=("$@") running=()
	while [ ${#todo[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
		while [ ${#todo[@]} -gt 0 ]; do
			w=$(weight "${todo[0]}")
			# (a program heavier than the places left waits, unless
			# nothing runs: MAX 1 still runs a 2-place program)
			[ "$w" -eq 0 ] || [ $(($(working) + w)) -le $((2 * max)) ] || [ "$(working)" -eq 0 ] || break
			start "${todo[0]}"
			running+=("${todo[0]}")
			todo=("${todo[@]:1}")
		done
		# (not beside the stress runs: they fill both CPUs, and a fuzzer
		# at idle priority would get nothing for its wall-clock time)
		if [ -n "${BG:-}" ] && [ ${#bg_todo[@]} -gt 0 ] && [ ${#todo[@]} -gt 0 ] &&
			! [[ ${J_NAME[todo[0]]} =~ ^stress/ ]]; then
			local busy=0
			for r in "${running[@]}"; do [[ ${J_NAME[r]} =~ $BACKGROUND ]] && busy=1; done
			if [ "$busy" = 0 ]; then
				start "${bg_todo[0]}" idle
				running+=("${bg_todo[0]}")
				bg_todo=("${bg_todo[@]:1}")
			fi
		fi
		# No child left to wait for and no result: a program's runner
		# died before writing it (finish would block on nothing).
		wait -n 2>/dev/null || sleep 0.2
		local still=()
		for r in "${running[@]}"; do
			if [ -f "$R/$r.res" ]; then finish "$r" "$final"; else still+=("$r"); fi
		done
		running=("${still[@]}")
	done
}

first=()
side=() alone=() alone_k=()
idle=() long=() bg_todo=()
for i in "${!J_NAME[@]}"; do
	if [[ ${J_NAME[i]} =~ $BACKGROUND ]]; then
		bg_todo+=("$i")
	elif [[ ${J_NAME[i]} =~ $SOLO && ${J_NAME[i]} =~ ^stress/ ]]; then
		alone+=("$i")
	elif [[ ${J_NAME[i]} =~ $SOLO ]]; then
		alone_k+=("$i")
	elif [[ ${J_NAME[i]} =~ $IDLE ]]; then
		idle+=("$i")
	elif [[ ${J_NAME[i]} =~ $LONG ]]; then
		long+=("$i")
	else
		side+=("$i")
	fi
done
side=("${idle[@]}" "${long[@]}" "${side[@]}")
# The alone kernel and system programs before the stress runs: they leave
# a CPU mostly idle for the background, the stress runs fill both.
alone=("${alone_k[@]}" "${alone[@]}")
t_side=$SECONDS
[ ${#side[@]} -gt 0 ] && run_all "$jobs" 0 "${side[@]}"
t_alone=$SECONDS
[ ${#alone[@]} -gt 0 ] && BG=1 run_all 1 0 "${alone[@]}"
# (what the alone phase did not reach: there were none to run beside)
[ ${#bg_todo[@]} -gt 0 ] && run_all "$jobs" 0 "${bg_todo[@]}"
t_again=$SECONDS
[ ${#again[@]} -gt 0 ] && run_all 1 1 "${again[@]}"
t_end=$SECONDS

# Where the time goes (docs/testing.md keeps the list of a full run).
if [ ${#times[@]} -gt 1 ]; then
	echo "slowest of ${#times[@]} programs ($((SECONDS - t_start))s in all, $(printf '%s\n' "${times[@]}" | awk '{ c += $2 } END { print c }') CPU-s):"
	printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %4ds %5d CPU-s  %s\n", $1, $2, $3 }'
	echo "phases: ${#side[@]} side by side $((t_alone - t_side))s, ${#alone[@]} alone (fuzzers beside) $((t_again - t_alone))s, ${#again[@]} again $((t_end - t_again))s"
fi
if [ -s "$T_WAIT_LOG" ]; then
	echo "waits that ran to their bound (seconds each):"
	sort "$T_WAIT_LOG" | uniq -c | sort -rn | head -10 | cut -c1-160
fi
if [ ${#retried[@]} -gt 0 ]; then
	echo "passed on its second run (the first run's failures):"
	printf '  %s\n' "${retried[@]}"
fi
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
[ "$skip" -gt 0 ] && echo "($skip skipped)"
echo "$pass passed, $fail failed${retried[*]:+, ${#retried[@]} passed on a second run}"
[ "$fail" -eq 0 ]
