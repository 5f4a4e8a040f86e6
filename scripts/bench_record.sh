#!/usr/bin/env bash
# bench_record.sh - benchmarks of `btrace-bpf record`, run by `make bench`:
#
#   overhead  a sched-heavy workload (perf bench sched pipe pinned to CPU 0,
#             perf bench sched messaging = hackbench) under five
#             configurations, side by side and interleaved (rotated order
#             every repetition): no tracing; the floor (empty tp_btf programs
#             on the same 14 tracepoints: bench/floor_attach); btrace-bpf
#             record (default groups); perf record of the same tracepoints
#             into a file; bpftrace counting on the same tracepoints.
#   cost      the kernel's run time per event of each recorder program
#             beside the empty program on the same tracepoint (both attached
#             at once, kernel.bpf_stats_enabled=1 for a few seconds).
#   rate      the syscalls group under a getppid() loop (bench/syscall_loop),
#             1 and 2 threads, beside no tracing and the floor; reservation
#             failures from the dump (report --stats); if there are drops,
#             a paced search for the highest event rate without.
#   dump      time to dump a full 64 MiB buffer, -z 0 and the default level,
#             idle and while recording continues under load; blocks lost
#             (overwritten while dumping) from report --stats.
#
# Usage: scripts/bench_record.sh [--quick] [--no-md] [overhead] [cost] [rate] [dump]
#   no section named: all four. --quick: fewer, shorter repetitions to check
#   the harness (implies --no-md). Environment overrides: REPS, PIPE_LOOPS,
#   MSG_GROUPS, MSG_LOOPS, RUNS, RATE_REPS, RATE_SECONDS, DUMP_REPS.
# Results: one line per configuration on stdout, PASS/FAIL lines for the
# targets, and the tables into BENCHMARKS.md between <!-- record:begin -->
# and <!-- record:end -->. Exits 0 unless the harness itself breaks (not
# root, a binary missing, the recorder or the floor failing to start).
# Needs root. Takes about 4 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
. scripts/bench_md.sh

# ---- options -------------------------------------------------------------------
quick=0
write_md=1
sections=()
for arg in "$@"; do
	case "$arg" in
	--quick) quick=1 write_md=0 ;;
	--no-md) write_md=0 ;;
	overhead|cost|rate|dump) sections+=("$arg") ;;
	-h|--help) sed -n '2,32s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "bench_record: ignoring unknown argument '$arg'" >&2 ;;
	esac
done
[ "${#sections[@]}" -eq 0 ] && sections=(overhead cost rate dump)
want() { [[ " ${sections[*]} " == *" $1 "* ]]; }

if [ "$quick" -eq 1 ]; then
	REPS=${REPS:-3} PIPE_LOOPS=${PIPE_LOOPS:-50000} MSG_LOOPS=${MSG_LOOPS:-50} RUNS=${RUNS:-1}
	RATE_REPS=${RATE_REPS:-1} RATE_SECONDS=${RATE_SECONDS:-1} DUMP_REPS=${DUMP_REPS:-1}
fi
REPS=${REPS:-7}                 # overhead repetitions (each runs every configuration)
PIPE_LOOPS=${PIPE_LOOPS:-100000}
MSG_GROUPS=${MSG_GROUPS:-4}
MSG_LOOPS=${MSG_LOOPS:-150}
RUNS=${RUNS:-3}                 # runs of each workload per tracer session: the fastest counts
RATE_REPS=${RATE_REPS:-5}
RATE_SECONDS=${RATE_SECONDS:-1}
DUMP_REPS=${DUMP_REPS:-3}
SETTLE=0.5                      # seconds between "attached" and the workload
MODERATE_CALLS=250000           # dump under load: paced getppid()/s (2 events each)
BUF_BYTES=$((64 << 20))         # record's default buffer (-m 64M)
EV_BYTES=48                     # a syscall event in the buffer, entry header included

BT=build/btrace-bpf
FLOOR=build/bench/floor_attach
LOOP=build/bench/syscall_loop

# The tracepoints of record's default groups (sched, irq, power): keep in step
# with bpf/record.bpf.c and bpf/empty.bpf.c.
TPS=(sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new sched:sched_migrate_task
	sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit
	task:task_rename irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry
	irq:softirq_exit power:cpu_frequency power:cpu_idle)
PERF_TP=$(IFS=,; echo "${TPS[*]}")
BPFTRACE_PROG="$(printf 'tracepoint:%s,' "${TPS[@]}" | sed 's/,$//') { @[probe] = count(); }"

die() { echo "bench_record: $*" >&2; exit 1; }
note() { echo "bench_record: $*" >&2; }

# ---- preconditions ---------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (BPF, perf -a): run sudo make bench"
# Up to date when run alone (make bench has built everything already).
if ! make --no-print-directory -s "$BT" "$FLOOR" "$LOOP" >/tmp/bench_record.make.$$ 2>&1; then
	cat /tmp/bench_record.make.$$ >&2
	note "cannot rebuild $BT $FLOOR $LOOP: using the binaries already built"
