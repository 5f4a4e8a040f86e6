#!/usr/bin/env bash
# test_convert.sh - `btrace-bpf convert` on real recordings: a 2 s recording
# of every event group with a known workload (tests/workloads/pingpong.c) is
# converted to Perfetto protobuf (compact and plain sched, gzip) and Chrome
# JSON, and each output is checked by tests/perfetto/check_trace.py against
# the dump: event counts per type equal `btrace-bpf report`'s, every tid has a
# name, timestamps never decrease per CPU, slices nest, a LOST slice per seq
# gap, the loss counters present. Then the error paths (damaged dump, failing
# write) and, when record has uprobes (-u), function slices of
# tests/workloads/uprobe_target.c (recursive bt_fib: nested slices). Last,
# application events (in-process tracing): tests/workloads/app_stress.c traced
# next to the kernel's sched events, its slices, instants and counters
# counted against the dump and placed on its threads' tracks.
#
# Needs root (record). Env (set by tests/run.sh): BTRACE_BPF, TEST_BIN.
# Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

CHECKER=tests/perfetto/check_trace.py
PROTO=tests/perfetto/perfetto_subset.proto

need_root "convert tests"
if [ ! -x "$BT" ] || [ ! -x "$TB/pingpong" ]; then
	not_ok "build: $BT and $TB/pingpong exist" "run make first"
	finish
	exit 1
fi
if ! "$BT" convert --help >/dev/null 2>&1; then
	skip "convert tests" "$BT has no convert command (user/main.c does not dispatch it yet)"
	finish
	exit $?
fi
HAVE_PROTOC=1
command -v protoc >/dev/null 2>&1 || HAVE_PROTOC=0
need_cmd "convert tests" python3

# "name=N,..." per event type from a report (one line per event)
# (one awk pass: sed | sort | uniq -c took 7 s of 500k lines)
report_counts() {
	LC_ALL=C awk 'match($0, /^[^[]*\[[0-9]+\] +[0-9]+\.[0-9]+: [a-z_]+:/) {
			s = substr($0, 1, RLENGTH - 1); sub(/.*: /, "", s); c[s]++ }
		END { for (k in c) printf "%s=%s\n", k, c[k] }' "$1" | LC_ALL=C sort | paste -sd, -
}

# checker FORMAT FILE ARGS...: ok/not_ok with the checker's lines
checker() {
	local fmt=$1 file=$2 out
	shift 2
	if out=$(python3 "$CHECKER" "$fmt" "$file" --proto "$PROTO" "$@" 2>&1); then
		ok "$fmt checks: $(basename "$file")"
		printf '%s\n' "$out" | sed 's/^/#   /'
	else
		not_ok "$fmt checks: $(basename "$file")" "$out"
	fi
}

# checker_bg FORMAT FILE ARGS...: the checker in the background (each run
# decodes a whole trace, 10-20 s of one CPU: the three of the big recording
# share the CPUs); checker_join reports them in the order they were started
CHK=()
checker_bg() {
	local fmt=$1 file=$2
	shift 2
	python3 "$CHECKER" "$fmt" "$file" --proto "$PROTO" "$@" >"$T_TMP/chk.${#CHK[@]}" 2>&1 &
	CHK+=("$! $fmt $file")
}
checker_join() {
	local i pid fmt file
	for i in "${!CHK[@]}"; do
		read -r pid fmt file <<<"${CHK[$i]}"
		if wait "$pid"; then
			ok "$fmt checks: $(basename "$file")"
			sed 's/^/#   /' "$T_TMP/chk.$i"
		else
			not_ok "$fmt checks: $(basename "$file")" "$(cat "$T_TMP/chk.$i")"
		fi
	done
	CHK=()
}

# ---- a recording of everything with a known workload --------------------------
OUT=$T_TMP/rec
LOG=$T_TMP/rec.log
# Debian's python3: its samples carry Python frames, which every export
# must name as report does (pprof did not: CI, a Python process by chance).
# Started first and running to the end: one started inside the 2 s under
# load had its first samples before its interpreter was known (no frames).
PY=/usr/bin/python3.11
PY_PID=
if [ -x "$PY" ]; then
	"$PY" tests/workloads/py_chain.py 600000 >/dev/null 2>&1 &
	PY_PID=$!
	T_PIDS+=("$PY_PID")
