#!/usr/bin/env bash
# bench_app.sh - per-event cost of in-process tracing (btrace.h, issue 8),
# side by side in one run with the alternatives (bench/app_bench.c):
#
#   btrace         BTRACE_INSTANT("stamp", t, i, check) into a real recorder's
#                  shared buffer (`btrace-bpf record`, --app-buffer-size 16M)
#   btrace, off    the same call with no recorder attached
#   uprobe         app_bench_fn(t, i, check), a noinline function with the same
#                  arguments, probed by `btrace-bpf record -u` (the probe sits on
#                  a copy of the binary; the other rows run the unprobed one);
#                  it starts with a push, which the kernel emulates (the
#                  cheapest probe); a second row probes app_bench_leaf(), whose
#                  first instruction (lea) is single-stepped (a second trap)
#   LTTng-UST      lttng_ust_tracepoint() and lttng_ust_tracef(), session in
#                  snapshot (overwrite) mode, 2 sub-buffers of 4 MiB per CPU
#   per-thread     bench baseline: each thread its own ring, no atomics
#   per-core ovw   bench/baselines.h bl_pcow (ftrace-like)
#   per-core drop  bench/baselines.h bl_pcdrop (LTTng-like)
#   clock floor    sched_getcpu() + clock_gettime(CLOCK_BOOTTIME), nothing written
# with 1 thread per CPU and with 32 threads per CPU (all pinned round-robin),
# every variant REPS times, interleaved. Every buffer is 16 MiB in total.
# After the runs, one dump per thread count is checked (events retained, torn,
# duplicated, out of order; the app's dropped counter) so the numbers belong to
# a working path.
#
# Env: APP_BENCH_EVENTS (200000 per thread at 1/CPU; /10 at 32/CPU; the uprobe
#      rows /20 and /200 of that), APP_BENCH_REPS (5), APP_BENCH_NO_WRITE=1 (print only),
#      BENCHMARKS_MD (default BENCHMARKS.md); APP_BENCH_STRICT=1: exit 1 when a
#      target is missed (otherwise only a broken measurement fails).
set -uo pipefail

