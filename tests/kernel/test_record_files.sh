#!/usr/bin/env bash
# test_record_files.sh - the files a recorder creates and removes: its output
# directory (0700, and not created by an invocation that fails), a --ctl
# path too long for a socket or already taken (refused before anything is
# loaded), temporaries of a recorder killed mid-dump (removed by the next
# recorder, a live recorder's never), and SIGUSR1 requests merged into a
# pending dump (counted in status), and each class of configuration error
# against the unit's restart policy (exit 2, FILE:LINE, nothing loaded).
# Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "record file tests"

LOG=$T_TMP/rec.log
ctl() { "$BT" ctl --ctl "$T_TMP/ctl.sock" "$@"; }

# ---- output directory: 0700, every level created --------------------------------
OUT=$T_TMP/a/b/out
r=$(run_with_timeout 60 "$BT" record -e sched -o "$OUT" --ctl "$T_TMP/c0.sock" -d 300ms 2>&1)
m1=$(stat -c %a "$T_TMP/a" 2>/dev/null) m3=$(stat -c %a "$OUT" 2>/dev/null)
[ "$m1" = 700 ] && [ "$m3" = 700 ] && ls "$OUT"/*.btd >/dev/null 2>&1 &&
	ok "output directory and its parents created 0700" || not_ok "output dir mode" "modes $m1 $m3: $r"

# ---- an invocation that fails creates nothing -------------------------------------
r=$(run_with_timeout 60 "$BT" record -e sched -o "$T_TMP/nodir1" --ctl "$T_TMP/c1.sock" -u 'libc:no_such_function_xyz' -d 1s 2>&1)
rc=$?
[ $rc -ne 0 ] && [ ! -e "$T_TMP/nodir1" ] && ok "failed uprobe attach: no output directory left behind" ||
	not_ok "failed invocation created its output directory" "rc=$rc: $r"

# ---- configuration errors under the unit's restart policy ----------------------------
# Restart=on-failure restarts every exit but those of RestartPreventExitStatus:
# each class of configuration error must exit with one of those, name the
# key and FILE:LINE, load nothing (no libbpf line at -v -v) and leave nothing.
UNIT=dist/btrace-bpf.service.in
policy=$(sed -n 's/^Restart=//p' "$UNIT")
prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$UNIT")
restarts() { [ "$policy" = on-failure ] && [ "$1" -ne 0 ] && [[ " $prevent " != *" $1 "* ]]; }
CFG=$T_TMP/policy.conf
while IFS='|' read -r key value; do
	# the command line overrides the file: -o and --ctl only where the file has none
	printf 'events = sched\n# the next line is wrong\n%s = %s\n' "$key" "$value" >"$CFG"
	[ "$key" = output-dir ] || echo "output-dir = $T_TMP/nodir-$key" >>"$CFG"
	[ "$key" = ctl ] || echo "ctl = $T_TMP/cp.sock" >>"$CFG"
	r=$(run_with_timeout 60 "$BT" record -v -v --config "$CFG" --no-final-dump -d 2s 2>&1)
	rc=$?
	[ "$key" = output-dir ] && left=$value || left=$T_TMP/nodir-$key
	! restarts $rc && echo "$r" | grep -q "$CFG:3: $key: " && ! echo "$r" | grep -q libbpf &&
		[ ! -e "$left" ] && [ ! -e "$T_TMP/cp.sock" ] &&
		ok "$key = $value: exit $rc (not restarted: RestartPreventExitStatus=$prevent), $CFG:3 named, nothing loaded or left" ||
		not_ok "$key = $value under Restart=$policy" "rc=$rc: $(echo "$r" | grep -v 'libbpf: ' | head -3); libbpf lines: $(echo "$r" | grep -c libbpf)"
done <<EOF_CASES
buffer-size|1T
app-buffer-size|1T
max-size|1T
uprobe|$T_TMP/no-such-binary:main
trigger|func:$T_TMP/no-such-binary:main>1ms
pid|999999999
ctl|/etc/passwd
output-dir|/proc/btrace-nodir
EOF_CASES

# ---- --ctl too long: refused, not truncated -----------------------------------------
LONG=$T_TMP/$(printf 'x%.0s' $(seq 1 120)).sock
r=$(run_with_timeout 60 "$BT" record -e sched -o "$T_TMP/nodir2" --ctl "$LONG" -d 1s 2>&1)
rc=$?
trunc=$(printf '%s' "$LONG" | cut -c1-107)
[ $rc -ne 0 ] && echo "$r" | grep -q "at most 107" && [ ! -e "$trunc" ] && [ ! -e "$T_TMP/nodir2" ] &&
	ok "--ctl path of ${#LONG} bytes refused (no socket at a truncated path, no output directory)" ||
	not_ok "long --ctl" "rc=$rc: $r"

# ---- --ctl conflict found before anything is loaded -------------------------------------
# (started in $T_TMP with -o relative to it: ctl dump, asked from another
# directory, prints where the dump is, not a path relative to the recorder's)
cd "$T_TMP" || exit 1
rec_start "$LOG" -e sched --no-final-dump -o out --ctl "$T_TMP/ctl.sock"
started=$?
cd - >/dev/null || exit 1
if [ $started = 0 ]; then
	A=$REC_PID
	p=$(ctl dump 2>&1)
	[ "$p" != "${p#"$T_TMP/out/"}" ] && [ -s "$p" ] && ok "ctl dump prints the dump's absolute path ($p)" ||
		not_ok "ctl dump's path" "$p"
	r=$(run_with_timeout 60 "$BT" record -v -v -e sched -o "$T_TMP/nodir3" --ctl "$T_TMP/ctl.sock" -d 1s 2>&1)
	rc=$?
	[ $rc -ne 0 ] && echo "$r" | grep -q "in use by a running recorder" && ! echo "$r" | grep -q "libbpf" &&
		[ ! -e "$T_TMP/nodir3" ] && ok "--ctl of a running recorder: refused before any BPF is loaded" ||
		not_ok "ctl conflict found late" "rc=$rc: $(echo "$r" | grep -v 'libbpf: ' | head -5); libbpf lines: $(echo "$r" | grep -c libbpf)"
	ctl status >/dev/null 2>&1 && ok "the running recorder still answers" || not_ok "running recorder lost its socket"

	# ---- SIGUSR1 while a dump is written: merged requests are counted ------------------
	"$BT" ctl --ctl "$T_TMP/ctl.sock" stop >/dev/null 2>&1
	rec_stop "$A" INT 30
fi
if rec_start "$LOG" -e all -m 64M -z 6 --no-final-dump -o "$T_TMP/usr1" --ctl "$T_TMP/ctl.sock"; then
	build/bench/syscall_loop -t 1 -d 4 >/dev/null 2>&1
	before=$(grep -c "written to" "$LOG")
	for _ in $(seq 30); do
		kill -USR1 "$REC_PID"
		sleep 0.02
	done
	# every requested dump written: no temporary for a second
	idle() { ! ls "$T_TMP/usr1"/.btrace-tmp.* >/dev/null 2>&1; }
	for _ in $(seq 240); do
		idle && { sleep 1; idle && break; }
		sleep 0.5
	done
	st=$(ctl status 2>&1)
	written=$(grep -c "written to" "$LOG")
	merged=$(echo "$st" | sed -n 's/^dumps: .* \([0-9]*\) requests merged into a pending dump.*/\1/p')
	diag "30 SIGUSR1: $written dumps written, ${merged:-?} requests merged"
	# A signal sent again before the first was delivered is merged by the
	# kernel, out of anyone's sight: on a loaded machine a few may be.
	total=$((written - before + ${merged:-0}))
	[ -n "$merged" ] && [ "$merged" -gt 0 ] && [ "$total" -le 30 ] && [ "$total" -ge 25 ] &&
		ok "30 SIGUSR1 during a dump: $written written + $merged merged (of 30 sent), shown in status" ||
		not_ok "merged requests" "written $written (before $before); $(echo "$st" | grep '^dumps')"
	rec_stop "$REC_PID" INT 60
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

