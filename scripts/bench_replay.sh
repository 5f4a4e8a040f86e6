#!/usr/bin/env bash
# Replay benchmark of the block-partitioned buffer (BTrace paper, section 5):
# runs build/bench/replay with its default suite (BTrace vs per-core overwrite
# ring, per-core drop-newest ring and one global ring; core- and thread-level
# replay; skewed per-core rates; A sweep; C=2; a live-reader check), prints one
# summary line per configuration, and writes the table into BENCHMARKS.md
# between <!-- replay:begin --> and <!-- replay:end --> (file created if
# missing, the rest of it left alone). About a minute on 2 cores.
#
#   REPLAY_BIN=path    the binary (default build/bench/replay; made if missing)
#   REPLAY_ARGS="..."  extra arguments, e.g. "--quick" or "--reps 5" (recorded)
#   REPLAY_NO_WRITE=1  print only, leave BENCHMARKS.md alone
#   BENCHMARKS_MD=path the file to update (default BENCHMARKS.md at the repo root)
#
# Exits non-zero only if the harness itself fails (including a correctness
# failure of a buffer); the performance targets are reported as PASS/FAIL
# lines, not enforced.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${REPLAY_BIN:-build/bench/replay}
args=${REPLAY_ARGS:-}

if [ ! -x "$bin" ]; then
	make --no-print-directory "$bin"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== replay benchmark: $bin --md <table> $args"
# shellcheck disable=SC2086 # REPLAY_ARGS is a word list on purpose
"$bin" --md "$tmp/table.md" $args | tee "$tmp/stdout.txt"

if [ -n "${REPLAY_NO_WRITE:-}" ]; then
	exit 0
fi

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n1)
mem=$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || true)
virt=$(systemd-detect-virt 2>/dev/null || true)
cc_version=$(${CC:-gcc} --version 2>/dev/null | head -n1 || true)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- user/lib/btrace_buffer.c user/lib/btrace_buffer.h bench 2>/dev/null)" ]; then
	rev="$rev + uncommitted changes to the buffer or bench/"
fi
repro="scripts/bench_replay.sh"
[ -n "$args" ] && repro="REPLAY_ARGS=\"$args\" scripts/bench_replay.sh"

{
	echo '<!-- replay:begin -->'
	echo '## Replay benchmark: latest fragment, loss, fragments, recording latency'
	echo
	echo "Reproduce: \`make build/bench/replay && $repro\` (runs \`build/bench/replay --md FILE${args:+ $args}\`;"
	echo "the same rows are printed on stdout; \`build/bench/replay --help\` for single configurations)."
	echo
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -srm), $(nproc) CPUs (${cpu:-unknown CPU}${virt:+, $virt guest}), ${mem:-? GiB} RAM; ${cc_version:-unknown compiler}; commit $rev."
	echo
	echo 'Method (after the BTrace paper, section 5). A seeded synthetic schedule of entries (payload 16..120 B,'
	echo 'half of them under 40 B) over C virtual cores with skewed rates: "phone" = cores 0-3 little (rate 1),'
	echo '4-9 middle (0.22), 10-11 big (1/30), like the paper'"'"'s Fig. 4 (other C: same thirds/sixths); "uniform" = equal'
	echo 'rates. The schedule writes 6x the buffer capacity, paced in epochs of 2048 entries so the per-core rates'
	echo 'hold over time (defaults; the line above the table gives this run'"'"'s values). core-level replay: one'
	echo 'writer thread per virtual core; thread-level: 32 threads per virtual core (384 threads for C=12). Threads of virtual core c are pinned to real CPU c mod ncpu, so they'
	echo 'preempt each other as on one core. Every entry takes a unique, increasing stamp from one global counter'
	echo 'right before the write call (bt_write() for BTrace). Every tracer gets the same 12 MiB: BTrace as one'
	echo 'buffer of 4 KiB blocks with A = 16 x C (prefaulted); the per-core rings 12 MiB / C each; the global ring'
	echo '12 MiB. Baselines (bench/baselines.h, all lock-free writers): *percore-ovw(ftrace)* one fetch-and-add'
	echo 'byte ring per core that always overwrites (a lapped writer tears an entry; readers drop torn entries);'
	echo '*percore-drop(lttng)* per core 4 sub-buffers with commit counters, drops the newest entry while the'
	echo 'sub-buffer to enter still holds an unfinished write; *global-faa(bbq)* one ring, one shared fetch-and-add'
	echo 'head, a writer waits for the previous lap of its 4 KiB granule to be committed (BBQ blocks, never drops).'
	echo 'After the writers stop, everything is read back (bt_read() + bt_block_next() for BTrace) and every entry'
	echo 'verified (fields, fill pattern, no duplicate stamp); a bad BTrace entry aborts the run.'
	echo
	echo 'Metrics. *latest*: the longest suffix [s, last written] of the stamp space in which every stamp was read'
	echo 'back, in MiB of canonical entry bytes (payload + 8-byte header rounded up to 8, the same for every tracer)'
	echo 'and in % of the 12 MiB. *loss rate*: stamps missing inside [oldest read, newest read] / its width.'
	echo '*fragments*: maximal runs of consecutive stamps among those read. *latency*: rdtsc around each write call'
	echo '(timer overhead included, see the note above the table), geometric mean, p50, p99 over all writes.'
	echo '*writes >10us*: writes that took over 10 us (preempted, or waiting inside the write). Every number is the'
	echo 'median of the repetitions; the'
	echo '*btrace+live-reader* row (one run) adds a thread that runs bt_read() in a loop during the replay and'
	echo 'verifies every entry it is handed, as a correctness check of speculative reading.'
	echo
	cat "$tmp/table.md"
	echo '<!-- replay:end -->'
} >"$tmp/section.md"

. scripts/bench_md.sh
bench_md_put replay "$tmp/section.md"
