#!/usr/bin/env bash
# test_funcs.sh - function tracing (-finstrument-functions + libbtrace) with
# a real recorder: app_funcs (gcc, then clang) runs a known call tree (fib(20),
# a 16-thread pool, a usleep inside nap(), a thread ended by SYS_exit
# mid-batch); a dump while it runs and one after it exited: every call
# exactly once, balanced and nested, names right (after the exit too), the
# nap in order with the kernel's sched_switch (within 1 ms: a VM's vCPU is
# descheduled by its host), the records on its clock. BTRACE_FUNCS=0
# records nothing. report --functions and --hot on the known tree; the
# trigger app-func:nap>10ms fires exactly once per run (and pool_leaf>5s
# never); a hostile run garbling its own function batches: refused, counted,
# never delivered. Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "function tracing tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
CHECK=tests/kernel/check_funcs.py
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }

if ! rec_start "$LOG" -o "$OUT" -e sched --ctl "$CTL" --no-final-dump \
	--trigger 'app-func:nap>10ms,name=napfn,limit=1ms' --trigger 'app-func:pool_leaf>5s,name=leaffn'; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# run_one NAME BINARY: both dumps of one run
run_one() {
	local n=$1 bin=$2 log=$T_TMP/$1.log
	"$bin" -f "$T_TMP/$n.att" -S "$T_TMP/$n.stop" >"$log" 2>&1 &
	local pid=$!
	T_PIDS+=("$pid")
	wait_for 30 grep -q phases-done "$log"
	diag "$n: $(grep -h 'attached after\|no recorder' "$log")"
	ctl dump -o "$T_TMP/$n-mid.btd" >/dev/null 2>&1
	touch "$T_TMP/$n.stop"
	wait "$pid"
	check "$n: exits 0" test $? -eq 0
	wait_for 10 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $pid [^ ]* exited'"
	ctl dump -o "$T_TMP/$n-after.btd" >/dev/null 2>&1
	"$BT" report "$T_TMP/$n-mid.btd" >"$T_TMP/$n-mid.txt" 2>&1
	"$BT" report "$T_TMP/$n-after.btd" >"$T_TMP/$n-after.txt" 2>&1
	check "$n: dump while it runs: every call once, nested, named, nap on the kernel's timeline" \
		python3 "$CHECK" "$T_TMP/$n-mid.txt" "$log" mid ||
		diag "$(cat "$log"; tail -30 "$LOG"; head -12 "$T_TMP/$n-mid.txt"; echo "lines naming fib: $(grep -c fib "$T_TMP/$n-mid.txt")"; "$BT" report --stats "$T_TMP/$n-mid.btd" | head -70)"
	check "$n: dump after it exited: the same, names from the mappings kept" \
		python3 "$CHECK" "$T_TMP/$n-after.txt" "$log" after
	check "$n: the exited app's dump says so" \
		sh -c "'$BT' report --stats '$T_TMP/$n-after.btd' | grep -q ' pid $pid (exited)'"
}

run_one gcc "$TB/app_funcs"

# convert: the call chart per thread (Perfetto "functions" tracks, JSON X),
# next to the kernel's view: nesting, fib(20) all there and 20 deep, the
# calls open at the dump's end (main, the tick thread) closed there, marked
"$BT" convert -o "$T_TMP/gcc-mid.pftrace" "$T_TMP/gcc-mid.btd" 2>"$T_TMP/conv.log"
"$BT" convert -f json -o "$T_TMP/gcc-mid.json" "$T_TMP/gcc-mid.btd" 2>>"$T_TMP/conv.log"
NOPEN=$(sed -n 's/.* \([0-9]*\) open at the dump.s end.*/\1/p' "$T_TMP/conv.log" | head -1)
check "convert: calls open at the dump's end counted ($NOPEN)" test "${NOPEN:-0}" -ge 2
if command -v protoc >/dev/null; then
	check "convert perfetto: call slices nest on each thread's functions track, open ones closed at the end" \
		python3 tests/perfetto/check_trace.py perfetto "$T_TMP/gcc-mid.pftrace" --func-open "$NOPEN"
fi
check "convert json: calls nest per thread, open ones last to the dump's end" \
	python3 tests/perfetto/check_trace.py json "$T_TMP/gcc-mid.json" --func-open "$NOPEN"
check "convert json: fib(20) as 21891 nested calls, 20 deep" python3 -c '
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("name") == "fib" and e.get("ph") == "X"]
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
st, deep = [], 0
for e in ev:
    while st and st[-1] <= e["ts"]:
        st.pop()
    st.append(e["ts"] + e["dur"])
    deep = max(deep, len(st))
print(len(ev), deep)
sys.exit(not (len(ev) == 21891 and deep == 20))' "$T_TMP/gcc-mid.json"

# report --functions / --hot on the gcc run (after it exited: every call complete)
PID=$(awk '/^fib/ {print $2}' "$T_TMP/gcc.log")
"$BT" report --functions -p "$PID" "$T_TMP/gcc-after.btd" >"$T_TMP/fn.txt" 2>&1
# calls NAME: the CALLS column of NAME's row
calls() { awk -v n="$1" '$1 == n {print $3}' "$T_TMP/fn.txt"; }
check "report --functions: fib 21891 calls, pool_leaf 1770, pool_work 16 ($(calls fib) $(calls pool_leaf) $(calls pool_work))" \
	test "$(calls fib) $(calls pool_leaf) $(calls pool_work)" = "21891 1770 16"
