#!/usr/bin/env bash
# test_service.sh - the recorder as an always-on service, on the real
# kernel: the configuration file, log priorities for the journal and
# sd_notify, the dump quota over 50 dumps, a full disk (a small tmpfs),
# --on-dump (once per dump, failing, hanging), manifests against
# `report --stats` (and a trigger's event), and the unit's system-call
# filter against every system call a recorder makes.
# Needs root; prints TAP lines (tests/run.sh counts them).
# "cond && ok ... || not_ok ...": ok always succeeds.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "service tests"
NCPU=$(nproc)
PIN=$((NCPU - 1))
CTL=$T_TMP/ctl.sock
MNT=$T_TMP/full
ALL_DUMPS=() # every dump checked against its manifest at the end

dump_path() { sed -n "s/^btrace-bpf record: dump $2 written to \([^ ]*\) .*/\1/p" "$1"; }
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
events_recorded() { ctl status 2>/dev/null | sed -n 's/^events: \([0-9]*\) recorded.*/\1/p'; }
cleanup_mnt() { mountpoint -q "$MNT" && umount "$MNT"; }
# The hanging --on-dump commands below run in sessions of their own, out
# of tests/run.sh's reach: a failed run must not leave them to the next
# (CI's second run of this test found its first run's sleep 120).
kill_hangs() {
	local p
	for p in $(pgrep -f '^(/bin/)?sh -c sleep 120; :' || true); do kill -KILL -- "-$p" 2>/dev/null; done
}
trap 'cleanup_mnt; kill_hangs; t_cleanup' EXIT

# ---- the configuration file ---------------------------------------------------------
CFG=$T_TMP/btrace-bpf.conf
sed "s|^output-dir = .*|output-dir = $T_TMP/cfg|" dist/btrace-bpf.conf >"$CFG"
# The shipped file with the service's options; the command line overrides it (-m).
run_with_timeout 60 "$BT" record --config "$CFG" --no-ctl -m 4M -d 1s 2>"$T_TMP/cfg.log"
rc=$?
f=$(find "$T_TMP/cfg" -name '*.btd' 2>/dev/null | head -1)
[ $rc -eq 0 ] && [ -n "$f" ] && ok "record --config dist/btrace-bpf.conf runs and dumps" ||
	not_ok "record --config (exit $rc)" "$(cat "$T_TMP/cfg.log")"
[ -n "$f" ] && ALL_DUMPS+=("$f")
# -m is the raw part plus the cold tier's (split 25/75 by default): their sum
mib() { awk '{ v = $1; if ($2 ~ /^KiB/) v /= 1024; if ($2 ~ /^GiB/) v *= 1024; printf "%.3f\n", v }'; }
st_cfg=$("$BT" report --stats "$f" 2>/dev/null)
raw=$(sed -n 's/^buffer: *\([0-9.]* [KMG]iB\).*/\1/p' <<<"$st_cfg" | mib)
cold=$(sed -n 's/^cold tier: *[a-z0-9:-]*, \([0-9.]* [KMG]iB\):.*/\1/p' <<<"$st_cfg" | mib)
awk -v r="${raw:-0}" -v c="${cold:-0}" 'BEGIN { t = r + c; exit !(t > 3.8 && t < 4.2) }' &&
	ok "the command line overrides the file (-m 4M over buffer-size = 64M: $raw MiB raw + ${cold:-0} MiB tier)" ||
	not_ok "buffer size of the --config run" "$("$BT" report --stats "$f" 2>&1 | grep ^buffer)"
printf 'events = sched\nbufer-size = 4M\n' >"$T_TMP/bad1.conf"
out=$("$BT" record --config "$T_TMP/bad1.conf" --no-ctl -d 1s 2>&1)
rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "$T_TMP/bad1.conf:2: unknown option 'bufer-size'" &&
	ok "an unknown option in the file: exit 2, FILE:LINE named" || not_ok "bad option line (exit $rc)" "$out"
printf 'buffer-size = 12X\n' >"$T_TMP/bad2.conf"
out=$("$BT" record --config "$T_TMP/bad2.conf" --no-ctl -d 1s 2>&1)
rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "invalid --buffer-size '12X'" &&
	ok "a bad value in the file gets the option's own error (exit 2)" || not_ok "bad value (exit $rc)" "$out"
