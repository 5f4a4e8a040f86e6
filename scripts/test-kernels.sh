#!/usr/bin/env bash
# test-kernels.sh - the kernel matrix: run the tests that load BPF (the
# real-kernel tests: tests/kernel/ and the service test) with
# the binaries built here, on each kernel, and report per kernel
# "N passed, M failed". `make test-kernels` runs it after building.
#
#   scripts/test-kernels.sh [KERNEL...]     (default: debian-6.1 host)
#     debian-6.1  Debian bookworm's own kernel (linux-image-amd64, 6.1.x),
#                 fetched from the Debian mirror with apt into a cache and
#                 booted under qemu-system-x86_64: the host's root filesystem
#                 read-only over 9p under a tmpfs overlay, a busybox initramfs
#     host        the running kernel, the same tests run directly
#
# Environment:
#   TESTS=regex             tests to run (tests/run.sh names; default: those loading BPF)
#   SKIP_TESTS=regex        tests left out (default: packaging and install tests, not about the kernel)
#   BT_KERNEL_CACHE=dir     where kernel packages are unpacked (default /var/cache/btrace-bpf/kernels)
#   BT_QEMU_ACCEL=kvm|tcg   default: kvm if the CPU has vmx/svm and /dev/kvm is usable, else TCG
#   BT_QEMU_TIMEOUT=secs    bound of one boot, tests included (default 3300)
#   BT_QEMU_CPUS, BT_QEMU_MEM   guest CPUs (default: the host's, at most 4) and MiB (default 3072)
#
# Logs go to build/test-kernels/KERNEL/ (console.log: the guest's serial
# console, kernel messages included; tests.log: tests/run.sh's output). The
# guest boots with softlockup_panic=1, loglevel=7 and panic=-1: a soft lockup
# or an oops leaves its backtrace in console.log and ends the boot at once.
# watchdog_thresh=60 (a lockup is a CPU stuck for 120 s): an emulated CPU
# starved by a busy host took 45 s in a tracepoint attach's text patching,
# which the default (20 s) calls a lockup.
# Exit status: 0 if every kernel passed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd -P)
OUT=$REPO/build/test-kernels
CACHE=${BT_KERNEL_CACHE:-/var/cache/btrace-bpf/kernels}
TESTS=${TESTS:-'^(kernel/|system/test_service$)'}
# Not about the kernel (packaging, installing, a Python analyzer): the host
# run covers them, and under emulation they cost minutes.
# test_convert checks the exporters' output with a Python parser: minutes
# under emulation, and nothing in it depends on the kernel that
# test_record does not cover.
# The same for the tests of user-space machinery that loads the very BPF
# programs test_record/test_trigger/test_stacks already load on each
# kernel: the cold tier, the dump capture, trigger latency under load,
# hostile users' files, libbtrace's function hooks (no BPF at all; test_funcs_lua
# also builds Lua four times, tens of minutes under emulation), the stack
# table's reclamation under process churn and the dumps' memory (both
# timed against the recorder's own threads, which TCG starves: seen
# failing there on timing alone).
SKIP_TESTS=${SKIP_TESTS-'^kernel/test_(convert|cold_tier|dump_capture|trigger_pressure|hostile|funcs_plain|funcs_lua|stacks_churn|dump_memory)$'}
# Under TCG the kernel tests take 10-20 minutes depending on the host; CI
# allows 90 for everything.
BOOT_TIMEOUT=${BT_QEMU_TIMEOUT:-3300}
GUEST_MEM=${BT_QEMU_MEM:-3072}
ncpu=$(nproc)
GUEST_CPUS=${BT_QEMU_CPUS:-$((ncpu > 4 ? 4 : ncpu))}
# The guest's modules for a 9p root under an overlay; dependencies are added.
GUEST_MODULES=(9pnet_virtio 9p virtio_pci overlay)

usage() { sed -n '2,/^# Exit status/s/^# \{0,1\}//p' "$0"; }
log() { printf 'test-kernels: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

kernels=()
for a in "$@"; do
	case "$a" in
	-h | --help) usage; exit 0 ;;
	debian-6.1 | host) kernels+=("$a") ;;
	*) die "unknown kernel '$a' (debian-6.1, host; see --help)" ;;
	esac