fi
rm -f /tmp/bench_record.make.$$
for b in "$BT" "$FLOOR" "$LOOP"; do [ -x "$b" ] || die "$b missing"; done
have_perf=0; command -v perf >/dev/null 2>&1 && perf bench sched pipe -l 10 >/dev/null 2>&1 && have_perf=1
have_bpftrace=0; command -v bpftrace >/dev/null 2>&1 && have_bpftrace=1
# perf and bpftrace need tracefs (and older tools debugfs).
if [ ! -e /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || note "cannot mount tracefs"
fi
if [ ! -e /sys/kernel/debug/tracing ] && ! mountpoint -q /sys/kernel/debug; then
	mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
fi

TMP=$(mktemp -d /tmp/bench_record.XXXXXX) || die "mktemp failed"
TR_PID='' LOAD_PID='' REC_PID='' ctl_fd='' ack_fd='' STATS_PREV=''
cleanup()
{
	local p
	[ "$BASHPID" = "$$" ] || return 0 # only the main shell cleans up
	for p in $TR_PID $LOAD_PID $REC_PID; do kill -KILL "$p" 2>/dev/null; done
	[ -n "$STATS_PREV" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_PREV" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Run private copies: a rebuild in the tree during the run changes nothing.
mkdir -p "$TMP/bin" && cp "$BT" "$FLOOR" "$LOOP" "$TMP/bin/" || die "cannot copy the binaries to $TMP/bin"
BT=$TMP/bin/btrace-bpf FLOOR=$TMP/bin/floor_attach LOOP=$TMP/bin/syscall_loop

# ---- helpers ---------------------------------------------------------------------
now_ns() { date +%s%N; }

# median of the numbers on stdin ("-" if none)
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# smallest of the numbers on stdin ("-" if none)
minimum() { grep -E '^[0-9]' | sort -g | head -1 | grep . || echo -; }
# ratio a/b with 3 decimals ("-" if either is missing)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.3f\n", a / b }'; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "-" || v == "") print "-"; else printf f "\n", v }'; }

# wait_line FILE REGEX TIMEOUT_S PID: until a line of FILE matches, PID dies
# (1) or the time is up (1).
wait_line()
{
	local f=$1 re=$2 deadline=$(($(date +%s) + $3)) pid=$4
	until grep -qE -- "$re" "$f" 2>/dev/null; do
		[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
		[ "$(date +%s)" -ge "$deadline" ] && return 1
		sleep 0.01
	done
}

# stop_pid PID SIGNAL: signal it and reap it; SIGKILL after 30 s. Polls
# rather than running a watchdog subshell: a subshell killed right after its
# fork can still run this shell's traps.
stop_pid()
{
	local pid=$1 sig=${2:-INT} n=0
	[ -n "$pid" ] || return 0
	kill "-$sig" "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do
		n=$((n + 1))
		if [ "$n" -eq 1500 ]; then
			note "pid $pid still running 30 s after SIG$sig: killing it"
			kill -KILL "$pid" 2>/dev/null
		fi
		sleep 0.02
	done
	wait "$pid" 2>/dev/null
	return 0
}

# CPU time used by everything over one second, percent of the machine: the
# background load this run competes with.
busy_pct()
{
	local a b
	read -r -a a < <(head -1 /proc/stat)
	sleep 1
	read -r -a b < <(head -1 /proc/stat)
	awk -v u1="$(( a[1] + a[2] + a[3] + a[6] + a[7] + a[8] ))" -v t1="$(( a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7] + a[8] ))" \
	    -v u2="$(( b[1] + b[2] + b[3] + b[6] + b[7] + b[8] ))" -v t2="$(( b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7] + b[8] ))" \
	    'BEGIN { printf "%.0f\n", (t2 - t1 > 0) ? 100 * (u2 - u1) / (t2 - t1) : 0 }'
}

# start_tracer CONFIG GROUPS: start it, wait until it is attached, settle.
# Sets TR_PID and TR_LOG. CONFIG: none floor btrace perf bpftrace.
start_tracer()
{
	local cfg=$1 groups=$2 reply
	TR_LOG=$TMP/$cfg.log
	TR_PID=
	: >"$TR_LOG"
	case "$cfg" in
	none) ;;
	floor)
		"$FLOOR" -e "$groups" 2>"$TR_LOG" &
		TR_PID=$!
		wait_line "$TR_LOG" 'ready:' 30 "$TR_PID" || { cat "$TR_LOG" >&2; die "floor_attach did not start"; }
		;;
	btrace)
		rm -rf "$TMP/rec"
		"$BT" record -e "$groups" -o "$TMP/rec" --no-final-dump 2>"$TR_LOG" &
		TR_PID=$!
		wait_line "$TR_LOG" 'recording \(pid' 30 "$TR_PID" || { cat "$TR_LOG" >&2; die "btrace-bpf record did not start"; }
		;;
	perf)
		# Start with events off, enable through the control fifo, and take
		# perf's ack as "attached".
		rm -f "$TMP/ctl" "$TMP/ack" "$TMP/perf.data"
		mkfifo "$TMP/ctl" "$TMP/ack"
		perf record -D -1 --control "fifo:$TMP/ctl,$TMP/ack" -a -e "$PERF_TP" \
			-o "$TMP/perf.data" >/dev/null 2>"$TR_LOG" &
		TR_PID=$!
		exec {ctl_fd}<>"$TMP/ctl" {ack_fd}<>"$TMP/ack"
		echo enable >&"$ctl_fd"
		reply=
		read -r -t 30 -u "$ack_fd" reply
		exec {ctl_fd}>&- {ack_fd}>&-
		[ "$reply" = ack ] || { cat "$TR_LOG" >&2; note "perf record did not start"; stop_pid "$TR_PID" KILL; TR_PID=; return 1; }
		;;
	bpftrace)
		bpftrace -e "$BPFTRACE_PROG" >"$TR_LOG" 2>&1 &
		TR_PID=$!
		wait_line "$TR_LOG" '^Attaching' 60 "$TR_PID" || { cat "$TR_LOG" >&2; note "bpftrace did not start"; stop_pid "$TR_PID" KILL; TR_PID=; return 1; }
		# "Attaching N probes..." comes before the attaching: wait until
		# the kernel lists all of its tracepoint programs.
		local deadline=$(($(date +%s) + 60))
		until [ "$(bpftool perf show 2>/dev/null | grep -c "^pid $TR_PID ")" -ge "${#TPS[@]}" ]; do
			if ! kill -0 "$TR_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
				cat "$TR_LOG" >&2; note "bpftrace did not attach"; stop_pid "$TR_PID" KILL; TR_PID=; return 1
			fi
			sleep 0.05
		done
		;;
	esac
	sleep "$SETTLE"
	return 0
}

