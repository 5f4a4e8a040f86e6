#!/usr/bin/env bash
# test_unwind.sh - user stacks without frame pointers (docs/unwinding.md),
# on the real kernel:
#   - the stack workload built with and without frame pointers
#     (stack_workload, stack_workload_nofp): the same callers, hot_a's share
#     within 5 points of 70% in both, and again without frame pointers under
#     load (4 busy loops per CPU); the second start reads the tables the
#     first compiled from the cache on disk;
#   - packaged, unmodified Debian programs built without frame pointers
#     (python3.11 running a pure-Python loop, perl running a regex, sqlite3
#     running a recursive query): >= 95% of their samples reach
#     __libc_start_call_main, then __libc_start_main and _start (issue 43:
#     they were cut off), and their top function is perf --call-graph
#     dwarf's on the same run;
#   - the vDSO: python3 reading the clock; its frames in [vdso] are named
#     (__vdso_clock_gettime) from the kernel's image, as perf names them;
#   - off-CPU: the packaged, stripped cat blocked in read shows the chain
#     through its main to __libc_start_call_main, __libc_start_main and
#     its entry (_start, unnamed: cat is stripped);
#   - a shell's short-lived children (command substitutions): their stacks
#     named (from the shell's maps once theirs are gone), not as anonymous
#     addresses;
#   - an unwind cache on a full file system: its failed stores counted in
#     ctl status and the dump;
#   - a stack that runs into garbage (unwind_junk: a fake frame whose return
#     address is a data address) ends there, marked "[truncated: no
#     mapping]" and counted, the data address never shown as a frame.
# Needs root. Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "unwinding"
for b in stack_workload stack_workload_nofp stack_workload_dframe unwind_junk; do
	if [ ! -x "$TB/$b" ]; then skip "unwinding" "no $TB/$b (make tests)"; finish; exit; fi
done

LOAD_WAIT=60
[ -n "${BT_TEST_EMULATED:-}" ] && LOAD_WAIT=240
# record_until_loaded LOG ARGS...: a recorder whose unwinder has loaded the
# processes running at its start (so the workloads' stacks are not the
# ones of a process still loading); sets REC_PID
record_until_loaded() {
	local log=$1
	shift
	rec_start "$log" --ctl "$T_TMP/ctl.sock" --unwind-mem 64M ${UWC:+--unwind-cache "$UWC"} "$@" || return 1
	wait_for "$LOAD_WAIT" sh -c "'$BT' ctl --ctl '$T_TMP/ctl.sock' status | grep -q 'running processes loaded'" &&
		"$BT" ctl --ctl "$T_TMP/ctl.sock" status | grep '^unwinding:' >"$log.status"
}
# cache_counts LOG: "FROM_CACHE STORED REFUSED LOAD_S" of that recorder's tables
cache_counts() {
	sed -n 's/.*binaries (\([0-9]*\) from the cache, \([0-9]*\) stored in it, \([0-9]*\) refused[^)]*).*loaded in \([0-9.]*\) s.*/\1 \2 \3 \4/p' "$1.status"
}

# folded_stats FOLDED: "SAMPLES MAIN_PCT TOP" over the lines: the share of
# samples whose user stack reaches __libc_start_call_main, and the user leaf
# seen most often
folded_stats() {
	awk '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";"); leaf = ""
		# the native leaf: perf sees no Python frames ([py])
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/ && f[i] !~ /^\[truncated/ && f[i] !~ / \[py\]$/) leaf = f[i]
		if (leaf ~ /^\[unknown\]/) leaf = ""  # unnamed code: each address its own in perf
		tot += n; if (line ~ /;__libc_start_call_main;/) m += n; if (leaf != "") top[leaf] += n }
		END { best = ""; for (l in top) if (best == "" || top[l] > top[best]) best = l
		      printf "%d %.1f %s\n", tot, tot ? 100 * m / tot : 0, best }' "$1"
}

