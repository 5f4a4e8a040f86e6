#!/usr/bin/env bash
# test_install.sh - `make install`/`make uninstall` into a DESTDIR, what the
# installed library and pkg-config file are good for, the man pages, and the
# systemd unit: `systemd-analyze verify`, its exposure score, and that the
# capabilities it keeps are enough to record (and that each one the recorder
# checks for is needed). Prints TAP lines (tests/run.sh counts them).
# "cond && ok ... || not_ok ...": ok always succeeds.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

D=$T_TMP/dest
PFX=/opt/bt
# One make at a time in this tree: build first, then install quietly.
make -s tool build/libbtrace.a >/dev/null 2>&1
if ! out=$(make -s install DESTDIR="$D" PREFIX=$PFX 2>&1); then
	not_ok "make install DESTDIR PREFIX=$PFX" "$out"
	finish
	exit 1
fi
ok "make install DESTDIR=... PREFIX=$PFX"

# ---- the layout ----------------------------------------------------------------
want="$PFX/bin/btrace-bpf 755
$PFX/etc/btrace-bpf.conf 644
$PFX/include/btrace.h 644
$PFX/lib/libbtrace.a 644
$PFX/lib/pkgconfig/libbtrace.pc 644
$PFX/lib/systemd/system/btrace-bpf.service 644
$PFX/share/man/man1/btrace-bpf.1 644
$PFX/share/man/man3/btrace.3 644"
got=$(cd "$D" && find . -type f -printf '/%P %m\n' | sort)
[ "$got" = "$want" ] && ok "installed exactly the 8 files, with their modes" ||
	not_ok "installed files" "$(diff <(echo "$want") <(echo "$got"))"
"$D$PFX/bin/btrace-bpf" --version | grep -qx "btrace-bpf $(cat VERSION)" &&
	ok "installed btrace-bpf --version prints VERSION ($(cat VERSION))" ||
	not_ok "installed --version" "$("$D$PFX/bin/btrace-bpf" --version 2>&1)"
check "the unit runs the installed binary with the installed configuration" \
	grep -qx "ExecStart=$PFX/bin/btrace-bpf record --config $PFX/etc/btrace-bpf.conf" \
	"$D$PFX/lib/systemd/system/btrace-bpf.service"
if grep -q '@[A-Z]*@' "$D$PFX/lib/systemd/system/btrace-bpf.service" "$D$PFX/lib/pkgconfig/libbtrace.pc"; then
	not_ok "no @VARIABLE@ left unsubstituted" "$(grep -n '@[A-Z]*@' "$D$PFX"/lib/*/*)"
else
	ok "no @VARIABLE@ left unsubstituted"
fi

# ---- pkg-config and the library: an application builds against the install -----
PC="PKG_CONFIG_PATH=$D$PFX/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D"
flags=$(env PKG_CONFIG_PATH="$D$PFX/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" \
	pkg-config --cflags --libs libbtrace 2>&1)
# shellcheck disable=SC2086 # flags are words
if cc examples/app_demo.c $flags -o "$T_TMP/app_demo" 2>"$T_TMP/cc.log"; then
	ok "examples/app_demo.c builds with \`$PC pkg-config --cflags --libs libbtrace\`"
else
	not_ok "app_demo builds against the installed library ($flags)" "$(cat "$T_TMP/cc.log")"
fi
# Without a recorder (BTRACE_CTL points nowhere) the traced program just runs.
check "the program linked with the installed libbtrace runs" \
	run_with_timeout 30 env BTRACE_CTL=/nonexistent/x.sock "$T_TMP/app_demo" -w 2 -d 1
v=$(env PKG_CONFIG_PATH="$D$PFX/lib/pkgconfig" pkg-config --modversion libbtrace 2>&1)
[ "$v" = "$(cat VERSION)" ] && ok "libbtrace.pc version is VERSION ($v)" || not_ok "libbtrace.pc version '$v'"

# ---- man pages -------------------------------------------------------------------
for m in man1/btrace-bpf.1 man3/btrace.3; do
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$D$PFX/share/man/$m" 2>&1 >/dev/null)
	[ -z "$w" ] && ok "man $m renders without warnings" || not_ok "man $m warnings" "$w"
done
# Every option of every command's --help is in btrace-bpf(1) (the one
# option reference), and every btrace.h function in btrace(3): the pages
# follow the code. An option must be there whole: "\-\-trigger" inside
# "\-\-trigger\-uprobe" hid that --trigger had no entry.
man_has() { grep -qE -- "$(printf '%s' "$1" | sed 's/-/\\\\-/g')([^a-z\\\\]|\$)" man/btrace-bpf.1; }
for c in record report convert ctl; do
	missing=""
	for o in $("$BT" $c --help | grep -oE '^ +(-[a-zA-Z?], )?--[a-z-]+' | grep -oE -- '--[a-z-]+' | grep -vxE -- '--(help|usage|version)' | sort -u); do
		man_has "$o" || missing="$missing $o"
	done
	[ -z "$missing" ] && ok "btrace-bpf(1) documents every $c option" || not_ok "btrace-bpf(1) lacks ($c):$missing"
done
missing=""
for c in $("$BT" ctl --help | sed -n '/^Commands:/,/^$/p' | grep -oE '^  [a-z-]+' | sort -u); do
	grep -qE "^\.B[IR]? $(printf '%s' "$c" | sed 's/-/\\\\-/g')( |\$)" man/btrace-bpf.1 || missing="$missing $c"
