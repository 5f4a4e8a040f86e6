#!/usr/bin/env bash
# test_record.sh - `btrace-bpf record` on the real kernel: a known workload
# (tests/workloads/pingpong.c) is recorded and the dumps are checked with
# `btrace-bpf report`; then signals, filters and the error paths a user hits.
# Needs root; prints TAP lines (tests/run.sh counts them).
# "cond && ok ... || not_ok ...": ok always succeeds.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

ROUNDS=2000
NCPU=$(nproc)
PIN=$((NCPU - 1)) # both pingpong threads on one CPU: every round switches

need_root "record tests"
if [ ! -x "$BT" ] || [ ! -x "$TB/pingpong" ]; then
	not_ok "build: $BT and $TB/pingpong exist" "run make first"
	finish
	exit 1
fi

# Path of dump N announced in a recorder log ("dump N written to PATH (...)").
dump_path() { sed -n "s/^btrace-bpf record: dump $2 written to \([^ ]*\) .*/\1/p" "$1"; }
count() { grep -c -e "$1" "$2"; }
# Newest event time (seconds column) of a report.
last_ts() { awk '$0 ~ /\]/ { for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { t = $(i + 1); sub(":", "", t) } } END { print t }' "$1"; }
# Event times of each CPU never decrease in report order.
ts_ordered_per_cpu() {
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { c = $i; t = $(i + 1); sub(":", "", t);
		if ((c in last) && t + 0 < last[c] + 0) { print "CPU " c ": " t " after " last[c]; bad = 1 } last[c] = t; break } }
	     END { exit bad }' "$1"
}
# Files other than finished dumps and their manifests in a directory
# (temporary files left behind).
stray_files() { find "$1" -mindepth 1 ! -name '*.btd' ! -name '*.btd.json'; }

# ---- the workload, recorded; dump on SIGUSR1 -------------------------------
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
if ! rec_start "$LOG" -o "$OUT" -m 256M; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi
ok "recorder starts and prints its pid"
check "startup line tells how to dump" grep -q "Dump with: kill -USR1 $REC_PID" "$LOG"

PP=$("$TB/pingpong" -n $ROUNDS -c $PIN -a bt-ping -b bt-pong | head -1)
PING=$(echo "$PP" | sed -n 's/.*ping_tid=\([0-9]*\).*/\1/p')
PONG=$(echo "$PP" | sed -n 's/.*pong_tid=\([0-9]*\).*/\1/p')
diag "workload 1: $PP"
kill -USR1 "$REC_PID"
if wait_for 30 grep -q "dump 1 written to" "$LOG"; then
	ok "SIGUSR1 writes dump 1"
else
	not_ok "SIGUSR1 writes dump 1" "$(cat "$LOG")"
fi
D1=$(dump_path "$LOG" 1)
R1=$T_TMP/r1.txt S1=$T_TMP/s1.txt
"$BT" report "$D1" >"$R1" 2>&1
check "report reads dump 1" test -s "$R1"
"$BT" report --stats "$D1" >"$S1" 2>&1
n=$(count "sched_switch: prev_comm=bt-ping prev_pid=$PING " "$R1")
[ "$n" -ge $ROUNDS ] && ok "dump 1: $n sched_switch from bt-ping ($ROUNDS rounds)" ||
	not_ok "dump 1: sched_switch from bt-ping: $n < $ROUNDS"
n=$(count "sched_switch: prev_comm=bt-pong prev_pid=$PONG " "$R1")
[ "$n" -ge $ROUNDS ] && ok "dump 1: $n sched_switch from bt-pong" ||
	not_ok "dump 1: sched_switch from bt-pong: $n < $ROUNDS"
n=$(count "next_comm=bt-ping next_pid=$PING " "$R1")
[ "$n" -ge $ROUNDS ] && ok "dump 1: $n sched_switch to bt-ping" ||
	not_ok "dump 1: sched_switch to bt-ping: $n < $ROUNDS"
w1=$(count "sched_wakeup: comm=bt-ping pid=$PING " "$R1")
w2=$(count "sched_wakeup: comm=bt-pong pid=$PONG " "$R1")
# Each round one thread at least sleeps in read() and is woken by the other.
[ "$w1" -ge 1 ] && [ "$w2" -ge 1 ] && [ $((w1 + w2)) -ge $ROUNDS ] &&
	ok "dump 1: sched_wakeup of bt-ping ($w1) and bt-pong ($w2)" ||
	not_ok "dump 1: sched_wakeup of bt-ping ($w1) + bt-pong ($w2) < $ROUNDS"