# ---- the stack workload with and without frame pointers ----------------------
# (with a table cache of their own: the first start compiles, the next reads)
UWC=$T_TMP/uwcache
# share_of FOLDED: hot_a's share of the cpu thread's samples
share_of() {
	awk '/;cpu_main;/ { n = $NF; if ($0 ~ /;hot_a;/) a += n; else if ($0 ~ /;hot_b;/) b += n }
		END { if (a + b < 150) print "few:" a + b; else printf "%.1f\n", 100 * a / (a + b) }' "$1"
}
# chains FOLDED: the distinct caller chains from cpu_main to the hot functions
chains() {
	grep -o 'cpu_main;path_[ab];hot_[ab];spin_until' "$1" | sort -u | tr '\n' ' '
}
run_sw() { # NAME BINARY [LOAD]
	local name=$1 bin=$2 load=${3:-0} out=$T_TMP/out_$1 pids=()
	cp "$bin" "$T_TMP/sw" || return 1
	if [ "$load" -gt 0 ]; then
		for _ in $(seq "$load"); do sh -c 'while :; do :; done' & pids+=($!); T_PIDS+=($!); done
	fi
	record_until_loaded "$T_TMP/rec_$name.log" --sample 997 --comm sw -o "$out" -m 16M ||
		{ kill "${pids[@]}" 2>/dev/null; return 1; }
	echo go | "$T_TMP/sw" 2 2 10 >/dev/null 2>&1
	rec_stop "$REC_PID"
	[ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	"$BT" report --folded "$(ls "$out"/*.btd | head -1)" >"$T_TMP/folded_$name" 2>&1
}
run_sw fp "$TB/stack_workload" || not_ok "recorder with the frame-pointer workload" "$(cat "$T_TMP/rec_fp.log")"
find "$T_TMP/uwcache" -name '*.uw' -printf '%i %p\n' 2>/dev/null | sort >"$T_TMP/uw.before"
run_sw nofp "$TB/stack_workload_nofp" || not_ok "recorder with the workload without frame pointers"
sfp=$(share_of "$T_TMP/folded_fp")
snofp=$(share_of "$T_TMP/folded_nofp")
diag "hot_a share: $sfp% with frame pointers, $snofp% without (truth 70%)"
if [[ $sfp =~ ^[0-9.]+$ && $snofp =~ ^[0-9.]+$ ]] &&
	awk -v a="$sfp" -v b="$snofp" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5 && b >= 65 && b <= 75) }'; then
	ok "without frame pointers: hot_a $snofp%, within 5 points of the frame-pointer build ($sfp%) and of 70%"
else
	not_ok "shares with/without frame pointers: $sfp% / $snofp%" "$(sort -t' ' -k2 -nr "$T_TMP/folded_nofp" | head -8)"
fi
# the tables of the first run were compiled and stored; the second run's
# came from the cache (and gave the stacks checked above). The processes
# running at each start are the machine's, and come and go between the two
# (CI once had 9 more binaries at the second): what the second start
# compiled must be new, so no file the first stored was stored again (a
# store renames a new file into place: its inode would change).
read -r h1 s1 b1 t1 <<<"$(cache_counts "$T_TMP/rec_fp.log")"
read -r h2 s2 b2 t2 <<<"$(cache_counts "$T_TMP/rec_nofp.log")"
find "$T_TMP/uwcache" -name '*.uw' -printf '%i %p\n' 2>/dev/null | sort >"$T_TMP/uw.after"
restored=$(comm -23 "$T_TMP/uw.before" "$T_TMP/uw.after" | wc -l)
diag "unwind table cache: first start ${h1:-?} from it, ${s1:-?} stored, loaded in ${t1:-?} s; second ${h2:-?} from it, ${s2:-?} stored, ${t2:-?} s; $restored of the first's files replaced or gone"
if [ "${s1:-0}" -gt 0 ] && [ "${h2:-0}" -gt 0 ] && [ "$(wc -l <"$T_TMP/uw.before")" -ge "${s1:-1}" ] &&
	[ "$restored" -eq 0 ] && [ "${b2:-1}" -eq 0 ]; then
	ok "unwind tables compiled once: the first start stored $s1, the second read $h2 from the cache"
