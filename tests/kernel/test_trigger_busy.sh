#!/usr/bin/env bash
# test_trigger_busy.sh - trigger dumps of a busy traced program hold the
# call that fired them (issue 36, item 2): app_funcs_spin calls a small
# function at full speed on one thread (the default buffer of a program
# with function records, 32 MiB: overwritten several times a second)
# under a load of 4 busy loops per CPU, while its main thread, 10 rounds:
# writes the instant "mark" (2k) and calls slow_call() (5 ms:
# app-func:slow_call>3ms fires), then writes "mark" (2k+1) and
# BTRACE_TRIGGER("stall") (app:stall fires). Every hit is counted; a hit
# that comes while two dumps wait merges into the second (a dump is
# written in seconds under load). Of the dumps, >= 90% hold the call that
# fired them (the slow_call, exit at the hit's time) or the instant written
# before the trigger, and >= 90% copied the application within 100 ms of
# the hit (the dump's window; its writing may be queued behind others).
# Before the copy at the hit, 0 of 7 held the call.
# Needs root; TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "busy trigger tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
ROUNDS=10
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50

if ! rec_start "$LOG" -o "$OUT" -e sched --ctl "$CTL" --no-final-dump \
	--trigger 'app-func:slow_call>3ms,name=slowfn,after=0,limit=1ms' \
	--trigger 'app:stall,name=stall,after=0,limit=1ms'; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

NB=$(( $(nproc) * 4 ))
LOADP=()
for _ in $(seq "$NB"); do
	sh -c 'while :; do :; done' &
	LOADP+=("$!")
	T_PIDS+=("$!")
done

W=$T_TMP/w.log
"$TB/app_funcs_spin" -r "$ROUNDS" -g 700 -s 300 >"$W" 2>&1 &
SP=$!
T_PIDS+=("$SP")
wait "$SP"
check "the workload ran its $ROUNDS rounds" test "$(grep -c '^stall ' "$W")" -eq "$ROUNDS"
TID=$(awk '/^spinning/ {print $2}' "$W")
# the dumps are written one after the other: wait until no hit is pending
# "  NAME: COND, H hits, ...; D dumped + M merged + R rate-limited + X dropped + P pending"
pending() { "$BT" ctl --ctl "$CTL" status 2>/dev/null | sed -n 's/^  \(slowfn\|stall\): .* + \([0-9]*\) pending$/\2/p' | awk '{s += $1} END {print s + 0}'; }
for _ in $(seq 120); do
	[ "$(pending)" -eq 0 ] && break
	sleep 1
done
sleep 1
"$BT" ctl --ctl "$CTL" status >"$T_TMP/status" 2>&1
kill "${LOADP[@]}" 2>/dev/null