check "dump 1: the threads are named in the leading column" grep -q "^ *bt-ping-$PING  *\[" "$R1"
check "dump 1: task_rename to bt-ping recorded" grep -q "task_rename: pid=$PING .*newcomm=bt-ping" "$R1"
check "dump 1: no ring-buffer reservation failure" grep -q "ring-buffer reservation failures: 0$" "$S1"
check "dump 1: per-CPU sequences have no gap" grep -q "seq gaps: 0 gaps, 0 events missing, 0 duplicates" "$S1"
if grep -q "LOST" "$R1"; then not_ok "dump 1: report shows no LOST events" "$(grep LOST "$R1" | head)"; else ok "dump 1: report shows no LOST events"; fi
# Whether a dump's buffer wrapped (only under heavy load from outside the test).
wrapped() { grep -q "older ones were overwritten" "$1"; }
if wrapped "$S1"; then
	skip "dump 1: per-CPU sequences start at 0" "buffer wrapped under load from outside the test"
else
	check "dump 1: per-CPU sequences start at 0 (nothing overwritten yet)" grep -q "starts at the first event" "$S1"
fi
check "dump 1: timestamps ordered per CPU" ts_ordered_per_cpu "$R1"
# The drain sizes each batch to the rest of its block (drain.c:
# batch_start): padding is the tail no record fits, under 2% of the blocks
# (whole 256-byte batches left ~5%). A block closed early (the dump closes
# a core's open block, BTrace's closing) pads its rest by design: half a
# block each (its mean) is allowed on top. With events this small, dump 1
# has ~49 blocks and one closed block decides the check: measured 1.7-4.5
# KB of padding, and 6.5-8.5 KB with batches not sized to the tail.
read -r nb nclosed npad <<<"$(sed -n 's/^ *buffer blocks: \([0-9]*\) used, \([0-9]*\) closed early,.* \([0-9]*\) padding bytes.*/\1 \2 \3/p' "$S1")"
diag "$(grep 'buffer blocks' "$S1")"
if [ "${nb:-0}" -ge 8 ] && [ "$((npad * 50))" -lt "$((nb * 4096 + ${nclosed:-0} * 2048 * 50))" ]; then
	ok "dump 1: padding $npad bytes in $nb blocks, $nclosed closed early (under 2% and half a block each)"
else
	not_ok "dump 1: padding ${npad:-?} bytes in ${nb:-?} blocks, ${nclosed:-?} closed early (2% or more beside those, or too few blocks)" "$(grep 'buffer blocks' "$S1")"
fi
check "dump 1: reason is signal" grep -q "reason signal, dump #1" "$S1"

# ---- more work, a second dump holds the newer events ----------------------
PP2=$("$TB/pingpong" -n 500 -c $PIN -a bt-ping2 -b bt-pong2 | head -1)
PING2=$(echo "$PP2" | sed -n 's/.*ping_tid=\([0-9]*\).*/\1/p')
diag "workload 2: $PP2"
kill -USR1 "$REC_PID"
if wait_for 30 grep -q "dump 2 written to" "$LOG"; then
	ok "second SIGUSR1 writes dump 2"
else
	not_ok "second SIGUSR1 writes dump 2" "$(cat "$LOG")"
fi
D2=$(dump_path "$LOG" 2)
R2=$T_TMP/r2.txt S2=$T_TMP/s2.txt
"$BT" report "$D2" >"$R2" 2>&1
"$BT" report --stats "$D2" >"$S2" 2>&1
n=$(count "sched_switch: prev_comm=bt-ping2 prev_pid=$PING2 " "$R2")
[ "$n" -ge 500 ] && ok "dump 2: $n sched_switch from bt-ping2" || not_ok "dump 2: sched_switch from bt-ping2: $n < 500"
if grep -q "bt-ping2" "$R1"; then not_ok "dump 1 does not hold the later workload"; else ok "dump 1 does not hold the later workload"; fi
t1=$(last_ts "$R1") t2=$(last_ts "$R2")
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b > a) }' && ok "dump 2 ends later than dump 1 ($t2 > $t1)" ||
	not_ok "dump 2 ends later than dump 1 ($t2 <= $t1)"