else
	not_ok "unwind table cache: stored ${s1:-none}, then ${h2:-none} read" "$(cat "$T_TMP/rec_fp.log.status" "$T_TMP/rec_nofp.log.status")"
fi
# A build-id is a note anyone can write: a file another user owns is not
# known by it (it could claim libc's). Its table is compiled for the run,
# used, and not stored.
if [ -z "${BT_TEST_EMULATED:-}" ]; then
	bid=$(readelf -n "$TB/stack_workload_nofp" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	cp "$TB/stack_workload_nofp" "$T_TMP/swn" && chown 65534 "$T_TMP/swn"
	rm -f "$T_TMP/uwcache/$bid.uw"
	record_until_loaded "$T_TMP/rec_swn.log" --sample 997 --comm swn -o "$T_TMP/out_swn" -m 16M ||
		not_ok "recorder for another user's binary" "$(cat "$T_TMP/rec_swn.log")"
	echo go | "$T_TMP/swn" 2 2 10 >/dev/null 2>&1
	rec_stop "$REC_PID"
	"$BT" report --folded "$(ls "$T_TMP/out_swn"/*.btd | head -1)" >"$T_TMP/folded_swn" 2>&1
	cs=$(awk '/;cpu_main;/ { t += $NF; if ($0 ~ /start_thread;cpu_main;/) c += $NF } END { printf "%d %d\n", c, t }' "$T_TMP/folded_swn")
	read -r sc st <<<"$cs"
	if [ -n "$bid" ] && [ ! -e "$T_TMP/uwcache/$bid.uw" ] && [ "${st:-0}" -ge 100 ] && [ $((100 * sc)) -ge $((95 * st)) ]; then
		ok "another user's binary: its table compiled and used ($sc of $st stacks complete), not stored by its build-id"
	else
		not_ok "another user's binary (build-id ${bid:-?}): stored $(ls "$T_TMP/uwcache/$bid.uw" 2>&1), $sc of $st complete"
	fi
fi
cfp=$(chains "$T_TMP/folded_fp")
cnofp=$(chains "$T_TMP/folded_nofp")
[ -n "$cnofp" ] && [ "$cfp" = "$cnofp" ] && [[ $cnofp == *path_a*path_b* ]] &&
	ok "the same callers with and without frame pointers: $cnofp" ||
	not_ok "callers: fp '$cfp' vs nofp '$cnofp'" "$(head -8 "$T_TMP/folded_nofp")"
# Built without unwind tables: its rules only in .debug_frame
run_sw dframe "$TB/stack_workload_dframe" || not_ok "recorder with the workload with .debug_frame only"
sdf=$(share_of "$T_TMP/folded_dframe")
cdf=$(chains "$T_TMP/folded_dframe")
cdfc=$(awk '/;cpu_main;/ { t += $NF; if ($0 ~ /start_thread;cpu_main;/) c += $NF } END { printf "%d %d\n", c, t }' "$T_TMP/folded_dframe")
read -r dc dt <<<"$cdfc"
dshares=0
[[ $sdf =~ ^[0-9.]+$ ]] && awk -v a="$sfp" -v b="$sdf" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5) }' &&
	[ "$cdf" = "$cfp" ] && [ "${dt:-0}" -ge 100 ] && dshares=1
if [ "$dshares" -eq 1 ] && [ $((100 * dc)) -ge $((95 * dt)) ]; then
	ok "only .debug_frame (-fno-asynchronous-unwind-tables -g): hot_a $sdf%, the same callers, $dc of $dt stacks complete"
elif [ "$dshares" -eq 1 ] && [ -n "${BT_TEST_EMULATED:-}" ]; then
	# seen once in a whole 6.1 run under TCG (95 of 2150): the stacks
	# ended at cpu_main, as the thread-start check below allows there
	ok "only .debug_frame (-fno-asynchronous-unwind-tables -g): hot_a $sdf%, the same callers"
	skip "only .debug_frame: stacks complete ($dc of $dt)" "under TCG libc's frames of a process started under the recorder may end as anonymous (docs/unwinding.md)"
	diag "$(grep ';cpu_main;' "$T_TMP/folded_dframe" | grep -v 'start_thread;cpu_main;' | sort -t' ' -k2 -nr | head -4)"
