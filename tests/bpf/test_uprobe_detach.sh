#!/usr/bin/env bash
# test_uprobe_detach.sh - entry and return probes of the same function on a
# process that calls it all the time, until the recorder stops: every return
# in the final dump has its entry. The return probe used to be detached after
# the entry probe, and its detach takes long enough that every call made
# meanwhile left a return without an entry and without a seq gap (tens of
# thousands of malloc returns). Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/bpf/lib.sh

if [ "$(id -u)" -ne 0 ]; then
	skip "uprobe detach test" "need root"
	finish
	exit $?
fi
if ! command -v python3 >/dev/null; then
	skip "uprobe detach test" "no python3"
	finish
	exit $?
fi

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
	# Per thread: a return needs an entry of the same thread before it.
	counts=$("$BT" report -e uprobe "$f" | awk '
		{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		  n = split($1, a, "-"); tid = a[n]; kind = $(i + 2)
		  if (kind == "uprobe:") { e++; d[tid]++ }
		  else if (kind == "uretprobe:") { r++; if (d[tid] > 0) d[tid]--; else orphan++ } }
		END { printf "%d %d %d\n", e, r, orphan }')
	read -r entries returns orphans <<<"$counts"
	diag "final dump: $entries entries, $returns returns, $orphans returns without an entry"
	[ "${entries:-0}" -gt 1000 ] && [ "${orphans:-1}" -eq 0 ] &&
		ok "every malloc return in the final dump has its entry ($returns returns)" ||
		not_ok "returns without entries" "$counts; $(tail -3 "$LOG")"
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi
finish