done
[ -z "$missing" ] && ok "btrace-bpf(1) documents every ctl command" || not_ok "btrace-bpf(1) lacks ctl:$missing"
missing=""
for f in $(grep -oE '^[a-z_ ]+\*?btrace_[a-z]+\(' user/lib/btrace.h | grep -oE 'btrace_[a-z]+' | grep -v '_$'); do
	grep -q "$f" man/btrace.3 || missing="$missing $f"
done
[ -z "$missing" ] && ok "btrace(3) documents every function of btrace.h" || not_ok "btrace(3) lacks:$missing"

# ---- configuration is the operator's ---------------------------------------------
echo "buffer-size = 16M" >>"$D$PFX/etc/btrace-bpf.conf"
make -s install DESTDIR="$D" PREFIX=$PFX >/dev/null 2>&1
check "a second install keeps the edited configuration" grep -qx "buffer-size = 16M" "$D$PFX/etc/btrace-bpf.conf"
make -s uninstall DESTDIR="$D" PREFIX=$PFX >/dev/null 2>&1
left=$(cd "$D" && find . -type f -printf '/%P\n')
[ "$left" = "$PFX/etc/btrace-bpf.conf" ] && ok "uninstall removes every file but the edited configuration" ||
	not_ok "uninstall left: $left"
rm -f "$D$PFX/etc/btrace-bpf.conf"
make -s install DESTDIR="$D" PREFIX=$PFX >/dev/null 2>&1
make -s uninstall DESTDIR="$D" PREFIX=$PFX >/dev/null 2>&1
left=$(cd "$D" && find . -type f | wc -l)
[ "$left" -eq 0 ] && ok "uninstall removes the unedited configuration too" || not_ok "uninstall left $left files"

# ---- the unit ----------------------------------------------------------------------
# Verified inside a root holding the installed files and the system's units
# (verify checks ExecStart= exists and the units it depends on).
R=$T_TMP/root
make -s install DESTDIR="$R" PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system >/dev/null 2>&1
mkdir -p "$R/usr/lib/systemd"
cp -a /lib/systemd/system "$R/usr/lib/systemd/"
UNIT=/lib/systemd/system/btrace-bpf.service
if ! command -v systemd-analyze >/dev/null; then
	skip "systemd-analyze verify" "no systemd-analyze (scripts/install-deps.sh installs systemd)"
else
	out=$(systemd-analyze verify --man=no --root="$R" "$UNIT" 2>&1)
	[ $? -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify: no error, no warning" ||
		not_ok "systemd-analyze verify" "$out"
	score=$(systemd-analyze security --offline=yes --root="$R" "$UNIT" 2>/dev/null |
		sed -n 's/.*Overall exposure level for btrace-bpf.service: \([0-9.]*\).*/\1/p')
	# 10 is an unhardened service; below 4 systemd rates "OK".
	awk -v s="$score" 'BEGIN { exit !(s != "" && s + 0 < 4.0) }' &&
		ok "systemd-analyze security: exposure $score (< 4.0, \"OK\")" ||
		not_ok "systemd-analyze security: exposure '$score' (want < 4.0)"
fi

# ---- the unit's capabilities are enough to record ------------------------------------
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$R$UNIT")
bset=$(for c in $caps; do printf ',+%s' "$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done)
diag "unit capabilities: $caps"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	skip "recording with the unit's capabilities" "needs root and setpriv"
else
	OUT=$T_TMP/capout
	# As the unit runs it: root, bounding set cut to the unit's, no new privileges.
	setpriv --bounding-set="-all$bset" --no-new-privs \
		"$BT" record -o "$OUT" -m 8M --no-ctl -d 2s >"$T_TMP/cap.log" 2>&1
	rc=$?
	f=$(find "$OUT" -name '*.btd' 2>/dev/null | head -1)
	if [ $rc -eq 0 ] && [ -n "$f" ] && "$BT" report "$f" 2>/dev/null | grep -q "sched_switch:"; then
		ok "records and dumps with only $caps and no new privileges"
	else
		not_ok "recording with the unit's capabilities (exit $rc)" "$(cat "$T_TMP/cap.log")"
	fi
	# The run above had these and no others (setpriv's view of the same set).
	eff=$(setpriv --bounding-set="-all$bset" --no-new-privs setpriv -d | sed -n 's/^Capability bounding set: //p')
	[ "$(echo "$eff" | tr ',' '\n' | sort)" = "$(echo "$caps" | tr 'A-Z ' 'a-z\n' | sed 's/^cap_//' | sort)" ] &&
		ok "the run had exactly the unit's capabilities ($eff)" || not_ok "capabilities in the run: '$eff'"
	# Each of CAP_BPF and CAP_PERFMON is needed: without one the recorder refuses.
	for drop in bpf perfmon; do
		setpriv --bounding-set="-all${bset/,+$drop/}" --no-new-privs \
			"$BT" record -o "$OUT.$drop" -m 8M --no-ctl -d 1s >"$T_TMP/cap-$drop.log" 2>&1
		rc=$?
		[ $rc -ne 0 ] && grep -q "BPF not permitted" "$T_TMP/cap-$drop.log" &&
			ok "without CAP_${drop^^} the recorder refuses cleanly (exit $rc)" ||
			not_ok "without CAP_${drop^^}: exit $rc" "$(cat "$T_TMP/cap-$drop.log")"
	done
fi

finish
