#!/usr/bin/env bash
# test_handover.sh - the history outlives the recorder (issue 42). This
# script holds the buffer's memfd, as systemd's fd store would (it runs
# itself again under a python3 that made the memfd as fd 7, inherited by
# every recorder it starts with --resume-fd 7):
#   1. under load (an unmodified Debian dd | cat pipeline and pingpong),
#      a `ctl dump`, then kill -9 of the recorder at once; the next
#      recorder started on the same memfd dumps the history first
#      (reason recorder-died) within 5 s of its start, holding >= 95% of
#      the events the dump before the kill held, with task names;
#   2. a clean stop (SIGINT, its final dump) and a start: reason restart,
#      >= 95% of the final dump's events; the same under load with another
#      binary (a package installed again, then restarted): reason upgrade;
#      and `ctl upgrade`: the same process runs the new file at its path on
#      the memfd (reason upgrade, >= 95%, no final dump), refused without one;
#   3. a corrupted memfd (header, then data blocks) is refused or salvaged,
#      the recorder records on;
#   4. a recorder stopped (SIGSTOP) while a script makes 3000 calls, then
#      killed: the next start counts exactly what its rings held (its
#      pinned counters), in the log, report --stats and the JSON export;
#      a later dump holds the calls before and after, that count its gap;
#   after a restart, an upgrade and a kill the window continues: a later
#   dump holds the history before it, the restart said once, until this
#   recorder has written the buffer's size;
# and ctl status says what the hand-over kept; a second recorder handed
# the memfd a live one writes refuses it.
# Needs root; TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
if [ "${HO_FD_HELD:-}" != 1 ]; then
	export HO_FD_HELD=1
	exec python3 -c 'import os, sys
fd = os.memfd_create("btrace-buffer", 0)
os.dup2(fd, 7)
os.set_inheritable(7, True)
os.execvp("bash", ["bash", sys.argv[1]])' "$0"
fi
. tests/lib.sh

need_root "hand-over tests"

# The programs' counters are pinned in a BPF file system of this test's
# own (the host's /sys/fs/bpf may not be mounted; the unit uses that one).
mkdir -p "$T_TMP/bpffs"
if ! mount -t bpf bpf "$T_TMP/bpffs"; then
	not_ok "a BPF file system mounts for the pins"
	finish
	exit 1
fi
trap 'umount "$T_TMP/bpffs" 2>/dev/null; t_cleanup' EXIT
export BTRACE_PIN_DIR=$T_TMP/bpffs/btrace-bpf
pins() { find "$BTRACE_PIN_DIR" -name 'handover-*' 2>/dev/null | wc -l; }

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
# --cold-tier 0: only the raw part is handed over (docs/manual.md), and
# the >= 95% below compares the handed dump with the recorder's own
REC=(-e sched -o "$OUT" --ctl "$CTL" --buffer-size 8M --cold-tier 0 --resume-fd 7)
events() { "$BT" report --stats "$1" 2>/dev/null | awk '$1 == "events:" {print $2}'; }
# a dump's events less those of a previous recorder it holds (a window
# continued across a restart: only the recorder's own buffer is handed on)
own_events() {
	"$BT" report --stats "$1" 2>/dev/null |
		awk '$1 == "events:" {e = $2} /^  restart: the window continues/ {sub(/.*\): /, ""); p = $1} END {print e - p}'
}
ntasks() { "$BT" report --stats "$1" 2>/dev/null | awk '$1 == "tables:" {print $2}'; }
reason() { "$BT" report --stats "$1" 2>/dev/null | sed -n 's/.*reason \([a-z-]*\),.*/\1/p'; }
# the newest such line (a log of a recorder that ran an upgrade has two)
handed_path() { sed -n 's/.*history before this start .* written to \(.*\.btd\) in .*/\1/p' "$1" | tail -1; }
# check_continued REASON AFTER BEFORE: dump AFTER, by the recorder started
# after the stop, holds >= 95% of the events of dump BEFORE (taken right
# before the stop) besides its own, the restart said once, and its latest
# continuous window starts where recording resumed
check_continued() {
	local why=$1 after=$2 before=$3 st a b
	st=$("$BT" report --stats "$after" 2>&1)
	a=$(awk '$1 == "events:" {print $2}' <<<"$st")
	b=$(own_events "$before")
	diag "$why: $(grep -A1 '^  restart:' <<<"$st" | tr -s ' ' | tr '\n' ' ')"
	check "$why: the window continues: a later dump holds the history too (${a:-0} events, ${b:-0} before the stop)" \
		test "${a:-0}" -ge $(( ${b:-1} * 95 / 100 )) -a "${b:-0}" -gt 0
	check "$why: the restart is said once, with its reason" \
		test "$(grep -c "^  restart: the window continues across a restart (reason $why)" <<<"$st")" = 1
	check "$why: its latest continuous window starts where recording resumed" \
		grep -q 'starts where this recorder resumed recording' <<<"$st"
}
# check_handed REASON LOG BEFORE MIN: the start logging LOG dumped the
# handed history for REASON, >= 95% of the events of dump BEFORE (taken
# right before the stop), which holds more than MIN
check_handed() {
	local why=$1 log=$2 before=$3 min=$4 p f r
	wait_for 10 grep -q "history before this start" "$log"
	p=$(handed_path "$log")
	diag "$(grep 'history before' "$log")"
	check "$why: its reason is $why" test "$(reason "$p")" = "$why"
	f=$(own_events "$before")
	r=$(events "$p")
	check "$why: the handed dump holds >= 95% of the events of its recorder the dump right before the stop held (${r:-0} of ${f:-0})" \
		test "${r:-0}" -ge $(( ${f:-1} * 95 / 100 )) -a "${f:-0}" -gt "$min"
}

