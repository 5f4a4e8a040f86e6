#!/usr/bin/env bash
# test_package.sh - `make deb`: the Debian packages build with debhelper,
# lintian finds no error, they declare what they need, and they install into
# a test root with `dpkg --root` (maintainer scripts included, nothing
# touched outside the root), where the installed btrace-bpf runs; purge
# removes them. Prints TAP lines (tests/run.sh counts them).
# "cond && ok ... || not_ok ...": ok always succeeds.
# shellcheck disable=SC2015
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

V=$(cat VERSION)
for t in dpkg-buildpackage dh dpkg-deb; do
	if ! command -v $t >/dev/null; then
		not_ok "$t is installed" "scripts/install-deps.sh installs dpkg-dev and debhelper"
		finish
		exit 1
	fi
done

if ! out=$(make -s deb 2>&1); then
	not_ok "make deb" "$out"
	finish
	exit 1
fi
ok "make deb builds the packages with dpkg-buildpackage (debhelper)"
ARCH=$(dpkg --print-architecture)
DEB=build/deb/btrace-bpf_${V}_$ARCH.deb
DEV=build/deb/libbtrace-dev_${V}_$ARCH.deb
check "btrace-bpf_${V}_$ARCH.deb and libbtrace-dev_${V}_$ARCH.deb exist" test -s "$DEB" -a -s "$DEV"
leftovers=$(cd debian && ls -d tmp files btrace-bpf libbtrace-dev .debhelper debhelper-build-stamp \
	*.substvars *.debhelper.log 2>/dev/null)
[ -z "$leftovers" ] && ok "the source tree is left clean (the build ran in build/deb)" ||
	not_ok "debian/ build leftovers in the tree: $leftovers"
if command -v lintian >/dev/null; then
	# make deb already failed on errors; look at the log it kept.
	e=$(grep -E '^E: ' build/deb/lintian.log)
	[ -z "$e" ] && ok "lintian: no error ($(grep -cE '^[WI]: ' build/deb/lintian.log) warnings and infos)" ||
		not_ok "lintian errors" "$e"
else
	not_ok "lintian is installed" "scripts/install-deps.sh installs it"
fi

# ---- what the package declares ------------------------------------------------------
dep=$(dpkg-deb -f "$DEB" Depends)
diag "Depends: $dep"
miss=""
for lib in libbpf1 libelf1 zlib1g libc6; do
	echo "$dep" | grep -q "\b$lib\b" || miss="$miss $lib"
done
[ -z "$miss" ] && ok "Depends names the runtime libraries (libbpf1, libelf1, zlib1g, libc6)" ||
	not_ok "Depends lacks:$miss" "$dep"
# Every shared library the binary needs comes from a declared dependency.
dpkg-deb -x "$DEB" "$T_TMP/x"
undeclared=""
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for so in $(objdump -p "$T_TMP/x/usr/bin/btrace-bpf" | awk '/NEEDED/ { print $2 }'); do
	# The host's architecture's copy: libm.so.6 is in libc6-i386 too (lib32)
	p=$(dpkg -S "*/$so" 2>/dev/null | awk -v ma="/$MULTIARCH/" 'index($0, ma) { print; exit }' | cut -d: -f1)
	[ -n "$p" ] && echo "$dep" | grep -q "\b$p\b" || undeclared="$undeclared $so($p)"
done
[ -z "$undeclared" ] && ok "every NEEDED library of the binary is in a declared package" ||
	not_ok "NEEDED libraries without a dependency:$undeclared"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles >"$T_TMP/conffiles"
check "/etc/btrace-bpf.conf is a conffile" grep -qx /etc/btrace-bpf.conf "$T_TMP/conffiles"
dpkg-deb -c "$DEB" >"$T_TMP/contents"
for f in ./usr/bin/btrace-bpf ./lib/systemd/system/btrace-bpf.service ./usr/share/man/man1/btrace-bpf.1.gz; do
	check "btrace-bpf.deb holds $f" grep -q " $f\$" "$T_TMP/contents"