else
	not_ok "only .debug_frame: hot_a $sdf%, callers '$cdf', $dc of $dt complete" "$(sort -t' ' -k2 -nr "$T_TMP/folded_dframe" | head -6)"
	diag "$(grep ';cpu_main;' "$T_TMP/folded_dframe" | grep -v 'start_thread;cpu_main;' | sort -t' ' -k2 -nr | head -4)"
	diag "$("$BT" report --stats "$(ls "$T_TMP/out_dframe"/*.btd | head -1)" 2>&1 | sed -n '/call stacks:/,/^$/p' | head -24)"
fi
read -r n pct _ <<<"$(folded_stats "$T_TMP/folded_nofp")"
if grep -q ';cpu_main;' "$T_TMP/folded_nofp" && grep -q 'start_thread;cpu_main;\|clone3;start_thread;cpu_main' "$T_TMP/folded_nofp"; then
	ok "the cpu thread's stacks reach start_thread (thread start), $n samples"
elif [ -n "${BT_TEST_EMULATED:-}" ]; then
	# seen on 6.1 under TCG: libc's frames above cpu_main as anonymous
	# code (the process's mappings read before libc's were complete)
	skip "thread stacks complete" "under TCG libc's frames of a process started under the recorder end as anonymous (docs/unwinding.md)"
else
	not_ok "thread stacks complete" "$(head -5 "$T_TMP/folded_nofp")"
fi

ncpu=$(nproc)
# Under emulation (qemu TCG, the 6.1 matrix) the loaded run, perl, sqlite3
# and perf's DWARF unwinding would not fit in the test's 600 s: the
# unwinder's loading and walking on that kernel are what is checked there.
EMU=${BT_TEST_EMULATED:-}
if [ -n "$EMU" ]; then
	skip "under load" "emulated CPU"
else
run_sw load "$TB/stack_workload_nofp" $((4 * ncpu)) || not_ok "recorder under load"
sload=$(share_of "$T_TMP/folded_load" | sed 's/^few:.*//')
[ -z "$sload" ] && sload=$(awk '/;cpu_main;/ { n = $NF; if ($0 ~ /;hot_a;/) a += n; else if ($0 ~ /;hot_b;/) b += n }
	END { if (a + b) printf "%.1f\n", 100 * a / (a + b) }' "$T_TMP/folded_load")
# complete: the cpu thread's samples whose stack reaches the thread's start
cload=$(awk '/;cpu_main;/ { t += $NF; if ($0 ~ /start_thread;cpu_main;/) c += $NF } END { printf "%d %d\n", c, t }' "$T_TMP/folded_load")
diag "under $((4 * ncpu)) busy loops: hot_a $sload%, complete stacks $cload (of the cpu thread's samples)"
read -r lc lt <<<"$cload"
# (fewer samples under load: the share is checked to 10 points)
if [ "${lt:-0}" -ge 60 ] && [ $((100 * lc)) -ge $((95 * lt)) ] && [ "$(chains "$T_TMP/folded_load")" = "$cfp" ] &&
	[[ $sload =~ ^[0-9.]+$ ]] && awk -v s="$sload" 'BEGIN { exit !(s >= 60 && s <= 80) }'; then
	ok "under load (4 busy loops per CPU): $lc of $lt stacks complete, the same callers, hot_a $sload%"
else
	not_ok "under load: $lc of $lt complete, hot_a $sload%" "$(head -8 "$T_TMP/folded_load")"
fi

fi

# ---- a cache on a full file system: every table not stored, counted ------------
FULL=$T_TMP/fullfs
mkdir -p "$FULL"
if mount -t tmpfs -o size=16k tmpfs "$FULL" 2>/dev/null; then
	UWC=$FULL/uw
	if record_until_loaded "$T_TMP/rec_full.log" -e sched --sample 49 -o "$T_TMP/out_full" -m 8M; then
		nf=$(sed -n 's/.* \([0-9]*\) not stored (latest: No space left on device).*/\1/p' "$T_TMP/rec_full.log.status")
		"$BT" ctl --ctl "$T_TMP/ctl.sock" dump -o "$T_TMP/full.btd" >/dev/null 2>&1
		nd=$("$BT" report --stats "$T_TMP/full.btd" 2>/dev/null | sed -n 's/.* \([0-9]*\) not stored in the unwind cache.*/\1/p')
		[ "${nf:-0}" -gt 0 ] && [ "${nd:-0}" -ge "$nf" ] &&
			ok "unwind cache on a full disk: $nf tables not stored, in ctl status (ENOSPC named) and the dump ($nd)" ||
			not_ok "cache store failures counted" "status: $(cat "$T_TMP/rec_full.log.status"); dump: ${nd:-none}"
		rec_stop "$REC_PID" INT 30
	else
		not_ok "recorder with a full unwind cache starts" "$(tail -3 "$T_TMP/rec_full.log")"
	fi
	umount "$FULL"
else
	skip "unwind cache on a full disk" "cannot mount a tmpfs"
fi

# ---- packaged programs next to perf --call-graph dwarf --------------------------
# From here the default cache: the machine's own, as a user's recorder has it.
UWC=
W=$T_TMP/w
. tests/workloads/packaged_inputs.sh
packaged_inputs "$W"
have_perf=1
command -v perf >/dev/null 2>&1 || have_perf=0
[ -n "$EMU" ] && have_perf=0
# packaged NAME COMM CMD...: the program under the recorder and under perf
# --call-graph dwarf at once (perf follows the same process)
packaged() {
	local name=$1 comm=$2 out=$T_TMP/out_$1 pid
	shift 2
	if ! command -v "$1" >/dev/null 2>&1; then skip "$name" "not installed"; return; fi
	record_until_loaded "$T_TMP/rec_$name.log" --sample 499 --comm "$comm" -o "$out" -m 32M ||
		{ not_ok "$name: recorder starts" "$(cat "$T_TMP/rec_$name.log")"; return; }
	"$@" <"${PK_STDIN:-/dev/null}" >/dev/null 2>&1 &
	pid=$!
	if [ "$have_perf" = 1 ]; then
		perf record -q -e cpu-clock -F 499 --call-graph dwarf -o "$W/$name.perf" -p "$pid" -- sleep 2 >/dev/null 2>&1
	fi
	sleep 0.5
	kill "$pid" 2>/dev/null # (sqlite3 runs on)
	wait "$pid"
	rec_stop "$REC_PID"
	"$BT" report --folded "$(ls "$out"/*.btd | head -1)" >"$T_TMP/folded_$name" 2>&1
	read -r n pct top <<<"$(folded_stats "$T_TMP/folded_$name")"
	diag "$name: $n samples, $pct% reach __libc_start_call_main, top $top"
	if [ "${n:-0}" -ge 100 ] && awk -v p="$pct" 'BEGIN { exit !(p >= 95) }'; then
		ok "$name (packaged, no frame pointers): $pct% of $n samples reach __libc_start_call_main"
	else
		not_ok "$name: $pct% of ${n:-0} samples reach __libc_start_call_main (want >= 95%)" \
			"$(sort -t' ' -k2 -nr "$T_TMP/folded_$name" | head -6)"
	fi
	# the thread's start is shown whole: after __libc_start_call_main come
	# __libc_start_main and the program's entry (_start, unnamed if stripped).
	# Set apart: a first-instant stack walked on from its 8 KiB copy that
	# ended right after __libc_start_call_main's frame, marked (CI: 1 in 1997).
	read -r nm ns nc <<<"$(awk '/;__libc_start_call_main;/ {
		if ($0 ~ /;\[truncated: stack copy ended\];__libc_start_call_main;/) { c += $NF; next }
		m += $NF
		if ($0 ~ /^[^;]*;(_start|\[unknown\] \([^)]*\));__libc_start_main;__libc_start_call_main;/) s += $NF }
		END { print m + 0, s + 0, c + 0 }' "$T_TMP/folded_$name")"
	[ "$nc" -gt 0 ] && diag "$name: $nc stacks whose copy ended after __libc_start_call_main, set apart"
	[ "$nm" -gt 0 ] && [ "$ns" -eq "$nm" ] &&
		ok "$name: its $nm stacks through __libc_start_call_main go on to __libc_start_main and _start" ||
		not_ok "$name: $ns of $nm stacks through __libc_start_call_main show __libc_start_main and _start" \
			"$(grep ';__libc_start_call_main;' "$T_TMP/folded_$name" | grep -v ';__libc_start_main;__libc_start_call_main;' | head -3 | cut -c1-300)"
	if [ "$have_perf" = 1 ]; then
		ptop=$(perf report -i "$W/$name.perf" --no-children --sort sym --stdio -q 2>/dev/null |
			awk '/%/ && /\[\.\]/ && !/\[\.\] 0x[0-9a-f]+ *$/ { sub(/^.*\[\.\] /, ""); sub(/ +$/, ""); print; exit }')
		[ -n "$top" ] && [ "$top" = "$ptop" ] && ok "$name: top function $top, as perf --call-graph dwarf's" ||
			not_ok "$name: top function '$top', perf's '$ptop'"
	else
		skip "$name: top function against perf" "perf not installed, or an emulated CPU"
	fi
}
if [ -n "$EMU" ]; then
	# Seen on 6.1 under TCG: python3 started under the recorder, its tables
	# cached, had 80.8% of its stacks complete in one run (19% before it
	# was loaded) and 0.0% in another (walks ending early, not understood
	# yet); checked natively (docs/unwinding.md).
	skip "packaged programs" "emulated CPU: python3's walks under TCG vary run to run (docs/unwinding.md)"
