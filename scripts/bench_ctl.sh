#!/usr/bin/env bash
# Resize benchmark of the runtime control issue: while `btrace-bpf record`
# records the syscalls group under a tight syscall loop, `ctl resize` a
# 256 MiB buffer down to 64 MiB and back, several times. Reports the median
# time of each direction (as measured inside the recorder), the recorder's
# resident memory before and after each, and the ring-buffer reservation
# failures during the run (read from a dump), and writes the table into
# BENCHMARKS.md between <!-- ctl:begin --> and <!-- ctl:end -->.
# Target: each resize well under 50 ms, no reservation failures caused by it.
set -euo pipefail
cd "$(dirname "$0")/.."
BT=build/btrace-bpf
REPS=${CTL_REPS:-7}
[ "$(id -u)" -eq 0 ] || { echo "bench_ctl: needs root" >&2; exit 1; }
[ -x "$BT" ] && [ -x build/bench/syscall_loop ] || make --no-print-directory "$BT" build/bench/syscall_loop

tmp=$(mktemp -d)
rec=
cleanup() { [ -n "$rec" ] && kill "$rec" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
sock=$tmp/ctl.sock
"$BT" record -m 256M --max-size 512M -e sched,syscalls -o "$tmp/out" --ctl "$sock" --no-final-dump 2>"$tmp/rec.log" &
rec=$!
for _ in $(seq 100); do grep -q 'recording (pid' "$tmp/rec.log" && break; sleep 0.1; done
rss() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$rec/status"; }
ms() { sed -n 's/.* in \([0-9.]*\) ms.*/\1/p'; }

build/bench/syscall_loop -t 1 -d 60 >/dev/null 2>&1 &
load=$!
sleep 1
"$BT" ctl --ctl "$sock" dump -o "$tmp/before.btd" >/dev/null
down=() up=() rss_big=() rss_small=()
for _ in $(seq "$REPS"); do
	rss_big+=("$(rss)")
	down+=("$("$BT" ctl --ctl "$sock" resize 64M | ms)")
	sleep 0.3
	rss_small+=("$(rss)")
	up+=("$("$BT" ctl --ctl "$sock" resize 256M | ms)")
	sleep 0.3
done
"$BT" ctl --ctl "$sock" dump -o "$tmp/after.btd" >/dev/null
kill "$load" 2>/dev/null || true
wait "$load" 2>/dev/null || true
drops() { "$BT" report --stats "$1" | sed -n 's/^ *ring-buffer reservation failures: \([0-9]*\).*/\1/p'; }
d0=$(drops "$tmp/before.btd") d1=$(drops "$tmp/after.btd")
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
md=$(median "${down[@]}") mu=$(median "${up[@]}") rb=$(median "${rss_big[@]}") rs=$(median "${rss_small[@]}")
line="resize 256M->64M median ${md} ms, 64M->256M median ${mu} ms over $REPS cycles; recorder RSS ${rb} MiB at 256M, ${rs} MiB at 64M; ring-buffer drops during the cycles: $((d1 - d0))"
echo "$line"
awk -v a="$md" -v b="$mu" 'BEGIN { exit !(a < 50 && b < 50) }' && echo "target PASS: each resize under 50 ms" ||
	echo "target FAIL: a resize took 50 ms or more"
[ "$((d1 - d0))" -eq 0 ] && echo "target PASS: no reservation failures" || echo "target FAIL: reservation failures"

section=$(cat <<MD
<!-- ctl:begin -->
## Runtime resize (\`ctl resize\` while recording)

Reproduce: \`sudo scripts/bench_ctl.sh\` (CTL_REPS=$REPS). $(date -u +%Y-%m-%d), $(uname -r), $(nproc) CPUs.
The recorder records sched and syscalls while \`bench/syscall_loop\` makes syscalls on one thread.
Times are measured inside the recorder around \`bt_resize()\`; RSS is the recorder's VmRSS.

| measure | value |
|---|---|
| resize 256 MiB -> 64 MiB (median) | ${md} ms |
| resize 64 MiB -> 256 MiB (median) | ${mu} ms |
| recorder RSS at 256 MiB / 64 MiB | ${rb} MiB / ${rs} MiB |
| ring-buffer reservation failures during the cycles | $((d1 - d0)) |

A shrink waits until no writer or reader can touch the released blocks, then unmaps them (RSS drops at once).
A grow maps the new blocks without touching them: they are backed as they are first written, so the
grow costs no page zeroing up front (the kernel zeroes about 4 GB/s: ~50 ms for 192 MiB) and RSS rises as
the window extends.
<!-- ctl:end -->
MD
)
printf '%s\n' "$section" >"$tmp/section.md"
. scripts/bench_md.sh
bench_md_put ctl "$tmp/section.md"
