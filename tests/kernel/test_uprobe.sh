#!/usr/bin/env bash
# test_uprobe.sh - user-space probes end to end on the real kernel, through
# the command line: `btrace-bpf record -p PID -u SPEC -U SPEC --uargs N`,
# then `btrace-bpf report` and `report --functions` on the dump.
#
# The target is build/tests/uprobe_target (tests/workloads/uprobe_target.c): it
# prints "ready PID", waits for SIGUSR1, runs a known workload in 2 threads
# and exits. Counts below are that workload's.
#
# Needs root. Env (set by tests/run.sh): BTRACE_BPF (the tool), TEST_BIN.
# Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
BT=${BTRACE_BPF:-$PWD/build/btrace-bpf}
TB=${TEST_BIN:-$PWD/build/tests}
TARGET=$TB/uprobe_target
THREADS=2

n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); echo "not ok $n - $*"; }
check() { # name cmd...
	local name=$1
	shift
	if "$@"; then ok "$name"; else nok "$name"; fi
}
eq() { # name got want
	if [ "$2" = "$3" ]; then ok "$1"; else nok "$1 (got '$2', want '$3')"; fi
}
skip_all() {
	echo "ok 1 - uprobe CLI # SKIP $*"
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "not root"
[ -x "$BT" ] || skip_all "no $BT (make tool)"
[ -x "$TARGET" ] || skip_all "no $TARGET (make tests)"
"$BT" record --help 2>&1 | grep -q -- '--uargs' || skip_all "record has no -u/-U/--uargs options yet"

tmp=$(mktemp -d /tmp/bt-uprobe-test.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# start_target ARGS...: sets TPID (waits for "ready")
start_target() {
	local out=$tmp/target.$RANDOM.out i
	TOUT=$out
	"$TARGET" "$@" >"$out" 2>&1 &
	TPID=$!
	pids+=("$TPID")
	for i in $(seq 100); do
		grep -q '^ready' "$out" && return 0
		sleep 0.05
	done
	echo "# target did not start: $(cat "$out")"
	return 1
}

# start_record DIR ARGS...: sets RPID, RLOG (waits until recording)
start_record() {
	local dir=$1 i
	shift
	RLOG=$tmp/record.$RANDOM.log
	"$BT" record -o "$dir" "$@" 2>"$RLOG" &
	RPID=$!
	pids+=("$RPID")
	for i in $(seq 200); do
		grep -q 'recording (pid' "$RLOG" && return 0
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "# record did not start:"
	sed 's/^/#   /' "$RLOG"
	return 1
}

# stop_record DIR: SIGINT, wait; sets RRC and DUMP (the newest dump)
stop_record() {
	kill -INT "$RPID" 2>/dev/null
	wait "$RPID"
	RRC=$?
	DUMP=$(ls -t "$1"/*.btd 2>/dev/null | head -1)
}

# ---- 1. attach to a running process by pid ---------------------------------------
d1=$tmp/traces1
if start_target && start_record "$d1" -e sched -p "$TPID" \
	-u bt_add -u 'bt_add%return' -u bt_args6 -u bt_fib -u 'bt_fib%return' \
	-u 'bt_sleep_us%return' -u 'foo::baz' -u '_ZN3foo3barEi' -u 'foo::bar(long)%return' \
	-u libc:malloc -u 'libc:malloc%return' -U 'uprobe_target:btrace_test:tick'; then
	ok "record attached to running pid $TPID"
	kill -USR1 "$TPID"
	wait "$TPID"
	eq "target ran its workload and exited" "$?" 0
	sleep 0.3
	check "recording goes on after the target exited" kill -0 "$RPID"
	stop_record "$d1"
	eq "record exits 0" "$RRC" 0
	check "final dump written" test -s "$DUMP"
	"$BT" report "$DUMP" >"$tmp/r1.txt" 2>"$tmp/r1.err"
	eq "report exits 0" "$?" 0

	c() { grep -c -- "$1" "$tmp/r1.txt"; }
	eq "bt_add entries" "$(c ': uprobe: bt_add ')" $((THREADS * 50))
	eq "bt_add returns" "$(c ': uretprobe: bt_add ')" $((THREADS * 50))
	# In order per thread: entry i has (i, 1000+i), its return 1000+2i, right after it.
	bad=$(awk '
		/: uprobe: bt_add / || /: uretprobe: bt_add / {
			match($0, /-[0-9]+ +\[/); tid = substr($0, RSTART + 1, RLENGTH - 1); sub(/ +\[/, "", tid)
			if ($0 ~ /: uprobe: /) {
				i = n[tid]++
				want = sprintf("arg1=0x%x arg2=0x%x ", i, 1000 + i)
				if (index($0, want) == 0 || open[tid]) bad++
				open[tid] = 1
			} else {
				i = r[tid]++
				if (index($0, sprintf("ret=0x%x ", 1000 + 2 * i)) == 0 || !open[tid]) bad++
				open[tid] = 0
			}
		}
		END { print bad + 0 }' "$tmp/r1.txt")
	eq "bt_add arguments and return values in order per thread" "$bad" 0
	eq "6 arguments" "$(c 'bt_args6 (uprobe_target) arg1=0x1 arg2=0x2 arg3=0x3 arg4=0x4 arg5=0x5 arg6=0x6$')" $THREADS
	eq "recursive bt_fib entries" "$(c ': uprobe: bt_fib ')" $((THREADS * 15))
	eq "recursive bt_fib returns, all timed" "$(grep ': uretprobe: bt_fib ' "$tmp/r1.txt" | grep -c 'duration=')" \
		$((THREADS * 15))
	eq "outermost bt_fib returns fib(6)" "$(c ': uretprobe: bt_fib ret=0x8 ')" $THREADS
	slow=$(grep ': uretprobe: bt_sleep_us ret=0x7d0 ' "$tmp/r1.txt" |
		sed -n 's/.*duration=\([0-9]*\)\..*/\1/p' | awk '$1 >= 2000' | wc -l)
	eq "bt_sleep_us%return alone: durations >= 2 ms" "$slow" $((THREADS * 3))
	eq "C++ demangled foo::baz" "$(c ': uprobe: foo::baz(int) ')" $((THREADS * 7))
	eq "C++ mangled _ZN3foo3barEi" "$(c ': uprobe: foo::bar(int) ')" $((THREADS * 3))
	eq "C++ overload by signature, return values" "$(grep ': uretprobe: foo::bar(long) ' "$tmp/r1.txt" |
		grep -c 'ret=0x[2-5] ')" $((THREADS * 4))
	eq "libc malloc(4242) entries" "$(c ': uprobe: malloc (libc.so.6) arg1=0x1092 ')" $((THREADS * 9))
	eq "libc malloc returns match entries" "$(c ': uretprobe: malloc ')" "$(c ': uprobe: malloc ')"
	eq "USDT btrace_test:tick" "$(c ': usdt: btrace_test:tick ')" $((THREADS * 20))
	eq "USDT arguments (19, 361)" "$(c 'tick (uprobe_target) arg1=0x13 arg2=0x169$')" $THREADS
	eq "no events of other processes (pid filter)" \
		"$("$BT" report -p "$TPID" "$DUMP" 2>/dev/null | grep -cE ': (uprobe|uretprobe|usdt): ')" \
		"$(grep -cE ': (uprobe|uretprobe|usdt): ' "$tmp/r1.txt")"

	"$BT" report --functions "$DUMP" >"$tmp/f1.txt" 2>&1
	eq "report --functions exits 0" "$?" 0
	sed 's/^/# /' "$tmp/f1.txt"
	row() { awk -v f="$1" '$1 == f' "$tmp/f1.txt"; }
	eq "functions: bt_add calls, returns, latencies" "$(row bt_add | awk '{ print $4, $5, $6 }')" \
		"$((THREADS * 50)) $((THREADS * 50)) $((THREADS * 50))"
	eq "functions: bt_sleep_us latency >= 2 ms" "$(row bt_sleep_us | awk '{ print $4, $6, ($7 ~ /ms$/ && $7 + 0 >= 2) }')" \
		"$((THREADS * 3)) $((THREADS * 3)) 1"
	eq "functions: the USDT probe" "$(row btrace_test:tick | awk '{ print $5 }')" $((THREADS * 20))
	check "functions: says the target ended" grep -q "process $TPID ended" "$tmp/f1.txt"
	eq "functions: rows per process (pid, comm)" "$(row bt_add | awk '{ print $3, $NF }')" "$TPID uprobe_target"
	check "functions: the window the counts cover" grep -qE '^window: +the counts cover ' "$tmp/f1.txt"
	check "functions: complete, or every loss named" grep -qE '^(complete|lower bounds): ' "$tmp/f1.txt"
	"$BT" report --functions -p 1 "$DUMP" >"$tmp/f1p.txt" 2>&1
	eq "functions: -p honoured (no call by pid 1)" "$(awk '$3 ~ /^[0-9]+$/' "$tmp/f1p.txt" | wc -l)" 0
else
	nok "record attached to running pid"
	[ -f "${RLOG:-/dev/null}" ] && sed 's/^/#   /' "$RLOG"
fi

# ---- 1b. -p TID: a thread id means its process --------------------------------------
# The helper thread exists when record starts and exits before any call: every
# call of the other threads is counted, and recording goes on after it.
d1b=$tmp/traces1b
if start_target --helper && HTID=$(sed -n 's/^helper //p' "$TOUT") && [ -n "$HTID" ] &&
	start_record "$d1b" -e sched -p "$HTID" -u bt_add -u 'bt_fib%return'; then
	check "-p TID: says it traces the thread's process" \
		grep -q -- "-p $HTID is thread $HTID (uprobe_target) of process $TPID (uprobe_target): tracing the process" "$RLOG"
	kill -USR1 "$TPID"
	wait "$TPID"
	sleep 0.3
	check "-p TID: recording goes on after the process exited" kill -0 "$RPID"
	stop_record "$d1b"
	"$BT" report "$DUMP" >"$tmp/r1b.txt" 2>/dev/null
	eq "-p TID: every bt_add call of the process after the thread exited" \
		"$(grep -c ': uprobe: bt_add ' "$tmp/r1b.txt")" $((THREADS * 50))
	eq "-p TID: every bt_fib return" "$(grep -c ': uretprobe: bt_fib ' "$tmp/r1b.txt")" $((THREADS * 15))
	eq "-p TID: events carry the process id" "$("$BT" report -p "$TPID" "$DUMP" 2>/dev/null |
		grep -c ': uprobe: bt_add ')" $((THREADS * 50))
	"$BT" report --functions "$DUMP" >"$tmp/f1b.txt" 2>&1
	check "-p TID: the probe table names the process" grep -q "process $TPID ended" "$tmp/f1b.txt"
else
	nok "record -p TID attached"
	[ -f "${RLOG:-/dev/null}" ] && sed 's/^/#   /' "$RLOG"
fi

# ---- 2. no pid: attach to the binary, then start it ------------------------------
d2=$tmp/traces2
if start_record "$d2" -e sched -u "$TARGET:bt_add" --uargs 2; then
	ok "record attached to $TARGET without a pid"
	start_target --go
	wait "$TPID"
	eq "target started after attach ran" "$?" 0
	stop_record "$d2"
	eq "record exits 0" "$RRC" 0
	"$BT" report -p "$TPID" "$DUMP" >"$tmp/r2.txt" 2>/dev/null
	eq "calls of the process started later" "$(grep -c ': uprobe: bt_add ' "$tmp/r2.txt")" $((THREADS * 50))
	eq "--uargs 2: two arguments" "$(grep ': uprobe: bt_add ' "$tmp/r2.txt" | grep -c 'arg2=0x[0-9a-f]*$')" \
		$((THREADS * 50))
else
	nok "record attached without a pid"
fi

# ---- 2b. no pid: a program name is found on PATH, before libraries of that stem ---
# "elf" is also libelf.so.1 (the library directories, record's own maps).
mkdir -p "$tmp/pbin"
cp "$TARGET" "$tmp/pbin/elf-1.0"
ln -s elf-1.0 "$tmp/pbin/elf"
d2b=$tmp/traces2b
if PATH=$tmp/pbin:$PATH start_record "$d2b" -e sched -u elf:bt_add; then
	check "the file chosen for the probe is printed: the program on PATH, symlink followed" \
		grep -qF -- "-u 'elf:bt_add': bt_add in $(realpath "$tmp/pbin/elf-1.0") at file offset 0x" "$RLOG"
	grep -- "-u 'elf" "$RLOG" | sed 's/^/# /'
	PATH=$tmp/pbin:$PATH elf --go >/dev/null &
	ep=$!
	wait "$ep"
	stop_record "$d2b"
	eq "calls of the program found on PATH" \
		"$("$BT" report -p "$ep" "$DUMP" 2>/dev/null | grep -c ': uprobe: bt_add ')" $((THREADS * 50))
else
	nok "record -u elf:bt_add with elf on PATH"
fi

# ---- 3. a stripped binary: the symbol is refused, its address is accepted ---------
cp "$TARGET" "$tmp/stripped_target"
strip "$tmp/stripped_target"
addr=$(nm "$TARGET" | awk '$3 == "bt_add" { print "0x" $1 }' | sed 's/0x0*/0x/')
"$BT" record -o "$tmp/traces3x" -e sched -u "$tmp/stripped_target:bt_add" -d 5s 2>"$tmp/e3.txt"
rc=$?
check "stripped binary without the symbol: fails, says stripped, suggests an address" \
	test "$rc" -ne 0 -a "$(wc -l <"$tmp/e3.txt")" -eq 1 -a -n "$(grep -l 'stripped' "$tmp/e3.txt")" \
	-a -n "$(grep -l '0xADDRESS' "$tmp/e3.txt")"
sed 's/^/# /' "$tmp/e3.txt"
d3=$tmp/traces3
if start_record "$d3" -e sched -u "$tmp/stripped_target:$addr"; then
	"$tmp/stripped_target" --go >/dev/null &
	sp=$!
	wait "$sp"
	stop_record "$d3"
	eq "stripped binary probed by address ($addr)" \
		"$("$BT" report -p "$sp" "$DUMP" 2>/dev/null | grep -c ": uprobe: $addr ")" $((THREADS * 50))
else
	nok "record attached to $tmp/stripped_target:$addr"
fi

# ---- 3b. C++ (g++): clones are not overloads, templates without return type -----
CXX_T=$TB/cxx_target
d3c=$tmp/traces3c
if start_record "$d3c" -e sched -u "$CXX_T:work" -u "$CXX_T:tmax<long>%return" -u "$CXX_T:tmax<int>(int, int)"; then
	grep -E 'probe|attach' "$RLOG" | sed 's/^/# /'
	"$CXX_T" >/dev/null &
	cp=$!
	wait "$cp"
	stop_record "$d3c"
	"$BT" report -p "$cp" "$DUMP" >"$tmp/r3c.txt" 2>/dev/null
	eq "C++ work: the function, not its clones" "$(grep -c ': uprobe: work(int) ' "$tmp/r3c.txt")" 1
	eq "C++ tmax<long>%return: its return value" "$(grep -c ': uretprobe: long tmax<long>(long, long) ret=0x3 ' \
		"$tmp/r3c.txt")" 1
	eq "C++ tmax<int>(int, int): its arguments" "$(grep -c ': uprobe: int tmax<int>(int, int) .*arg1=0x4 arg2=0x5' \
		"$tmp/r3c.txt")" 1
else
	nok "record attached to $CXX_T's work, tmax<long>, tmax<int>(int, int)"
fi

# ---- 4. errors: one clear line each, non-zero exit, nothing recorded -------------
printf '#!/bin/sh\necho hi\n' >"$tmp/notelf"
chmod +x "$tmp/notelf"
start_target || true
err_case() { # name pattern args...
	local name=$1 pat=$2 dir=$tmp/traces.err.$RANDOM rc lines
	shift 2
	timeout 30 "$BT" record -o "$dir" -e sched -d 5s "$@" >/dev/null 2>"$tmp/err.txt"
	rc=$?
	lines=$(wc -l <"$tmp/err.txt")
	if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$tmp/err.txt" &&
		! ls "$dir"/*.btd >/dev/null 2>&1; then
		ok "error: $name"
	else
		nok "error: $name (exit $rc, $lines lines)"
	fi
	sed 's/^/# /' "$tmp/err.txt"
}
err_case "no such pid" "no process with pid" -p 2147483000 -u bt_add
err_case "binary not ELF" "not an ELF file" -u "$tmp/notelf:main"
err_case "symbol not found, closest names" "not found.*bt_add" -p "$TPID" -u bt_ad
err_case "C++ overloads" "overloaded.*foo::bar\(int\).*foo::bar\(long\)" -p "$TPID" -u 'foo::bar'
err_case "no such library in the process" "maps no library" -p "$TPID" -u 'libnothere:f'
err_case "offset past the function" "outside" -p "$TPID" -u 'bt_add+0x10000'
err_case "offset inside an instruction, nearest boundaries named" \
	"inside an instruction of bt_ident.*bt_ident\+0x0 and bt_ident\+0x[34]" -p "$TPID" -u 'bt_ident+1'
err_case "not probeable (nothing attached half-way)" "cannot probe" -p "$TPID" -u bt_add -u bt_unprobeable
err_case "USDT probe not found" "no USDT probe.*btrace_test:tick" -p "$TPID" -U 'uprobe_target:btrace_test:tock'
err_case "bad spec" "%return" -p "$TPID" -u 'bt_add%entry'
# A message is never cut: a target under a 1,600-byte path, an ambiguous name.
long=$tmp
for l in a b c d e f g h; do long=$long/$(printf "$l%.0s" $(seq 199)); done
mkdir -p "$long" && cp "$TARGET" "$long/uprobe_target"
timeout 30 "$BT" record -o "$tmp/traces.long" -e sched -d 5s -u "$long/uprobe_target:foo::bar" >/dev/null 2>"$tmp/err.txt"
rc=$?
check "error: a long message is whole (the full path, the advice at its end)" \
	test "$rc" -ne 0 -a "$(wc -l <"$tmp/err.txt")" -eq 1 -a "$(wc -c <"$tmp/err.txt")" -gt 3300 \
	-a -n "$(grep -lF "'$long/uprobe_target:foo::bar': 'foo::bar' is overloaded in $long/uprobe_target" "$tmp/err.txt")" \
	-a -n "$(grep -l 'write the full signature or the mangled name$' "$tmp/err.txt")"
echo "# $(wc -c <"$tmp/err.txt") bytes: $(cut -c1-60 "$tmp/err.txt")...$(tail -c 60 "$tmp/err.txt")"
if command -v setpriv >/dev/null; then
	mkdir -p "$tmp/nobody" && chmod 777 "$tmp/nobody"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$BT" record -o "$tmp/nobody/t" -e sched -p "$TPID" -u libc:malloc -d 5s >/dev/null 2>"$tmp/err.txt"
	rc=$?
	check "error: permission denied" test "$rc" -ne 0 -a "$(wc -l <"$tmp/err.txt")" -eq 1 \
		-a -n "$(grep -liE 'root|permission|not permitted' "$tmp/err.txt")"
	sed 's/^/# /' "$tmp/err.txt"
fi
kill -USR1 "$TPID" 2>/dev/null
wait "$TPID" 2>/dev/null
exit 0