else
	packaged python3 python3.11 /usr/bin/python3.11 "$W/loop.py" 4
	packaged perl perl perl "$W/re.pl" 4
	PK_STDIN=$W/rec.sql packaged sqlite3 sqlite3 sqlite3 :memory:
fi

# ---- the vDSO: python3 reading the clock (clock_gettime runs in [vdso]) -----------
out=$T_TMP/out_vdso
cat >"$W/clock.py" <<'PY'
import time
t = time.monotonic()
while time.monotonic() - t < 2:
    pass
PY
record_until_loaded "$T_TMP/rec_vdso.log" --sample 499 --comm python3.11 -o "$out" -m 16M ||
	not_ok "recorder for the vDSO" "$(cat "$T_TMP/rec_vdso.log")"
/usr/bin/python3.11 "$W/clock.py"
rec_stop "$REC_PID"
"$BT" report --folded "$(ls "$out"/*.btd | head -1)" >"$T_TMP/folded_vdso" 2>&1
# samples in the vDSO: below libc's clock_gettime, named from the kernel's
# image (perf shows [vdso]); never an anonymous [unknown] there
read -r nv nall nbad <<<"$(awk '{ n = $NF; t += n; if ($0 ~ /;__vdso_clock_gettime( |;)/) v += n
	if ($0 ~ /;__clock_gettime;\[unknown\]/) b += n } END { print v + 0, t + 0, b + 0 }' "$T_TMP/folded_vdso")"
