#!/usr/bin/env bash
# test_ctl.sh - runtime control of a running recorder (`btrace-bpf ctl`):
# resize down and up during a workload with the dumps around each resize
# checked for unexplained gaps, resident memory after a shrink, status, dump
# -o, a trigger uprobe producing exactly one dump, dump rotation, overlapping
# dumps, ctl dump behind 20 idle connections, and every error path. Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "ctl tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
# Resident anonymous and shared memory (the buffer's kind), in kB: not the
# file pages the symbol cache maps (debug files, the page cache's to reclaim)
rss_kb() { awk '/^Rss(Anon|Shmem):/ { s += $2 } END { print s }' "/proc/$1/status"; }
# "latest continuous window: A .. B" and the newest event time of a dump.
window_start() { "$BT" report --stats "$1" | sed -n 's/^latest continuous window: *\([0-9.]*\) .*/\1/p'; }
last_event() { "$BT" report --stats "$1" | sed -n 's/^window: *[0-9.]* \.\. \([0-9.]*\).*/\1/p'; }
# seconds since the epoch, and seconds elapsed since such a stamp
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
seq_missing() { "$BT" report --stats "$1" | sed -n 's/^ *seq gaps: [0-9]* gaps, \([0-9]*\) events missing.*/\1/p'; }
rb_drops() { "$BT" report --stats "$1" | sed -n 's/^ *ring-buffer reservation failures: \([0-9]*\).*/\1/p'; }

# ---- resize during a workload ---------------------------------------------------
# A paced workload (up to 40k events/s, ~1.4 MB/s) filtered by name: the
# smallest buffer (8M) holds ~6 s, so a dump right after a resize must still
# reach back to the newest events of a dump taken right before it; a gap
# would be a loss caused by the resize. The pace is derived from the
# measured window: on a slow machine (emulation, a loaded host) where dumps
# and resizes take longer, the workload is slowed until 8M holds at least 10
# of those round trips, so the two dumps are always well inside the window.
# The workload under a name of its own: another syscall_loop on the machine
# (a benchmark) would add its events to the window.
WLBIN=$T_TMP/ctlwl$$
cp build/bench/syscall_loop "$WLBIN"
if ! rec_start "$LOG" -o "$OUT" -m 256M --max-size 512M --ctl "$CTL" -e syscalls --comm "$(basename "$WLBIN")"; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi
check "startup line names the control socket" grep -q "ctl --ctl $CTL" "$LOG"
"$WLBIN" -t 1 -r 20000 -d 60 >/dev/null 2>&1 &
WL=$!
sleep 1
ST=$(ctl status 2>&1)
echo "$ST" | grep -q "^buffer: 256 MiB (max 512 MiB)" && echo "$ST" | grep -q "latest continuous window:" &&
	echo "$ST" | grep -q "^ring-buffer drops:" && echo "$ST" | grep -q "^events: .*/s" &&
	ok "status: size, rate, latest continuous window, losses" || not_ok "status" "$ST"