# For each dump: its trigger, its hit's time, and what it holds.
held_slow=0 held_stall=0 fast_slow=0 fast_stall=0 nslow=0 nstall=0
AFTERS=$T_TMP/afters # each dump's hit -> copy, ms
: >"$AFTERS"
for f in "$OUT"/*.btd; do
	[ -f "$f" ] || continue
	st=$("$BT" report --stats "$f" 2>/dev/null)
	name=$(sed -n 's/^trigger: *\([a-z]*\) (.*/\1/p' <<<"$st" | head -1)
	ev=$(sed -n 's/^ *event at \([0-9.]*\).*/\1/p' <<<"$st" | head -1)
	# "(X ms after the trigger's hit, ...)" of its line in the log
	line=$(grep "written to $f (" "$LOG")
	after=$(sed -n 's/.*applications (\([0-9.]*\) ms after the trigger.s hit.*/\1/p' <<<"$line")
	split=$(sed -n 's/.*applications ([0-9.]* ms after the trigger.s hit: \([^;]*\);.*/\1/p' <<<"$line")
	echo "${after:-999}" >>"$AFTERS"
	case "$name" in
	slowfn)
		nslow=$((nslow + 1))
		# the round whose slow_call ended at the hit (its exit: within 2 ms)
		read -r t0 t1 <<<"$(awk -v e="$ev" '$1 == "slow" && ($4 / 1e9 - e < 0.002 && e - $4 / 1e9 < 0.002) {printf "%.6f %.6f\n", $3 / 1e9 - 0.001, $4 / 1e9 + 0.001}' "$W")"
		got=$("$BT" report --functions -p "$TID" --time "@$t0..@$t1" "$f" 2>/dev/null | awk '$1 == "slow_call" && $4 ~ /ms$/ && $4 + 0 >= 3 {print $3}')
		[ "${got:-0}" = 1 ] && held_slow=$((held_slow + 1))
		awk -v x="${after:-999}" 'BEGIN { exit !(x + 0 <= 100) }' && fast_slow=$((fast_slow + 1))
		diag "slowfn dump $(basename "$f"): hit at $ev, slow_call ${t0:-?}..${t1:-?} held: ${got:-no}; applications copied ${after:-?} ms after the hit ($split)"
		;;
	stall)
		nstall=$((nstall + 1))
		# the round whose trigger came last before the hit
		read -r k tk <<<"$(awk -v e="$ev" '$1 == "stall" && $3 / 1e9 <= e + 0.000001 {k = $2; t = $3 / 1e9} END {if (k != "") printf "%d %.6f\n", k, t}' "$W")"
		want=$(( ${k:-0} * 2 + 1 ))
		got=$("$BT" report -p "$TID" -e app_instant --time "@$(awk -v t="${tk:-0}" 'BEGIN {printf "%.6f", t - 0.002}')..@$ev" "$f" 2>/dev/null |
			grep -c "app_instant: mark arg1=$want\$")
		[ "${got:-0}" -ge 1 ] && held_stall=$((held_stall + 1))
		awk -v x="${after:-999}" 'BEGIN { exit !(x + 0 <= 100) }' && fast_stall=$((fast_stall + 1))
		diag "stall dump $(basename "$f"): hit at $ev (round ${k:-?}), mark $want held: ${got:-0}; applications copied ${after:-?} ms after the hit ($split)"
		;;
	esac
done
# hits "H" and how they ended, per trigger
hits() { sed -n "s/^  $1: .*, \([0-9]*\) hits, .*; \([0-9]*\) dumped + \([0-9]*\) merged + .*/\1 \2 \3/p" "$T_TMP/status"; }
# a copy begun late names what held the application table
diag "$(grep '^apps lock:' "$T_TMP/status")"
check "ctl status names the application table's longest hold" grep -q '^apps lock: held at most [0-9.]* ms (' "$T_TMP/status"
diag "slowfn: hits, dumped, merged: $(hits slowfn); stall: $(hits stall) (a hit that comes while two dumps wait merges into the second)"
# the hit -> copy (the dump's start) over the dumps: median and p90
diag "hit -> application copy over $(wc -l <"$AFTERS") dumps: $(sort -n "$AFTERS" | awk '{v[NR] = $1} END {if (NR) printf "median %.1f ms, p90 %.1f ms, max %.1f ms", v[int((NR + 1) / 2)], v[int(NR * 0.9 + 0.999)], v[NR]}') (load $(cut -d' ' -f1 /proc/loadavg))"
[ -n "${KEEP_LOG:-}" ] && cp "$LOG" "$KEEP_LOG"
check "every hit counted: $ROUNDS of each trigger" test "$(hits slowfn | cut -d' ' -f1) $(hits stall | cut -d' ' -f1)" = "$ROUNDS $ROUNDS"
n=$((nslow + nstall))
# 9 of 10, scaled to the dumps written (merged hits have none of their own)
need=$(( n - n / 10 ))
check "trigger dumps: >= 90% hold the call or instant that fired them ($((held_slow + held_stall)) of $n: app-func $held_slow of $nslow, app $held_stall of $nstall)" \
	test "$n" -ge 4 -a $((held_slow + held_stall)) -ge "$need"
# one late copy allowed below 10 dumps (9 of 10; a machine far above the
# load asked for stretches a wakeup now and then)
late=$(( n / 10 > 1 ? n / 10 : 1 ))
check "trigger dumps: >= 90% took the application within 100 ms of the hit ($((fast_slow + fast_stall)) of $n, $late late allowed)" \
	test "$n" -ge 4 -a $((fast_slow + fast_stall)) -ge $((n - late))
rec_stop "$REC_PID"
finish
