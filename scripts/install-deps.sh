#!/usr/bin/env bash
# install-deps.sh - install what btrace-bpf needs to build and test, on Debian
# bookworm (or a derivative). Idempotent: when everything is present it only
# runs one dpkg-query and exits (well under a second).
#
#   scripts/install-deps.sh            install what is missing
#   scripts/install-deps.sh --check    exit 0 if complete, else list what is missing (installs nothing)
#   scripts/install-deps.sh --bench    also the benchmark-only tools (bpftrace, perf, ...)
#   scripts/install-deps.sh --kernels  also what the kernel matrix boots with (qemu, busybox)
#
# Not its job: mounting tracefs, kernel configuration (BTF), loading modules.
set -euo pipefail

# Build and test. One package per line so additions are one-line diffs.
PKGS=(
	make
	gcc
	g++                   # C++ test program (demangled names, clones, templates)
	libc6-dev             # gcc only recommends it; --no-install-recommends skips it
	clang                 # BPF objects, sanitizer and fuzzer builds
	llvm                  # llvm-strip for BPF objects
	libclang-rt-14-dev    # TSan/ASan/UBSan/libFuzzer runtimes for clang 14
	libbpf-dev
	bpftool               # vmlinux.h and skeleton generation
	libelf-dev
	libdw-dev             # elfutils' libdw/libdwfl: source lines and inlined calls of stack frames (DWARF)
	libcapstone-dev       # x86/arm64 decoder: uprobe offsets must be instruction boundaries
	zlib1g-dev
	liblz4-dev            # the cold tier's fast codec (user/coldtier)
	libzstd-dev           # the cold tier's dense codec (user/coldtier)
	pkg-config
	systemtap-sdt-dev     # <sys/sdt.h> for USDT test workloads
	protobuf-compiler
	python3
	procps
	util-linux
	coreutils
	libssl-dev            # SHA-256 of dumps in their manifests (libcrypto)
	git                   # make deb packages the tracked files
	dpkg-dev              # make deb: dpkg-buildpackage
	debhelper             # make deb: dh, dh_installsystemd
	lintian               # make deb checks the packages
	systemd               # systemd-analyze verify/security of the unit
	man-db                # man --warnings on the manual pages
	strace                # the unit's system-call filter is checked against a real run
	dwz                   # test_stacks: DWARF moved into a shared dwz file, as Debian's -dbgsym packages have it
	librust-lua52-sys-dev # Lua 5.2.4 sources (the package ships them): function tracing on a real code base (test_funcs_lua, bench_funcs)
	sqlite3               # test_unwind: a packaged program without frame pointers (recursive query)
	linux-perf            # test_unwind: the top function against perf --call-graph dwarf on the same run
	libc6-dbg             # test_unwind: names __libc_start_call_main, where complete user stacks end
	golang-go             # go tool pprof reads the pprof exports (tests/pprof/check_gopprof.py)
)

# Benchmarks only (--bench): comparison tracers and load generators.
BENCH_PKGS=(
	bpftrace
	trace-cmd
	stress-ng
	gnuplot-nox           # the figure of scripts/compare_tracers.sh (make bench-compare)
	liblttng-ust-dev      # LTTng-UST rows of scripts/bench_app.sh (in-process tracing)
	uftrace               # uftrace row of scripts/bench_funcs.sh (function tracing, -pg/-finstrument-functions)
	lttng-tools           # lttng-sessiond and lttng for those rows
	babeltrace2           # counts what the LTTng snapshot retained
)

# The kernel matrix only (--kernels, scripts/test-kernels.sh). The kernels
# themselves are fetched by that script into a cache, never installed.
KERNEL_PKGS=(
	qemu-system-x86       # boots the kernels under test
	busybox-static        # the initramfs of those boots
)

usage()
{
	sed -n '2,11s/^# \{0,1\}//p' "$0"
}

check=0
bench=0
kernels=0
for arg in "$@"; do
	case "$arg" in
	--check) check=1 ;;
	--bench) bench=1 ;;
	--kernels) kernels=1 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "install-deps: unknown option '$arg' (see --help)" >&2; exit 2 ;;
	esac
done

want=("${PKGS[@]}")
[ "$bench" -eq 1 ] && want+=("${BENCH_PKGS[@]}")
[ "$kernels" -eq 1 ] && want+=("${KERNEL_PKGS[@]}")

# Print the wanted packages dpkg does not report as installed.
missing_pkgs()
{
	local installed
	# One dpkg-query for all packages: fast. Unknown packages only print to
	# stderr (and make it exit 1), so they simply never appear as installed.
	installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${want[@]}" 2>/dev/null |
		awk 'substr($2, 2, 1) == "i" { print $1 }' || true)
	local p
	for p in "${want[@]}"; do
		grep -qxF -- "$p" <<<"$installed" || printf '%s\n' "$p"
	done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: dpkg-query not found: this script supports Debian/Ubuntu only." >&2
	echo "install-deps: install these packages (or equivalents) by hand: ${want[*]}" >&2
	exit 1
fi

mapfile -t missing < <(missing_pkgs)

if [ "$check" -eq 1 ]; then
	if [ "${#missing[@]}" -gt 0 ]; then
		echo "install-deps: missing: ${missing[*]}"
		echo "install-deps: run scripts/install-deps.sh$([ "$bench" -eq 1 ] && echo ' --bench')$([ "$kernels" -eq 1 ] && echo ' --kernels') to install them"
		exit 1
	fi
	echo "install-deps: all ${#want[@]} packages present"
	exit 0
fi

[ "${#missing[@]}" -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-deps: missing packages: ${missing[*]}" >&2
		echo "install-deps: need root to install them, and sudo is not available; rerun as root." >&2
		exit 1
	fi
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
apt_install()
{
	"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
}

echo "install-deps: installing: ${missing[*]}"
# Try with the current package lists first: apt-get update is slow and often
# unnecessary. A fresh image has no lists at all, so the first try fails there.
if ! apt_install; then
	echo "install-deps: install failed; refreshing package lists (apt-get update) and retrying"
	"${sudo[@]}" apt-get update
	apt_install
fi

mapfile -t missing < <(missing_pkgs)
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: still missing after apt-get install: ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: done"