out=$("$BT" record --config "$T_TMP/none.conf" --no-ctl -d 1s 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "cannot read configuration $T_TMP/none.conf" &&
	ok "a missing configuration file: exit 2, said so" || not_ok "missing config" "$out"

# ---- journal priorities and sd_notify --------------------------------------------------
# A stand-in for systemd: the notify socket, and stderr a file whose
# device:inode is in JOURNAL_STREAM as journald's stream would be.
python3 -c '
import socket, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a") as out:
    while True:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        out.write(m.replace("\n", " ") + "\n")
        out.flush()
        if "STOPPING=1" in m:
            break
' "$T_TMP/notify.sock" "$T_TMP/notify.log" &
NPID=$!
T_PIDS+=("$NPID")
wait_for 10 test -S "$T_TMP/notify.sock"
J=$T_TMP/journal.log
: >"$J"
JS=$(stat -c '%d:%i' "$J")
NOTIFY_SOCKET=$T_TMP/notify.sock JOURNAL_STREAM=$JS run_with_timeout 60 "$BT" record -o "$T_TMP/j" --no-ctl -m 4M \
	-d 1500ms --on-dump 'exit 3; :' 2>>"$J"
wait "$NPID" 2>/dev/null
if grep -q '^<5>dump 1 written to' "$J" && grep -q '^<5>recording' "$J" &&
	grep -q "^<3>on-dump command 'exit 3; :' for .* failed: exit status 3" "$J" &&
	! grep -qv '^<[3-7]>' "$J"; then
	ok "stderr is the journal: every line has a priority (<5> dump written, <3> a failed command)"
else
	not_ok "journal priorities" "$(cat "$J")"
fi
run_with_timeout 30 "$BT" record -o "$T_TMP/j2" --no-ctl -m 4M -d 300ms 2>"$T_TMP/plain.log"
grep -q '^btrace-bpf record: dump 1 written to' "$T_TMP/plain.log" && ! grep -q '^<' "$T_TMP/plain.log" &&
	ok "stderr redirected elsewhere: plain 'btrace-bpf record: ' lines" || not_ok "plain log" "$(cat "$T_TMP/plain.log")"
if [ "$(head -1 "$T_TMP/notify.log" 2>/dev/null | grep -c 'READY=1')" -eq 1 ] &&
	grep -q 'STOPPING=1' "$T_TMP/notify.log"; then
	ok "sd_notify: READY=1 once recording, STOPPING=1 at stop"
else
	not_ok "sd_notify messages" "$(cat "$T_TMP/notify.log" 2>&1)"
fi
f=$(find "$T_TMP/j" -name '*.btd' | head -1)
[ -n "$f" ] && ALL_DUMPS+=("$f")

# ---- the quota over 50 dumps ---------------------------------------------------------------
Q=$T_TMP/quota
LIMIT=$((3 << 20))
mkdir -p "$Q"
echo "the operator's notes" >"$Q/notes.txt"
echo "not a dump" >"$Q/btrace-fake-20200101-000000-9.btd"
touch -d 2020-01-01 "$Q/btrace-fake-20200101-000000-9.btd"
# A dump of an earlier run (oldest of all): counted, and removed first.
OLD=$Q/btrace-old-20200101-000000-1.btd
cp "${ALL_DUMPS[0]}" "$OLD" && cp "${ALL_DUMPS[0]}.json" "$OLD.json"
touch -d 2020-01-02 "$OLD" "$OLD.json"
# The directory's size (our dumps and manifests), sampled every 20 ms.
(while [ ! -e "$T_TMP/stop-sampler" ]; do
	find "$Q" -maxdepth 1 -name 'btrace-*' ! -name 'btrace-fake-*' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
	sleep 0.02
done) >"$T_TMP/samples" &
SAMPLER=$!
LOG=$T_TMP/quota.log
# (--cold-tier 0: dumps of the raw 2 MiB alone, the sizes LIMIT is set for)
if rec_start "$LOG" -o "$Q" -m 2M --cold-tier 0 --ctl "$CTL" --dump-every 150ms --min-dump-interval 50ms \
	--max-dump-bytes $LIMIT; then
	"$TB/pingpong" -n 200000 -c $PIN -a bt-q1 -b bt-q2 >/dev/null 2>&1 &
	PP=$!
	wait_for 120 grep -q "dump 50 written" "$LOG" && ok "50 dumps written under --max-dump-bytes" ||
		not_ok "50 dumps" "$(tail -5 "$LOG")"
	status=$(ctl status 2>&1)
	rec_stop "$REC_PID" INT
	kill "$PP" 2>/dev/null
	wait "$PP" 2>/dev/null
else
	not_ok "recorder with a quota starts" "$(cat "$LOG")"
fi
touch "$T_TMP/stop-sampler"
wait "$SAMPLER"
max=$(sort -n "$T_TMP/samples" | tail -1)
n=$(wc -l <"$T_TMP/samples")
# (a sample forks find and awk: under an emulated CPU, BT_TEST_EMULATED,
# 50 dumps see about 100 of them, not several hundred; beside the other
# tests on 2 CPUs, 82 were seen once)
min_samples=50
[ -n "${BT_TEST_EMULATED:-}" ] && min_samples=30
if [ "${max:-0}" -gt $LIMIT ]; then
	not_ok "quota exceeded: $max > $LIMIT bytes ($n samples)"
elif [ "$n" -le $min_samples ]; then
	not_ok "the directory's size sampled only $n times (want > $min_samples; at most $max bytes)"
else
	ok "the directory never held more than the quota ($max <= $LIMIT bytes, $n samples)"
fi
written=$(grep -c "written to" "$LOG")
kept=$(find "$Q" -name 'btrace-*.btd' ! -name 'btrace-fake-*' | wc -l)
[ "$kept" -lt "$written" ] && [ "$kept" -ge 3 ] && ok "old dumps removed: $written written, $kept kept" ||
	not_ok "$written written, $kept kept"
# The kept ones are the newest: their dump numbers are the highest, contiguous.
seqs=$(find "$Q" -name 'btrace-*.btd' ! -name 'btrace-fake-*' ! -name 'btrace-old-*' |
	sed 's/.*-\([0-9]*\)\.btd$/\1/' | sort -n | tr '\n' ' ')
first=$(echo "$seqs" | awk '{ print $1 }')
want=$(seq "$first" "$written" | tr '\n' ' ')
[ "$seqs" = "$want" ] && ok "the newest dumps were kept (#$first..#$written), the oldest removed first" ||
	not_ok "kept dumps: $seqs (want $want)"
grep -q "1 earlier dump in $Q" "$LOG" && ! [ -e "$OLD" ] && ! [ -e "$OLD.json" ] &&
	ok "a dump of an earlier run was counted and removed, with its manifest" ||
	not_ok "earlier dump" "$(grep -E 'earlier|btrace-old' "$LOG")"
[ -e "$Q/notes.txt" ] && [ -e "$Q/btrace-fake-20200101-000000-9.btd" ] &&
	ok "files that are not our dumps were left alone" || not_ok "foreign files removed"
nman=$(find "$Q" -name 'btrace-*.btd.json' | wc -l)
[ "$nman" -eq "$kept" ] && ok "each kept dump has its manifest, no orphan manifest ($nman)" ||
	not_ok "$nman manifests for $kept dumps"
echo "$status" | grep -qE "^dump directory: [0-9]+ dumps?, .* of 3 MiB \(--max-dump-bytes\); [0-9]+ removed by the quota" &&
	ok "ctl status shows the dump directory and the quota" || not_ok "ctl status" "$status"
check "no temporary file left in the dump directory" test -z "$(find "$Q" -name '.*' -type f)"
last=$(dump_path "$LOG" "$written")
[ -n "$last" ] && ALL_DUMPS+=("$last")

# ---- a full disk ---------------------------------------------------------------------------
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=1M tmpfs "$MNT"; then
	skip "full disk" "cannot mount a tmpfs"
else
	LOG=$T_TMP/full.log
	if rec_start "$LOG" -o "$MNT" -m 16M -z 0 --ctl "$CTL"; then
		"$TB/pingpong" -n 20000 -c $PIN -a bt-full1 -b bt-full2 >/dev/null
		kill -USR1 "$REC_PID"
		wait_for 30 grep -q "dump skipped" "$LOG"
		grep -q "signal dump skipped: not enough space in $MNT: .* free, the dump needs about .* must stay free (--keep-free)" "$LOG" &&
			ok "a dump that does not fit is skipped, and the log says why" || not_ok "skip logged" "$(cat "$LOG")"
		check "nothing written to the full disk, not even a temporary file" test -z "$(ls -A "$MNT")"
		e1=$(events_recorded)
		ctl status | grep -q "1 skipped for lack of space" && ok "ctl status counts the skipped dump" ||
			not_ok "skip counted" "$(ctl status 2>&1)"
		"$TB/pingpong" -n 2000 -c $PIN -a bt-after1 -b bt-after2 >/dev/null
		e2=$(events_recorded)
		kill -0 "$REC_PID" 2>/dev/null && [ "${e2:-0}" -gt "${e1:-0}" ] &&
			ok "recording goes on after the skip ($e1 -> $e2 events)" || not_ok "recording after skip ($e1 -> $e2)"
		mount -o remount,size=128M "$MNT"
		kill -USR1 "$REC_PID"
		if wait_for 30 grep -q "dump 1 written" "$LOG"; then
			f=$(dump_path "$LOG" 1)
			"$BT" report "$f" 2>/dev/null | grep -q "bt-after1" &&
				ok "with space again, the next dump is written and holds the events after the skip" ||
				not_ok "dump after space freed lacks bt-after1"
			# Kept for the manifest check at the end (the tmpfs goes before).
			mkdir -p "$T_TMP/fullcopy" && cp -p "$f" "$f.json" "$T_TMP/fullcopy/"
			ALL_DUMPS+=("$T_TMP/fullcopy/$(basename "$f")")
			grep -q "dumps_skipped_no_space\": 1" "$f.json" &&
				ok "its manifest counts the skipped dump" || not_ok "manifest skip count" "$(head -c 600 "$f.json")"
		else
			not_ok "dump after space freed" "$(cat "$LOG")"
		fi
		rec_stop "$REC_PID" INT
	else
		not_ok "recorder on the small tmpfs starts" "$(cat "$LOG")"
	fi
	cleanup_mnt
fi

# ---- --on-dump: once per dump, with the right path -------------------------------------------
HOOKLOG=$T_TMP/hook.log
cat >"$T_TMP/hook.sh" <<EOF
#!/bin/sh
echo "\$# \$1 \$BTRACE_DUMP_REASON \$(test -f "\$BTRACE_MANIFEST" && echo manifest)" >>$HOOKLOG
EOF
chmod +x "$T_TMP/hook.sh"
LOG=$T_TMP/hook-rec.log
if rec_start "$LOG" -o "$T_TMP/h" -m 4M --ctl "$CTL" --on-dump "$T_TMP/hook.sh"; then
	for i in 1 2 3; do
		kill -USR1 "$REC_PID"
		wait_for 30 grep -q "dump $i written" "$LOG"
	done
	rec_stop "$REC_PID" TERM
	want=""
	for i in 1 2 3; do want="${want}1 $(dump_path "$LOG" $i) signal manifest
"; done
	want="${want}1 $(dump_path "$LOG" 4) exit manifest"
	got=$(sort "$HOOKLOG")
	[ "$got" = "$(echo "$want" | sort)" ] &&
		ok "--on-dump ran once per dump (3 signal + the final), with its path, reason and manifest" ||
		not_ok "--on-dump runs" "$(printf 'got:\n%s\nwant:\n%s' "$got" "$want")"
	ALL_DUMPS+=("$(dump_path "$LOG" 4)")
else
	not_ok "recorder with --on-dump starts" "$(cat "$LOG")"
fi

# ---- --on-dump failing: logged, counted, recording goes on --------------------------------------
LOG=$T_TMP/hookfail.log
if rec_start "$LOG" -o "$T_TMP/hf" -m 4M --ctl "$CTL" --on-dump 'exit 7; :'; then
	kill -USR1 "$REC_PID"
	wait_for 30 grep -q "dump 1 written" "$LOG"
	wait_for 10 grep -q "failed: exit status 7" "$LOG"
	e1=$(events_recorded)
	"$TB/pingpong" -n 1000 -c $PIN -a bt-hf1 -b bt-hf2 >/dev/null
	kill -USR1 "$REC_PID"
	wait_for 30 grep -q "dump 2 written" "$LOG"
	wait_until 10 '[ "$(grep -c "failed: exit status 7" "$LOG")" -eq 2 ]'
	e2=$(events_recorded)
	n=$(grep -c "on-dump command 'exit 7; :' for .* failed: exit status 7" "$LOG")
	[ "$n" -eq 2 ] && ok "a failing --on-dump command is logged with its status, each time ($n)" ||
		not_ok "failures logged: $n" "$(cat "$LOG")"
	ctl status | grep -q "^on-dump: 2 started, 0 succeeded, 2 failed (0 timed out)" &&
		ok "ctl status counts the failures" || not_ok "status" "$(ctl status 2>&1)"
	[ "${e2:-0}" -gt "${e1:-0}" ] && "$BT" report "$(dump_path "$LOG" 2)" | grep -q bt-hf1 &&
		ok "recording and dumps go on ($e1 -> $e2 events, dump 2 holds the later workload)" ||
		not_ok "after failures ($e1 -> $e2)"
	rec_stop "$REC_PID" INT
else
	not_ok "recorder with a failing --on-dump starts" "$(cat "$LOG")"
fi

# ---- --on-dump hanging: the next dump does not wait; killed at the timeout ----------------------
LOG=$T_TMP/hookhang.log
if rec_start "$LOG" -o "$T_TMP/hh" -m 4M --ctl "$CTL" --on-dump 'sleep 120; :' --on-dump-timeout 3s; then
	kill -USR1 "$REC_PID"
	wait_for 30 grep -q "dump 1 written" "$LOG"
	t0=$(date +%s%N)
	kill -USR1 "$REC_PID"
	wait_for 30 grep -q "dump 2 written" "$LOG"
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	# Dump 2 did not wait for dump 1's command if the log says it was
	# written before that command was killed (3 s after it started).
	l2=$(grep -n "dump 2 written" "$LOG" | head -1 | cut -d: -f1)
	lk=$(grep -n "killed after" "$LOG" | head -1 | cut -d: -f1)
	before=0
	[ -n "$l2" ] && { [ -z "$lk" ] || [ "$l2" -lt "$lk" ]; } && before=1
	if [ $before = 1 ] && { [ $ms -lt 2500 ] || [ -n "${BT_TEST_EMULATED:-}" ]; }; then
		ok "dump 2 written in $ms ms while dump 1's command still hangs"
	elif [ -n "${BT_TEST_EMULATED:-}" ]; then
		# 6.1 under TCG: a dump alone took the 3 s timeout (3028 ms); the
		# host's run decides (109 ms there)
		skip "dump 2 while dump 1's command hangs ($ms ms)" "an emulated dump is slower than the timeout"
	else
		not_ok "dump 2 waited for the hanging command ($ms ms, written $([ $before = 1 ] && echo before || echo after) the kill)" "$(cat "$LOG")"
	fi
	wait_until 15 '[ "$(grep -c "killed after" "$LOG")" -eq 2 ]'
	n=$(grep -c "on-dump command 'sleep 120; :' for .* killed after [3-9]\.[0-9]s (--on-dump-timeout)" "$LOG")
	[ "$n" -eq 2 ] && ok "each hanging command is killed after the timeout and logged" ||
		not_ok "kills logged: $n" "$(cat "$LOG")"
	ctl status | grep -q "2 failed (2 timed out), 0 skipped, 0 running" && ok "ctl status counts the timeouts" ||
		not_ok "status" "$(ctl status 2>&1)"
	# The commands' shells and their sleeps (not the recorder, whose
	# command line holds the same words).
	# The group is gone when the kill is logged: a few seconds' wait only
	# lets a loaded machine reap it; what is left is named for the log.
	if wait_until 5 '! pgrep -f "^(sh -c )?sleep 120"'; then
		ok "no process of the commands is left"
	else
		not_ok "no process of the commands is left" \
			"$(ps -o pid,ppid,pgid,sid,stat,etimes,args -p "$(pgrep -d, -f '^(sh -c )?sleep 120')" 2>&1)"
	fi
	t0=$(date +%s)
	rec_stop "$REC_PID" INT
	[ "$REC_STATUS" -eq 0 ] && [ $(($(date +%s) - t0)) -lt 10 ] && ok "the recorder still stops promptly (exit 0)" ||
		not_ok "stop after hangs: exit $REC_STATUS, $(($(date +%s) - t0)) s"
else
	not_ok "recorder with a hanging --on-dump starts" "$(cat "$LOG")"
fi

# ---- the trigger and its event in the manifest --------------------------------------------------
"$TB/uprobe_target" >"$T_TMP/target.out" 2>&1 &
TP=$!
T_PIDS+=("$TP")
wait_for 10 grep -q ready "$T_TMP/target.out"
LOG=$T_TMP/trigger.log
if rec_start "$LOG" -o "$T_TMP/trg" --ctl "$CTL" -e sched -p "$TP" --trigger-uprobe bt_sleep_us \
	--trigger-delay 200ms --min-dump-interval 30s --no-final-dump; then
	kill -USR1 "$TP"
	if wait_for 30 grep -q "dump 1 written" "$LOG"; then
		f=$(dump_path "$LOG" 1)
		ALL_DUMPS+=("$f")
		python3 - "$f.json" "$TP" <<'PY' && ok "the manifest names the trigger and the thread that hit it" || not_ok "trigger in manifest" "$(cat "$f.json")"
import json, sys
m = json.load(open(sys.argv[1]))
t = m["trigger"]
ok = (m["reason"] == "trigger" and t["spec"] == "uprobe:bt_sleep_us" and t["event"]["pid"] == int(sys.argv[2])
      and t["event"]["comm"].startswith("uprobe_targ")
      and m["time_range"]["first_ns"] <= t["event"]["ts_ns"] <= m["time_range"]["last_ns"])
sys.exit(0 if ok else 1)
PY
	else
		not_ok "trigger dump" "$(cat "$LOG")"
	fi
	rec_stop "$REC_PID" INT
else
	not_ok "recorder with --trigger-uprobe starts" "$(cat "$LOG")"
fi
kill "$TP" 2>/dev/null

# ---- manifests agree with report --stats ----------------------------------------------------------
bad=""
for f in "${ALL_DUMPS[@]}"; do
	out=$(BTRACE_BPF="$BT" python3 tests/kernel/check_manifest.py "$f" 2>&1) || bad="$bad
$out"
done
[ -z "$bad" ] && [ "${#ALL_DUMPS[@]}" -ge 6 ] &&
	ok "${#ALL_DUMPS[@]} manifests agree with report --stats and with their file (size, SHA-256)" ||
	not_ok "manifests vs report --stats (${#ALL_DUMPS[@]} dumps)" "$bad"

# ---- the unit's system-call filter allows every call a recorder makes ---------------------------
if ! command -v strace >/dev/null || ! command -v systemd-analyze >/dev/null; then
	skip "system-call filter" "needs strace and systemd-analyze"
else
	filter=$(sed -n 's/^SystemCallFilter=//p' dist/btrace-bpf.service.in)
	expand() { # a group or a call -> calls
		local e
		case "$1" in
		@*) for e in $(systemd-analyze syscall-filter "$1" 2>/dev/null | sed '1d; /#/d'); do expand "$e"; done ;;
		*) echo "$1" ;;
		esac
	}
	allowed=$(for e in $filter; do expand "$e"; done | sort -u)
	LOG=$T_TMP/strace-rec.log
	# Everything a service does: attach, uprobes, control socket, dumps with
	# manifests, quota, --on-dump commands (they run under the same filter).
	strace -f -qq -c -o "$T_TMP/strace.txt" "$BT" record -o "$T_TMP/st" -m 4M --ctl "$CTL" -d 4s \
		--max-dump-bytes 100M --on-dump 'test -f "$BTRACE_MANIFEST" && cat "$1" >/dev/null; :' \
		-u "$TB/uprobe_target:bt_add" 2>"$LOG" &
	SP=$!
	wait_for 20 grep -q "recording (pid" "$LOG"
	ctl status >/dev/null 2>&1
	ctl dump >/dev/null 2>&1
	wait "$SP"
	used=$(awk 'NF >= 5 && $NF ~ /^[a-z_0-9]+$/ && $NF != "syscall" && $NF != "total" { print $NF }' "$T_TMP/strace.txt" | sort -u)
	missing=$(comm -23 <(echo "$used") <(echo "$allowed"))
	[ -n "$used" ] && [ -z "$missing" ] &&
		ok "SystemCallFilter allows all $(echo "$used" | wc -l) system calls of a recording with dumps, ctl, uprobes and --on-dump" ||
		not_ok "system calls outside the unit's filter: $(echo $missing)" "$(tail -3 "$LOG")"
fi

finish
