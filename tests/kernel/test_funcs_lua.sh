#!/usr/bin/env bash
# test_funcs_lua.sh - function tracing on a real third-party C code base:
# Lua 5.2.4 (the sources Debian ships in librust-lua52-sys-dev), built by
# its own Makefile with -finstrument-functions and the README's link line
# (scripts/build_lua.sh), running a workload of parser, VM, strings,
# coroutines, pcall/error (longjmp) and the collector (funcs_lua/work.lua),
# idle and under a load of 4 busy threads on 2 CPUs. Per function, the calls
# in report --functions equal an independent counter (funcs_lua/
# count_hooks.c preloaded into the same build without libbtrace) on every
# function whose count the counter sees the same run to run (the builds fix
# Lua's string hash seed, scripts/build_lua.sh; tables keyed by address
# still collide with the memory layout); uftrace on Lua's -pg build, same
# workload, beside it (diag).
# BTRACE_WAIT_MS makes the unmodified program wait for its buffer, so the
# counts cover it from main on. Needs root; prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "function tracing on Lua"
LUADIR=$PWD/build/thirdparty/lua52
scripts/build_lua.sh "$LUADIR" >"$T_TMP/build.log" 2>&1
rc=$?
if [ "$rc" -eq 2 ]; then
	skip "function tracing on Lua" "$(cat "$T_TMP/build.log")"
	finish
	exit $?
fi
check "Lua 5.2 builds with its Makefile, -finstrument-functions and libbtrace" test "$rc" -eq 0
WORK=$PWD/tests/kernel/funcs_lua/work.lua
ROUNDS=5
CTL=$T_TMP/ctl.sock

# name -> calls, summed over functions of one name (static ones repeat)
names_of() { nm "$LUADIR/cyg/lua" | awk '$2 ~ /^[tT]$/ { print $1, $3 }' | sort -u; }
names_of >"$T_TMP/syms"

# Both builds run as argv[0] "lua": Lua keeps its program name as a string,
# and a path of another length moves its collector's steps, and with them
# how many strings it creates (3191 to 3216 createstrobj calls seen for
# three paths of the same build): the checkout's path failed this test.
# The counter, 4 runs: the functions whose count moves are set aside.
cc -O2 -shared -fPIC -o "$T_TMP/count.so" tests/kernel/funcs_lua/count_hooks.c
for i in 1 2 3 4; do
	(COUNT_HOOKS_OUT=$T_TMP/cnt$i LD_PRELOAD=$T_TMP/count.so exec -a lua "$LUADIR/cyg/lua" "$WORK" "$ROUNDS") >"$T_TMP/cnt$i.out"
	awk 'NR == FNR { n[$1] = $2; next }
	     { k = $1; if (k in n) c[n[k]] += $2 } END { for (f in c) print f, c[f] }' \
		"$T_TMP/syms" "$T_TMP/cnt$i" | sort >"$T_TMP/ref$i"
done
check "the counter ran (functions counted: $(wc -l <"$T_TMP/ref1"))" test "$(wc -l <"$T_TMP/ref1")" -gt 300
# The functions of Lua's table code (ltable.c): a table keyed by address
# collides as ASLR and the executable's own layout place it, so their
# counts move by a few calls between the counter's build and the traced
# one, and four runs of the counter do not see every one move (CI failed
# the loaded run's comparison where it passes on this machine):
# within 3 calls or 1% for these, as the off-by-one rule below says.
LUA_SRC=${LUA_SRC:-/usr/share/cargo/registry/lua52-sys-0.1.2/lua}
grep -E '^[A-Za-z_].*[ *][A-Za-z_0-9]+ \(' "$LUA_SRC/src/ltable.c" | grep -v ';' |
	sed -E 's/.*[ *]([A-Za-z_0-9]+) \(.*/\1/' | sort -u >"$T_TMP/table_fns"
check "Lua's table functions are known ($(wc -l <"$T_TMP/table_fns"), mainposition among them)" \
	grep -qx mainposition "$T_TMP/table_fns"
cat "$T_TMP"/ref[1-4] | awk '{ if (!($1 in v)) v[$1] = $2; else if (v[$1] != $2) x[$1] = 1 }
	END { for (f in x) print f }' | sort >"$T_TMP/moving"
diag "functions whose count moves run to run (memory layout): $(wc -l <"$T_TMP/moving") of $(wc -l <"$T_TMP/ref1")"

# The default application buffer: a program with the hooks gets 32 MiB,
# which holds this workload whole (~1.7 million points).
if ! rec_start "$T_TMP/rec.log" -o "$T_TMP/out" -e sched --ctl "$CTL" --no-final-dump; then
	not_ok "recorder starts" "$(cat "$T_TMP/rec.log")"
	finish
	exit 1
fi