# stop_tracer CONFIG: stop it (in this shell: it is our child) and set
# TR_RESULT to "EVENTS LOST_PERCENT" of its session ("- -" where the tracer
# does not say).
stop_tracer()
{
	local cfg=$1
	stop_pid "$TR_PID" INT
	TR_PID=
	TR_RESULT=$(tracer_result "$cfg")
	case "$cfg" in
	btrace) rm -rf "$TMP/rec" ;;
	perf) rm -f "$TMP/perf.data" ;;
	esac
}

tracer_result()
{
	case "$1" in
	btrace)
		sed -nE 's/.*stopped: ([0-9]+) events recorded, ([0-9]+) lost in the ring buffer.*/\1 \2/p' "$TR_LOG" |
			awk '{ printf "%d %.2f\n", $1, ($1 + $2) ? 100 * $2 / ($1 + $2) : 0 }' | tail -1 ;;
	perf)
		# "(N samples)" written; "lost X%!" when perf lost samples.
		awk '/Captured and wrote/ { for (i = 1; i <= NF; i++) if ($i == "samples)" || $i == "samples)\x20]") n = $(i - 1); gsub(/\(/, "", n) }
		     /lost [0-9.]+%/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+%!?$/) { p = $i; gsub(/[%!]/, "", p) } }
		     END { printf "%s %s\n", n == "" ? "-" : n, p == "" ? "0.00" : p }' "$TR_LOG" ;;
	bpftrace)
		awk -F': ' '/^@\[/ { s += $2 } END { printf "%d 0.00\n", s }' "$TR_LOG" ;;
	*) echo "- -" ;;
	esac
}

# dump_stats FILE: "BLOCKS_READ LOST BUSY NEVER_USED RB_FAILURES SUBMITTED
# ZLEVEL BUF_DROPPED" from report --stats ("-" for what it does not say).
dump_stats()
{
	"$BT" report --stats "$1" 2>/dev/null | awk '
		/^format:/ { for (i = 1; i <= NF; i++) if ($i == "level") z = $(i + 1); gsub(/,/, "", z) }
		/dump read:/ { for (i = 1; i <= NF; i++) {
			if ($i == "read,") r = $(i - 2); if ($i == "lost") l = $(i - 1)
			if ($i == "busy") b = $(i - 1); if ($i == "never") n = $(i - 1) } }
		/ring-buffer reservation failures:/ { f = $NF }
		/ring-buffer events submitted:/ { s = $NF }
		/buffer entries/ { for (i = 1; i <= NF; i++) if ($i == "dropped") d = $(i - 1) }
		END { printf "%s %s %s %s %s %s %s %s\n", r == "" ? "-" : r, l == "" ? "-" : l, b == "" ? "-" : b,
			n == "" ? "-" : n, f == "" ? "-" : f, s == "" ? "-" : s, z == "" ? "-" : z, d == "" ? "-" : d }'
}

MD=$TMP/md
: >"$MD"
md() { printf '%s\n' "$*" >>"$MD"; }

KERNEL=$(uname -r)
CPU=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
NCPU=$(nproc)
START_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain -- bpf user bench scripts 2>/dev/null)" ] && COMMIT="$COMMIT + uncommitted changes"
PERF_VER=$([ "$have_perf" -eq 1 ] && perf --version 2>/dev/null | awk '{ print $3 }' || echo missing)
BPFTRACE_VER=$([ "$have_bpftrace" -eq 1 ] && bpftrace --version 2>/dev/null | awk '{ print $2 }' || echo missing)
BUSY0=$(busy_pct)
echo "bench_record: kernel $KERNEL, $NCPU CPUs ($CPU), perf $PERF_VER, bpftrace $BPFTRACE_VER"
echo "bench_record: background CPU use before starting: ${BUSY0}%"
[ "$BUSY0" -gt 20 ] && note "the machine is busy (${BUSY0}% CPU used by others): expect noisy numbers"

# ================================================================================
# 1. overhead on sched-heavy workloads
# ================================================================================

# paired_ratio_median A B: median over repetitions of A[r]/B[r], where A and
# B are "config.workload" keys of OV (values listed in repetition order, "-"
# for a missing sample). Ratios of samples taken side by side in the same
# repetition cancel the drift of a shared, noisy machine better than a ratio
# of medians.
paired_ratio_median()
{
	paired_ratio "${OV[$1]:-}" "${OV[$2]:-}"
}

# paired_ratio "A1 A2 ..." "B1 B2 ...": median of Ai/Bi.
paired_ratio()
{
	paste -d' ' <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) |
		awk 'NF == 2 && $1 != "-" && $2 != "-" && $2 > 0 { printf "%.6f\n", $1 / $2 }' | median |
		awk '{ if ($1 == "-") print "-"; else printf "%.3f\n", $1 }'
}