RSS_BIG=$(rss_kb "$REC_PID")
# The buffer's raw part (prefaulted; the cold tier's part is touched as
# history fills it), in KiB: what a shrink must give back.
raw_kb() { awk '/^buffer: / { for (i = 1; i < NF; i++) if ($i == "part") { v = $(i + 1); u = $(i + 2) } }
	END { printf "%d", v * (u ~ /^GiB/ ? 1048576 : u ~ /^MiB/ ? 1024 : 1) }'; }
RAW_BIG=$(raw_kb <<<"$ST")
# The window 8M holds at this pace (from the buffer's fill over its window)
# and the time of one resize + dump round trip (a dump and a status here).
ST=$(ctl status 2>&1)
win=$(echo "$ST" | sed -n 's/^window: *\([0-9.]*\)s.*/\1/p')
blocks=$(echo "$ST" | sed -n 's/.* \([0-9]*\) blocks used.*/\1/p')
t0=$(now)
prev=$(ctl dump -o "$T_TMP/d0.btd" 2>&1)
ctl status >/dev/null 2>&1
trip=$(since "$t0")
[ "$prev" = "$T_TMP/d0.btd" ] && [ -s "$T_TMP/d0.btd" ] && ok "dump -o prints the path written" ||
	not_ok "dump -o" "$prev"
w8=$(awk -v w="${win:-0}" -v b="${blocks:-0}" 'BEGIN { printf "%.2f", (b > 0 ? w * 2048 / b : 0) }')
rate=$(awk -v w8="$w8" -v t="$trip" 'BEGIN { r = 20000; if (w8 > 0 && w8 < 10 * t) r = int(r * w8 / (10 * t)); print (r < 1000 ? 1000 : r) }')
diag "8M holds ${w8}s at 20000 syscalls/s; a resize + dump takes ~${trip}s here: workload at $rate syscalls/s"
if [ "$rate" -lt 20000 ]; then
	kill "$WL" 2>/dev/null
	wait "$WL" 2>/dev/null
	"$WLBIN" -t 1 -r "$rate" -d 60 >/dev/null 2>&1 &
	WL=$!
fi
gapfree=1
i=0
for size in 16M 128M 8M 512M 64M; do
	i=$((i + 1))
	before=$T_TMP/b$i.btd
	t0=$(now)
	ctl dump -o "$before" >/dev/null 2>&1 || { not_ok "dump before resize $size"; gapfree=0; continue; }
	r=$(ctl resize $size 2>&1) || { not_ok "resize $size" "$r"; gapfree=0; continue; }
	ctl dump -o "$T_TMP/d$i.btd" >/dev/null 2>&1 || { not_ok "dump after resize $size"; gapfree=0; continue; }
	took=$(since "$t0")
	# Nothing inside the kept window is lost: the newest events of the dump
	# taken before the resize are inside the continuous window after it.
	ws=$(window_start "$T_TMP/d$i.btd")
	le=$(last_event "$before")
	diag "resize $size: window reaches $(awk -v w="$ws" -v l="$le" 'BEGIN { printf "%.2f", l - w }')s before the dump before; dump + resize + dump ${took}s"
	if ! awk -v w="$ws" -v l="$le" 'BEGIN { exit !(w + 0 <= l + 0) }'; then
		gapfree=0
		diag "resize $size: window after starts at $ws, after the last event $le of the dump before"
		"$BT" report --stats "$T_TMP/d$i.btd" | grep -E "^(cpu|[0-9]|total|window|latest|  *starts)" | sed 's/^/#   /'
		"$BT" report --stats "$before" | grep -E "^(cpu|[0-9]|total|window|latest|  *starts)" | sed 's/^/#   before /'
	fi
	if [ "$(rb_drops "$T_TMP/d$i.btd")" != 0 ]; then
		gapfree=0
		diag "resize $size: ring-buffer drops $(rb_drops "$T_TMP/d$i.btd")"
	fi
done
[ $gapfree = 1 ] && ok "5 resizes while recording: each dump's continuous window reaches back before the resize, no drops" ||
	not_ok "resizes keep the window gap-free"
kill "$WL" 2>/dev/null
wait "$WL" 2>/dev/null

# Resident memory really drops on a shrink (the buffer was 256M, its raw
# part prefaulted). (polled for up to 10 s: under emulation the last dump's
# capture copy may still be freed, or the symbol cache still growing, a
# moment after)
ctl resize 16M >/dev/null 2>&1
RAW_SMALL=$(ctl status | raw_kb)
# 3/4 of what the raw part gave back, less 16 MiB: the dumps since the
# first measure grew the heap (capture indexes, the symbol cache) and the
# cold tier holds up to its 12 MiB now. Without a tier that is more than
# 164 MiB of the 240 MiB back: the pages were released, not just the
# blocks forgotten.
WANT_KB=$(((RAW_BIG - RAW_SMALL) * 3 / 4 - 16 * 1024))
for _ in $(seq 50); do
	sleep 0.2
	RSS_SMALL=$(rss_kb "$REC_PID")
	[ $((RSS_BIG - RSS_SMALL)) -gt $WANT_KB ] && break
done
diag "recorder RssAnon+RssShmem: ${RSS_BIG} kB at 256M (raw part ${RAW_BIG} kB), ${RSS_SMALL} kB after resize 16M (raw part ${RAW_SMALL} kB)"
[ "$RAW_BIG" -gt "$RAW_SMALL" ] && [ $((RSS_BIG - RSS_SMALL)) -gt $WANT_KB ] &&
	ok "shrink returns memory: RssAnon+RssShmem dropped by >$((WANT_KB / 1024)) MiB" ||
	not_ok "shrink returns memory" "RssAnon+RssShmem ${RSS_BIG} -> ${RSS_SMALL} kB, want a drop of ${WANT_KB} kB; $(grep ^Rss "/proc/$REC_PID/status" | tr -s "\n\t " " ")"

# Resizing is in terms of the budget the user gave (-m, --max-size), whatever
# the split with the cold tier: up to --max-size itself (it used to be
# refused: the buffer's share of --max-size was rounded down at start, the
# share asked for was not), the split kept as at start.
r=$(ctl resize 512M 2>&1)
st=$(ctl status 2>&1)
echo "$r" | grep -q "^resized 16 MiB -> 512 MiB" && echo "$st" | grep -q "^buffer: 512 MiB (max 512 MiB)" &&
	{ ! echo "$st" | grep -q "^cold tier: " || echo "$st" | grep -qE "^buffer: [^,]*, raw part 12[0-9]\.?[0-9]* MiB"; } &&
	ok "resize to --max-size: 512 MiB, the cold tier's split kept" || not_ok "resize to --max-size" "$r
$(echo "$st" | grep -E '^(buffer|cold tier):')"
ctl resize 16M >/dev/null 2>&1

# ---- errors: no change to the running recorder ---------------------------------
r=$(ctl resize 12Q 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$r" | grep -q "usage: resize SIZE" && ok "bad size string: usage error from ctl" || not_ok "bad size" "$r"
# The recorder checks too (a client that is not ours).
r=$(python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"resize 12Q\n"); print(s.recv(4096).decode())' "$CTL")
echo "$r" | grep -q "error: bad size '12Q'" && ok "bad size string sent raw: the recorder refuses it" || not_ok "raw bad size" "$r"
r=$(ctl resize 2G 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$r" | grep -q "over the maximum 512 MiB.*--max-size" &&
	ok "size over the maximum: says the maximum and how to raise it" || not_ok "over max" "$r"
ctl status | grep -q "^buffer: 16 MiB" && ok "failed resizes changed nothing" || not_ok "size after errors" "$(ctl status)"
r=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$BT" ctl --ctl "$CTL" status 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$r" | grep -qi "permission denied" && ok "client without permission: clear error" ||
	not_ok "no permission" "$r"
r=$("$BT" record -o "$OUT" --ctl "$CTL" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$r" | grep -q "in use by a running recorder" && ok "socket in use by a live recorder: refused" ||
	not_ok "socket in use" "$r"
r=$("$BT" ctl --pid 999999 status 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$r" | grep -q "no recorder with pid 999999" && ok "ctl --pid of no recorder: clear error" ||
	not_ok "ctl bad pid" "$r"
r=$(ctl frobnicate 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$r" | grep -q "unknown command" && ok "unknown command: usage error" || not_ok "unknown cmd" "$r"

# Twenty clients that connect and say nothing take more than every slot
# (16): `ctl dump` is still served at once, and a bad --timeout is refused.
python3 -c 'import socket,sys,time
c=[socket.socket(socket.AF_UNIX) for _ in range(20)]
[s.connect(sys.argv[1]) for s in c]
print("connected", flush=True); time.sleep(30)' "$CTL" >"$T_TMP/idle.out" 2>&1 &
IDLE=$!
T_PIDS+=("$IDLE")
wait_for 20 grep -q connected "$T_TMP/idle.out"
sleep 0.3
t0=$(now)
r=$(ctl --timeout 10s dump -o "$T_TMP/idle.btd" 2>&1); rc=$?
took=$(since "$t0")
[ $rc -eq 0 ] && [ -s "$T_TMP/idle.btd" ] && awk -v t="$took" 'BEGIN { exit !(t < 8) }' &&
	ok "ctl dump behind 20 idle connections: served in ${took} s" || not_ok "ctl dump behind idle clients" "rc=$rc after ${took} s: $r"
kill $IDLE 2>/dev/null
wait $IDLE 2>/dev/null
r=$(ctl --timeout 0 status 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$r" | grep -q "bad --timeout" && ok "ctl --timeout 0: usage error" || not_ok "ctl --timeout 0" "$r"

# Two dumps close together overlap, and the second one says so.
ctl dump -o "$T_TMP/o1.btd" >/dev/null && ctl dump -o "$T_TMP/o2.btd" >/dev/null
"$BT" report --stats "$T_TMP/o2.btd" | grep -q "may overlap dump #" && ok "consecutive dumps: the second names the dump it overlaps" ||
	not_ok "overlap noted" "$("$BT" report --stats "$T_TMP/o2.btd" | head -8)"

r=$(ctl stop 2>&1)
rec_stop "$REC_PID" INT 30
[ "$REC_STATUS" -eq 0 ] && [ ! -e "$CTL" ] && ok "ctl stop: recorder exits 0, socket removed" ||
	not_ok "ctl stop" "status $REC_STATUS; $r"

# ---- a stale socket from a crashed recorder is cleaned up ---------------------------
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$CTL"
if rec_start "$LOG" -o "$OUT" --ctl "$CTL" --no-final-dump; then
	grep -q "removed stale control socket" "$LOG" && ctl status >/dev/null 2>&1 &&
		ok "stale socket removed, new recorder reachable" || not_ok "stale socket" "$(cat "$LOG")"
	rec_stop "$REC_PID" INT 30
else
	not_ok "recorder starts over a stale socket" "$(cat "$LOG")"
fi

# ---- dump rotation --------------------------------------------------------------------
ROT=$T_TMP/rot
if rec_start "$LOG" -o "$ROT" --ctl "$CTL" --dump-every 300ms --min-dump-interval 100ms --max-dumps 2; then
	# at least 3 written, then stop (a dump can take seconds under emulation)
	wait_for 60 sh -c "[ \$(grep -c 'written to' '$LOG') -ge 3 ]"
	rec_stop "$REC_PID" INT 30
	n=$(find "$ROT" -name '*.btd' | wc -l)
	w=$(grep -c "written to" "$LOG")
	[ "$n" -eq 2 ] && [ "$w" -ge 3 ] && ok "--dump-every + --max-dumps 2: $w dumps written, 2 kept" ||
		not_ok "rotation" "kept $n, written $w"
else
	not_ok "recorder with --dump-every starts" "$(cat "$LOG")"
fi

# ---- trigger uprobe: exactly one dump, events before and after ---------------------
TRG=$T_TMP/trg
"$TB/uprobe_target" >"$T_TMP/target.out" 2>&1 &
TP=$!
wait_for 10 grep -q ready "$T_TMP/target.out"
if rec_start "$LOG" -o "$TRG" --ctl "$CTL" -e sched -p "$TP" -u bt_add --trigger-uprobe bt_sleep_us \
	--trigger-delay 2s --min-dump-interval 30s --no-final-dump; then
	kill -USR1 "$TP"
	wait_for 20 grep -q done "$T_TMP/target.out"
	# the target is done ~10 ms after the hit: a process of ours, started
	# 0.3 s after it and 1.7 s before the dump, is the "after" the delay keeps
	sleep 0.3
	"$TB/uprobe_target" --go >/dev/null 2>&1
	wait_for 30 grep -q "written to" "$LOG"
	rec_stop "$REC_PID" INT 30
	n=$(find "$TRG" -name '*.btd' | wc -l)
	f=$(find "$TRG" -name '*.btd' | head -1)
	if [ "$n" -eq 1 ]; then
		ok "trigger: exactly one dump (hits during the delay and rate limit coalesced)"
		rep=$("$BT" report "$f")
		first=$(echo "$rep" | grep -m1 "bt_sleep_us" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { t = $(i + 1); sub(":", "", t); print t; exit } }')
		before=$(echo "$rep" | grep -c "uprobe: bt_add")
		after=$(echo "$rep" | awk -v t="$first" '/sched_process_exec: comm=uprobe_target/ { for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { s = $(i + 1); sub(":", "", s); if (s + 0 > t + 0.2) n++; break } } END { print n + 0 }')
		"$BT" report --stats "$f" | grep -q "reason trigger" && [ "$before" -gt 0 ] && [ "$after" -gt 0 ] &&
			ok "trigger dump holds events before ($before bt_add calls) and after the trigger (a process started 0.3 s after it)" ||
			not_ok "trigger dump contents" "before=$before after=$after first=$first"
	else
		not_ok "trigger: exactly one dump" "$n dumps; $(cat "$LOG")"
	fi
else
	not_ok "recorder with --trigger-uprobe starts" "$(cat "$LOG")"
fi
kill "$TP" 2>/dev/null

finish