if wrapped "$S2"; then
	skip "dump 2: still holds workload 1" "buffer wrapped under load from outside the test"
else
	check "dump 2: still holds workload 1 (buffer not yet overwritten)" grep -q "prev_comm=bt-ping prev_pid=$PING " "$R2"
fi
check "dump 2: per-CPU sequences have no gap" grep -q "seq gaps: 0 gaps, 0 events missing, 0 duplicates" "$S2"
check "dump 2: says it may overlap dump 1" grep -q "may overlap dump #1" "$S2"

# ---- a storm of SIGUSR1: every dump written is valid -------------------------
for _ in $(seq 50); do kill -USR1 "$REC_PID"; done
sleep 1
"$TB/pingpong" -n 100 -c $PIN -a bt-last -b bt-last2 >/dev/null
rec_stop "$REC_PID" INT
[ "$REC_STATUS" -eq 0 ] && ok "SIGINT: recorder exits 0" || not_ok "SIGINT: recorder exits $REC_STATUS" "$(tail -5 "$LOG")"
ndumps=$(grep -c "written to" "$LOG")
nfiles=$(find "$OUT" -name '*.btd' | wc -l)
[ "$ndumps" -ge 4 ] && [ "$ndumps" -eq "$nfiles" ] && ok "storm: $ndumps dumps announced, $nfiles files" ||
	not_ok "storm: $ndumps dumps announced, $nfiles files (want >= 4, equal)" "$(cat "$LOG")"
bad=""
for f in "$OUT"/*.btd; do
	"$BT" report --stats "$f" >/dev/null 2>&1 || bad="$bad $f"
done
[ -z "$bad" ] && ok "storm: every dump file is valid" || not_ok "storm: invalid dumps:$bad"
check "storm: no dump failed" bash -c "! grep -q 'dump failed' '$LOG'"
st=$(stray_files "$OUT")
[ -z "$st" ] && ok "no temporary file left behind" || not_ok "no temporary file left behind" "$st"
DF=$(grep "(exit," "$LOG" | sed -n 's/^btrace-bpf record: dump [0-9]* written to \([^ ]*\) .*/\1/p')
if [ -n "$DF" ] && "$BT" report --stats "$DF" | grep -q "reason exit"; then
	ok "SIGINT writes a final dump"
else
	not_ok "SIGINT writes a final dump" "$(cat "$LOG")"
fi
# The README's command to read a dump, as printed, with many dumps in
# traces/: it reads the newest (the final one), not an error.
readme=$(sed -n 's/^build\/btrace-bpf report \(.*\) | less .*/\1/p' README.md)
mkdir -p "$T_TMP/readme" && ln -sfn "$OUT" "$T_TMP/readme/traces"
rm_out=$(cd "$T_TMP/readme" && eval "\"\$BT\" report --stats $readme" 2>&1)
[ -n "$readme" ] && grep -q "reason exit" <<<"$rm_out" && ok "the README's report command reads the newest of $nfiles dumps" ||
	not_ok "the README's report command ($readme)" "$(head -3 <<<"$rm_out")"
"$BT" report "$DF" >"$T_TMP/rf.txt" 2>&1
check "final dump holds the last events before SIGINT" grep -q "prev_comm=bt-last " "$T_TMP/rf.txt"
check "exit summary printed" grep -q "stopped: .* events recorded" "$LOG"

# ---- all groups, small buffer, SIGTERM ------------------------------------
OUT2=$T_TMP/out2 LOG2=$T_TMP/rec2.log
if rec_start "$LOG2" -o "$OUT2" -e all -m 8M -z 6; then
	"$TB/pingpong" -n 200 -c $PIN -a bt-sys -b bt-sys2 >/dev/null
	REC2=$REC_PID
	rec_stop "$REC_PID" TERM
	[ "$REC_STATUS" -eq 0 ] && ok "SIGTERM: recorder exits 0" || not_ok "SIGTERM: exit status $REC_STATUS" "$(cat "$LOG2")"
	F=$(find "$OUT2" -name '*.btd' | head -1)
	if [ -n "$F" ]; then
		"$BT" report "$F" >"$T_TMP/r3.txt" 2>&1
		check "-e all: sys_enter and sys_exit of the workload recorded" \
			bash -c "grep -q '^ *bt-sys-[0-9]* .*sys_enter' '$T_TMP/r3.txt' && grep -q '^ *bt-sys-[0-9]* .*sys_exit' '$T_TMP/r3.txt'"
		check "-e all: irq or softirq events recorded" grep -q "softirq_entry\|irq_handler_entry" "$T_TMP/r3.txt"
		"$BT" report -p "$REC2" -e syscalls "$F" >"$T_TMP/r3self.txt" 2>&1
		check "-e all: no syscall events of the recorder itself" \
			bash -c "! grep -q 'sys_e' '$T_TMP/r3self.txt'"
	else
		not_ok "SIGTERM writes a final dump" "$(cat "$LOG2")"
	fi