overhead()
{
	local cfgs=(none floor btrace) c r i j k e order out line
	declare -gA OV
	[ "$have_perf" -eq 1 ] || { note "perf missing: overhead section skipped (scripts/install-deps.sh --bench)"; md "### Overhead: skipped (perf missing)"; return 0; }
	cfgs+=(perf)
	[ "$have_bpftrace" -eq 1 ] && cfgs+=(bpftrace) || note "bpftrace missing: its configuration skipped"
	local n=${#cfgs[@]} nmsg=$((MSG_GROUPS * 20 * 20 * MSG_LOOPS))
	echo
	echo "-- overhead: $REPS repetitions x {${cfgs[*]}}, order rotated each repetition"
	echo "   pipe: taskset -c 0 perf bench sched pipe -l $PIPE_LOOPS; messaging: perf bench sched messaging -g $MSG_GROUPS -l $MSG_LOOPS ($nmsg messages); $RUNS runs of each per session, fastest counts"
	# Warm-up: page cache, perf's binary, the scheduler's state.
	taskset -c 0 perf bench sched pipe -l $((PIPE_LOOPS / 4)) >/dev/null 2>&1
	perf bench sched messaging -g "$MSG_GROUPS" -l $((MSG_LOOPS / 4)) >/dev/null 2>&1
	for ((r = 0; r < REPS; r++)); do
		order=()
		for ((i = 0; i < n; i++)); do order+=("${cfgs[$(((i + r) % n))]}"); done
		printf '   rep %d/%d: %s\n' $((r + 1)) "$REPS" "${order[*]}"
		for c in "${order[@]}"; do
			if ! start_tracer "$c" sched,irq,power; then
				OV[$c.pipe]+="- "; OV[$c.msg]+="- "; OV[$c.events]+="- "; OV[$c.lost]+="- "
				continue
			fi
			# RUNS runs of each workload; the fastest run counts (the
			# other processes of a shared machine only ever add time).
			out=$(for ((j = 0; j < RUNS; j++)); do
				taskset -c 0 perf bench sched pipe -l "$PIPE_LOOPS" 2>&1 | awk '/usecs\/op/ { print $1 }'
			done | minimum)
			OV[$c.pipe]+="${out:--} "
			out=$(for ((j = 0; j < RUNS; j++)); do
				perf bench sched messaging -g "$MSG_GROUPS" -l "$MSG_LOOPS" 2>&1 |
					awk -v n="$nmsg" '/Total time/ { printf "%.4f\n", $3 * 1e6 / n }'
			done | minimum)
			OV[$c.msg]+="${out:--} "
			stop_tracer "$c"
			read -r k e <<<"$TR_RESULT"
			OV[$c.events]+="${k:--} "
			OV[$c.lost]+="${e:--} "
		done
	done

	md "### Overhead on sched-heavy workloads"
	md ""
	md "$REPS repetitions; in each, every configuration runs both workloads in its own tracer session, order rotated every repetition;"
	md "in a session each workload runs $RUNS times and the fastest run counts (other processes on a shared machine only add time)."
	md "pipe: \`taskset -c 0 perf bench sched pipe -l $PIPE_LOOPS\` (µs per round trip);"
	md "messaging: \`perf bench sched messaging -g $MSG_GROUPS -l $MSG_LOOPS\` (hackbench, µs per message, $nmsg messages)."
	md "Times are medians; ratios are medians of the per-repetition ratios (samples taken side by side)."
	md "Events and loss: per tracer session (all runs plus ${SETTLE} s settling), median over repetitions."
	md "Tracepoints: the 14 of record's default groups (sched, irq, power): ${TPS[*]}."
	md ""
	md "| configuration | pipe µs/op | ×none | ×floor | messaging µs/msg | ×none | ×floor | events/session | lost % |"
	md "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	echo
	printf '   %-9s %10s %7s %7s %12s %7s %7s %12s %7s\n' config pipe_us x_none x_floor msg_us x_none x_floor events lost%
	local pm mm
	for c in "${cfgs[@]}"; do
		pm=$(tr ' ' '\n' <<<"${OV[$c.pipe]:-}" | grep -E '^[0-9]' | median)
		mm=$(tr ' ' '\n' <<<"${OV[$c.msg]:-}" | grep -E '^[0-9]' | median)
		e=$(tr ' ' '\n' <<<"${OV[$c.events]:-}" | grep -E '^[0-9]' | median)
		k=$(tr ' ' '\n' <<<"${OV[$c.lost]:-}" | grep -E '^[0-9]' | median)
		printf '   %-9s %10s %7s %7s %12s %7s %7s %12s %7s\n' "$c" "$(fmt "$pm" %.3f)" \
			"$(paired_ratio_median "$c.pipe" none.pipe)" "$(paired_ratio_median "$c.pipe" floor.pipe)" \
			"$(fmt "$mm" %.4f)" "$(paired_ratio_median "$c.msg" none.msg)" "$(paired_ratio_median "$c.msg" floor.msg)" \
			"$(fmt "$e" %.0f)" "$(fmt "$k" %.2f)"
		case "$c" in
		none) line="no tracing" ;; floor) line="floor: empty tp_btf programs" ;;
		btrace) line="btrace-bpf record" ;; perf) line="perf record -a (file)" ;; bpftrace) line="bpftrace count()" ;;
		esac
		md "| $line | $(fmt "$pm" %.3f) | $(paired_ratio_median "$c.pipe" none.pipe) | $(paired_ratio_median "$c.pipe" floor.pipe) | $(fmt "$mm" %.4f) | $(paired_ratio_median "$c.msg" none.msg) | $(paired_ratio_median "$c.msg" floor.msg) | $(fmt "$e" %.0f) | $(fmt "$k" %.2f) |"
	done
	md ""
	md "Raw samples (µs, in repetition order):"
	md ""
	for c in "${cfgs[@]}"; do md "- $c: pipe ${OV[$c.pipe]:-}/ messaging ${OV[$c.msg]:-}"; done
	md ""

	# Targets: within 10% of the floor, and below perf record.
	local wl key verdict
	for wl in pipe messaging; do
		key=$([ "$wl" = pipe ] && echo pipe || echo msg)
		k=$(paired_ratio_median "btrace.$key" "floor.$key")
		verdict=$(awk -v k="$k" 'BEGIN { print (k != "-" && k <= 1.10) ? "PASS" : "FAIL" }')
		line="$verdict: overhead/$wl: btrace-bpf within 10% of the empty-program floor (x$k)"
		echo "$line"; md "- $line"
		k=$(paired_ratio_median "btrace.$key" "perf.$key")
		verdict=$(awk -v k="$k" 'BEGIN { print (k != "-" && k < 1) ? "PASS" : "FAIL" }')
		line="$verdict: overhead/$wl: btrace-bpf below perf record (x$k of perf)"
		echo "$line"; md "- $line"
	done
	md ""
}

