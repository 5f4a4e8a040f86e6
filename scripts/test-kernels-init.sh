#!/bin/sh
# test-kernels-init.sh - /init of the initramfs scripts/test-kernels.sh boots
# (busybox sh, PID 1 of the guest). Loads the 9p/virtio/overlay modules,
# mounts the host's root filesystem (9p tag "hostroot", read-only) under a
# tmpfs overlay, mounts what the tests need (proc, sys, tracefs, debugfs, bpf,
# cgroup2), runs the tests chrooted there, writes their output and exit status
# to the "results" share, and powers the guest off whatever happens.
# /config (written by the host script) sets REPO, TESTS, SKIP_TESTS, ACCEL
# (tcg: the guest's CPUs are emulated; tests with timing bounds on code run
# between two events widen them, see BT_TEST_EMULATED) and TEST_ENV.
# With MODE=systemd (scripts/test-systemd.sh) it runs no tests itself: it
# writes the unit that runs scripts/test-systemd-guest.sh and hands PID 1
# to systemd on the same root (switch_root), booted into that unit.
/bin/busybox --install -s /bin
export PATH=/bin

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

say() { echo "test-kernels-init: $*" >/dev/console; }
die() {
	say "$*"
	[ -d /results ] && echo "init: $*" >>/results/init-error
	poweroff -f
}

. /config

# Modules in dependency order (the host script lists them in /modules.order).
while read -r m; do
	insmod "/modules/$m" || die "insmod $m failed"
done </modules.order

mkdir -p /lower /rw /newroot /results
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /lower ||
	die "cannot mount the host root (9p hostroot)"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results /results ||
	die "cannot mount the results share"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "cannot mount the overlay root"

R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs shm $R/dev/shm
mount -t tmpfs run $R/run
mount -t tracefs tracefs $R/sys/kernel/tracing
mount -t debugfs debugfs $R/sys/kernel/debug
mount -t bpf bpf $R/sys/fs/bpf
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup
mkdir -p $R/run/results
mount --bind /results $R/run/results
hostname test-kernels

if [ "${MODE:-}" = systemd ]; then
	say "kernel $(uname -r), $(nproc) CPUs; systemd as init, scripts/test-systemd-guest.sh in $REPO"
	# The boot's only job (systemd.unit= on the kernel's command line):
	# the test, then the guest powers off whatever its result.
	mkdir -p $R/etc/systemd/system
	cat >$R/etc/systemd/system/btrace-systemd-test.service <<EOF
[Unit]
Description=btrace-bpf under systemd: restart, kill -9, upgrade
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
TimeoutStartSec=infinity
Environment=BT_TEST_EMULATED=$([ "${ACCEL:-}" = tcg ] && echo 1)
WorkingDirectory=$REPO
ExecStart=$REPO/scripts/test-systemd-guest.sh /run/results
EOF
	# systemd-tmpfiles empties /tmp at boot (Debian's tmp.conf: "D /tmp"):
	# a checkout under /tmp (a CI clone) would vanish before the test
	# starts. /etc's tmp.conf, in the overlay only, keeps /tmp as it is.
	mkdir -p $R/etc/tmpfiles.d
	echo 'd /tmp 1777 root root -' >$R/etc/tmpfiles.d/tmp.conf
	# A host that is a container (docker's /.dockerenv) would make
	# systemd believe it runs in one: it would ignore the kernel's
	# command line (systemd.unit=). Hidden in the overlay only.
	rm -f $R/.dockerenv $R/run/.containerenv
	umount /results # its bind under /run stays
	exec switch_root /newroot /lib/systemd/systemd
	die "switch_root to systemd failed"
fi

say "kernel $(uname -r), $(nproc) CPUs; running TESTS='$TESTS' in $REPO"
# The tests run chrooted in the host's tree; output to the results share and,
# line by line, to the console (so a hang or a lockup shows where it was).
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb TESTS="$TESTS" SKIP_TESTS="${SKIP_TESTS:-}" BT_TEST_EMULATED="$([ "${ACCEL:-}" = tcg ] && echo 1)" $TEST_ENV \
	/bin/bash -c 'cd "$1" && tests/run.sh; echo $? >/run/results/status' bash "$REPO" 2>&1 |
	tee /results/tests.log >/dev/console
[ -s /results/status ] || echo 125 >/results/status
say "done, status $(cat /results/status)"
sync
umount /newroot/run/results /results 2>/dev/null
poweroff -f
