#!/usr/bin/env bash
# bench_cold_codec.sh - what the cold tier's compressor costs per event and
# what it gains, per codec, level and group size, on the recorder's own
# blocks: `record -e sched,syscalls -m 8M --cold-tier 75 --cold-cpu off`
# under bench/cmp_load's skewed load (RATE calls/s on one CPU, SECS s),
# then ctl status: compressor CPU / events compressed, and the ratio.
# Configurations rotate over REPS repetitions; medians are printed.
# Usage: sudo scripts/bench_cold_codec.sh ["CODEC:LEVEL/GROUP" ...]
# Environment: REPS (3), SECS (3), RATE (250000), WL (skewed).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BT=build/btrace-bpf LOAD=build/bench/cmp_load
REPS=${REPS:-3} SECS=${SECS:-3} RATE=${RATE:-250000} WL=${WL:-skewed}
CONFIGS=("$@")
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=(lz4:1/4 lz4:1/16 lz4:8/16 zstd:1/4 zstd:1/16 zstd:-1/16 zstd:-3/16 zstd:-5/16)
[ "$(id -u)" -eq 0 ] || { echo "bench_cold_codec: needs root" >&2; exit 1; }
for b in "$BT" "$LOAD"; do [ -x "$b" ] || { echo "bench_cold_codec: $b missing (make all tests)" >&2; exit 1; }; done
TMP=$(mktemp -d /tmp/bench_cold_codec.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# one CONFIG: prints "ns_per_event ratio events_per_block"
one() {
	local codec=${1%/*} group=${1#*/} sock=$TMP/ctl.sock pid st
	rm -f "$sock"
	"$BT" record -e sched,syscalls -m 8M --ring-size 512K --cold-tier 75 --cold-codec "$codec" \
		--cold-group "$group" --cold-cpu off --ctl "$sock" --no-final-dump -o "$TMP/d" >"$TMP/rec.log" 2>&1 &
	pid=$!
	for _ in $(seq 300); do grep -q 'recording (pid' "$TMP/rec.log" && break; sleep 0.1; done
	"$LOAD" -m "$WL" -d "$SECS" -r "$RATE" >/dev/null
	st=$("$BT" ctl --ctl "$sock" status)
	kill -INT "$pid"; wait "$pid"
	awk '/^events: / { ev = $2 } /^buffer: .* entries/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "blocks" && $(i + 2) == "used,") bu = $i }
	     /^cold tier: / { match($0, /compressor CPU [0-9.]+s/); cpu = substr($0, RSTART + 15, RLENGTH - 16)
	       match($0, /[0-9]+ blocks compressed/); bin = substr($0, RSTART, RLENGTH) + 0
	       match($0, /[0-9.]+x\)/); ratio = substr($0, RSTART, RLENGTH - 2) }
	     END { epb = bu ? ev / bu : 0; printf "%.1f %s %.0f\n", cpu * 1e9 / (bin * epb), ratio, epb }' <<<"$st"
}

declare -A NS RATIO
for ((rep = 0; rep < REPS; rep++)); do
	n=${#CONFIGS[@]}
	for ((k = 0; k < n; k++)); do
		c=${CONFIGS[$(((k + rep) % n))]}
		read -r ns ratio epb <<<"$(one "$c")"
		echo "  rep $rep $c: $ns ns/event, ${ratio}x, $epb events/block" >&2
		NS[$c]="${NS[$c]:-} $ns" RATIO[$c]="${RATIO[$c]:-} $ratio"
	done
done
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "| codec:level | group (blocks) | compressor ns per event | ratio | events per CPU-ms of budget |"
echo "|---|--:|--:|--:|--:|"
for c in "${CONFIGS[@]}"; do
	ns=$(med <<<"${NS[$c]}") r=$(med <<<"${RATIO[$c]}")
	echo "| ${c%/*} | ${c#*/} | $ns | $r | $(awk -v n="$ns" 'BEGIN { printf "%.0f", (n > 0 ? 1e6 / n : 0) }') |"
done