# ================================================================================
# 1b. per-event cost of the recorder's programs (kernel.bpf_stats_enabled)
# ================================================================================
# The floor and the recorder attached at the same time on every group, one
# workload for both; the kernel times each program run. Noise of the machine
# does not enter: these are the programs' own run times.
cost()
{
	local f_pid r_pid log=$TMP/cost.log prev
	echo
	echo "-- cost: run time per event of each program (kernel.bpf_stats_enabled=1), recorder and floor attached together, -e all"
	prev=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
	if ! sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
		note "cannot enable kernel.bpf_stats_enabled: cost section skipped"
		return 0
	fi
	STATS_PREV=$prev
	start_tracer floor all
	f_pid=$TR_PID
	rm -rf "$TMP/cost"
	"$BT" record -e all -o "$TMP/cost" --no-final-dump 2>"$log" &
	REC_PID=$!
	r_pid=$REC_PID
	wait_line "$log" 'recording \(pid' 30 "$REC_PID" || { cat "$log" >&2; die "btrace-bpf record -e all did not start"; }
	sleep "$SETTLE"
	if [ "$have_perf" -eq 1 ]; then
		taskset -c 0 perf bench sched pipe -l "$PIPE_LOOPS" >/dev/null 2>&1
		perf bench sched messaging -g "$MSG_GROUPS" -l "$MSG_LOOPS" >/dev/null 2>&1
	fi
	"$LOOP" -t 1 -d 1 >/dev/null
	"$ROOT/scripts/bench_record_progstats.py" "$f_pid" "$r_pid" >"$TMP/progstats"
	stop_pid "$REC_PID" INT
	REC_PID=
	stop_tracer floor
	sysctl -qw kernel.bpf_stats_enabled="$prev" 2>/dev/null
	STATS_PREV=
	rm -rf "$TMP/cost"

	md "### Per-event cost of the programs (kernel.bpf_stats_enabled)"
	md ""
	md "The floor's empty programs and the recorder's programs attached at the same time (\`-e all\`), so both see exactly the same events"
	md "(the workloads above, then \`syscall_loop -t 1 -d 1\`); the kernel's own run time per invocation (run_time_ns / run_cnt),"
	md "which includes about 20-30 ns of the statistics' own clock reads in both columns. Not affected by the machine's noise."
	md ""
	md "| tracepoint | runs | recorder ns/event | empty ns/event | recorder - empty |"
	md "| --- | ---: | ---: | ---: | ---: |"
	printf '\n   %-20s %10s %10s %8s %8s\n' tracepoint runs recorder empty extra
	awk -v f="$f_pid" -v r="$r_pid" '
		$1 == f { ecnt[$2] = $3; ens[$2] = $4 }
		$1 == r { rcnt[$2] = $3; rns[$2] = $4; order[++n] = $2 }
		END {
			for (i = 1; i <= n; i++) {
				t = order[i]
				if (!rcnt[t]) { printf "%s 0 - - -\n", t; continue }
				a = rns[t] / rcnt[t]; b = ecnt[t] ? ens[t] / ecnt[t] : -1
				if (b < 0) printf "%s %d %.1f - -\n", t, rcnt[t], a
				else printf "%s %d %.1f %.1f %.1f\n", t, rcnt[t], a, b, a - b
			}
		}' "$TMP/progstats" | sort -k2,2nr >"$TMP/cost.rows"
	while read -r t k a b e; do
		printf '   %-20s %10s %10s %8s %8s\n' "$t" "$k" "$a" "$b" "$e"
		md "| $t | $k | $a | $b | $e |"
	done <"$TMP/cost.rows"
	md ""
}

# ================================================================================
# 2. highest sustained event rate without reservation failures (syscalls group)
# ================================================================================