load_start() {
	# $! is cat: killed, it takes dd with it (SIGPIPE at its next write).
	# Through sh -c, sh was killed and its dd and cat, now init's, ran on
	# for the rest of the suite (two CPUs' worth in CI).
	dd if=/dev/zero bs=64 count=200000000 status=none | cat >/dev/null &
	LOAD1=$!
	"$TB/pingpong" -n 100000000 -a bt-hoping -b bt-hopong >/dev/null 2>&1 &
	LOAD2=$!
	T_PIDS+=("$LOAD1" "$LOAD2")
}
load_stop() {
	kill "$LOAD1" "$LOAD2" 2>/dev/null
	wait "$LOAD1" "$LOAD2" 2>/dev/null
}

# ---- 1. kill -9 under load ------------------------------------------------
if ! rec_start "$T_TMP/r1.log" "${REC[@]}" --no-final-dump; then
	not_ok "recorder 1 starts" "$(cat "$T_TMP/r1.log")"
	finish
	exit 1
fi
load_start
sleep 3 # the 8 MiB buffer wraps under this load
ctl dump -o "$T_TMP/before-kill.btd" >/dev/null 2>&1
kill -KILL "$REC_PID"
wait "$REC_PID" 2>/dev/null
# Started by hand, not rec_start: the dump's time is when its line
# appears, which may be before the programs are loaded ("recording").
: >"$T_TMP/r2.log"
t0=$(date +%s%N)
"$BT" record "${REC[@]}" --no-final-dump 2>"$T_TMP/r2.log" &
REC_PID=$!
T_PIDS+=("$REC_PID")
wait_for 10 grep -q "history before this start" "$T_TMP/r2.log"
t1=$(date +%s%N)
if ! wait_for 30 grep -q "recording (pid $REC_PID)" "$T_TMP/r2.log"; then
	not_ok "recorder 2 starts on the handed memfd" "$(cat "$T_TMP/r2.log")"
	load_stop
	finish
	exit 1
fi
load_stop
A=$(events "$T_TMP/before-kill.btd")
P=$(handed_path "$T_TMP/r2.log")
B=$(events "$P")
diag "kill -9: the dump before the kill held ${A:-?} events, the handed buffer's dump ${B:-?}, written $(( (t1 - t0) / 1000000 )) ms after the start"
diag "$(grep 'history before' "$T_TMP/r2.log")"
check "kill -9: the next start dumps the handed history" test -n "$P" -a -f "$P"
check "kill -9: its reason is recorder-died" test "$(reason "$P")" = recorder-died
check "kill -9: it holds >= 95% of the events the buffer held at the kill (${B:-0} of ${A:-0})" \
	test "${B:-0}" -ge $(( ${A:-1} * 95 / 100 )) -a "${A:-0}" -gt 10000
check "kill -9: written within 5 s of the restart" test $(( (t1 - t0) / 1000000 )) -le 5000
check "kill -9: it names the tasks (the saved task table: $(ntasks "$P") tasks)" test "$(ntasks "$P")" -gt 10
check "kill -9: report reads it whole" sh -c "'$BT' report '$P' | grep -q 'bt-hoping\|dd-'"
# the stack table is saved into the memory every 2 s: the handed dump's
# stacks are named, not all reclaimed
check "kill -9: its stacks are named from the saved table ($(grep -o 'its stack table saved[^;]*' "$T_TMP/r2.log" | tail -1))" \
	sh -c "'$BT' report --stats '$P' | grep -q '^  call stacks: [1-9][0-9]* distinct' && '$BT' report --profile '$P' | grep -q '^process .*samples'"