fi
# 4 MiB: the dump holds the last ~250k events, enough to check, quick to decode
if ! rec_start "$LOG" -o "$OUT" --duration 2s -e all -m 4M; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi
ok "recorder starts (-e all --duration 2s)"
# the workload runs until the recording ends, so the retained window has it
"$TB/pingpong" -n 100000000 -a bt-cping -b bt-cpong >"$T_TMP/pp.txt" 2>&1 &
PP_PID=$!
T_PIDS+=("$PP_PID")
if wait_for 30 sh -c "! kill -0 $REC_PID"; then
	ok "recorder stops by itself after --duration"
else
	not_ok "recorder stops by itself after --duration" "$(cat "$LOG")"
	rec_stop "$REC_PID" INT
fi
kill "$PP_PID" $PY_PID 2>/dev/null
wait "$PP_PID" $PY_PID 2>/dev/null
diag "workload: $(head -1 "$T_TMP/pp.txt")"
DUMP=$(ls -t "$OUT"/*.btd 2>/dev/null | head -1)
if [ -z "$DUMP" ] || [ ! -s "$DUMP" ]; then
	not_ok "the recording wrote a dump" "$(cat "$LOG")"
	finish
	exit 1
fi
ok "the recording wrote a dump"

"$BT" report "$DUMP" >"$T_TMP/report.txt" 2>"$T_TMP/report.err"
EXPECT=$(report_counts "$T_TMP/report.txt")
GAPS=$(grep -c '\[LOST [0-9]* EVENTS\]' "$T_TMP/report.txt")
NEV=$(echo "$EXPECT" | tr ',' '\n' | awk -F= '{ s += $2 } END { print s + 0 }')
diag "dump: $NEV events, $GAPS seq gaps: $EXPECT"
check "the dump has sched events of the workload" grep -q 'bt-cping' "$T_TMP/report.txt"

# ---- perfetto ------------------------------------------------------------------------
PF=$T_TMP/trace.perfetto-trace
check "convert (perfetto, compact sched)" "$BT" convert -q -o "$PF" "$DUMP"
PFN=$T_TMP/trace-plain.perfetto-trace
check "convert --no-compact-sched" "$BT" convert -q --no-compact-sched -o "$PFN" "$DUMP"
PFZ=$T_TMP/trace.perfetto-trace.gz
check "convert -z" "$BT" convert -q -z -o "$PFZ" "$DUMP"
check "gzip output is gzip" sh -c "head -c 2 '$PFZ' | od -An -tx1 | grep -q '1f 8b'"
check "gzip output inflates to the plain output" sh -c "gzip -dc '$PFZ' | cmp -s - '$PF'"
# the call stacks (samples at 49 Hz by default) are checked in the same
# pass: each checker run decodes the whole trace, most of this test's time
NSAMP=$(grep -c ': cpu_sample: ' "$T_TMP/report.txt")
STACKS=()
[ "$NSAMP" -gt 0 ] && STACKS=(--stacks "$NSAMP")
if [ "$HAVE_PROTOC" -eq 1 ]; then
	checker_bg perfetto "$PF" --expect "$EXPECT" --gaps "$GAPS" --same-sched-as "$PFN" "${STACKS[@]}"
	checker_bg perfetto "$PFN" --expect "$EXPECT" --gaps "$GAPS"
else
	skip "perfetto output decodes with protoc" "protoc not installed (scripts/install-deps.sh)"
fi
diag "sizes: dump $(stat -c %s "$DUMP"), perfetto $(stat -c %s "$PF") (plain sched $(stat -c %s "$PFN"), gzip $(stat -c %s "$PFZ"))"

# the same bytes on standard output
check "convert -o - writes the same trace to standard output" sh -c "'$BT' convert -q -o - '$DUMP' | cmp -s - '$PF'"

# ---- json --------------------------------------------------------------------------------
JS=$T_TMP/trace.json
check "convert --format json" "$BT" convert -q --format json -o "$JS" "$DUMP"
checker_bg json "$JS" --expect "$EXPECT" --gaps "$GAPS" "${STACKS[@]}"
check "json parses with python3 -c 'import json'" python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$JS"
check "convert -f json -z" "$BT" convert -q -f json -z -o "$JS.gz" "$DUMP"
check "json gzip inflates to the plain json" sh -c "gzip -dc '$JS.gz' | cmp -s - '$JS'"
diag "sizes: json $(stat -c %s "$JS"), gzip $(stat -c %s "$JS.gz")"
checker_join

# ---- call stacks: pprof (JSON and Perfetto were checked above) --------------------------
if [ "$NSAMP" -gt 0 ]; then
	PP=$T_TMP/cpu.pb.gz
	check "convert -f pprof" "$BT" convert -q -f pprof -o "$PP" "$DUMP"
	"$BT" report --profile "$DUMP" >"$T_TMP/profile.txt" 2>&1
	if [ -x "$PY" ]; then
		check "the profile has Python frames (python3.11 ran)" grep -q ' \[py\]' "$T_TMP/profile.txt"
	fi
	if [ "$HAVE_PROTOC" -eq 1 ]; then
		if out=$(python3 tests/pprof/check_pprof.py "$PP" "$T_TMP/profile.txt" 2>&1); then
			ok "pprof: $NSAMP samples, totals and functions equal report --profile's"
		else
			not_ok "pprof against report --profile" "$out"
		fi
	fi
	# read by the real client, go tool pprof: a system-wide profile has no
	# main binary (not the recorder's), a -p one is its process's; one
	# [unknown] per library, labels, process roots, only used mappings
	NPROC=$(grep -c '^process [0-9]' "$T_TMP/profile.txt")
	PPP=$T_TMP/cpu-p.pb.gz
	PPR=$T_TMP/cpu-root.pb.gz
	check "convert -f pprof -p PID" "$BT" convert -q -f pprof -p "$PP_PID" -o "$PPP" "$DUMP"
	check "convert -f pprof --process-root" "$BT" convert -q -f pprof --process-root -o "$PPR" "$DUMP"
	check "--process-root is for pprof only" sh -c "! '$BT' convert -q --process-root -o '$T_TMP/x.pf' '$DUMP' 2>/dev/null"
	gocheck() {
		local what=$1 out rc
		shift
		out=$(python3 tests/pprof/check_gopprof.py "$@" 2>&1)
		rc=$?
		if [ "$rc" -eq 77 ]; then
			skip "go tool pprof: $what" "go not installed (scripts/install-deps.sh)"
		elif [ "$rc" -eq 0 ]; then
			ok "go tool pprof: $what"
			printf '%s\n' "$out" | sed 's/^/#   /'
		else
			not_ok "go tool pprof: $what" "$out"
		fi
	}
	if [ "$NPROC" -gt 1 ]; then
		gocheck "system-wide, $NPROC processes, no File" "$PP" --no-file --processes "$NPROC"
		gocheck "--process-root: $NPROC roots" "$PPR" --no-file --roots "$NPROC"
	else
		skip "go tool pprof: system-wide" "the dump's samples are of one process"
	fi
	gocheck "-p pingpong: File: pingpong" "$PPP" --file pingpong --processes 1 --no-mapping btrace-bpf
else
	skip "stacks in the exports" "no CPU sample in the dump"
fi

# ---- errors ------------------------------------------------------------------------------
BAD=$T_TMP/bad.btd
cp "$DUMP" "$BAD"
size=$(stat -c %s "$BAD")
# The middle byte inverted (a fixed value was already there one run in 256:
# the "damaged" dump was intact and converted)
byte=$(od -A n -t u1 -j $((size / 2)) -N 1 "$BAD" | tr -d ' ')
printf "\\$(printf '%03o' $((byte ^ 255)))" | dd of="$BAD" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
cmp -s "$DUMP" "$BAD" && not_ok "damaged dump: the copy differs from the dump"
"$BT" report "$BAD" >/dev/null 2>"$T_TMP/bad-report.err"
"$BT" convert -o "$T_TMP/bad.perfetto-trace" "$BAD" 2>"$T_TMP/bad-convert.err"
rc=$?
check "damaged dump: exit 1" test "$rc" -eq 1
# the same words after each names itself ("btrace-bpf report: ", "btrace-bpf convert: ")
sed 's/^btrace-bpf report: //' "$T_TMP/bad-report.err" >"$T_TMP/bad-report.msg"
sed 's/^btrace-bpf convert: //' "$T_TMP/bad-convert.err" >"$T_TMP/bad-convert.msg"
check "damaged dump: the same message as report" cmp -s "$T_TMP/bad-report.msg" "$T_TMP/bad-convert.msg"
diag "$(cat "$T_TMP/bad-convert.err")"
check "damaged dump: no output file" test ! -e "$T_TMP/bad.perfetto-trace"

mkdir -p "$T_TMP/lim"
(ulimit -f 64; "$BT" convert -q -o "$T_TMP/lim/out.perfetto-trace" "$DUMP") 2>"$T_TMP/lim.err"
rc=$?
check "write error (file size limit): exit 1" test "$rc" -eq 1
check "write error: no output and no temporary file" test -z "$(ls -A "$T_TMP/lim")"
diag "$(cat "$T_TMP/lim.err")"

# ---- uprobes (when record has them) -----------------------------------------------------
TARGET=$TB/uprobe_target
if ! "$BT" record --help 2>&1 | grep -q -- '--uargs'; then
	skip "uprobe slices" "record has no -u/-U options yet"
elif [ ! -x "$TARGET" ]; then
	skip "uprobe slices" "no $TARGET (make tests)"
else
	THREADS=2
	"$TARGET" -t $THREADS >"$T_TMP/target.out" 2>&1 &
	TPID=$!
	T_PIDS+=("$TPID")
	wait_for 10 grep -q '^ready' "$T_TMP/target.out"
	UOUT=$T_TMP/urec
	# bt_args6: entry only (calls, never "unmatched"); bt_sleep_us%return alone
	# (slices drawn from the durations the returns carry, docs/manual.md's example)
	if rec_start "$T_TMP/urec.log" -o "$UOUT" -e sched -p "$TPID" -u bt_add -u 'bt_add%return' -u bt_fib \
		-u 'bt_fib%return' -u bt_args6 -u 'bt_sleep_us%return' -U 'uprobe_target:btrace_test:tick'; then
		kill -USR1 "$TPID"
		wait "$TPID"
		sleep 0.3
		rec_stop "$REC_PID" INT
		UD=$(ls -t "$UOUT"/*.btd 2>/dev/null | head -1)
		"$BT" report "$UD" >"$T_TMP/ureport.txt" 2>/dev/null
		UEXP=$(report_counts "$T_TMP/ureport.txt")
		UGAPS=$(grep -c '\[LOST [0-9]* EVENTS\]' "$T_TMP/ureport.txt")
		diag "uprobe dump: $UEXP"
		# bt_add: 50 calls per thread, bt_fib(6): 15 (recursive)
		PAIRS=$((THREADS * (50 + 15)))
		# bt_sleep_us: 3 calls per thread; nothing unmatched without a loss
		ONE=(--uretprobe-slices $((THREADS * 3)))
		[ "$UGAPS" -eq 0 ] && ONE+=(--unmatched 0)
		check "convert the uprobe recording" "$BT" convert -q -o "$T_TMP/u.perfetto-trace" "$UD"
		[ "$HAVE_PROTOC" -eq 1 ] &&
			checker perfetto "$T_TMP/u.perfetto-trace" --expect "$UEXP" --gaps "$UGAPS" --uprobe-slices "$PAIRS" \
				"${ONE[@]}"
		check "convert the uprobe recording to json" "$BT" convert -q -f json -o "$T_TMP/u.json" "$UD"
		checker json "$T_TMP/u.json" --expect "$UEXP" --gaps "$UGAPS" --uprobe-slices "$PAIRS" "${ONE[@]}"
	else
		not_ok "record with uprobes starts" "$(cat "$T_TMP/urec.log")"
	fi
fi

# ---- application events (in-process tracing, btrace.h) -----------------------------------
APP=$TB/app_stress
if [ ! -x "$APP" ]; then
	skip "application events" "no $APP (make tests)"
else
	# A private copy: the uprobes below are on its inode, and test_app
	# runs app_stress beside this test (a writer of its hit once, 9 of 8).
	cp "$APP" "$T_TMP/app_stress" && APP=$T_TMP/app_stress
	AT=8 AN=300
	AOUT=$T_TMP/arec
	ACTL=$T_TMP/actl.sock
	# its writer threads also probed (entry and return): a thread with both
	# uprobe and application events keeps one thread track
	if rec_start "$T_TMP/arec.log" -o "$AOUT" -e sched --ctl "$ACTL" -u "$APP:writer" -u "$APP:writer%return"; then
		BTRACE_CTL=$ACTL run_with_timeout 60 "$APP" -t $AT -n $AN -w 10 >"$T_TMP/app.out" 2>&1
		diag "app_stress: $(head -1 "$T_TMP/app.out")"
		# the recorder has read the app's connection to its end (every name)
		check "the recorder saw the app exit" wait_for 10 sh -c \
			"'$BT' ctl --ctl '$ACTL' status | grep -q ' app_stress exited '"
		rec_stop "$REC_PID" INT
		AD=$(ls -t "$AOUT"/*.btd 2>/dev/null | head -1)
		"$BT" report "$AD" >"$T_TMP/areport.txt" 2>/dev/null
		AEXP=$(report_counts "$T_TMP/areport.txt")
		diag "app dump: $AEXP"
		# every 16th stamp of a thread is wrapped in a "batch" slice and followed by a counter
		NB=$((AT * ((AN + 15) / 16)))
		NBEGIN=$(grep -c ': app_begin: ' "$T_TMP/areport.txt")
		check "the dump has the application's events (report: $NBEGIN app_begin, $NB expected)" \
			test "$NBEGIN" -eq "$NB" -a "$(grep -c ': app_instant: stamp ' "$T_TMP/areport.txt")" -eq $((AT * AN))
		# per-thread seq gaps as report --stats counts them (none expected here)
		AGAPS=$("$BT" report --stats "$AD" 2>/dev/null |
			sed -nE 's/.*per-thread seq gaps: ([0-9]+) gaps.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
		check "convert the application recording" "$BT" convert -q -o "$T_TMP/a.perfetto-trace" "$AD"
		check "the dump has a writer entry and return per thread" \
			test "$(grep -c ': uprobe: writer ' "$T_TMP/areport.txt")" -eq $AT -a \
			"$(grep -c ': uretprobe: writer ' "$T_TMP/areport.txt")" -eq $AT
		[ "$HAVE_PROTOC" -eq 1 ] &&
			checker perfetto "$T_TMP/a.perfetto-trace" --expect "$AEXP" --gaps 0 --app-slices "$NB" \
				--app-gaps "$AGAPS" --uprobe-slices $AT
		check "convert the application recording to json" "$BT" convert -q -f json -o "$T_TMP/a.json" "$AD"
		checker json "$T_TMP/a.json" --expect "$AEXP" --gaps 0 --app-slices "$NB" --app-gaps "$AGAPS" \
			--uprobe-slices $AT
		# the app's threads: their app track carries the kernel's tid and pid
		APID=$(sed -nE 's/.*app_stress-([0-9]+) .*: app_instant: .*/\1/p' "$T_TMP/areport.txt" | head -1)
		if [ "$HAVE_PROTOC" -eq 1 ] && [ -n "$APID" ]; then
			protoc -I tests/perfetto --decode=perfetto.protos.Trace perfetto_subset.proto \
				<"$T_TMP/a.perfetto-trace" >"$T_TMP/a.txt" 2>&1
			# one thread track per tid (a second one is tid reuse to trace_processor),
			# the application events on its "app events" child track
			tr '\n' ' ' <"$T_TMP/a.txt" >"$T_TMP/a.line"
			TUUID=$(sed -nE "s/.*uuid: ([0-9]+) +thread \\{ +pid: [0-9]+ +tid: $APID .*/\1/p" "$T_TMP/a.line")
			check "perfetto: the app's thread $APID has one thread track" \
				test -n "$TUUID" -a "$(grep -oE "thread \\{ +pid: [0-9]+ +tid: $APID " "$T_TMP/a.line" | wc -l)" -eq 1
			check "perfetto: the app's thread $APID has an \"app events\" child track" \
				grep -qzE "name: \"app events\"\s+parent_uuid: $TUUID\s" "$T_TMP/a.txt"
			check "perfetto: a process track named app_stress" \
				grep -qzE "process \\{\s+pid: [0-9]+\s+process_name: \"app_stress\"" "$T_TMP/a.txt"
			check "perfetto: the \"progress\" counter track" grep -qzE "name: \"progress\"\s+parent_uuid: [0-9]+\s+counter" "$T_TMP/a.txt"
		fi
	else
		not_ok "record for application events starts" "$(cat "$T_TMP/arec.log")"
	fi
fi

finish
