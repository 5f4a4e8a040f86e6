# shellcheck shell=bash
# qemu-guest.sh - booting Debian bookworm's own kernel under qemu with the
# host's root filesystem read-only over 9p under a tmpfs overlay (a busybox
# initramfs, scripts/test-kernels-init.sh as its /init), and reading back
# what the guest wrote into the "results" share. Sourced by
# scripts/test-kernels.sh (the kernel matrix) and scripts/test-systemd.sh
# (systemd as the guest's init). The caller sets REPO, OUT, CACHE,
# BOOT_TIMEOUT, GUEST_MEM, GUEST_CPUS, GUEST_MODULES, defines log, die and
# guest_config ACCEL (prints the initramfs's /config), and may set
# BOOT_APPEND (more of the kernel's command line).

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

# Write the initramfs of the kernel unpacked in $1 to $2, for accelerator
# $3; its /config is what guest_config (the caller's) prints for $3.
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
	guest_config "$3" >"$root/config"
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

# Boot kernel $1 (vmlinuz) with initramfs $2, accelerator $3; logs in $4;
# $BOOT_APPEND added to the kernel's command line.
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
		-append "console=ttyS0,115200 loglevel=7 softlockup_panic=1 softlockup_all_cpu_backtrace=1 watchdog_thresh=60 panic=-1 rdinit=/init${BOOT_APPEND:+ $BOOT_APPEND}" \
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

# Boot Debian's kernel as guest NAME (logs in $OUT/NAME/) and read what it
# wrote into the results share; RESULT_DESC and PROBLEMS set. 0 if its
# status is 0 and the console shows no kernel problem.
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
	# shellcheck disable=SC2034 # read by the caller
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

