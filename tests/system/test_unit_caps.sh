#!/usr/bin/env bash
# test_unit_caps.sh - what dist/btrace-bpf.service.in promises, checked
# against the recorder without systemd:
#   - a recorder confined to the unit's CapabilityBoundingSet names kernel
#     frames (/proc/kallsyms needs CAP_SYSLOG) and its drain thread gets its
#     nice level (CAP_SYS_NICE); without CAP_SYSLOG, report --stats says the
#     kernel frames are unnamed, and why;
#   - the exit status of a bad configuration is the unit's
#     RestartPreventExitStatus (no restart every 5 s for ever), and a bad
#     trigger in it is reported as FILE:LINE;
#   - the unit's comments signal the recorder alone (--kill-whom=main).
# Needs root; prints TAP lines.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

UNIT=dist/btrace-bpf.service.in
need_root "unit capabilities"

# the unit's bounding set as setpriv's list: -all,+bpf,+perfmon,...
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr ' ' '\n' | sed -n 's/^CAP_\(.*\)/+\L\1/p' | paste -sd,)
[ -n "$caps" ] || { not_ok "the unit has a CapabilityBoundingSet"; finish; exit; }
grep -q '^ProtectKernelLogs=yes' "$UNIT" &&
	not_ok "ProtectKernelLogs=yes removes CAP_SYSLOG, which kernel symbols need" || ok "ProtectKernelLogs does not take CAP_SYSLOG"

# run_confined BOUNDING OUT: record 2 s of samples with that bounding set
run_confined() {
	local set=$1 out=$2
	setpriv --bounding-set="-all,$set" "$BT" record --sample 199 --no-ctl -o "$out" -m 8M -d 2s \
		>"$out.log" 2>&1 &
	local pid=$! i
	# the drain thread's nice level (field 19 of its stat), once it runs
	# (a start takes more than a second on a busy machine)
	for i in $(seq 100); do
		for t in /proc/$pid/task/*; do
			[ "$(cat "$t/comm" 2>/dev/null)" = btrace-drain ] && awk '{ print $19 }' "$t/stat" >"$out.nice"
		done
		[ "$(cat "$out.nice" 2>/dev/null)" = -10 ] && break
		sleep 0.1
	done
	wait "$pid"
}

run_confined "$caps" "$T_TMP/full"
d=$(ls "$T_TMP"/full/*.btd 2>/dev/null | head -1)
if [ -z "$d" ]; then
	not_ok "a recorder with the unit's capabilities dumps" "$(cat "$T_TMP/full.log")"
else
	ok "a recorder with the unit's capabilities ($caps) dumps"
	"$BT" report --stats "$d" >"$T_TMP/stats" 2>&1
	"$BT" report --folded "$d" >"$T_TMP/folded" 2>&1
	! grep -q 'kernel frames: unnamed' "$T_TMP/stats" && grep -qE ';[a-z_0-9.]+_\[k\]' "$T_TMP/folded" &&
		ok "under the unit's capabilities kernel frames are named" ||
		not_ok "kernel frames named" "$(grep -A8 'call stacks' "$T_TMP/stats"; head -3 "$T_TMP/folded")"
	[ "$(cat "$T_TMP/full.nice" 2>/dev/null)" = -10 ] && ok "the drain thread runs at nice -10 (CAP_SYS_NICE)" ||
		not_ok "drain nice" "nice $(cat "$T_TMP/full.nice" 2>/dev/null)"
fi
run_confined "$(echo "$caps" | sed "s/,+syslog//; s/+syslog,//")" "$T_TMP/nosyslog"
d=$(ls "$T_TMP"/nosyslog/*.btd 2>/dev/null | head -1)
if [ -n "$d" ] && "$BT" report --stats "$d" 2>&1 | grep -q 'kernel frames: unnamed.*CAP_SYSLOG'; then
	ok "without CAP_SYSLOG the dump says kernel frames are unnamed, and why"
else
	not_ok "degraded CAP_SYSLOG shown" "$(cat "$T_TMP/nosyslog.log"; [ -n "$d" ] && "$BT" report --stats "$d" | grep -A8 'call stacks')"
fi

# ---- a bad configuration: exit status the unit does not restart on ------------------
printf 'events = sched\n# a trigger with a typo\ntrigger = crash,sig=SEGVV\n' >"$T_TMP/bad.conf"
"$BT" record --config "$T_TMP/bad.conf" --no-ctl -o "$T_TMP/bad" >"$T_TMP/bad.log" 2>&1
rc=$?
prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$UNIT")
[ -n "$prevent" ] && [[ " $prevent " == *" $rc "* ]] &&
	ok "a bad configuration exits $rc, in RestartPreventExitStatus ($prevent)" ||
	not_ok "bad config exit $rc vs RestartPreventExitStatus='$prevent'" "$(cat "$T_TMP/bad.log")"
grep -q "$T_TMP/bad.conf:3: --trigger" "$T_TMP/bad.log" && ok "a bad trigger in the configuration is named FILE:LINE" ||
	not_ok "bad trigger FILE:LINE" "$(cat "$T_TMP/bad.log")"

# ---- USR1 to the recorder only ----------------------------------------------------------
if grep -q 'systemctl kill -s USR1' "$UNIT" && ! grep 'systemctl kill -s USR1' "$UNIT" | grep -qv -- '--kill-whom=main'; then
	ok "the unit's comment signals the main process only (--kill-whom=main: not running hooks)"
else
	not_ok "systemctl kill without --kill-whom=main" "$(grep 'systemctl kill' "$UNIT")"
fi
finish