diag "vDSO: $nv of $nall samples in __vdso_clock_gettime, $nbad unnamed"
if [ -n "$EMU" ] && ! { [ "$nv" -ge 50 ] && [ "$nbad" -eq 0 ] &&
	grep -q ';__libc_start_call_main;.*;__clock_gettime;__vdso_clock_gettime' "$T_TMP/folded_vdso"; }; then
	# Seen on 6.1 under TCG: the stack through the vDSO reaches
	# __libc_start_main, but python3.11's frames in it are unnamed (its
	# symbols not loaded yet when the slow guest's dump is written), so the
	# named chain is not found; checked natively (docs/unwinding.md)
	diag "vDSO stacks here: $(grep '__vdso_clock_gettime' "$T_TMP/folded_vdso" | sort -t' ' -k2 -nr | head -2 | cut -c1-300)"
	skip "vDSO chain to main" "emulated CPU: $nv samples named in the vDSO, the chain past it not checked here"
elif [ "$nv" -ge 50 ] && [ "$nbad" -eq 0 ] && grep -q ';__libc_start_call_main;.*;__clock_gettime;__vdso_clock_gettime' "$T_TMP/folded_vdso"; then
	ok "vDSO frames named (__vdso_clock_gettime, $nv of $nall samples), the stack through it reaches main"