# A 20 ms usleep takes 20 ms or more: 30-40 ms under emulation (TCG).
check "report --functions: nap's total covers its 20 ms usleep, nap_thread's self time does not" \
	awk '$1 == "nap" && $4 ~ /^([2-9][0-9]|[1-9][0-9][0-9])\.[0-9]+ms$/ {a=1} $1 == "nap_thread" && $5 ~ /(ns|us)$/ {b=1} END {exit !(a && b)}' "$T_TMP/fn.txt"
# The recorder listened as the program started: main is traced from its
# entry (it was entered before the recorder before issue 36's early buffer).
check "report --functions: main traced from its entry, its one call paired ($(calls main))" \
	sh -c "[ '$(calls main)' = 1 ] && ! grep -q 'exits of calls entered before the window' '$T_TMP/fn.txt'"
# (--top 50: under TCG the 16 pool threads and run_all outlast the 20 ms nap)
"$BT" report --hot --top 50 -p "$PID" "$T_TMP/gcc-after.btd" >"$T_TMP/hot.txt" 2>&1
check "report --hot: the deepest chain is main > run_all > fib x20 (depth 22)" \
	sh -c "grep -A2 '#1 depth 22, tid $PID ' '$T_TMP/hot.txt' | grep -q '^      run_all '"
check "report --hot: a slowest chain is nap_thread > nap (20 ms)" \
	sh -c "grep -A1 '^    nap_thread ' '$T_TMP/hot.txt' | grep -Eq '^      nap  ([2-9][0-9]|[1-9][0-9][0-9])\.[0-9]+ms'"
check "report --hot: most self time is run_all's (it sleeps 50 ms)" \
	sh -c "grep -A2 '^most self time' '$T_TMP/hot.txt' | tail -1 | grep -q '^  run_all '"
# app-func:nap>10ms: one nap of 20 ms per run, nothing else watched is slow
wait_for 10 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'napfn: .* 1 hits'"
ST=$("$BT" ctl --ctl "$CTL" status)
check "app-func:nap>10ms fired exactly once for the run" grep -q "napfn: .* 1 hits, 1 dumps" <<<"$ST"
check "app-func:pool_leaf>5s never fired" grep -q "leaffn: .* 0 hits" <<<"$ST"
TD=$(grep -l "" "$OUT"/*.btd 2>/dev/null | head -1)
check "the trigger's dump says which call fired it" \
	sh -c "'$BT' report --stats '$TD' | grep -Eq 'napfn .* fired: app-func ([2-9][0-9]|[1-9][0-9][0-9])\.[0-9]+ ms > 10\.0 ms, tid [0-9]+ pid $PID'"
run_one clang "$TB/app_funcs_clang"

# BTRACE_FUNCS=0: attached, but no function records
BTRACE_FUNCS=0 "$TB/app_funcs" -f "$T_TMP/off.att" >"$T_TMP/off.log" 2>&1
check "BTRACE_FUNCS=0: runs and exits 0" test $? -eq 0
ctl dump -o "$T_TMP/off.btd" >/dev/null 2>&1
OFFPID=$(awk '/^fib/ {print $2}' "$T_TMP/off.log")
check "BTRACE_FUNCS=0: no function records" \
	sh -c "! '$BT' report -p '$OFFPID' '$T_TMP/off.btd' | grep -q 'func_entry'"

# a hostile program garbles its ended threads' function batches (count past
# the room, a long record cut off, a wrong room): refused, counted, never shown
"$TB/app_funcs" -f "$T_TMP/g.att" -g >"$T_TMP/g.log" 2>&1
GPID=$(awk '/^fib/ {print $2}' "$T_TMP/g.log")
ctl dump -o "$T_TMP/g.btd" >/dev/null 2>&1
check "hostile: it garbled batches ($(awk '/^garbled/ {print $2}' "$T_TMP/g.log"))" \
	sh -c "awk '/^garbled/ {exit !(\$2 > 0)}' '$T_TMP/g.log'"
GBAD=$("$BT" report --stats "$T_TMP/g.btd" | awk -v p="pid $GPID " 'index($0, p) {f=1} f && /blocks_bad/ {print $5; exit}')
check "hostile: its blocks are refused and counted ($GBAD bad)" test "${GBAD:-0}" -gt 0
"$BT" report -p "$GPID" "$T_TMP/g.btd" >"$T_TMP/g.txt" 2>&1
check "hostile: the dump reads, with its healthy records (fib)" grep -q "func_entry: *fib$" "$T_TMP/g.txt"
check "hostile: no garbled record delivered (no function at an address no function starts at)" \
	sh -c "! grep -Eq 'func_(entry|exit): +(0x|.*\+0x)' '$T_TMP/g.txt'"
check "hostile: report --functions counts what it refused" \
	sh -c "'$BT' report --functions -p '$GPID' '$T_TMP/g.btd' | grep -q '[1-9][0-9]* refused as malformed'"

# trigger spec errors
out=$("$BT" record --trigger 'app-func:nap' -d 1 2>&1)
check "app-func without a duration: clear error" grep -q "app-func needs a function and a duration" <<<"$out"

rec_stop "$REC_PID"
finish
