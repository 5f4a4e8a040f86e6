#!/usr/bin/env bash
# build_lua.sh - Lua 5.2.4, a real third-party C code base (~760 functions),
# from the sources Debian ships in librust-lua52-sys-dev, built with Lua's
# own Makefile (`make posix`) in the variants the function-tracing test
# (tests/kernel/test_funcs_lua.sh) and benchmark (scripts/bench_funcs.sh)
# compare:
#
#   DIR/btrace/lua   -finstrument-functions, linked with build/libbtrace.a as
#                    the README says (the archive after the objects, -lpthread)
#   DIR/cyg/lua      -finstrument-functions, no libbtrace: glibc's empty hooks,
#                    reached through the PLT, so uftrace (and a preloaded
#                    counter) can take them
#   DIR/pg/lua       -pg: uftrace's own kind of build (it follows longjmp there;
#                    with -finstrument-functions, exits skipped by a longjmp
#                    are never seen and its depth runs past --max-stack)
#   DIR/plain/lua    no instrumentation (the baseline of a cost per point)
#
#   scripts/build_lua.sh DIR      exit 2 when the sources are not installed
set -euo pipefail
LUA_SRC=${LUA_SRC:-/usr/share/cargo/registry/lua52-sys-0.1.2/lua}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build_lua.sh DIR}
if [ ! -f "$LUA_SRC/src/lua.c" ]; then
	echo "build_lua: no Lua sources at $LUA_SRC (apt-get install librust-lua52-sys-dev)" >&2
	exit 2
fi
mkdir -p "$out"
build() {
	local v=$1 cflags=$2 libs=$3
	[ -x "$out/$v/lua" ] && [ "$out/$v/lua" -nt "$ROOT/build/libbtrace.a" ] && [ "$out/$v/lua" -nt "$0" ] && return 0
	rm -rf "$out/$v"
	cp -r "$LUA_SRC" "$out/$v.tmp"
	# Lua seeds its string hash with the time and addresses (ASLR), so a
	# table's layout, and the calls that walk it, move run to run and
	# build to build. A fixed seed, as PYTHONHASHSEED=0 gives Python, makes
	# a run's calls the same in every variant: the test compares them.
	sed -i 's|^  g->seed = makeseed(L);|  g->seed = 0x2545f491u; (void)makeseed;|' "$out/$v.tmp/src/lstate.c"
	grep -q 'g->seed = 0x2545f491u' "$out/$v.tmp/src/lstate.c" ||
		{ echo "build_lua: lstate.c has no 'g->seed = makeseed(L);' to fix" >&2; return 1; }
	make -s -j2 -C "$out/$v.tmp/src" posix CC="${CC:-cc}" MYCFLAGS="$cflags" MYLIBS="$libs" >"$out/$v.log" 2>&1 ||
		{ echo "build_lua: $v failed:" >&2; tail -20 "$out/$v.log" >&2; return 1; }
	mkdir -p "$out/$v"
	mv "$out/$v.tmp/src/lua" "$out/$v/lua"
	rm -rf "$out/$v.tmp"
}
build btrace "-finstrument-functions" "$ROOT/build/libbtrace.a -lpthread"
build cyg "-finstrument-functions" ""
build pg "-pg" ""
build plain "" ""