check "kill -9: the events its rings held at the kill are counted" \
	grep -q "events its programs emitted after the newest kept are lost" "$T_TMP/r2.log"
check "kill -9: ctl status says what the hand-over kept" sh -c "'$BT' ctl --ctl '$CTL' status | grep -q '^handover: on; the history before this start (recorder-died)'"
# A second recorder handed the memfd the first still writes: refused.
timeout 60 "$BT" record -e sched -o "$T_TMP/other" --no-ctl --no-final-dump -m 4M --resume-fd 7 -d 1 2>"$T_TMP/other.log"
check "in use: a second recorder on the same memfd refuses it, the first records on" \
	sh -c "grep -q 'in use by recorder $REC_PID, still running' '$T_TMP/other.log' && kill -0 $REC_PID"

# ---- 2. clean stop, then a start ----------------------------------------------
sleep 1
# What the buffer holds at the stop: a dump right before it (the
# recorders here write no final dump).
ctl dump -o "$T_TMP/before-stop.btd" >/dev/null 2>&1
rec_stop "$REC_PID" INT
check "clean stop: its pinned counters are removed (nothing is left in its rings)" test "$(pins)" -eq 0
rec_start "$T_TMP/r3.log" "${REC[@]}" --no-final-dump
check_handed restart "$T_TMP/r3.log" "$T_TMP/before-stop.btd" 0
# the window continues: a dump of the recorder after it holds the history too
ctl dump -o "$T_TMP/after-restart.btd" >/dev/null 2>&1
check_continued restart "$T_TMP/after-restart.btd" "$T_TMP/before-stop.btd"

# ---- 2b. an upgrade: another binary (a package installed again) restarted ------
load_start
sleep 2
ctl dump -o "$T_TMP/before-upgrade.btd" >/dev/null 2>&1
rec_stop "$REC_PID" INT
load_stop
cp "$BT" "$T_TMP/btrace-bpf" # a new file: what dpkg installs, then the unit restarts
BT_OLD=$BT
BT=$T_TMP/btrace-bpf
rec_start "$T_TMP/r3u.log" "${REC[@]}" --no-final-dump
BT=$BT_OLD
check_handed upgrade "$T_TMP/r3u.log" "$T_TMP/before-upgrade.btd" 10000
ctl dump -o "$T_TMP/after-upgrade.btd" >/dev/null 2>&1
check_continued upgrade "$T_TMP/after-upgrade.btd" "$T_TMP/before-upgrade.btd"
# once this recorder has written the buffer's size, its window is its own
load_start
sleep 4
ctl dump -o "$T_TMP/after-wrap.btd" >/dev/null 2>&1
load_stop
check "upgrade: once this recorder has used the buffer's size, its dumps hold its own events only" \
	sh -c "'$BT' report --stats '$T_TMP/after-wrap.btd' | grep -q '^events:' && ! '$BT' report --stats '$T_TMP/after-wrap.btd' | grep -q '^  restart:' && grep -q 'past the window now' '$T_TMP/r3u.log'"
rec_stop "$REC_PID" INT

# ---- 2c. ctl upgrade: the same process runs the new binary on its buffer ------------
cp "$BT" "$T_TMP/bt-x"
BT_OLD=$BT
BT=$T_TMP/bt-x
if rec_start "$T_TMP/r3x.log" "${REC[@]}" --no-final-dump; then
	XPID=$REC_PID
	load_start
	sleep 2
	ctl dump -o "$T_TMP/before-exec.btd" >/dev/null 2>&1
	cp "$BT_OLD" "$T_TMP/bt-x.new" && mv "$T_TMP/bt-x.new" "$T_TMP/bt-x" # as dpkg puts a new file in place
	check "ctl upgrade: accepted" sh -c "'$BT_OLD' ctl --ctl '$CTL' upgrade | grep -q 'runs $T_TMP/bt-x again on its buffer'"
	wait_for 30 grep -q "history before this start (upgrade of recorder $XPID)" "$T_TMP/r3x.log"
	wait_until 30 '[ "$(grep -c "recording (pid $XPID)" "$T_TMP/r3x.log")" -ge 2 ]'
	load_stop
	check "ctl upgrade: the same process records on (pid $XPID)" sh -c "kill -0 $XPID && '$BT_OLD' ctl --ctl '$CTL' status | grep -q '^recorder pid $XPID'"
	check "ctl upgrade: it ran the binary at its path (the new file)" grep -q "upgrading: running $T_TMP/bt-x on the same buffer" "$T_TMP/r3x.log"
	check_handed upgrade "$T_TMP/r3x.log" "$T_TMP/before-exec.btd" 10000
	check "ctl upgrade: no final dump before it (the handed one is the history)" \
		test "$(grep -c 'written to' "$T_TMP/r3x.log")" -eq "$(grep -c 'written to .*(ctl\|history before this start' "$T_TMP/r3x.log")"
	rec_stop "$XPID" INT
