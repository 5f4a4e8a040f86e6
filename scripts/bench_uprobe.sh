#!/usr/bin/env bash
# bench_uprobe.sh - cost per probed call of a user-space function, side by side:
#
#   empty BPF uprobe      bpf/uprobe.bpf.c's empty program: the kernel's trap
#                         and BPF dispatch with nothing done (the floor)
#   btrace-bpf uprobe     btrace-bpf's entry program (seq, ring reservation,
#                         header, 6 arguments, submit), ring drained as record does
#   bpftrace count()      bpftrace -e 'uprobe:BIN:bench_fn { @c = count(); }'
#   perf probe + record   perf probe -x BIN bench_fn; perf record -e probe_...
#   btrace-bpf record     the same through `btrace-bpf record -u` (when it has -u)
# and for return probes: empty uprobe + uretprobe against btrace-bpf's f + f%return.
# The probed function starts with a push, which x86 uprobes emulate (the
# cheapest trap); a second pair of rows probes a function whose first
# instruction is single-stepped out of line (a second trap), as any
# instruction the kernel cannot emulate is.
#
# The workload is build/bench/uprobe_bench (bench/uprobe_bench.c): N calls of
# a small function, timed, the loop pinned to the last CPU. Every variant runs
# REPS times, interleaved; the minimum is the estimate (noise only ever adds),
# the median is shown too. A separate pass with BPF run-time statistics splits
# the cost into the kernel's trap and the BPF program's own time.
#
# Env: UPROBE_BENCH_CALLS (20000), UPROBE_BENCH_REPS (21),
#      UPROBE_BENCH_TARGET_PCT (10): btrace-bpf's cost over the floor's, at most;
#      UPROBE_BENCH_STRICT=1: exit 1 when the target is missed (otherwise the
#      verdict is printed and only a broken measurement fails).
set -uo pipefail