# rate_run CONFIG THREADS TARGET: one run of the loop under CONFIG; sets
# RES=(CALLS_PER_S EVENTS_PER_S RB_FAILURES BUF_DROPPED) (the last three "-"
# unless btrace). Runs in this shell: the tracers must be our children.
rate_run()
{
	local cfg=$1 th=$2 target=$3 out cps secs f
	local -a st
	RES=(- - - -)
	if [ "$cfg" = btrace ]; then
		rm -rf "$TMP/rate"
		# -z 0: the final dump is only read for its counters.
		"$BT" record -e syscalls -z 0 -o "$TMP/rate" 2>"$TMP/rate.log" &
		TR_PID=$!
		wait_line "$TMP/rate.log" 'recording \(pid' 30 "$TR_PID" || { cat "$TMP/rate.log" >&2; die "btrace-bpf record -e syscalls did not start"; }
		sleep 0.2
	else
		start_tracer "$cfg" syscalls || return 0
	fi
	out=$("$LOOP" -t "$th" -d "$RATE_SECONDS" -r "$target")
	cps=$(sed -nE 's/.*calls_per_s=([0-9]+).*/\1/p' <<<"$out")
	secs=$(sed -nE 's/.*seconds=([0-9.]+).*/\1/p' <<<"$out")
	if [ "$cfg" = btrace ]; then
		stop_pid "$TR_PID" INT
		TR_PID=
		f=$(ls "$TMP"/rate/*.btd 2>/dev/null | head -1)
		[ -n "$f" ] || { cat "$TMP/rate.log" >&2; die "btrace-bpf record -e syscalls wrote no final dump"; }
		read -r -a st < <(dump_stats "$f")
		# Events per second of load: everything the recorder was offered
		# (submitted + failed) over the loop's duration.
		RES=("${cps:--}" "$(awk -v s="${st[5]}" -v fl="${st[4]}" -v t="${secs:-0}" \
			'BEGIN { if (s == "-" || fl == "-" || t <= 0) print "-"; else printf "%.0f\n", (s + fl) / t }')" \
			"${st[4]}" "${st[7]}")
		rm -rf "$TMP/rate"
	else
		stop_tracer "$cfg"
		RES=("${cps:--}" - - -)
	fi
}

rate()
{
	local th r c i cfgs=(none floor btrace) order
	declare -A cps evs fails drops
	echo
	echo "-- rate: record -e syscalls (default buffer, ring, drain) under build/bench/syscall_loop, ${RATE_SECONDS} s runs, $RATE_REPS repetitions"
	for th in 1 2; do
		for ((r = 0; r < RATE_REPS; r++)); do
			order=()
			for ((i = 0; i < 3; i++)); do order+=("${cfgs[$(((i + r) % 3))]}"); done
			for c in "${order[@]}"; do
				rate_run "$c" "$th" 0
				cps[$c.$th]+="${RES[0]} "
				if [ "$c" = btrace ]; then
					evs[$th]+="${RES[1]} "; fails[$th]+="${RES[2]} "; drops[$th]+="${RES[3]} "
				fi
			done
		done
	done

	md "### Highest sustained event rate without loss (\`record -e syscalls\`, default settings)"
	md ""
	md "\`build/bench/syscall_loop -t N -d $RATE_SECONDS\` (getppid() as fast as possible; 2 events per call) under no tracing,"
	md "the floor (empty programs on sys_enter/sys_exit) and \`btrace-bpf record -e syscalls\` (default 64 MiB buffer, 16 MiB of per-CPU rings in total)."
	md "Median of $RATE_REPS interleaved repetitions (ratios: median of per-repetition ratios); ring-buffer reservation failures and buffer drops summed over them, from the dump (\`report --stats\`)."
	md "Events/s: events offered to the recorder (submitted + failed, all processes) per second of load."
	md ""
	md "| threads | none calls/s | floor calls/s | btrace calls/s | ×none | ×floor | btrace events/s | reservation failures | buffer drops |"
	md "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	printf '\n   %-7s %13s %13s %13s %7s %7s %14s %10s %8s\n' threads none_calls/s floor_calls/s btrace_calls/s x_none x_floor events/s rb_fail drops
	local n f b e fl dr rn rf best_ok=0 best_th=- worst_bad=0 bad_th=0 line
	local -A bmed fmed
	for th in 1 2; do
		n=$(tr ' ' '\n' <<<"${cps[none.$th]:-}" | grep -E '^[0-9]' | median)
		f=$(tr ' ' '\n' <<<"${cps[floor.$th]:-}" | grep -E '^[0-9]' | median)
		b=$(tr ' ' '\n' <<<"${cps[btrace.$th]:-}" | grep -E '^[0-9]' | median)
		e=$(tr ' ' '\n' <<<"${evs[$th]:-}" | grep -E '^[0-9]' | median)
		fl=$(tr ' ' '\n' <<<"${fails[$th]:-}" | awk '/^[0-9]/ { s += $1; n++ } END { print n ? s : "-" }')
		dr=$(tr ' ' '\n' <<<"${drops[$th]:-}" | awk '/^[0-9]/ { s += $1; n++ } END { print n ? s : "-" }')
		rn=$(paired_ratio "${cps[btrace.$th]:-}" "${cps[none.$th]:-}")
		rf=$(paired_ratio "${cps[btrace.$th]:-}" "${cps[floor.$th]:-}")
		bmed[$th]=$b fmed[$th]=$f
		printf '   %-7s %13s %13s %13s %7s %7s %14s %10s %8s\n' "$th" "$(fmt "$n" %.0f)" "$(fmt "$f" %.0f)" \
			"$(fmt "$b" %.0f)" "$rn" "$rf" "$(fmt "$e" %.0f)" "$fl" "$dr"
		md "| $th | $(fmt "$n" %.0f) | $(fmt "$f" %.0f) | $(fmt "$b" %.0f) | $rn | $rf | $(fmt "$e" %.0f) | $fl | $dr |"
		if [ "$fl" = 0 ] && [ "$dr" = 0 ]; then
			if awk -v a="$best_ok" -v b="$e" 'BEGIN { exit !(b > a) }'; then best_ok=$e best_th=$th; fi
		elif [ "$bad_th" -eq 0 ]; then
			bad_th=$th worst_bad=$e
		fi
	done
	md ""
	line="rate: scaling from 1 to 2 threads: btrace-bpf x$(ratio "${bmed[2]}" "${bmed[1]}") calls/s, floor x$(ratio "${fmed[2]}" "${fmed[1]}")"
	echo "   $line"
	md "- $line"

	# Loss at full speed with some thread count: search the paced rate with
	# that many threads, from 0 up to the lossy rate (bisection). Pacing is
	# in calls/s; results are in events/s as the recorder saw them.
	if [ "$bad_th" -ne 0 ]; then
		local lo=0 hi mid step steps=4 paced_ok=0 paced_bad=-
		[ "$quick" -eq 1 ] && steps=2
		hi=$(awk -v e="$worst_bad" 'BEGIN { printf "%.0f", e / 2 }')
		md ""
		md "Loss with $bad_th thread(s) at full speed. Paced search ($bad_th thread(s), \`syscall_loop -r CALLS_PER_S\`, bisection):"
		md ""
		md "| target calls/s | achieved calls/s | events/s | reservation failures | buffer drops |"
		md "| ---: | ---: | ---: | ---: | ---: |"
		echo "   loss with $bad_th thread(s) at full speed: paced search up to $((hi * 2)) events/s"
		for ((step = 0; step < steps; step++)); do
			mid=$(( (lo + hi) / 2 ))
			[ "$mid" -le 0 ] && break
			rate_run btrace "$bad_th" "$mid"
			printf '   paced %10s calls/s: achieved %s calls/s, %s events/s, %s failures, %s drops\n' "$mid" "${RES[0]}" "${RES[1]}" "${RES[2]}" "${RES[3]}"
			md "| $mid | ${RES[0]} | ${RES[1]} | ${RES[2]} | ${RES[3]} |"
			if [ "${RES[2]}" = 0 ] && [ "${RES[3]}" = 0 ]; then
				lo=$mid
				awk -v a="$paced_ok" -v b="${RES[1]}" 'BEGIN { exit !(b > a) }' && paced_ok=${RES[1]}
			else
				hi=$mid paced_bad=${RES[1]}
			fi
		done
		md ""
		line="rate: $bad_th thread(s): loss at full speed ($(fmt "$worst_bad" %.0f) events/s offered); paced, no loss up to $(fmt "$paced_ok" %.0f) events/s"
		[ "$paced_bad" != - ] && line="$line, loss from $(fmt "$paced_bad" %.0f) events/s"
		echo "   $line"
		md "- $line"
	fi
	line="rate: highest sustained rate without loss: $(fmt "$best_ok" %.0f) events/s ($best_th thread(s), full speed)"
	[ "$bad_th" -eq 0 ] && line="$line; no loss at the highest load this machine generates"
	echo "   $line"
	md "- $line"
	md ""
}

# ================================================================================
# 3. dump time of a full 64 MiB buffer
# ================================================================================

# v_lost LOG [fresh]: the recorder's cumulative "lost in the ring buffer"
# from its last once-a-second (-v) line; with "fresh", from the next line.
v_lost()
{
	local log=$1 n deadline
	if [ "${2:-}" = fresh ]; then
		n=$(grep -c 'events (' "$log")
		deadline=$(($(date +%s) + 3))
		while [ "$(grep -c 'events (' "$log")" -le "$n" ] && [ "$(date +%s)" -lt "$deadline" ]; do
			sleep 0.05
		done
	fi
	sed -nE 's/.* events \(.*\), ([0-9]+) lost in the ring buffer.*/\1/p' "$log" | tail -1
}

# dump_session ZLABEL [RECORD_ARGS...]: record -e syscalls, fill the buffer
# past full, then dumps idle, under moderate load and under full load.
dump_session()
{
	local zlabel=$1 log=$TMP/dump.log k=0 level t0 t1 f secs lat lvl l0 l1
	shift
	local -a st
	rm -rf "$TMP/dump"
	"$BT" record -e syscalls -v -o "$TMP/dump" --no-final-dump "$@" 2>"$log" &
	REC_PID=$!
	wait_line "$log" 'recording \(pid' 30 "$REC_PID" || { cat "$log" >&2; die "btrace-bpf record did not start"; }
	# Fill: load until the recorder has taken 1.5x the buffer's worth.
	"$LOOP" -t 1 -d 60 >/dev/null &
	LOAD_PID=$!
	local need=$((BUF_BYTES * 3 / 2 / EV_BYTES)) deadline=$(($(date +%s) + 30)) got=0
	while [ "$(date +%s)" -lt "$deadline" ]; do
		got=$(sed -nE 's/.*: ([0-9]+) events \(.*/\1/p' "$log" | tail -1)
		[ "${got:-0}" -ge "$need" ] && break
		sleep 0.1
	done
	stop_pid "$LOAD_PID" TERM
	LOAD_PID=
	[ "${got:-0}" -ge "$need" ] || note "dump/$zlabel: only ${got:-0} events after 30 s; the buffer may not be full"
	D_FILL_LOST[$zlabel]=$(v_lost "$log" fresh)

	for level in idle moderate full; do
		case "$level" in
		idle) ;;
		moderate) "$LOOP" -t 1 -d 120 -r "$MODERATE_CALLS" >/dev/null & LOAD_PID=$! ;;
		full) "$LOOP" -t 1 -d 120 >/dev/null & LOAD_PID=$! ;;
		esac
		sleep 1
		l0=$(v_lost "$log")
		for ((i = 0; i < DUMP_REPS; i++)); do
			k=$((k + 1))
			t0=$(now_ns)
			kill -USR1 "$REC_PID"
			if ! wait_line "$log" "dump $k written to|dump failed" 60 "$REC_PID"; then
				cat "$log" >&2; die "dump/$zlabel: dump $k not written within 60 s"
			fi
			t1=$(now_ns)
			grep -q "dump failed" "$log" && { cat "$log" >&2; die "dump/$zlabel: a dump failed"; }
			f=$(sed -nE "s/.*dump $k written to ([^ ]+) .*/\1/p" "$log")
			secs=$(sed -nE "s/.*dump $k written to .*, ([0-9.]+)s\)$/\1/p" "$log")
			lat=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
			read -r -a st < <(dump_stats "$f")
			lvl=$zlabel.$level
			D_SECS[$lvl]+="$secs "
			D_LAT[$lvl]+="$lat "
			D_LOST[$lvl]+="${st[1]} "
			D_READ[$lvl]+="${st[0]} "
			D_NEVER[$lvl]+="${st[3]} "
			D_SIZE[$lvl]+="$(stat -c %s "$f") "
			D_Z[$zlabel]=${st[6]}
			printf '   %-8s %-8s dump %d: %ss (signal to line %ss), %s blocks read, %s lost while dumping, %s never used\n' \
				"$zlabel" "$level" "$k" "$secs" "$lat" "${st[0]}" "${st[1]}" "${st[3]}"
			rm -f "$f"
			sleep 0.3
		done
		l1=$(v_lost "$log" fresh)
		D_RING[$zlabel.$level]=$(( ${l1:-0} - ${l0:-0} ))
		stop_pid "$LOAD_PID" TERM
		LOAD_PID=
	done
	stop_pid "$REC_PID" INT
	REC_PID=
	D_RBLOST[$zlabel]=$(sed -nE 's/.*stopped: [0-9]+ events recorded, ([0-9]+) lost.*/\1/p' "$log")
	rm -rf "$TMP/dump"
}