else
	not_ok "recorder for ctl upgrade starts" "$(cat "$T_TMP/r3x.log")"
fi
BT=$BT_OLD
# without a memfd (no systemd, no --resume-fd) there is nothing to hand over: refused
if rec_start "$T_TMP/r3n.log" -e sched -o "$OUT" --ctl "$CTL" --buffer-size 4M --no-final-dump; then
	out=$("$BT" ctl --ctl "$CTL" upgrade 2>&1)
	rc=$?
	check "ctl upgrade without a memfd: refused, said why, the recorder records on (rc $rc)" \
		sh -c "[ $rc = 1 ] && echo '$out' | grep -q 'not in a memory file that outlives the recorder' && kill -0 $REC_PID"
	rec_stop "$REC_PID" INT
fi

# ---- 3. corrupted memfd ----------------------------------------------------------
# Every 4 KiB page past the header and metadata, a burst of garbage: blocks
# whose entries or positions are wrong, state slots whose sums fail.
python3 - <<'EOF'
import os, random
random.seed(42)
fd = 7
size = os.fstat(fd).st_size
for off in range(8192, min(size, 24 << 20), 4096):
    os.pwrite(fd, bytes(random.getrandbits(8) for _ in range(24)), off + random.randrange(0, 4000))
EOF
rec_start "$T_TMP/r4.log" "${REC[@]}" --no-final-dump
check "corrupted data: the recorder records on" kill -0 "$REC_PID"
diag "$(grep -E 'history before|refused' "$T_TMP/r4.log")"
P4=$(handed_path "$T_TMP/r4.log")
check "corrupted data: salvaged into a dump report reads" sh -c "test -n '$P4' && '$BT' report --stats '$P4' >/dev/null"
rec_stop "$REC_PID" INT
printf 'garbage!' | dd of=/proc/self/fd/7 bs=1 seek=0 conv=notrunc status=none
rec_start "$T_TMP/r5.log" "${REC[@]}" --no-final-dump
check "corrupted header: refused, said, and the recorder records on" \
	sh -c "kill -0 $REC_PID && grep -q 'handed buffer is refused: no btrace-bpf buffer header' '$T_TMP/r5.log'"
rec_stop "$REC_PID" INT

