#!/usr/bin/env bash
# bench_funcs.sh - cost per trace point of function tracing (issue 16),
# side by side in one run, on recursive fib(N) (bench/func_bench.c; every
# call one entry and one exit: 2 trace points):
#
#   plain          the same source without instrumentation (the baseline)
#   off            -finstrument-functions + libbtrace, no recorder
#   btrace         the same binary attached to `btrace-bpf record`
#   BEGIN/END      BTRACE_BEGIN/END in each call, recorder attached
#   uftrace        the source built with -pg, under `uftrace record` (uftrace
#                  interposes its own hooks; our binary defines them itself)
#   uprobe         fib and fib%return probed by `btrace-bpf record -u` on the
#                  plain build (fib(UPROBE_N): uprobes cost microseconds)
#   rdtsc          a bare rdtsc: the floor of a trace point that takes a TSC
#   empty hooks    -finstrument-functions with hooks that return at once:
#                  the floor the compiler's call sets (no hook costs less)
#   TSC hooks      hooks that read the TSC and store it with the function:
#                  the floor of any timed record of a call
#   flag hooks     hooks that load a flag and branch past a call: the floor
#                  of any hook that can be off
#   lua ...        a real code base, Lua 5.2.4 on tests/kernel/funcs_lua/work.lua
#                  (scripts/build_lua.sh): plain, btrace without and with the
#                  recorder, uftrace on Lua's -pg build
#
# Cost per point = (ns per call - plain's) / 2, medians over REPS
# interleaved runs; bytes per point from a dump of the btrace row (the
# function batches' bytes over the records in them). Targets printed
# PASS/FAIL (issue 24): with a recorder <= the TSC hooks' floor + 2 ns,
# without <= the flag hooks' floor + 1 ns, <= 10 B per point; and, as the
# issue first put them, absolute: <= the bare rdtsc + 2 ns and <= 1 ns. Also the reader: report --functions on 10^7
# calls (build/tests/test_report_scale: max RSS and time).
# Env: FUNC_BENCH_N (30), FUNC_BENCH_LUA_N (20 rounds), FUNC_BENCH_UPROBE_N (20), FUNC_BENCH_REPS (11),
# FUNC_BENCH_NO_WRITE=1 (print only), FUNC_BENCH_STRICT=1 (exit 1 on a miss).
set -uo pipefail

