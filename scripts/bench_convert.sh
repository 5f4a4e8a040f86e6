#!/usr/bin/env bash
# bench_convert.sh - `btrace-bpf convert` on a full default buffer (64 MiB)
# with call stacks and function tracing on (issue 25), side by side in one
# run: convert time (median of REPS, interleaved) and output size for
# Perfetto, JSON and pprof (CPU and off-CPU), bytes per dump event; with
# BT_BASE=path/to/an/older/btrace-bpf the same conversions by that binary
# in the same run (the "before" column; formats it lacks are left out).
#
# The recording: record -e all --sample 999 --stacks switch,wakeup for SECS
# seconds while stack_workload (CPU stacks, blocking reads), pingpong (sched
# and syscalls) and func_bench_instr (fib, every call traced by
# -finstrument-functions) run, so the kernel buffer wraps; one ctl dump.
#
# Usage: sudo scripts/bench_convert.sh [--quick] [--no-md]. Results on
# stdout, the table into BENCHMARKS.md (<!-- convert:begin --> section).
# KEEP_DUMP=path keeps the recorded dump there (to convert it again by hand).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/bench_md.sh
BT=$PWD/build/btrace-bpf
TB=$PWD/build/tests
FB=$PWD/build/bench/func_bench_instr
BASE=${BT_BASE:-}
. scripts/bench_lib.sh
bench_args "$@"
[ "$(id -u)" -eq 0 ] || { echo "bench_convert: needs root" >&2; exit 1; }
for x in "$BT" "$TB/stack_workload" "$TB/pingpong" "$FB"; do
	[ -x "$x" ] || { echo "bench_convert: $x missing: make all benches" >&2; exit 1; }
done
SECS=${SECS:-15}
REPS=${REPS:-3}
[ "$quick" -eq 1 ] && SECS=5 REPS=1
bench_workdir convert

CTL=$TMP/ctl.sock
"$BT" record -e all --sample 999 --stacks switch,wakeup --ctl "$CTL" -o "$TMP/dumps" --no-final-dump \
	>"$TMP/record.log" 2>&1 &
REC=$!
PIDS+=("$REC")
for _ in $(seq 100); do [ -S "$CTL" ] && break; sleep 0.1; done
[ -S "$CTL" ] || { echo "bench_convert: recorder did not start: $(cat "$TMP/record.log")" >&2; exit 1; }
"$TB/pingpong" -n 1000000000 >/dev/null 2>&1 &
PIDS+=("$!")
echo go | "$TB/stack_workload" "$SECS" 4 20 >/dev/null 2>&1 &
PIDS+=("$!")
end=$((SECONDS + SECS))
# BTRACE_CTL and -w: each fib run registers with the recorder (its calls
# traced in-process), or fails rather than run untraced
while [ "$SECONDS" -lt "$end" ]; do BTRACE_CTL=$CTL "$FB" -n 22 -r 1 -w >/dev/null 2>&1; done
DUMP=$TMP/full.btd
"$BT" ctl --ctl "$CTL" dump -o "$DUMP" >/dev/null 2>&1 || { echo "bench_convert: dump failed" >&2; exit 1; }
kill -INT "$REC" 2>/dev/null
wait "$REC" 2>/dev/null
for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
PIDS=()
DSIZE=$(stat -c %s "$DUMP")
[ -n "${KEEP_DUMP:-}" ] && cp "$DUMP" "$KEEP_DUMP"

# conv BIN NAME ARGS...: median seconds of REPS runs into $TMP/NAME.t, size into $TMP/NAME.sz
conv() {
	local bin=$1 name=$2
	shift 2
	local out=$TMP/$name.out
	: >"$TMP/$name.times"
	for _ in $(seq "$REPS"); do
		local t0 t1
		t0=$(date +%s.%N)
		"$bin" convert -o "$out" "$@" "$DUMP" >/dev/null 2>"$TMP/$name.err" || { echo "-" >"$TMP/$name.t"; return 1; }
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc -l >>"$TMP/$name.times"
	done
	sort -n "$TMP/$name.times" | awk '{ a[NR] = $1 } END { printf "%.2f\n", a[int((NR + 1) / 2)] }' >"$TMP/$name.t"
	stat -c %s "$out" >"$TMP/$name.sz"
	rm -f "$out"
}

FORMATS="perfetto json pprof pprof-offcpu"
args_of() {
	case "$1" in
	perfetto) echo "-f perfetto" ;;
	json) echo "-f json" ;;
	pprof) echo "-f pprof" ;;
	pprof-offcpu) echo "-f pprof --offcpu" ;;
	esac
}
for f in $FORMATS; do
	# shellcheck disable=SC2046
	conv "$BT" "new-$f" $(args_of "$f")
	# shellcheck disable=SC2046
	[ -n "$BASE" ] && conv "$BASE" "old-$f" $(args_of "$f")
done

# Events: what convert says it converted (kernel and application events;
# report --stats' "events:" counts the kernel's only, a fifth of them here).
NEV=$(sed -n 's/.*: \([0-9]*\) events -> .*/\1/p' "$TMP/new-perfetto.err" | head -1)
[ -n "$NEV" ] || NEV=0
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
body=$(
	printf 'dump: %s events, %s MiB (64 MiB buffer, -e all, --sample 999, --stacks switch,wakeup, fib traced)\n' \
		"$NEV" "$(mib "$DSIZE")"
	printf '%-14s %12s %10s %8s' format "size MiB" "B/event" "time s"
	[ -n "$BASE" ] && printf '   %12s %10s %8s' "before MiB" "B/event" "time s"
	printf '\n'
	for f in $FORMATS; do
		sz=$(cat "$TMP/new-$f.sz" 2>/dev/null || echo 0)
		printf '%-14s %12s %10s %8s' "$f" "$(mib "$sz")" "$(awk -v a="$sz" -v n="$NEV" 'BEGIN { printf "%.1f", n ? a / n : 0 }')" \
			"$(cat "$TMP/new-$f.t")"
		if [ -n "$BASE" ]; then
			if [ -s "$TMP/old-$f.sz" ]; then
				osz=$(cat "$TMP/old-$f.sz")
				printf '   %12s %10s %8s' "$(mib "$osz")" \
					"$(awk -v a="$osz" -v n="$NEV" 'BEGIN { printf "%.1f", n ? a / n : 0 }')" "$(cat "$TMP/old-$f.t")"
			else
				printf '   %12s' "(no such format)"
			fi
		fi
		printf '\n'
	done
)
echo "$body"
if [ "$write_md" -eq 1 ]; then
	when=$(date -u +%Y-%m-%d)
	sect=$TMP/md
	cat >"$sect" <<MD
<!-- convert:begin -->
## convert: time and size per format (full default buffer, stacks and function tracing on)

Reproduce: \`sudo BT_BASE=/path/to/older/btrace-bpf scripts/bench_convert.sh\` ($when; part of \`make bench\`).
Median of $REPS conversions each, old and new binaries interleaved in one run on a shared machine.
"before" is the binary given as BT_BASE. pprof is gzipped and deduplicated by stack: tens of
KiB, so 0.0 MiB here.

\`\`\`
$body
\`\`\`
<!-- convert:end -->
MD
	bench_md_put convert "$sect"
fi
