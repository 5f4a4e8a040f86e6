#!/usr/bin/env bash
# bench_threads.sh - which of the recorder's threads costs what, per traced
# call, on the load of `make bench-compare` (bench/cmp_load at RATE calls/s
# per busy CPU): the recorder as the comparison starts it (`record -e
# sched,syscalls -m 7M --ring-size 1M -z 0`, plus ARGS), SETTLE
# seconds for its one-time work, then SECS seconds of load; each thread's
# run time in that window (/proc/PID/task/*/schedstat, summed by name) and
# the workload's own CPU (getrusage: it includes the BPF programs), in ns a
# call, medians over REPS runs. Configurations given as LABEL=ARGS run
# alternately, one run of each per repetition, so drift hits all alike.
#
# Usage: scripts/bench_threads.sh [-w skewed|balanced] [LABEL[:BINARY]=ARGS ...]
#        (default: default= notier='--cold-tier 0'; BINARY: another build of
#        btrace-bpf for that configuration, e.g. old:/tmp/btrace-bpf.old=)
# Environment: REPS (5), SECS (4), SETTLE (3), RATE (250000), BT (the
# binary). Needs root; a few seconds a run. Not part of `make bench`.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/bench_lib.sh
BT=${BT:-$PWD/build/btrace-bpf}
LOAD=$PWD/build/bench/cmp_load
REPS=${REPS:-5} SECS=${SECS:-4} SETTLE=${SETTLE:-3} RATE=${RATE:-250000}
wl=balanced
if [ "${1:-}" = -w ]; then
	wl=${2:-}
	shift 2 || true
fi
case "$wl" in skewed | balanced) ;; *) echo "bench_threads: -w takes skewed or balanced" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "bench_threads: needs root" >&2; exit 1; }
if ! [ -x "$BT" ] || ! [ -x "$LOAD" ]; then echo "bench_threads: make tool bench first" >&2; exit 1; fi
[ $# -gt 0 ] || set -- default= "notier=--cold-tier 0"
for spec in "$@"; do
	case "$spec" in *=*) ;; *) echo "bench_threads: '$spec' is not LABEL=ARGS" >&2; exit 2 ;; esac
done
TMP=$(mktemp -d /tmp/bench_threads.XXXXXX) || exit 1
RPID=''
trap '[ -n "$RPID" ] && kill -INT "$RPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT

for _ in $(seq "$REPS"); do
	for spec in "$@"; do
		label=${spec%%=*} bin=$BT
		case "$label" in *:*) bin=${label#*:} label=${label%%:*} ;; esac
		read -r -a args <<<"${spec#*=}"
		rm -rf "$TMP/out"
		"$bin" record -e sched,syscalls -m 7M --ring-size 1M -z 0 -o "$TMP/out" --no-final-dump \
			"${args[@]}" >"$TMP/rec.log" 2>&1 &
		RPID=$!
		sleep "$SETTLE"
		kill -0 "$RPID" 2>/dev/null || { cat "$TMP/rec.log" >&2; exit 1; }
		bench_threads_ns "$RPID" >"$TMP/t0"
		out=$("$LOAD" -m "$wl" -d "$SECS" -r "$RATE" -p 1000 -l 8 -o "$TMP/truth") || exit 1
		bench_threads_ns "$RPID" >"$TMP/t1"
		kill -INT "$RPID"
		wait "$RPID" 2>/dev/null
		RPID=''
		calls=$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$out")
		wl_us=$(sed -n 's/.* cpu_us=\([0-9]*\).*/\1/p' <<<"$out")
		echo "$label workload $((wl_us * 1000)) $calls"
		join <(sort "$TMP/t0") <(sort "$TMP/t1") | awk -v l="$label" -v c="$calls" '{ print l, $1, $3 - $2, c }'
	done
done >"$TMP/rows"

echo "bench_threads: $wl load, $RATE calls/s per busy CPU, ${SECS}s runs, medians of $REPS; ns a call"
python3 - "$TMP/rows" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    label, name, ns, calls = line.split()
    runs[label][name].append(int(ns) / int(calls))
names = sorted({n for r in runs.values() for n in r if n != "workload"})
print(f"{'':12s} {'workload':>9s} {'recorder':>9s}  " + " ".join(f"{n:>15s}" for n in names))
for label, r in runs.items():
    reps = len(r["workload"])
    rec = [sum(r[n][i] for n in names if i < len(r[n])) for i in range(reps)]
    med = lambda v: statistics.median(v) if v else 0.0
    print(f"{label:12s} {med(r['workload']):9.1f} {med(rec):9.1f}  " +
          " ".join(f"{med(r[n]):15.1f}" for n in names))
EOF
