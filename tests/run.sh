#!/usr/bin/env bash
# Runs every test program and ends with one line: "N passed, M failed".
# A test program prints TAP lines ("ok N - name" / "not ok N - name"); a program
# that crashes or exits non-zero without a "not ok" line counts as one failure.
#   TESTS=pattern  run only programs whose name matches (grep -E)
#   SKIP_TESTS=pattern  leave out programs whose name matches (grep -E)
#   STRESS_SECONDS=N  time bound per stress run (default 4)
#   T_RETRY=0  do not run a failed kernel/ or system/ program a second time
# A kernel/ or system/ program that fails is run once more (their bounds are
# timings on a shared machine): its first run's lines are printed whole, and
# the summary names it under "passed on its second run" with the checks that
# failed first. unit/, stress/ (sanitizers) and fuzz/ are never run again.
set -u
cd "$(dirname "$0")/.."
B=build/tests
pass=0 fail=0 skip=0
failed_names=()
retried=() # "NAME: the first run's not ok lines", for the summary
times=() # "SECONDS NAME" per program, for the slowest ten at the end
t_start=$SECONDS
filter=${TESTS:-.}
skip_filter=${SKIP_TESTS:-}
export STRESS_SECONDS=${STRESS_SECONDS:-4}
export BTRACE_BPF=$PWD/build/btrace-bpf
# Test programs linked with libbtrace must not attach to a recorder that
# happens to run on this machine (tests that want one set their own).
export BTRACE_CTL=/nonexistent/btrace-test.sock
export TEST_BIN=$PWD/$B

# run_program NAME TIMEOUT CMD...: one run; sets rc_p rc_f rc_s and rc_log
# (the caller removes it).
run_program() {
	local name=$1 to=$2; shift 2
	rc_log=$(mktemp)
	# timeout leads a process group of its own: what the program leaves
	# running (a load generator whose wrapper was killed) is killed with
	# it, and named, rather than loading every test after it.
	timeout --kill-after=10 "$to" "$@" >"$rc_log" 2>&1 </dev/null &
	local tpid=$!
	wait "$tpid"
	local rc=$? left
	left=$(pgrep -g "$tpid" -l 2>/dev/null | awk '{ printf "%s%s", (n++ ? ", " : ""), $2 }')
	if [ -n "$left" ]; then
		echo "# left running, killed: $left" >>"$rc_log"
		kill -KILL -- "-$tpid" 2>/dev/null
	fi
	rc_p=$(grep -cE '^ok [0-9]+' "$rc_log" | tr -d ' ')
	rc_s=$(grep -cE '^ok [0-9]+.*# SKIP' "$rc_log" | tr -d ' ')
	rc_f=$(grep -cE '^not ok [0-9]+' "$rc_log" | tr -d ' ')
	rc_p=$((rc_p - rc_s))
	if [ "$rc" -ne 0 ] && [ "$rc_f" -eq 0 ]; then
		rc_f=1
		[ "$rc" -eq 124 ] && echo "  TIMEOUT after ${to}s" >>"$rc_log"
		echo "  exit status $rc" >>"$rc_log"
	fi
}

run_one() { # name timeout cmd...
	local name=$1
	echo "$name" | grep -qE "$filter" || return 0
	[ -n "$skip_filter" ] && echo "$name" | grep -qE "$skip_filter" && return 0
	printf '== %s\n' "$name"
	local t0=$SECONDS
	run_program "$@"
	if [ "$rc_f" -ne 0 ] && [ "${T_RETRY:-1}" != 0 ] && [[ $name == kernel/* || $name == system/* ]]; then
		sed 's/^/    /' "$rc_log"
		local first
		first=$(grep -E '^not ok|TIMEOUT|exit status' "$rc_log" | head -3 | cut -c1-160 | paste -sd '|')
		rm -f "$rc_log"
		printf '   (%ss) failed; run once more\n' "$((SECONDS - t0))"
		run_program "$@"
		[ "$rc_f" -eq 0 ] && retried+=("$name: $first")
	fi
	pass=$((pass + rc_p)) fail=$((fail + rc_f)) skip=$((skip + rc_s))
	if [ "$rc_f" -ne 0 ]; then
		failed_names+=("$name")
		sed 's/^/    /' "$rc_log"
	else
		grep -E '^(not )?ok|^#' "$rc_log" | sed 's/^/    /'
	fi
	# How long each program took (the kernel matrix lists the slowest).
	printf '   (%ss)\n' "$((SECONDS - t0))"
	times+=("$((SECONDS - t0)) $name")
	rm -f "$rc_log"
}

# The layout of user/: no include or call cycles, no folder reaching upward.
run_one "layout/check_layout" 60 python3 scripts/check_layout.py
# Compiled tests: tests/unit/ (no root) and tests/kernel/ (load BPF).
for t in "$B"/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	if [ -f "tests/kernel/$n.c" ]; then run_one "kernel/$n" 300 "$t"; else run_one "unit/$n" 300 "$t"; fi
done
for t in tests/unit/test_*.sh; do
	[ -f "$t" ] || continue
	run_one "unit/$(basename "$t" .sh)" 300 bash "$t"
done
for t in "$B"/stress_*; do
	[ -x "$t" ] || continue
	case "$t" in
	*.tsan) TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 second_deadlock_stack=1" run_one "stress/$(basename "$t")" 300 "$t" ;;
	*.asan) ASAN_OPTIONS="abort_on_error=1 detect_leaks=1" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" run_one "stress/$(basename "$t")" 300 "$t" ;;
	*) run_one "stress/$(basename "$t")" 300 "$t" ;;
	esac
done
for d in kernel system; do
	for t in tests/$d/test_*.sh; do
		[ -f "$t" ] || continue
		run_one "$d/$(basename "$t" .sh)" 600 bash "$t"
	done
done
for t in "$B"/fuzz_*; do
	[ -x "$t" ] || continue
	# Seeds are copied so the run never dirties the tree.
	corpus=$(mktemp -d)
	cp tests/fuzz/seeds/"$(basename "$t")"/* "$corpus"/ 2>/dev/null || true
	# An undefined behaviour is a failure, not a line in a log nobody reads
	# (UBSan recovers by default: qsort(NULL, 0) went unnoticed, issue 28).
	UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" run_one "fuzz/$(basename "$t")" 120 bash -c "'$t' -max_total_time=${FUZZ_SECONDS:-20} -rss_limit_mb=2048 '$corpus' >/dev/null 2>&1 && echo 'ok 1 - $(basename "$t") ran ${FUZZ_SECONDS:-20}s without a crash' || { '$t' -runs=0 '$corpus' 2>&1 | tail -30; echo 'not ok 1 - $(basename "$t") crashed'; }"
	rm -rf "$corpus"
done

# Where the time goes (docs/testing.md keeps the list of a full run).
if [ ${#times[@]} -gt 1 ]; then
	echo "slowest of ${#times[@]} programs ($((SECONDS - t_start))s in all):"
	printf '%s\n' "${times[@]}" | sort -rn | head -10 | awk '{ printf "  %4ds  %s\n", $1, $2 }'
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
