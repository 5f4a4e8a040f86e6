#!/usr/bin/env bash
# bench_start.sh - what a recorder's start costs, run by `make bench`:
# `record -d 100ms --no-final-dump` (load, attach, 100 ms of recording,
# stop) with its defaults (49 Hz samples, the unwinder's programs), with
# `--stacks switch,wakeup` (the off-CPU and waker programs too), and with
# `--sample 0` (no stack program: the floor the others are measured
# against), alternated REPS times in one run: wall and CPU (user + system
# of the recorder and the kernel's work on its behalf, the verifier
# included), medians. Most of a start above the floor is the kernel
# verifying the unwinder's programs: `record -v` prints its count
# (verified_insns), shown here too.
#
# Target: the default start at most 0.3 s of CPU above the floor's (it
# was 0.8-1.0 s while the unwinder's map search made the verifier walk
# 473k instructions).
#
# Usage: scripts/bench_start.sh [--quick] [--no-md]. BT=FILE measures
# another build. Results on stdout, the table into BENCHMARKS.md between
# <!-- start:begin --> and <!-- start:end -->. Needs root. About a minute.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BT=${BT:-$PWD/build/btrace-bpf}
. scripts/bench_lib.sh
. scripts/bench_md.sh
bench_args "$@"
[ "$(id -u)" -eq 0 ] || { echo "bench_start: needs root" >&2; exit 1; }
[ -x "$BT" ] || { echo "bench_start: make tool first" >&2; exit 1; }
REPS=${REPS:-7}
[ "$quick" -eq 1 ] && REPS=3
bench_workdir start

MODES=(default stacks floor)
args_of() {
	case $1 in
	default) ;;
	stacks) echo "--stacks switch,wakeup" ;;
	floor) echo "--sample 0" ;;
	esac
}

# one start of MODE: "wall_s cpu_s"
run() {
	local t
	# shellcheck disable=SC2046 # the mode's words
	t=$({ TIMEFORMAT='%R %U %S'; time "$BT" record $(args_of "$1") -d 100ms --no-final-dump \
		-o "$TMP/out" --no-ctl >/dev/null 2>"$TMP/rec.log"; } 2>&1)
	echo "$t" | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}

LOAD0=$(cut -d' ' -f1 /proc/loadavg)
echo "bench_start: $(nproc) CPUs, kernel $(uname -r), $REPS rounds of the three starts, load $LOAD0"
for m in "${MODES[@]}"; do : >"$TMP/$m"; done
for r in $(seq "$REPS"); do
	order=("${MODES[@]}")
	[ $((r % 2)) -eq 0 ] && order=(floor stacks default) # neither first every time
	for m in "${order[@]}"; do
		res=$(run "$m")
		echo "$res" >>"$TMP/$m"
		echo "run $r $m: $res (wall s, CPU s)"
	done
done
for m in "${MODES[@]}"; do
	eval "W_$m=$(bench_col "$m" 1) C_$m=$(bench_col "$m" 2)"
	# shellcheck disable=SC2046
	"$BT" record -v $(args_of "$m") -d 100ms --no-final-dump -o "$TMP/out" --no-ctl 2>"$TMP/v.log" >/dev/null
	eval "V_$m=\"$(sed -n 's/.*the kernel verified \([0-9]*\) instructions, the most (\([0-9]*\)) in \([a-z_]*\).*/\1 in all, \2 in \3/p' "$TMP/v.log")\""
done
above() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
A_default=$(above "$C_default" "$C_floor")
A_stacks=$(above "$C_stacks" "$C_floor")
for m in "${MODES[@]}"; do
	eval "echo \"$m: wall \${W_$m} s, CPU \${C_$m} s; verified: \${V_$m:-n/a}\""
done
awk -v a="$A_default" 'BEGIN { exit !(a <= 0.3) }' &&
	echo "PASS start: the default's CPU ${A_default} s above the floor's (target <= 0.3 s)" ||
	echo "FAIL start: the default's CPU ${A_default} s above the floor's (target <= 0.3 s)"

if [ "$write_md" -eq 1 ]; then
	{
		echo "<!-- start:begin -->"
		echo "## A recorder's start (scripts/bench_start.sh)"
		echo
		echo "Kernel $(uname -r), $(nproc) CPUs, commit $(git rev-parse --short HEAD), $(date -u '+%Y-%m-%d'), load average $LOAD0 before."
		echo "Command: \`sudo scripts/bench_start.sh\` (part of \`make bench\`): \`record -d 100ms --no-final-dump\`"
		echo "(load, attach, 100 ms, stop), the three alternated $REPS times in one run; medians. CPU: user +"
		echo "system, the kernel's verifier included. Verified: \`record -v\`'s count (the kernel's verified_insns)."
		echo
		echo "| start | wall s | CPU s | CPU above the floor, s | instructions verified |"
		echo "|---|--:|--:|--:|---|"
		echo "| defaults (49 Hz samples, the unwinder) | $W_default | $C_default | ${A_default} | ${V_default:-n/a} |"
		echo "| \`--stacks switch,wakeup\` | $W_stacks | $C_stacks | ${A_stacks} | ${V_stacks:-n/a} |"
		echo "| \`--sample 0\` (floor: no stack program) | $W_floor | $C_floor | 0 | ${V_floor:-n/a} |"
		echo
		echo "Target: the default at most 0.3 s of CPU above the floor's."
		echo "<!-- start:end -->"
	} >"$TMP/sect"
	bench_md_put start "$TMP/sect"
fi
