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
