# bench_md.sh - sourced by the benchmark scripts: one generated section of
# BENCHMARKS.md, replaced in place.
#
#   bench_md_put NAME FILE
#
# FILE holds the whole section, from "<!-- NAME:begin -->" to
# "<!-- NAME:end -->". It replaces the section of that name in
# $BENCHMARKS_MD (default: BENCHMARKS.md at the repository root), or is
# appended if there is none; the file is created if missing. Under a lock
# every benchmark script takes, so two of them never rewrite it at once.
bench_md_put() {
	local name=$1 sect=$2 lock_fd new
	local bm=${BENCHMARKS_MD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/BENCHMARKS.md}

	exec {lock_fd}>"${TMPDIR:-/tmp}/btrace-benchmarks-md.lock"
	flock "$lock_fd" 2>/dev/null || true
	[ -f "$bm" ] || printf '# Benchmarks\n\nGenerated sections; each names the command that reproduces it.\n' >"$bm"
	if grep -qF "<!-- $name:begin -->" "$bm" && grep -qF "<!-- $name:end -->" "$bm"; then
		new=$(mktemp)
		awk -v sect="$sect" -v b="<!-- $name:begin -->" -v e="<!-- $name:end -->" '
			index($0, b) { while ((getline l < sect) > 0) print l; skip = 1; next }
			index($0, e) { skip = 0; next }
			!skip { print }' "$bm" >"$new" && cat "$new" >"$bm"
		rm -f "$new"
	else
		{ echo ""; cat "$sect"; } >>"$bm"
	fi
	exec {lock_fd}>&-
	echo "results written to $bm ($name section)"
}

# The re-exec wrapper of a benchmark that keeps its printed output as a
# section (bench_app.sh, bench_funcs.sh, bench_uprobe.sh):
#
#   bench_md_run NAME INNER_VAR NO_WRITE MUST_MATCH SCRIPT [ARGS...]
#
# With INNER_VAR unset: runs SCRIPT ARGS again from the repository root with
# INNER_VAR=1 (the measurement), shows its output and, if it exited 0,
# NO_WRITE is empty and (MUST_MATCH empty or) a line matches MUST_MATCH,
# writes the section bench_md_section prints (it sees $when and $body, the
# output) as NAME; then exits with the measurement's status. With INNER_VAR
# set it returns at once: the caller is the measurement.
bench_md_run() {
	local name=$1 inner=$2 nowrite=$3 must=$4 out rc when body
	shift 4
	[ -n "${!inner:-}" ] && return 0
	cd "$(dirname "$1")/.." || exit 1
	out=$(mktemp)
	env "$inner=1" "$@" | tee "$out"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -eq 0 ] && [ -z "$nowrite" ] && { [ -z "$must" ] || grep -q "$must" "$out"; }; then
		when=$(date -u '+%Y-%m-%d %H:%M UTC') body=$(cat "$out")
		bench_md_section >"$out.md"
		bench_md_put "$name" "$out.md"
		rm -f "$out.md"
	fi
	rm -f "$out"
	exit "$rc"
}
