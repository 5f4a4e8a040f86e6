#!/usr/bin/env bash
# test_honest_window.sh - a trigger dump whose window starts after its
# triggering event says so (issue 23), in `report --stats` and in the
# recorder's log: a 64 KiB buffer, system calls at full speed on every CPU,
# and `ctl,after=1500ms`: the buffer is overwritten many times over before
# the dump is taken. And the converse, so the test can fail both ways: a
# hit dumped at once (after=0) from a 32 MiB buffer is in its window and no
# such claim is made.
# Runs on any kernel (no timing bound). Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "honest window tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
# new_dump BEFORE: wait for a dump file not in the list BEFORE; print it.
new_dump() {
	local f
	# a file, not <(...): the 6.1 matrix's guest has no /dev/fd
	printf '%s\n' $1 >"$T_TMP/before.list"
	for _ in $(seq 600); do
		f=$(ls "$OUT"/*.btd 2>/dev/null | grep -vxF -f "$T_TMP/before.list" | head -1)
		[ -n "$f" ] && { echo "$f"; return 0; }
		sleep 0.1
	done
	return 1
}

# ---- a buffer that holds the hit: dumped at once, no claim --------------------------
if ! rec_start "$LOG" -o "$OUT" -e sched -m 32M --ctl "$CTL" --no-final-dump \
	--trigger 'ctl,name=now,after=0,limit=0'; then
	not_ok "recorder with a 32 MiB buffer starts" "$(cat "$LOG")"
	finish
	exit 1
fi
sleep 0.5
ctl trigger now >/dev/null
D=$(new_dump "")
check "now: its dump is written" test -n "$D"
if [ -n "$D" ]; then
	"$BT" report --stats "$D" >"$T_TMP/now.txt" 2>&1
	check "now: report --stats names the hit" grep -q '^trigger: *now (ctl)' "$T_TMP/now.txt"
	if grep -q 'NOT IN THE DUMP' "$T_TMP/now.txt"; then
		not_ok "now: no 'NOT IN THE DUMP' for a hit its window holds" "$(grep -A3 '^trigger:' "$T_TMP/now.txt")"
	else
		ok "now: no 'NOT IN THE DUMP' for a hit its window holds"
	fi
	if grep -q 'trigger now: its event .* older than the oldest event' "$LOG"; then
		not_ok "now: the log makes no such claim either" "$(grep 'older than' "$LOG")"
	else
		ok "now: the log makes no such claim either"
	fi
fi
rec_stop "$REC_PID"

if ! rec_start "$LOG" -o "$OUT" -e syscalls,sched -m 64K --ctl "$CTL" --no-final-dump \
	--trigger 'ctl,name=late,after=1500ms,limit=0'; then
	not_ok "recorder with a 64 KiB buffer starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# ---- heavy load, tiny buffer, a delay: the window has moved past the hit ----------
build/bench/syscall_loop -t $((2 * $(nproc))) -d 60 >/dev/null 2>&1 &
LP=$!
T_PIDS+=("$LP")
sleep 0.5
before=$(ls "$OUT"/*.btd 2>/dev/null)
ctl trigger late >/dev/null
D=$(new_dump "$before")
kill "$LP" 2>/dev/null
wait "$LP" 2>/dev/null
check "late: its dump is written after the delay" test -n "$D"
if [ -n "$D" ]; then
	"$BT" report --stats "$D" >"$T_TMP/late.txt" 2>&1
	diag "$(grep -A3 '^trigger: *late' "$T_TMP/late.txt" | tr -s ' ' | tr '\n' ' ')"
	check "late: report --stats says the window starts after the triggering event" \
		sh -c "grep -A4 '^trigger: *late (ctl)' '$T_TMP/late.txt' | grep -q 'NOT IN THE DUMP: its window starts [0-9.]* ms after this event'"
	wait_for 10 grep -q 'trigger late: its event at .* older than the oldest event the buffer still holds' "$LOG"
	check "late: the recorder's log says so too" \
		grep -q 'trigger late: its event at .* ms older than the oldest event the buffer still holds' "$LOG"
	# what it says is true: the dump's oldest event is after the hit
	ev=$(sed -n 's/^ *event at \([0-9.]*\).*/\1/p' "$T_TMP/late.txt" | head -1)
	first=$(sed -n 's/^window: *\([0-9.]*\) .*/\1/p' "$T_TMP/late.txt" | head -1)
	check "late: the dump's first event ($first) is indeed after the hit's ($ev)" \
		awk -v a="${first:-0}" -v b="${ev:-0}" 'BEGIN { exit !(a > b && b > 0) }'
fi

rec_stop "$REC_PID"
finish
