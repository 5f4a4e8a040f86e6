# shellcheck shell=bash
# lib.sh - helpers for the real-kernel tests (tests/kernel/test_*.sh), sourced.
#
# TAP output on stdout ("ok N - name", "not ok N - name", "# diagnostics"),
# which tests/run.sh counts. Everything else goes to stderr or files.
#
#   ok NAME / not_ok NAME [WHY]   one result
#   check NAME CMD...             ok if CMD succeeds, else not_ok (CMD's output shown)
#   skip NAME WHY                 ok with "# SKIP WHY"
#   need_root WHAT [WHY]          end the test with one skip unless root
#   need_cmd WHAT CMD...          end it with one skip unless every CMD is installed
#   diag TEXT...                  a "# " line
#   run_with_timeout SECS CMD...  CMD, killed after SECS (status 124)
#   rec_start LOG ARGS...         start `btrace-bpf record ARGS` in the background,
#                                 stderr to LOG; waits until it records; sets REC_PID
#   rec_stop PID [SIG] [SECS]     send SIG (default INT), wait up to SECS; sets REC_STATUS
#   wait_for SECS CMD...          poll CMD every 0.1 s until it succeeds
#   finish                        "# N passed, M failed"; returns 1 if any failed
# A trap on EXIT kills every recorder started here and removes $T_TMP (kept,
# for a look at what a test read, when T_KEEP is set).

BT=${BTRACE_BPF:-$PWD/build/btrace-bpf}
# shellcheck disable=SC2034 # used by the tests that source this file
TB=${TEST_BIN:-$PWD/build/tests}
T_N=0
T_FAIL=0
T_PIDS=()
T_TMP=$(mktemp -d /tmp/btrace-test.XXXXXX)

ok() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $1"
}

not_ok() {
	T_N=$((T_N + 1))
	T_FAIL=$((T_FAIL + 1))
	echo "not ok $T_N - $1"
	[ $# -gt 1 ] && printf '%s\n' "$2" | sed 's/^/#   /'
	return 0
}

skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $1 # SKIP $2"
}

diag() {
	echo "# $*"
}

# need_root WHAT [WHY]: a test that loads BPF or acts as root ends here,
# one skip line, unless it runs as root
need_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	skip "$1" "${2:-need root}"
	finish
	exit $?
}

# need_cmd WHAT CMD...: a test that runs these programs ends here, one
# skip line naming the first one missing, unless all are installed
need_cmd() {
	local what=$1 c
	shift
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 && continue
		skip "$what" "no $c (scripts/install-deps.sh installs it)"
		finish
		exit $?
	done
}

check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		not_ok "$name" "$(printf 'command: %s\n%s' "$*" "$out" | head -40)"
		return 1 # a caller may say more (check ... || diag ...)
	fi
}

run_with_timeout() {
	local secs=$1
	shift
	timeout --kill-after=5 "$secs" "$@"
}

# wait_for SECS CMD...: until CMD succeeds, tried every 0.1 s (every 0.02 s
# in its first 0.2 s: most waits end there, on a recorder starting or a
# dump written) for at most SECS; its words are expanded once, at the call
wait_for() {
	local secs=$1
	shift
	wait_eval "$secs" "wait_for $secs $*" "$(printf '%q ' "$@")"
}

# wait_until SECS 'CONDITION': wait_for for a condition whose words must be
# computed again at each try (a count, a pgrep): CONDITION is shell text,
# evaluated at each try
wait_until() {
	wait_eval "$1" "wait_until $1 $2" "$2"
}

# wait_eval SECS LABEL CODE: the loop of both; a wait that runs to its
# bound appends LABEL to T_WAIT_LOG (tests/run.sh lists them)
wait_eval() {
	local _w_secs=$1 _w_label=$2 _w_code=$3 _w_i=0
	until eval "$_w_code" >/dev/null 2>&1; do
		_w_i=$((_w_i + 1))
		# 10 tries 0.02 s apart, then 0.1 s apart: SECS s in all
		if [ "$_w_i" -ge $((_w_secs * 10 + 8)) ]; then
			[ -n "${T_WAIT_LOG:-}" ] && echo "${0##*/}: $_w_label" >>"$T_WAIT_LOG"
			return 1
		fi
		if [ "$_w_i" -le 10 ]; then sleep 0.02; else sleep 0.1; fi
	done
	return 0
}

rec_start() {
	local log=$1
	shift
	# Emptied first and matched on this recorder's pid: a log reused from
	# an earlier recorder must not pass for this one being ready.
	: >"$log"
	"$BT" record "$@" 2>"$log" &
	REC_PID=$!
	T_PIDS+=("$REC_PID")
	if ! wait_for 20 grep -q "recording (pid $REC_PID)" "$log"; then
		diag "recorder did not start: $(tr '\n' ' ' <"$log")"
		return 1
	fi
	# The recorder seeds its task table and starts draining before it says
	# "recording"; give the programs a moment to see the first events.
	sleep 0.2
	return 0
}

rec_stop() {
	local pid=$1 sig=${2:-INT} secs=${3:-60} i=0
	kill -"$sig" "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -ge $((secs * 10)) ]; then
			diag "recorder $pid still running ${secs}s after SIG$sig: killing it"
			kill -KILL "$pid" 2>/dev/null
			break
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null
	# shellcheck disable=SC2034 # read by the caller
	REC_STATUS=$?
}

# thread_wakes PID COMM: how often the thread of PID named COMM has slept
# and woken (voluntary context switches); empty if there is none
thread_wakes() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] || continue
		awk '/^voluntary_ctxt_switches/ { print $2 }' "$t/status"
		return 0
	done
	return 1
}

t_cleanup() {
	local p
	for p in "${T_PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null
			sleep 0.5
			kill -KILL "$p" 2>/dev/null
		fi
	done
	[ -n "${T_KEEP:-}" ] || rm -rf "$T_TMP"
}
trap t_cleanup EXIT
# Stopped by tests/run.sh (interrupted, or its time is up): the EXIT trap
# still runs, so nothing is left in /tmp.
trap 'exit 143' TERM

finish() {
	echo "# $((T_N - T_FAIL)) passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ]
}
