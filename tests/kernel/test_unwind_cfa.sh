#!/usr/bin/env bash
# test_unwind_cfa.sh - call-frame rules beyond "CFA = rsp/rbp + offset"
# (docs/unwinding.md), on the real kernel, under one recorder at 499 Hz:
#   - unwind_cfa (tests/cfa_forms.h): a leaf whose CFA is on r11 with rsp
#     realigned, called from a function whose CFA is read from its frame
#     (OpenSSL's .cfi_cfa_expression %rsp+40,deref,+8) with rbp zeroed:
#     >= 95% of the leaf's samples reach main through both, alone and
#     under load (2 busy loops per CPU);
#   - Debian's unmodified openssl speed rsa2048 (its bn_mul_mont family is
#     that assembly; issue 43: 25-45% of its stacks were cut at 2 frames):
#     >= 90% of its samples reach __libc_start_call_main, and no fewer
#     than perf --call-graph dwarf's on the same process, less 5 points;
#   - the rules still not followed are counted in ctl status (libcrypto
#     named) and the dump.
# Needs root. Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

need_root "CFA rules"
if [ ! -x "$TB/unwind_cfa" ]; then skip "CFA rules" "no $TB/unwind_cfa (make tests)"; finish; exit; fi
EMU=${BT_TEST_EMULATED:-}
LOAD_WAIT=60
[ -n "$EMU" ] && LOAD_WAIT=240
CTL=$T_TMP/ctl.sock
# The workload under two names (comms), alone and under load; one table
# (the same build-id).
cp "$TB/unwind_cfa" "$T_TMP/cfa" && cp "$TB/unwind_cfa" "$T_TMP/cfaload" || exit 1
mkdir -m 0700 "$T_TMP/uwc"
# A cache of its own: compiled once here, and another build's tables
# never taken for this one's. Every process is sampled (two comms and
# openssl): room for a busy machine's stacks, so none of ours gives way.
rec_start "$T_TMP/rec.log" --ctl "$CTL" --unwind-mem 64M --unwind-cache "$T_TMP/uwc" --sample 499 --max-stacks 131072 \
	-o "$T_TMP/out" -m 64M || { not_ok "recorder starts" "$(tail -3 "$T_TMP/rec.log")"; finish; exit; }
wait_for "$LOAD_WAIT" sh -c "'$BT' ctl --ctl '$CTL' status | grep -q 'running processes loaded'" ||
	diag "the running processes not loaded after $LOAD_WAIT s"
# warm CMD...: run CMD once, so the tables of the binaries it maps are
# built before the measured run: measured here is the walk, not a first
# sight (test_unwind_short.sh measures that)
warm() {
	"$@" >/dev/null 2>&1
	sleep 0.2
	wait_for 30 sh -c "! '$BT' ctl --ctl '$CTL' status | grep -q 'tables being built'"
}

warm "$T_TMP/cfa" 0
"$T_TMP/cfa" 1 >/dev/null
pids=()
if [ -z "$EMU" ]; then
	warm "$T_TMP/cfaload" 0
	for _ in $(seq $((2 * $(nproc)))); do sh -c 'while :; do :; done' & pids+=($!); T_PIDS+=($!); done
	"$T_TMP/cfaload" 1 >/dev/null
	kill "${pids[@]}" 2>/dev/null
fi

have_perf=0
if [ -z "$EMU" ] && command -v openssl >/dev/null 2>&1; then
	warm openssl version
	openssl speed -seconds 3 rsa2048 >/dev/null 2>&1 &
	pid=$!
	if command -v perf >/dev/null 2>&1; then
		have_perf=1
		perf record -q -e cpu-clock -F 499 --call-graph dwarf -o "$T_TMP/ossl.perf" -p "$pid" >/dev/null 2>&1 &
		ppid=$!
	fi
	wait "$pid"
	[ "$have_perf" = 1 ] && { kill -INT "$ppid" 2>/dev/null; wait "$ppid"; }
