#!/usr/bin/env bash
# test_dump_memory.sh - a recorder that dumps for weeks holds bounded memory
# (issue 28): under a syscall-heavy load, 40 `ctl dump`
# in a row with --max-dumps 3; the recorder's anonymous resident memory may
# grow from dump 10 to dump 40 by at most GROWTH_MAX_KB, and the allocator's
# free memory (ctl status, heap:) stays small. Before the recorder fixed
# glibc's mmap threshold (recorder.c), each dump's big temporaries came
# from the heap once the threshold had risen, and the freed slack grew
# (+3.1 MB over these 30 dumps, 13 MiB free in the allocator by dump 200).
# Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "dump memory tests"

# The bound: what may legitimately grow between dump 10 and dump 40 is the
# task table and the allocator's slack of one dump's temporaries: 2 MB, two
# thirds of what the heap-backed temporaries grew by. The allocator's free
# memory at dump 40: at most 2.5 MiB (1.2 MiB measured; 3.6 MiB before, and
# growing).
GROWTH_MAX_KB=${GROWTH_MAX_KB:-2048}
FREE_MAX_KIB=2560
NDUMPS=40

CTL=$T_TMP/ctl.sock
OUT=$T_TMP/out
LOG=$T_TMP/rec.log
ctl() { "$BT" ctl --ctl "$CTL" "$@"; }
rss_anon_kb() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"; }
# The KiB of the size just before WORD on ctl status's line PREFIX:
# "heap: 8.6 MiB in use, 1.2 MiB free ..." gives 1228 for heap: free.
status_kib() {
	ctl status | awk -v pre="$1" -v word="$2" 'index($0, pre) == 1 {
		for (i = 1; i + 2 <= NF; i++)
			if ($(i + 1) ~ /^(B|KiB|MiB|GiB)$/ && $(i + 2) == word) {
				m = $(i + 1) == "GiB" ? 1048576 : $(i + 1) == "MiB" ? 1024 : $(i + 1) == "KiB" ? 1 : 1 / 1024
				printf "%d\n", $i * m
				exit
			} }'
}

# A syscall-heavy load whose stacks stay the same (one process, and only
# it recorded, -p, with its system calls: the 16 MiB buffer is full at each
# dump): the stack table and the symbol cache then stop growing, and what
# grows is the dumps'. (With a new process each round, as the
# issue's dd loop, the table grows with time, rightly: each process's stacks
# are its own; under TCG that was +8 MB. Recording every process, this
# test's own ctl and awk, sampled at random, brought their files and DWARF
# units into the symbol cache during the measure: up to 2 MB more, and 1 run
# in 3 over the bound.)
build/bench/syscall_loop -t 1 -d 600 >/dev/null 2>&1 &
LOAD=$!
T_PIDS+=("$LOAD")
if ! rec_start "$LOG" -o "$OUT" -m 16M --ctl "$CTL" --max-dumps 3 --no-final-dump -p "$LOAD" -e all; then
	not_ok "recorder starts" "$(cat "$LOG")"
	finish
	exit 1
fi

# The symbol cache loads the load's files (libc's debug file among them:
# megabytes) in the background: done before the measure starts.
wait_for 60 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q '^symbols: .* 0 not loaded yet'"

failed=0
rss10=0
rss40=0
for i in $(seq 1 $NDUMPS); do
	if ! r=$(ctl dump 2>&1); then
		failed=$((failed + 1))
		diag "dump $i: $r"
	fi
	[ "$i" -eq 10 ] && { rss10=$(rss_anon_kb "$REC_PID"); sym10=$(status_kib symbols: of); }
	[ "$i" -eq 40 ] && { rss40=$(rss_anon_kb "$REC_PID"); sym40=$(status_kib symbols: of); }
	[ $((i % 10)) -eq 0 ] && diag "dump $i: RssAnon $(rss_anon_kb "$REC_PID") kB"
done
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null

check "all $NDUMPS dumps written" test "$failed" -eq 0
ndumps=$(find "$OUT" -name 'btrace-*.btd' | wc -l)
check "--max-dumps 3 keeps 3 dumps (found $ndumps)" test "$ndumps" -eq 3
diag "$(ctl status | grep '^heap:')"
free_kib=$(status_kib heap: free)
check "the allocator keeps <= ${FREE_MAX_KIB} KiB free after $NDUMPS dumps (${free_kib:-?} KiB)" \
	test -n "$free_kib" -a "${free_kib:-0}" -le "$FREE_MAX_KIB"
diag "symbol cache: ${sym10:-?} -> ${sym40:-?} KiB"
growth=$((rss40 - rss10))
if [ -n "${BT_TEST_EMULATED:-}" ]; then
	# seen on 6.1 under TCG: +7.3 MB, with the allocator's free memory
	# within its bound: tables filling at emulated speed, not the dumps'
	skip "RssAnon grows <= ${GROWTH_MAX_KB} kB (${rss10} -> ${rss40} kB)" \
		"under TCG the tables fill during the measure; the allocator's check above holds the dumps' slack"
else
	check "RssAnon grows <= ${GROWTH_MAX_KB} kB from dump 10 to 40 (${rss10} -> ${rss40} kB, +${growth})" \
		test "$rss10" -gt 0 -a "$growth" -le "$GROWTH_MAX_KB"
fi

rec_stop "$REC_PID"
check "recorder exits cleanly" test "$REC_STATUS" -eq 0
finish
