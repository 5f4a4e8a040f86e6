#!/usr/bin/env bash
# bench_dump_app.sh - issue 36's full-size case: the dump of a 512 MiB
# application buffer (~30 M calls of app_funcs_spin, -finstrument-functions
# with libbtrace), the recorder's own memory and ctl dump against the log's
# "written" (tests/kernel/test_dump_app_scale.sh at SIZE_MB, which asserts
# them), then report (the listing), --stats, --functions, --hot and --manifest on that dump: peak
# RSS and seconds of each; then uftrace on the same program and as many
# calls: its data, its recorder's memory, replay and report.
#
# Usage: sudo scripts/bench_dump_app.sh [SIZE_MB]   (default 512; ~2 min)
# Needs root and about 3x SIZE_MB of free memory. Results on stdout; the
# machine may be shared: say its load with the numbers.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
SIZE_MB=${1:-512}
KEEP=$(mktemp -d /tmp/bench_dump_app.XXXXXX)
trap 'rm -rf "$KEEP"' EXIT
echo "# dump of a ${SIZE_MB} MiB application buffer (load $(cut -d' ' -f1 /proc/loadavg))"
SIZE_MB=$SIZE_MB KEEP_DUMP=$KEEP/app.btd tests/kernel/test_dump_app_scale.sh | grep -E '^(ok|not ok|#)'
[ -s "$KEEP/app.btd" ] || { echo "no dump kept"; exit 1; }
echo "dump: $(du -m "$KEEP/app.btd" | cut -f1) MiB on disk"
for opt in "" --stats --functions --hot --manifest; do
	/usr/bin/time -f "report ${opt:-(listing)}: %M KiB peak RSS, %e s, %U s user" build/btrace-bpf report $opt "$KEEP/app.btd" \
		>"$([ "$opt" = --functions ] && echo "$KEEP/functions.txt" || echo /dev/null)" 2>"$KEEP/time.txt"
	tail -1 "$KEEP/time.txt"
done

# uftrace on the same program (app_funcs_spin built -pg, no libbtrace) and
# about as many calls as the dump held: what it keeps on disk for them, its
# recorder's peak memory, and its readers on that data.
command -v uftrace >/dev/null || { echo "uftrace: not installed (apt-get install uftrace)"; exit 0; }
make -s build/bench/app_funcs_spin_pg
calls=$(awk '$1 == "leaf" { s += $3 } END { print s + 0 }' "$KEEP/functions.txt") # its table, kept above
echo "# uftrace $(uftrace --version | awk '{ print $2; exit }'), app_funcs_spin -pg -n $calls (the calls our dump held)"
# (from $KEEP: a -pg program leaves gmon.out where it runs)
(cd "$KEEP" && /usr/bin/time -f "uftrace record: %M KiB peak RSS (its own), %e s" uftrace record --no-pager \
	-d "$KEEP/uftrace.data" "$OLDPWD/build/bench/app_funcs_spin_pg" -n "$calls" -s 600000 >/dev/null 2>"$KEEP/time.txt")
tail -1 "$KEEP/time.txt"
echo "uftrace data: $(du -sm "$KEEP/uftrace.data" | cut -f1) MiB on disk"
for sub in replay report; do # to /dev/null as ours were (report's table kept: it is small)
	/usr/bin/time -f "uftrace $sub: %M KiB peak RSS, %e s, %U s user" uftrace "$sub" -d "$KEEP/uftrace.data" \
		>"$([ "$sub" = report ] && echo "$KEEP/report.txt" || echo /dev/null)" 2>"$KEEP/time.txt"
	tail -1 "$KEEP/time.txt"
done
echo "uftrace report: leaf $(awk '$NF == "leaf" { print $(NF - 1) }' "$KEEP/report.txt") calls"
