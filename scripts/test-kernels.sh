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
# Likewise user-space budgets and libbtrace's fork hand-over: the cold
# tier's CPU budget, the table builder's hostile binaries (timed), a
# forked child's early buffer (no BPF of its own); an application buffer's
# dump timed against its size, a busy program's trigger latency, the
# tier's stack ids, libbtrace's longjmp/dlopen hooks (user space only) and
# the hand-over's 5 s from restart to dump (13.5 s under TCG, 328 s in all).
# The CPython versions beside Debian's (test_python_versions): the same BPF
# walk test_python_frames loads here, five interpreters timed at 499 Hz
# (under TCG their 70/30 shares came out 39-50%).
SKIP_TESTS=${SKIP_TESTS-'^kernel/test_(convert|cold_tier|cold_budget|dump_capture|trigger_pressure|hostile|unwind_hostile|fork_burst|funcs_plain|funcs_lua|stacks_churn|dump_memory|dump_app_scale|trigger_busy|cold_stacks|funcs_edge|handover|python_versions)$'}
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

. scripts/qemu-guest.sh

# What the guest's /init reads (scripts/test-kernels-init.sh).
guest_config() {
	printf 'REPO=%s\nTESTS=%s\nSKIP_TESTS=%s\nACCEL=%s\n' "$(shq "$REPO")" "$(shq "$TESTS")" "$(shq "$SKIP_TESTS")" \
		"$(shq "$1")"
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
