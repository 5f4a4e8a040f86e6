# shellcheck shell=bash
# packaged_inputs.sh - the inputs that drive Debian's own interpreters as a
# user's program would (sourced by tests/kernel/test_unwind.sh and
# scripts/bench_stacks.sh, so the test and the benchmark unwind the same):
#   packaged_inputs DIR  writes DIR/loop.py (python3: main > mid > leaf,
#   ARGV[1] seconds), DIR/re.pl (perl regex loop, ARGV[0] seconds) and
#   DIR/rec.sql (sqlite3: a recursive query that runs until killed).
packaged_inputs() {
	mkdir -p "$1"
	cat >"$1/loop.py" <<'PY'
import sys, time
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def mid(n):
    return leaf(n)
t = time.time()
while time.time() - t < float(sys.argv[1]):
    mid(10000)
PY
	cat >"$1/re.pl" <<'PL'
my $s = "ab" x 1000; my $t = time; my $n = 0;
while (time - $t < $ARGV[0]) { $n += () = $s =~ /a(b)/g; }
PL
	echo 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 400000000) SELECT sum(x) FROM c;' >"$1/rec.sql"
}