else
	not_ok "vDSO frames: $nv named, $nbad unnamed" "$(sort -t' ' -k2 -nr "$T_TMP/folded_vdso" | head -5)"
fi

# Under TCG the drain runs seconds behind a short process: frames of one
# that exec'd or ended meanwhile may be named from maps read at the wrong
# moment (seen on 6.1: cat's libc frames as no mapping). Checked natively.
if [ -n "$EMU" ]; then
	skip "off-CPU cat chain to main" "emulated CPU: the drain lags a short process by seconds (docs/unwinding.md)"
	skip "garbage stack" "emulated CPU: the drain lags a short process by seconds (docs/unwinding.md)"
	finish
	exit
fi
# ---- off-CPU: the stripped, packaged cat blocked in read ------------------------
out=$T_TMP/out_cat
record_until_loaded "$T_TMP/rec_cat.log" --sample 0 --stacks switch --comm cat -o "$out" -m 16M ||
	not_ok "recorder for cat" "$(cat "$T_TMP/rec_cat.log")"
(for _ in $(seq 15); do sleep 0.1; echo x; done) | cat >/dev/null
rec_stop "$REC_PID"
"$BT" report --folded --offcpu "$(ls "$out"/*.btd | head -1)" >"$T_TMP/offcpu_cat" 2>&1
file -L "$(command -v cat)" | grep -q stripped && diag "cat is stripped"
if grep -qE '^cat;\[unknown\] \(cat\);__libc_start_main;__libc_start_call_main;(\[unknown\] \(cat\);)+[^;]*read' "$T_TMP/offcpu_cat"; then
	ok "off-CPU: cat (stripped, no frame pointers) blocked in read, through its main to _start"
else
	not_ok "off-CPU cat chain to main" "$(head -8 "$T_TMP/offcpu_cat")"
fi

# ---- stacks of a shell's short-lived children ------------------------------------
# Command substitutions: children that run in the shell's image for a
# millisecond and exit. Their stacks may reach the recorder after the child
# exec'd or exited, when its maps are another program's or gone: named from
# the parent's maps (the fork copied them), not as [unknown] (anonymous)
# frames (issue 43: ~18 of them a stack, seen under load; how often it
# happens depends on the drain's timing: the count is a diag, the naming
# logic is checked deterministically by unit/test_mapping_capture).
out=$T_TMP/out_px
cp "$(command -v bash)" "$T_TMP/pxsh"
record_until_loaded "$T_TMP/rec_px.log" --sample 999 --stacks wakeup --comm pxsh -o "$out" -m 16M ||
	not_ok "recorder for the shell's children" "$(cat "$T_TMP/rec_px.log")"