dump()
{
	declare -gA D_SECS D_LAT D_LOST D_READ D_NEVER D_SIZE D_Z D_RBLOST D_RING D_FILL_LOST
	echo
	echo "-- dump: full 64 MiB buffer (record -e syscalls -m 64M --comm syscall_loop), $DUMP_REPS dumps per row; load: build/bench/syscall_loop -t 1"
	# --comm: only the load's events, so other processes' system calls do
	# not change the event rate (the dump thread still competes with them).
	dump_session z0 -m 64M -z 0 --comm syscall_loop
	dump_session default -m 64M --comm syscall_loop
	local zl level lvl s l lo rd nv sz verdict line
	md "### Dump time of a full 64 MiB buffer"
	md ""
	md "\`btrace-bpf record -e syscalls -m 64M --comm syscall_loop\` (the filter keeps other processes' system calls out, so the load below is the event rate),"
	md "filled with 1.5× its size of getppid() events, then SIGUSR1 while recording continues."
	md "Load during the dump: idle (none), moderate (\`syscall_loop -t 1 -r $MODERATE_CALLS\`, $((MODERATE_CALLS * 2)) events/s), full (\`syscall_loop -t 1\`, unpaced)."
	md "Dump time: as the recorder reports it; signal→line: from kill -USR1 to the \"dump written\" line. Median of $DUMP_REPS; blocks of 4 KiB (16384 in all)."
	md "Ring losses: reservation failures while the row's dumps ran (from the recorder's once-a-second -v counter, so ±1 s)."
	md ""
	md "| compression | load | dump s | signal→line s | file MiB | blocks read | lost while dumping | never used | ring losses |"
	md "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	printf '\n   %-12s %-9s %7s %8s %8s %7s %7s %6s %10s\n' compression load dump_s signal_s file_MiB read lost never ring_lost
	for zl in z0 default; do
		for level in idle moderate full; do
			lvl=$zl.$level
			s=$(tr ' ' '\n' <<<"${D_SECS[$lvl]:-}" | grep . | median)
			l=$(tr ' ' '\n' <<<"${D_LAT[$lvl]:-}" | grep . | median)
			lo=$(tr ' ' '\n' <<<"${D_LOST[$lvl]:-}" | grep -E '^[0-9]' | median)
			rd=$(tr ' ' '\n' <<<"${D_READ[$lvl]:-}" | grep -E '^[0-9]' | median)
			nv=$(tr ' ' '\n' <<<"${D_NEVER[$lvl]:-}" | grep -E '^[0-9]' | median)
			sz=$(tr ' ' '\n' <<<"${D_SIZE[$lvl]:-}" | grep . | median)
			sz=$(awk -v s="$sz" 'BEGIN { if (s == "-") print "-"; else printf "%.1f", s / 1048576 }')
			line="zlib ${D_Z[$zl]:-?}"
			[ "$zl" = z0 ] && line="none (-z 0)" || line="$line (default)"
			printf '   %-12s %-9s %7s %8s %8s %7s %7s %6s %10s\n' "$zl" "$level" "$s" "$l" "$sz" "$rd" "$lo" "$nv" "${D_RING[$lvl]:--}"
			md "| $line | $level | $s | $l | $sz | $rd | $lo | $nv | ${D_RING[$lvl]:--} |"
		done
	done
	md ""
	md "Ring-buffer reservation failures while filling the buffer (full-speed load, no dump): -z 0 session ${D_FILL_LOST[z0]:--}, default session ${D_FILL_LOST[default]:--};"
	md "over each whole session (fill + all dumps): ${D_RBLOST[z0]:--} and ${D_RBLOST[default]:--}."
	md ""
	for level in idle moderate; do
		s=$(tr ' ' '\n' <<<"${D_SECS[default.$level]:-}" | grep . | median)
		verdict=$(awk -v s="$s" 'BEGIN { print (s != "-" && s < 1.0) ? "PASS" : "FAIL" }')
		line="$verdict: dump/$level: full 64 MiB dump with default zlib under one second while recording continues (${s}s)"
		echo "$line"; md "- $line"
	done
	md ""
}

