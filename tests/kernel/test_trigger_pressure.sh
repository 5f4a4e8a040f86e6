#!/usr/bin/env bash
# test_trigger_pressure.sh - trigger dumps under pressure: on a machine
# loaded with ~4 runnable tasks per CPU, clang's 110 MB libLLVM among the
# sampled stacks, every trigger dump is on disk within a second of being
# asked for, 20 in a row (symbols are loaded in the background, a dump only
# looks them up); a storm of hits ends with every hit counted exactly once
# (dumped + merged + rate-limited + dropped) in ctl status, the final
# dump's report and its manifest; SIGINT with hits still in their after=
# delay writes one final dump naming them and exits within 5 s, and so
# does SIGINT right after 30 hits at once (the queue full).
# Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "trigger pressure tests"

W=$TB/trig_workload
CTL=$T_TMP/ctl.sock
LOG=$T_TMP/rec.log
NCPU=$(nproc)
# Under an emulated CPU (qemu TCG) everything is ~10x slower.
BOUND_S=1
[ -n "${BT_TEST_EMULATED:-}" ] && BOUND_S=10
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
# "H D M R X P" of trigger $1 in `ctl status` ($2: the status text).
status_counts() {
	echo "$2" | sed -n "s/^  $1: .*, \([0-9]*\) hits, .*; \([0-9]*\) dumped + \([0-9]*\) merged + \([0-9]*\) rate-limited + \([0-9]*\) dropped + \([0-9]*\) pending$/\1 \2 \3 \4 \5 \6/p"
}
# "H D M R X P" of trigger $1 in the report --stats of dump $2.
report_counts() {
	"$BT" report --stats "$2" | awk -v n="$1" '$1 == n { getline; print $2, $4, $7, $10, $13, $16 }'
}
# "H D M R X P" of trigger $1 in the manifest of dump $2.
manifest_counts() {
	python3 -c 'import json, sys
m = json.load(open(sys.argv[2] + ".json"))
t = [x for x in m["triggers"] if x["name"] == sys.argv[1]][0]
print(t["hits"], t["dumped"], t["merged"], t["rate_limited"], t["dropped"], t["pending"])' "$1" "$2"
}
adds_up() { # "H D M R X P": H = D + M + R + X + P
	local h d m r x p
	read -r h d m r x p <<<"$1"
	[ -n "$p" ] && [ "$h" -eq $((d + m + r + x + p)) ]
}

# ---- latency under load -------------------------------------------------------------
# 2 clang loops and 2 system-call loops per CPU: about 4 runnable tasks per
# CPU, and the sampled stacks reference clang, libLLVM and libclang-cpp.
LOADPIDS=()
start_load() {
	local i
	for i in $(seq $((2 * NCPU))); do
		(while :; do clang --version >/dev/null 2>&1 || exit; done) &
		LOADPIDS+=($!)
		T_PIDS+=($!)
	done
	build/bench/syscall_loop -t $((2 * NCPU)) -d 600 >/dev/null 2>&1 &
	LOADPIDS+=($!)
	T_PIDS+=($!)
}
stop_load() {
	local p
	for p in "${LOADPIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${LOADPIDS[@]}"; do wait "$p" 2>/dev/null; done
	LOADPIDS=()
}

if ! command -v clang >/dev/null; then
	skip "trigger dumps within ${BOUND_S}s under load" "no clang here (the big binary of the load)"
else
	D=$T_TMP/lat
	if rec_start "$LOG" -o "$D" --ctl "$CTL" -e sched --sample 99 -m 16M --no-final-dump \
		--trigger 'ctl,name=t,limit=0,after=0'; then
		start_load
		sleep 3 # the load's stacks, and their files, are in the table
		out=$(python3 tests/kernel/check_trigger_latency.py "$CTL" "$D" t 20 "$BOUND_S" 2>&1)
		rc=$?
		echo "$out" | tail -1
		[ $rc -eq 0 ] && ok "20 trigger dumps under load (4 tasks/CPU, clang running): each on disk within ${BOUND_S}s" ||
			not_ok "20 trigger dumps under load, each within ${BOUND_S}s" "$out"
		last=$(find "$D" -name '*.btd' | sort | tail -1)
		if [ -n "$last" ]; then
			st=$("$BT" report --stats "$last")
			echo "$st" | grep -q "libLLVM\|clang" >/dev/null ||
				diag "$(echo "$st" | grep -A3 'call stacks:')"
			echo "$st" | grep -q "symbols not loaded yet: " &&
				ok "report --stats says what the dump's symbols lack: $(echo "$st" | sed -n 's/^ *symbols not loaded yet: //p')" ||
				not_ok "report --stats has the symbols-not-loaded line" "$(echo "$st" | grep -A6 'call stacks:')"
		fi
		stop_load
		rec_stop "$REC_PID" INT 30
	else
		not_ok "recorder with stacks and a ctl trigger starts" "$(cat "$LOG")"
	fi
