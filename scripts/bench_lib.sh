# bench_lib.sh - sourced by the benchmark scripts: their common opening.
#
#   bench_args "$@"     sets quick and write_md from --quick (short runs,
#                       BENCHMARKS.md left alone) and --no-md; other
#                       words are the script's own
#   bench_workdir NAME  TMP: a new /tmp/bench-NAME.XXXXXX; PIDS: processes
#                       to kill. At exit both go, and
#                       kernel.bpf_stats_enabled gets back STATS_PREV if
#                       the script set that
#   bench_cpu_ns PID    CPU time of all of PID's threads (schedstat), ns
#   bench_threads_ns PID   the same per thread name: "NAME NS" lines
#   bench_pairs A B LEGEND   REPS pairs of the script's `run A` and `run B`,
#                       their order alternated, each line of output appended
#                       to $TMP/A or $TMP/B and printed with LEGEND
#   bench_col MODE N    the median of column N of $TMP/MODE
#   bench_med           the median of the numbers on stdin
bench_args() {
	quick=0 write_md=1
	local a
	for a in "$@"; do
		case "$a" in
		--quick) quick=1 write_md=0 ;;
		--no-md) write_md=0 ;;
		esac
	done
}

bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[ -n "${STATS_PREV:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_PREV" 2>/dev/null
	rm -rf "$TMP"
}

bench_workdir() {
	TMP=$(mktemp -d "/tmp/bench-$1.XXXXXX") || exit 1
	PIDS=()
	trap bench_cleanup EXIT
}

bench_cpu_ns() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# schedstat's run time: exact, where ticks of 10 ms charge a whole tick to
# a thread that wakes on the timer
bench_threads_ns() {
	local t
	for t in /proc/"$1"/task/*; do
		printf '%s %s\n' "$(cat "$t/comm" 2>/dev/null)" "$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)"
	done | awk 'NF == 2 { a[$1] += $2 } END { for (k in a) printf "%s %.0f\n", k, a[k] }'
}

bench_pairs() {
	local r m res order
	: >"$TMP/$1"
	: >"$TMP/$2"
	for r in $(seq "$REPS"); do
		order="$1 $2"
		[ $((r % 2)) -eq 0 ] && order="$2 $1"
		for m in $order; do
			res=$(run "$m")
			echo "$res" >>"$TMP/$m"
			echo "run $r $m: $res ($3)"
		done
	done
}

bench_med() {
	sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

bench_col() {
	awk -v c="$2" '{ print $c }' "$TMP/$1" | bench_med
}
