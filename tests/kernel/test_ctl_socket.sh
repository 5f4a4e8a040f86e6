#!/usr/bin/env bash
# test_ctl_socket.sh - what a recorder does with the path of its control
# socket (--ctl PATH): it removes at exit only the socket it bound (not a
# file put there after its socket was removed, not another recorder's
# socket), removes at start only a stale socket (refuses connections, held
# by no live process), refuses a path too long for a socket instead of
# truncating it, and finds a conflict before it attaches anything or
# creates its output directory. Also: the exact command grammar. Needs
# root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "ctl socket tests"

P=$T_TMP/ctl.sock
LOG=$T_TMP/rec.log
REC=(-e sched --no-final-dump -o "$T_TMP/out")

# ---- a file put where the socket was is not removed at exit -------------------
if rec_start "$LOG" "${REC[@]}" --ctl "$P"; then
	rm -f "$P"
	echo "someone else's file" >"$P"
	rec_stop "$REC_PID" INT 30
	[ -f "$P" ] && grep -q "someone else's file" "$P" && ok "exit: a file that replaced the socket is kept" ||
		not_ok "file at the socket path removed at exit"
	rm -f "$P"
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

# ---- another recorder's socket at the same path is not removed at exit ---------
if rec_start "$LOG" "${REC[@]}" --ctl "$P"; then
	A=$REC_PID
	rm -f "$P"
	if rec_start "$T_TMP/rec2.log" "${REC[@]}" --ctl "$P"; then
		B=$REC_PID
		rec_stop "$A" INT 30
		[ -S "$P" ] && "$BT" ctl --ctl "$P" status >/dev/null 2>&1 &&
			ok "exit: another recorder's socket at the path is kept (it still answers)" ||
			not_ok "another recorder's socket removed at exit"
		rec_stop "$B" INT 30
		[ ! -e "$P" ] && ok "exit: a recorder removes its own socket" || not_ok "own socket left behind"
	else
		not_ok "second recorder starts" "$(cat "$T_TMP/rec2.log")"
		rec_stop "$A" INT 30
	fi
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

# ---- a live socket that is not listening is not "stale" --------------------------
python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); print("bound", flush=True); time.sleep(30)' "$P" >"$T_TMP/py.out" &
PY=$!
T_PIDS+=("$PY")
wait_for 10 grep -q bound "$T_TMP/py.out"
r=$(run_with_timeout 30 "$BT" record "${REC[@]}" --ctl "$P" -d 1s 2>&1)
rc=$?
[ $rc -ne 0 ] && [ -S "$P" ] && echo "$r" | grep -q "in use by another program" &&
	ok "start: a bound socket of a live process is refused, not removed" ||
	not_ok "live foreign socket" "rc=$rc, socket $([ -S "$P" ] && echo kept || echo removed): $r"
kill $PY 2>/dev/null
wait $PY 2>/dev/null
# the same socket once its process is gone: stale, removed
if rec_start "$LOG" "${REC[@]}" --ctl "$P"; then
	grep -q "removed stale control socket" "$LOG" && "$BT" ctl --ctl "$P" status >/dev/null 2>&1 &&
		ok "start: a stale socket (its process gone) is removed" || not_ok "stale socket" "$(cat "$LOG")"
	rec_stop "$REC_PID" INT 30
else
	not_ok "recorder starts over a stale socket" "$(cat "$LOG")"
fi

# ---- exact grammar ---------------------------------------------------------------
if rec_start "$LOG" "${REC[@]}" --ctl "$P"; then
	# Straight to the socket: the ctl client checks the grammar itself.
	raw() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode() + b"\n"); print(s.recv(4096).decode())' "$P" "$1" 2>&1; }
	r=$(raw "stop now please")
	sleep 0.5
	kill -0 "$REC_PID" 2>/dev/null && echo "$r" | grep -q "^error: 'stop' takes no arguments" &&
		ok "'stop now please' is refused and the recorder keeps running" || not_ok "stop now please" "$r"
	r=$(raw "status extra")
	echo "$r" | grep -q "^error: 'status' takes no arguments" && ok "'status extra' is refused" ||
		not_ok "status extra" "$r"
	r=$(python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"dump" + b" x" * 20 + b"\n"); print(s.recv(4096).decode())' "$P" 2>&1)
	echo "$r" | grep -q "error: too many words" && ok "a command of 21 words is refused, not cut to 16" ||
		not_ok "too many words" "$r"
	# dump -o never replaces a file (the check runs under the dump lock).
	echo mine >"$T_TMP/theirs.btd"
	r=$("$BT" ctl --ctl "$P" dump -o "$T_TMP/theirs.btd" 2>&1)
	[ "$(cat "$T_TMP/theirs.btd")" = mine ] && echo "$r" | grep -q "exists: a dump never replaces a file" &&
		ok "dump -o an existing file is refused, the file untouched" || not_ok "dump -o existing file" "$r"
	rec_stop "$REC_PID" INT 30
else
	not_ok "recorder starts" "$(cat "$LOG")"
fi

finish