fi

# ---- a storm: every hit counted once, everywhere ---------------------------------------
# ~1000 slow sleeps (limit=250ms, after=100ms: merged during the delay,
# rate-limited after it) and 200 `ctl trigger` of a second trigger at once.
D=$T_TMP/storm
if rec_start "$LOG" -o "$D" --ctl "$CTL" -e sched \
	--trigger 'syscall:clock_nanosleep>500us,comm=trigwork,name=storm,limit=250ms,after=100ms' \
	--trigger 'ctl,name=burst,limit=0,after=50ms'; then
	run_with_timeout 60 "$W" storm 1000 >"$T_TMP/w.out" 2>&1 &
	WP=$!
	CP=()
	for _ in $(seq 20); do
		for _ in $(seq 10); do
			ctl trigger burst >/dev/null 2>&1 &
			CP+=($!)
		done
		sleep 0.05
	done
	wait "$WP" "${CP[@]}" # (not the recorder: it is a job of this shell too)
	sleep 0.3
	st=$(ctl status 2>&1)
	for t in storm burst; do
		c=$(status_counts $t "$st")
		adds_up "$c" && ok "storm: ctl status, $t: hits = dumped + merged + rate-limited + dropped + pending ($c)" ||
			not_ok "storm: ctl status adds up for $t" "$(echo "$st" | grep "^  $t:")"
	done
	rec_stop "$REC_PID" INT 30
	final=$(find "$D" -name '*.btd' | sort | tail -1)
	n=$(find "$D" -name '*.btd' | wc -l)
	if [ -z "$final" ] || ! "$BT" report --stats "$final" | grep -q "reason exit"; then
		not_ok "storm: a final dump" "$(ls "$D"; tail -5 "$LOG")"
	else
		nd=0 # dumps whose first named hit is the storm trigger's / the burst's
		for f in "$D"/*.btd; do
			first=$("$BT" report --stats "$f" | sed -n 's/^trigger: *\([a-z]*\) (.*/\1/p' | head -1)
			[ "$first" = storm ] && nd=$((nd + 1))
		done
		for t in storm burst; do
			r=$(report_counts $t "$final")
			m=$(manifest_counts $t "$final")
			read -r h d mg lim x p <<<"$r"
			adds_up "$r" && [ "$p" -eq 0 ] && [ "$h" -ge 1 ] &&
				ok "storm: final dump's report, $t: every hit ended exactly once: $h hits = $d dumped + $mg merged + $lim rate-limited + $x dropped" ||
				not_ok "storm: final report adds up for $t, nothing pending" "'$r'; $("$BT" report --stats "$final" | grep -A1 "^  $t ")"
			[ "$m" = "$r" ] && ok "storm: the manifest counts $t's hits as the report does ($m)" ||
				not_ok "storm: manifest = report for $t" "manifest '$m', report '$r'"
		done
		read -r h d _ <<<"$(report_counts storm "$final")"
		[ "$d" -eq "$nd" ] && ok "storm: dumped ($d) = the dumps the storm trigger started ($nd of $n files)" ||
			not_ok "storm: dumped = dumps started by the trigger" "dumped $d, files started by it $nd of $n"
		[ "$(report_counts burst "$final" | awk '{ print $3 }')" -gt 0 ] &&
			ok "storm: burst hits during a pending dump were merged into it" ||
			not_ok "storm: merged hits" "$(report_counts burst "$final")"
	fi
else
	not_ok "recorder with storm triggers starts" "$(cat "$LOG")"
fi