done
dpkg-deb -c "$DEV" >"$T_TMP/dev-contents"
for f in libbtrace.a pkgconfig/libbtrace.pc ./usr/include/btrace.h ./usr/share/man/man3/btrace.3.gz; do
	check "libbtrace-dev.deb holds $f" grep -q "$f\$" "$T_TMP/dev-contents"
done
check "the packaged unit runs /usr/bin/btrace-bpf with /etc/btrace-bpf.conf" \
	grep -qx "ExecStart=/usr/bin/btrace-bpf record --config /etc/btrace-bpf.conf" \
	"$T_TMP/x/lib/systemd/system/btrace-bpf.service"

# `apt install ./btrace-bpf_*.deb` resolves on this machine: apt's own
# simulation, with the machine's packages (nothing is installed).
out=$(apt-get install -s "./$DEB" 2>&1)
echo "$out" | grep -q "^Inst btrace-bpf ($V " && echo "$out" | grep -q "^Conf btrace-bpf ($V " &&
	ok "apt install ./$(basename "$DEB") resolves (apt-get -s: Inst, Conf)" || not_ok "apt-get -s install" "$out"

# ---- install into a test root -------------------------------------------------------
# The maintainer scripts run against the root (DPKG_ROOT) instead of a chroot
# (the root has no shell); the runtime libraries are the machine's, hence
# --force-depends. Nothing may change outside the root.
R=$T_TMP/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
: >"$R/var/lib/dpkg/status"
before=$(ls -la /etc/systemd/system/multi-user.target.wants/ /var/lib/systemd/deb-systemd-helper-enabled/ 2>/dev/null | md5sum)
DPKG=(dpkg --root="$R" --force-script-chrootless --force-depends --log=/dev/null)
if out=$("${DPKG[@]}" -i "$DEB" "$DEV" 2>&1); then
	ok "dpkg --root installs both packages"
else
	not_ok "dpkg --root -i" "$out"
fi
st=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Package} ${db:Status-Abbrev}\n' 2>/dev/null | sort)
[ "$st" = "$(printf 'btrace-bpf ii \nlibbtrace-dev ii ')" ] && ok "both packages are installed and configured (ii)" ||
	not_ok "package states" "$st"
v=$("$R/usr/bin/btrace-bpf" --version 2>&1)
[ "$v" = "btrace-bpf $V" ] && ok "the installed /usr/bin/btrace-bpf --version: $v" || not_ok "installed --version: '$v'"
check "the installed btrace-bpf reads a dump (report --help runs)" "$R/usr/bin/btrace-bpf" report --help
check "postinst enabled the service (multi-user.target.wants in the root)" \
	test -L "$R/etc/systemd/system/multi-user.target.wants/btrace-bpf.service"
after=$(ls -la /etc/systemd/system/multi-user.target.wants/ /var/lib/systemd/deb-systemd-helper-enabled/ 2>/dev/null | md5sum)
[ "$before" = "$after" ] && ok "nothing changed on the machine outside the root" ||
	not_ok "the machine's systemd state changed"

# A conffile edited by the operator survives a reinstall.
echo "buffer-size = 32M" >>"$R/etc/btrace-bpf.conf"
"${DPKG[@]}" --force-confold -i "$DEB" >/dev/null 2>&1
check "reinstall keeps the edited /etc/btrace-bpf.conf" grep -qx "buffer-size = 32M" "$R/etc/btrace-bpf.conf"

# Purge: the package's files and the service's dumps go, nothing else does.
mkdir -p "$R/var/lib/btrace-bpf"
: >"$R/var/lib/btrace-bpf/btrace-h-20260101-000000-1.btd"
: >"$R/var/lib/btrace-bpf/btrace-h-20260101-000000-1.btd.json"
: >"$R/var/lib/btrace-bpf/notes.txt"
"${DPKG[@]}" --purge btrace-bpf libbtrace-dev >"$T_TMP/purge.log" 2>&1
left=$(cd "$R" && find . -type f -not -path './var/lib/dpkg/*' -printf '%P\n')
[ "$left" = "var/lib/btrace-bpf/notes.txt" ] &&
	ok "purge removes the packages, the configuration and the dumps, not the operator's other file" ||
	not_ok "purge left: $left" "$(cat "$T_TMP/purge.log")"

finish