. "$(dirname "$0")/bench_md.sh"
bench_md_section() {
	cat <<MD
<!-- funcs:begin -->
## Function tracing (-finstrument-functions): cost per trace point

Reproduce: \`sudo scripts/bench_funcs.sh\` ($when; part of \`make bench\`). Recursive fib(N), every call
an entry and an exit; cost per trace point = (ns per call - the uninstrumented build's) / 2, median of
interleaved runs. uftrace records a -pg build of the same source; the uprobe row probes fib and
fib%return on the uninstrumented build with a smaller N. *rdtsc* is the cost of the TSC read alone;
*empty hooks*, *flag hooks* and *TSC hooks* are the floors of a hook, built from the same source: hooks
that return at once (the compiler's call), that load a flag and branch past a call (any hook that can be
off), and that read the TSC and store it with the function (any timed record of a call).

\`\`\`
$body
\`\`\`
<!-- funcs:end -->
MD
}
bench_md_run funcs BT_FUNCS_INNER "${FUNC_BENCH_NO_WRITE:-}" '^variant' "$0" "$@"
cd "$(dirname "$0")/.." || exit 1

BT=$PWD/build/btrace-bpf
FB=$PWD/build/bench/func_bench
N=${FUNC_BENCH_N:-30}
UN=${FUNC_BENCH_UPROBE_N:-20}
REPS=${FUNC_BENCH_REPS:-11}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench_funcs: needs root (the recorder, uprobes); skipped"
	exit 0
fi
make --no-print-directory -s "$BT" "${FB}_plain" "${FB}_instr" "${FB}_manual" "${FB}_pg" "${FB}_hooks0" "${FB}_hooksclk" "${FB}_hooksflag" >/dev/null ||
	{ echo "bench_funcs: cannot build" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bench_funcs.XXXXXX)
REC=
cleanup() {
	[ -n "$REC" ] && kill -INT "$REC" 2>/dev/null && wait "$REC" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
CTL=$tmp/ctl.sock
cp "${FB}_plain" "$tmp/probed"
"$BT" record -e sched --ctl "$CTL" -o "$tmp/dumps" --app-buffer-size 16M --no-final-dump \
	-u "$tmp/probed:fib" -u "$tmp/probed:fib%return" >"$tmp/record.log" 2>&1 &
REC=$!
for _ in $(seq 100); do [ -S "$CTL" ] && break; sleep 0.1; done
[ -S "$CTL" ] || { echo "bench_funcs: recorder did not start: $(cat "$tmp/record.log")" >&2; exit 1; }

# one N-call run of a variant; appends its per-call times to $tmp/VARIANT
run() {
	local v=$1
	shift
	"$@" -r 1 >"$tmp/$v.out" 2>"$tmp/$v.err" || { echo "bench_funcs: $v failed: $(cat "$tmp/$v.err")" >&2; return 1; }
	awk '/^ns_per_call/ {print $2}' "$tmp/$v.out" >>"$tmp/$v"
}
have_uftrace=0
command -v uftrace >/dev/null && have_uftrace=1
fail=0
for _ in $(seq "$REPS"); do
	run plain "${FB}_plain" -n "$N" || fail=1
	BTRACE_CTL=/nonexistent run off "${FB}_instr" -n "$N" || fail=1
	run hooks0 "${FB}_hooks0" -n "$N" || fail=1
	run hooksclk "${FB}_hooksclk" -n "$N" || fail=1
	run hooksflag "${FB}_hooksflag" -n "$N" || fail=1
	BTRACE_CTL=$CTL run btrace "${FB}_instr" -n "$N" -w || fail=1
	BTRACE_CTL=$CTL run manual "${FB}_manual" -n "$N" -w || fail=1
	run uplain "${FB}_plain" -n "$UN" || fail=1
	run uprobe "$tmp/probed" -n "$UN" || fail=1
	[ "$have_uftrace" -eq 1 ] && { run uftrace uftrace record --no-pager -d "$tmp/uftrace.data" "${FB}_pg" -n "$N" || fail=1; }
done
"${FB}_plain" -n 1 -r 1 -t | awk '/^rdtsc_ns/ {print $2}' >"$tmp/rdtsc"

# A real code base: Lua 5.2.4 (scripts/build_lua.sh: Debian's
# librust-lua52-sys-dev sources, Lua's Makefile, the README's link line) on
# tests/kernel/funcs_lua/work.lua; the trace points it makes counted by a
# preloaded counter (tests/kernel/funcs_lua/count_hooks.c); each run's CPU
# time from the script itself (os.clock), interleaved like the fib rows.
LUADIR=$PWD/build/thirdparty/lua52 LWORK=$PWD/tests/kernel/funcs_lua/work.lua LN=${FUNC_BENCH_LUA_N:-20}
have_lua=0
if scripts/build_lua.sh "$LUADIR" >"$tmp/lua-build.log" 2>&1 &&
	cc -O2 -shared -fPIC -o "$tmp/count.so" tests/kernel/funcs_lua/count_hooks.c; then
	COUNT_HOOKS_OUT=$tmp/lua.count LD_PRELOAD=$tmp/count.so "$LUADIR/cyg/lua" "$LWORK" "$LN" >/dev/null 2>&1
	LPOINTS=$(awk '{ s += $2 } END { print 2 * s }' "$tmp/lua.count")
	have_lua=1
fi
# lrun VARIANT CMD...: appends the workload's CPU seconds to $tmp/VARIANT
lrun() {
	local v=$1
	shift
	"$@" 2>&1 >/dev/null | awk '/^cpu_s/ {print $2}' >>"$tmp/$v"
}
if [ "$have_lua" -eq 1 ]; then
	for _ in $(seq "$REPS"); do
		lrun lplain "$LUADIR/plain/lua" "$LWORK" "$LN"
		BTRACE_CTL=/nonexistent lrun loff "$LUADIR/btrace/lua" "$LWORK" "$LN"
		BTRACE_CTL=$CTL BTRACE_WAIT_MS=5000 lrun lbtrace "$LUADIR/btrace/lua" "$LWORK" "$LN"
		[ "$have_uftrace" -eq 1 ] && lrun luftrace uftrace record --no-pager -d "$tmp/luft.data" "$LUADIR/pg/lua" "$LWORK" "$LN"
	done
fi

# bytes per point: one more btrace run, then a dump; the app's batches
BTRACE_CTL=$CTL "${FB}_instr" -n 20 -r 1 -w >"$tmp/bytes.out" 2>&1 &
bpid=$!
wait "$bpid"
"$BT" ctl --ctl "$CTL" dump -o "$tmp/b.btd" >/dev/null 2>&1
"$BT" report --stats "$tmp/b.btd" >"$tmp/b.stats" 2>/dev/null

med() { sort -g "$tmp/$1" 2>/dev/null | awk '{a[NR]=$1} END {if (NR) print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); else print "nan"}'; }
P=$(med plain) UP=$(med uplain) R=$(cat "$tmp/rdtsc")
pt() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (a - b) / 2}'; }
printf 'variant                     ns/call   ns/point   x btrace\n'
BTP=$(pt "$(med btrace)" "$P")
row() { awk -v n="$1" -v c="$2" -v p="$3" -v b="$BTP" 'BEGIN {printf "%-26s %8.2f %10.2f %10.1f\n", n, c, p, (b > 0 ? p / b : 0)}'; }
row "plain (no instrumentation)" "$P" 0
row "empty hooks (floor)" "$(med hooks0)" "$(pt "$(med hooks0)" "$P")"
row "TSC hooks (floor)" "$(med hooksclk)" "$(pt "$(med hooksclk)" "$P")"
row "flag hooks (floor)" "$(med hooksflag)" "$(pt "$(med hooksflag)" "$P")"
row "btrace, no recorder" "$(med off)" "$(pt "$(med off)" "$P")"
row "btrace, recorder" "$(med btrace)" "$BTP"
row "BTRACE_BEGIN/END" "$(med manual)" "$(pt "$(med manual)" "$P")"
[ "$have_uftrace" -eq 1 ] && row "uftrace record (-pg)" "$(med uftrace)" "$(pt "$(med uftrace)" "$P")"
row "uprobe+uretprobe (fib($UN))" "$(med uprobe)" "$(pt "$(med uprobe)" "$UP")"
printf '%-26s %8s %10.2f\n' "rdtsc alone" "-" "$R"
if [ "$have_lua" -eq 1 ]; then
	LP=$(med lplain)
	lpt() { awk -v a="$1" -v b="$LP" -v n="$LPOINTS" 'BEGIN {printf "%.2f", (a - b) * 1e9 / n}'; }
	LBTP=$(lpt "$(med lbtrace)")
	lrow() { awk -v n="$1" -v c="$2" -v p="$3" -v b="$LBTP" 'BEGIN {printf "%-26s %8.1f %10.2f %10.1f\n", n, c * 1e3, p, (b > 0 ? p / b : 0)}'; }
	printf 'lua 5.2.4 work.lua %s      ms/run   ns/point   x btrace\n' "$LN"
	lrow "lua plain" "$LP" 0
	lrow "lua btrace, no recorder" "$(med loff)" "$(lpt "$(med loff)")"
	lrow "lua btrace, recorder" "$(med lbtrace)" "$LBTP"
	if [ "$have_uftrace" -eq 1 ] && [ -s "$tmp/luftrace" ]; then
		lrow "lua uftrace record (-pg)" "$(med luftrace)" "$(lpt "$(med luftrace)")"
	elif [ "$have_uftrace" -eq 1 ]; then
		echo "lua uftrace record (-pg): no time: the traced lua died (uftrace $(uftrace --version 2>/dev/null | awk '{print $2; exit}'), SIGSEGV after a pcall's longjmp)"
	fi
	printf 'lua: %s trace points per run (a preloaded counter); CPU time of the workload (os.clock)\n' "$LPOINTS"
fi
printf 'fib(%d): %s calls; per call %.2f ns plain, %.2f ns traced (recorder), %.2f ns instrumented (no recorder)\n' \
	"$N" "$(awk '/^calls/ {print $2}' "$tmp/plain.out")" "$P" "$(med btrace)" "$(med off)"

# bytes per trace point in the buffer: the blocks the app's records took
# (blocks read x block size, the last one partly filled) over its records
read -r recs blocks total bsize < <(awk -v pid="$bpid" '
	$0 ~ " pid " pid " " { mine = 1; for (i = 1; i <= NF; i++) if ($(i+1) == "events") { recs = $i; break } }
	mine && /buffers: blocks_read/ {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^blocks_(read|bad|lost|busy|empty)$/) total += $(i+1)
			if ($i == "blocks_read") rd = $(i+1)
			if ($i == "buffer_size") bs = $(i+1)
		}
		print recs + 0, rd + 0, total + 0, bs + 0; exit
	}' "$tmp/b.stats")
bpp=nan
[ "${recs:-0}" -gt 0 ] && [ "${total:-0}" -gt 0 ] &&
	bpp=$(awk -v r="$recs" -v b="$blocks" -v t="$total" -v s="$bsize" 'BEGIN {printf "%.2f", b * (s / t) / r}')
echo "bytes per point: $bpp (${recs:-0} records of fib(20) in ${blocks:-0} blocks of $(( ${bsize:-0} / (${total:-1} > 0 ? ${total:-1} : 1) )) B)"

# The clock is the floor of a timed trace point: what the project controls
# is the cost above a bare rdtsc measured in this run (issue 24).
ABOVE=$(awk -v p="$BTP" -v r="$R" 'BEGIN {printf "%.2f", p - r}')
echo "ns per point above the rdtsc floor (with a recorder): $ABOVE"
# ... and above the floors of a hook measured here: a call that tests a
# flag (what a hook that can be off costs), and a call reading the TSC.
FF=$(pt "$(med hooksflag)" "$P") FC=$(pt "$(med hooksclk)" "$P")
OFF_ABOVE=$(awk -v p="$(pt "$(med off)" "$P")" -v f="$FF" 'BEGIN {printf "%.2f", p - f}')
REC_ABOVE=$(awk -v p="$BTP" -v f="$FC" 'BEGIN {printf "%.2f", p - f}')
echo "ns per point above the hook floors: $OFF_ABOVE without a recorder (flag hooks $FF), $REC_ABOVE with one (TSC hooks $FC)"

# Reader: report --functions on a generated dump of 10^7 calls (max RSS, time).
if [ -x build/tests/test_report_scale ] || make --no-print-directory -s build/tests/test_report_scale >/dev/null 2>&1; then
	BTRACE_BPF=$BT build/tests/test_report_scale | sed -n 's/^# report/reader: report/p'
fi

verdict() { awk -v v="$2" -v t="$3" -v n="$1" 'BEGIN {ok = (v != "nan" && v + 0 <= t); printf "target %-32s %s (%s <= %s)\n", n, ok ? "PASS" : "FAIL", v, t; exit !ok}'; }
miss=0
verdict "ns/point above TSC hooks" "$REC_ABOVE" 2 || miss=1
verdict "ns/point above flag hooks" "$OFF_ABOVE" 1 || miss=1
verdict "bytes/point" "$bpp" 10 || miss=1
# as first stated: absolute, against the bare rdtsc (informational)
verdict "ns/point with a recorder (abs)" "$BTP" "$(awk -v r="$R" 'BEGIN {printf "%.2f", r + 2}')"
verdict "ns/point without a recorder (abs)" "$(pt "$(med off)" "$P")" 1
[ "$have_lua" -eq 1 ] && { verdict "lua ns/point above TSC hooks" "$(awk -v p="$LBTP" -v f="$FC" 'BEGIN {printf "%.2f", p - f}')" 2 || miss=1; }
[ "$have_lua" -eq 1 ] && verdict "lua ns/point with a recorder (abs)" "$LBTP" "$(awk -v r="$R" 'BEGIN {printf "%.2f", r + 2}')"
[ "$fail" -eq 0 ] || exit 1
[ "$miss" -eq 1 ] && [ -n "${FUNC_BENCH_STRICT:-}" ] && exit 1
exit 0
