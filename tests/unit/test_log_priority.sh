#!/usr/bin/env bash
# test_log_priority.sh - the journal sees each message at its severity:
# when standard error is the journal's stream (JOURNAL_STREAM names it), a
# line starts with <N>, its syslog priority, so `journalctl -p err` shows a
# recorder that refused to start. Each command's failures go out as errors
# (<3>), never as warnings. Nothing is loaded: every case fails before BPF.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

# Run CMD with stderr into a file that JOURNAL_STREAM names; prints it.
journal() {
	local f=$T_TMP/journal.$T_N
	: >"$f"
	chmod 666 "$f"
	JOURNAL_STREAM=$(stat -c '%d:%i' "$f") "$@" 2>>"$f" >/dev/null
	cat "$f"
}

# A recorder without privileges: as root, run it as nobody (a copy nobody
# can execute, outside a private directory).
cp "$BT" "$T_TMP/bt" && chmod 755 "$T_TMP" "$T_TMP/bt"
if [ "$(id -u)" -eq 0 ]; then
	unpriv=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
	unpriv=()
fi
out=$(cd /tmp && journal "${unpriv[@]}" "$T_TMP/bt" record -o "$T_TMP/never")
echo "$out" | grep -q '^<3>BPF not permitted' && ok "record without privileges: BPF not permitted at error priority" ||
	not_ok "record without privileges" "$out"
[ ! -e "$T_TMP/never" ] && ok "record that cannot start creates no output directory" ||
	not_ok "record left $T_TMP/never behind"

out=$(journal "$BT" record --config "$T_TMP/missing.conf")
echo "$out" | grep -qE "^<3>.*missing.conf" && ok "record with a missing --config file: error priority" ||
	not_ok "record --config missing" "$out"

out=$(journal "$BT" record -m 0)
echo "$out" | grep -q '^<3>btrace-bpf record: invalid --buffer-size' && ok "record with a bad option value: error priority" ||
	not_ok "record -m 0" "$out"
out=$(env -u JOURNAL_STREAM "$BT" record -m 0 2>&1 >/dev/null | head -1)
echo "$out" | grep -q '^btrace-bpf record: invalid --buffer-size' && ok "without the journal argp's message is as before" ||
	not_ok "record -m 0 on a terminal" "$out"
out=$(journal "$BT" report "$T_TMP/missing.btd")
echo "$out" | grep -q "^<3>.*missing.btd" && ok "report of a missing dump: error priority" || not_ok "report missing dump" "$out"
out=$(journal "$BT" convert "$T_TMP/missing.btd")
echo "$out" | grep -q "^<3>.*missing.btd" && ok "convert of a missing dump: error priority" ||
	not_ok "convert missing dump" "$out"
out=$(journal "$BT" frobnicate)
echo "$out" | grep -q "^<3>unknown command 'frobnicate'" && ok "an unknown command: error priority" ||
	not_ok "unknown command" "$out"

out=$(journal "$BT" ctl --pid 999999999 status)
echo "$out" | grep -q '^<3>no recorder with pid 999999999' && ok "ctl of no recorder: error priority" ||
	not_ok "ctl of no recorder" "$out"

# On a terminal or a file (no JOURNAL_STREAM), the same line reads
# "btrace-bpf ctl: ...": it names the subcommand.
out=$(env -u JOURNAL_STREAM "$BT" ctl --pid 999999999 status 2>&1 >/dev/null)
[ "$out" = "btrace-bpf ctl: no recorder with pid 999999999 (no /run/btrace-bpf/999999999.sock)" ] &&
	ok "without the journal a line starts with btrace-bpf ctl:" || not_ok "plain line" "$out"
finish
