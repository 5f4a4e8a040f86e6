#!/usr/bin/env bash
# test_bpf_stack.sh - the BPF stack of the Python walk's chain of calls
# stays within what the oldest kernel we run on allows. 6.1's verifier adds
# up the stack of a program, of the global function bt_py_frames and of
# the bpf_loop callback it runs (a callback counts as a call there), each
# rounded up to 32 bytes, and refuses the program past 512 ("combined
# stack size of 3 calls is 544. Too large": every recorder start failed on
# Debian bookworm's kernel). The depth of a function is read here as the
# deepest r10 offset its code touches (at least what the verifier counts),
# for every program of each object that takes stacks.
# Prints TAP lines.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

OD=$(command -v llvm-objdump-14 || command -v llvm-objdump)
if [ -z "$OD" ]; then skip "BPF stack depth" "no llvm-objdump (scripts/install-deps.sh: llvm)"; finish; exit; fi

# depths OBJ: "function depth calls-walk" for each function (depth rounded
# up to 32; calls-walk 1 if it calls bt_py_frames)
depths() {
	"$OD" -dr --no-show-raw-insn "$1" 2>/dev/null | awk '
		/^[0-9a-f]+ <[^>]*>:/ { n = $2; gsub(/[<>:]/, "", n); if (n !~ /^LBB/) { fn = n; d[fn] += 0; c[fn] += 0 } }
		/R_BPF_64_32[ \t]+bt_py_frames$/ { c[fn] = 1 }
		/r10 - [0-9]+/ { match($0, /r10 - [0-9]+/); v = substr($0, RSTART + 6, RLENGTH - 6) + 0; if (v > d[fn]) d[fn] = v }
		END { for (f in d) printf "%s %d %d\n", f, int((d[f] + 31) / 32) * 32, c[f] }'
}

for obj in build/bpf/record.bpf.o build/bpf/uprobe.bpf.o; do
	if [ ! -f "$obj" ]; then not_ok "$obj exists (make)"; continue; fi
	dep=$(depths "$obj")
	walk=$(awk '$1 == "bt_py_frames" { print $2 }' <<<"$dep")
	if [ -z "$walk" ]; then
		skip "$obj: the Python walk's stack" "no bt_py_frames in it"
		continue
	fi
	cb=$(awk '$1 ~ /^bt_py_(frame|thread|merge)_step$/ && $2 > m { m = $2 } END { print m + 0 }' <<<"$dep")
	# the deepest program that calls it
	read -r prog pdepth < <(awk '$3 && $2 > m { m = $2; p = $1 } END { print p, m + 0 }' <<<"$dep")
	if [ -z "$prog" ]; then
		not_ok "$obj: a program calls bt_py_frames" "$dep"
		continue
	fi
	total=$((pdepth + walk + cb))
	diag "$obj: $prog $pdepth + bt_py_frames $walk + callback $cb = $total bytes"
	[ "$total" -le 512 ] && ok "$obj: program + bt_py_frames + its callback within 512 bytes of stack ($total)" ||
		not_ok "$obj: the Python walk's calls need $total bytes of stack, over 512 (6.1 refuses the programs)" "$dep"
done
finish