# Run, show, and keep the output as the app section of BENCHMARKS.md.
. "$(dirname "$0")/bench_md.sh"
bench_md_section() {
	cat <<MD
<!-- app:begin -->
## In-process tracing (btrace.h): cost per event

Reproduce: \`sudo scripts/bench_app.sh\` ($when; part of \`make bench\`). T threads pinned
round-robin to the CPUs each record stamp(t, i, check), three integer arguments, through each tracer;
a timed phase measures every event with rdtsc (the timer's own cost is measured in the same process and
subtracted: *net*), an untimed phase gives the mean CPU time per event without a timer (*cpu mean*).
Every variant runs several times interleaved; each number is the median over the runs. The baselines and
the clock floor write the record btrace writes (CLOCK_BOOTTIME stamp, seq, tid, tgid, CPU, name id, 3
args); every buffer is 16 MiB. The dump check proves the btrace rows recorded into a working buffer.

\`\`\`
$body
\`\`\`
<!-- app:end -->
MD
}
bench_md_run app BT_APP_INNER "${APP_BENCH_NO_WRITE:-}" '^variant' "$0" "$@"
cd "$(dirname "$0")/.." || exit 1

B=$PWD/build/bench/app_bench
BL=$PWD/build/bench/app_bench_lttng
BT=$PWD/build/btrace-bpf
NCPU=$(nproc)
N1=${APP_BENCH_EVENTS:-200000}
NOV=$((N1 / 10))
REPS=${APP_BENCH_REPS:-5}
T1=$NCPU
TOV=$((32 * NCPU))

if [ "$(id -u)" -ne 0 ]; then
	echo "bench_app: needs root (the recorder, uprobes); skipped"
	exit 0
fi
make --no-print-directory -s "$B" "$BT" >/dev/null || { echo "bench_app: cannot build $B" >&2; exit 1; }
lttng_why=
if [ ! -r /usr/include/x86_64-linux-gnu/lttng/tracepoint.h ] && [ ! -r /usr/include/lttng/tracepoint.h ]; then
	lttng_why="liblttng-ust-dev not installed (scripts/install-deps.sh --bench)"
elif ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null; then
	lttng_why="lttng-tools not installed (scripts/install-deps.sh --bench)"
elif ! make --no-print-directory -s "$BL" >/dev/null 2>"${TMPDIR:-/tmp}/bench_app_lttng_build.log"; then
	lttng_why="build/bench/app_bench_lttng does not build: $(head -1 "${TMPDIR:-/tmp}/bench_app_lttng_build.log")"
fi

tmp=$(mktemp -d /tmp/bt-bench-app.XXXXXX)
rpid=
sess_pid=
session=
cleanup() {
	[ -n "$session" ] && lttng destroy "$session" >/dev/null 2>&1
	[ -n "$sess_pid" ] && kill "$sess_pid" 2>/dev/null
	[ -n "$rpid" ] && kill -INT "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# ---- the recorder: app buffers and the uprobe on the probed copy ----------------
cp "$B" "$tmp/app_bench_probed"
CTL=$tmp/ctl.sock
"$BT" record -e sched --ctl "$CTL" -o "$tmp/dumps" --app-buffer-size 16M --no-final-dump \
	-u "$tmp/app_bench_probed:app_bench_fn" -u "$tmp/app_bench_probed:app_bench_leaf" >"$tmp/record.log" 2>&1 &
rpid=$!
for _ in $(seq 200); do grep -q 'recording (pid' "$tmp/record.log" && break; sleep 0.05; done
if ! grep -q 'recording (pid' "$tmp/record.log"; then
	echo "bench_app: btrace-bpf record did not start: $(tail -2 "$tmp/record.log")" >&2
	exit 1
fi

# ---- LTTng-UST session (snapshot = flight-recorder mode, 16 MiB like the rest) ----
if [ -z "$lttng_why" ]; then
	if ! pgrep -x lttng-sessiond >/dev/null; then
		lttng-sessiond --daemonize --no-kernel --pidfile "$tmp/sessiond.pid" >"$tmp/sessiond.log" 2>&1
		sess_pid=$(cat "$tmp/sessiond.pid" 2>/dev/null)
		[ -n "$sess_pid" ] || lttng_why="lttng-sessiond does not start: $(tail -1 "$tmp/sessiond.log")"
	fi
fi
if [ -z "$lttng_why" ]; then
	session=btrace-app-bench-$$
	sub=$((8 * 1024 * 1024 / NCPU / 2))
	if ! { lttng create "$session" --snapshot -o "$tmp/lttng" &&
		lttng enable-channel -u -s "$session" --subbuf-size "$sub" --num-subbuf 2 ch &&
		lttng enable-event -u -s "$session" -c ch app_bench:stamp &&
		lttng enable-event -u -s "$session" -c ch 'lttng_ust_tracef:*' &&
		lttng start "$session"; } >"$tmp/lttng.log" 2>&1; then
		lttng_why="lttng session setup failed: $(grep -i error "$tmp/lttng.log" | head -1)"
		session=
	fi
fi

echo "in-process tracing cost per event: kernel $(uname -r), $NCPU CPUs ($(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)), $REPS runs per variant interleaved"
echo "threads pinned round-robin; $T1 threads x $N1 events and $TOV threads x $NOV events per phase (uprobe: /20)"
[ -n "$lttng_why" ] && echo "LTTng-UST rows skipped: $lttng_why"

broken=0
declare -A GM P99 CPU TIMER
run() { # key tracer threads events [binary] [env...]
	local key=$1 tr=$2 th=$3 ev=$4 bin=${5:-$B} out
	shift 5 2>/dev/null || shift $#
	out=$(env "$@" "$bin" --tracer "$tr" --threads "$th" --events "$ev" 2>"$tmp/run.err") ||
		{ echo "bench_app: $tr x$th failed: $(tail -1 "$tmp/run.err")" >&2; broken=1; return 1; }
	# net = the geomean minus the timer's geomean of the same process
	GM[$key]+=" $(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { printf "%.1f", v["gm"] - v["timer_gm"] }' <<<"$out")"
	P99[$key]+=" $(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { print v["p99"] }' <<<"$out")"
	CPU[$key]+=" $(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { print v["cpu"] }' <<<"$out")"
	TIMER[$key]+=" $(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { print v["timer_gm"] }' <<<"$out")"
	LAST_PID=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "pid") print kv[2] } }' <<<"$out")
	return 0
}
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# Check the last btrace run of a thread count in a dump: every retained stamp
# untorn, unique and in per-thread order; how many retained; dropped counter.
check_dump() { # threads events_per_phase pid
	local th=$1 ev=$2 pid=$3 dump st
	"$BT" ctl --ctl "$CTL" dump >"$tmp/dump.out" 2>&1
	dump=$(grep -o '/[^ ]*\.btd' "$tmp/dump.out" | tail -1)
	[ -n "$dump" ] || dump=$(ls -t "$tmp"/dumps/*.btd 2>/dev/null | head -1)
	st=$("$BT" ctl --ctl "$CTL" status 2>/dev/null | grep "^app $pid ")
	if [ -z "$dump" ] || ! "$BT" report -p "$pid" "$dump" >"$tmp/report.txt" 2>"$tmp/report.err"; then
		echo "dump check $th threads: no dump or report failed: $(tail -1 "$tmp/dump.out" "$tmp/report.err" 2>/dev/null | tail -1)"
		broken=1
		return
	fi
	python3 - "$tmp/report.txt" "$th" "$((2 * ev))" "$st" <<'PY' || broken=1
import re, sys
path, nth, nev, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rx = re.compile(r"app_instant: stamp arg1=(-?\d+) arg2=(-?\d+) arg3=(-?\d+)")
per, bad = {}, 0
for line in open(path):
    m = rx.search(line)
    if not m:
        continue
    t, i, c = (int(x) for x in m.groups())
    want = ((i * 2654435761) & (2**64 - 1)) ^ t
    if want >= 2**63:
        want -= 2**64
    if c != want or not 0 <= t < nth or not 0 <= i < nev:
        bad += 1
        continue
    per.setdefault(t, []).append(i)
total = sum(len(v) for v in per.values())
dup = sum(len(v) - len(set(v)) for v in per.values())
order = sum(1 for v in per.values() if v != sorted(v))
# newest contiguous stretch per thread: events nev-k..nev-1 all present
suffix = 0
for v in per.values():
    s = set(v)
    k = nev - 1
    while k in s:
        k -= 1
    suffix += nev - 1 - k
m = re.search(r"dropped=(\d+)", status)
dropped = m.group(1) if m else "?"
ok = bad == 0 and dup == 0 and order == 0 and total > 0 and dropped == "0"
print("dump check %d threads: %d of %d events retained (%.0f%%; the newest %d contiguous per thread), "
      "%d threads, %d torn, %d duplicated, %d threads out of order, app dropped=%s: %s"
      % (nth, total, nth * nev, 100.0 * total / (nth * nev), suffix, len(per), bad, dup, order, dropped,
         "ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
}

VARIANTS=(off btrace call uprobe uprobe-ss clock thread pcow pcdrop)
# tracef before the tracepoint: the snapshot at the end shows the tracepoint's events
[ -z "$lttng_why" ] && VARIANTS+=(lttng-tracef lttng-tp)
for r in $(seq "$REPS"); do
	for cfg in 1 ov; do
		if [ "$cfg" = 1 ]; then th=$T1 ev=$N1; else th=$TOV ev=$NOV; fi
		for v in "${VARIANTS[@]}"; do
			case $v in
			off) run "$v/$cfg" off "$th" "$ev" "$B" BTRACE_CTL="$tmp/none.sock" BTRACE_RETRY_MS=100000 ;;
			btrace)
				run "$v/$cfg" btrace "$th" "$ev" "$B" BTRACE_CTL="$CTL" || continue
				[ "$r" -eq "$REPS" ] && check_dump "$th" "$ev" "$LAST_PID" >>"$tmp/checks.txt"
				;;
			call) run "$v/$cfg" call "$th" $((ev / 20)) "$B" BTRACE_CTL="$tmp/none.sock" ;;
			uprobe) run "$v/$cfg" uprobe "$th" $((ev / 20)) "$tmp/app_bench_probed" BTRACE_CTL="$tmp/none.sock" ;;
			uprobe-ss) run "$v/$cfg" uprobe-ss "$th" $((ev / 200)) "$tmp/app_bench_probed" BTRACE_CTL="$tmp/none.sock" ;;
			lttng-*) run "$v/$cfg" "$v" "$th" "$ev" "$BL" BTRACE_CTL="$tmp/none.sock" ;;
			*) run "$v/$cfg" "$v" "$th" "$ev" "$B" BTRACE_CTL="$tmp/none.sock" ;;
			esac
		done
	done
done

# ---- LTTng: what its buffers hold ------------------------------------------------
lttng_note=
if [ -n "$session" ]; then
	lttng stop "$session" >"$tmp/lttng-stop.log" 2>&1
	disc=$(grep -io 'discarded.*\|lost.*' "$tmp/lttng-stop.log" | head -1)
	if command -v babeltrace2 >/dev/null && lttng snapshot record -s "$session" >/dev/null 2>&1; then
		n=$(babeltrace2 "$tmp/lttng" 2>/dev/null | grep -c 'app_bench:stamp')
		nf=$(babeltrace2 "$tmp/lttng" 2>/dev/null | grep -c 'lttng_ust_tracef:event')
		lttng_note="LTTng snapshot after all runs: $n app_bench:stamp + $nf tracef events retained${disc:+, $disc}"
	else
		lttng_note="LTTng: babeltrace2 missing, snapshot not counted${disc:+; $disc}"
	fi
fi

# ---- table -------------------------------------------------------------------------
label() {
	case $1 in
	btrace) echo "btrace.h BTRACE_INSTANT (recorder)" ;;
	off) echo "btrace.h, no recorder attached" ;;
	uprobe) echo "uprobe, btrace-bpf record -u (push)" ;;
	uprobe-ss) echo "uprobe, single-stepped 1st insn" ;;
	call) echo "plain call of the probed function" ;;
	clock) echo "clock floor (getcpu + BOOTTIME)" ;;
	thread) echo "per-thread ring, no atomics" ;;
	pcow) echo "per-core overwrite ring (ftrace-like)" ;;
	pcdrop) echo "per-core drop ring (LTTng-like)" ;;
	lttng-tp) echo "LTTng-UST tracepoint" ;;
	lttng-tracef) echo "LTTng-UST tracef" ;;
	esac
}
printf '\n%-38s %27s   %27s\n' "" "$T1 threads (1 per CPU)" "$TOV threads (32 per CPU)"
printf '%-38s %9s %8s %8s   %9s %8s %8s\n' "variant" "gm net" "p99" "cpu mean" "gm net" "p99" "cpu mean"
for v in "${VARIANTS[@]}"; do
	[ -n "${GM[$v/1]:-}${GM[$v/ov]:-}" ] || continue
	printf '%-38s %9s %8s %8s   %9s %8s %8s\n' "$(label "$v")" \
		"$(med "${GM[$v/1]:-}")" "$(med "${P99[$v/1]:-}")" "$(med "${CPU[$v/1]:-}")" \
		"$(med "${GM[$v/ov]:-}")" "$(med "${P99[$v/ov]:-}")" "$(med "${CPU[$v/ov]:-}")"
done
echo "(ns per event, medians of $REPS runs; gm net = geometric mean of the rdtsc-timed events minus the timer's"
echo " own geometric mean, $(med "${TIMER[btrace/1]:-}") ns; p99 includes the timer; cpu mean = CPU time per event of the untimed phase)"
echo
cat "$tmp/checks.txt" 2>/dev/null
[ -n "$lttng_note" ] && echo "$lttng_note"
[ -n "$lttng_why" ] && echo "LTTng-UST rows skipped: $lttng_why"

# ---- verdicts ----------------------------------------------------------------------
echo
missed=0
for cfg in 1 ov; do
	bt=$(med "${GM[btrace/$cfg]:-}")
	up=$(med "${GM[uprobe/$cfg]:-}")
	ss=$(med "${GM[uprobe-ss/$cfg]:-}")
	lt=$(med "${GM[lttng-tp/$cfg]:-}")
	th=$T1
	[ "$cfg" = ov ] && th=$TOV
	v=$(awk -v bt="$bt" -v up="$up" -v ss="$ss" -v lt="$lt" -v th="$th" 'BEGIN {
		m = 0
		printf "%d threads: geomean %.1f ns (target < 50): %s", th, bt, (bt < 50 ? "MET" : "MISSED"); if (bt >= 50) m = 1
		if (up != "-" && bt > 0) { printf "; uprobe %.0fx dearer, single-stepped uprobe %.0fx (target >= 100x): %s", up / bt, ss / bt, (up / bt >= 100 ? "MET" : ss / bt >= 100 ? "MET only against the single-stepped probe" : "MISSED"); if (up / bt < 100) m = 1 }
		if (lt != "-" && lt != "") { printf "; LTTng-UST tracepoint %.1f ns (target: btrace no worse): %s", lt, (bt <= lt ? "MET" : "MISSED"); if (bt > lt) m = 1 }
		printf "\n"; exit m }')
	[ $? -eq 0 ] || missed=1
	echo "$v"
done
[ "$broken" -eq 0 ] || { echo "bench_app: some measurements were broken (see above)" >&2; exit 1; }
if [ "$missed" -eq 1 ] && [ "${APP_BENCH_STRICT:-0}" = 1 ]; then
	exit 1
fi
exit 0