# ---- 4. what the rings held at a kill -9, counted exactly --------------------------
# A python3 makes 100 getppid() calls while the recorder drains them, then,
# with the recorder stopped (SIGSTOP: its programs still emit into the
# rings), 3000 more; then kill -9. The next start counts the events after
# the newest its buffer kept: the 6000 of the burst and the script's few
# other calls (its exit among them), and the identity submitted = kept +
# counted holds (nothing was overwritten or dropped).
mkfifo "$T_TMP/go1" "$T_TMP/go2" "$T_TMP/go3"
taskset -c 0 python3 -c 'import os, sys, time
open(sys.argv[1]).read()
for _ in range(100): os.getppid()
open(sys.argv[2]).read()
for _ in range(3000): os.getppid()
open(sys.argv[3], "w").close()
open(sys.argv[4]).read()
for _ in range(500): os.getppid()
open(sys.argv[5], "w").close()
time.sleep(120)' "$T_TMP/go1" "$T_TMP/go2" "$T_TMP/burst-done" "$T_TMP/go3" "$T_TMP/burst2-done" &
BURST=$!
T_PIDS+=("$BURST")
REC4=(-e syscalls -p "$BURST" -o "$OUT" --ctl "$CTL" --buffer-size 8M --cold-tier 0 --resume-fd 7 --no-final-dump)
if rec_start "$T_TMP/r6.log" "${REC4[@]}"; then
	echo >"$T_TMP/go1"
	sleep 1 # drained: the newest kept event is the 100th call's
	check "recording: its counters are pinned for the next start" test "$(pins)" -eq 1
	kill -STOP "$REC_PID"
	# Every thread stopped before the burst: a drain still running stored
	# it once (CI: 6248 events kept, 0 counted lost).
	wait_for 5 sh -c "! grep -h '^State:' /proc/$REC_PID/task/*/status | grep -qv 'stopped'"
	echo >"$T_TMP/go2"
	wait_for 20 test -e "$T_TMP/burst-done"
	kill -KILL "$REC_PID"
	wait "$REC_PID" 2>/dev/null
	rec_start "$T_TMP/r7.log" "${REC4[@]}"
	wait_for 10 grep -q "history before this start" "$T_TMP/r7.log"
	P7=$(handed_path "$T_TMP/r7.log")
	diag "$(grep 'history before' "$T_TMP/r7.log")"
	N7=$(sed -n 's/.*; \([0-9]*\) events its programs emitted after the newest kept.*/\1/p' "$T_TMP/r7.log")
	check "kill -9 of a stopped recorder: the 6000 events of the burst and its few others are counted (${N7:-none})" \
		test "${N7:-0}" -ge 6000 -a "${N7:-0}" -le 6100
	ST7=$("$BT" report --stats "$P7" 2>&1)
	K7=$(echo "$ST7" | awk '$1 == "events:" {print $2}')
	E7=$(echo "$ST7" | sed -n 's/^  ring-buffer events submitted: \([0-9]*\)$/\1/p')
	check "its dump: events submitted = kept + counted after the newest ($E7 = $K7 + $N7)" \
		test -n "$E7" -a "${E7:-0}" = "$(( ${K7:-0} + ${N7:-0} ))" -a "${K7:-0}" -ge 200
	check "report --stats says it" grep -q "^  at its end: $N7 events its programs emitted" <<<"$ST7"
	"$BT" convert -q -f json -o "$T_TMP/h.json" "$P7" 2>/dev/null
	check "the JSON export carries it as loss.handed.after_newest" grep -q "\"loss.handed.after_newest\": *$N7" "$T_TMP/h.json"
	check "the pin it read is removed; its own is made" test "$(pins)" -eq 1
	# The window continues across the kill: a dump after 500 more calls
	# holds the calls before it, the 500, and between them exactly the
	# counted events as its one seq gap.
	echo >"$T_TMP/go3"
	wait_for 20 test -e "$T_TMP/burst2-done"
	sleep 1
	ctl dump -o "$T_TMP/after-kill.btd" >/dev/null 2>&1
	ST8=$("$BT" report --stats "$T_TMP/after-kill.btd" 2>&1)
	diag "$(grep -E '^  seq gaps|^  restart|^    not recording' <<<"$ST8" | tr -s ' ')"
	check "after the kill: a later dump holds the calls before it and the 500 after ($(awk '$1 == "events:" {print $2}' <<<"$ST8") events)" \
		test "$(awk '$1 == "events:" {print $2}' <<<"$ST8")" -ge $(( ${K7:-0} + 1000 ))
	check "after the kill: what the rings held is its seq gap, exactly (${N7:-?} events missing)" \
		grep -q "^  seq gaps: [0-9]* gaps, ${N7:-x} events missing" <<<"$ST8"
	check "after the kill: the restart says the same count" \
		grep -q "; ${N7:-x} events its programs emitted after it were lost" <<<"$ST8"
	# its seqs, renumbered below this recorder's first, read negative
	# in the CPU table: "-6930..1234", not "4294960366..1234"
	check "after the kill: the previous recorder's seqs read negative, none wrapped" \
		sh -c "grep -qE '^[0-9]+ .* -[0-9]+\.\.[0-9]+$' && ! grep -qE '(^|[ .])4[0-9]{9}(\.|$)'" <<<"$ST8"
	"$BT" convert -q -f json -o "$T_TMP/k.json" "$T_TMP/after-kill.btd" 2>/dev/null
	check "after the kill: the JSON export carries it as loss.restart.*" \
		sh -c "grep -q '\"loss.restart.gaps\": *1' '$T_TMP/k.json' && grep -q '\"loss.restart.lost\": *${N7:-x}' '$T_TMP/k.json'"
	rec_stop "$REC_PID" INT
else
	not_ok "recorder 6 starts" "$(cat "$T_TMP/r6.log")"
fi
kill "$BURST" 2>/dev/null
finish