# Run the measurement, show it, and keep its output as the uprobe section of
# BENCHMARKS.md (between <!-- uprobe:begin --> and <!-- uprobe:end -->).
. "$(dirname "$0")/bench_md.sh"
bench_md_section() {
	cat <<MD
<!-- uprobe:begin -->
## Uprobe cost per probed call

Reproduce: \`sudo scripts/bench_uprobe.sh\` ($when). The floor is an empty BPF uprobe program on the same
function; the kernel's trap is floor minus the empty program's own run time. A probe whose first instruction
the kernel emulates (push) traps in ~0.4 us; one it must single-step costs ~14 us on this VM.

\`\`\`
$body
\`\`\`
<!-- uprobe:end -->
MD
}
bench_md_run uprobe BT_UPROBE_INNER "${UPROBE_NO_WRITE:-}" '' "$0" "$@"
cd "$(dirname "$0")/.." || exit 1

B=$PWD/build/bench/uprobe_bench
BT=$PWD/build/btrace-bpf
CALLS=${UPROBE_BENCH_CALLS:-20000}
REPS=${UPROBE_BENCH_REPS:-21}
TARGET_PCT=${UPROBE_BENCH_TARGET_PCT:-10}
CPU=$(($(nproc) - 1))

if [ "$(id -u)" -ne 0 ]; then
	echo "bench_uprobe: needs root (BPF, uprobes); skipped"
	exit 0
fi
[ -x "$B" ] || { echo "bench_uprobe: $B missing (make tests)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bt-bench-uprobe.XXXXXX)
bg=()
perf_ev=
cleanup() {
	for p in "${bg[@]}"; do kill -INT "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$perf_ev" ] && perf probe -q -d "$perf_ev" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

broken=0
declare -A S   # variant -> " v1 v2 ..."
run() { # variant mode [calls [flags]]: one timed run, its ns/call appended to S[variant]
	local out v ev calls=${3:-$CALLS}
	out=$("$B" --mode "$2" --calls "$calls" --cpu "$CPU" ${4:-}) || { echo "bench_uprobe: $2 failed" >&2; broken=1; return; }
	v=$(awk '{ print $2 }' <<<"$out")
	ev=$(awk '{ print $3 }' <<<"$out")
	case $2 in
	btrace) [ "$ev" -eq "$calls" ] || { echo "bench_uprobe: btrace: $ev events for $calls calls" >&2; broken=1; } ;;
	btrace-ret) [ "$ev" -eq $((2 * calls)) ] || { echo "bench_uprobe: btrace-ret: $ev events for $calls calls" >&2; broken=1; } ;;
	esac
	S[$1]+=" $v"
}
stat_min() { tr ' ' '\n' <<<"$1" | grep . | sort -g | head -1; }
stat_med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "uprobe cost per call: $CALLS calls x $REPS runs per variant, loop on CPU $CPU, kernel $(uname -r)"

# ---- in-process variants, interleaved ------------------------------------------
for r in $(seq "$REPS"); do
	for m in none empty btrace empty-ret btrace-ret; do
		run "$m" "$m"
	done
done

# single-stepped first instruction: ~10x the trap, fewer calls
LEAF_CALLS=$((CALLS / 10))
for r in $(seq $(((REPS + 2) / 3))); do
	run leaf-none none "$LEAF_CALLS" --leaf
	run leaf-empty empty "$LEAF_CALLS" --leaf
	run leaf-btrace btrace "$LEAF_CALLS" --leaf
done

# ---- bpftrace ----------------------------------------------------------------------
if command -v bpftrace >/dev/null; then
	: >"$tmp/bpftrace.out"
	bpftrace -e "uprobe:$B:bench_fn { @c = count(); }" >"$tmp/bpftrace.out" 2>&1 &
	bpid=$!
	bg+=("$bpid")
	for i in $(seq 200); do grep -q '^Attaching' "$tmp/bpftrace.out" && break; sleep 0.05; done
	if grep -q '^Attaching' "$tmp/bpftrace.out"; then
		for r in $(seq "$REPS"); do run bpftrace none; done
		kill -INT "$bpid"
		wait "$bpid" 2>/dev/null
		got=$(sed -n 's/^@c: //p' "$tmp/bpftrace.out")
		[ "${got:-0}" -eq $((REPS * (CALLS + 1000))) ] ||
			echo "bench_uprobe: bpftrace counted ${got:-nothing}, expected $((REPS * (CALLS + 1000)))" >&2
	else
		echo "bench_uprobe: bpftrace did not attach: $(tail -1 "$tmp/bpftrace.out")" >&2
		kill -INT "$bpid" 2>/dev/null
	fi
else
	echo "bench_uprobe: bpftrace not installed (scripts/install-deps.sh --bench); row skipped"
fi

# ---- perf probe + perf record ------------------------------------------------------
if command -v perf >/dev/null && perf probe -q -x "$B" --add bench_fn >/dev/null 2>"$tmp/perf.err"; then
	perf_ev=$(perf probe -l 2>/dev/null | awk '/bench_fn/ { print $1; exit }')
	for r in $(seq "$REPS"); do
		out=$(perf record -q -e "$perf_ev" -o "$tmp/perf.data" -- "$B" --mode none --calls "$CALLS" --cpu "$CPU" 2>/dev/null)
		S[perf]+=" $(awk '{ print $2 }' <<<"$out")"
	done
	perf probe -q -d "$perf_ev" >/dev/null 2>&1
	perf_ev=
else
	echo "bench_uprobe: perf probe unavailable ($(head -1 "$tmp/perf.err" 2>/dev/null)); row skipped"
fi

# ---- btrace-bpf record -u (once record has the option) ------------------------------
if [ -x "$BT" ] && "$BT" record --help 2>&1 | grep -q -- '--uargs'; then
	"$BT" record -e sched -o "$tmp/traces" -u "$B:bench_fn" 2>"$tmp/record.log" &
	rpid=$!
	bg+=("$rpid")
	for i in $(seq 200); do grep -q 'recording (pid' "$tmp/record.log" && break; sleep 0.05; done
	if grep -q 'recording (pid' "$tmp/record.log"; then
		for r in $(seq "$REPS"); do run record none; done
	else
		echo "bench_uprobe: btrace-bpf record -u did not start: $(tail -1 "$tmp/record.log")" >&2
	fi
	kill -INT "$rpid" 2>/dev/null
	wait "$rpid" 2>/dev/null
fi

# ---- BPF run time of the programs themselves -----------------------------------------
bpf_ns() { # mode -> min BPF ns per call over 3 runs
	for r in 1 2 3; do "$B" --mode "$1" --calls "$CALLS" --cpu "$CPU" --stats | awk 'NF >= 4 { print $4 }'; done |
		sort -g | head -1
}
bpf_empty=$(bpf_ns empty)
bpf_btrace=$(bpf_ns btrace)
bpf_empty_ret=$(bpf_ns empty-ret)
bpf_btrace_ret=$(bpf_ns btrace-ret)

# ---- table ---------------------------------------------------------------------------
none=$(stat_min "${S[none]}")
floor=$(awk -v a="$(stat_min "${S[empty]}")" -v b="$none" 'BEGIN { print a - b }')
floor_ret=$(awk -v a="$(stat_min "${S[empty-ret]}")" -v b="$none" 'BEGIN { print a - b }')
printf '\n%-34s %12s %12s %12s %9s\n' "variant" "ns/call min" "median" "probe cost" "vs floor"
row() { # label variant floor
	[ -n "${S[$2]:-}" ] || return 0
	local mn md
	mn=$(stat_min "${S[$2]}")
	md=$(stat_med "${S[$2]}")
	awk -v l="$1" -v mn="$mn" -v md="$md" -v none="$none" -v f="$3" 'BEGIN {
		c = mn - none
		if (f > 0 && l != "no probe") printf "%-34s %12.1f %12.1f %12.1f %8.2fx\n", l, mn, md, c, c / f
		else printf "%-34s %12.1f %12.1f %12s %9s\n", l, mn, md, "-", "-"
	}'
}
row "no probe" none 0
row "empty BPF uprobe (floor)" empty "$floor"
row "btrace-bpf uprobe" btrace "$floor"
row "btrace-bpf record -u (end to end)" record "$floor"
row "bpftrace count()" bpftrace "$floor"
row "perf probe + perf record" perf "$floor"
row "empty uprobe + uretprobe (floor)" empty-ret "$floor_ret"
row "btrace-bpf f + f%return" btrace-ret "$floor_ret"
leaf_none=$(stat_min "${S[leaf-none]}")
floor_leaf=$(awk -v a="$(stat_min "${S[leaf-empty]}")" -v b="$leaf_none" 'BEGIN { print a - b }')
none_saved=$none
none=$leaf_none
row "empty BPF uprobe, single-stepped" leaf-empty "$floor_leaf"
row "btrace-bpf uprobe, single-stepped" leaf-btrace "$floor_leaf"
none=$none_saved

bt=$(awk -v a="$(stat_min "${S[btrace]}")" -v b="$none" 'BEGIN { print a - b }')
echo
if [ -n "$bpf_empty" ] && [ -n "$bpf_btrace" ]; then
	awk -v f="$floor" -v be="$bpf_empty" -v bb="$bpf_btrace" -v ber="$bpf_empty_ret" -v bbr="$bpf_btrace_ret" \
		-v fr="$floor_ret" 'BEGIN {
		printf "BPF program time per call (bpf_stats, includes ~2 clock reads of accounting):\n"
		printf "  empty %.1f ns, btrace-bpf %.1f ns -> btrace-bpf'"'"'s own work %.1f ns per call\n", be, bb, bb - be
		printf "  entry+return: empty %.1f ns, btrace-bpf %.1f ns -> %.1f ns\n", ber, bbr, bbr - ber
		printf "the kernel'"'"'s part (trap, uprobe lookup, BPF dispatch) = floor - empty program = %.1f ns of %.1f ns\n",
			f - be, f
	}'
fi
verdict=$(awk -v bt="$bt" -v f="$floor" -v t="$TARGET_PCT" 'BEGIN {
	p = (bt / f - 1) * 100
	printf "btrace-bpf uprobe: %.1f ns per call = floor %.1f ns %+.1f%% (target: within %d%%): %s\n", bt, f, p, t, p <= t ? "MET" : "MISSED"
}')
echo "$verdict"
awk -v bt="$(stat_min "${S[leaf-btrace]}")" -v f="$(stat_min "${S[leaf-empty]}")" 'BEGIN {
	if (f > 0) printf "single-stepped probe: btrace-bpf %.1f ns per call = floor %.1f ns %+.1f%%\n", bt, f, (bt / f - 1) * 100
}'
[ "$broken" -eq 0 ] || { echo "bench_uprobe: some measurements were broken (see above)" >&2; exit 1; }
if [[ $verdict == *MISSED ]] && [ "${UPROBE_BENCH_STRICT:-0}" = 1 ]; then
	exit 1
fi
exit 0
