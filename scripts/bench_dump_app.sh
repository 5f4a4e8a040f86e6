#!/usr/bin/env bash
# bench_dump_app.sh - issue 36's full-size case: the dump of a 512 MiB
# application buffer (~30 M calls of app_funcs_spin, -finstrument-functions
# with libbtrace), the recorder's own memory and ctl dump against the log's
# "written" (tests/kernel/test_dump_app_scale.sh at SIZE_MB, which asserts
# them), then report (the listing), --stats, --functions, --hot and --manifest on that dump: peak
# RSS and seconds of each.
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
for opt in "" --stats --functions --hot --manifest; do
	/usr/bin/time -f "report ${opt:-(listing)}: %M KiB peak RSS, %e s, %U s user" build/btrace-bpf report $opt "$KEEP/app.btd" \
		>/dev/null 2>"$KEEP/time.txt"
	tail -1 "$KEEP/time.txt"
done