# run_one NAME [LOAD]: the traced build once, its dump, its counts
run_one() {
	local n=$1 load=${2:-0} lp=""
	[ "$load" -gt 0 ] && { build/bench/syscall_loop -t "$load" -d 60 >/dev/null 2>&1 & lp=$!; T_PIDS+=("$lp"); }
	(BTRACE_CTL=$CTL BTRACE_WAIT_MS=10000 exec -a lua "$LUADIR/btrace/lua" "$WORK" "$ROUNDS" >"$T_TMP/$n.out" 2>"$T_TMP/$n.err") &
	local p=$!
	wait "$p"
	local st=$?
	[ -n "$lp" ] && kill "$lp" 2>/dev/null
	check "$n: lua exits 0 with the counter's result" \
		sh -c "[ $st -eq 0 ] && cmp -s '$T_TMP/$n.out' '$T_TMP/cnt1.out'"
	wait_for 10 sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $p [^ ]* exited'"
	check "$n: lua, linked with the hooks, got the function-tracing default buffer (32 MiB)" \
		sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'app $p lua exited buffer=33554432 '"
	"$BT" ctl --ctl "$CTL" dump -o "$T_TMP/$n.btd" >/dev/null 2>&1
	"$BT" report --stats "$T_TMP/$n.btd" >"$T_TMP/$n.stats" 2>&1
	"$BT" report --functions -p "$p" "$T_TMP/$n.btd" >"$T_TMP/$n.fn" 2>&1
	awk '$2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { c[$1] += $3 } END { for (f in c) print f, c[f] }' \
		"$T_TMP/$n.fn" | sort >"$T_TMP/$n.got"
	check "$n: lua's records are whole (no per-thread seq gap, no block lost, nothing dropped)" \
		sh -c "grep ' pid $p ' -A3 '$T_TMP/$n.stats' | grep -q 'per-thread seq gaps: 0 gaps' &&
			grep ' pid $p ' -A3 '$T_TMP/$n.stats' | grep -q 'blocks_lost 0 .*app_dropped 0 '"
	# every function: equal to the counter, or (its count moves with the
	# layout: a table keyed by address, such as the registry's light
	# userdata keys, collides as ASLR places it) seen. The traced build
	# is another executable than the counter's, so a function of that
	# kind the counter's runs did not see move (seen: hashnum, getfreepos,
	# mainposition) may differ by one call, a table function (ltable.c)
	# by 3 calls or 1%. That is Lua's, not a lost
	# record (the check above proves the records whole); more than 8
	# such, or any difference over one call, fails.
	join -a 1 -a 2 -e none -o 0,1.2,2.2 "$T_TMP/ref1" "$T_TMP/$n.got" |
		awk -v mv="$T_TMP/moving" -v tf="$T_TMP/table_fns" -v one="$T_TMP/$n.one" '
		    BEGIN { while ((getline f < mv) > 0) m[f] = 1; while ((getline f < tf) > 0) t[f] = 1 }
		    function off_by_one(a, b) { return a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && (a - b == 1 || b - a == 1) }
		    function near(a, b, d) { if (a !~ /^[0-9]+$/ || b !~ /^[0-9]+$/) return 0; d = a - b; if (d < 0) d = -d; return d <= 3 || d * 100 <= a }
		    ($1 in t) && !($1 in m) && $2 != $3 && near($2, $3) { printf "%s:want=%s,got=%s ", $1, $2, $3 >one; next }
		    !($1 in m) && $2 != $3 && off_by_one($2, $3) { printf "%s:want=%s,got=%s ", $1, $2, $3 >one; o++; next }
		    !($1 in m) && $2 != $3 { printf "%s:want=%s,got=%s ", $1, $2, $3; b++ }
		    ($1 in m) && ($3 == "none" || $3 == 0) { printf "%s:~%s,got=%s ", $1, $2, $3; b++ }
		    END { if (o > 8) printf "%d functions off by one call ", o; print "" }' >"$T_TMP/$n.bad"
	[ -s "$T_TMP/$n.one" ] && diag "$n: off by one call (address-keyed tables): $(cat "$T_TMP/$n.one")"
	check "$n: every function's calls equal the independent counter ($(wc -l <"$T_TMP/$n.got") functions)" \
		sh -c "! grep -q . '$T_TMP/$n.bad' || { head -c 1500 '$T_TMP/$n.bad' >&2; false; }"
}

run_one idle
run_one loaded 4
rec_stop "$REC_PID"

# The peer on the same workload: uftrace on Lua's -pg build (diag: its
# counts next to the counter's; functions inlined in that build count 0).
if command -v uftrace >/dev/null; then
	run_with_timeout 120 uftrace record -d "$T_TMP/uft" "$LUADIR/pg/lua" "$WORK" "$ROUNDS" >/dev/null 2>"$T_TMP/uft.err"
	diag "uftrace record: exit $? ($(grep -o 'terminated by signal.*' "$T_TMP/uft.err" | head -1))"
	run_with_timeout 60 uftrace report -d "$T_TMP/uft" -s call 2>/dev/null |
		awk '$(NF - 1) ~ /^[0-9]+$/ { c[$NF] += $(NF - 1) } END { for (f in c) print f, c[f] }' | sort >"$T_TMP/uft.got"
	diag "$(join -a 1 -e 0 -o 0,1.2,2.2 "$T_TMP/ref1" "$T_TMP/uft.got" | awk -v mv="$T_TMP/moving" '
		BEGIN { while ((getline f < mv) > 0) m[f] = 1 }
		!($1 in m) { n++; if ($2 == $3) eq++; want += $2; got += $3 }
		END { printf "uftrace on the same workload: %d of %d functions exact, %d of %d calls (%.2f%% lost)", eq, n, got, want, 100 * (want - got) / want }')"
	diag "btrace (idle) on it: $(join -a 1 -e 0 -o 0,1.2,2.2 "$T_TMP/ref1" "$T_TMP/idle.got" | awk -v mv="$T_TMP/moving" '
		BEGIN { while ((getline f < mv) > 0) m[f] = 1 }
		!($1 in m) { n++; if ($2 == $3) eq++; want += $2; got += $3 }
		END { printf "%d of %d functions exact, %d of %d calls", eq, n, got, want }')"
fi
[ -n "${KEEP_TMP:-}" ] && cp -r "$T_TMP" "$KEEP_TMP"
finish
