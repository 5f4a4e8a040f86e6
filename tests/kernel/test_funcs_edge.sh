#!/usr/bin/env bash
# test_funcs_edge.sh - function tracing where calls do not simply return
# (issue 36, items 5 and 6), with a real recorder:
# - longjmp: app_funcs_edge jumps from jmp_deep (under jmp_inner) back into
#   jmp_outer, which then calls after_jmp (2 ms). The library closes the
#   frames the jump left at the next call (its frame is not below theirs):
#   after_jmp is jmp_inner's sibling, not its child, and jmp_inner's total
#   does not hold after_jmp's 2 ms (it did: 20 ms of 20 calls).
# - dlopen: a library built with the hooks is loaded after registration,
#   its functions called 1000 times, and the process exits before any
#   dump: a dump taken after it exited names them (it showed 0x7f...
#   addresses: the mappings were read only at registration).
# - a crash: a thread dies of SIGSEGV three calls deep while main waits
#   for it; the crash trigger's dump, converted to Perfetto and JSON, ends
#   every open call at its thread's sched_process_exit (issue 38, item 2).
# Needs root; TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "function tracing edge tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }

if ! rec_start "$LOG" -o "$OUT" -e sched --ctl "$CTL" --no-final-dump; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# ---- longjmp ----
"$TB/app_funcs_edge" jmp 20 >"$T_TMP/jmp.log" 2>&1
check "jmp: the workload ran traced" grep -q '^attached ' "$T_TMP/jmp.log"
JP=$(awk '/^attached/ {print $2}' "$T_TMP/jmp.log")
wait_for 10 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $JP [^ ]* exited'"
ctl dump -o "$T_TMP/jmp.btd" >/dev/null 2>&1
"$BT" report --functions -p "$JP" "$T_TMP/jmp.btd" >"$T_TMP/jmp.txt" 2>&1
# ns NAME COLUMN: a duration of NAME's row in ns (TOTAL is column 4)
ns() {
	awk -v n="$1" -v c="$2" '$1 == n { v = $c; m = 1
		if (v ~ /us$/) m = 1e3; else if (v ~ /ms$/) m = 1e6; else if (v ~ /s$/ && v !~ /ns$/) m = 1e9
		sub(/[a-z]+$/, "", v); printf "%d\n", v * m }' "$T_TMP/jmp.txt"
}
calls() { awk -v n="$1" '$1 == n {print $3}' "$T_TMP/jmp.txt"; }
INNER=$(ns jmp_inner 4)
AFTER=$(ns after_jmp 4)
diag "jmp: jmp_inner total ${INNER:-?} ns, after_jmp total ${AFTER:-?} ns"
check "jmp: 20 calls each of jmp_outer, jmp_inner, jmp_deep, after_jmp, all paired" \
	test "$(calls jmp_outer) $(calls jmp_inner) $(calls jmp_deep) $(calls after_jmp)" = "20 20 20 20"
check "jmp: jmp_inner's total does not hold after_jmp's sleeps (${INNER:-?} ns < ${AFTER:-?} ns / 10)" \
	test -n "$INNER" -a -n "$AFTER" -a "${INNER:-0}" -lt $(( ${AFTER:-0} / 10 ))
# in the call listing, after_jmp is at jmp_inner's depth (a sibling)
"$BT" report -p "$JP" "$T_TMP/jmp.btd" 2>/dev/null | grep -E 'func_entry: +(jmp_inner|after_jmp)$' |
	awk '{ sub(/.*func_entry:/, ""); match($0, /^ +/); print RLENGTH, $1 }' | sort -u >"$T_TMP/jmp.depth"
check "jmp: after_jmp is listed at jmp_inner's depth, not under it ($(tr '\n' ' ' <"$T_TMP/jmp.depth"))" \
	sh -c "[ \$(cut -d' ' -f1 '$T_TMP/jmp.depth' | sort -u | wc -l) -eq 1 ] && [ \$(wc -l <'$T_TMP/jmp.depth') -eq 2 ]"

