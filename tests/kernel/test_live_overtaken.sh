#!/usr/bin/env bash
# test_live_overtaken.sh - `ctl status`'s latest continuous window when
# uprobe events overtake their CPU's batch of system-call pairs. A uprobe
# program never flushes the batch (uprobe.bpf.c), so a probed function
# called hundreds of times between two system calls puts hundreds of events
# in the ring ahead of the pairs still held; the drain's live window waited
# 64 events for them and then counted their seqs as gaps (a window that
# started too late). python3 (Debian's) makes 17 getppid() calls, then 300
# allocations (malloc, probed), in a loop:
#   1. quiet: `ctl status` shows the window with no seq gap, and so does
#      the final dump's report (the reference: a dump flushes every batch);
#   2. the same under load (3 busy loops per CPU).
# Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "live window tests"
need_cmd "live window with uprobes" python3

# status_gaps SOCK: "GAPS MISSING EVENTS" of ctl status's window line
status_gaps() {
	"$BT" ctl --ctl "$1" status 2>/dev/null |
		sed -n 's/^latest continuous window: [0-9.]*s, \([0-9]*\) events (\([0-9]*\) seq gaps, \([0-9]*\) .*/\2 \3 \1/p'
}

# one_case NAME: record the python loop, check the live window, then the dump
one_case() {
	local name=$1 d=$T_TMP/$1 sock=$T_TMP/$1.sock py gaps missing events i
	mkdir -p "$d"
	python3 -c '
import os, time
print("ready", flush=True)
t = time.time()
while time.time() - t < 60:
    for i in range(17):
        os.getppid()
    x = [bytearray(600) for i in range(300)]
' >"$d/py.out" &
	py=$!
	T_PIDS+=("$py")
	wait_for 10 grep -q ready "$d/py.out" || { not_ok "$name: python3 starts"; return; }
	if ! rec_start "$d/rec.log" -e sched,syscalls -p "$py" -u 'libc:malloc' -o "$d/out" --ctl "$sock"; then
		not_ok "$name: recorder starts" "$(tail -3 "$d/rec.log")"
		kill "$py" 2>/dev/null
		return
	fi
	sleep 2
	# three looks: a hole still open at one look is not a gap yet
	for i in 1 2 3; do
		read -r gaps missing events <<<"$(status_gaps "$sock")"
		[ "${gaps:-1}" -eq 0 ] || break
		sleep 0.5
	done
	rec_stop "$REC_PID" INT 60
	kill "$py" 2>/dev/null
	local f st
	f=$(find "$d/out" -name '*.btd' | head -1)
	st=$([ -n "$f" ] && "$BT" report --stats "$f" 2>&1)
	local ups sys
	ups=$([ -n "$f" ] && "$BT" report -e uprobe "$f" 2>/dev/null | grep -c 'uprobe:')
	sys=$([ -n "$f" ] && "$BT" report -e syscalls "$f" 2>/dev/null | grep -c 'sys_exit:')
	diag "$name: ctl status window $events events, ${gaps:-?} seq gaps (${missing:-?} missing); dump: $ups malloc hits, $sys system calls"
	[ "${ups:-0}" -ge 3000 ] && [ "${sys:-0}" -ge 170 ] &&
		ok "$name: the dump has the loop's calls ($ups malloc hits, $sys system calls)" ||
		not_ok "$name: the dump has the loop's calls" "$ups malloc hits, $sys system calls"
	grep -q "seq gaps: 0 gaps, 0 events missing, 0 duplicates" <<<"$st" &&
		ok "$name: the final dump has no seq gap" ||
		not_ok "$name: the final dump has no seq gap" "$(grep -E 'seq gaps|reservation failures' <<<"$st")"
	[ -n "$events" ] && [ "$events" -gt 0 ] && [ "$gaps" -eq 0 ] && [ "$missing" -eq 0 ] &&
		ok "$name: ctl status's window has no seq gap ($events events)" ||
		not_ok "$name: ctl status's window has no seq gap" "${gaps:-?} gaps, ${missing:-?} missing, ${events:-?} events"
}

# ---- 1. quiet ------------------------------------------------------------------------------
one_case quiet

# ---- 2. under load -------------------------------------------------------------------------
for _ in $(seq $((3 * $(nproc)))); do
	sh -c 'while :; do :; done' &
	T_PIDS+=("$!")
done
one_case load
finish