want overhead && overhead
want cost && cost
want rate && rate
want dump && dump

BUSY1=$(busy_pct)
echo
echo "bench_record: background CPU use after: ${BUSY1}%"

# ---- BENCHMARKS.md ------------------------------------------------------------
if [ "$write_md" -eq 1 ]; then
	{
		echo "<!-- record:begin -->"
		echo "## record: overhead, event rate, dump time"
		echo ""
		echo "Reproduce: \`sudo make bench\` (every benchmark), or this section alone: \`sudo scripts/bench_record.sh\`"
		echo "(parameters of this run: REPS=$REPS RUNS=$RUNS PIPE_LOOPS=$PIPE_LOOPS MSG_GROUPS=$MSG_GROUPS MSG_LOOPS=$MSG_LOOPS RATE_REPS=$RATE_REPS RATE_SECONDS=$RATE_SECONDS DUMP_REPS=$DUMP_REPS; about 4 minutes)."
		echo "Run ${START_DATE} on kernel ${KERNEL}, ${NCPU} CPUs (${CPU}), perf ${PERF_VER}, bpftrace ${BPFTRACE_VER}; tree ${COMMIT}."
		echo "Background CPU use by other processes: ${BUSY0}% before, ${BUSY1}% after (one-second samples); sections: ${sections[*]}."
		echo "Ratios compare configurations measured side by side in this one run; absolute times from different runs are not comparable."
		echo ""
		cat "$MD"
		echo "<!-- record:end -->"
	} >"$TMP/section"
	bench_md_put record "$TMP/section"
fi
exit 0