# ---- dlopen ----
rm -f "$T_TMP/dl.stop"
"$TB/app_funcs_edge" dlopen "$TB/funcs_plugin.so" 1000 "$T_TMP/dl.stop" >"$T_TMP/dl.log" 2>&1 &
DLP=$!
T_PIDS+=("$DLP")
wait_for 30 grep -q '^loaded' "$T_TMP/dl.log"
sleep 0.5 # the library looks for loaded objects every 100 ms
touch "$T_TMP/dl.stop"
wait "$DLP"
check "dlopen: the workload ran traced and exited 0" sh -c "[ $? -eq 0 ] && grep -q '^attached ' '$T_TMP/dl.log'"
DP=$(awk '/^attached/ {print $2}' "$T_TMP/dl.log")
wait_for 10 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $DP [^ ]* exited'"
diag "dlopen: $(ctl status 2>/dev/null | grep "^app $DP ")"
ctl dump -o "$T_TMP/dl.btd" >/dev/null 2>&1
"$BT" report --functions -p "$DP" "$T_TMP/dl.btd" >"$T_TMP/dl.txt" 2>&1
check "dlopen: after the process exited, the library's functions are named (plugin_work 1001, plugin_leaf 2002)" \
	sh -c "grep -q '^plugin_work  *$DP  *1001 ' '$T_TMP/dl.txt' && grep -q '^plugin_leaf  *$DP  *2002 ' '$T_TMP/dl.txt'" ||
	diag "$(head -8 "$T_TMP/dl.txt")"
check "dlopen: no function of it shown as an address" sh -c "! grep -q '^0x' '$T_TMP/dl.txt'"

rec_stop "$REC_PID"

# ---- a crash: the trigger's dump, its calls closed at the threads' death ----
# (issue 38, item 2: a crashed thread's calls were drawn past its exit to
# the window's end, in the dumps crash triggers exist for)
CR=$T_TMP/crash
if rec_start "$T_TMP/rec_crash.log" -o "$CR" -e sched --ctl "$CTL" --no-final-dump \
	--trigger 'crash,comm=app_funcs_edge,name=cr,after=300ms'; then
	"$TB/app_funcs_edge" crash >"$T_TMP/crash.log" 2>&1
	check "crash: the workload ran traced and died of SIGSEGV" \
		sh -c "[ $? -eq 139 ] && grep -q '^attached ' '$T_TMP/crash.log'"
	wait_for 30 sh -c "ls '$CR'/*.btd.json"
	f=$(ls "$CR"/*.btd 2>/dev/null | head -1)
	rec_stop "$REC_PID"
	if [ -n "$f" ]; then
		"$BT" convert -o "$T_TMP/crash.pftrace" "$f" 2>"$T_TMP/crash_conv.log"
		"$BT" convert -f json -o "$T_TMP/crash.json" "$f" 2>>"$T_TMP/crash_conv.log"
		# open at the death: crash_outer, crash_mid, crash_leaf on the
		# crasher; wait_crasher, run_crash and main on main (main's entry
		# is recorded when the recorder took the process as it started)
		nopen=$(("$BT" report "$f" 2>/dev/null | grep -qE 'func_entry: +main$') && echo 6 || echo 5)
		for fmt in perfetto json; do
			ext=$([ $fmt = json ] && echo json || echo pftrace)
			check "crash: $fmt: the $nopen calls open at the death end at their threads' exit, marked" \
				python3 tests/perfetto/check_trace.py "$fmt" "$T_TMP/crash.$ext" --closed-at-exit "$nopen" --closed-at-last 0
		done
		check "crash: the dump was the trigger's" sh -c "'$BT' report --stats '$f' | grep -q 'fired: crash SIGSEGV'"
	else
		not_ok "crash: a trigger dump was written" "$(tail -5 "$T_TMP/rec_crash.log")"
	fi
else
	not_ok "recorder with a crash trigger starts" "$(cat "$T_TMP/rec_crash.log")"
fi
finish