# ---- a recorder killed mid-dump: its temporary is removed by the next one ------------
KD=$T_TMP/killed
if rec_start "$LOG" -e all -m 64M -z 9 --no-final-dump -o "$KD" --ctl "$T_TMP/ctl.sock"; then
	build/bench/syscall_loop -t 1 -d 4 >/dev/null 2>&1
	kill -USR1 "$REC_PID"
	wait_for 30 bash -c "ls '$KD'/.btrace-* >/dev/null 2>&1"
	kill -KILL "$REC_PID"
	wait "$REC_PID" 2>/dev/null
	rm -f "$T_TMP/ctl.sock"
	left=$(find "$KD" -name '.btrace-*' | wc -l)
	name=$(find "$KD" -name '.btrace-*' -printf '%f\n' | head -1)
	# a live writer's temporary (this shell's sleep, right start time) stays
	sleep 60 &
	SL=$!
	T_PIDS+=("$SL")
	start=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$SL/stat")
	live=".btrace-tmp.$SL.$start.live.btd.AbCdEf"
	: >"$KD/$live"
	if rec_start "$LOG" -e sched --no-final-dump -o "$KD" --ctl "$T_TMP/ctl.sock"; then
		rest=$(find "$KD" -name '.btrace-*' -printf '%f\n')
		[ "$left" -eq 1 ] && [ "$rest" = "$live" ] && grep -q "removed 1 stale temporary" "$LOG" &&
			ok "temporary of a killed recorder ($name) removed at the next start, a live writer's kept" ||
			not_ok "stale temporaries" "left $left ($name), now: $rest; $(grep -i temporar "$LOG")"
		rec_stop "$REC_PID" INT 30
	else
		not_ok "recorder starts after a killed one" "$(cat "$LOG")"
	fi
	kill $SL 2>/dev/null
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

finish
