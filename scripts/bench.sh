#!/usr/bin/env bash
# bench.sh - run every executable scripts/bench_*.sh in name order, passing our
# arguments on. `make bench` calls this after building. Exits non-zero if any
# benchmark failed (all of them still run).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# Benchmark-only tools (bpftrace, perf, ...); a no-op when present. A failure
# is not fatal: benchmarks that need a missing tool report it themselves.
scripts/install-deps.sh --check --bench >/dev/null 2>&1 || scripts/install-deps.sh --bench ||
	echo "bench: could not install benchmark tools; continuing" >&2

failed=()
ran=0
for b in scripts/bench_*.sh; do
	[ -x "$b" ] || continue
	ran=$((ran + 1))
	printf '\n==== %s\n' "$(basename "$b" .sh)"
	"$b" "$@"
	rc=$?
	[ "$rc" -eq 0 ] || failed+=("$(basename "$b" .sh) (exit $rc)")
done

[ "$ran" -eq 0 ] && echo "bench: no scripts/bench_*.sh yet"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "bench: failed: ${failed[*]}" >&2
	exit 1
fi
