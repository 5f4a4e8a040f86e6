#!/usr/bin/env bash
# bench_capture.sh - how a dump takes its window (issue 23), run by `make bench`:
#
#   copy   build/bench/capture_bench: bt_capture of a full 64 MiB block
#          buffer against a plain memcpy of 64 MiB in the same run (the
#          floor), and the share of blocks a dump keeps with a writer at full
#          speed: the old read (block by block, each deflated before the next
#          is copied) against capture-then-deflate. Medians, side by side.
#   app    the recorder with an 8 MiB application buffer and app_funcs_spin
#          (-finstrument-functions, one thread calling a small function as
#          fast as it can): the calls a dump taken while it spins keeps,
#          against the calls a dump of the same full buffer keeps once it has
#          stopped; RUNS runs, median share.
#
# Usage: scripts/bench_capture.sh [--quick] [--no-md]
# Environment: REPS (9), RUNS (5). Results on stdout, the table into
# BENCHMARKS.md between <!-- capture:begin --> and <!-- capture:end -->.
# Needs root for the app part. The machine may be shared: only ratios
# measured in the same run are compared.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/bench_md.sh

quick=0 write_md=1
for arg in "$@"; do
	case "$arg" in
	--quick) quick=1 write_md=0 ;;
	--no-md) write_md=0 ;;
	-h|--help) sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
	esac
done
REPS=${REPS:-9}
RUNS=${RUNS:-5}
[ "$quick" -eq 1 ] && REPS=3 RUNS=2
BT=$PWD/build/btrace-bpf
TMP=$(mktemp -d /tmp/bench-capture.XXXXXX)
REC=
cleanup() { [ -n "$REC" ] && kill -INT "$REC" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

copy=$(build/bench/capture_bench "$REPS" 64) || { echo "capture_bench failed" >&2; exit 1; }
echo "$copy"

app_line="app: skipped (needs root)"
if [ "$(id -u)" -eq 0 ]; then
	CTL=$TMP/ctl.sock
	"$BT" record -o "$TMP/out" -e sched --ctl "$CTL" --no-final-dump --app-buffer-size 8M 2>"$TMP/rec.log" &
	REC=$!
	for _ in $(seq 100); do [ -S "$CTL" ] && break; sleep 0.1; done
	shares=()
	for i in $(seq "$RUNS"); do
		BTRACE_CTL=$CTL build/tests/app_funcs_spin -s 2500 -S "$TMP/stop$i" >"$TMP/app$i.log" 2>&1 &
		a=$!
		for _ in $(seq 100); do grep -q spinning "$TMP/app$i.log" && break; sleep 0.1; done
		sleep 1.2
		"$BT" ctl --ctl "$CTL" dump -o "$TMP/mid$i.btd" >/dev/null 2>&1
		for _ in $(seq 300); do grep -q stopped "$TMP/app$i.log" && break; sleep 0.1; done
		"$BT" ctl --ctl "$CTL" dump -o "$TMP/after$i.btd" >/dev/null 2>&1
		touch "$TMP/stop$i"
		wait "$a"
		pid=$(awk '/^spinning/ {print $2}' "$TMP/app$i.log")
		m=$("$BT" report --functions -p "$pid" "$TMP/mid$i.btd" | sed -n 's/^functions: *\([0-9]*\) entries.*/\1/p')
		f=$("$BT" report --functions -p "$pid" "$TMP/after$i.btd" | sed -n 's/^functions: *\([0-9]*\) entries.*/\1/p')
		shares+=("$(( ${m:-0} * 1000 / ${f:-1} ))")
		echo "app run $i: $m of $f records kept mid-run"
	done
	med=$(printf '%s\n' "${shares[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	copyt=$(grep -o 'window copied in [^)]*' "$TMP/rec.log" | tail -1)
	app_line=$(printf 'app: a mid-run dump of an 8 MiB buffer written at full speed keeps %d.%d%% of what the stopped buffer keeps (median of %d; issue 23 measured 15-18%% before the capture); last dump: %s' \
		$((med / 10)) $((med % 10)) "$RUNS" "$copyt")
fi
echo "$app_line"

if [ "$write_md" -eq 1 ]; then
	sect=$TMP/sect.md
	{
		echo "<!-- capture:begin -->"
		echo "## Dumps: taking the window (issue 23)"
		echo ""
		echo "Reproduce: \`sudo make bench\`, or this section alone: \`sudo scripts/bench_capture.sh\`"
		echo "($(date -u +%Y-%m-%d), $(nproc) CPUs, a machine shared with other builds: compare within a line)."
		echo ""
		echo '```'
		echo "$copy"
		echo "$app_line"
		echo '```'
		echo "<!-- capture:end -->"
	} >"$sect"
	bench_md_put capture "$sect"
fi