else
	not_ok "recorder starts with -e all" "$(cat "$LOG2")"
fi

# ---- --comm filter, --duration --------------------------------------------
OUT3=$T_TMP/out3 LOG3=$T_TMP/rec3.log
if rec_start "$LOG3" -o "$OUT3" --comm bt-fping --duration 3s; then
	"$TB/pingpong" -n 300 -c $PIN -a bt-fping -b bt-fpong >/dev/null
	if wait_for 20 bash -c "! kill -0 $REC_PID"; then
		ok "--duration: recorder stops by itself"
	else
		not_ok "--duration: recorder stops by itself"
	fi
	rec_stop "$REC_PID" INT 5
	F=$(find "$OUT3" -name '*.btd' | head -1)
	"$BT" report "$F" >"$T_TMP/r4.txt" 2>&1
	n=$(grep -c "sched_switch:" "$T_TMP/r4.txt")
	m=$(grep "sched_switch:" "$T_TMP/r4.txt" | grep -c "comm=bt-fping ")
	[ "$n" -ge 300 ] && [ "$n" -eq "$m" ] && ok "--comm: all $n sched_switch involve bt-fping" ||
		not_ok "--comm: $m of $n sched_switch involve bt-fping (want all, >= 300)" "$(grep "sched_switch:" "$T_TMP/r4.txt" | grep -v "comm=bt-fping " | head -5)"
	check "--comm: bt-fpong's switches to bt-fping are kept" grep -q "prev_comm=bt-fpong .*next_comm=bt-fping " "$T_TMP/r4.txt"
else
	not_ok "recorder starts with --comm" "$(cat "$LOG3")"
fi

# ---- --no-final-dump ----------------------------------------------------------
OUT4=$T_TMP/out4 LOG4=$T_TMP/rec4.log
if rec_start "$LOG4" -o "$OUT4" --no-final-dump -e sched; then
	rec_stop "$REC_PID" INT
	[ "$REC_STATUS" -eq 0 ] && [ -z "$(ls -A "$OUT4")" ] && ok "--no-final-dump: exits 0, writes nothing" ||
		not_ok "--no-final-dump: status $REC_STATUS, files: $(ls -A "$OUT4" | tr '\n' ' ')"
else
	not_ok "recorder starts with --no-final-dump" "$(cat "$LOG4")"
fi

