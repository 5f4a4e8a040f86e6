#!/usr/bin/env bash
# test_fork_burst.sh - a traced program's children from their first call
# (issue 36, item 3: a forked child's first 300-700 ms were lost, uncounted).
# tests/workloads/app_fork_burst.c, built with -finstrument-functions:
#   - a child that forks and calls leaf() 1,000 times at once: 1,000
#     recorded, in 5 runs, without BTRACE_WAIT_MS (the child writes into a
#     buffer of its own from fork() on);
#   - a child that execs the program (which carries the hooks) and calls
#     leaf() 1,000 times from main: 1,000 recorded, in 3 runs;
#   - the same program started directly: 1,000 recorded;
#   - nothing refused, nothing dropped, no seq gap;
# uftrace on the same program beside it (diag).
# Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "children traced from their first call"

CTL=$T_TMP/ctl.sock
LOG=$T_TMP/rec.log
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50
unset BTRACE_WAIT_MS
APP=$TB/app_fork_burst
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }

if ! rec_start "$LOG" -o "$T_TMP/out" -e sched --ctl "$CTL" --no-final-dump; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# calls PID DUMP: leaf's calls of process PID in the dump
calls() {
	"$BT" report --functions -p "$1" "$2" 2>/dev/null | awk '$1 == "leaf" { print $3 }'
}

# run_mode MODE RUNS WHAT: each run's child (the line "child" or "burst")
# must have its 1000 calls in a dump taken after it exited
run_mode() {
	local mode=$1 runs=$2 what=$3 i pid got bad="" times=""
	for i in $(seq 1 "$runs"); do
		"$APP" "$mode" 1000 >"$T_TMP/$mode.$i.out" 2>"$T_TMP/$mode.$i.err" || {
			bad="$bad run$i:exit=$?"
			continue
		}
		pid=$(awk '$1 == "child" || $1 == "burst" { print $2 }' "$T_TMP/$mode.$i.out")
		times="$times $(awk '$1 == "child" || $1 == "burst" { printf "%.0fus", $4 / 1000 }' "$T_TMP/$mode.$i.out")"
		wait_for 5 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $pid [^ ]* exited'"
		ctl dump -o "$T_TMP/$mode.$i.btd" >/dev/null 2>&1
		got=$(calls "$pid" "$T_TMP/$mode.$i.btd")
		[ "$got" = 1000 ] || bad="$bad run$i:pid=$pid,calls=${got:-none}"
		"$BT" report --stats "$T_TMP/$mode.$i.btd" >"$T_TMP/$mode.$i.stats" 2>&1
	done
	check "$what: 1000 of 1000 calls recorded in each of $runs runs (calls took$times)" \
		sh -c "[ -z '$bad' ] || { echo '$bad' >&2; false; }"
}

run_mode fork 5 "a child that forks and calls leaf() 1000 times at once"
run_mode exec 3 "a child that execs a program with the hooks, 1000 calls from main"
run_mode burst 2 "a program with the hooks started directly, 1000 calls from main"

ctl status >"$T_TMP/status"
check "no early buffer refused" sh -c "! grep early_refused '$T_TMP/status'"
check "nothing dropped, no seq gap" sh -c "! cat '$T_TMP'/*.stats | grep -E 'seq gaps: [1-9]|app_dropped [1-9]'"

# The peer on the same program: uftrace (-pg), the forked child's calls.
if command -v uftrace >/dev/null; then
	cc -O1 -fno-inline -pg -Iuser/lib -Itests tests/workloads/app_fork_burst.c build/libbtrace.a -lpthread \
		-o "$T_TMP/app_pg" 2>"$T_TMP/cc.log"
	BTRACE_DISABLE=1 run_with_timeout 60 uftrace record -d "$T_TMP/uft" "$T_TMP/app_pg" fork 1000 >/dev/null 2>&1
	run_with_timeout 60 uftrace report -d "$T_TMP/uft" -s call 2>/dev/null >"$T_TMP/pg.rep"
	diag "uftrace on the same program (-pg; parent and child): leaf $(awk '$NF == "leaf" { print $(NF - 1) }' "$T_TMP/pg.rep") of 1000 calls"
fi

rec_stop "$REC_PID"
[ -n "${KEEP_TMP:-}" ] && cp -r "$T_TMP" "$KEEP_TMP"
finish
