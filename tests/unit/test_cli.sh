#!/usr/bin/env bash
# test_cli.sh - every subcommand follows one command-line convention
# (user/util/cli.h): a usage error exits 2, a failure after parsing exits 1,
# both with one line "btrace-bpf COMMAND: ..." on stderr and nothing on
# stdout; -h is --help: the usage on stdout, exit 0. Old spellings kept as
# hidden aliases (report --events, record --event, convert --since/--until)
# are accepted.
# Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

BT=${BTRACE_BPF:-$PWD/build/btrace-bpf}
if [ ! -x "$BT" ]; then skip "command line" "no $BT (make)"; finish; exit; fi
MISSING=$T_TMP/missing.btd

# run WANT_RC NAME CMD...: rc, stdout and stderr's first line checked
run() {
	local want=$1 name=$2 rc sub=$3
	shift 2
	"$BT" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	rc=$?
	local first
	first=$(head -1 "$T_TMP/err")
	case $want in
	0)
		[ "$rc" -eq 0 ] && grep -q "^Usage: btrace-bpf $sub" "$T_TMP/out" && [ ! -s "$T_TMP/err" ] &&
			ok "$name: usage on stdout, exit 0" ||
			not_ok "$name: exit $rc, want 0 with the usage on stdout" "$(head -3 "$T_TMP/out" "$T_TMP/err")" ;;
	*)
		[ "$rc" -eq "$want" ] && [[ $first == "btrace-bpf $sub: "* ]] && [ ! -s "$T_TMP/out" ] &&
			ok "$name: exit $want, '$(echo "$first" | cut -c1-70)'" ||
			not_ok "$name: exit $rc (want $want), stderr '$first', stdout $(wc -c <"$T_TMP/out") bytes" ;;
	esac
}

for sub in record report convert ctl; do
	run 0 "$sub -h" "$sub" -h
	run 0 "$sub --help" "$sub" --help
	run 2 "$sub with an unknown option" "$sub" --no-such-option
done
run 2 "record with a bad value" record -m 0
run 2 "record with an argument it does not take" record stray
run 2 "report without a dump" report
run 2 "report with a bad event" report -e no_such_event "$MISSING"
run 2 "convert without a dump" convert
run 2 "convert with a bad --since" convert --since x "$MISSING"
run 2 "ctl without a command" ctl
run 2 "ctl with an unknown command" ctl -c "$T_TMP/none.sock" frobnicate

run 1 "report of a missing dump" report "$MISSING"
run 1 "convert of a missing dump" convert "$MISSING"
run 1 "ctl of no recorder" ctl -c "$T_TMP/none.sock" status
# record's failure after parsing: BPF refused to an unprivileged user
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	cp "$BT" "$T_TMP/bt" && chmod 755 "$T_TMP" "$T_TMP/bt"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$T_TMP/bt" record --duration 1s -o "$T_TMP/never" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	rc=$?
	first=$(head -1 "$T_TMP/err")
	[ "$rc" -eq 1 ] && [[ $first == "btrace-bpf record: "* ]] && ok "record without privileges: exit 1, '$first'" ||
		not_ok "record without privileges: exit $rc, '$first'"
else
	skip "record without privileges" "needs root and setpriv"
fi

# the other subcommand's spelling, kept as hidden aliases
run 1 "report --events (record's spelling) is --event" report --events sched "$MISSING"
run 1 "convert --since/--until (report's spelling)" convert --since 1 --until 2 "$MISSING"
"$BT" record --event sched --help >/dev/null 2>&1 && ok "record --event (report's spelling) is --events" ||
	not_ok "record --event"
finish