# ---- a full disk: the dump fails cleanly, recording goes on ----------------
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	FD=$T_TMP/full FLOG=$T_TMP/full.log
	mkdir -p "$FD"
	# In a private mount namespace: a 256 KiB tmpfs, too small for a dump.
	out=$(unshare -m bash -c "
		mount -t tmpfs -o size=256k none '$FD' || exit 9
		'$BT' record -o '$FD' -z 0 -m 4M 2>'$FLOG' &
		p=\$!
		for i in \$(seq 200); do grep -q 'recording (pid' '$FLOG' && break; sleep 0.1; done
		'$TB/pingpong' -n 2000 -c $PIN -a bt-full >/dev/null
		kill -USR1 \$p
		for i in \$(seq 300); do grep -q 'dump skipped' '$FLOG' && break; sleep 0.1; done
		'$TB/pingpong' -n 100 -c $PIN -a bt-after-full >/dev/null
		sleep 0.5
		kill -0 \$p && echo alive-after-failed-dump
		kill -INT \$p; wait \$p; echo status=\$?
		echo files=\$(ls -A '$FD' | wc -l)
	" 2>&1)
	# Refused before writing (the free-space check); a dump that fails midway
	# is tests/unit/test_dump.c's (RLIMIT_FSIZE).
	check "full disk: the dump is skipped with a clear message" grep -q "signal dump skipped: not enough space in $FD: .*; recording continues" "$FLOG"
	check "full disk: recording continues after the failed dump" grep -q "alive-after-failed-dump" <<<"$out"
	check "full disk: no temporary file left behind" grep -q "files=0" <<<"$out"
	check "full disk: a failed final dump makes the exit status 1" grep -q "status=1" <<<"$out"
else
	skip "full disk" "no unshare -m"
fi

# ---- errors a user hits: one clear line, non-zero status, nothing started ----
# expect_error NAME STATUS PATTERN CMD...: CMD fails with STATUS, stderr matches PATTERN.
expect_error() {
	local name=$1 want=$2 pat=$3 out rc
	shift 3
	out=$(run_with_timeout 20 "$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq "$want" ] && echo "$out" | head -1 | grep -q -e "$pat"; then
		ok "$name"
	else
		not_ok "$name" "$(printf 'status %s (want %s), stderr:\n%s' "$rc" "$want" "$out")"
	fi
}
EO=$T_TMP/err-out
for s in 12Q 0 -5 99999999999999999999999 1.5G "" " 64M" 64MQ; do
	expect_error "bad size '-m $s' rejected" 2 "invalid --buffer-size '$s'" "$BT" record -m "$s" -o "$EO"
done
expect_error "bad --ring-size rejected" 2 "invalid --ring-size" "$BT" record --ring-size 3X -o "$EO"
expect_error "bad --compress rejected" 2 "invalid --compress" "$BT" record -z 10 -o "$EO"
expect_error "bad -e rejected" 2 "invalid --events 'sched,bogus'" "$BT" record -e sched,bogus -o "$EO"
expect_error "bad --duration rejected" 2 "invalid --duration" "$BT" record --duration 5x -o "$EO"
expect_error "bad --block-size rejected" 2 "invalid --block-size" "$BT" record -b 3000 -o "$EO"
expect_error "-p of no process rejected" 2 "no process with pid" "$BT" record -p 999999999 -o "$EO"
check "no output directory created by rejected options" test ! -e "$EO"
touch "$T_TMP/afile"
expect_error "output dir under a file: clear error" 2 "cannot create output directory .*-o DIR" \
	"$BT" record -o "$T_TMP/afile/traces"
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	mkdir -p "$T_TMP/ro"
	expect_error "read-only output dir: clear error" 2 "output directory .* is not writable.*-o DIR" \
		unshare -m bash -c "mount -t tmpfs -o ro none '$T_TMP/ro' && exec '$BT' record -o '$T_TMP/ro'"
	expect_error "kernel without BTF: clear error" 1 "no BTF.*CONFIG_DEBUG_INFO_BTF" \
		unshare -m bash -c "mount -t tmpfs none /sys/kernel/btf && exec '$BT' record -o '$T_TMP/nobtf'"
else
	skip "read-only output dir: clear error" "no unshare -m"
	skip "kernel without BTF: clear error" "no unshare -m"
fi
# Non-root: the binary must be reachable by uid 65534.
PUB=$(mktemp -d /tmp/btrace-pub.XXXXXX)
chmod 755 "$PUB"
cp "$BT" "$PUB/btrace-bpf"
if command -v setpriv >/dev/null; then
	expect_error "non-root: BPF not permitted, what to do" 1 "BPF not permitted: run as root, or grant CAP_BPF and CAP_PERFMON" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$PUB/btrace-bpf" record -o "$PUB/out"
else
	skip "non-root: BPF not permitted" "no setpriv"
fi
# Root of a user namespace has every capability there but may not load BPF:
# the load fails with EPERM.
if unshare -Ur true 2>/dev/null; then
	expect_error "BPF disabled (EPERM at load): clear error" 1 "BPF not permitted" \
		unshare -Ur "$PUB/btrace-bpf" record -o "$PUB/out2"
else
	skip "BPF disabled (EPERM at load): clear error" "no user namespaces"
fi
rm -rf "$PUB"

# ---- help ---------------------------------------------------------------------
check "record --help has examples" bash -c "'$BT' record --help | grep -q 'kill -USR1'"
check "--help lists record and report" bash -c "'$BT' --help | grep -q record && '$BT' --help | grep -q report"
expect_error "unknown command: clear error" 2 "unknown command 'recrod'" "$BT" recrod

finish