"$T_TMP/pxsh" -c 'for i in $(seq 400); do x=$(j=0; while [ $j -lt 200 ]; do j=$((j+1)); done; echo $j); done'
rec_stop "$REC_PID"
d=$(ls "$out"/*.btd | head -1)
"$BT" report --folded "$d" >"$T_TMP/folded_px" 2>&1
"$BT" report --stats "$d" >"$T_TMP/stats_px" 2>&1
read -r npx_all npx_anon <<<"$(awk '/^pxsh;/ { t += $NF; if ($0 ~ /\[unknown\] \(anonymous\)/) a += $NF }
	END { print t + 0, a + 0 }' "$T_TMP/folded_px")"
npx=$(sed -n "s/.*pre-exec stacks named from the parent's maps: \([0-9]*\).*/\1/p" "$T_TMP/stats_px")
diag "shell children: $npx_all samples, $npx_anon with anonymous frames; ${npx:-?} stacks named from the parent's maps"
if [ -n "$npx" ] && [ "$npx_all" -ge 50 ] && [ $((50 * npx_anon)) -le "$npx_all" ]; then
	ok "a shell's short-lived children named ($npx stacks from the parent's maps; $npx_anon of $npx_all samples with anonymous frames)"
else
	not_ok "pre-exec stacks: ${npx:-none} named from the parent, $npx_anon of $npx_all samples anonymous" \
		"$(grep '(anonymous)' "$T_TMP/folded_px" | head -3 | cut -c1-300)"
fi

# ---- a stack running into garbage -----------------------------------------------
out=$T_TMP/out_junk
cp "$TB/unwind_junk" "$T_TMP/uj"
record_until_loaded "$T_TMP/rec_junk.log" --sample 499 --comm uj -o "$out" -m 16M ||
	not_ok "recorder for unwind_junk" "$(cat "$T_TMP/rec_junk.log")"
"$T_TMP/uj" 2 >/dev/null
rec_stop "$REC_PID"
d=$(ls "$out"/*.btd | head -1)
"$BT" report --folded "$d" >"$T_TMP/folded_junk" 2>&1
"$BT" report --stats "$d" >"$T_TMP/stats_junk" 2>&1
nj=$(awk '/;junk_spin( |;)/ { s += $NF } END { print s + 0 }' "$T_TMP/folded_junk")
# A sample taken inside execve has the caller's user registers (the shell's
# libc, before exec) against the new image's maps: no mapping names it, so
# it is [unknown], rightly; those are set apart (seen in CI, 1 in 1000).
nexec=$(awk '/;__x64_sys_execve(at)?_\[k\]/ { s += $NF } END { print s + 0 }' "$T_TMP/folded_junk")
[ "$nexec" -gt 0 ] && diag "$nexec samples inside execve (the caller's registers), set apart"
# Only junk_spin's stacks are the walk into garbage: a first-instant sample
# elsewhere may have a leaf in libc's unnamed code, rightly [unknown].
if [ "$nj" -ge 50 ] && grep ';junk_spin\( \|;\)' "$T_TMP/folded_junk" | grep -v ';__x64_sys_execve\(at\)\?_\[k\]' | grep -q 'junk_data\|\[unknown\]'; then
	not_ok "garbage stack truncated: a data address shown as a frame" \
		"$(grep ';junk_spin\( \|;\)' "$T_TMP/folded_junk" | grep 'junk_data\|\[unknown\]' | head -3 | cut -c1-300)"
elif [ "$nj" -ge 50 ] &&
	! grep -v '^uj;\[truncated: [a-z ]*\];junk_spin' "$T_TMP/folded_junk" | grep -q 'junk_spin' &&
	grep -q '^uj;\[truncated: no mapping\];junk_spin' "$T_TMP/folded_junk"; then
	ok "a stack into garbage ends at junk_spin, marked [truncated: no mapping] ($nj samples), no data address as a frame"
else
	not_ok "garbage stack truncated" "$(head -6 "$T_TMP/folded_junk")"
fi
nm=$(grep -o '[0-9]* no executable mapping' "$T_TMP/stats_junk" | awk '{ print $1 }')
# (a sample before the process was loaded has its leaf only, counted apart)
[ "$nj" -gt 0 ] && [ $((100 * ${nm:-0})) -ge $((95 * nj)) ] && ok "counted: $nm walks ended at an address in no executable mapping" ||
	not_ok "garbage counted (${nm:-none} for $nj samples)" "$(grep -A2 unwinding "$T_TMP/stats_junk")"
finish
