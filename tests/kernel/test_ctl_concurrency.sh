#!/usr/bin/env bash
# test_ctl_concurrency.sh - the control socket under load with a big buffer:
# `ctl status` answers at once whatever the buffer holds (it used to read
# the whole buffer: seconds idle, tens of seconds under load), and one slow
# request (a client that says nothing, a dump of 256 MiB) does not hold up
# the others (the socket used to serve one client at a time). Needs root;
# prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "ctl concurrency tests"

CTL=$T_TMP/ctl.sock
LOG=$T_TMP/rec.log
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
now_ms() { date +%s%3N; }
# Milliseconds a ctl command takes; its output in $T_TMP/last.out.
timed_ctl() {
	local t0 t1
	t0=$(now_ms)
	ctl "$@" >"$T_TMP/last.out" 2>&1
	t1=$(now_ms)
	echo $((t1 - t0))
}
# A status answered within a second: the old one took 2-4 s for a full 256 MiB
# buffer on an idle machine (45-55 s under load); a second leaves room for a
# loaded CI machine without hiding that. Under emulation (qemu TCG, both
# vCPUs in one host thread, both busy) a status takes 0.7-1.1 s, so 3 s
# there: still below the silent client's 5 s and a dump's tens of seconds.
LIMIT_MS=1000
[ -n "${BT_TEST_EMULATED:-}" ] && LIMIT_MS=3000
# During a dump under emulation: the dump of 192 MiB compresses for 100 s
# or more there, beside the drain, both at the requests' priority (3.9 s
# seen); 10 s still proves the status is not queued behind the dump.
DUMP_LIMIT_MS=$LIMIT_MS
[ -n "${BT_TEST_EMULATED:-}" ] && DUMP_LIMIT_MS=10000

if ! rec_start "$LOG" -o "$T_TMP/out" -m 256M -z 6 --ctl "$CTL" -e all --no-final-dump; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi
# Fill the buffer: unpaced system calls on both CPUs, kept running.
build/bench/syscall_loop -t 2 -d 90 >/dev/null 2>&1 &
WL=$!
T_PIDS+=("$WL")
full=0
for _ in $(seq 60); do
	ev=$(ctl status 2>/dev/null | sed -n 's/^window: [0-9.]*s, \([0-9]*\) events retained.*/\1/p')
	[ -n "$ev" ] && [ "$ev" -gt 5000000 ] && { full=1; break; }
	sleep 0.5
done
[ $full = 1 ] && ok "256 MiB buffer full under load ($ev events retained)" ||
	not_ok "buffer fills" "$(ctl status 2>&1 | head -5)"

worst=0
for _ in 1 2 3 4 5; do
	ms=$(timed_ctl status)
	[ "$ms" -gt "$worst" ] && worst=$ms
done
grep -q "^latest continuous window: " "$T_TMP/last.out" && [ "$worst" -lt $LIMIT_MS ] &&
	ok "status with a full 256 MiB buffer under load: slowest of 5 took ${worst} ms" ||
	not_ok "status latency" "slowest ${worst} ms; $(head -5 "$T_TMP/last.out")"

# A client that connects and says nothing holds its connection for the
# server's 2 s first-byte timeout; others are served meanwhile: a status within
# LIMIT_MS proves it (a server serving one client at a time answers after the
# timeout). The client says when it is connected (python starts slowly under
# emulation) and stays until killed. The resize reallocates 192 MiB: under
# emulation that alone can take seconds, so its bound there stays under the
# server's timeout only.
python3 -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected", flush=True); time.sleep(60)' \
	"$CTL" >"$T_TMP/silent.out" 2>&1 &
SILENT=$!
T_PIDS+=("$SILENT")
for _ in $(seq 200); do
	grep -q connected "$T_TMP/silent.out" 2>/dev/null && break
	sleep 0.1
done
RESIZE_LIMIT_MS=$LIMIT_MS
[ -n "${BT_TEST_EMULATED:-}" ] && RESIZE_LIMIT_MS=4000
sms=$(timed_ctl status)
sout=$(cat "$T_TMP/last.out")
rms=$(timed_ctl resize 192M)
rout=$(cat "$T_TMP/last.out")
grep -q connected "$T_TMP/silent.out" && echo "$sout" | grep -q "^buffer: 256 MiB" && [ "$sms" -lt $LIMIT_MS ] &&
	echo "$rout" | grep -q "^resized 256 MiB -> 192 MiB" && [ "$rms" -lt $RESIZE_LIMIT_MS ] &&
	ok "status (${sms} ms) and resize (${rms} ms) while another client holds a connection without a request" ||
	not_ok "served behind a silent client" "client: $(cat "$T_TMP/silent.out"); status ${sms} ms: $(echo "$sout" | head -2); resize ${rms} ms (bound ${RESIZE_LIMIT_MS}): $rout"
kill $SILENT 2>/dev/null
wait $SILENT 2>/dev/null

# A dump of the full buffer (zlib 6: seconds) is being written while a
# status is answered; a resize waits for the dump's copy of the buffer only
# (the buffer cannot swap memory a dump copies), not for the dump: it
# answers while the dump is still being written (it used to wait for the
# whole dump, 9.7 s with the cold tier), and the dump is whole.
ctl dump -o "$T_TMP/big.btd" >"$T_TMP/dump.out" 2>&1 &
DUMP=$!
sleep 0.3
sms=$(timed_ctl status)
sout=$(cat "$T_TMP/last.out")
s_during=0
kill -0 $DUMP 2>/dev/null && s_during=1
rms=$(timed_ctl resize 128M)
rout=$(cat "$T_TMP/last.out")
r_during=0
kill -0 $DUMP 2>/dev/null && r_during=1
wait $DUMP
drc=$?
diag "status answered in ${sms} ms, resize in ${rms} ms"
[ $s_during = 1 ] && echo "$sout" | grep -q "^buffer: 192 MiB" && echo "$sout" | grep -q "^dumps: " &&
	[ "$sms" -lt $DUMP_LIMIT_MS ] && ok "status answered while a dump was being written (${sms} ms)" ||
	not_ok "status during a dump" "during=$s_during ${sms} ms: $sout"
echo "$rout" | grep -q "^resized 192 MiB -> 128 MiB" && ok "resize during a dump succeeds" ||
	not_ok "resize during a dump" "$rout"
[ $s_during = 1 ] && [ $r_during = 1 ] && [ "$rms" -lt $RESIZE_LIMIT_MS ] &&
	ok "resize during a dump answered in ${rms} ms, before the dump ended" ||
	not_ok "resize during a dump is prompt" "${rms} ms (bound ${RESIZE_LIMIT_MS}), dump still running after it: $r_during (and after the status: $s_during)"
[ $drc -eq 0 ] && "$BT" report --stats "$T_TMP/big.btd" >"$T_TMP/big.stats" 2>&1 && ok "the dump is complete and readable" ||
	not_ok "dump during resize" "ctl dump exit $drc: $(cat "$T_TMP/dump.out"); report: $(tail -3 "$T_TMP/big.stats" 2>/dev/null); $(free -m | sed -n 2p)"

kill "$WL" 2>/dev/null
r=$(ctl stop 2>&1)
rec_stop "$REC_PID" INT 30
[ "$REC_STATUS" -eq 0 ] && ok "recorder stops cleanly" || not_ok "stop" "status $REC_STATUS; $r"
finish