done
[ ${#kernels[@]} -gt 0 ] || kernels=(debian-6.1 host)
[ "$(id -u)" -eq 0 ] || die "must run as root (the tests load BPF programs)"
[ -x build/btrace-bpf ] || die "build/btrace-bpf missing: run make first (make test-kernels does)"

# ---- Debian's kernel, unpacked into the cache ------------------------------

# Print the directory of the unpacked newest linux-image-*-amd64 that
# linux-image-amd64 depends on (fetched on first use).
debian_kernel() {
	local pkg dir tmp
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	if [ -z "$pkg" ]; then
		log "apt does not know linux-image-amd64; refreshing package lists (apt-get update)"
		apt-get update >&2
		pkg=$(apt-cache depends linux-image-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
		[ -n "$pkg" ] || die "cannot resolve linux-image-amd64 to a kernel package"
	fi
	dir=$CACHE/$pkg
	if ! compgen -G "$dir/boot/vmlinuz-*" >/dev/null; then
		log "fetching $pkg from the Debian mirror into $dir"
		mkdir -p "$CACHE"
		tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
		chmod 0755 "$tmp"
		# apt-get download drops privileges to _apt when it can write there.
		chown _apt "$tmp" 2>/dev/null || true
		if ! (cd "$tmp" && apt-get download "$pkg" >&2) ||
			! dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"; then
			rm -rf "$tmp"
			die "cannot fetch or unpack $pkg"
		fi
		rm -rf "$dir"
		mv "$tmp/root" "$dir"
		rm -rf "$tmp"
	fi
	printf '%s\n' "$dir"
}

# ---- initramfs: busybox, the modules, /init --------------------------------

# Print the module files of $@ and their dependencies, dependencies first.
module_order() {
	local mdir=$1 m f dep
	shift
	for m in "$@"; do
		f=$(find "$mdir" -name "$m.ko" -o -name "${m//_/-}.ko" | head -1)
		[ -n "$f" ] || die "module $m not found under $mdir"
		# The "depends=" string of the module's .modinfo section.
		for dep in $(grep -ao 'depends=[a-z0-9_,-]*' "$f" | head -1 | sed 's/^depends=//' | tr ',' ' '); do
			module_order "$mdir" "$dep"
		done
		printf '%s\n' "$f"
	done
}

# Write the initramfs of the kernel unpacked in $1 to $2, for accelerator $3.
build_initramfs() {
	local kdir=$1 img=$2 mdir root f
	mdir=$(find "$kdir/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -1)
	[ -n "$mdir" ] || die "no modules in $kdir"
	root=$(mktemp -d)
	mkdir -p "$root"/{bin,dev,proc,sys,modules}
	cp /bin/busybox "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	ldd "$root/bin/busybox" >/dev/null 2>&1 && die "/bin/busybox is dynamically linked: install busybox-static"
	cp scripts/test-kernels-init.sh "$root/init"
	chmod 0755 "$root/init"
	module_order "$mdir" "${GUEST_MODULES[@]}" | awk '!seen[$0]++' | while read -r f; do
		cp "$f" "$root/modules/"
		basename "$f" >>"$root/modules.order"
	done
	printf 'REPO=%s\nTESTS=%s\nSKIP_TESTS=%s\nACCEL=%s\n' "$(shq "$REPO")" "$(shq "$TESTS")" "$(shq "$SKIP_TESTS")" \
		"$(shq "$3")" >"$root/config"
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$img"
	rm -rf "$root"
}

# $1 single-quoted for sh.
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# ---- one boot --------------------------------------------------------------

accel() {
	if [ -n "${BT_QEMU_ACCEL:-}" ]; then
		echo "$BT_QEMU_ACCEL"
	elif [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo kvm
	else
		echo tcg
	fi
}

# Boot kernel $1 (vmlinuz) with initramfs $2, accelerator $3; logs in $4.
# Returns 0 if the guest ran the tests (whatever their result).
boot() {
	local vmlinuz=$1 initrd=$2 acc=$3 dir=$4 rc=0
	local -a accel_opts
	rm -rf "$dir/results"
	mkdir -p "$dir/results"
	if [ "$acc" = kvm ]; then
		accel_opts=(-accel kvm -cpu host)
	else
		# One host thread for all vCPUs: with a thread per vCPU the
		# guest hung (RCU stalls, a CPU looping in the int3 of
		# text_poke_bp) when a tracepoint attach patched code another
		# vCPU was running; the cross-modifying code is only coherent
		# when one thread runs every vCPU.
		accel_opts=(-accel tcg,thread=single -cpu max)
	fi
	log "booting $(basename "$vmlinuz") under qemu ($acc, $GUEST_CPUS CPUs, ${GUEST_MEM} MiB, at most ${BOOT_TIMEOUT}s)"
	timeout --kill-after=30 "$BOOT_TIMEOUT" qemu-system-x86_64 \
		"${accel_opts[@]}" -smp "$GUEST_CPUS" -m "$GUEST_MEM" \
		-nodefaults -no-reboot -display none -serial "file:$dir/console.log" \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0,115200 loglevel=7 softlockup_panic=1 softlockup_all_cpu_backtrace=1 watchdog_thresh=60 panic=-1 rdinit=/init" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$dir/results,mount_tag=results,security_model=none,multidevs=remap" \
		>"$dir/qemu.log" 2>&1 || rc=$?
	[ "$rc" -eq 124 ] && log "the boot timed out after ${BOOT_TIMEOUT}s"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && log "qemu exited with status $rc: $(tail -3 "$dir/qemu.log")"
	grep -q 'test-kernels-init: kernel' "$dir/console.log" 2>/dev/null
}

# What the console shows that fails the kernel (lockups, oopses, kernel
# warnings), one line each; and what is only reported (stalls an emulator
# starved by a loaded host can cause: RCU stalls, hung tasks).
console_problems() {
	grep -aE 'soft lockup|hard LOCKUP|BUG:|Oops|Kernel panic|WARNING:' "$1" | head -20 || true
}
console_notes() {
	grep -aE 'rcu: INFO|self-detected stall|blocked for more than' "$1" | head -10 || true
}

run_qemu_kernel() { # name
	local name=$1 kdir vmlinuz dir acc status
	dir=$OUT/$name
	mkdir -p "$dir"
	rm -f "$dir/console.log" "$dir/tests.log"
	scripts/install-deps.sh --kernels >&2
	kdir=$(debian_kernel)
	vmlinuz=$(compgen -G "$kdir/boot/vmlinuz-*" | head -1)
	acc=$(accel)
	build_initramfs "$kdir" "$dir/initrd.gz" "$acc"
	if ! boot "$vmlinuz" "$dir/initrd.gz" "$acc" "$dir" && [ "$acc" = kvm ]; then
		log "the guest did not start under KVM (an emulated /dev/kvm?); retrying with TCG"
		mv "$dir/console.log" "$dir/console-kvm.log" 2>/dev/null || true
		acc=tcg
		build_initramfs "$kdir" "$dir/initrd.gz" "$acc"
		boot "$vmlinuz" "$dir/initrd.gz" "$acc" "$dir" || true
	fi
	RESULT_DESC="$(basename "$vmlinuz" | sed 's/^vmlinuz-//'), qemu $acc"
	cp "$dir/results/tests.log" "$dir/tests.log" 2>/dev/null || true
	[ -s "$dir/results/init-error" ] && log "guest init: $(cat "$dir/results/init-error")"
	status=$(cat "$dir/results/status" 2>/dev/null || echo none)
	PROBLEMS=$(console_problems "$dir/console.log")
	local notes
	notes=$(console_notes "$dir/console.log")
	[ -n "$notes" ] && printf 'test-kernels: console (reported, not failing): %s\n' "$notes" >&2
	[ "$status" = 0 ] && [ -z "$PROBLEMS" ]
}

run_host_kernel() {
	local dir=$OUT/host rc=0
	mkdir -p "$dir"
	RESULT_DESC="$(uname -r), the running kernel, no VM"
	TESTS=$TESTS SKIP_TESTS=$SKIP_TESTS tests/run.sh >"$dir/tests.log" 2>&1 || rc=$?
	PROBLEMS=
	[ "$rc" -eq 0 ]
}

# ---- the matrix -------------------------------------------------------------

summary=()
failed=0
for k in "${kernels[@]}"; do
	start=$(date +%s)
	RESULT_DESC=$k PROBLEMS=
	log "== $k"
	ok=1
	case "$k" in
	host) run_host_kernel || ok=0 ;;
	*) run_qemu_kernel "$k" || ok=0 ;;
	esac
	secs=$(($(date +%s) - start))
	counts=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$OUT/$k/tests.log" 2>/dev/null | tail -1 || true)
	[ -n "$counts" ] || counts="no result (the tests did not finish)"
	line="$k ($RESULT_DESC): $counts, ${secs}s"
	# The slowest programs (tests/run.sh prints each one's time).
	slow=$(awk '/^== / { n = $2 } /^   \([0-9]+s\)$/ { gsub(/[()s ]/, ""); print $0, n }' "$OUT/$k/tests.log" 2>/dev/null |
		sort -rn | head -5 | awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1 }')
	[ -n "$slow" ] && log "$k: slowest: $slow"
	if [ "$ok" -eq 0 ]; then
		failed=1
		line="$line  FAILED"
		# What failed, where it stopped, and where the logs are.
		# A failed check with the first lines of its diagnostics (CI shows no more).
		awk '/^(failed:|    not ok|  TIMEOUT|  exit status)/ { print; d = /not ok/ ? 6 : 0; next }
			d > 0 && /^    #/ { print; d--; next } { d = 0 }' "$OUT/$k/tests.log" 2>/dev/null |
			head -40 | sed 's/^/  /' >&2 || true
		if [ "$counts" = "no result (the tests did not finish)" ]; then
			last=$(grep -a '^== ' "$OUT/$k/tests.log" 2>/dev/null | tail -1 | cut -c4-)
			[ -n "$last" ] && log "$k: the run stopped during $last; its output so far:" &&
				sed -n "/^== ${last//\//\\/}\$/,\$p" "$OUT/$k/tests.log" | tail -15 | sed 's/^/  /' >&2
		fi
		[ -n "$PROBLEMS" ] && printf '  console: %s\n' "$PROBLEMS" >&2
		log "logs: $OUT/$k/ (console.log: the guest's console)"
	fi
	log "$line"
	summary+=("$line")
done

echo "kernel matrix:"
printf '  %s\n' "${summary[@]}"
exit "$failed"
