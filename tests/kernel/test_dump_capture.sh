#!/usr/bin/env bash
# test_dump_capture.sh - a dump holds the moment it was asked for (issue 23):
# app_funcs_spin (-finstrument-functions) calls a small function at full
# speed into an 8 MiB application buffer. A dump taken while it runs keeps
# >= 90% of the calls a dump of the same full buffer keeps once it stopped,
# with no seq gap and no "complete" claim when blocks were lost; an
# app-func:slow_call>3ms trigger's dump contains the 5 ms call that fired
# it. Quiet, then under a load of 4 busy loops per CPU. A dump of a full
# 32 MiB application buffer (~4 M calls) costs the recorder at most the
# buffers it copies plus 64 MiB, and ctl dump returns within 1 s of the
# log's "written" (issue 36: the manifest read the dump back at ~95 bytes
# a call, after it). Needs root; TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "dump capture tests"

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
export BTRACE_CTL=$CTL BTRACE_RETRY_MS=50
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }

if ! rec_start "$LOG" -o "$OUT" -e sched --ctl "$CTL" --no-final-dump --app-buffer-size 8M \
	--trigger 'app-func:slow_call>3ms,name=slowfn,after=0,limit=1ms'; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# records FILE PID: the calls of leaf by process PID a dump holds (the
# exited runs' buffers are in every dump too: counted apart)
records() { "$BT" report --functions "$1" 2>/dev/null | awk -v p="$2" '$1 == "leaf" && $2 == p {print $3}'; }
# gaps FILE PID: its per-thread seq gaps (a thread whose batch stayed open
# across rounds has some in any dump; a dump must add none)
gaps() {
	"$BT" report --functions -p "$2" "$1" 2>/dev/null | sed -n 's/.* by \([0-9]*\) per-thread seq gap.*/\1/p' | grep . || echo 0
}

# mid_vs_after NAME: a dump while spinning, one once stopped, same buffer
mid_vs_after() {
	local n=$1 log=$T_TMP/$1.log
	rm -f "$T_TMP/$n.stop"
	"$TB/app_funcs_spin" -s 3000 -S "$T_TMP/$n.stop" >"$log" 2>&1 &
	local pid=$!
	T_PIDS+=("$pid")
	wait_for 30 grep -q spinning "$log"
	sleep 1.5 # the 8 MiB buffer is overwritten many times over by now
	ctl dump -o "$T_TMP/$n-mid.btd" >/dev/null 2>&1
	wait_for 30 grep -q stopped "$log"
	ctl dump -o "$T_TMP/$n-after.btd" >/dev/null 2>&1
	touch "$T_TMP/$n.stop"
	wait "$pid"
	local mid after gm ga spid
	spid=$(awk '/^spinning/ {print $2}' "$log")
	mid=$(records "$T_TMP/$n-mid.btd" "$spid")
	after=$(records "$T_TMP/$n-after.btd" "$spid")
	gm=$(gaps "$T_TMP/$n-mid.btd" "$spid")
	ga=$(gaps "$T_TMP/$n-after.btd" "$spid")
	diag "$n: $mid records kept mid-run, $after once stopped; seq gaps $gm and $ga; $(grep -o 'window copied in [^)]*' "$LOG" | tail -2 | head -1)"
	check "$n: a dump while it spins keeps >= 90% of the stopped buffer's ($mid of $after)" \
		test "${mid:-0}" -ge $(( ${after:-1} * 9 / 10 )) -a "${after:-0}" -gt 50000
	check "$n: the mid-run dump is gap-free: no seq gap the stopped one has not ($gm vs $ga)" \
		test "$gm" -le "$ga"
	"$BT" report --functions "$T_TMP/$n-mid.btd" >"$T_TMP/$n-mid.txt" 2>&1
	check "$n: it says complete only when nothing was lost" sh -c "
		if grep -q '^complete:' '$T_TMP/$n-mid.txt'; then
			'$BT' report --stats '$T_TMP/$n-mid.btd' | grep -q 'blocks_lost 0 blocks_busy 0'
		fi"
}

mid_vs_after quiet

