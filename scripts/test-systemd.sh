#!/usr/bin/env bash
# test-systemd.sh - the recorder's history across restarts, upgrades and
# kill -9 under a real systemd (issue 42): boots Debian bookworm's 6.1
# kernel under qemu as the kernel matrix does (scripts/qemu-guest.sh: the
# host's root read-only over 9p under a tmpfs overlay), but its /init hands
# PID 1 to the host's /lib/systemd/systemd (252 on bookworm), booted into
# one unit that runs scripts/test-systemd-guest.sh: it installs the
# btrace-bpf unit (dist/btrace-bpf.service.in with the packaged paths) and
# build/btrace-bpf, then restarts, kills and upgrades the service.
# `make test-systemd` runs it after building. Prints "N passed, M failed".
#
# Environment: BT_KERNEL_CACHE, BT_QEMU_ACCEL, BT_QEMU_CPUS, BT_QEMU_MEM as
# for scripts/test-kernels.sh; BT_QEMU_TIMEOUT (default 900 s).
# Logs: build/test-systemd/debian-6.1/ (console.log: the guest's console,
# systemd's boot included; tests.log: the test's TAP lines).
# Exit status: 0 if every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd -P)
OUT=$REPO/build/test-systemd
CACHE=${BT_KERNEL_CACHE:-/var/cache/btrace-bpf/kernels}
BOOT_TIMEOUT=${BT_QEMU_TIMEOUT:-900}
GUEST_MEM=${BT_QEMU_MEM:-2048}
ncpu=$(nproc)
GUEST_CPUS=${BT_QEMU_CPUS:-$((ncpu > 4 ? 4 : ncpu))}
GUEST_MODULES=(9pnet_virtio 9p virtio_pci overlay)
# systemd boots into the test's unit alone (scripts/test-kernels-init.sh
# writes it), quietly: its status lines would bury the test's on the console.
BOOT_APPEND="systemd.unit=btrace-systemd-test.service systemd.show_status=error"

log() { printf 'test-systemd: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }
case "${1:-}" in -h | --help) sed -n '2,/^# Exit status/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
[ "$(id -u)" -eq 0 ] || die "must run as root (qemu's 9p shares of /)"
[ -x build/btrace-bpf ] || die "build/btrace-bpf missing: run make first (make test-systemd does)"
[ -x /lib/systemd/systemd ] || die "no /lib/systemd/systemd on this machine (scripts/install-deps.sh installs systemd)"

. scripts/qemu-guest.sh

guest_config() {
	printf 'REPO=%s\nACCEL=%s\nMODE=systemd\n' "$(shq "$REPO")" "$(shq "$1")"
}

# The unit as the package installs it (debian/rules' paths).
mkdir -p "$OUT"
make --no-print-directory -s PREFIX=/usr SYSCONFDIR=/etc build/dist/btrace-bpf.service
cp build/dist/btrace-bpf.service "$OUT/btrace-bpf.service"

start=$(date +%s)
rc=0
run_qemu_kernel debian-6.1 || rc=1
secs=$(($(date +%s) - start))
counts=$(grep -aE '^# [0-9]+ passed, [0-9]+ failed' "$OUT/debian-6.1/tests.log" 2>/dev/null | tail -1 | sed 's/^# //' || true)
[ -n "$counts" ] || { counts="no result (the test did not finish)"; rc=1; }
if [ "$rc" -ne 0 ]; then
	grep -aE -A6 '^not ok' "$OUT/debian-6.1/tests.log" 2>/dev/null | head -60 | sed 's/^/  /' >&2 || true
	[ -n "$PROBLEMS" ] && printf '  console: %s\n' "$PROBLEMS" >&2
	log "logs: $OUT/debian-6.1/ (console.log: the guest's console)"
fi
echo "systemd in a guest ($RESULT_DESC, systemd as init): ${secs}s"
echo "$counts"
exit "$rc"