fi
"$BT" ctl --ctl "$CTL" status >"$T_TMP/status" 2>&1
rec_stop "$REC_PID"
d=$(ls "$T_TMP"/out/*.btd | head -1)
"$BT" report --folded "$d" >"$T_TMP/folded" 2>&1
"$BT" report --stats "$d" >"$T_TMP/stats" 2>&1
[ -n "${KEEP_CFA:-}" ] && cp -r "$T_TMP" "$KEEP_CFA"

# reach COMM PATTERN: "SAMPLES PCT" of COMM's stacks matching PATTERN (all if
# empty), PCT the share of them holding ;__libc_start_call_main;
reach() {
	awk -v c="$1" -v pat="$2" 'index($0, c ";") == 1 && (pat == "" || $0 ~ pat) {
		n = $NF; t += n; if ($0 ~ /;__libc_start_call_main;/) m += n }
		END { printf "%d %.1f\n", t, t ? 100 * m / t : 0 }' "$T_TMP/folded"
}

# ---- the workload: both forms, alone and under load ---------------------------
# (the leaf is named after its loop's label, cfa_reg_loop)
for comm in cfa cfaload; do
	v=alone
	[ "$comm" = cfaload ] && v="under load"
	if [ "$comm" = cfaload ] && [ -n "$EMU" ]; then
		skip "CFA forms under load" "emulated CPU"
		continue
	fi
	read -r n pct <<<"$(reach "$comm" ';cfa_reg_(spin|loop) ')"
	read -r nc _ <<<"$(reach "$comm" ';main;cfa_run;cfa_deref_call;cfa_reg_(spin|loop) ')"
	diag "unwind_cfa ($v): $n samples in cfa_reg_spin, $pct% reach __libc_start_call_main, $nc through main;cfa_run;cfa_deref_call"
	if [ "${n:-0}" -ge 100 ] && awk -v p="$pct" 'BEGIN { exit !(p >= 95) }' && [ $((100 * nc)) -ge $((95 * n)) ]; then
		ok "CFA on r11 (leaf) and read from the frame (its caller), $v: $pct% of $n samples reach main"
	elif [ -n "$EMU" ] && [ "${n:-0}" -lt 100 ] && [ "$nc" -eq "${n:-0}" ]; then
		# Seen on 6.1 under TCG: no sample of the 1 s run at all (its
		# 0 s run sampled; not understood yet); what is there is right.
		read -r na _ <<<"$(reach "$comm" '')"
		skip "CFA forms ($v): $nc of ${n:-0} samples in the leaf reach main" "emulated CPU: $na samples of the workload in all"
	else
		not_ok "CFA forms ($v): $pct% of ${n:-0} samples reach main, $nc through the chain" \
			"$(grep "^$comm;" "$T_TMP/folded" | sort -t' ' -k2 -nr | head -5 | cut -c1-300)"
	fi
done

# ---- Debian's openssl speed rsa2048, next to perf --call-graph dwarf ------------
if [ -n "$EMU" ]; then
	skip "openssl speed rsa2048" "emulated CPU: 6 s of RSA under TCG, checked natively"
elif ! command -v openssl >/dev/null 2>&1; then
	skip "openssl speed rsa2048" "openssl not installed (apt-get install openssl)"
else
	read -r n pct <<<"$(reach openssl '')"
	ppct=
	if [ "$have_perf" = 1 ]; then
		read -r pn ppct <<<"$(perf script -i "$T_TMP/ossl.perf" -F ip,sym 2>/dev/null |
			awk 'BEGIN { RS = "" } { t++; if ($0 ~ /__libc_start_call_main/) m++ }
				END { printf "%d %.1f\n", t, t ? 100 * m / t : 0 }')"
		diag "perf --call-graph dwarf, same process: $pn samples, $ppct% reach __libc_start_call_main"
	fi
	diag "btrace-bpf: $n samples of openssl speed rsa2048, $pct% reach __libc_start_call_main"
	if [ "${n:-0}" -ge 150 ] && awk -v p="$pct" -v q="${ppct:-0}" 'BEGIN { exit !(p >= 90 && p >= q - 5) }'; then
		ok "openssl speed rsa2048 (Debian's, its assembly): $pct% of $n samples reach main (perf-dwarf ${ppct:-not run}%)"
	else
		not_ok "openssl speed rsa2048: $pct% of ${n:-0} samples reach main (perf-dwarf ${ppct:-not run}%)" \
			"$(grep '^openssl;' "$T_TMP/folded" | sort -t' ' -k2 -nr | head -5 | cut -c1-300)"
	fi
	# what is still not followed: counted, libcrypto named in ctl status
	st=$(grep '^unwind rules:' "$T_TMP/status")
	dump=$(grep 'unwind rules:' "$T_TMP/stats")
	diag "ctl status: ${st:0:300}"
	if [[ $st =~ libcrypto\.so\.3:\ [0-9]+\ not\ followed ]] && [[ $dump =~ [0-9]+\ address\ ranges\ in\ [0-9]+\ binaries ]]; then
		ok "rules not followed counted: ctl status names libcrypto, the dump counts them"
	else
		not_ok "rules not followed counted" "status: ${st:-none}; dump: ${dump:-none}"
	fi
fi
finish