# app-func:slow_call>3ms: its dump contains the call that fired it, also
# queued behind three ctl dumps asked for 100 ms before the call (issue 36: it
# began after that dump, when the spinner had overwritten the call; now
# the trigger copies the application's buffer at its hit). A
# batch spans at most 8 ms: a sleep the scheduler stretched past that puts
# the call's exit in a block the spinner overwrites within ~20 ms, before
# the watcher or a dump may come (counted in watched_gaps; manual.md says
# so); such a run is run again (at most 3 runs).
for TRUN in 1 2 3; do
	ND0=$(ls "$OUT"/*.btd 2>/dev/null | wc -l)
	"$TB/app_funcs_spin" -s 1500 -w 500 >"$T_TMP/trig.log" 2>&1 &
	SP=$!
	wait_for 30 grep -q spinning "$T_TMP/trig.log"
	sleep 0.4 # three dumps in a row: the trigger's waits behind them
	CP=()
	for k in 1 2 3; do
		ctl dump -o "$T_TMP/busy-$TRUN-$k.btd" >/dev/null 2>&1 &
		CP+=("$!")
	done
	wait "$SP"
	wait "${CP[@]}"
	TPID=$(awk '/^spinning/ {print $2}' "$T_TMP/trig.log")
	SLOW_US=$(awk '/^slow/ {print int(($4 - $3) / 1000)}' "$T_TMP/trig.log")
	[ "${SLOW_US:-0}" -le 8000 ] && break
	diag "run $TRUN: the 5 ms sleep took ${SLOW_US} us, past the batch's 8 ms: again"
	sleep 1
done
wait_for 20 sh -c "[ \$(ls '$OUT'/*.btd 2>/dev/null | wc -l) -gt $ND0 ]"
TD=$(ls -t "$OUT"/*.btd 2>/dev/null | head -1)
[ "$(ls "$OUT"/*.btd 2>/dev/null | wc -l)" -gt "$ND0" ] || TD=
check "trigger: the workload ran its slow call (${SLOW_US:-?} us, run $TRUN)" grep -q '^slow ' "$T_TMP/trig.log"
# The watcher keeps up with a program writing as fast as it can: it reads
# most records before they are overwritten (a missed exit is a missed
# trigger). Sorting every record cost 150 ms a scan: 11% read.
WST=$(ctl status 2>/dev/null | grep "^app $TPID ")
WREC=$(sed -n 's/.* watched_records=\([0-9]*\).*/\1/p' <<<"$WST")
WGAP=$(sed -n 's/.* watched_gaps=\([0-9]*\).*/\1/p' <<<"$WST")
check "trigger: the watcher read >= half of the records (${WREC:-?} read, ${WGAP:-?} gone before it came)" \
	test "${WREC:-0}" -gt 0 -a "${WREC:-0}" -ge "${WGAP:-0}"
check "trigger: app-func:slow_call>3ms fired and dumped" test -n "$TD"
if [ -n "$TD" ]; then
	"$BT" report --functions "$TD" >"$T_TMP/trig.txt" 2>&1
	check "trigger: its dump contains the slow_call that fired it (5 ms asked, >= 3 ms)" \
		awk -v p="$TPID" '$1 == "slow_call" && $2 == p && $3 == 1 && $4 ~ /[0-9]ms$/ && $4 + 0 >= 3 {f=1} END {if (!f) system("cat " FILENAME); exit !f}' \
		"$T_TMP/trig.txt"
	# "(X ms after the trigger's hit: seen after ..., ...; Y ms before the dump began)"
	EARLY=$(grep "written to $TD (trigger" "$LOG" | sed -n 's/.*applications (\([0-9.]*\) ms after the trigger.s hit[:,].* \([0-9.]*\) ms before the dump began.*/\1 \2/p')
	diag "trigger: the application copied ${EARLY%% *} ms after the hit, ${EARLY##* } ms before its dump began (behind the ctl dump)"
	check "trigger: the application was copied within 100 ms of the hit (${EARLY%% *} ms)" \
		awk -v x="${EARLY%% *}" 'BEGIN { exit !(x != "" && x + 0 <= 100) }'
fi

# under load: 4 busy loops per CPU
NB=$(( $(nproc) * 4 ))
LOADP=()
for _ in $(seq "$NB"); do
	sh -c 'while :; do :; done' &
	LOADP+=("$!")
	T_PIDS+=("$!")
done
mid_vs_after loaded
kill "${LOADP[@]}" 2>/dev/null
rec_stop "$REC_PID"

# The memory and time of a dump of a full 32 MiB application buffer.
# VmHWM is reset before the dump (clear_refs 5); it counts the
# application's shared pages the dump touches (at most its buffer) besides
# the recorder's own: copies of both buffers, and what reads the dump back.
MLOG=$T_TMP/mem.log
if rec_start "$MLOG" -o "$OUT" -e sched -m 16M --ctl "$CTL" --no-final-dump --app-buffer-size 32M; then
	rm -f "$T_TMP/m.stop"
	"$TB/app_funcs_spin" -s 4000 -S "$T_TMP/m.stop" >"$T_TMP/m.log" 2>&1 &
	MP=$!
	T_PIDS+=("$MP")
	wait_for 30 grep -q spinning "$T_TMP/m.log"
	sleep 1 # 32 MiB are full in well under a second
	echo 5 >"/proc/$REC_PID/clear_refs"
	rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$REC_PID/status")
	t0=$(date +%s%N)
	ctl dump -o "$T_TMP/mem.btd" >/dev/null 2>&1
	t1=$(date +%s%N)
	hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$REC_PID/status")
	touch "$T_TMP/m.stop"
	wait "$MP"
	wsec=$(sed -n 's/.* written to .*mem.btd ([^,]*, [^,]*, [^,]*, \([0-9.]*\)s,.*/\1/p' "$MLOG")
	calls=$("$BT" report --functions "$T_TMP/mem.btd" 2>/dev/null | awk '$1 == "leaf" {print $3}')
	growth=$(( (hwm - rss0) / 1024 ))
	diag "dump of ${calls:-?} calls: recorder ${rss0} kB -> peak ${hwm} kB (+${growth} MiB); ctl dump $(( (t1 - t0) / 1000000 )) ms, written in ${wsec:-?} s"
	check "a full 32 MiB application buffer was dumped (${calls:-0} calls)" test "${calls:-0}" -gt 1000000
	# 32 MiB shared + 32 MiB copy + 16 MiB kernel copy + 64 MiB
	check "the dump's memory is the buffers it copies + 64 MiB (+${growth} MiB <= 144)" test "$growth" -le 144
	check "ctl dump returns within 1 s of the log's written (${wsec:-?} s)" \
		awk -v w="${wsec:-99}" -v d="$(( (t1 - t0) / 1000000 ))" 'BEGIN { exit !(d / 1000 - w <= 1.0) }'
	rec_stop "$REC_PID"
else
	not_ok "recorder starts (memory)" "$(cat "$MLOG")"
fi
finish
