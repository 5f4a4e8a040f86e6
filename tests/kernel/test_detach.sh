#!/usr/bin/env bash
# test_detach.sh - the end of a recording is a clean cut: pairs of events
# (a function's entry and return, sys_enter and sys_exit, softirq and irq
# entry and exit) are never cut in half by the detach. Programs used to be
# detached one after the other while still emitting: every call made while
# a return probe outlived its entry probe (its detach takes long) left a
# return without an entry and without a seq gap (thousands of malloc returns
# in a final dump), and the same for the tracepoints between two links.
# Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "detach tests"
need_cmd "uprobe detach test" python3

LOG=$T_TMP/rec.log
# A process that calls malloc (through python's allocator) without a pause.
python3 -c '
import sys, time
print("ready", flush=True)
t = time.time()
while time.time() - t < 60:
    x = [bytearray(600) for i in range(200)]
' >"$T_TMP/py.out" &
PY=$!
T_PIDS+=("$PY")
wait_for 10 grep -q ready "$T_TMP/py.out"

if rec_start "$LOG" -e sched -p "$PY" -u 'libc:malloc' -u 'libc:malloc%return' -o "$T_TMP/out" --ctl "$T_TMP/ctl.sock"; then
	sleep 2
	rec_stop "$REC_PID" INT 60
	kill "$PY" 2>/dev/null
	f=$(find "$T_TMP/out" -name '*.btd' | head -1)
	# Per thread: a return needs an entry of the same thread before it,
	# except the thread's first event (a call in flight when the probes
	# were attached).
	counts=$("$BT" report -e uprobe "$f" | awk '
		{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		  n = split($1, a, "-"); tid = a[n]; kind = $(i + 2)
		  if (kind == "uprobe:") { e++; d[tid]++ }
		  else if (kind == "uretprobe:") { r++; if (d[tid] > 0) d[tid]--; else if (seen[tid]) orphan++ }
		  seen[tid] = 1 }
		END { printf "%d %d %d\n", e, r, orphan }')
	read -r entries returns orphans <<<"$counts"
	diag "final dump: $entries entries, $returns returns, $orphans returns without an entry"
	[ "${entries:-0}" -gt 1000 ] && [ "${orphans:-1}" -eq 0 ] &&
		ok "every malloc return in the final dump has its entry ($returns returns)" ||
		not_ok "returns without entries" "$counts; $(tail -3 "$LOG")"
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

# ---- tracepoints: sys_enter/exit, softirq and irq entry/exit ---------------------------
if rec_start "$LOG" -e sched,irq,syscalls -o "$T_TMP/tp" --ctl "$T_TMP/ctl.sock"; then
	build/bench/syscall_loop -t 2 -d 30 >/dev/null 2>&1 &
	WL=$!
	T_PIDS+=("$WL")
	sleep 1.5
	rec_stop "$REC_PID" INT 60
	kill "$WL" 2>/dev/null
	f=$(find "$T_TMP/tp" -name '*.btd' | head -1)
	# An exit needs its entry before it (same thread for system calls,
	# same CPU for interrupts), except the first of a thread or CPU (a
	# call in flight when recording started) and the first after events
	# the dump says are lost (a seq gap: blocks the cold tier's budget did
	# not reach), whose entry may be among them.
	counts=$("$BT" report -e syscalls,irq "$f" | awk '
		/\[LOST [0-9]+ EVENTS\]/ { delete seen; delete sseen; delete hseen; lost++; next }
		{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		  n = split($1, a, "-"); tid = a[n]; cpu = $i; kind = $(i + 2)
		  if (kind == "sys_enter:") { open[tid] = 1; seen[tid] = 1 }
		  else if (kind == "sys_exit:") { if (!open[tid] && seen[tid]) bad_sys++; open[tid] = 0; seen[tid] = 1; nsys++ }
		  else if (kind == "softirq_entry:") { s[cpu] = 1; sseen[cpu] = 1 }
		  else if (kind == "softirq_exit:") { if (!s[cpu] && sseen[cpu]) bad_soft++; s[cpu] = 0; sseen[cpu] = 1; nsoft++ }
		  else if (kind == "irq_handler_entry:") { h[cpu] = 1; hseen[cpu] = 1 }
		  else if (kind == "irq_handler_exit:") { if (!h[cpu] && hseen[cpu]) bad_irq++; h[cpu] = 0; hseen[cpu] = 1 } }
		END { printf "%d %d %d %d %d\n", nsys, nsoft, bad_sys, bad_soft, bad_irq }')
	read -r nsys nsoft bsys bsoft birq <<<"$counts"
	diag "final dump: $nsys sys_exit, $nsoft softirq_exit; without their entry: $bsys, $bsoft, $birq irq_handler_exit"
	[ "${nsys:-0}" -gt 1000 ] && [ "${bsys:-1}" -eq 0 ] && [ "${bsoft:-1}" -eq 0 ] && [ "${birq:-1}" -eq 0 ] &&
		ok "tracepoints: no exit without its entry in the final dump" || not_ok "exits without entries" "$counts"
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi
finish