# ---- stop with hits pending: one final dump, within 5 s ------------------------------------
D=$T_TMP/stop
if rec_start "$LOG" -o "$D" --ctl "$CTL" -e sched --trigger 'ctl,name=late,after=60s' \
	--trigger 'ctl,name=now,limit=0,after=0'; then
	ctl trigger late >/dev/null
	CP=()
	for _ in $(seq 30); do
		ctl trigger now >/dev/null &
		CP+=($!)
	done
	wait "${CP[@]}"
	# the 'now' hits' dumps written (none pending): only the stop's dump comes after
	wait_for 30 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q '^  now: .* + 0 pending\$'" ||
		diag "'now' hits still pending: $(ctl status | grep '^  now:')"
	find "$D" -name '*.btd' | sort >"$T_TMP/before.list"
	before=$(wc -l <"$T_TMP/before.list")
	t0=$(date +%s%N)
	rec_stop "$REC_PID" INT 30
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -lt 5000 ] && ok "stop with hits pending: exited in $ms ms (< 5 s)" ||
		not_ok "stop within 5 s" "$ms ms; $(tail -5 "$LOG")"
	after=$(find "$D" -name '*.btd' | wc -l)
	# the stop's dump: the one not there before (by name, a trigger's
	# dump of the same moment may sort after it)
	final=$(find "$D" -name '*.btd' | sort | comm -13 "$T_TMP/before.list" - | tail -1)
	# the 'now' hits may have had a dump or two before the stop; the stop adds exactly one
	[ $((after - before)) -eq 1 ] && ok "stop: exactly one dump written after SIGINT" ||
		not_ok "stop: one final dump" "$before dumps before, $after after; $(tail -5 "$LOG")"
	if [ -n "$final" ]; then
		fs=$("$BT" report --stats "$final")
		echo "$fs" | grep -q "reason exit" && echo "$fs" | grep -q "^trigger: *late (ctl)" &&
			ok "stop: the final dump names the hit still in its after= delay" ||
			not_ok "stop: final dump names the delayed hit" "$(echo "$fs" | grep -E '^(created|trigger)')"
		r=$(report_counts late "$final")
		[ "$r" = "1 0 1 0 0 0" ] || [ "$r" = "1 1 0 0 0 0" ] &&
			ok "stop: the delayed hit counted as in the final dump, not dropped ($r)" ||
			not_ok "stop: delayed hit counted" "'$r'"
		r=$(report_counts now "$final")
		adds_up "$r" && [ "$(echo "$r" | awk '{ print $5 + $6 }')" -eq 0 ] &&
			ok "stop: every 'now' hit in some dump, none dropped or pending ($r)" ||
			not_ok "stop: 'now' hits" "'$r'"
	fi
else
	not_ok "recorder with stop triggers starts" "$(cat "$LOG")"
fi

# ---- stop at once with the queue full: one final dump, within 5 s ------------------------
# 30 hits at once with stacks sampled under a 16 MiB buffer, SIGINT without
# waiting: at most the dump in progress and one final dump come after it
# (the rest merged into the final one), nothing dropped.
D=$T_TMP/stopfull
if rec_start "$LOG" -o "$D" --ctl "$CTL" -e sched --sample 99 -m 16M --trigger 'ctl,name=q,limit=0,after=0'; then
	build/bench/syscall_loop -t "$NCPU" -d 20 >/dev/null 2>&1 &
	LP=$!
	T_PIDS+=("$LP")
	sleep 1
	CP=()
	for _ in $(seq 30); do
		ctl trigger q >/dev/null &
		CP+=($!)
	done
	wait "${CP[@]}"
	find "$D" -name '*.btd' | sort >"$T_TMP/before.list"
	before=$(wc -l <"$T_TMP/before.list")
	t0=$(date +%s%N)
	rec_stop "$REC_PID" INT 30
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill "$LP" 2>/dev/null
	wait "$LP" 2>/dev/null
	after=$(find "$D" -name '*.btd' | wc -l)
	[ "$ms" -lt 5000 ] && ok "stop with the queue full: exited in $ms ms (< 5 s)" ||
		not_ok "stop with the queue full within 5 s" "$ms ms; $(tail -5 "$LOG")"
	# after the count: the dump in progress, the pending one it may start
	# before the signal is handled, and the final one (the rest merged)
	[ $((after - before)) -ge 1 ] && [ $((after - before)) -le 3 ] &&
		ok "stop with the queue full: $((after - before)) dump(s) after the count (in progress, pending, final)" ||
		not_ok "stop with the queue full: 1 to 3 dumps after SIGINT" "$before before, $after after"
	# the stop's dump: the one not there before (by name, a trigger's
	# dump of the same moment may sort after it)
	final=$(find "$D" -name '*.btd' | sort | comm -13 "$T_TMP/before.list" - | tail -1)
	nexit=0
	for f in "$D"/*.btd; do "$BT" report --stats "$f" | grep -q "reason exit" && nexit=$((nexit + 1)); done
	[ "$nexit" -eq 1 ] && ok "stop with the queue full: exactly one final dump" ||
		not_ok "stop with the queue full: one final dump" "$nexit dumps say reason exit"
	if [ -n "$final" ]; then
		r=$(report_counts q "$final")
		read -r h _ _ _ x p <<<"$r"
		adds_up "$r" && [ "$h" -eq 30 ] && [ "$x" -eq 0 ] && [ "$p" -eq 0 ] &&
			ok "stop with the queue full: all 30 hits in some dump, none dropped or pending ($r)" ||
			not_ok "stop with the queue full: 30 hits counted, none dropped" "'$r'"
	fi
else
	not_ok "recorder for the full-queue stop starts" "$(cat "$LOG")"
fi

finish
